// Words for the index's state: the status-bar text, the status report and the reindex summary (vscode-free).
import type {
  FolderStatus,
  IndexStatus,
  ReconcileReport,
  ReindexAnswer,
  SnippetQueueStatus,
  SnippetTotals,
  StatusAnswer,
} from "./protocol";

export interface StatusBarText {
  text: string;
  tooltip: string;
}

const count = (n: number): string => n.toLocaleString("en-US");
const plural = (n: number, word: string): string => `${count(n)} ${word}${n === 1 ? "" : "s"}`;

/** Poll often while a folder's index changes, rarely once it is ready. */
export const BUSY_POLL_MS = 2_000;
export const READY_POLL_MS = 10_000;

/**
 * How long until the next polled status: soon while a folder opens, indexes, waits on
 * changed files or fills the strong model's vectors (whose figures the status bar shows),
 * else later.
 */
export function pollDelay(status: StatusAnswer | undefined): number {
  const busy =
    !status ||
    status.folders.some(
      (f) =>
        f.phase === "opening" || f.phase === "indexing" || f.pending.length > 0 || (f.index?.vectors_pending ?? 0) > 0,
    );
  return busy ? BUSY_POLL_MS : READY_POLL_MS;
}

/**
 * The status-bar item for the server's status. `progress` is the percentage of the
 * indexing runs reported through `$/progress`, when one is running; it is fresher than
 * a polled status.
 */
export function statusBarText(status: StatusAnswer | undefined, progress?: number): StatusBarText {
  if (progress !== undefined) {
    return { text: `$(sync~spin) situate ${Math.round(progress)}%`, tooltip: "situate is indexing the workspace" };
  }
  if (!status) {
    return { text: "$(sync~spin) situate", tooltip: "situate is starting" };
  }
  const folders = status.folders;
  if (folders.length === 0) {
    return { text: "$(search) situate: no folder", tooltip: "Open a folder to index its markdown and text files" };
  }
  const failed = folders.filter((f) => f.phase === "failed");
  if (failed.length > 0) {
    return { text: "$(error) situate", tooltip: [...failed.map(failedNote), "Click for details"].join("\n") };
  }
  const indexing = folders.filter((f) => f.phase === "indexing");
  if (indexing.length > 0) {
    const done = indexing.reduce((sum, f) => sum + (f.indexing?.done ?? 0), 0);
    const total = indexing.reduce((sum, f) => sum + (f.indexing?.total ?? 0), 0);
    const text = total > 0 ? `$(sync~spin) situate ${Math.floor((100 * done) / total)}%` : "$(sync~spin) situate";
    return { text, tooltip: `situate is indexing: ${count(done)}/${count(total)} files` };
  }
  if (folders.some((f) => f.phase === "opening")) {
    return { text: "$(sync~spin) situate", tooltip: "situate is opening the index" };
  }
  const chunks = folders.reduce((sum, f) => sum + (f.index?.chunks ?? 0), 0);
  const files = folders.reduce((sum, f) => sum + (f.index?.files ?? 0), 0);
  const pending = folders.reduce((sum, f) => sum + f.pending.length, 0);
  const notes = [`${count(files)} files, ${count(chunks)} chunks indexed`];
  // The index is searchable while the strong model's vectors are computed in the background.
  const filling = folders.filter((f) => f.index && f.index.vectors_pending > 0);
  let vectors = "";
  if (filling.length > 0) {
    const left = filling.reduce((sum, f) => sum + (f.index?.vectors_pending ?? 0), 0);
    vectors = `, vectors ${Math.floor((100 * (chunks - left)) / Math.max(chunks, 1))}%`;
    // With several folders, each line names its folder.
    const named = (f: FolderStatus): string => (folders.length > 1 ? `${folderName(f.root)}: ` : "");
    notes.push(...filling.map((f) => named(f) + pendingVectorsText(f.index as IndexStatus)), "Search works meanwhile");
  }
  if (pending > 0) {
    notes.push(`${count(pending)} changed ${pending === 1 ? "file" : "files"} waiting to be indexed`);
  }
  if (folders.some((f) => f.phase === "read-only")) {
    notes.push("read-only: another editor writes this index");
  }
  const snippets = snippetsNote(folders);
  if (snippets) {
    notes.push(snippets);
  }
  notes.push("Click for the index status");
  return { text: `$(search) situate: ${count(chunks)} chunks${vectors}`, tooltip: notes.join("\n") };
}

