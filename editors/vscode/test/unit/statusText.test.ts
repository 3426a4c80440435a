// Unit tests of the status-bar text, the status report, the reindex summary and the progress tracker.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ProgressTracker } from "../../src/progressTracker";
import type { FolderStatus, IndexStatus, SnippetIndexStatus, SnippetQueueStatus, StatusAnswer } from "../../src/protocol";
import {
  BUSY_POLL_MS,
  formatBytes,
  pendingVectorsText,
  pollDelay,
  READY_POLL_MS,
  reindexSummary,
  snippetLines,
  statusBarText,
  statusReport,
} from "../../src/statusText";

const index: IndexStatus = {
  workspace: "/home/me/notes",
  index_dir: "/home/me/.cache/situate/notes-1a2b",
  read_only: false,
  other_writer: false,
  files: 171,
  chunks: 2139,
  vectors: 2139,
  vectors_pending: 0,
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

test("the status is polled often while vectors fill or files wait, rarely once all is done", () => {
  assert.equal(pollDelay(undefined), BUSY_POLL_MS);
  assert.equal(pollDelay(one(folder())), READY_POLL_MS);
  assert.equal(pollDelay(one(folder({ phase: "indexing" }))), BUSY_POLL_MS);
  assert.equal(pollDelay(one(folder({ pending: ["notes/a.md"] }))), BUSY_POLL_MS);
  assert.equal(pollDelay(one(folder({ index: { ...index, vectors_pending: 4045 } }))), BUSY_POLL_MS);
  assert.equal(pollDelay({ folders: [folder(), folder({ index: null, phase: "opening" })] }), BUSY_POLL_MS);
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

test("the report names the languages once another than English has chunks", () => {
  assert.ok(!statusReport(one(folder())).includes("Languages"));
  const english = { ...index, languages: [{ code: "en", name: "english", chunks: 2139 }] };
  assert.ok(!statusReport(one(folder({ index: english }))).includes("Languages"));
  const mixed = {
    ...index,
    languages: [
      { code: "en", name: "english", chunks: 1240 },
      { code: "de", name: "german", chunks: 899 },
    ],
  };
  assert.ok(statusReport(one(folder({ index: mixed }))).includes("- Languages: English 1,240 · German 899 (chunks by the rules of each)"));
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

const snippetIndex: SnippetIndexStatus = {
  model: "openai/gpt-4.1-mini@api.openai.com",
  mode: "section",
  done: 1200,
  pending: 939,
  max_calls: 5000,
  max_run_tokens: null,
};

const totals = {
  calls: 1250,
  failed: 3,
  rejected: 1,
  input_tokens: 812345,
  output_tokens: 40120,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
};

function snippetFolder(queue: Partial<SnippetQueueStatus>, indexSnippets: Partial<SnippetIndexStatus> = {}): FolderStatus {
  return folder({
    snippets: { state: "idle", done: 0, total: 0, totals, ...queue },
    index: { ...index, snippets: { ...snippetIndex, ...indexSnippets } },
  });
}

test("snippets off: no snippets line", () => {
  assert.deepEqual(snippetLines(folder()), []);
  assert.ok(!statusReport(one(folder())).includes("Snippets"));
  assert.ok(!statusBarText(one(folder())).tooltip.includes("snippet"));
  // Turned off: the open index has no snippets, though the folder keeps its queue's last state.
  const off = folder({ snippets: { state: "idle", done: 2, total: 2, totals } });
  assert.deepEqual(snippetLines(off), []);
  assert.ok(!statusBarText(one(off)).tooltip.includes("snippet"));
});

test("snippets running: state with the run's progress, written and pending, calls and tokens, model", () => {
  const lines = snippetLines(snippetFolder({ state: "running", done: 40, total: 939 }));
  assert.equal(
    lines[0],
    "- Snippets: running (40/939 in this run) · 1,200 written, 939 pending · " +
      "1,250 calls (3 failed, 1 rejected), 812,345 input + 40,120 output tokens this period · " +
      "`openai/gpt-4.1-mini@api.openai.com` (section mode)",
  );
  assert.equal(lines[1], "  - Budget per period: 5,000 calls, unlimited tokens");
  assert.equal(lines.length, 2, "no reason while running, no estimate when none was asked for");
  const report = statusReport(one(snippetFolder({ state: "running", done: 40, total: 939 })));
  assert.ok(report.includes(lines[0]), report);
  assert.ok(report.indexOf("- Snippets:") > report.indexOf("- Last commit:"), "after the index figures");
  assert.match(statusBarText(one(snippetFolder({ state: "running" }))).tooltip, /1,200 snippets written, 939 waiting \(writing\)/);
});

test("snippets paused: the server's reason and how to start a new budget period", () => {
  const reason =
    "the snippet budget is spent (5000 calls, 852465 tokens this period); 939 chunks keep their header context " +
    "until `situate.reindex` starts a new period";
  const lines = snippetLines(snippetFolder({ state: "paused", reason }, { max_run_tokens: 1000000 }));
  assert.match(lines[0], /^- Snippets: paused · 1,200 written, 939 pending · /);
  assert.equal(lines[1], `  - Paused: ${reason}. **Situate: Reindex Workspace** starts a new budget period.`);
  assert.equal(lines[2], "  - Budget per period: 5,000 calls, 1,000,000 tokens");
  assert.match(statusBarText(one(snippetFolder({ state: "paused", reason }))).tooltip, /\(paused: the budget is spent\)/);
});

test("snippets stopped: the reason without its repeated prefix, and the next try", () => {
  const lines = snippetLines(
    snippetFolder({
      state: "stopped",
      reason: "snippets stopped: the model keeps failing (HTTP 503); 939 chunks keep their header context and are tried again in 1 min",
      retry_at: 1795232460,
    }),
  );
  assert.equal(
    lines[1],
    "  - Stopped: the model keeps failing (HTTP 503); 939 chunks keep their header context and are tried again in 1 min. " +
      "Next try at 2026-11-21 03:41:00 UTC; **Situate: Reindex Workspace** tries again now.",
  );
  const bare = snippetLines(snippetFolder({ state: "stopped" }));
  assert.equal(bare[1], "  - Stopped: the model keeps failing. **Situate: Reindex Workspace** tries again now.");
});

test("snippets: prompt-cache tokens, the estimate, and a queue before the index is open", () => {
  const lines = snippetLines(
    snippetFolder(
      { totals: { ...totals, failed: 0, rejected: 0, cache_read_tokens: 50000, cache_write_tokens: 6000 } },
      { mode: "document", estimate: { calls: 939, input_tokens: 5634000, cached_input_tokens: 5000000, output_tokens: 93900 } },
    ),
  );
  assert.ok(
    lines[0].includes("1,250 calls, 812,345 input + 40,120 output tokens (50,000 read from the prompt cache, 6,000 written to it)"),
    lines[0],
  );
  assert.ok(lines[0].endsWith("(document mode)"));
  assert.equal(lines[2], "  - Estimate for the pending: 939 calls, 5,634,000 input tokens (5,000,000 cached), 93,900 output tokens");
  const opening = folder({ phase: "opening", index: null, snippets: { state: "idle", done: 0, total: 0, totals } });
  assert.deepEqual(snippetLines(opening), ["- Snippets: idle · 1,250 calls (3 failed, 1 rejected), 812,345 input + 40,120 output tokens this period"]);
});

test("vectors still being computed are reported", () => {
  assert.ok(statusReport(one(folder({ vectors_pending: 12 }))).includes("- Vectors pending: 12 chunks"));
  assert.ok(!statusReport(one(folder({ vectors_pending: 0 }))).includes("Vectors pending"));
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
  const [a, b] = ["situate/index/notes/1", "situate/index/docs/1"];
  assert.equal(tracker.percentage(), undefined);
  tracker.update(a, { kind: "begin" });
  tracker.update(b, { kind: "begin", percentage: 10 });
  tracker.update(a, { kind: "report", percentage: 50 });
  assert.equal(tracker.percentage(), 30);
  tracker.update(a, { kind: "report" });
  assert.equal(tracker.percentage(), 30, "a report without a percentage keeps the last one");
  assert.equal(tracker.update(a, { kind: "end" }), true);
  assert.equal(tracker.percentage(), 10);
  tracker.update("situate/index/x/9", { kind: "report", percentage: 99 });
  assert.equal(tracker.percentage(), 10, "a report of an unknown run is ignored");
  tracker.update(b, { kind: "end" });
  assert.equal(tracker.percentage(), undefined);
});

test("vectors of a slow model still being filled: how many, and how long the rest will take", () => {
  const filling: IndexStatus = {
    ...index,
    chunks: 5285,
    vectors: 1240,
    vectors_pending: 4045,
    vectors_eta_secs: 505,
    embedder: { provider: "e5", model: "multilingual-e5-small-q4", dimensions: 384 },
  };
  assert.equal(
    pendingVectorsText(filling),
    "e5 vectors: 1,240 of 5,285, about 9 min left; the built-in static model stands in for the rest",
  );
  assert.equal(pendingVectorsText({ ...filling, vectors_eta_secs: undefined }).includes("left"), false);
  const report = statusReport(one(folder({ index: filling, vectors_pending: 4045 })));
  assert.match(report, /e5 vectors: 1,240 of 5,285, about 9 min left/);
});

test("progress: runs of background work on a searchable index are not indexing", () => {
  const tracker = new ProgressTracker();
  // The run's kind is in its token, whatever its title says.
  tracker.update("situate/vectors/notes/1", { kind: "begin", title: "Embedding notes", percentage: 0 });
  tracker.update("situate/vectors/notes/1", { kind: "report", percentage: 40 });
  tracker.update("situate/snippets/notes/1", { kind: "begin", title: "Writing snippets for Indexing notes" });
  assert.equal(tracker.percentage(), undefined);
  tracker.update("situate/index/Indexing/2", { kind: "begin", title: "Indexing Indexing", percentage: 20 });
  assert.equal(tracker.percentage(), 20);
  assert.equal(tracker.update("situate/vectors/notes/1", { kind: "end" }), true, "the end of a background run asks for fresh figures");
  assert.equal(tracker.percentage(), 20);
});

test("ready while the strong model's vectors are filled in: the chunk count, the share done, and that search works", () => {
  const filling: IndexStatus = { ...index, chunks: 2128, vectors: 96, vectors_pending: 2032, vectors_eta_secs: 540, embedder: { provider: "e5", model: "e5-small", dimensions: 384 } };
  const { text, tooltip } = statusBarText(one(folder({ index: filling, vectors_pending: 2032 })));
  assert.equal(text, "$(search) situate: 2,128 chunks, vectors 4%");
  assert.match(tooltip, /e5 vectors: 96 of 2,128, about 9 min left/);
  assert.match(tooltip, /Search works meanwhile/);
});

test("failed: the tooltip gives the folder's last error, and says a folder with an open index is still searched", () => {
  const error = "notes: /home/me/notes/situate.toml:3:8: not valid TOML: string values must be quoted";
  const broken = statusBarText(one(folder({ phase: "failed", errors: ["an older one", error] })));
  assert.equal(broken.text, "$(error) situate");
  assert.match(broken.tooltip, /situate\.toml:3:8: not valid TOML/);
  assert.match(broken.tooltip, /Search answers from its last index/);
  assert.doesNotMatch(broken.tooltip, /could not be opened/);
  const unopened = statusBarText(one(folder({ phase: "failed", index: null, errors: ["cannot create /x."] })));
  assert.equal(unopened.tooltip, "The index of /home/me/notes could not be opened: cannot create /x.\nClick for details");
});

test("vectors filling in several folders: each tooltip line names its folder", () => {
  const e5 = { provider: "e5", model: "e5-small", dimensions: 384 };
  const zh = folder({ root: "/w/zh", index: { ...index, chunks: 164, vectors_pending: 100, embedder: e5 } });
  const notes = folder({ root: "/w/notes", index: { ...index, chunks: 8, vectors_pending: 0 } });
  const { text, tooltip } = statusBarText({ folders: [notes, zh] });
  assert.equal(text, "$(search) situate: 172 chunks, vectors 41%");
  assert.match(tooltip, /^zh: e5 vectors: 64 of 164;/m);
  assert.doesNotMatch(tooltip, /notes: e5/);
});

test("the report's times read as the hover's, in UTC without the ISO punctuation", () => {
  const report = statusReport(one(folder()), new Date(Date.UTC(2026, 10, 27, 15, 17, 30, 130)));
  assert.ok(report.includes("As of 2026-11-27 15:17:30 UTC."), report);
  assert.match(report, /- Last commit: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(generation 12\)/);
});
