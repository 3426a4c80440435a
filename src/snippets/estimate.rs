//! Token and call estimates of a snippet run, counted with tiktoken before any call.

use crate::providers::chat::ChatRequest;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Estimate {
    pub calls: u64,
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
}

pub fn estimate<'a>(requests: impl IntoIterator<Item = &'a ChatRequest>) -> Estimate {
    let mut e = Estimate::default();
    for r in requests {
        e.calls += 1;
        e.input_tokens += crate::chunk::tokens::count(&r.prompt) as u64;
    }
    e
}

impl std::fmt::Display for Estimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} calls", self.calls)
    }
}
