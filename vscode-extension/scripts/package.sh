#!/bin/sh
# Build gbls.vsix offline: the bundled Python libraries, then vsce, which runs vscode:prepublish
# (type check and esbuild bundle). The extension is one esbuild bundle, so vsce needs no npm
# dependency walk. --allow-package-all-secrets skips vsce's secret scan, which takes minutes on
# the ~5,600 files of jedi's typeshed stubs; .vscodeignore lets in only dist/, tool/ and the
# pinned libraries of requirements.txt.
set -eu
cd "$(dirname "$0")/.."
sh scripts/bundle-libs.sh
npx vsce package --no-dependencies --skip-license --allow-package-all-secrets --out gbls.vsix
