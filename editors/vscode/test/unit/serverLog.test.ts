// Unit tests of the sorting of the server's stderr lines by log level.
import assert from "node:assert/strict";
import { test } from "node:test";
import { logFilter, ServerLog } from "../../src/serverLog";

test("a log line goes out at its own level, without the server's timestamp", () => {
  const log = new ServerLog();
  assert.deepEqual(log.line("2026-11-27T15:32:51.433105Z  INFO situate::service::worker: indexed: 4 files, 8 chunks"), {
    level: "info",
    text: "situate::service::worker: indexed: 4 files, 8 chunks",
  });
  assert.deepEqual(log.line("2026-11-27T15:32:52.000001Z  WARN situate::lsp: notes: situate.toml:3:8: not valid TOML"), {
    level: "warn",
    text: "situate::lsp: notes: situate.toml:3:8: not valid TOML",
  });
  assert.equal(log.line("2026-11-27T15:32:53.1Z ERROR situate::service: cannot write").level, "error");
});

test("debug lines are shown at info with their level, since the channel hides debug messages", () => {
  assert.deepEqual(new ServerLog().line("2026-11-27T15:32:51.433105Z DEBUG situate::lsp: request"), {
    level: "info",
    text: "DEBUG situate::lsp: request",
  });
});

test("a continued message keeps its level; a panic is an error", () => {
  const log = new ServerLog();
  log.line("2026-11-27T15:32:51.433105Z  WARN situate::lsp: two lines:");
  assert.equal(log.line("    the second").level, "warn");
  assert.deepEqual(log.line("thread 'main' panicked at src/main.rs:3:5:"), { level: "error", text: "thread 'main' panicked at src/main.rs:3:5:" });
});

test("the log level setting raises situate's own logs, not the libraries'", () => {
  assert.equal(logFilter("warn"), "warn");
  assert.equal(logFilter("info"), "warn,situate=info");
  assert.equal(logFilter("debug"), "warn,situate=debug");
});
