//! Snippet prompts for the `section` and `document` modes, and the cleaning of replies.

use crate::providers::chat::ChatRequest;

pub const PROMPT_VERSION: u32 = 1;
pub const DEFAULT_MAX_TOKENS: u32 = 150;
pub const DEFAULT_DOCUMENT_BUDGET: usize = 6000;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SnippetMode {
    #[default]
    Section,
    Document,
}

impl std::fmt::Display for SnippetMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SnippetMode::Section => "section",
            SnippetMode::Document => "document",
        })
    }
}

pub struct ChunkInput<'a> {
    pub path: &'a str,
    pub title: &'a str,
    pub heading_path: &'a [String],
    pub text: &'a str,
}

pub fn section_request(chunk: &ChunkInput, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        system: "Situate chunks.".into(),
        document: format!("{} {}", chunk.title, chunk.path),
        prompt: format!("{}\n\n{}", chunk.heading_path.join(" > "), chunk.text),
        max_tokens,
    }
}

pub fn document_request(chunks: &[ChunkInput], index: usize, _budget: usize, max_tokens: u32) -> ChatRequest {
    let doc: Vec<&str> = chunks.iter().map(|c| c.text).collect();
    ChatRequest {
        system: "Situate chunks.".into(),
        document: doc.join("\n\n"),
        prompt: chunks[index].text.to_string(),
        max_tokens,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("the model's reply was empty")]
    Empty,
}

pub fn clean_reply(raw: &str) -> Result<String, Rejected> {
    let t = raw.trim();
    if t.is_empty() { Err(Rejected::Empty) } else { Ok(t.to_string()) }
}
