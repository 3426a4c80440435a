// Turns search answers into the rows the Search and Find Related pickers show (vscode-free).
import type { Hit, Range, SearchAnswer } from "./protocol";

/** One picker row: the text VS Code shows and where the hit opens. */
export interface HitRow {
  label: string;
  description: string;
  detail: string;
  uri: string;
  /** The chunk's own range, which the editor reveals and selects. */
  range: Range;
}

const SEPARATOR = " › ";
const MAX_DETAIL = 200;

/**
 * `title › heading › heading`. A first heading equal to the title (a document whose H1
 * is its title) is not repeated.
 */
export function hitLabel(hit: Pick<Hit, "title" | "heading_path" | "path">): string {
  const headings = [...hit.heading_path];
  const title = hit.title.trim() || hit.path;
  if (headings.length > 0 && headings[0].trim() === title) {
    headings.shift();
  }
  return escapeIcons([title, ...headings].join(SEPARATOR));
}

/** `ops/backup.md:10 · 0.136`: where the hit is (1-based line) and its score. */
export function hitDescription(hit: Pick<Hit, "path" | "range" | "score">): string {
  return escapeIcons(`${hit.path}:${hit.range.start.line + 1} · ${formatScore(hit.score)}`);
}

/** The preview line, on one line and cut to a readable length. */
export function hitDetail(hit: Pick<Hit, "preview">): string {
  const flat = hit.preview.replace(/\s+/g, " ").trim();
  const cut = flat.length > MAX_DETAIL ? `${flat.slice(0, MAX_DETAIL - 1).trimEnd()}…` : flat;
  return escapeIcons(cut);
}

/** Scores are small fused numbers (RRF); three significant decimals tell them apart. */
export function formatScore(score: number): string {
  return score.toFixed(3);
}

export function hitRows(answer: SearchAnswer): HitRow[] {
  return answer.hits.map((hit) => ({
    label: hitLabel(hit),
    description: hitDescription(hit),
    detail: hitDetail(hit),
    uri: hit.uri,
    range: hit.range,
  }));
}

/** The line the picker shows above its rows, if any. */
export function answerNotice(answer: SearchAnswer, query: string): string | undefined {
  if (answer.indexing) {
    return answer.hits.length === 0
      ? "index still building: no results yet"
      : "index still building: results come from the last commit";
  }
  if (answer.hits.length === 0 && query.trim() !== "") {
    return `no results for "${query.trim()}"`;
  }
  return undefined;
}

/**
 * VS Code renders `$(name)` in picker text as an icon; a backslash keeps it literal, so
 * that a note about shell syntax shows as written.
 */
export function escapeIcons(text: string): string {
  return text.replace(/\$\(/g, "\\$(");
}
