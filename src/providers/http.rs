//! The one HTTP layer of the remote providers: a shared client with timeouts, a typed retry
//! policy, typed errors, and API keys that never leave the request headers.
//!
//! The engine's traits are synchronous and are called from plain threads, rayon workers and
//! tokio `spawn_blocking` threads. Requests therefore run on a small tokio runtime of their
//! own, shared by the whole process, and the calling thread waits on a channel for the
//! answer. That works the same from any thread, never nests one runtime in another, and
//! never drops a runtime inside an async context (the traps of `reqwest::blocking`).

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{StatusCode, Url};
use serde::de::DeserializeOwned;
use tracing::instrument::WithSubscriber;

/// A secret read from the environment. Its `Debug` output is redacted, it has no `Display`
/// and no `Serialize`, so it cannot reach a log line, an error message or a file by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key given directly (tests, or a caller that read it elsewhere).
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key held by environment variable `var`; `MissingKey` when it is unset or empty.
    pub fn from_env(var: &str) -> Result<ApiKey, ErrorKind> {
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(ApiKey(key.trim().to_string())),
            _ => Err(ErrorKind::MissingKey { var: var.to_string() }),
        }
    }

    /// The key for a request header; the only way to read it.
    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// How the API key is sent.
#[derive(Debug, Clone)]
pub enum Auth {
    None,
    /// `Authorization: Bearer <key>` (OpenAI and compatible servers).
    Bearer(ApiKey),
    /// The key as the value of a named header (`x-api-key` for Anthropic).
    Header(&'static str, ApiKey),
}

impl Auth {
    fn key(&self) -> Option<&ApiKey> {
        match self {
            Auth::None => None,
            Auth::Bearer(key) | Auth::Header(_, key) => Some(key),
        }
    }
}

/// What went wrong with a provider request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ErrorKind {
    /// No connection could be made, or it broke before an answer came.
    #[error("cannot reach the server: {0}")]
    Unreachable(String),
    /// The server answered, but the answer's body broke off before its end (a proxy or
    /// server that dropped the connection mid-answer).
    #[error("the answer was cut short: {0}")]
    CutShort(String),
    /// No complete answer within the request timeout.
    #[error("no answer within {} s", .0.as_secs_f32())]
    Timeout(Duration),
    /// Still rate limited (HTTP 429) when the retries ran out.
    #[error("rate limited (429)")]
    RateLimited { retry_after: Option<Duration> },
    /// A 5xx answer.
    #[error("server error {status}: {message}")]
    Server { status: u16, message: String },
    /// A 4xx answer other than 429: the request itself is wrong (a bad key, an unknown
    /// model, a text too long), so it is not retried.
    #[error("request refused with {status}: {message}")]
    Client { status: u16, message: String },
    /// The answer was not the JSON this provider speaks.
    #[error("malformed answer: {0}")]
    Malformed(String),
    /// A vector of another length than the model's.
    #[error("expected vectors of {expected} dimensions, got {got}")]
    WrongDimensions { expected: usize, got: usize },
    /// The environment variable named for the API key is not set.
    #[error("environment variable {var} (named by api_key_env) is not set")]
    MissingKey { var: String },
    /// The HTTP client could not be built (no TLS backend, no thread for the runtime).
    #[error("cannot set up the HTTP client: {0}")]
    Setup(String),
}

/// A failed provider request: which endpoint, what went wrong, after how many attempts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ProviderError {
    /// The URL, without any user name or password it may hold.
    pub endpoint: String,
    pub kind: ErrorKind,
    /// Requests sent before giving up (0 when none could be).
    pub attempts: u32,
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.endpoint, self.kind)?;
        if self.attempts > 1 {
            write!(f, " (gave up after {} attempts)", self.attempts)?;
        }
        Ok(())
    }
}

impl ProviderError {
    pub fn new(endpoint: impl Into<String>, kind: ErrorKind) -> ProviderError {
        ProviderError { endpoint: endpoint.into(), kind, attempts: 0 }
    }
}

