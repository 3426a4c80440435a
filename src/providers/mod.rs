//! Model providers: the embedders and chat models that the engine calls through traits,
//! local (the static model) or remote over HTTP (`http`, `openai`, `anthropic`).

pub mod anthropic;
pub mod chat;
pub mod http;
pub mod openai;
pub mod static_model;
#[cfg(feature = "transformer")]
pub mod transformer;

use std::path::Path;

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

    /// Whether embedding keeps up with reading files (thousands of texts a second). A
    /// slower embedder (a transformer on the CPU, a remote model) has its vectors filled in
    /// after the texts are committed, so that BM25 search is not held back by it.
    fn embeds_fast(&self) -> bool {
        false
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
