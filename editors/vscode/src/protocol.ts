// The situate server's commands and the shapes of their answers (docs/lsp.md), as plain types.
// Kept in step with src/lsp/ext.rs and src/wire/ (checked by tests/house.rs):
// wire shapes hash: 79ce3909a843b1c2

/** Names of the server's `workspace/executeCommand` commands. */
export const ServerCommand = {
  search: "situate.search",
  similar: "situate.similar",
  reindex: "situate.reindex",
  status: "situate.status",
} as const;

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export type SearchMode = "hybrid" | "bm25" | "vector";
export type Expand = "none" | "window" | "merge";

/** The argument of `situate.search`. */
export interface SearchParams {
  query: string;
  limit?: number;
  mode?: SearchMode;
  expand?: Expand;
  paths?: string[];
  /** Front matter filters, `FIELD=VALUE` each; hits match all of them. */
  where?: string[];
}

/** The argument of `situate.similar`. */
export interface SimilarParams {
  uri: string;
  position: Position;
  limit?: number;
}

/** The argument of `situate.reindex`: one file, or every folder when `uri` is left out. */
export interface ReindexParams {
  uri?: string;
}

export interface Hit {
  uri: string;
  range: Range;
  path: string;
  title: string;
  heading_path: string[];
  context: string;
  score: number;
  /** The lines that show why the chunk matched, joined by " … ". */
  preview: string;
  /** The matched words in `preview`, as [start, end) UTF-16 offsets. */
  preview_marks: [number, number][];
  /** The 0-based line of the preview's first line. */
  preview_line: number;
  /** The front matter fields of the hit's document, when it has any. */
  metadata?: Record<string, string[]>;
  expanded?: { range: Range; heading_path: string[]; text: string };
}

/** The answer of `situate.search` and `situate.similar`. */
export interface SearchAnswer {
  indexing: boolean;
  hits: Hit[];
}

/** What one indexing run did (the fields of `situate index --json`). */
export interface ReconcileReport {
  files_seen?: number;
  files_unchanged?: number;
  files_indexed: number;
  files_touched?: number;
  files_removed?: number;
  chunks_written: number;
  vectors_embedded: number;
  vectors_reused?: number;
  /** Vectors taken from the team cache instead of computed. */
  vectors_from_team?: number;
  skipped?: unknown[];
  lossy?: string[];
  interrupted?: boolean;
  seconds?: number;
}

/** The answer of `situate.reindex`: one file's report, or one per folder. */
export type ReindexAnswer =
  | { path: string; report: ReconcileReport }
  | { folders: { root: string; report: ReconcileReport }[] };

export type Phase = "opening" | "indexing" | "ready" | "read-only" | "failed";

export interface IndexStatus {
  workspace: string;
  index_dir: string;
  read_only: boolean;
  other_writer: boolean;
  files: number;
  chunks: number;
  vectors: number;
  /** Chunks still waiting for a vector of the index's model; the built-in static model stands in. */
  vectors_pending: number;
  /** Seconds until those are filled, at the rate last measured (absent when unknown). */
  vectors_eta_secs?: number;
  embedder: { provider: string; model: string; dimensions: number };
  last_commit: number;
  generation: number;
  disk_bytes: number;
  skipped: ({ path: string } & Record<string, unknown>)[];
  /** Files that are not valid UTF-8, indexed with replacement characters (absent from older servers). */
  lossy?: string[];
  config_problems: string[];
  notes: string[];
  /** LLM-written snippets, when they are on for the folder. */
  snippets?: SnippetIndexStatus;
  /** The team cache, when the settings name one. */
  team?: TeamStatus;
  /** How many chunks each language's rules analyse, most first (`en` takes every chunk no other language's do). */
  languages?: LanguageChunks[];
}

/** The chunks one language's rules analyse: `{ code: "de", name: "german", chunks: 340 }`. */
export interface LanguageChunks {
  code: string;
  name: string;
  chunks: number;
}

/** The team cache: its address (never the password), its state and what it did here. */
export interface TeamStatus {
  target: string;
  state?: string;
  read_only?: string;
  vectors_from_team: number;
  vectors_computed: number;
  snippets_from_team: number;
  snippets_written: number;
  rejected: number;
}

/** What writing the pending snippets would cost. */
export interface SnippetEstimate {
  calls: number;
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
}

/** The index's snippets: chunks with one, chunks waiting for one, and the budget. */
export interface SnippetIndexStatus {
  /** `provider/model@host`. */
  model: string;
  mode: string;
  /** Chunks indexed with their snippet. */
  done: number;
  /** Chunks indexed with their header context alone, waiting for a snippet. */
  pending: number;
  /** Calls allowed per budget period (`null`: unlimited). */
  max_calls: number | null;
  /** Input plus output tokens allowed per budget period (`null`: unlimited). */
  max_run_tokens: number | null;
  estimate?: SnippetEstimate;
}

/** Calls and tokens spent in the current budget period. */
export interface SnippetTotals {
  calls: number;
  failed: number;
  rejected: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
}

export type SnippetState = "idle" | "running" | "paused" | "stopped";

/** The folder's snippet queue. */
export interface SnippetQueueStatus {
  state: SnippetState;
  /** Why the queue is paused or stopped. */
  reason?: string;
  /** Jobs of the running (or last) run: answered so far, and in all. */
  done: number;
  total: number;
  totals: SnippetTotals;
  /** Unix seconds of the next attempt, when stopped. */
  retry_at?: number;
}

export interface FolderStatus {
  root: string;
  phase: Phase;
  indexing: { done: number; total: number } | null;
  pending: string[];
  /** Chunks searchable by their words whose vectors are still being computed. */
  vectors_pending?: number;
  errors: string[];
  /** The snippet queue, when snippets are on. */
  snippets?: SnippetQueueStatus;
  index: IndexStatus | null;
}

/** The answer of `situate.status`. */
export interface StatusAnswer {
  folders: FolderStatus[];
}