/// When to try a failed request again, and how long to wait first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` requests at most).
    pub max_retries: u32,
    /// The first backoff; it doubles with each retry.
    pub base_delay: Duration,
    /// No backoff grows beyond this.
    pub max_delay: Duration,
    /// A server's `Retry-After` is honoured up to this long.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// How long to wait before retry number `retry` (1 for the first) after `kind`, or
    /// `None` when `kind` is not worth retrying or the retries are spent. `jitter` in
    /// `[0, 1)` spreads clients that failed together.
    pub fn delay(&self, kind: &ErrorKind, retry: u32, jitter: f64) -> Option<Duration> {
        if retry > self.max_retries {
            return None;
        }
        let backoff = || {
            let doubled = self.base_delay.saturating_mul(1u32 << retry.saturating_sub(1).min(16));
            let capped = doubled.min(self.max_delay);
            // Half fixed, half random ("equal jitter"): never much shorter than planned.
            capped.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
        };
        match kind {
            ErrorKind::RateLimited { retry_after: Some(after) } => Some((*after).min(self.max_retry_after)),
            ErrorKind::RateLimited { retry_after: None }
            | ErrorKind::Server { .. }
            | ErrorKind::Timeout(_)
            | ErrorKind::Unreachable(_)
            | ErrorKind::CutShort(_) => Some(backoff()),
            ErrorKind::Client { .. }
            | ErrorKind::Malformed(_)
            | ErrorKind::WrongDimensions { .. }
            | ErrorKind::MissingKey { .. }
            | ErrorKind::Setup(_) => None,
        }
    }
}

/// Reads a `Retry-After` value: whole seconds, or an HTTP date (a date in the past means
/// now).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Timeouts and retries of one client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// The whole request: connecting, sending, and reading the full answer.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub retry: RetryPolicy,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
        }
    }
}

/// The process's runtime for provider requests: two worker threads are plenty for IO that
/// mostly waits, and it lives as long as the process, so it is never dropped in an async
/// context.
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("situate-http")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// One provider's HTTP client: a base URL, its auth, timeouts and retry policy.
pub struct HttpClient {
    client: reqwest::Client,
    base: Url,
    auth: Auth,
    extra_headers: HeaderMap,
    settings: HttpSettings,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("base", &display_url(&self.base))
            .field("auth", &self.auth)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client for the API at `base_url` (`http` or `https`).
    pub fn new(base_url: &str, auth: Auth, settings: HttpSettings) -> Result<HttpClient, ProviderError> {
        let base = parse_base_url(base_url)
            .map_err(|reason| ProviderError::new(base_url, ErrorKind::Setup(reason)))?;
        let setup_error = |reason: String| ProviderError::new(display_url(&base), ErrorKind::Setup(reason));
        let runtime = runtime().map_err(setup_error)?;
        let mut builder = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.connect_timeout)
            .user_agent(concat!("situate/", env!("CARGO_PKG_VERSION")));
        // A model server on this machine is reached directly, whatever proxy the
        // environment names for the outside world.
        if base.host_str().is_some_and(is_loopback) {
            builder = builder.no_proxy();
        }
        let client = {
            let _entered = runtime.enter();
            builder.build().map_err(|e| setup_error(error_chain(&e)))?
        };
        Ok(HttpClient { client, base, auth, extra_headers: HeaderMap::new(), settings })
    }

    /// A header sent with every request (an API version, say).
    pub fn with_header(mut self, name: &'static str, value: &'static str) -> HttpClient {
        self.extra_headers.insert(HeaderName::from_static(name), HeaderValue::from_static(value));
        self
    }

    /// The base URL, without credentials.
    pub fn base(&self) -> String {
        display_url(&self.base)
    }

    /// `host` or `host:port` of the base URL: what tells two servers apart.
    pub fn host(&self) -> String {
        let host = self.base.host_str().unwrap_or("");
        match self.base.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        }
    }

    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// The URL of `path` under the base URL (`embeddings`, `v1/messages`).
    pub fn endpoint(&self, path: &str) -> Url {
        let mut url = self.base.clone();
        let joined = format!("{}/{}", url.path().trim_end_matches('/'), path.trim_start_matches('/'));
        url.set_path(&joined);
        url
    }

    /// The URL of `path` as shown in messages: without credentials.
    pub fn endpoint_name(&self, path: &str) -> String {
        display_url(&self.endpoint(path))
    }

    /// POSTs `body` as JSON to `path` and reads the answer as `T`, retrying as the policy
    /// says. Blocks the calling thread, whatever thread that is; on a tokio worker thread it
    /// stalls that worker, so async code should call it through `spawn_blocking`.
    pub fn post_json<T: DeserializeOwned + Send + 'static>(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<T, ProviderError> {
        let url = self.endpoint(path);
        let runtime = runtime().map_err(|e| ProviderError::new(display_url(&url), ErrorKind::Setup(e)))?;
        let request = self.request_parts(&url, body);
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        // The caller's tracing subscriber goes along, so retry warnings land in its logs.
        runtime.spawn(
            async move {
                let _ = tx.send(request.send_with_retries::<T>().await);
            }
            .with_current_subscriber(),
        );
        rx.recv().unwrap_or_else(|_| {
            Err(ProviderError::new(display_url(&url), ErrorKind::Setup("the request task stopped".into())))
        })
    }

    /// POSTs `body` as JSON to `path` from async code, with the same retries.
    pub async fn post_json_async<T: DeserializeOwned + Send + 'static>(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<T, ProviderError> {
        self.request_parts(&self.endpoint(path), body).send_with_retries().await
    }

    fn request_parts(&self, url: &Url, body: &serde_json::Value) -> Request {
        let mut headers = self.extra_headers.clone();
        let secret = |value: String| {
            let mut value = HeaderValue::from_str(&value).ok();
            // Sensitive values are left out of reqwest's and hyper's own Debug output.
            if let Some(v) = value.as_mut() {
                v.set_sensitive(true);
            }
            value
        };
        match &self.auth {
            Auth::None => {}
            Auth::Bearer(key) => {
                if let Some(v) = secret(format!("Bearer {}", key.expose())) {
                    headers.insert(reqwest::header::AUTHORIZATION, v);
                }
            }
            Auth::Header(name, key) => {
                if let Some(v) = secret(key.expose().to_string()) {
                    headers.insert(HeaderName::from_static(name), v);
                }
            }
        }
        Request {
            client: self.client.clone(),
            url: url.clone(),
            headers,
            body: serde_json::to_vec(body).unwrap_or_default(),
            key: self.auth.key().cloned(),
            settings: self.settings.clone(),
        }
    }
}

