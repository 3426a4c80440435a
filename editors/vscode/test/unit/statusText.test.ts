// Unit tests of the status-bar text, the status report, the reindex summary and the progress tracker.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ProgressTracker } from "../../src/progressTracker";
import type { FolderStatus, IndexStatus, StatusAnswer } from "../../src/protocol";
import { formatBytes, reindexSummary, statusBarText, statusReport } from "../../src/statusText";

const index: IndexStatus = {
  workspace: "/home/me/notes",
  index_dir: "/home/me/.cache/situate/notes-1a2b",
  read_only: false,
  other_writer: false,
  files: 171,
  chunks: 2139,
  vectors: 2139,
  embedder: { provider: "static", model: "builtin:minilm-l6-v2-distilled-256-int8", dimensions: 256 },
  last_commit: 1795232400,
  generation: 12,
  disk_bytes: 3565158,
  skipped: [{ path: "big.md", reason: "too_large", size: 5000000, limit: 4194304 }],
  config_problems: ["search.limit: expected an integer"],
  notes: [],
};

function folder(overrides: Partial<FolderStatus> = {}): FolderStatus {
  return { root: "/home/me/notes", phase: "ready", indexing: null, pending: [], errors: [], index, ...overrides };
}

const one = (f: FolderStatus): StatusAnswer => ({ folders: [f] });

test("ready: the chunk count, grouped by thousands", () => {
  assert.equal(statusBarText(one(folder())).text, "$(search) situate: 2,139 chunks");
});

test("progress from $/progress wins over a polled status", () => {
  assert.equal(statusBarText(one(folder()), 45.2).text, "$(sync~spin) situate 45%");
});

test("indexing without progress notifications: the polled done/total", () => {
  const status = one(folder({ phase: "indexing", indexing: { done: 128, total: 171 } }));
  assert.equal(statusBarText(status).text, "$(sync~spin) situate 74%");
  assert.match(statusBarText(status).tooltip, /128\/171 files/);
});

test("starting, opening, failed, no folder, read-only and pending", () => {
  assert.equal(statusBarText(undefined).text, "$(sync~spin) situate");
  assert.equal(statusBarText(one(folder({ phase: "opening", index: null }))).text, "$(sync~spin) situate");
  assert.equal(statusBarText(one(folder({ phase: "failed", index: null }))).text, "$(error) situate");
  assert.equal(statusBarText({ folders: [] }).text, "$(search) situate: no folder");
  const readOnly = statusBarText(one(folder({ phase: "read-only", pending: ["a.md", "b.md"] })));
  assert.equal(readOnly.text, "$(search) situate: 2,139 chunks");
  assert.match(readOnly.tooltip, /2 changed files waiting/);
  assert.match(readOnly.tooltip, /read-only/);
});

test("several folders add up", () => {
  const status = { folders: [folder(), folder({ root: "/b", index: { ...index, chunks: 1 } })] };
  assert.equal(statusBarText(status).text, "$(search) situate: 2,140 chunks");
});

test("the report lists each folder's figures, pending files and problems", () => {
  const report = statusReport(
    one(folder({ pending: ["ops/backup.md"], errors: ["cannot create the index folder"] })),
    new Date(Date.UTC(2026, 0, 2)),
  );
  for (const expected of [
    "# situate index status",
    "## /home/me/notes",
    "- Phase: ready",
    "- Files: 171 · chunks: 2,139 · vectors: 2,139",
    "`/home/me/.cache/situate/notes-1a2b` (3.4 MiB)",
    "(generation 12)",
    "### Pending (changed, not yet indexed) (1)",
    "- `ops/backup.md`",
    "### Errors (1)",
    "- cannot create the index folder",
    "### Configuration problems (1)",
    "- `big.md`: too large, size: 5000000, limit: 4194304",
  ]) {
    assert.ok(report.includes(expected), `report has ${expected}:\n${report}`);
  }
  assert.ok(!report.includes("### Notes"), "empty sections are left out");
  assert.match(statusReport(one(folder({ phase: "opening", index: null }))), /not open yet/);
});

test("byte sizes", () => {
  assert.equal(formatBytes(512), "512 B");
  assert.equal(formatBytes(2048), "2.0 KiB");
});

test("reindex summaries", () => {
  const report = { files_seen: 4, files_indexed: 1, files_removed: 0, chunks_written: 3, vectors_embedded: 3, seconds: 0.0123 };
  assert.equal(reindexSummary({ folders: [{ root: "/n", report }] }), "Reindexed: 4 files seen, 1 indexed, 3 chunks written in 0.01 s.");
  assert.equal(reindexSummary({ path: "ops/backup.md", report }), "Reindexed ops/backup.md: 3 chunks written.");
  assert.equal(reindexSummary({ path: "ops/backup.md", report: { ...report, files_indexed: 0 } }), "ops/backup.md was already up to date.");
});

test("progress: the mean of the running runs, cleared by their ends", () => {
  const tracker = new ProgressTracker();
  assert.equal(tracker.percentage(), undefined);
  tracker.update("a", { kind: "begin" });
  tracker.update("b", { kind: "begin", percentage: 10 });
  tracker.update("a", { kind: "report", percentage: 50 });
  assert.equal(tracker.percentage(), 30);
  tracker.update("a", { kind: "report" });
  assert.equal(tracker.percentage(), 30, "a report without a percentage keeps the last one");
  assert.equal(tracker.update("a", { kind: "end" }), true);
  assert.equal(tracker.percentage(), 10);
  tracker.update("x", { kind: "report", percentage: 99 });
  assert.equal(tracker.percentage(), 10, "a report of an unknown run is ignored");
  tracker.update("b", { kind: "end" });
  assert.equal(tracker.percentage(), undefined);
});
