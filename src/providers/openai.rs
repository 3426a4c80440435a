//! OpenAI-compatible providers: embeddings (`POST {base_url}/embeddings`) and chat
//! (`POST {base_url}/chat/completions`), as spoken by OpenAI, Ollama, LM Studio, vLLM,
//! llama.cpp's server and TEI.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::chat::{Chat, ChatReply, ChatRequest, Usage};
use super::http::{ApiKey, Auth, ErrorKind, HttpClient, HttpSettings, ProviderError, RetryPolicy};
use super::{EmbedError, Embedder, EmbedderIdentity};

/// The value of [`EmbedderIdentity::provider`] for OpenAI-compatible servers.
pub const PROVIDER: &str = "openai";

/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The validated `[embedding]` settings of `provider = "openai"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiEmbeddingConfig {
    pub model: String,
    pub base_url: String,
    /// The environment variable that holds the API key; no key is sent when `None`.
    pub api_key_env: Option<String>,
    /// The vector length; sent with each request (OpenAI's `text-embedding-3` models shorten
    /// their vectors to it). When `None`, one probe request finds it.
    pub dimensions: Option<usize>,
    /// Texts per request.
    pub batch_size: usize,
    pub timeout_secs: u64,
    pub max_retries: u32,
}

impl OpenAiEmbeddingConfig {
    pub const DEFAULT_BATCH_SIZE: usize = 64;
    pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
    pub const DEFAULT_MAX_RETRIES: u32 = 3;

    /// Settings for `model` with every other value at its default.
    pub fn new(model: impl Into<String>) -> OpenAiEmbeddingConfig {
        OpenAiEmbeddingConfig {
            model: model.into(),
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key_env: None,
            dimensions: None,
            batch_size: Self::DEFAULT_BATCH_SIZE,
            timeout_secs: Self::DEFAULT_TIMEOUT_SECS,
            max_retries: Self::DEFAULT_MAX_RETRIES,
        }
    }

    /// The HTTP timeouts and retry policy these settings ask for.
    pub fn http_settings(&self) -> HttpSettings {
        HttpSettings {
            timeout: Duration::from_secs(self.timeout_secs),
            retry: RetryPolicy { max_retries: self.max_retries, ..RetryPolicy::default() },
            ..HttpSettings::default()
        }
    }
}

/// An embedder behind an OpenAI-compatible `/embeddings` endpoint.
///
/// Texts go out in batches of `batch_size`; the answer's vectors are put back in input order
/// by their `index`, checked for length, and L2-normalised (not every server normalises).
/// A text that is empty or only whitespace is not sent — several servers refuse them — and
/// gets the last axis as its vector, as with the static model.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    http: HttpClient,
    model: String,
    /// Sent as `dimensions` when the user set it.
    requested_dimensions: Option<usize>,
    batch_size: usize,
    identity: EmbedderIdentity,
}

#[derive(Deserialize)]
struct EmbeddingResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// Builds the embedder the configuration describes, reading the API key from the
    /// environment. Without `dimensions` it asks the server once, so a server that cannot
    /// be reached is an error here rather than in the middle of indexing.
    pub fn from_config(config: &OpenAiEmbeddingConfig) -> Result<OpenAiEmbedder, ProviderError> {
        let auth = match &config.api_key_env {
            Some(var) => Auth::Bearer(
                ApiKey::from_env(var).map_err(|kind| ProviderError::new(config.base_url.clone(), kind))?,
            ),
            None => Auth::None,
        };
        let http = HttpClient::new(&config.base_url, auth, config.http_settings())?;
        OpenAiEmbedder::connect(http, &config.model, config.dimensions, config.batch_size)
    }

    /// An embedder for `model` over an existing client. `dimensions` as in
    /// [`OpenAiEmbeddingConfig::dimensions`].
    pub fn connect(
        http: HttpClient,
        model: &str,
        dimensions: Option<usize>,
        batch_size: usize,
    ) -> Result<OpenAiEmbedder, ProviderError> {
        let mut embedder = OpenAiEmbedder {
            identity: EmbedderIdentity {
                provider: PROVIDER.to_string(),
                // The host is part of the name: two servers may serve different models
                // under one name.
                model: format!("{model}@{}", http.host()),
                dimensions: dimensions.unwrap_or(0),
            },
            http,
            model: model.to_string(),
            requested_dimensions: dimensions,
            batch_size: batch_size.max(1),
        };
        if dimensions.is_none() {
            let probe = embedder.request(&["dimension probe"])?;
            embedder.identity.dimensions = probe.first().map_or(0, Vec::len);
            tracing::info!(model = %embedder.identity.model, dimensions = embedder.identity.dimensions, "embedding server answered");
        }
        Ok(embedder)
    }

    /// The endpoint, for messages.
    pub fn endpoint(&self) -> String {
        self.http.endpoint_name("embeddings")
    }

    /// Embeds texts in batches; errors are typed.
    pub fn embed_texts(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        let to_send: Vec<usize> = (0..texts.len()).filter(|&i| !texts[i].trim().is_empty()).collect();
        for batch in to_send.chunks(self.batch_size) {
            let batch_texts: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            for (&i, v) in batch.iter().zip(self.request(&batch_texts)?) {
                vectors[i] = Some(v);
            }
        }
        Ok(vectors.into_iter().map(|v| v.unwrap_or_else(|| self.fallback_vector())).collect())
    }

    /// One request for one batch: vectors in input order, normalised and checked.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let mut body = json!({ "model": self.model, "input": texts });
        if let Some(d) = self.requested_dimensions {
            body["dimensions"] = json!(d);
        }
        let response: EmbeddingResponse = self.http.post_json("embeddings", &body)?;
        let fail = |kind| ProviderError { endpoint: self.endpoint(), kind, attempts: 1 };
        if response.data.len() != texts.len() {
            return Err(fail(ErrorKind::Malformed(format!(
                "{} vectors for {} texts",
                response.data.len(),
                texts.len()
            ))));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in response.data {
            match slots.get_mut(item.index) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => return Err(fail(ErrorKind::Malformed(format!("bad or repeated index {}", item.index)))),
            }
        }
        // Every slot is filled: as many items as texts, each index in range and distinct.
        let mut vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
        let expected = match self.identity.dimensions {
            0 => vectors.first().map_or(0, Vec::len),
            d => d,
        };
        for v in &mut vectors {
            if v.len() != expected || expected == 0 {
                return Err(fail(ErrorKind::WrongDimensions { expected, got: v.len() }));
            }
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            if !norm.is_finite() || norm == 0.0 {
                return Err(fail(ErrorKind::Malformed("a zero or non-finite vector".to_string())));
            }
            v.iter_mut().for_each(|x| *x /= norm);
        }
        Ok(vectors)
    }

    fn fallback_vector(&self) -> Vec<f32> {
        let mut v = vec![0.0; self.identity.dimensions];
        if let Some(last) = v.last_mut() {
            *last = 1.0;
        }
        v
    }
}

impl Embedder for OpenAiEmbedder {
    fn identity(&self) -> EmbedderIdentity {
        self.identity.clone()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(self.embed_texts(texts)?)
    }
}

/// A chat model behind an OpenAI-compatible `/chat/completions` endpoint.
///
/// The document goes first in the user message and the prompt after it, so that requests
/// about one document share a prefix: OpenAI caches such prefixes by itself.
#[derive(Debug)]
pub struct OpenAiChat {
    http: HttpClient,
    model: String,
}

#[derive(Deserialize)]
struct CompletionResponse {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<CompletionUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    /// `length` when the reply reached `max_tokens`.
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct CompletionUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl OpenAiChat {
    /// A chat client for `model`; the client carries the base URL and the key.
    pub fn new(http: HttpClient, model: impl Into<String>) -> OpenAiChat {
        OpenAiChat { http, model: model.into() }
    }
}

/// OpenAI's own endpoint, which names the reply's limit `max_completion_tokens` and refuses
/// `max_tokens` for its reasoning models (o-series, GPT-5); the servers that copy its API
/// know `max_tokens`, and not all of them the newer name.
const OPENAI_HOST: &str = "api.openai.com";

impl OpenAiChat {
    /// The request's JSON body.
    fn body(&self, request: &ChatRequest) -> serde_json::Value {
        let limit = if self.http.host() == OPENAI_HOST { "max_completion_tokens" } else { "max_tokens" };
        json!({
            "model": self.model,
            limit: request.max_tokens,
            "messages": [
                { "role": "system", "content": request.system },
                { "role": "user", "content": format!("{}\n\n{}", request.document, request.prompt) },
            ],
        })
    }
}

impl Chat for OpenAiChat {
    fn complete(&self, request: &ChatRequest) -> Result<ChatReply, ProviderError> {
        let body = self.body(request);
        let response: CompletionResponse = self.http.post_json("chat/completions", &body)?;
        completion_reply(response).ok_or_else(|| ProviderError {
            endpoint: self.http.endpoint_name("chat/completions"),
            kind: ErrorKind::Malformed("no message in the answer".to_string()),
            attempts: 1,
        })
    }
}

/// The reply in an answer; `None` when it holds no message.
fn completion_reply(response: CompletionResponse) -> Option<ChatReply> {
    let choice = response.choices.into_iter().next()?;
    let text = choice.message.content?;
    // OpenAI counts cached tokens within `prompt_tokens`.
    let usage = response.usage.map_or_else(Usage::default, |u| Usage {
        input_tokens: u.prompt_tokens,
        output_tokens: u.completion_tokens,
        cache_read_tokens: u.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
        cache_write_tokens: 0,
    });
    Some(ChatReply { text, usage, cut_off: choice.finish_reason.as_deref() == Some("length") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(answer: serde_json::Value) -> Option<ChatReply> {
        completion_reply(serde_json::from_value(answer).unwrap())
    }

    #[test]
    fn openai_itself_is_sent_max_completion_tokens_and_other_servers_max_tokens() {
        let request = ChatRequest {
            system: "s".to_string(),
            document: "d".to_string(),
            prompt: "p".to_string(),
            max_tokens: 150,
        };
        let chat = |url: &str| {
            OpenAiChat::new(HttpClient::new(url, Auth::None, HttpSettings::default()).unwrap(), "m")
        };
        let openai = chat(DEFAULT_BASE_URL).body(&request);
        assert_eq!((openai["max_completion_tokens"].as_u64(), openai.get("max_tokens")), (Some(150), None));
        let local = chat("http://localhost:11434/v1").body(&request);
        assert_eq!((local["max_tokens"].as_u64(), local.get("max_completion_tokens")), (Some(150), None));
        assert_eq!(local["messages"][1]["content"], "d\n\np");
    }

    #[test]
    fn a_completion_says_whether_it_reached_max_tokens() {
        let answer = |finish: &str| {
            json!({
                "choices": [{ "message": { "content": "" }, "finish_reason": finish }],
                "usage": { "prompt_tokens": 90, "completion_tokens": 150,
                           "prompt_tokens_details": { "cached_tokens": 64 } },
            })
        };
        let cut = reply(answer("length")).unwrap();
        assert!(cut.cut_off);
        assert_eq!(
            (cut.usage.input_tokens, cut.usage.cache_read_tokens, cut.usage.output_tokens),
            (90, 64, 150)
        );
        assert!(!reply(answer("stop")).unwrap().cut_off);
        // Servers that leave out the reason or the usage.
        let bare = reply(json!({ "choices": [{ "message": { "content": "Hi." } }] })).unwrap();
        assert_eq!((bare.text.as_str(), bare.cut_off, bare.usage), ("Hi.", false, Usage::default()));
        assert_eq!(reply(json!({ "choices": [] })), None);
        assert_eq!(reply(json!({ "choices": [{ "message": { "content": null } }] })), None);
    }
}