/** The last segment of a folder's path, as the explorer names it. */
function folderName(root: string): string {
  return root.replace(/[\\/]+$/, "").split(/[\\/]/).pop() || root;
}

/**
 * Why a folder failed, with its last error. A folder whose settings went bad after its
 * index opened (a broken situate.toml) is still searched, as of its last index.
 */
function failedNote(folder: FolderStatus): string {
  const last = folder.errors[folder.errors.length - 1]?.trim().replace(/\.$/, "");
  const why = last ? `: ${last}` : "";
  return folder.index
    ? `${folder.root} is not kept up to date${why}. Search answers from its last index.`
    : `The index of ${folder.root} could not be opened${why}.`;
}

/** One tooltip line on the snippets of every folder that has them on, if any. */
function snippetsNote(folders: FolderStatus[]): string | undefined {
  const on = folders.filter(snippetsOn);
  if (on.length === 0) {
    return undefined;
  }
  const done = on.reduce((sum, f) => sum + (f.index?.snippets?.done ?? 0), 0);
  const pending = on.reduce((sum, f) => sum + (f.index?.snippets?.pending ?? 0), 0);
  let note = `${plural(done, "snippet")} written, ${count(pending)} waiting`;
  const states = on.map((f) => f.snippets?.state);
  if (states.includes("stopped")) {
    note += " (stopped: the model keeps failing)";
  } else if (states.includes("paused")) {
    note += " (paused: the budget is spent)";
  } else if (states.includes("running")) {
    note += " (writing)";
  }
  return note;
}

/** A Markdown report of every folder: phase, index figures, pending files and problems. */
export function statusReport(status: StatusAnswer, now: Date = new Date()): string {
  const lines = ["# situate index status", "", `As of ${utcTime(now)}.`, ""];
  if (status.folders.length === 0) {
    lines.push("No workspace folder is indexed: open a folder on disk.", "");
  }
  for (const folder of status.folders) {
    lines.push(...folderReport(folder));
  }
  return lines.join("\n");
}

