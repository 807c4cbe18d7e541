#!/bin/sh
# Bundle what the server needs besides the user's torch into bundled/libs: the pinned pure-Python
# dependencies and gbls itself from this checkout. The extension's tool/gbls_server.py puts the
# folder first on sys.path of the server process only.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

rm -rf bundled/libs
"$PYTHON" -m pip install --quiet --disable-pip-version-check --target bundled/libs --no-compile \
    --no-deps --only-binary=:all: --implementation py --python-version 3.10 -r requirements.txt
# Copied rather than pip-installed: building the checkout would write build/ and egg-info into it.
"$PYTHON" -c 'import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2], ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))' \
    ../gbls bundled/libs/gbls
