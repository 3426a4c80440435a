//! Configuration in two stages: a raw, all-optional form read from `situate.toml` (or, later,
//! from an editor's settings) and the validated [`Config`] the engine runs on.
//!
//! A bad value never stops anything: it is reported as a [`ConfigProblem`] naming the key,
//! and the default is used in its place. Unknown keys are reported the same way.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::chunk::{ChunkConfig, ChunkStrategy};
use crate::context::ContextConfig;
use crate::providers::openai::OpenAiEmbeddingConfig;
use crate::providers::{EmbeddingConfig, TRANSFORMER_BUILT, TRANSFORMER_NOT_BUILT};
use crate::search::{Expand, SearchConfig, SearchMode};
use crate::snippets::prompt::SnippetMode;
use crate::snippets::{ChatProvider, SnippetConfig, default_key_var};
use crate::workspace::WalkConfig;

/// The file name of the per-workspace configuration.
pub const CONFIG_FILE: &str = "situate.toml";

/// Everything the engine needs to know, validated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// Where the index lives; `None` means the per-workspace folder in the user's cache dir.
    pub index_dir: Option<PathBuf>,
    pub walk: WalkConfig,
    pub chunk: ChunkConfig,
    pub context: ContextConfig,
    pub search: SearchConfig,
    pub embedding: EmbeddingConfig,
    /// LLM-written snippets; `None` (off) unless a `[snippets]` table is present.
    pub snippets: Option<SnippetConfig>,
}

/// A problem with one configuration key; the default was used instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// Dotted key, e.g. `chunk.max_tokens`.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "config key `{}`: {}", self.key, self.message)
    }
}

/// A configuration and the problems met while reading it.
#[derive(Debug, Clone, Default)]
pub struct LoadedConfig {
    pub config: Config,
    pub problems: Vec<ConfigProblem>,
    /// The file it was read from, if any.
    pub source: Option<PathBuf>,
}

/// A value as written by the user: absent, well-typed, or of the wrong type (kept as the
/// error message so that the validator can name the key).
#[derive(Debug, Clone, Default)]
enum Setting<T> {
    #[default]
    Unset,
    Set(T),
    Invalid(String),
}

