// Unit tests of finding the server binary: the setting, PATH, cargo's bin folder, and the messages when it is missing.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { findServer, isExecutableFile, startMessage, type DiscoveryInput } from "../../src/serverBinary";

function input(executables: string[], overrides: Partial<DiscoveryInput> = {}): DiscoveryInput {
  return {
    platform: "linux",
    pathEnv: "/usr/local/bin:/usr/bin",
    home: "/home/me",
    isExecutable: (file) => executables.includes(file),
    ...overrides,
  };
}

test("the setting wins over PATH", () => {
  const found = findServer(input(["/opt/situate", "/usr/bin/situate"], { configured: "/opt/situate" }));
  assert.deepEqual(found, { found: true, path: "/opt/situate", source: "setting" });
});

test("the setting may use ~ or be relative to the workspace", () => {
  assert.deepEqual(findServer(input(["/home/me/bin/situate"], { configured: "~/bin/situate" })), {
    found: true,
    path: "/home/me/bin/situate",
    source: "setting",
  });
  assert.deepEqual(
    findServer(input(["/work/notes/target/debug/situate"], { configured: "target/debug/situate", workspaceRoot: "/work/notes" })),
    { found: true, path: "/work/notes/target/debug/situate", source: "setting" },
  );
});

test("a setting that points nowhere is an error naming it, not a fall-back to PATH", () => {
  const found = findServer(input(["/usr/bin/situate"], { configured: "/opt/missing" }));
  assert.equal(found.found, false);
  if (!found.found) {
    assert.equal(found.fromSetting, true);
    assert.match(found.message, /situate\.server\.path is set to \/opt\/missing/);
    assert.match(found.message, /cargo install --path \./);
  }
});

test("an empty setting means PATH, searched in order", () => {
  const found = findServer(input(["/usr/local/bin/situate", "/usr/bin/situate"], { configured: "  " }));
  assert.deepEqual(found, { found: true, path: "/usr/local/bin/situate", source: "PATH" });
});

test("cargo's bin folder is the last resort", () => {
  assert.deepEqual(findServer(input(["/home/me/.cargo/bin/situate"])), {
    found: true,
    path: "/home/me/.cargo/bin/situate",
    source: "cargo",
  });
  assert.deepEqual(findServer(input(["/cargo/bin/situate"], { cargoHome: "/cargo" })), {
    found: true,
    path: "/cargo/bin/situate",
    source: "cargo",
  });
});

test("on Windows, PATHEXT names are tried", () => {
  const found = findServer(
    input(["C:\\tools/situate.exe"], { platform: "win32", pathEnv: "C:\\tools", pathExt: ".COM;.EXE", home: undefined }),
  );
  assert.deepEqual(found, { found: true, path: "C:\\tools/situate.exe", source: "PATH" });
});

test("nothing found gives the fix: install with cargo or set the setting", () => {
  const found = findServer(input([]));
  assert.equal(found.found, false);
  if (!found.found) {
    assert.equal(found.fromSetting, false);
    assert.match(found.message, /`situate` is not on PATH/);
    assert.match(found.message, /cargo install --path \. from the situate repository|cargo install --path \.`/);
    assert.match(found.message, /situate\.server\.path/);
    assert.match(found.message, /Once it is installed, run Situate: Restart Server\.$/, "an install changes no setting, so nothing restarts the server");
  }
});

test("only executable regular files count", { skip: process.platform === "win32" }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "situate-bin-"));
  try {
    const file = path.join(dir, "situate");
    fs.writeFileSync(file, "#!/bin/sh\n");
    fs.chmodSync(file, 0o644);
    assert.equal(isExecutableFile(file), false);
    fs.chmodSync(file, 0o755);
    assert.equal(isExecutableFile(file), true);
    assert.equal(isExecutableFile(dir), false, "a folder is not a binary");
    assert.equal(isExecutableFile(path.join(dir, "missing")), false);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the output channel's first line names the binary, where it was found and the log level", () => {
  assert.equal(
    startMessage({ path: "/home/me/.cargo/bin/situate", source: "cargo" }, "warn"),
    "Starting /home/me/.cargo/bin/situate lsp (found in cargo's bin folder); server log level warn (situate.server.logLevel)",
  );
  assert.match(startMessage({ path: "/usr/bin/situate", source: "PATH" }, "info"), /found on PATH/);
});
