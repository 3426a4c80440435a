//! Anthropic's Messages API (`POST {base_url}/v1/messages`) as a [`Chat`] provider, with the
//! document marked for prompt caching.

use serde::Deserialize;
use serde_json::json;

use super::chat::{Chat, ChatReply, ChatRequest, Usage};
use super::http::{ApiKey, Auth, ErrorKind, HttpClient, HttpSettings, ProviderError};

/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// A Claude model behind the Messages API.
#[derive(Debug)]
pub struct AnthropicChat {
    http: HttpClient,
    model: String,
}

#[derive(Deserialize)]
struct MessagesResponse {
    content: Vec<ContentBlock>,
    #[serde(default)]
    usage: Option<MessagesUsage>,
    /// `max_tokens` when the reply reached the limit.
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct MessagesUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl AnthropicChat {
    /// A client for `model` at `base_url`, sending `key` as `x-api-key`.
    pub fn new(
        base_url: &str,
        key: ApiKey,
        model: impl Into<String>,
        settings: HttpSettings,
    ) -> Result<AnthropicChat, ProviderError> {
        let http = HttpClient::new(base_url, Auth::Header("x-api-key", key), settings)?
            .with_header("anthropic-version", API_VERSION);
        Ok(AnthropicChat { http, model: model.into() })
    }

    /// The server's host (and port), to name the model by.
    pub fn host(&self) -> String {
        self.http.host()
    }
}

impl Chat for AnthropicChat {
    fn complete(&self, request: &ChatRequest) -> Result<ChatReply, ProviderError> {
        let body = json!({
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": request.system,
            "messages": [{
                "role": "user",
                "content": [
                    // The cache breakpoint sits after the document: everything up to it (the
                    // system text and the document) is reused by the next prompt about it.
                    { "type": "text", "text": request.document, "cache_control": { "type": "ephemeral" } },
                    { "type": "text", "text": request.prompt },
                ],
            }],
        });
        let response: MessagesResponse = self.http.post_json("v1/messages", &body)?;
        messages_reply(response).ok_or_else(|| ProviderError {
            endpoint: self.http.endpoint_name("v1/messages"),
            kind: ErrorKind::Malformed("no text block in the answer".to_string()),
            attempts: 1,
        })
    }
}

/// The reply in an answer; `None` when it holds no text block.
fn messages_reply(response: MessagesResponse) -> Option<ChatReply> {
    if !response.content.iter().any(|b| b.kind == "text") {
        return None;
    }
    let text: String = response
        .content
        .iter()
        .filter(|b| b.kind == "text")
        .filter_map(|b| b.text.as_deref())
        .collect::<Vec<_>>()
        .join("");
    let usage = response.usage.map_or_else(Usage::default, |u| {
        let read = u.cache_read_input_tokens.unwrap_or(0);
        let written = u.cache_creation_input_tokens.unwrap_or(0);
        // Anthropic counts cached tokens apart from `input_tokens`.
        Usage {
            input_tokens: u.input_tokens + read + written,
            output_tokens: u.output_tokens,
            cache_read_tokens: read,
            cache_write_tokens: written,
        }
    });
    Some(ChatReply { text, usage, cut_off: response.stop_reason.as_deref() == Some("max_tokens") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(answer: serde_json::Value) -> Option<ChatReply> {
        messages_reply(serde_json::from_value(answer).unwrap())
    }

    #[test]
    fn a_reply_says_whether_it_reached_max_tokens_and_counts_cached_tokens_in() {
        let answer = |stop: &str| {
            json!({
                "content": [{ "type": "thinking", "thinking": "…" }, { "type": "text", "text": "Part." }],
                "stop_reason": stop,
                "usage": { "input_tokens": 20, "output_tokens": 150,
                           "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0 },
            })
        };
        let cut = reply(answer("max_tokens")).unwrap();
        assert_eq!((cut.text.as_str(), cut.cut_off), ("Part.", true));
        assert_eq!((cut.usage.input_tokens, cut.usage.cache_read_tokens), (1020, 1000));
        assert!(!reply(answer("end_turn")).unwrap().cut_off);
        assert_eq!(reply(json!({ "content": [{ "type": "thinking", "thinking": "…" }] })), None);
    }
}
