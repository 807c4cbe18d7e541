#!/bin/sh
# Bundle what the server needs besides the user's torch into bundled/libs: the pinned pure-Python
# dependencies and gbls itself from this checkout. The extension's tool/gbls_server.py puts the
# folder first on sys.path of the server process only.
# With --link-gbls (the "gbls: build" task of .vscode/tasks.json, for debugging), bundled/libs/gbls
# is a symbolic link to the checkout's gbls instead of a copy, and the pinned libraries stay when
# there are some: the server runs the checkout's code as it is, and debugpy, which follows the
# link, holds at breakpoints set in ../gbls.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

if [ "${1:-}" != "--link-gbls" ] || [ ! -d bundled/libs/pygls ]; then
    rm -rf bundled/libs
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --target bundled/libs --no-compile \
        --no-deps --only-binary=:all: --implementation py --python-version 3.10 -r requirements.txt
fi
rm -rf bundled/libs/gbls
if [ "${1:-}" = "--link-gbls" ]; then
    ln -s ../../../gbls bundled/libs/gbls
else
    # Copied rather than pip-installed: building the checkout would write build/ and egg-info into it.
    "$PYTHON" -c 'import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2], ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))' \
        ../gbls bundled/libs/gbls
fi
