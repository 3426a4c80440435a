//! Every JSON shape of situate's protocol extensions: the parameters and answers of its
//! `workspace/executeCommand` commands. `docs/lsp.md` documents them and
//! `editors/vscode/src/protocol.ts` mirrors them; both name this file's hash, which a house
//! test checks, so a change here must be carried to both. The shapes shared with the CLI
//! (reindex reports, index status) come from [`crate::wire`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tower_lsp_server::ls_types::{Position, Range, Uri};

use crate::search::{Expand, SearchMode};
use crate::wire::{ReportJson, StatusJson, TotalsJson};

/// The commands `workspace/executeCommand` knows.
pub const COMMANDS: [&str; 4] = ["situate.search", "situate.similar", "situate.reindex", "situate.status"];

/// `situate.search`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    pub query: String,
    pub limit: Option<usize>,
    /// `hybrid`, `bm25` or `vector` (default: the `search.mode` setting).
    pub mode: Option<SearchMode>,
    /// `none`, `window` or `merge` (default: the `search.expand` setting).
    pub expand: Option<Expand>,
    /// Workspace-relative path prefixes.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Front matter filters, `FIELD=VALUE` each; hits match all of them.
    #[serde(default, rename = "where")]
    pub filters: Vec<String>,
}

/// `situate.similar`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimilarParams {
    pub uri: Uri,
    pub position: Position,
    pub limit: Option<usize>,
}

/// `situate.reindex`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReindexParams {
    pub uri: Option<Uri>,
}

/// `situate.status`: no keys (`null` also reads as none).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusParams {}

/// The answer to `situate.search` and `situate.similar`.
#[derive(Debug, Serialize)]
pub struct SearchAnswer {
    /// Some folder is still being indexed: hits come from its last commit.
    pub indexing: bool,
    pub hits: Vec<HitInfo>,
}

/// One hit as editors show it.
#[derive(Debug, Clone, Serialize)]
pub struct HitInfo {
    pub uri: Uri,
    pub range: Range,
    /// Workspace-relative path.
    pub path: String,
    pub title: String,
    pub heading_path: Vec<String>,
    /// The context indexed with the chunk (its header).
    pub context: String,
    pub score: f32,
    /// The lines of the chunk that show why it matched (one or two, joined by ` … `):
    /// those with the most query terms, else the closest in meaning, else the first line of
    /// text. Long lines are cut around the first matched term.
    pub preview: String,
    /// The matched terms in `preview`: `[start, end)` offsets in the session's position
    /// encoding (UTF-16 code units unless UTF-8 was negotiated).
    pub preview_marks: Vec<[u32; 2]>,
    /// The 0-based line of the preview's first line in the file: where a picker can place
    /// the cursor.
    pub preview_line: u32,
    /// The front matter fields of the hit's document (`tags`, `category`, …), each with its
    /// values; left out when it has none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Vec<String>>,
    /// With `expand`: the wider passage around the hit (its range and exact text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expanded: Option<ExpandedInfo>,
}

/// The passage a hit was widened to.
#[derive(Debug, Clone, Serialize)]
pub struct ExpandedInfo {
    pub range: Range,
    pub heading_path: Vec<String>,
    pub text: String,
}

/// The answer to `situate.reindex`: one file's report, or each folder's.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ReindexAnswer {
    File {
        /// Workspace-relative path of the file.
        path: Option<String>,
        report: ReportJson,
    },
    Folders {
        folders: Vec<FolderReport>,
    },
}

/// One folder's report in the answer to a full `situate.reindex`.
#[derive(Debug, Serialize)]
pub struct FolderReport {
    pub root: String,
    pub report: ReportJson,
}

/// The answer to `situate.status`.
#[derive(Debug, Serialize)]
pub struct StatusAnswer {
    pub folders: Vec<FolderStatus>,
}

/// One folder in the answer to `situate.status`.
#[derive(Debug, Serialize)]
pub struct FolderStatus {
    pub root: String,
    pub phase: Phase,
    pub indexing: Option<IndexingProgress>,
    /// Files changed but not yet indexed (workspace-relative).
    pub pending: Vec<String>,
    /// Chunks searchable by their words whose vectors are still being computed.
    pub vectors_pending: usize,
    pub errors: Vec<String>,
    /// The snippet queue, when snippets are on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippets: Option<SnippetQueue>,
    /// The index as of its last commit (absent until it has been opened).
    pub index: Option<StatusJson>,
}

/// What a folder's writer is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Opening,
    Indexing,
    Ready,
    ReadOnly,
    Failed,
}

/// Files done and to do in a running reconcile.
#[derive(Debug, Serialize)]
pub struct IndexingProgress {
    pub done: usize,
    pub total: usize,
}

/// A folder's snippet queue.
#[derive(Debug, Serialize)]
pub struct SnippetQueue {
    pub state: SnippetState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub done: usize,
    pub total: usize,
    pub totals: TotalsJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<u64>,
}

/// What the snippet queue is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SnippetState {
    Idle,
    Running,
    Paused,
    Stopped,
}
