//! LLM-written snippets that situate a chunk in its document (Contextual Retrieval):
//! prompts, the on-disk cache, cost estimates and the background generator.
//!
//! A snippet is keyed by a hash of everything that shapes it — provider, model, prompt
//! version and mode, the chunk's title and heading path, and its text — so that a chunk
//! seen before (after a reindex, a revert, a branch switch) takes its snippet from the
//! cache instead of the model.

pub mod cache;
pub mod estimate;
pub mod generator;
pub mod prompt;
pub mod reply;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::providers::anthropic::AnthropicChat;
use crate::providers::chat::{Chat, ChatRequest};
use crate::providers::http::{ApiKey, Auth, ErrorKind, HttpClient, HttpSettings, ProviderError, RetryPolicy};
use crate::providers::openai::OpenAiChat;
use prompt::{ChunkInput, PROMPT_VERSION, Prompts, SnippetMode};

/// Which chat API writes snippets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatProvider {
    /// Any server that speaks OpenAI's `/chat/completions` (OpenAI, Ollama, vLLM, LM Studio, …).
    OpenAi,
    /// Anthropic's Messages API, with the document marked for prompt caching.
    Anthropic,
}

impl fmt::Display for ChatProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChatProvider::OpenAi => "openai",
            ChatProvider::Anthropic => "anthropic",
        })
    }
}

/// The validated `[snippets]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnippetConfig {
    pub provider: ChatProvider,
    pub model: String,
    pub base_url: String,
    /// The environment variable that holds the API key; no key is sent when `None`.
    pub api_key_env: Option<String>,
    pub mode: SnippetMode,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Calls allowed per run (a CLI run, or a server's life until `situate.reindex`).
    pub max_calls: Option<u64>,
    /// Input plus output tokens allowed per run.
    pub max_run_tokens: Option<u64>,
    /// Upper bound on one reply's length.
    pub max_tokens: u32,
    /// Tokens of document text sent with each chunk in `document` mode; a longer document
    /// is sent as its outline plus a window around the chunk.
    pub document_budget: usize,
    pub timeout_secs: u64,
    pub max_retries: u32,
}

impl SnippetConfig {
    pub const DEFAULT_CONCURRENCY: usize = 4;
    pub const DEFAULT_MAX_CALLS: u64 = 5_000;
    pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
    pub const DEFAULT_MAX_RETRIES: u32 = 3;

    /// Settings for `model` of `provider` with every other value at its default.
    pub fn new(provider: ChatProvider, model: impl Into<String>) -> SnippetConfig {
        SnippetConfig {
            provider,
            model: model.into(),
            base_url: default_chat_url(provider).to_string(),
            api_key_env: None,
            mode: SnippetMode::Section,
            concurrency: Self::DEFAULT_CONCURRENCY,
            max_calls: Some(Self::DEFAULT_MAX_CALLS),
            max_run_tokens: None,
            max_tokens: prompt::DEFAULT_MAX_TOKENS,
            document_budget: prompt::DEFAULT_DOCUMENT_BUDGET,
            timeout_secs: Self::DEFAULT_TIMEOUT_SECS,
            max_retries: Self::DEFAULT_MAX_RETRIES,
        }
    }

    /// The HTTP timeouts and retry policy these settings ask for.
    pub fn http_settings(&self) -> HttpSettings {
        HttpSettings {
            timeout: std::time::Duration::from_secs(self.timeout_secs),
            retry: RetryPolicy { max_retries: self.max_retries, ..RetryPolicy::default() },
            ..HttpSettings::default()
        }
    }
}

/// The provider's own endpoint, used when `snippets.base_url` is not set.
fn default_chat_url(provider: ChatProvider) -> &'static str {
    match provider {
        ChatProvider::OpenAi => crate::providers::openai::DEFAULT_BASE_URL,
        ChatProvider::Anthropic => crate::providers::anthropic::DEFAULT_BASE_URL,
    }
}

/// The environment variable a provider's key is read from when `api_key_env` is not set
/// and the provider's own endpoint is used.
pub fn default_key_var(provider: ChatProvider) -> &'static str {
    match provider {
        ChatProvider::OpenAi => "OPENAI_API_KEY",
        ChatProvider::Anthropic => "ANTHROPIC_API_KEY",
    }
}

/// A snippet as stored with its chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snippet {
    /// The cleaned reply; empty when the model's reply was rejected (the chunk keeps its
    /// header context alone, and the model is not asked again for the same key).
    pub text: String,
    /// Which model wrote it (`provider/model@host`).
    pub model: String,
    /// Unix seconds when it was written.
    pub created_at: u64,
}

/// What a chunk has in the way of a snippet when it is written to the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnippetSlot {
    /// Snippets are off.
    Off,
    /// Wanted under this key, not generated yet.
    Missing { key: u128 },
    /// Generated (now or before) under this key.
    Ready { key: u128, snippet: Snippet },
}

impl SnippetSlot {
    /// The key the chunk's snippet is wanted under (0 when snippets are off).
    pub fn key(&self) -> u128 {
        match self {
            SnippetSlot::Off => 0,
            SnippetSlot::Missing { key } | SnippetSlot::Ready { key, .. } => *key,
        }
    }
}

