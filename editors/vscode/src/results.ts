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
  /** The words that matched the query, highlighted in the chunk when the hit opens. */
  terms: string[];
}

const SEPARATOR = " › ";
const MAX_DETAIL = 200;

/**
 * Labels longer than this lose their middle headings: VS Code cuts the row's end, where
 * the file and line are, to fit a long label.
 */
const MAX_LABEL = 60;

/**
 * `title › heading › heading`. A first heading equal to the title (a document whose H1
 * is its title) is not repeated. A long path keeps the title and its last headings, with
 * `…` for those left out (`OpenID Connect › … › redirectUrl`), and a heading too long by
 * itself is cut.
 */
export function hitLabel(hit: Pick<Hit, "title" | "heading_path" | "path">): string {
  const headings = [...hit.heading_path];
  const title = hit.title.trim() || hit.path;
  if (headings.length > 0 && headings[0].trim() === title) {
    headings.shift();
  }
  let label = [title, ...headings].join(SEPARATOR);
  for (let left = 1; label.length > MAX_LABEL && left < headings.length; left++) {
    label = [title, "…", ...headings.slice(left)].join(SEPARATOR);
  }
  if (label.length > MAX_LABEL) {
    // One long heading (or title): its end goes.
    label = `${label.slice(0, MAX_LABEL - 1).trimEnd()}…`;
  }
  return escapeIcons(label);
}

/**
 * `ops/backup.md:13 · #backup #ops · 0.136`: the line that matched (1-based), the
 * document's tags when its front matter has some, and the score. `place` is the file as
 * the workspace names it, by default the path within its folder.
 */
export function hitDescription(hit: Pick<Hit, "path" | "preview_line" | "score" | "metadata">, place: string = hit.path): string {
  const tags = tagsOf(hit.metadata)
    .map((t) => (t.startsWith("#") ? t : `#${t}`))
    .join(" ");
  const parts = [`${place}:${hit.preview_line + 1}`, ...(tags ? [tags] : []), formatScore(hit.score)];
  return escapeIcons(parts.join(" · "));
}

/** The values of a `tags` field, whatever the case of its name. */
function tagsOf(metadata: Record<string, string[]> | undefined): string[] {
  const key = Object.keys(metadata ?? {}).find((k) => k.toLowerCase() === "tags");
  return key && metadata ? metadata[key] : [];
}

/** The distinct words the server marked in the preview, in order. */
export function matchedTerms(hit: Pick<Hit, "preview" | "preview_marks">): string[] {
  const terms = hit.preview_marks.map(([start, end]) => hit.preview.slice(start, end)).filter((t) => t.trim() !== "");
  return [...new Set(terms)];
}

/** A place in a document: 0-based line and UTF-16 character range on it. */
export interface TermRange {
  line: number;
  start: number;
  end: number;
}

/**
 * Where `terms` occur in `lines` (the chunk's lines, the first at `firstLine`), matched
 * as written: the places the opened hit highlights.
 */
export function termRanges(lines: string[], firstLine: number, terms: string[]): TermRange[] {
  const ranges: TermRange[] = [];
  lines.forEach((text, i) => {
    for (const term of terms) {
      for (let at = text.indexOf(term); at >= 0; at = text.indexOf(term, at + term.length)) {
        ranges.push({ line: firstLine + i, start: at, end: at + term.length });
      }
    }
  });
  return ranges.sort((a, b) => a.line - b.line || a.start - b.start);
}

/** The preview line, on one line and cut to a readable length. */
export function hitDetail(hit: Pick<Hit, "preview">): string {
  const flat = hit.preview.replace(/\s+/g, " ").trim();
  const cut = flat.length > MAX_DETAIL ? `${flat.slice(0, MAX_DETAIL - 1).trimEnd()}…` : flat;
  return escapeIcons(cut);
}

/** Scores are fused from each arm's normalised score; three decimals tell them apart. */
export function formatScore(score: number): string {
  return score.toFixed(3);
}

/**
 * The rows of an answer. `placeOf` names a hit's file as the workspace does: in a
 * workspace of several folders, two folders may each hold `README.md`, so VS Code puts the
 * folder's name first (`notes/ops/backup.md`).
 */
export function hitRows(answer: SearchAnswer, placeOf: (hit: Hit) => string = (hit) => hit.path): HitRow[] {
  return answer.hits.map((hit) => ({
    label: hitLabel(hit),
    description: hitDescription(hit, placeOf(hit)),
    detail: hitDetail(hit),
    uri: hit.uri,
    range: hit.range,
    terms: matchedTerms(hit),
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
