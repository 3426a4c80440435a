//! LLM-written snippets that situate a chunk in its document (Contextual Retrieval):
//! prompts, the on-disk cache, cost estimates and the background generator.

pub mod estimate;
pub mod prompt;
