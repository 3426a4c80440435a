//! What an index run did, as `situate index --json` prints it and `situate.reindex` answers.

use serde::Serialize;

use crate::engine::{ReconcileReport, SnippetRun};
use crate::snippets::generator::{RunEnd, Totals};
use crate::workspace::{SkipReason, Skipped};

/// A reconcile's report.
#[derive(Debug, Clone, Serialize)]
pub struct ReportJson {
    pub files_seen: usize,
    pub files_unchanged: usize,
    pub files_indexed: usize,
    pub files_touched: usize,
    pub files_removed: usize,
    pub chunks_written: usize,
    pub vectors_embedded: usize,
    pub vectors_reused: usize,
    pub vectors_refilled: usize,
    /// Vectors taken from the team cache instead of computed here.
    pub vectors_from_team: usize,
    pub skipped: Vec<SkippedJson>,
    pub lossy: Vec<String>,
    /// `path: line N: …` for what chunking noticed (broken front matter, …).
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    pub seconds: f64,
}

/// A file left out, and why (`reason`, with the reason's own fields beside it).
#[derive(Debug, Clone, Serialize)]
pub struct SkippedJson {
    pub path: String,
    #[serde(flatten)]
    pub reason: SkipReasonJson,
}

/// Why a file was left out.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReasonJson {
    TooLarge {
        size: u64,
        limit: u64,
    },
    Binary,
    Unreadable {
        error: String,
    },
    /// A followed symbolic link whose target does not exist.
    DanglingLink {
        target: String,
    },
    /// A link back into a folder above it (`.`: the workspace's top).
    LinkLoop {
        ancestor: String,
    },
    /// A linked folder walked already, whose files are indexed under `indexed_as`.
    AlreadyIndexed {
        indexed_as: String,
    },
}

/// `situate index --json`: the report, and the snippet run when there was one.
#[derive(Debug, Clone, Serialize)]
pub struct IndexSummaryJson {
    #[serde(flatten)]
    pub report: ReportJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippets: Option<SnippetRunJson>,
}

/// What `situate index --snippets` did.
#[derive(Debug, Clone, Serialize)]
pub struct SnippetRunJson {
    pub totals: TotalsJson,
    pub end: RunEndJson,
    pub indexed: usize,
    pub waiting: usize,
}

/// Why a snippet run ended (`kind`, and the last error of a failing model).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunEndJson {
    Finished,
    BudgetReached,
    Failing { error: String },
    Interrupted,
}

/// Calls and tokens spent.
#[derive(Debug, Clone, Serialize)]
pub struct TotalsJson {
    pub calls: u64,
    pub failed: u64,
    pub rejected: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl From<&Totals> for TotalsJson {
    fn from(t: &Totals) -> Self {
        TotalsJson {
            calls: t.calls,
            failed: t.failed,
            rejected: t.rejected,
            input_tokens: t.input_tokens,
            output_tokens: t.output_tokens,
            cache_read_tokens: t.cache_read_tokens,
            cache_write_tokens: t.cache_write_tokens,
        }
    }
}

impl From<&Skipped> for SkippedJson {
    fn from(s: &Skipped) -> Self {
        let reason = match &s.reason {
            SkipReason::TooLarge { size, limit } => SkipReasonJson::TooLarge { size: *size, limit: *limit },
            SkipReason::Binary => SkipReasonJson::Binary,
            SkipReason::Unreadable { error } => SkipReasonJson::Unreadable { error: error.clone() },
            SkipReason::DanglingLink { target } => SkipReasonJson::DanglingLink { target: target.clone() },
            SkipReason::LinkLoop { ancestor } => SkipReasonJson::LinkLoop { ancestor: ancestor.clone() },
            SkipReason::AlreadyIndexed { indexed_as } => {
                SkipReasonJson::AlreadyIndexed { indexed_as: indexed_as.clone() }
            }
        };
        SkippedJson { path: s.path.clone(), reason }
    }
}

impl From<&ReconcileReport> for ReportJson {
    fn from(r: &ReconcileReport) -> Self {
        ReportJson {
            files_seen: r.files_seen,
            files_unchanged: r.files_unchanged,
            files_indexed: r.files_indexed,
            files_touched: r.files_touched,
            files_removed: r.files_removed,
            chunks_written: r.chunks_written,
            vectors_embedded: r.vectors_embedded,
            vectors_reused: r.vectors_reused,
            vectors_refilled: r.vectors_refilled,
            vectors_from_team: r.vectors_from_team,
            skipped: r.skipped.iter().map(SkippedJson::from).collect(),
            lossy: r.lossy.clone(),
            warnings: r.warnings.clone(),
            interrupted: r.interrupted,
            seconds: r.seconds,
        }
    }
}

impl From<&RunEnd> for RunEndJson {
    fn from(e: &RunEnd) -> Self {
        match e {
            RunEnd::Finished => RunEndJson::Finished,
            RunEnd::BudgetReached => RunEndJson::BudgetReached,
            RunEnd::Failing { error } => RunEndJson::Failing { error: error.clone() },
            RunEnd::Interrupted => RunEndJson::Interrupted,
        }
    }
}

impl From<&SnippetRun> for SnippetRunJson {
    fn from(r: &SnippetRun) -> Self {
        SnippetRunJson {
            totals: TotalsJson::from(&r.totals),
            end: RunEndJson::from(&r.end),
            indexed: r.indexed,
            waiting: r.waiting,
        }
    }
}