/// Everything one request needs, owned, so that it can run on the runtime's threads.
struct Request {
    client: reqwest::Client,
    url: Url,
    headers: HeaderMap,
    body: Vec<u8>,
    key: Option<ApiKey>,
    settings: HttpSettings,
}

impl Request {
    async fn send_with_retries<T: DeserializeOwned>(self) -> Result<T, ProviderError> {
        let endpoint = display_url(&self.url);
        let mut attempts = 0;
        loop {
            attempts += 1;
            let kind = match self.attempt().await {
                Ok(bytes) => {
                    return serde_json::from_slice::<T>(&bytes).map_err(|e| ProviderError {
                        endpoint,
                        kind: ErrorKind::Malformed(self.redact(&e.to_string())),
                        attempts,
                    });
                }
                Err(kind) => kind,
            };
            match self.settings.retry.delay(&kind, attempts, jitter()) {
                Some(wait) => {
                    tracing::warn!(
                        endpoint = %endpoint,
                        attempt = attempts,
                        "{kind}; retrying in {:.2} s",
                        wait.as_secs_f32()
                    );
                    tokio::time::sleep(wait).await;
                }
                None => return Err(ProviderError { endpoint, kind, attempts }),
            }
        }
    }

    /// One request: the answer's body on a 2xx, the kind of failure otherwise.
    async fn attempt(&self) -> Result<Vec<u8>, ErrorKind> {
        let response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(self.body.clone())
            .send()
            .await
            .map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let body = response.bytes().await.map_err(|e| match self.transport_error(&e) {
            ErrorKind::Unreachable(why) => ErrorKind::CutShort(why),
            other => other,
        })?;
        if status.is_success() {
            return Ok(body.to_vec());
        }
        let message = self.redact(&error_message(&body));
        Err(if status == StatusCode::TOO_MANY_REQUESTS {
            ErrorKind::RateLimited { retry_after }
        } else if status.is_server_error() {
            ErrorKind::Server { status: status.as_u16(), message }
        } else {
            ErrorKind::Client { status: status.as_u16(), message }
        })
    }

    fn transport_error(&self, e: &reqwest::Error) -> ErrorKind {
        if e.is_timeout() {
            ErrorKind::Timeout(self.settings.timeout)
        } else {
            ErrorKind::Unreachable(self.redact(&error_chain(e)))
        }
    }

    /// Takes the key out of a server's message: some servers quote the key they refused.
    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "<redacted>"),
            _ => text.to_string(),
        }
    }
}