/// The snippet settings in force and the model they name: builds prompts and keys.
#[derive(Clone)]
pub struct SnippetSetup {
    pub config: SnippetConfig,
    /// `provider/model@host`: recorded with every snippet.
    pub model_label: String,
    pub chat: Arc<dyn Chat>,
}

impl std::fmt::Debug for SnippetSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnippetSetup").field("model", &self.model_label).finish()
    }
}

impl SnippetSetup {
    /// Builds the chat client the settings name, reading the API key from the environment.
    /// Nothing is sent until the first snippet is asked for.
    pub fn from_config(config: &SnippetConfig) -> Result<SnippetSetup, ProviderError> {
        let key = match &config.api_key_env {
            Some(var) => Some(
                ApiKey::from_env(var).map_err(|kind| ProviderError::new(config.base_url.clone(), kind))?,
            ),
            None => None,
        };
        let settings = config.http_settings();
        let (chat, host): (Arc<dyn Chat>, String) = match config.provider {
            ChatProvider::OpenAi => {
                let auth = key.map_or(Auth::None, Auth::Bearer);
                let http = HttpClient::new(&config.base_url, auth, settings)?;
                let host = http.host();
                (Arc::new(OpenAiChat::new(http, config.model.clone())), host)
            }
            ChatProvider::Anthropic => {
                let key = key.ok_or_else(|| {
                    ProviderError::new(
                        config.base_url.clone(),
                        ErrorKind::MissingKey { var: "ANTHROPIC_API_KEY".to_string() },
                    )
                })?;
                let chat = AnthropicChat::new(&config.base_url, key, config.model.clone(), settings)?;
                let host = chat.host();
                (Arc::new(chat), host)
            }
        };
        Ok(SnippetSetup::with_chat(config.clone(), chat, &host))
    }

    /// Settings around an existing chat model (benchmarks, tests).
    pub fn with_chat(config: SnippetConfig, chat: Arc<dyn Chat>, host: &str) -> SnippetSetup {
        let model_label = format!("{}/{}@{host}", config.provider, config.model);
        SnippetSetup { config, model_label, chat }
    }

    /// The budget of one run.
    pub fn limits(&self) -> generator::Limits {
        generator::Limits { max_calls: self.config.max_calls, max_tokens: self.config.max_run_tokens }
    }

    /// The model and the prompt's wording: part of every snippet's key, and the name under
    /// which a team shares snippets.
    pub fn wording(&self) -> String {
        format!("{}:{}:p{PROMPT_VERSION}:{}", self.model_label, self.config.mode, self.config.max_tokens)
    }

    /// What a change of which makes every chunk's snippet be checked against its key: the
    /// wording, and the rule that asks for a snippet in its chunk's language (a chunk not in
    /// English has that language in its key; an English one's key stays as it was).
    pub fn identity(&self) -> String {
        format!("{}:l1", self.wording())
    }

    /// The cache key of a chunk's snippet under these settings.
    pub fn key(&self, chunk: &ChunkInput) -> u128 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for part in [self.wording().as_str(), chunk.title, &chunk.heading_path.join("\u{1f}"), chunk.text] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        if let Some(language) = prompt::snippet_language(chunk.text) {
            h.update(language.as_bytes());
            h.update(&[0]);
        }
        // 0 stands for "no snippet wanted".
        h.digest128().max(1)
    }

    /// The request for chunk `index` of a document (all its chunks, in order).
    pub fn request(&self, chunks: &[ChunkInput], index: usize) -> ChatRequest {
        self.prompts(chunks).request(index)
    }

    /// The requests of a document's chunks (all its chunks, in order, at least one), sharing
    /// what they share: for several chunks of one document, cheaper than [`Self::request`]
    /// for each.
    pub fn prompts<'a>(&self, chunks: &'a [ChunkInput<'a>]) -> Prompts<'a> {
        Prompts::new(self.config.mode, chunks, self.config.document_budget, self.config.max_tokens)
    }
}

/// Unix seconds now.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::chat::ChatReply;

    struct Silent;

    impl Chat for Silent {
        fn complete(&self, _: &ChatRequest) -> Result<ChatReply, ProviderError> {
            Err(ProviderError::new("host", ErrorKind::Unreachable("not asked in this test".into())))
        }
    }

    #[test]
    fn an_english_chunks_key_is_as_before_and_another_languages_names_it() {
        let setup =
            SnippetSetup::with_chat(SnippetConfig::new(ChatProvider::OpenAi, "m"), Arc::new(Silent), "host");
        let headings = vec!["Retention".to_string()];
        let chunk =
            |text| ChunkInput { path: "ops/backup.md", title: "Backups", heading_path: &headings, text };
        // The key of earlier versions: the model and the first wording, the title, the
        // headings and the text.
        let wording = format!("openai/m@host:{}:p1:{}", setup.config.mode, setup.config.max_tokens);
        let before = |text: &str| {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            for part in [wording.as_str(), "Backups", "Retention", text] {
                h.update(part.as_bytes());
                h.update(&[0]);
            }
            h.digest128().max(1)
        };
        let english = "Dumps are kept for thirty days, then deleted.";
        assert_eq!(setup.key(&chunk(english)), before(english));
        let chinese = "备份保留三十天，然后删除。";
        assert_ne!(setup.key(&chunk(chinese)), before(chinese));
        // A change of the identity makes an index check every chunk's key once.
        assert_ne!(setup.identity(), setup.wording());
    }
}
