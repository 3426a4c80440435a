// The situate server's commands and the shapes of their answers (docs/lsp.md), as plain types.

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
  preview: string;
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
  embedder: { provider: string; model: string; dimensions: number };
  last_commit: number;
  generation: number;
  disk_bytes: number;
  skipped: ({ path: string } & Record<string, unknown>)[];
  config_problems: string[];
  notes: string[];
}

export interface FolderStatus {
  root: string;
  phase: Phase;
  indexing: { done: number; total: number } | null;
  pending: string[];
  errors: string[];
  index: IndexStatus | null;
}

/** The answer of `situate.status`. */
export interface StatusAnswer {
  folders: FolderStatus[];
}
