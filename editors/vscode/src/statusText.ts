// Words for the index's state: the status-bar text, the status report and the reindex summary (vscode-free).
import type { FolderStatus, ReconcileReport, ReindexAnswer, StatusAnswer } from "./protocol";

export interface StatusBarText {
  text: string;
  tooltip: string;
}

const count = (n: number): string => n.toLocaleString("en-US");
const plural = (n: number, word: string): string => `${count(n)} ${word}${n === 1 ? "" : "s"}`;

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
    return {
      text: "$(error) situate",
      tooltip: `The index of ${failed.map((f) => f.root).join(", ")} could not be opened. Click for details.`,
    };
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
  if (pending > 0) {
    notes.push(`${count(pending)} changed ${pending === 1 ? "file" : "files"} waiting to be indexed`);
  }
  if (folders.some((f) => f.phase === "read-only")) {
    notes.push("read-only: another editor writes this index");
  }
  notes.push("Click for the index status");
  return { text: `$(search) situate: ${count(chunks)} chunks`, tooltip: notes.join("\n") };
}

/** A Markdown report of every folder: phase, index figures, pending files and problems. */
export function statusReport(status: StatusAnswer, now: Date = new Date()): string {
  const lines = ["# situate index status", "", `As of ${now.toISOString()}.`, ""];
  if (status.folders.length === 0) {
    lines.push("No workspace folder is indexed: open a folder on disk.", "");
  }
  for (const folder of status.folders) {
    lines.push(...folderReport(folder));
  }
  return lines.join("\n");
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
      `- Index folder: \`${index.index_dir}\` (${formatBytes(index.disk_bytes)})`,
      `- Last commit: ${index.last_commit > 0 ? new Date(index.last_commit * 1000).toISOString() : "never"} (generation ${index.generation})`,
    );
  } else {
    lines.push("- The index is not open yet.");
  }
  lines.push("");
  lines.push(...section("Pending (changed, not yet indexed)", folder.pending.map((p) => `\`${p}\``)));
  lines.push(...section("Errors", folder.errors));
  if (index) {
    lines.push(...section("Configuration problems", index.config_problems));
    lines.push(...section("Skipped files", index.skipped.map(describeSkipped)));
    lines.push(...section("Notes", index.notes));
  }
  return lines;
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