/// The message of an error answer: OpenAI's and Anthropic's `{"error": {"message": …}}`,
/// a plain `{"error": "…"}`, or the start of the body.
fn error_message(body: &[u8]) -> String {
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
        let error = json.get("error");
        let message = error
            .and_then(|e| e.get("message"))
            .or(error)
            .or_else(|| json.get("message"))
            .and_then(serde_json::Value::as_str);
        if let Some(m) = message {
            return truncate(m, 300);
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() { "(empty body)".to_string() } else { truncate(text, 300) }
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The innermost causes of a reqwest error ("connection refused"), without the URL that
/// its own message repeats.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut causes = Vec::new();
    let mut source = e.source();
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    // The deepest cause is the most precise; the ones above it usually wrap it.
    causes.pop().unwrap_or_else(|| e.to_string())
}

/// A small random number in `[0, 1)` for backoff jitter, from the standard library's
/// randomly keyed hasher (no need for a random-number crate here).
fn jitter() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher
        .write_u128(SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos());
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Checks a base URL: absolute, `http` or `https`.
pub fn parse_base_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text.trim()).map_err(|e| format!("not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some() => Ok(url),
        "http" | "https" => Err("the URL has no host".to_string()),
        other => Err(format!("unsupported scheme `{other}`; use http or https")),
    }
}

/// A URL as shown in messages and logs: without user name and password.
fn display_url(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
            max_retry_after: Duration::from_secs(5),
        }
    }

    #[test]
    fn server_errors_back_off_exponentially_with_jitter_and_a_cap() {
        let p = policy();
        let server = ErrorKind::Server { status: 503, message: String::new() };
        assert_eq!(p.delay(&server, 1, 0.0), Some(Duration::from_millis(50)));
        assert_eq!(p.delay(&server, 1, 0.999_999).map(|d| d.as_millis()), Some(99));
        assert_eq!(p.delay(&server, 2, 0.0), Some(Duration::from_millis(100)));
        assert_eq!(p.delay(&server, 3, 1.0), Some(Duration::from_millis(300)), "capped");
        assert_eq!(p.delay(&server, 4, 0.0), None, "retries spent");
        assert!(p.delay(&ErrorKind::Timeout(Duration::from_secs(1)), 1, 0.5).is_some());
        assert!(p.delay(&ErrorKind::Unreachable("refused".into()), 1, 0.5).is_some());
    }

    #[test]
    fn rate_limits_wait_as_told_up_to_the_cap() {
        let p = policy();
        let after = |s| ErrorKind::RateLimited { retry_after: Some(Duration::from_secs(s)) };
        assert_eq!(p.delay(&after(2), 1, 0.3), Some(Duration::from_secs(2)));
        assert_eq!(p.delay(&after(600), 1, 0.3), Some(Duration::from_secs(5)));
        assert_eq!(
            p.delay(&ErrorKind::RateLimited { retry_after: None }, 1, 0.0),
            Some(Duration::from_millis(50))
        );
    }

    #[test]
    fn client_errors_and_bad_answers_are_not_retried() {
        let p = policy();
        for kind in [
            ErrorKind::Client { status: 401, message: String::new() },
            ErrorKind::Malformed("x".into()),
            ErrorKind::WrongDimensions { expected: 3, got: 4 },
        ] {
            assert_eq!(p.delay(&kind, 1, 0.5), None, "{kind:?}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(30)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn keys_stay_out_of_debug_output_and_urls_lose_their_credentials() {
        let key = ApiKey::new("sk-very-secret");
        assert!(!format!("{key:?}").contains("sk-very"));
        let client =
            HttpClient::new("https://user:pw@example.com/v1", Auth::Bearer(key), HttpSettings::default())
                .unwrap();
        let shown = format!("{client:?}");
        assert!(!shown.contains("sk-very") && !shown.contains("pw@"), "{shown}");
        assert_eq!(client.endpoint("embeddings").as_str(), "https://user:pw@example.com/v1/embeddings");
        assert_eq!(client.base(), "https://example.com/v1");
        assert_eq!(client.host(), "example.com");
    }

    #[test]
    fn base_urls_must_be_http() {
        assert!(parse_base_url("http://localhost:11434/v1").is_ok());
        assert!(parse_base_url("ftp://example.com").unwrap_err().contains("scheme"));
        assert!(parse_base_url("localhost:11434").is_err());
        assert!(parse_base_url("not a url").is_err());
    }

    #[test]
    fn error_messages_come_from_the_json_or_the_body() {
        assert_eq!(error_message(br#"{"error":{"message":"bad model"}}"#), "bad model");
        assert_eq!(error_message(br#"{"error":"overloaded"}"#), "overloaded");
        assert_eq!(error_message(b"<html>oops</html>"), "<html>oops</html>");
        assert_eq!(error_message(b""), "(empty body)");
        assert_eq!(truncate("abcdef", 3), "abc…");
    }
}
