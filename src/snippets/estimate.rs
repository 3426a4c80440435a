//! Token and call estimates of a snippet run, counted with tiktoken before any call.

/// cl100k token count of `text`: OpenAI's count, and close to Anthropic's. Callers hand it
/// bounded pieces (one chunk, one outline line, a request built within its budget); tiktoken
/// only gets slow on long runs without whitespace, which whole files have and chunks do not.
pub(crate) fn count_tokens(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
}
