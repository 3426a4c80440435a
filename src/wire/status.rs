//! The state of an index, as `situate status --json` prints it and `situate.status` sends it
//! under `index`.

use serde::Serialize;

use super::report::SkippedJson;
use crate::engine::{SnippetStatus, Status, TeamReport};
use crate::providers::EmbedderIdentity;
use crate::snippets::estimate::Estimate;

/// Files, chunks, model and health of an index.
#[derive(Debug, Clone, Serialize)]
pub struct StatusJson {
    pub workspace: String,
    pub index_dir: String,
    pub read_only: bool,
    pub other_writer: bool,
    pub files: usize,
    pub chunks: usize,
    pub vectors: usize,
    /// Chunks still waiting for a vector of the index's model (searched meanwhile through
    /// a vector of the built-in static model).
    pub vectors_pending: usize,
    /// Seconds until they are filled, at the rate last measured (absent when unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vectors_eta_secs: Option<u64>,
    pub embedder: EmbedderJson,
    pub last_commit: u64,
    pub generation: u64,
    pub disk_bytes: u64,
    pub skipped: Vec<SkippedJson>,
    /// Files that are not valid UTF-8, indexed with replacement characters.
    pub lossy: Vec<String>,
    pub config_problems: Vec<String>,
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippets: Option<SnippetStatusJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<TeamStatusJson>,
    /// How many chunks each language's rules analyse, most first (`en` takes every chunk no
    /// other language's rules do).
    pub languages: Vec<LanguageChunksJson>,
}

/// The chunks one language's rules analyse.
#[derive(Debug, Clone, Serialize)]
pub struct LanguageChunksJson {
    pub code: String,
    pub name: String,
    pub chunks: usize,
}

/// The team cache: its address (never its password), what this process saw of it, and
/// what it did for this index.
#[derive(Debug, Clone, Serialize)]
pub struct TeamStatusJson {
    pub target: String,
    /// `connected`, `not contacted yet`, `unreachable: …` (absent when this process did
    /// not use it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Why this machine only reads from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<String>,
    pub vectors_from_team: u64,
    pub vectors_computed: u64,
    pub snippets_from_team: u64,
    pub snippets_written: u64,
    /// Rows this process refused (failed validation).
    pub rejected: u64,
}

impl From<&TeamReport> for TeamStatusJson {
    fn from(t: &TeamReport) -> Self {
        TeamStatusJson {
            target: t.target.clone(),
            state: t.live.as_ref().map(|l| l.state.to_string()),
            read_only: t.live.as_ref().and_then(|l| l.read_only.clone()),
            vectors_from_team: t.tally.vectors_from_team,
            vectors_computed: t.tally.vectors_computed,
            snippets_from_team: t.tally.snippets_from_team,
            snippets_written: t.tally.snippets_written,
            rejected: t.live.as_ref().map_or(0, |l| l.rejected),
        }
    }
}

/// Which model made the vectors.
#[derive(Debug, Clone, Serialize)]
pub struct EmbedderJson {
    pub provider: String,
    pub model: String,
    pub dimensions: usize,
}

/// Snippets in an index: done, waiting, the budget, and what the rest would cost.
#[derive(Debug, Clone, Serialize)]
pub struct SnippetStatusJson {
    pub model: String,
    pub mode: String,
    pub done: usize,
    pub pending: usize,
    pub max_calls: Option<u64>,
    pub max_run_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<EstimateJson>,
}

/// What a run of snippet calls is expected to cost.
#[derive(Debug, Clone, Serialize)]
pub struct EstimateJson {
    pub calls: u64,
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
}

impl From<&Estimate> for EstimateJson {
    fn from(e: &Estimate) -> Self {
        EstimateJson {
            calls: e.calls,
            input_tokens: e.input_tokens,
            cached_input_tokens: e.cached_input_tokens,
            output_tokens: e.output_tokens,
        }
    }
}

impl From<&EmbedderIdentity> for EmbedderJson {
    fn from(e: &EmbedderIdentity) -> Self {
        EmbedderJson { provider: e.provider.clone(), model: e.model.clone(), dimensions: e.dimensions }
    }
}

impl From<&SnippetStatus> for SnippetStatusJson {
    fn from(s: &SnippetStatus) -> Self {
        SnippetStatusJson {
            model: s.model.clone(),
            mode: s.mode.clone(),
            done: s.done,
            pending: s.pending,
            max_calls: s.max_calls,
            max_run_tokens: s.max_run_tokens,
            estimate: s.estimate.as_ref().map(EstimateJson::from),
        }
    }
}

impl From<&Status> for StatusJson {
    fn from(s: &Status) -> Self {
        StatusJson {
            workspace: s.workspace.clone(),
            index_dir: s.index_dir.clone(),
            read_only: s.read_only,
            other_writer: s.other_writer,
            files: s.files,
            chunks: s.chunks,
            vectors: s.vectors,
            vectors_pending: s.vectors_pending,
            vectors_eta_secs: s.vectors_eta_secs,
            embedder: EmbedderJson::from(&s.embedder),
            last_commit: s.last_commit,
            generation: s.generation,
            disk_bytes: s.disk_bytes,
            skipped: s.skipped.iter().map(SkippedJson::from).collect(),
            lossy: s.lossy.clone(),
            config_problems: s.config_problems.clone(),
            notes: s.notes.clone(),
            snippets: s.snippets.as_ref().map(SnippetStatusJson::from),
            team: s.team.as_ref().map(TeamStatusJson::from),
            languages: s
                .languages
                .iter()
                .map(|l| LanguageChunksJson {
                    code: l.code.to_string(),
                    name: l.name.to_string(),
                    chunks: l.chunks,
                })
                .collect(),
        }
    }
}
