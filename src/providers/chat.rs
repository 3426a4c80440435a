//! The chat seam: one request (system text, a cacheable document, a prompt) in, the model's
//! text and its token usage out. Snippet generation calls it; tests call real local
//! servers through it.

use super::http::ProviderError;

/// One completion request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatRequest {
    /// Instructions that hold for every request.
    pub system: String,
    /// The document the prompt is about. It is sent before the prompt and marked for the
    /// provider's prompt cache, so that requests about one document reuse it.
    pub document: String,
    /// What is asked of this document.
    pub prompt: String,
    /// An upper bound on the answer's length.
    pub max_tokens: u32,
}

/// Tokens a request used, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// All input tokens, those read from or written to the prompt cache included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens served from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic reports them; OpenAI does not).
    pub cache_write_tokens: u64,
}

/// A completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatReply {
    pub text: String,
    pub usage: Usage,
    /// The model stopped because it reached `max_tokens`, not because it was done.
    pub cut_off: bool,
}

/// A chat model. Blocking, like [`super::Embedder`]: call it from a plain thread or through
/// `spawn_blocking`.
pub trait Chat: Send + Sync {
    fn complete(&self, request: &ChatRequest) -> Result<ChatReply, ProviderError>;
}
