//! Every JSON shape of the MCP tools: the arguments a client sends and the results it gets
//! back. Their JSON schemas (derived here) are what `tools/list` tells a model, so the doc
//! comments on arguments are written for a model; field names are decided here only.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::search::{Expand, SearchMode};

/// Arguments of `search`. Filters are separate optional fields, each narrowing the others.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in plain words: a question ("how long are backups kept?") or
    /// keywords. Passages match by meaning and by words, even when they never name the topic.
    pub query: String,
    /// How many passages to return at most (1 to 100). Default: 10, or the number the
    /// workspace's settings give.
    #[schemars(range(min = 1, max = 100))]
    pub k: Option<u32>,
    /// `hybrid` (default) matches words and meaning; `bm25` words only (names, error codes,
    /// exact terms); `vector` meaning only.
    pub mode: Option<ModeArg>,
    /// Only passages in these workspace-relative folders or files, e.g. ["docs/ops",
    /// "README.md"]. Default: the whole workspace.
    pub paths: Option<Vec<String>>,
    /// Only passages of documents whose front matter (the YAML or TOML block at the top of a
    /// note) has these values, each written `FIELD=VALUE`, e.g. ["tags=backup",
    /// "category=ops"]; all must match. Case is ignored, and a parent tag matches its nested
    /// tags (`tags=ops` matches `ops/storage`); a note's tags include the `#tags` written in
    /// its text. Passages show their document's fields in `metadata`.
    #[serde(rename = "where")]
    pub filters: Option<Vec<String>>,
    /// Widen each passage with its context: `window` adds the passages just before and after
    /// it, `merge` returns whole sections where several of their passages match. Default:
    /// `none`.
    pub expand: Option<ExpandArg>,
    /// Size limit of the answer in tokens (estimated), 100 to 50000. Default: 4000. Passages
    /// that do not fit are left out (the last one kept may be cut short), and the answer says
    /// so.
    #[schemars(range(min = 100, max = 50000))]
    pub max_tokens: Option<u32>,
}

/// Which retrieval a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModeArg {
    Hybrid,
    Bm25,
    Vector,
}

/// How search results are widened with their context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExpandArg {
    None,
    Window,
    Merge,
}

/// Arguments of `show`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowArgs {
    /// A file, workspace-relative as search results give it, e.g. "ops/backup.md";
    /// "ops/backup.md:12" names a line too.
    pub path: String,
    /// A 1-based line of the file: only the passage that holds it (or, with `end_line`, the
    /// passages from it on). Default: every passage of the file, in order.
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// The last 1-based line to show: every passage that holds a line from `line` (default
    /// 1) to this one, in order. To read on where an answer stopped, as its note says.
    #[schemars(range(min = 1))]
    pub end_line: Option<u32>,
    /// Size limit of the answer in tokens (estimated), 100 to 50000. Default: 4000.
    #[schemars(range(min = 100, max = 50000))]
    pub max_tokens: Option<u32>,
}

/// Arguments of `similar`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarArgs {
    /// The file of the passage, workspace-relative as search results give it, e.g.
    /// "ops/backup.md"; "ops/backup.md:12" names a line too.
    pub path: String,
    /// Any 1-based line of the passage (a search result's `start_line` will do). Default: the
    /// file's first passage.
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// How many passages to return at most (1 to 100). Default: 10, or the number the
    /// workspace's settings give.
    #[schemars(range(min = 1, max = 100))]
    pub k: Option<u32>,
    /// Size limit of the answer in tokens (estimated), 100 to 50000. Default: 4000.
    #[schemars(range(min = 100, max = 50000))]
    pub max_tokens: Option<u32>,
}

/// Arguments of `status`: none.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {}

/// A passage of a file, as search and similar return it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Passage {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    /// The document's title.
    pub title: String,
    /// The headings above the passage, outermost first.
    pub heading_path: Vec<String>,
    /// Relevance, higher is better; comparable within one answer only.
    pub score: f64,
    /// The file's text at these lines.
    pub text: String,
    /// The passage goes on past `end_line`: it was cut to fit the token budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Lines of the best-matching part, when the passage was widened (`expand`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_match: Option<LineRange>,
    /// A sentence that situates the passage in its document, written by a language model
    /// when the workspace has those turned on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// The lines that show why the passage matched (one or two), the query's words in
    /// `**bold**`; long lines are cut around the first of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched_lines: Vec<MatchedLine>,
    /// The front matter fields of the passage's document (tags, category, aliases, dates…),
    /// each with its values: given with the document's first passage in an answer only, and
    /// without a `title` that says what `title` does.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Vec<String>>,
}

