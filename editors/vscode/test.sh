#!/usr/bin/env bash
# Runs every check of the VS Code extension: clean install, compile, lint and type-check, unit and integration tests.
# The integration test needs the server binary: SITUATE_BIN, else ../../target/debug/situate.
set -euo pipefail
cd "$(dirname "$0")"

rm -rf out
npm ci --no-audit --no-fund
npm run compile
npm run lint
npm test