impl<T> Setting<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Setting<U> {
        match self {
            Setting::Unset => Setting::Unset,
            Setting::Set(v) => Setting::Set(f(v)),
            Setting::Invalid(message) => Setting::Invalid(message),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Setting<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Buffer the value so that a type error stays local to this key instead of failing
        // the whole document.
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(match serde_json::from_value::<T>(value.clone()) {
            Ok(v) => Setting::Set(v),
            Err(e) => Setting::Invalid(format!("{e} (got {value})")),
        })
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawConfig {
    index_dir: Setting<PathBuf>,
    extensions: Setting<Vec<String>>,
    include: Setting<Vec<String>>,
    exclude: Setting<Vec<String>>,
    max_file_bytes: Setting<u64>,
    chunk: RawChunk,
    context: RawContext,
    search: RawSearch,
    embedding: RawEmbedding,
    snippets: Option<RawSnippets>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawChunk {
    strategy: Setting<ChunkStrategy>,
    max_tokens: Setting<usize>,
    overlap_tokens: Setting<usize>,
    semantic_threshold: Setting<f32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawContext {
    header_template: Setting<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawSearch {
    mode: Setting<SearchMode>,
    limit: Setting<usize>,
    candidates: Setting<usize>,
    rrf_k: Setting<f32>,
    bm25_weight: Setting<f32>,
    vector_weight: Setting<f32>,
    title_boost: Setting<f32>,
    headings_boost: Setting<f32>,
    path_boost: Setting<f32>,
    snippet_boost: Setting<f32>,
    expand: Setting<Expand>,
    window: Setting<usize>,
    merge_share: Setting<f32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawEmbedding {
    provider: Setting<String>,
    model_path: Setting<PathBuf>,
    model: Setting<String>,
    base_url: Setting<String>,
    api_key_env: Setting<String>,
    dimensions: Setting<usize>,
    batch_size: Setting<usize>,
    max_tokens: Setting<usize>,
    timeout_secs: Setting<u64>,
    max_retries: Setting<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawSnippets {
    enabled: Setting<bool>,
    provider: Setting<ChatProvider>,
    model: Setting<String>,
    base_url: Setting<String>,
    api_key_env: Setting<String>,
    mode: Setting<SnippetMode>,
    concurrency: Setting<usize>,
    max_calls: Setting<u64>,
    max_run_tokens: Setting<u64>,
    max_tokens: Setting<u32>,
    document_budget: Setting<usize>,
    timeout_secs: Setting<u64>,
    max_retries: Setting<u32>,
}

/// Collects problems while raw settings are turned into validated values.
struct Validator {
    problems: Vec<ConfigProblem>,
}

impl Validator {
    /// The user's value for `key` if present, well-typed and accepted by `check`; otherwise
    /// the default, with a problem recorded.
    fn take<T>(
        &mut self,
        key: &str,
        setting: Setting<T>,
        default: T,
        check: impl FnOnce(&T) -> Result<(), String>,
    ) -> T {
        match setting {
            Setting::Unset => default,
            Setting::Set(v) => match check(&v) {
                Ok(()) => v,
                Err(message) => {
                    self.problem(key, message);
                    default
                }
            },
            Setting::Invalid(message) => {
                self.problem(key, message);
                default
            }
        }
    }

    fn problem(&mut self, key: &str, message: impl Into<String>) {
        self.problems.push(ConfigProblem { key: key.to_string(), message: message.into() });
    }
}

/// The tables of the configuration: an empty array given for one of them (some editors
/// cannot tell an empty table from an empty list) means an empty table.
const TABLES: [&str; 5] = ["chunk", "context", "search", "embedding", "snippets"];

/// A problem with the settings file as a whole.
fn file_problem(message: String) -> ConfigProblem {
    ConfigProblem { key: CONFIG_FILE.to_string(), message }
}

/// Lays `over` onto `base`: objects merge key by key, `null` changes nothing, anything else
/// replaces.
fn merge_json(base: &mut serde_json::Value, over: &serde_json::Value) {
    match (base, over) {
        (_, serde_json::Value::Null) => {}
        (serde_json::Value::Object(_), serde_json::Value::Array(a)) if a.is_empty() => {}
        (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
            for (key, value) in o {
                if TABLES.contains(&key.as_str()) && value.as_array().is_some_and(Vec::is_empty) {
                    continue;
                }
                match b.get_mut(key) {
                    Some(existing) => merge_json(existing, value),
                    None if value.is_object() => {
                        let mut fresh = serde_json::Value::Object(serde_json::Map::new());
                        merge_json(&mut fresh, value);
                        b.insert(key.clone(), fresh);
                    }
                    None if !value.is_null() => {
                        b.insert(key.clone(), value.clone());
                    }
                    None => {}
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

fn any<T>(_: &T) -> Result<(), String> {
    Ok(())
}

fn at_least<T: PartialOrd + fmt::Display + Copy>(min: T) -> impl FnOnce(&T) -> Result<(), String> {
    move |v| if *v >= min { Ok(()) } else { Err(format!("must be at least {min}, got {v}")) }
}

fn non_negative_finite(v: &f32) -> Result<(), String> {
    if v.is_finite() && *v >= 0.0 { Ok(()) } else { Err(format!("must be a finite number ≥ 0, got {v}")) }
}

fn valid_globs(patterns: &Vec<String>) -> Result<(), String> {
    for p in patterns {
        globset::Glob::new(p).map_err(|e| format!("bad glob `{p}`: {e}"))?;
    }
    Ok(())
}

impl Config {
    /// Reads `situate.toml` from `root` if it exists. A missing file is not a problem; an
    /// unreadable or unparsable one is reported and the defaults are used.
    pub fn load(root: &Path) -> LoadedConfig {
        let path = root.join(CONFIG_FILE);
        if !path.exists() {
            return LoadedConfig::default();
        }
        Config::load_file(&path)
    }

    /// Reads a settings file; a missing or unreadable one is reported and the defaults used.
    pub fn load_file(path: &Path) -> LoadedConfig {
        let path = path.to_path_buf();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let mut loaded = Config::from_toml(&text);
                loaded.source = Some(path);
                loaded
            }
            Err(e) => LoadedConfig {
                config: Config::default(),
                problems: vec![file_problem(format!("cannot read {}: {e}", path.display()))],
                source: Some(path),
            },
        }
    }

    /// Validates a TOML document.
    pub fn from_toml(text: &str) -> LoadedConfig {
        let deserializer = toml::Deserializer::parse(text);
        match deserializer {
            Ok(de) => Config::from_deserializer(de),
            Err(e) => LoadedConfig {
                config: Config::default(),
                problems: vec![file_problem(format!("not valid TOML: {}", e.message()))],
                source: None,
            },
        }
    }

    /// The workspace's settings file (or `config_file`) with an editor's settings laid over
    /// it: a key set in `overrides` wins, tables merge key by key, and `null` leaves the
    /// file's value. Problems of both layers are reported.
    pub fn load_layered(
        root: &Path,
        config_file: Option<&Path>,
        overrides: Option<&serde_json::Value>,
    ) -> LoadedConfig {
        let path = config_file.map_or_else(|| root.join(CONFIG_FILE), Path::to_path_buf);
        let Some(overrides) = overrides.filter(|o| !o.is_null()) else {
            return if config_file.is_some() || path.exists() {
                Config::load_file(&path)
            } else {
                LoadedConfig::default()
            };
        };
        let mut problems = Vec::new();
        let mut base = serde_json::Value::Object(serde_json::Map::new());
        if config_file.is_some() || path.exists() {
            match std::fs::read_to_string(&path) {
                Ok(text) => match toml::from_str::<serde_json::Value>(&text) {
                    Ok(value) => base = value,
                    Err(e) => problems.push(file_problem(format!("not valid TOML: {}", e.message()))),
                },
                Err(e) => problems.push(file_problem(format!("cannot read {}: {e}", path.display()))),
            }
        }
        // An empty list stands for an empty table (editors that cannot tell them apart).
        let empty = serde_json::Value::Object(serde_json::Map::new());
        let overrides = if overrides.as_array().is_some_and(Vec::is_empty) { &empty } else { overrides };
        if !overrides.is_object() {
            problems.push(ConfigProblem {
                key: "(editor settings)".to_string(),
                message: format!("must be an object of situate.toml keys, got {overrides}"),
            });
        } else {
            merge_json(&mut base, overrides);
        }
        let mut loaded = Config::from_json(base);
        problems.append(&mut loaded.problems);
        loaded.problems = problems;
        loaded.source = path.exists().then_some(path);
        loaded
    }

    /// Validates a JSON object with the same keys (editor settings).
    pub fn from_json(value: serde_json::Value) -> LoadedConfig {
        Config::from_deserializer(value)
    }

    fn from_deserializer<'de, D: serde::Deserializer<'de>>(de: D) -> LoadedConfig
    where
        D::Error: fmt::Display,
    {
        let mut unknown = Vec::new();
        let raw: Result<RawConfig, _> = serde_ignored::deserialize(de, |path| unknown.push(path.to_string()));
        let mut v = Validator { problems: Vec::new() };
        for key in unknown {
            v.problem(&key, "unknown key (ignored)");
        }
        let raw = match raw {
            Ok(raw) => raw,
            Err(e) => {
                // Only the shape of a whole table can fail here (e.g. `chunk = 3`).
                v.problem("(document)", format!("{e}"));
                RawConfig::default()
            }
        };
        let config = Config::validate(raw, &mut v);
        LoadedConfig { config, problems: v.problems, source: None }
    }

    fn validate(raw: RawConfig, v: &mut Validator) -> Config {
        let d = Config::default();
        let walk = WalkConfig {
            extensions: v
                .take("extensions", raw.extensions, d.walk.extensions, |exts| {
                    if exts.is_empty() { Err("must name at least one extension".into()) } else { Ok(()) }
                })
                .into_iter()
                .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
                .collect(),
            include: v.take("include", raw.include, d.walk.include, valid_globs),
            exclude: v.take("exclude", raw.exclude, d.walk.exclude, valid_globs),
            max_file_bytes: v.take("max_file_bytes", raw.max_file_bytes, d.walk.max_file_bytes, at_least(1)),
        };
        let max_tokens = v.take("chunk.max_tokens", raw.chunk.max_tokens, d.chunk.max_tokens, |n| {
            if (16..=8192).contains(n) {
                Ok(())
            } else {
                Err(format!("must be between 16 and 8192, got {n}"))
            }
        });
        let overlap_tokens =
            v.take("chunk.overlap_tokens", raw.chunk.overlap_tokens, d.chunk.overlap_tokens, |n| {
                if *n < max_tokens / 2 {
                    Ok(())
                } else {
                    Err(format!("must be less than half of chunk.max_tokens ({max_tokens}), got {n}"))
                }
            });
        let chunk = ChunkConfig {
            strategy: v.take("chunk.strategy", raw.chunk.strategy, d.chunk.strategy, any),
            max_tokens,
            overlap_tokens,
            semantic_threshold: v.take(
                "chunk.semantic_threshold",
                raw.chunk.semantic_threshold,
                d.chunk.semantic_threshold,
                non_negative_finite,
            ),
        };
        let context = ContextConfig {
            header_template: v.take(
                "context.header_template",
                raw.context.header_template,
                d.context.header_template,
                |t| check_template(t),
            ),
        };
        let s = raw.search;
        let search = SearchConfig {
            mode: v.take("search.mode", s.mode, d.search.mode, any),
            limit: v.take("search.limit", s.limit, d.search.limit, at_least(1)),
            candidates: v.take("search.candidates", s.candidates, d.search.candidates, at_least(1)),
            rrf_k: v.take("search.rrf_k", s.rrf_k, d.search.rrf_k, non_negative_finite),
            bm25_weight: v.take(
                "search.bm25_weight",
                s.bm25_weight,
                d.search.bm25_weight,
                non_negative_finite,
            ),
            vector_weight: v.take(
                "search.vector_weight",
                s.vector_weight,
                d.search.vector_weight,
                non_negative_finite,
            ),
            title_boost: v.take(
                "search.title_boost",
                s.title_boost,
                d.search.title_boost,
                non_negative_finite,
            ),
            headings_boost: v.take(
                "search.headings_boost",
                s.headings_boost,
                d.search.headings_boost,
                non_negative_finite,
            ),
            path_boost: v.take("search.path_boost", s.path_boost, d.search.path_boost, non_negative_finite),
            snippet_boost: v.take(
                "search.snippet_boost",
                s.snippet_boost,
                d.search.snippet_boost,
                non_negative_finite,
            ),
            expand: v.take("search.expand", s.expand, d.search.expand, any),
            window: v.take("search.window", s.window, d.search.window, |n| {
                if *n <= 100 { Ok(()) } else { Err(format!("must be at most 100, got {n}")) }
            }),
            merge_share: v.take("search.merge_share", s.merge_share, d.search.merge_share, |x| {
                if *x > 0.0 && *x <= 1.0 {
                    Ok(())
                } else {
                    Err(format!("must be more than 0 and at most 1, got {x}"))
                }
            }),
        };
        let embedding = validate_embedding(raw.embedding, v);
        let index_dir = match raw.index_dir {
            Setting::Set(p) => Some(p),
            Setting::Unset => None,
            Setting::Invalid(message) => {
                v.problem("index_dir", message);
                None
            }
        };
        let snippets = raw.snippets.and_then(|raw| validate_snippets(raw, v));
        Config { index_dir, walk, chunk, context, search, embedding, snippets }
    }
}

/// The provider named by `embedding.provider` and its settings. A provider that cannot be
/// used (unknown, not built in, or without its required keys) falls back to the built-in
/// static model, never to a static model read from a path meant for another provider.
fn validate_embedding(mut raw: RawEmbedding, v: &mut Validator) -> EmbeddingConfig {
    let fallback = EmbeddingConfig::Static { model_path: None };
    let provider = v.take("embedding.provider", std::mem::take(&mut raw.provider), "static".to_string(), any);
    if provider == "openai" {
        return validate_openai(raw, v).map_or(fallback, EmbeddingConfig::OpenAi);
    }
    let model_path = v.take("embedding.model_path", raw.model_path.map(Some), None, any);
    let batch_size = v.take("embedding.batch_size", raw.batch_size.map(Some), None, |n| match n {
        Some(n) if !(1..=1024).contains(n) => Err(format!("must be between 1 and 1024, got {n}")),
        _ => Ok(()),
    });
    let max_tokens = v.take("embedding.max_tokens", raw.max_tokens.map(Some), None, |n| match n {
        Some(n) if !(8..=8192).contains(n) => Err(format!("must be between 8 and 8192, got {n}")),
        _ => Ok(()),
    });
    match provider.as_str() {
        "static" => {
            for (key, set) in [
                ("embedding.batch_size", batch_size.is_some()),
                ("embedding.max_tokens", max_tokens.is_some()),
            ] {
                if set {
                    v.problem(key, "only used by provider `transformer` (ignored)");
                }
            }
            EmbeddingConfig::Static { model_path }
        }
        "transformer" if !TRANSFORMER_BUILT => {
            let message = format!(
                "provider `transformer` is not available: {TRANSFORMER_NOT_BUILT}; \
                 using the built-in static model"
            );
            v.problem("embedding.provider", message);
            fallback
        }
        "transformer" => match model_path {
            Some(model_path) => EmbeddingConfig::Transformer { model_path, batch_size, max_tokens },
            None => {
                v.problem(
                    "embedding.model_path",
                    "required by provider `transformer`: the folder holding model.safetensors, \
                     tokenizer.json and config.json; using the built-in static model",
                );
                fallback
            }
        },
        other => {
            v.problem(
                "embedding.provider",
                format!(
                    "unknown provider `{other}`; use `static`, `transformer` or `openai`; \
                     using the built-in static model"
                ),
            );
            fallback
        }
    }
}

/// The environment variable named by an `api_key_env` key, checked for being set.
fn key_var(key: &str, setting: Setting<String>, v: &mut Validator) -> Option<String> {
    match setting {
        Setting::Unset => None,
        Setting::Set(var) if var.is_empty() || var.contains(['=', '\0']) => {
            v.problem(key, format!("`{var}` is not an environment variable name"));
            None
        }
        Setting::Set(var) => {
            // The key itself is read when the client is built; saying so here as well puts
            // the problem next to the key that causes it.
            if std::env::var_os(&var).is_none_or(|value| value.is_empty()) {
                v.problem(
                    key,
                    format!("environment variable {var} is not set; requests cannot be made without the key"),
                );
            }
            Some(var)
        }
        Setting::Invalid(message) => {
            v.problem(key, message);
            None
        }
    }
}

/// The `[snippets]` table; `None` (snippets off) when `enabled = false` or when the table
/// lacks what a provider needs, with the reason recorded.
fn validate_snippets(s: RawSnippets, v: &mut Validator) -> Option<SnippetConfig> {
    if !v.take("snippets.enabled", s.enabled, true, any) {
        return None;
    }
    let provider = v.take("snippets.provider", s.provider, ChatProvider::OpenAi, any);
    let model = v.take("snippets.model", s.model, String::new(), |m| {
        if m.trim().is_empty() { Err("must not be empty".to_string()) } else { Ok(()) }
    });
    let d = SnippetConfig::new(provider, model);
    let base_url_set = matches!(s.base_url, Setting::Set(_));
    let base_url = v.take("snippets.base_url", s.base_url, d.base_url, |u| {
        crate::providers::http::parse_base_url(u).map(|_| ())
    });
    let key_set = matches!(s.api_key_env, Setting::Set(_));
    let mut api_key_env = key_var("snippets.api_key_env", s.api_key_env, v);
    if !key_set && !base_url_set {
        // The provider's own endpoint always wants a key: look where its tools look.
        let var = default_key_var(provider);
        if std::env::var_os(var).is_none_or(|value| value.is_empty()) {
            v.problem(
                "snippets.api_key_env",
                format!(
                    "not set, and environment variable {var} is not set either: {provider} needs a key; \
                     snippets are off"
                ),
            );
            return None;
        }
        api_key_env = Some(var.to_string());
    }
    if provider == ChatProvider::Anthropic && api_key_env.is_none() {
        v.problem("snippets.api_key_env", "required by provider `anthropic`; snippets are off");
        return None;
    }
    let between = |lo: u64, hi: u64| {
        move |n: &u64| {
            if (lo..=hi).contains(n) {
                Ok(())
            } else {
                Err(format!("must be between {lo} and {hi}, got {n}"))
            }
        }
    };
    let config = SnippetConfig {
        provider,
        api_key_env,
        base_url,
        mode: v.take("snippets.mode", s.mode, d.mode, any),
        concurrency: v
            .take("snippets.concurrency", s.concurrency, d.concurrency, |n| between(1, 64)(&(*n as u64))),
        max_calls: v.take("snippets.max_calls", s.max_calls.map(Some), d.max_calls, |n| match n {
            Some(0) => Err("must be at least 1".to_string()),
            _ => Ok(()),
        }),
        max_run_tokens: v.take("snippets.max_run_tokens", s.max_run_tokens.map(Some), None, |n| match n {
            Some(0) => Err("must be at least 1".to_string()),
            _ => Ok(()),
        }),
        max_tokens: v
            .take("snippets.max_tokens", s.max_tokens, d.max_tokens, |n| between(16, 4096)(&u64::from(*n))),
        document_budget: v.take("snippets.document_budget", s.document_budget, d.document_budget, |n| {
            between(256, 200_000)(&(*n as u64))
        }),
        timeout_secs: v.take("snippets.timeout_secs", s.timeout_secs, d.timeout_secs, between(1, 3600)),
        max_retries: v
            .take("snippets.max_retries", s.max_retries, d.max_retries, |n| between(0, 10)(&u64::from(*n))),
        model: d.model,
    };
    if config.model.is_empty() {
        if !v.problems.iter().any(|p| p.key == "snippets.model") {
            v.problem("snippets.model", "required when the [snippets] table is present; snippets are off");
        }
        return None;
    }
    Some(config)
}

/// The settings of `provider = "openai"`; `None` (and the static model) when the required
/// `model` is missing.
fn validate_openai(e: RawEmbedding, v: &mut Validator) -> Option<OpenAiEmbeddingConfig> {
    let d = OpenAiEmbeddingConfig::new("");
    let model = v.take("embedding.model", e.model, String::new(), |m| {
        if m.trim().is_empty() { Err("must not be empty".to_string()) } else { Ok(()) }
    });
    let base_url = v.take("embedding.base_url", e.base_url, d.base_url, |u| {
        crate::providers::http::parse_base_url(u).map(|_| ())
    });
    let api_key_env = key_var("embedding.api_key_env", e.api_key_env, v);
    let dimensions = match e.dimensions {
        Setting::Unset => None,
        dimensions => Some(v.take("embedding.dimensions", dimensions, 0, at_least(1))).filter(|&n| n > 0),
    };
    let batch_size = v.take("embedding.batch_size", e.batch_size, d.batch_size, |n| {
        if (1..=2048).contains(n) { Ok(()) } else { Err(format!("must be between 1 and 2048, got {n}")) }
    });
    let timeout_secs = v.take("embedding.timeout_secs", e.timeout_secs, d.timeout_secs, |n| {
        if (1..=3600).contains(n) { Ok(()) } else { Err(format!("must be between 1 and 3600, got {n}")) }
    });
    let max_retries = v.take("embedding.max_retries", e.max_retries, d.max_retries, |n| {
        if *n <= 10 { Ok(()) } else { Err(format!("must be at most 10, got {n}")) }
    });
    if model.is_empty() {
        if !v.problems.iter().any(|p| p.key == "embedding.model") {
            v.problem("embedding.model", "required with provider `openai`; using the static model");
        }
        return None;
    }
    Some(OpenAiEmbeddingConfig {
        model,
        base_url,
        api_key_env,
        dimensions,
        batch_size,
        timeout_secs,
        max_retries,
    })
}

fn check_template(template: &str) -> Result<(), String> {
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return Err("unclosed `{` in template".into());
        };
        let name = &rest[open + 1..open + close];
        if !matches!(name, "title" | "path" | "headings") {
            return Err(format!("unknown placeholder `{{{name}}}`; use {{title}}, {{path}} or {{headings}}"));
        }
        rest = &rest[open + close + 1..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(loaded: &LoadedConfig) -> Vec<&str> {
        loaded.problems.iter().map(|p| p.key.as_str()).collect()
    }

    #[test]
    fn empty_document_gives_defaults_and_no_problems() {
        let loaded = Config::from_toml("");
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.config, Config::default());
    }

    #[test]
    fn valid_values_are_taken() {
        let loaded = Config::from_toml(
            r#"
            exclude = ["drafts/**"]
            [chunk]
            strategy = "fixed"
            max_tokens = 256
            overlap_tokens = 32
            semantic_threshold = 1.5
            [search]
            mode = "bm25"
            rrf_k = 20
            expand = "merge"
            window = 2
            merge_share = 0.75
            "#,
        );
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        let c = loaded.config;
        assert_eq!(c.chunk.strategy, ChunkStrategy::Fixed);
        assert_eq!(c.chunk.max_tokens, 256);
        assert_eq!(c.chunk.overlap_tokens, 32);
        assert_eq!(c.chunk.semantic_threshold, 1.5);
        assert_eq!(c.search.mode, SearchMode::Bm25);
        assert_eq!(c.search.rrf_k, 20.0);
        assert_eq!(c.search.expand, Expand::Merge);
        assert_eq!(c.search.window, 2);
        assert_eq!(c.search.merge_share, 0.75);
        assert_eq!(c.walk.exclude, vec!["drafts/**".to_string()]);
    }

    #[test]
    fn bad_values_name_their_key_and_fall_back_to_the_default() {
        let loaded = Config::from_toml(
            r#"
            max_file_bytes = "big"
            [chunk]
            max_tokens = 3
            strategy = "paragraphs"
            [search]
            mode = "fuzzy"
            bm25_weight = -1.0
            limit = 5
            expand = "sideways"
            merge_share = 0.0
            "#,
        );
        let mut k = keys(&loaded);
        k.sort();
        assert_eq!(
            k,
            [
                "chunk.max_tokens",
                "chunk.strategy",
                "max_file_bytes",
                "search.bm25_weight",
                "search.expand",
                "search.merge_share",
                "search.mode"
            ]
        );
        let d = Config::default();
        assert_eq!(loaded.config.chunk.max_tokens, d.chunk.max_tokens);
        assert_eq!(loaded.config.search.mode, d.search.mode);
        assert_eq!(loaded.config.walk.max_file_bytes, d.walk.max_file_bytes);
        // A good value next to bad ones is still taken.
        assert_eq!(loaded.config.search.limit, 5);
        let shown = loaded.problems.iter().find(|p| p.key == "search.mode").unwrap().to_string();
        assert!(shown.contains("search.mode") && shown.contains("fuzzy"), "{shown}");
    }

    #[test]
    fn unknown_keys_are_reported() {
        let loaded = Config::from_toml("[chunk]\nmax_token = 200\n[colour]\nred = 1\n");
        let k = keys(&loaded);
        assert!(k.contains(&"chunk.max_token"), "{k:?}");
        assert!(k.contains(&"colour"), "{k:?}");
    }

    #[test]
    fn broken_toml_is_a_problem_not_a_failure() {
        let loaded = Config::from_toml("[chunk\nmax_tokens = ");
        assert_eq!(keys(&loaded), [CONFIG_FILE]);
        assert_eq!(loaded.config, Config::default());
    }

    #[test]
    fn bad_template_and_glob_are_rejected() {
        let loaded = Config::from_toml("include = [\"a/[\"]\n[context]\nheader_template = \"Doc {name}\"\n");
        let mut k = keys(&loaded);
        k.sort();
        assert_eq!(k, ["context.header_template", "include"]);
    }

    #[test]
    fn overlap_must_stay_below_half_the_budget() {
        let loaded = Config::from_toml("[chunk]\nmax_tokens = 100\noverlap_tokens = 60\n");
        assert_eq!(keys(&loaded), ["chunk.overlap_tokens"]);
        assert_eq!(loaded.config.chunk.max_tokens, 100);
    }

    #[test]
    fn semantic_strategy_and_its_threshold_are_read() {
        let loaded = Config::from_toml("[chunk]\nstrategy = \"semantic\"\nsemantic_threshold = 2.5\n");
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.config.chunk.strategy, ChunkStrategy::Semantic);
        assert_eq!(loaded.config.chunk.semantic_threshold, 2.5);
        let loaded = Config::from_toml("[chunk]\nsemantic_threshold = -1\n");
        assert_eq!(keys(&loaded), ["chunk.semantic_threshold"]);
        assert_eq!(loaded.config.chunk.semantic_threshold, Config::default().chunk.semantic_threshold);
    }

    #[test]
    fn json_settings_use_the_same_keys() {
        let loaded = Config::from_json(serde_json::json!({
            "search": {"mode": "vector", "limit": "ten"},
            "embedding": {"provider": "static"}
        }));
        assert_eq!(keys(&loaded), ["search.limit"]);
        assert_eq!(loaded.config.search.mode, SearchMode::Vector);
    }

    #[test]
    fn unknown_provider_is_reported() {
        let loaded = Config::from_toml("[embedding]\nprovider = \"magic\"\nmodel_path = \"/m\"\n");
        assert_eq!(keys(&loaded), ["embedding.provider"]);
        // The path was meant for another provider: the built-in model is used, not that path.
        assert_eq!(loaded.config.embedding, EmbeddingConfig::Static { model_path: None });
    }

    #[test]
    fn transformer_provider_takes_its_settings_or_says_how_to_get_it() {
        let loaded = Config::from_toml(
            "[embedding]\nprovider = \"transformer\"\nmodel_path = \"/models/minilm\"\nbatch_size = 8\n",
        );
        if TRANSFORMER_BUILT {
            assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
            assert_eq!(
                loaded.config.embedding,
                EmbeddingConfig::Transformer {
                    model_path: PathBuf::from("/models/minilm"),
                    batch_size: Some(8),
                    max_tokens: None,
                }
            );
        } else {
            assert_eq!(keys(&loaded), ["embedding.provider"]);
            let message = &loaded.problems[0].message;
            assert!(message.contains("--features transformer"), "{message}");
            assert_eq!(loaded.config.embedding, EmbeddingConfig::Static { model_path: None });
        }
    }

    #[test]
    fn transformer_settings_are_checked() {
        let loaded =
            Config::from_toml("[embedding]\nprovider = \"transformer\"\nmax_tokens = 2\nbatch_size = 0\n");
        let mut k = keys(&loaded);
        k.sort();
        let missing = if TRANSFORMER_BUILT { "embedding.model_path" } else { "embedding.provider" };
        let mut expected = vec!["embedding.batch_size", "embedding.max_tokens", missing];
        expected.sort();
        assert_eq!(k, expected);
        assert_eq!(loaded.config.embedding, EmbeddingConfig::Static { model_path: None });
        // Settings of the transformer are not silently taken by the static model.
        let loaded = Config::from_toml("[embedding]\nmax_tokens = 128\n");
        assert_eq!(keys(&loaded), ["embedding.max_tokens"]);
    }

    #[test]
    fn an_openai_compatible_embedding_server_is_configured() {
        let loaded = Config::from_toml(
            "[embedding]\nprovider = \"openai\"\nmodel = \"nomic-embed-text\"\n\
             base_url = \"http://localhost:11434/v1\"\ndimensions = 768\nbatch_size = 16\n\
             timeout_secs = 5\nmax_retries = 1\napi_key_env = \"PATH\"\n",
        );
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        let EmbeddingConfig::OpenAi(c) = loaded.config.embedding else {
            panic!("{:?}", loaded.config.embedding)
        };
        assert_eq!(
            c,
            OpenAiEmbeddingConfig {
                model: "nomic-embed-text".into(),
                base_url: "http://localhost:11434/v1".into(),
                api_key_env: Some("PATH".into()),
                dimensions: Some(768),
                batch_size: 16,
                timeout_secs: 5,
                max_retries: 1,
            }
        );
        let loaded = Config::from_toml("[embedding]\nprovider = \"openai\"\nmodel = \"m\"\n");
        assert_eq!(loaded.config.embedding, EmbeddingConfig::OpenAi(OpenAiEmbeddingConfig::new("m")));
    }

    #[test]
    fn openai_settings_name_their_problems() {
        let loaded = Config::from_toml("[embedding]\nprovider = \"openai\"\n");
        assert_eq!(keys(&loaded), ["embedding.model"]);
        assert_eq!(loaded.config.embedding, Config::default().embedding, "the static model stands in");

        let loaded = Config::from_toml(
            "[embedding]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"localhost:1234\"\n\
             batch_size = 0\napi_key_env = \"SITUATE_TEST_SURELY_UNSET_KEY\"\ndimensions = 0\n",
        );
        let mut k = keys(&loaded);
        k.sort();
        assert_eq!(
            k,
            ["embedding.api_key_env", "embedding.base_url", "embedding.batch_size", "embedding.dimensions"]
        );
        let unset = loaded.problems.iter().find(|p| p.key == "embedding.api_key_env").unwrap();
        assert!(unset.message.contains("SITUATE_TEST_SURELY_UNSET_KEY is not set"), "{unset}");
        let EmbeddingConfig::OpenAi(c) = loaded.config.embedding else { panic!() };
        assert_eq!(
            (c.base_url.as_str(), c.batch_size, c.dimensions),
            (crate::providers::openai::DEFAULT_BASE_URL, 64, None)
        );
        assert_eq!(
            c.api_key_env.as_deref(),
            Some("SITUATE_TEST_SURELY_UNSET_KEY"),
            "kept, so the error names it"
        );
    }

    #[test]
    fn editor_settings_override_the_file_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "exclude = [\"drafts/**\"]\n[search]\nlimit = 7\nmode = \"bm25\"\n[chunk]\nmax_tokens = 300\n",
        )
        .unwrap();
        let overrides = serde_json::json!({
            "search": { "limit": 20, "mode": null },
            "chunk": { "overlap_tokens": null },
            "context": { "header_template": null },
        });
        let loaded = Config::load_layered(dir.path(), None, Some(&overrides));
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        let c = loaded.config;
        assert_eq!(c.search.limit, 20);
        assert_eq!(c.search.mode, SearchMode::Bm25, "null keeps the file's value");
        assert_eq!(c.chunk.max_tokens, 300);
        assert_eq!(c.walk.exclude, ["drafts/**"]);
        assert_eq!(c.context.header_template, crate::context::DEFAULT_HEADER_TEMPLATE);

        let bad = serde_json::json!({ "search": { "limit": "many" }, "colour": "blue" });
        let loaded = Config::load_layered(dir.path(), None, Some(&bad));
        let keys: Vec<&str> = loaded.problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["colour", "search.limit"]);
        assert_eq!(loaded.config.search.limit, Config::default().search.limit);

        let lua_empty = serde_json::json!({ "search": [], "exclude": [] });
        let loaded = Config::load_layered(dir.path(), None, Some(&lua_empty));
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.config.search.limit, 7);
        assert!(loaded.config.walk.exclude.is_empty(), "an empty list still clears a list");
        assert!(Config::load_layered(dir.path(), None, Some(&serde_json::json!([]))).problems.is_empty());

        let loaded = Config::load_layered(dir.path(), None, Some(&serde_json::json!([1])));
        assert_eq!(loaded.problems[0].key, "(editor settings)");
        assert_eq!(loaded.config.search.limit, 7);
        assert_eq!(Config::load_layered(dir.path(), None, None).config.search.limit, 7);
    }
}
