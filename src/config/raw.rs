//! The raw form of the settings: every key optional, and a value of the wrong type kept as
//! its error message ([`Setting::Invalid`]), so that one bad key never fails the whole file.
//! TOML (`situate.toml`) and JSON (editor settings) both read into it.

use std::path::PathBuf;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::chunk::ChunkStrategy;
use crate::search::{Expand, Fusion, SearchMode};
use crate::snippets::ChatProvider;
use crate::snippets::prompt::SnippetMode;

/// A value as written by the user: absent, well-typed, or of the wrong type (kept as the
/// error message so that the validator can name the key).
#[derive(Debug, Clone, Default)]
pub(super) enum Setting<T> {
    #[default]
    Unset,
    Set(T),
    Invalid(String),
}

impl<T> Setting<T> {
    pub(super) fn map<U>(self, f: impl FnOnce(T) -> U) -> Setting<U> {
        match self {
            Setting::Unset => Setting::Unset,
            Setting::Set(v) => Setting::Set(f(v)),
            Setting::Invalid(message) => Setting::Invalid(message),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Setting<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Buffer the value so that a type error stays local to this key instead of failing
        // the whole document.
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(match serde_json::from_value::<T>(value.clone()) {
            Ok(v) => Setting::Set(v),
            Err(e) => Setting::Invalid(format!("{e} (got {value})")),
        })
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RawConfig {
    pub(super) index_dir: Setting<PathBuf>,
    pub(super) extensions: Setting<Vec<String>>,
    pub(super) include: Setting<Vec<String>>,
    pub(super) exclude: Setting<Vec<String>>,
    pub(super) max_file_bytes: Setting<u64>,
    pub(super) follow_symlinks: Setting<bool>,
    pub(super) encoding: Setting<String>,
    pub(super) chunk: RawChunk,
    pub(super) context: RawContext,
    pub(super) search: RawSearch,
    pub(super) embedding: RawEmbedding,
    pub(super) snippets: Option<RawSnippets>,
    pub(super) team: Option<RawTeam>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RawChunk {
    pub(super) strategy: Setting<ChunkStrategy>,
    pub(super) max_tokens: Setting<usize>,
    pub(super) overlap_tokens: Setting<usize>,
    pub(super) semantic_threshold: Setting<f32>,
    pub(super) language: Setting<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RawContext {
    pub(super) header_template: Setting<String>,
    pub(super) header_fields: Setting<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RawSearch {
    pub(super) mode: Setting<SearchMode>,
    pub(super) limit: Setting<usize>,
    pub(super) candidates: Setting<usize>,
    pub(super) fusion: Setting<Fusion>,
    pub(super) rrf_k: Setting<f32>,
    pub(super) bm25_weight: Setting<f32>,
    pub(super) vector_weight: Setting<f32>,
    pub(super) title_boost: Setting<f32>,
    pub(super) headings_boost: Setting<f32>,
    pub(super) path_boost: Setting<f32>,
    pub(super) snippet_boost: Setting<f32>,
    pub(super) expand: Setting<Expand>,
    pub(super) window: Setting<usize>,
    pub(super) merge_share: Setting<f32>,
    pub(super) bm25_coverage: Setting<f32>,
    pub(super) min_score_share: Setting<f32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RawEmbedding {
    pub(super) provider: Setting<String>,
    pub(super) model_path: Setting<PathBuf>,
    pub(super) model: Setting<String>,
    pub(super) base_url: Setting<String>,
    pub(super) api_key_env: Setting<String>,
    pub(super) dimensions: Setting<usize>,
    pub(super) batch_size: Setting<usize>,
    pub(super) max_tokens: Setting<usize>,
    pub(super) timeout_secs: Setting<u64>,
    pub(super) max_retries: Setting<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RawSnippets {
    pub(super) enabled: Setting<bool>,
    pub(super) provider: Setting<ChatProvider>,
    pub(super) model: Setting<String>,
    pub(super) base_url: Setting<String>,
    pub(super) api_key_env: Setting<String>,
    pub(super) mode: Setting<SnippetMode>,
    pub(super) concurrency: Setting<usize>,
    pub(super) max_calls: Setting<u64>,
    pub(super) max_run_tokens: Setting<u64>,
    pub(super) max_tokens: Setting<u32>,
    pub(super) document_budget: Setting<usize>,
    pub(super) timeout_secs: Setting<u64>,
    pub(super) max_retries: Setting<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RawTeam {
    pub(super) enabled: Setting<bool>,
    pub(super) url: Setting<String>,
    pub(super) push: Setting<bool>,
    pub(super) lease_secs: Setting<u64>,
    pub(super) timeout_secs: Setting<u64>,
}
