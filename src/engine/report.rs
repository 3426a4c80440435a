//! What the engine reports: reconcile progress and reports, index status, snippet runs.

use crate::index::ApplyStats;
use crate::providers::EmbedderIdentity;
use crate::snippets::estimate::Estimate;
use crate::snippets::generator::{Outcome, RunEnd, Totals};
use crate::team::TeamStatus;
use crate::team::tally::Tally;
use crate::workspace::Skipped;

/// How far a reconcile has come.
#[derive(Debug, Clone)]
pub enum Progress {
    /// The walk found this many files to look at.
    Scanned { files: usize },
    /// Files read and indexed so far out of those that changed.
    Indexing { done: usize, total: usize },
    /// Vectors filled in so far, after the texts were committed (a slow embedder); of
    /// them, `from_team` were taken from the team cache.
    Embedding { done: usize, total: usize, from_team: usize },
}

/// What a reconcile did.
#[derive(Debug, Clone, Default)]
pub struct ReconcileReport {
    /// Files the walk selected.
    pub files_seen: usize,
    pub files_unchanged: usize,
    /// New or changed files re-chunked.
    pub files_indexed: usize,
    /// Files whose mtime changed but whose contents did not.
    pub files_touched: usize,
    pub files_removed: usize,
    pub chunks_written: usize,
    pub vectors_embedded: usize,
    pub vectors_reused: usize,
    /// Vectors re-embedded from stored texts (after a model change or a repair).
    pub vectors_refilled: usize,
    /// Vectors taken from the team cache instead of computed.
    pub vectors_from_team: usize,
    pub skipped: Vec<Skipped>,
    /// Files decoded with replacement characters.
    pub lossy: Vec<String>,
    /// What chunking noticed in the files it read (broken front matter, a block split
    /// hard), as `path: line N: …`; the files are indexed all the same.
    pub warnings: Vec<String>,
    /// The run was interrupted; what it did is committed, the rest is left for the next.
    pub interrupted: bool,
    pub seconds: f64,
}

impl ReconcileReport {
    pub(super) fn add(&mut self, stats: ApplyStats) {
        self.chunks_written += stats.chunks_written;
        self.vectors_embedded += stats.vectors_embedded;
        self.vectors_reused += stats.vectors_reused;
    }
}

/// The state of an index, for `status`.
#[derive(Debug, Clone)]
pub struct Status {
    pub workspace: String,
    pub index_dir: String,
    /// This engine cannot write the index.
    pub read_only: bool,
    /// Another process is writing the index.
    pub other_writer: bool,
    pub files: usize,
    pub chunks: usize,
    pub vectors: usize,
    /// Chunks still waiting for a vector of the index's model (a slow one fills them in
    /// after their texts are committed); quick vectors stand in for them meanwhile.
    pub vectors_pending: usize,
    /// Seconds until the pending vectors are filled, at the rate last measured.
    pub vectors_eta_secs: Option<u64>,
    pub embedder: EmbedderIdentity,
    /// Unix seconds of the last commit (0: never).
    pub last_commit: u64,
    /// Commits so far (each save or batch of changes makes one).
    pub generation: u64,
    pub disk_bytes: u64,
    pub skipped: Vec<Skipped>,
    /// Files that are not valid UTF-8, indexed with replacement characters.
    pub lossy: Vec<String>,
    pub config_problems: Vec<String>,
    /// Why parts of the index were rebuilt when it was opened.
    pub notes: Vec<String>,
    /// LLM-written snippets, when they are on.
    pub snippets: Option<SnippetStatus>,
    /// The team cache, when the settings name one.
    pub team: Option<TeamReport>,
    /// How many chunks each language's rules analyse, most first: English's take every chunk
    /// that no other language's do (CJK text, code, short chunks among them).
    pub languages: Vec<LanguageChunks>,
}

/// The chunks that one language's rules analyse, for `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguageChunks {
    /// The two-letter code: `de`.
    pub code: &'static str,
    /// The English name, in lower case: `german`.
    pub name: &'static str,
    pub chunks: usize,
}

/// The team cache, for `status`.
#[derive(Debug, Clone)]
pub struct TeamReport {
    /// The address, without its password.
    pub target: String,
    /// What this process saw of it (a writer that used it).
    pub live: Option<TeamStatus>,
    /// What it did for this index so far.
    pub tally: Tally,
}

/// Files whose index differs from the disk, by size and modification time: what the next
/// reconcile would read again, add or remove. Paths are workspace-relative and sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stale {
    /// Indexed, and changed on disk since.
    pub changed: Vec<String>,
    /// Selected by the settings and on disk, never indexed (files left out for a reason, such
    /// as their size, are not counted: they are listed as skipped).
    pub unindexed: Vec<String>,
    /// Indexed, and gone from disk (or no longer selected) since.
    pub removed: Vec<String>,
}

impl Stale {
    /// Nothing differs.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.unindexed.is_empty() && self.removed.is_empty()
    }
}

/// Snippets in an index, for `status`.
#[derive(Debug, Clone)]
pub struct SnippetStatus {
    /// `provider/model@host`.
    pub model: String,
    pub mode: String,
    /// Chunks indexed with their snippet.
    pub done: usize,
    /// Chunks indexed with their header context alone, waiting for a snippet.
    pub pending: usize,
    pub max_calls: Option<u64>,
    pub max_run_tokens: Option<u64>,
    /// What writing the pending snippets would cost; filled by callers that ask for it
    /// ([`View::snippet_estimate`] counts tokens of every pending request).
    pub estimate: Option<Estimate>,
}

/// How far a snippet run has come.
#[derive(Debug, Clone, Copy, Default)]
pub struct SnippetProgress {
    /// Jobs answered (or failed) so far, of `total`.
    pub done: usize,
    pub total: usize,
    pub totals: Totals,
}

impl SnippetProgress {
    /// Counts one job's outcome: its calls and tokens, and, unless it never ran, one more done.
    pub fn record(&mut self, outcome: &Outcome) {
        self.totals.count(outcome);
        if !matches!(outcome, Outcome::NotRun { .. }) {
            self.done += 1;
        }
    }
}

/// What [`Engine::write_snippets`] did.
#[derive(Debug, Clone)]
pub struct SnippetRun {
    /// Calls and tokens, those spent before the run included.
    pub totals: Totals,
    pub end: RunEnd,
    /// Chunks re-indexed with their snippet.
    pub indexed: usize,
    /// Chunks still waiting (failed, over budget, or interrupted).
    pub waiting: usize,
}

/// What [`Engine::apply_snippets`] did.
#[derive(Debug, Clone, Copy, Default)]
pub struct SnippetsApplied {
    /// Chunks re-indexed with their new snippet.
    pub indexed: usize,
    /// Chunks whose call failed or did not run: they wait for the next run.
    pub returned: usize,
}