/** A time as the hover writes it too: "2026-11-21 14:05:09 UTC". */
export function utcTime(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** "e5 vectors: 1,240 of 5,285, about 9 min left; the built-in static model stands in for the rest". */
export function pendingVectorsText(index: IndexStatus): string {
  const done = Math.max(0, index.chunks - index.vectors_pending);
  const left = index.vectors_eta_secs === undefined ? "" : `, about ${duration(index.vectors_eta_secs)} left`;
  return `${index.embedder.provider} vectors: ${count(done)} of ${count(index.chunks)}${left}; the built-in static model stands in for the rest`;
}

/** Seconds as a person reads them: "40 s", "9 min", "2 h 5 min". */
function duration(secs: number): string {
  if (secs < 60) {
    return `${secs} s`;
  }
  if (secs < 3600) {
    return `${Math.ceil(secs / 60)} min`;
  }
  return `${Math.floor(secs / 3600)} h ${Math.floor((secs % 3600) / 60)} min`;
}

/** "- Languages: English 1,240 · German 340 (chunks by the rules of each)", once a language other than English has chunks. */
function languagesLine(index: IndexStatus): string[] {
  const languages = index.languages ?? [];
  if (!languages.some((l) => l.code !== "en")) {
    return [];
  }
  const shares = languages.map((l) => `${l.name.charAt(0).toUpperCase()}${l.name.slice(1)} ${count(l.chunks)}`);
  return [`- Languages: ${shares.join(" · ")} (chunks by the rules of each)`];
}

function folderReport(folder: FolderStatus): string[] {
  const lines = [`## ${folder.root}`, ""];
  let phase = folder.phase as string;
  if (folder.phase === "indexing" && folder.indexing) {
    phase += ` (${count(folder.indexing.done)}/${count(folder.indexing.total)} files)`;
  } else if (folder.phase === "read-only") {
    phase += " (another process writes this index; this editor searches it)";
  }
  lines.push(`- Phase: ${phase}`);
  const index = folder.index;
  if (index) {
    lines.push(
      `- Files: ${count(index.files)} · chunks: ${count(index.chunks)} · vectors: ${count(index.vectors)}`,
      `- Model: ${index.embedder.provider} \`${index.embedder.model}\` (${index.embedder.dimensions} dimensions)`,
      ...languagesLine(index),
      `- Index folder: \`${index.index_dir}\` (${formatBytes(index.disk_bytes)})`,
      `- Last commit: ${index.last_commit > 0 ? utcTime(new Date(index.last_commit * 1000)) : "never"} (generation ${index.generation})`,
    );
  } else {
    lines.push("- The index is not open yet.");
  }
  if (index && index.vectors_pending > 0) {
    lines.push(`- ${pendingVectorsText(index)}`);
  } else if (folder.vectors_pending) {
    lines.push(`- Vectors pending: ${count(folder.vectors_pending)} chunks, searchable by their words meanwhile`);
  }
  lines.push(...snippetLines(folder));
  lines.push("");
  lines.push(...section("Pending (changed, not yet indexed)", folder.pending.map((p) => `\`${p}\``)));
  lines.push(...section("Errors", folder.errors));
  if (index) {
    lines.push(...section("Configuration problems", index.config_problems));
    lines.push(...section("Skipped files", index.skipped.map(describeSkipped)));
    lines.push(...section("Not valid UTF-8 (indexed with replacement characters)", (index.lossy ?? []).map((p) => `\`${p}\``)));
    lines.push(...section("Notes", index.notes));
  }
  return lines;
}

/**
 * Whether snippets are on for the folder: the open index says so; before it is open, the
 * queue does. (A folder whose snippets were turned off may keep its queue's last state.)
 */
function snippetsOn(folder: FolderStatus): boolean {
  return folder.index ? folder.index.snippets !== undefined && folder.index.snippets !== null : folder.snippets !== undefined && folder.snippets !== null;
}

/**
 * The snippets entry of a folder's report: state, chunks written and waiting, calls and
 * tokens of this budget period, and the model; then why the queue is paused or stopped,
 * the budget and the estimate. Nothing when snippets are off.
 */
export function snippetLines(folder: FolderStatus): string[] {
  if (!snippetsOn(folder)) {
    return [];
  }
  const queue = folder.snippets;
  const index = folder.index?.snippets;
  const parts: string[] = [];
  let state: string = queue?.state ?? "idle";
  if (queue?.state === "running" && queue.total > 0) {
    state += ` (${count(queue.done)}/${count(queue.total)} in this run)`;
  }
  parts.push(state);
  if (index) {
    parts.push(`${count(index.done)} written, ${count(index.pending)} pending`);
  }
  if (queue) {
    parts.push(`${spent(queue.totals)} this period`);
  }
  if (index) {
    parts.push(`\`${index.model}\` (${index.mode} mode)`);
  }
  const lines = [`- Snippets: ${parts.join(" · ")}`];
  const why = queue ? reasonLine(queue) : undefined;
  if (why) {
    lines.push(`  - ${why}`);
  }
  if (index) {
    const calls = index.max_calls === null ? "unlimited calls" : plural(index.max_calls, "call");
    const tokens = index.max_run_tokens === null ? "unlimited tokens" : `${count(index.max_run_tokens)} tokens`;
    lines.push(`  - Budget per period: ${calls}, ${tokens}`);
    const e = index.estimate;
    if (e && e.calls > 0) {
      const cached = e.cached_input_tokens > 0 ? ` (${count(e.cached_input_tokens)} cached)` : "";
      const output = e.output_tokens > 0 ? `, ${count(e.output_tokens)} output tokens` : "";
      lines.push(`  - Estimate for the pending: ${plural(e.calls, "call")}, ${count(e.input_tokens)} input tokens${cached}${output}`);
    }
  }
  return lines;
}

/** Calls and tokens spent: `12 calls (1 failed), 4,096 input + 512 output tokens`. */
function spent(t: SnippetTotals): string {
  const problems = [];
  if (t.failed > 0) {
    problems.push(`${count(t.failed)} failed`);
  }
  if (t.rejected > 0) {
    problems.push(`${count(t.rejected)} rejected`);
  }
  const calls = plural(t.calls, "call") + (problems.length > 0 ? ` (${problems.join(", ")})` : "");
  const cache = [];
  if (t.cache_read_tokens > 0) {
    cache.push(`${count(t.cache_read_tokens)} read from the prompt cache`);
  }
  if (t.cache_write_tokens > 0) {
    cache.push(`${count(t.cache_write_tokens)} written to it`);
  }
  const tokens = `${count(t.input_tokens)} input + ${count(t.output_tokens)} output tokens`;
  return `${calls}, ${tokens}${cache.length > 0 ? ` (${cache.join(", ")})` : ""}`;
}

/** Why the queue is paused or stopped, and what happens next. */
function reasonLine(queue: SnippetQueueStatus): string | undefined {
  // The server's reasons may start with what the state already says.
  const reason = (fallback: string): string => {
    const text = (queue.reason ?? fallback).trim().replace(/^snippets (?:are )?(?:paused|stopped):\s*/i, "");
    return /[.!?]$/.test(text) ? text : `${text}.`;
  };
  if (queue.state === "paused") {
    return `Paused: ${reason("the budget of this period is spent")} **Situate: Reindex Workspace** starts a new budget period.`;
  }
  if (queue.state === "stopped") {
    const retry = queue.retry_at ? ` Next try at ${utcTime(new Date(queue.retry_at * 1000))};` : "";
    return `Stopped: ${reason("the model keeps failing")}${retry} **Situate: Reindex Workspace** tries again now.`;
  }
  return undefined;
}

function section(title: string, items: string[]): string[] {
  if (items.length === 0) {
    return [];
  }
  return [`### ${title} (${items.length})`, "", ...items.map((item) => `- ${item}`), ""];
}

function describeSkipped(skipped: { path: string } & Record<string, unknown>): string {
  const { path, reason, ...rest } = skipped;
  const extra = Object.entries(rest).map(([k, v]) => `${k}: ${String(v)}`);
  const why = [typeof reason === "string" ? reason.replace(/_/g, " ") : "skipped", ...extra].join(", ");
  return `\`${path}\`: ${why}`;
}

export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** One line saying what a reindex did. */
export function reindexSummary(answer: ReindexAnswer): string {
  if ("path" in answer) {
    const r = answer.report;
    return r.files_indexed > 0
      ? `Reindexed ${answer.path}: ${plural(r.chunks_written, "chunk")} written.`
      : `${answer.path} was already up to date.`;
  }
  if (answer.folders.length === 0) {
    return "No folder to reindex.";
  }
  return answer.folders.map((f) => `${answer.folders.length > 1 ? `${f.root}: ` : "Reindexed: "}${reportLine(f.report)}`).join(" ");
}

function reportLine(r: ReconcileReport): string {
  const parts = [`${plural(r.files_seen ?? 0, "file")} seen`, `${count(r.files_indexed)} indexed`];
  if (r.files_removed) {
    parts.push(`${count(r.files_removed)} removed`);
  }
  parts.push(`${plural(r.chunks_written, "chunk")} written`);
  if (r.skipped && r.skipped.length > 0) {
    parts.push(`${count(r.skipped.length)} skipped`);
  }
  const time = r.seconds !== undefined ? ` in ${r.seconds.toFixed(2)} s` : "";
  const interrupted = r.interrupted ? " (interrupted; the rest follows)" : "";
  return `${parts.join(", ")}${time}${interrupted}.`;
}
