#!/usr/bin/env bash
# End-to-end test of the Neovim plugin: real server, fixture workspace, headless Neovim.
#
# SITUATE_BIN     the server binary (default: target/debug/situate of the repository)
# SITUATE_SKIP_NVIM=1   skip, with a note, when nvim is not installed (otherwise that fails)
set -euo pipefail

plugin="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$plugin/../.." && pwd)"

if ! command -v nvim >/dev/null 2>&1; then
  if [ "${SITUATE_SKIP_NVIM:-}" = 1 ]; then
    echo "editors/nvim: skipped, nvim is not installed (SITUATE_SKIP_NVIM=1)"
    exit 0
  fi
  echo "editors/nvim/test/run.sh: nvim is not installed; install Neovim 0.7 or later" >&2
  echo "(apt-get install neovim), or set SITUATE_SKIP_NVIM=1 to skip this test" >&2
  exit 1
fi

bin="${SITUATE_BIN:-$plugin/../../target/debug/situate}"
if [ ! -x "$bin" ]; then
  echo "editors/nvim/test/run.sh: no server binary at $bin; run cargo build or set SITUATE_BIN" >&2
  exit 1
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The fixture workspace; an empty situate.toml marks its root.
cp -R "$repo/tests/data/workspace" "$tmp/workspace"
: >"$tmp/workspace/situate.toml"
# helptags writes doc/tags next to the help file, so it runs on a copy.
mkdir -p "$tmp/help"
cp -R "$plugin/doc" "$tmp/help/doc"

export XDG_CACHE_HOME="$tmp/cache" XDG_STATE_HOME="$tmp/state" XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config"
export SITUATE_BIN="$bin" SITUATE_PLUGIN="$plugin" SITUATE_TEST_WORKSPACE="$tmp/workspace"
export SITUATE_TEST_RESULTS="$tmp/results" SITUATE_TEST_HELP="$tmp/help"
export SITUATE_LOG=info SITUATE_LOG_FILE="$tmp/server.log"

echo "editors/nvim: $(nvim --version | head -n 1), server $("$bin" --version)"
code=0
(cd "$tmp/workspace" && timeout 150 nvim --headless -u NONE -i NONE -n \
  --cmd 'lua vim.opt.runtimepath:prepend(os.getenv("SITUATE_PLUGIN"))' \
  -c "luafile $plugin/test/e2e.lua") >"$tmp/nvim.out" 2>&1 || code=$?

[ -f "$tmp/results" ] && cat "$tmp/results"
failed=0
if [ "$code" -ne 0 ] || ! grep -qx passed "$tmp/results" 2>/dev/null || grep -q '^not ok' "$tmp/results"; then
  failed=1
fi
# A clean run prints nothing: the server shows a message only for a problem the user must
# fix, and Neovim prints errors and deprecation notices.
if [ -s "$tmp/nvim.out" ]; then
  echo "not ok nvim printed messages" >&2
  failed=1
fi
if [ "$failed" -ne 0 ]; then
  echo "editors/nvim: FAILED (nvim exit code $code)" >&2
  echo "--- nvim output" >&2
  cat "$tmp/nvim.out" >&2
  if [ -f "$tmp/server.log" ]; then
    echo "--- server log (last 40 lines)" >&2
    tail -n 40 "$tmp/server.log" >&2
  fi
  exit 1
fi
echo "editors/nvim: all checks passed ($(grep -c '^ok' "$tmp/results"))"