/// A line of a passage that matched the query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MatchedLine {
    /// 1-based line of the file.
    pub line: u32,
    pub text: String,
}

/// A range of 1-based lines, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LineRange {
    pub start_line: u32,
    pub end_line: u32,
}

/// What `search` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchResult {
    /// Best first.
    pub results: Vec<Passage>,
    /// Passages found but left out to stay within `max_tokens`.
    pub omitted: usize,
    /// What to know about the answer: a budget that cut it, an index that could not be
    /// brought up to date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What `similar` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SimilarResult {
    /// The passage the results are related to.
    pub of: PassageRef,
    /// Best first; the passage itself and its immediate neighbours are left out.
    pub results: Vec<Passage>,
    /// Passages found but left out to stay within `max_tokens`.
    pub omitted: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where a passage lies.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PassageRef {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub heading_path: Vec<String>,
}

/// What `show` answers: how a file, or the passage at a line, was indexed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ShowResult {
    pub path: String,
    pub title: String,
    /// Passages (chunks) the file was cut into.
    pub passages_in_file: usize,
    /// The file changed on disk since it was indexed (only when another process keeps the
    /// index and has not caught up yet).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changed_on_disk: bool,
    /// In file order.
    pub chunks: Vec<ShownChunk>,
    /// Chunks left out to stay within `max_tokens`.
    pub omitted: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One chunk of a file as it was indexed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ShownChunk {
    pub start_line: u32,
    pub end_line: u32,
    pub heading_path: Vec<String>,
    /// The header it was indexed with, e.g. "Document: Backup policy > Backups > Retention".
    pub context: String,
    /// The LLM-written sentence it was indexed with, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// Tokens of the whole chunk (cl100k).
    pub token_count: u32,
    pub text: String,
    /// The chunk goes on past `end_line`: it was cut to fit the token budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// What `status` answers: what the index holds and how fresh it is.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusResult {
    /// The workspace folder.
    pub workspace: String,
    /// This server keeps the index up to date; when false, another process (an editor, a
    /// second server) does, and this one reads its last commit.
    pub writer: bool,
    /// Nothing is stale or pending: every selected file is searchable as it is on disk.
    pub fresh: bool,
    pub files: usize,
    /// Passages (chunks) over all files.
    pub chunks: usize,
    /// Indexed files per top-level folder (`.` for files at the top); useful as `paths`.
    pub folders: Vec<FolderCount>,
    /// Unix seconds of the last commit that changed the index (0: never).
    pub last_commit: u64,
    /// Files whose index differs from the disk.
    pub stale: StaleFiles,
    /// Work the index has not done yet.
    pub pending: Pending,
    /// Files left out, with the reason.
    pub skipped: Vec<SkippedFile>,
    /// The embedding model, `provider/model`.
    pub model: String,
    pub index_dir: String,
    /// Settings problems (defaults used) and repairs made when the index was opened.
    pub problems: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How many indexed files a folder holds.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FolderCount {
    pub path: String,
    pub files: usize,
}

/// Files whose index differs from the disk (each list holds at most 25 paths).
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct StaleFiles {
    /// How many files differ, over all three lists.
    pub count: usize,
    /// Changed on disk since they were indexed.
    pub changed: Vec<String>,
    /// On disk and selected, not indexed yet.
    pub unindexed: Vec<String>,
    /// Indexed, gone from disk since.
    pub removed: Vec<String>,
}

/// Work the index has not done yet.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Pending {
    /// Passages without a vector yet: found by their words only until it comes.
    pub vectors: usize,
    /// Passages waiting for their LLM-written snippet, when snippets are on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippets: Option<usize>,
}

/// A file left out of the index.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

impl From<ModeArg> for SearchMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Hybrid => SearchMode::Hybrid,
            ModeArg::Bm25 => SearchMode::Bm25,
            ModeArg::Vector => SearchMode::Vector,
        }
    }
}

impl From<ExpandArg> for Expand {
    fn from(e: ExpandArg) -> Self {
        match e {
            ExpandArg::None => Expand::None,
            ExpandArg::Window => Expand::Window,
            ExpandArg::Merge => Expand::Merge,
        }
    }
}
