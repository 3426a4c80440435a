//! Configuration in two stages: a raw, all-optional form read from `situate.toml` (or, later,
//! from an editor's settings) and the validated [`Config`] the engine runs on.
//!
//! A bad value never stops anything: it is reported as a [`ConfigProblem`] naming the key,
//! and the default is used in its place. Unknown keys are reported the same way.

mod layer;
mod raw;
mod validate;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::chunk::ChunkConfig;
use crate::context::ContextConfig;
use crate::providers::EmbeddingConfig;
use crate::search::SearchConfig;
use crate::snippets::SnippetConfig;
use crate::team::TeamConfig;
use crate::workspace::WalkConfig;
use layer::merge_json;
use raw::RawConfig;
use validate::Validator;

/// The file name of the per-workspace configuration.
pub const CONFIG_FILE: &str = "situate.toml";

/// Everything the engine needs to know, validated.
#[derive(Debug, Clone, PartialEq)]
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
    /// The team cache; `None` unless `[team] url` (or `SITUATE_TEAM_URL`) names one.
    pub team: Option<TeamConfig>,
}

impl Default for Config {
    /// The default embedding model, and the fusion settings chosen for it.
    fn default() -> Self {
        let mut config = Config {
            index_dir: None,
            walk: WalkConfig::default(),
            chunk: ChunkConfig::default(),
            context: ContextConfig::default(),
            search: SearchConfig::default(),
            embedding: EmbeddingConfig::default(),
            snippets: None,
            team: None,
        };
        config.set_embedding(EmbeddingConfig::default());
        config
    }
}

impl Config {
    /// Uses `embedding`, with the fusion settings chosen for its model.
    pub fn set_embedding(&mut self, embedding: EmbeddingConfig) {
        self.search.vector_weight = embedding.default_vector_weight();
        self.search.bm25_coverage = embedding.default_bm25_coverage();
        self.embedding = embedding;
    }
}

/// A problem with one configuration key (the default was used instead), or with the
/// settings file as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// Dotted key, e.g. `chunk.max_tokens`; for a problem with the file as a whole, the file
    /// (`path:LINE:COLUMN` when the problem has a place in it).
    pub key: String,
    pub message: String,
    /// What was used in place of what the key or file says.
    pub effect: Effect,
}

/// What a configuration problem left in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The key's default.
    DefaultUsed,
    /// Nothing: the key means nothing here (unknown, or read only by another provider).
    Ignored,
    /// The value without its bad part (a glob that does not parse, in a list of globs).
    PartLeftOut,
    /// Nothing of the file: it could not be read (missing, a folder, no permission).
    Unreadable,
    /// Nothing of the file: it is not valid TOML.
    Unparsable,
}

impl Effect {
    /// What was done about the problem, in a few words for the end of its message.
    pub fn note(self) -> &'static str {
        match self {
            Effect::DefaultUsed => "using the default",
            Effect::Ignored => "ignored",
            Effect::PartLeftOut => "left out; the rest of the value applies",
            Effect::Unreadable | Effect::Unparsable => "none of its settings are used",
        }
    }

    /// Whether the settings file as a whole went unused.
    pub fn file_unused(self) -> bool {
        matches!(self, Effect::Unreadable | Effect::Unparsable)
    }
}

impl ConfigProblem {
    /// A problem with the value of `key`, whose default was used.
    pub fn key(key: &str, message: impl Into<String>) -> ConfigProblem {
        ConfigProblem { key: key.to_string(), message: message.into(), effect: Effect::DefaultUsed }
    }

    /// A key that is read by nothing (unknown, or meant for another provider).
    pub fn ignored(key: &str, message: impl Into<String>) -> ConfigProblem {
        ConfigProblem { key: key.to_string(), message: message.into(), effect: Effect::Ignored }
    }
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.effect.file_unused() {
            write!(f, "{}: {}", self.key, self.message)
        } else {
            write!(f, "config key `{}`: {}", self.key, self.message)
        }
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

impl LoadedConfig {
    /// The problem that kept the settings file from being used at all, if any: these
    /// settings are then the defaults (with any editor settings), not the user's file.
    pub fn unusable(&self) -> Option<&ConfigProblem> {
        self.problems.iter().find(|p| p.effect.file_unused())
    }
}

/// The settings file `file` could not be read.
fn unreadable(file: &Path, e: &std::io::Error) -> ConfigProblem {
    ConfigProblem {
        key: file.display().to_string(),
        message: format!("cannot read this settings file: {e}"),
        effect: Effect::Unreadable,
    }
}

/// The settings file `file` (its text `text`) is not valid TOML: the problem names the line
/// and column where the parser stopped.
fn unparsable(file: &str, text: &str, e: &toml::de::Error) -> ConfigProblem {
    let key = match e.span() {
        Some(span) => {
            let before = text.get(..span.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            format!("{file}:{line}:{column}")
        }
        None => file.to_string(),
    };
    ConfigProblem {
        key,
        message: format!("not valid TOML: {}", e.message().trim_end()),
        effect: Effect::Unparsable,
    }
}

impl Config {
    /// Reads `situate.toml` from `root` if it exists. A missing file is not a problem; an
    /// unreadable or unparsable one is reported ([`LoadedConfig::unusable`]) and the
    /// defaults are used.
    pub fn load(root: &Path) -> LoadedConfig {
        let path = root.join(CONFIG_FILE);
        if !path.exists() {
            // Validated all the same: the environment may name a team cache.
            return Config::from_toml("");
        }
        Config::load_file(&path)
    }

    /// Reads a settings file; a missing or unreadable one is reported
    /// ([`LoadedConfig::unusable`]) and the defaults used.
    pub fn load_file(path: &Path) -> LoadedConfig {
        let mut loaded = match std::fs::read_to_string(path) {
            Ok(text) => Config::from_toml_in(&path.display().to_string(), &text),
            Err(e) => {
                LoadedConfig { config: Config::default(), problems: vec![unreadable(path, &e)], source: None }
            }
        };
        loaded.source = Some(path.to_path_buf());
        loaded
    }

    /// Validates a TOML document.
    pub fn from_toml(text: &str) -> LoadedConfig {
        Config::from_toml_in(CONFIG_FILE, text)
    }

    /// Validates a TOML document read from `file` (which problems name).
    fn from_toml_in(file: &str, text: &str) -> LoadedConfig {
        match toml::Deserializer::parse(text) {
            Ok(de) => Config::from_deserializer(de),
            Err(e) => LoadedConfig {
                config: Config::default(),
                problems: vec![unparsable(file, text, &e)],
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
                Config::from_toml("")
            };
        };
        let file = (config_file.is_some() || path.exists()).then(|| std::fs::read_to_string(&path));
        let mut loaded = match file {
            None => Config::from_layers(None, overrides),
            Some(Ok(text)) => Config::from_layers_in(&path.display().to_string(), Some(&text), overrides),
            Some(Err(e)) => {
                let mut loaded = Config::from_layers(None, overrides);
                loaded.problems.insert(0, unreadable(&path, &e));
                loaded
            }
        };
        loaded.source = path.exists().then_some(path);
        loaded
    }

    /// [`Config::load_layered`] without the file system: `file` is the settings file's text
    /// (`None` when there is none, an error message when it could not be read) and
    /// `overrides` the editor's settings laid over it.
    pub fn from_layers(file: Option<Result<&str, &str>>, overrides: &serde_json::Value) -> LoadedConfig {
        match file {
            None => Config::from_layers_in(CONFIG_FILE, None, overrides),
            Some(Ok(text)) => Config::from_layers_in(CONFIG_FILE, Some(text), overrides),
            Some(Err(e)) => {
                let mut loaded = Config::from_layers_in(CONFIG_FILE, None, overrides);
                let problem = ConfigProblem {
                    key: CONFIG_FILE.to_string(),
                    message: e.to_string(),
                    effect: Effect::Unreadable,
                };
                loaded.problems.insert(0, problem);
                loaded
            }
        }
    }

    /// [`Config::from_layers`] for the text of `file` (which problems name).
    fn from_layers_in(file: &str, text: Option<&str>, overrides: &serde_json::Value) -> LoadedConfig {
        let mut problems = Vec::new();
        let mut base = serde_json::Value::Object(serde_json::Map::new());
        if let Some(text) = text {
            match toml::from_str::<serde_json::Value>(text) {
                Ok(value) => base = value,
                Err(e) => problems.push(unparsable(file, text, &e)),
            }
        }
        // An empty list stands for an empty table (editors that cannot tell them apart).
        let empty = serde_json::Value::Object(serde_json::Map::new());
        let overrides = if overrides.as_array().is_some_and(Vec::is_empty) { &empty } else { overrides };
        if !overrides.is_object() {
            problems.push(ConfigProblem::key(
                "(editor settings)",
                format!("must be an object of situate.toml keys, got {overrides}"),
            ));
        } else {
            merge_json(&mut base, overrides);
        }
        let mut loaded = Config::from_json(base);
        // Editors name their settings after these keys (`situate.search.mode` in VS Code):
        // a bad value the editor set is said to be there.
        for problem in &mut loaded.problems {
            if overrides.is_object() && layer::sets_key(overrides, &problem.key) {
                problem.message.push_str(" (set in the editor's settings)");
            }
        }
        problems.append(&mut loaded.problems);
        loaded.problems = problems;
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
        let raw: Result<RawConfig, _> = serde_ignored::deserialize(de, |path| unknown.push(key_of(&path)));
        let mut v = Validator { problems: Vec::new() };
        for key in unknown {
            v.problems.push(ConfigProblem::ignored(&key, "unknown key"));
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
}

/// A settings key as written (`team.lease`): serde_ignored's form also names the layers
/// that only its types have (`team.?.lease` for an optional table).
fn key_of(path: &serde_ignored::Path) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => join_key(key_of(parent), &index.to_string()),
        Path::Map { parent, key } => join_key(key_of(parent), key),
        Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => {
            key_of(parent)
        }
    }
}

fn join_key(parent: String, key: &str) -> String {
    if parent.is_empty() { key.to_string() } else { format!("{parent}.{key}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::ChunkStrategy;
    use crate::providers::TRANSFORMER_BUILT;
    use crate::providers::openai::OpenAiEmbeddingConfig;
    use crate::search::{Expand, Fusion, SearchMode};

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
            fusion = "rrf"
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
        assert_eq!(c.search.fusion, Fusion::Rrf);
        assert_eq!(c.search.rrf_k, 20.0);
        assert_eq!(c.search.expand, Expand::Merge);
        assert_eq!(c.search.window, 2);
        assert_eq!(c.search.merge_share, 0.75);
        assert_eq!(c.walk.exclude, vec!["drafts/**".to_string()]);
    }

    #[test]
    fn symbolic_links_are_followed_only_when_asked() {
        assert!(!Config::default().walk.follow_symlinks);
        let on = Config::from_toml("follow_symlinks = true\n");
        assert!(on.problems.is_empty(), "{:?}", on.problems);
        assert!(on.config.walk.follow_symlinks);
        let from_editor = Config::from_json(serde_json::json!({ "follow_symlinks": true }));
        assert!(from_editor.config.walk.follow_symlinks);
        let bad = Config::from_toml("follow_symlinks = \"yes\"\n");
        assert_eq!(keys(&bad), ["follow_symlinks"]);
        assert!(!bad.config.walk.follow_symlinks);
    }

    #[test]
    fn the_encoding_of_files_not_in_utf8_is_guessed_unless_named() {
        use crate::workspace::Legacy;
        assert_eq!(Config::default().walk.encoding, Legacy::Guessed);
        let named = Config::from_toml("encoding = \"Shift_JIS\"\n");
        assert!(named.problems.is_empty(), "{:?}", named.problems);
        assert_eq!(named.config.walk.encoding.name(), "Shift_JIS");
        let from_editor = Config::from_json(serde_json::json!({ "encoding": "gb2312" }));
        assert_eq!(from_editor.config.walk.encoding.name(), "GBK");
        assert_eq!(Config::from_toml("encoding = \"auto\"\n").config.walk.encoding, Legacy::Guessed);
        for bad in ["encoding = \"utf-16\"\n", "encoding = \"klingon\"\n", "encoding = 936\n"] {
            let loaded = Config::from_toml(bad);
            assert_eq!(keys(&loaded), ["encoding"], "{bad}");
            assert_eq!(loaded.config.walk.encoding, Legacy::Guessed, "{bad}");
        }
        let shown = Config::from_toml("encoding = \"klingon\"\n").problems[0].to_string();
        assert!(shown.contains("`gbk`") && shown.contains("klingon"), "{shown}");
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
            fusion = "average"
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
                "search.fusion",
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
    fn keys_left_unused_are_said_to_be_ignored_not_replaced_by_a_default() {
        let loaded = Config::from_toml("colour = 1\n[embedding]\nprovider = \"static\"\nbatch_size = 8\n");
        assert_eq!(keys(&loaded), ["colour", "embedding.batch_size"]);
        for problem in &loaded.problems {
            let shown = format!("{problem} ({})", problem.effect.note());
            assert_eq!(shown.matches("ignored").count(), 1, "{shown}");
            assert!(!shown.contains("default"), "{shown}");
        }
    }

    #[test]
    fn a_remote_models_keys_beside_a_local_provider_are_said_to_be_ignored() {
        let loaded = Config::from_toml(
            "[embedding]\nmodel = \"text-embedding-3-small\"\nbase_url = \"http://127.0.0.1:8080/v1\"\ntimeout_secs = 5\n",
        );
        assert_eq!(keys(&loaded), ["embedding.model", "embedding.base_url", "embedding.timeout_secs"]);
        assert!(loaded.problems.iter().all(|p| p.to_string().contains("only used by provider `openai`")));
        let remote = Config::from_toml(
            "[embedding]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:8080/v1\"\ntimeout_secs = 5\n",
        );
        assert!(remote.problems.is_empty(), "{:?}", remote.problems);
    }

    #[test]
    fn unknown_keys_are_reported() {
        let loaded = Config::from_toml("[chunk]\nmax_token = 200\n[colour]\nred = 1\n");
        let k = keys(&loaded);
        assert!(k.contains(&"chunk.max_token"), "{k:?}");
        assert!(k.contains(&"colour"), "{k:?}");
        // Tables that are off unless present are named as written, too.
        let loaded =
            Config::from_toml("[team]\nurl = \"postgres://h/d\"\nlease = 10\n[snippets]\nmodle = \"x\"\n");
        let k = keys(&loaded);
        assert!(k.contains(&"team.lease") && k.contains(&"snippets.modle"), "{k:?}");
    }

    #[test]
    fn broken_toml_is_a_problem_not_a_failure() {
        let loaded = Config::from_toml("[chunk\nmax_tokens = ");
        assert_eq!(keys(&loaded), ["situate.toml:1:7"]);
        assert_eq!(loaded.config, Config::default());
        assert_eq!(loaded.unusable().map(|p| p.effect), Some(Effect::Unparsable));
    }

    #[test]
    fn a_file_that_cannot_be_parsed_is_named_with_the_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.toml");
        std::fs::write(&path, "exclude = [\"private/**\"]\n[search]\nmode = bm25\n").unwrap();
        let file = path.display().to_string();
        for loaded in [
            Config::load_file(&path),
            Config::load_layered(dir.path(), Some(&path), Some(&serde_json::json!({"search": {"limit": 3}}))),
        ] {
            let problem = loaded.unusable().unwrap_or_else(|| panic!("{:?}", loaded.problems));
            let shown = problem.to_string();
            assert!(shown.starts_with(&format!("{file}:3:8: not valid TOML")), "{shown}");
            assert!(!shown.contains("config key"), "{shown}");
        }
        let missing = dir.path().join("none.toml");
        let loaded = Config::load_file(&missing);
        let problem = loaded.unusable().unwrap();
        assert_eq!(problem.effect, Effect::Unreadable);
        assert!(
            problem
                .to_string()
                .starts_with(&format!("{}: cannot read this settings file", missing.display())),
            "{problem}"
        );
        assert!(Config::from_toml("[search]\nmode = \"bm25\"\n").unusable().is_none());
    }

    #[test]
    fn bad_template_and_glob_are_rejected() {
        let loaded = Config::from_toml("include = [\"a/[\"]\n[context]\nheader_template = \"Doc {name}\"\n");
        let mut k = keys(&loaded);
        k.sort();
        assert_eq!(k, ["context.header_template", "include"]);
    }

    #[test]
    fn a_bad_glob_is_left_out_alone() {
        let loaded = Config::from_toml("exclude = [\"kitchen/**\", \"drafts/{a,b\"]\ninclude = [\"[\"]\n");
        assert_eq!(keys(&loaded), ["include", "exclude"]);
        assert!(loaded.problems[1].message.contains("drafts/{a,b"), "{:?}", loaded.problems);
        assert_eq!(loaded.problems[1].effect, Effect::PartLeftOut);
        let walk = &loaded.config.walk;
        assert!(!crate::workspace::is_candidate("kitchen/bread.md", walk), "the good exclude still applies");
        // A list none of whose patterns parse is the default (here: every file), and says so.
        assert_eq!(loaded.problems[0].effect, Effect::DefaultUsed);
        assert!(walk.include.is_empty() && crate::workspace::is_candidate("notes/a.md", walk));
        // The values kept read back without a problem.
        let kept = Config::from_json(serde_json::json!({ "include": walk.include, "exclude": walk.exclude }));
        assert!(kept.problems.is_empty(), "{:?}", kept.problems);
    }

    #[test]
    fn overlap_must_stay_below_half_the_budget() {
        let loaded = Config::from_toml("[chunk]\nmax_tokens = 100\noverlap_tokens = 60\n");
        assert_eq!(keys(&loaded), ["chunk.overlap_tokens"]);
        assert_eq!(loaded.config.chunk.max_tokens, 100);
    }

    #[test]
    fn the_default_overlap_stays_below_half_a_small_budget() {
        // A budget set alone, or with an overlap that is refused, must not leave the default
        // overlap (40 tokens) at or over half of it.
        for text in ["[chunk]\nmax_tokens = 64\n", "[chunk]\nmax_tokens = 16\noverlap_tokens = 9\n"] {
            let chunk = Config::from_toml(text).config.chunk;
            assert!(chunk.overlap_tokens < chunk.max_tokens / 2, "{text}: {chunk:?}");
        }
        let chunk = Config::from_toml("[chunk]\nmax_tokens = 64\n").config.chunk;
        assert_eq!(chunk.overlap_tokens, 31);
        let layered = Config::from_layers(None, &serde_json::json!({ "chunk": { "max_tokens": 80 } }));
        assert_eq!(layered.config.chunk.overlap_tokens, 39);
        assert_eq!(Config::from_toml("[chunk]\nmax_tokens = 200\n").config.chunk.overlap_tokens, 40);
    }

    #[test]
    fn a_bad_value_the_editor_set_is_said_to_be_in_the_editors_settings() {
        let file = "[search]\nmode = \"fuzzy\"\n[chunk]\nmax_tokens = 3\n";
        let editor = serde_json::json!({ "search": { "limit": 0 }, "chunk": null, "exclude": 5 });
        let loaded = Config::from_layers(Some(Ok(file)), &editor);
        let shown = |key: &str| loaded.problems.iter().find(|p| p.key == key).unwrap().to_string();
        assert!(
            shown("search.limit").contains("(set in the editor's settings)"),
            "{}",
            shown("search.limit")
        );
        assert!(shown("exclude").contains("(set in the editor's settings)"), "{}", shown("exclude"));
        // The file's own bad values are the file's.
        assert!(!shown("search.mode").contains("editor"), "{}", shown("search.mode"));
        assert!(!shown("chunk.max_tokens").contains("editor"), "{}", shown("chunk.max_tokens"));
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
        assert_eq!(loaded.config.embedding, EmbeddingConfig::default());
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
            assert_eq!(loaded.config.embedding, EmbeddingConfig::default());
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
        assert_eq!(loaded.config.embedding, EmbeddingConfig::default());
        // Settings of the transformer are not silently taken by the static model.
        let loaded = Config::from_toml("[embedding]\nprovider = \"static\"\nmax_tokens = 128\n");
        assert_eq!(keys(&loaded), ["embedding.max_tokens"]);
    }

    #[test]
    fn the_e5_provider_is_the_default_when_the_binary_carries_it() {
        let loaded = Config::from_toml("[embedding]\nmax_tokens = 256\n");
        if crate::providers::has_builtin_e5() {
            assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
            assert_eq!(
                loaded.config.embedding,
                EmbeddingConfig::E5 { model_path: None, max_tokens: Some(256) }
            );
            assert_eq!(loaded.config.search.vector_weight, crate::providers::e5_model::VECTOR_WEIGHT);
            assert_eq!(loaded.config.search.bm25_coverage, crate::providers::e5_model::BM25_COVERAGE);
            // Past the model's 512 positions: said, and clamped.
            let loaded =
                Config::from_toml("[embedding]\nprovider = \"e5\"\nmax_tokens = 2048\nbatch_size = 4\n");
            assert_eq!(keys(&loaded), ["embedding.batch_size", "embedding.max_tokens"]);
            assert_eq!(
                loaded.config.embedding,
                EmbeddingConfig::E5 { model_path: None, max_tokens: Some(512) }
            );
        } else {
            assert_eq!(loaded.config.embedding, EmbeddingConfig::Static { model_path: None });
            let loaded = Config::from_toml("[embedding]\nprovider = \"e5\"\n");
            assert_eq!(keys(&loaded), ["embedding.provider"]);
        }
        // A folder (a static model named before e5 was the default) is not taken for e5's file.
        let dir = tempfile::tempdir().unwrap();
        let loaded =
            Config::from_toml(&format!("[embedding]\nprovider = \"e5\"\nmodel_path = {:?}\n", dir.path()));
        assert_eq!(keys(&loaded)[0], "embedding.model_path");
        assert!(loaded.problems[0].message.contains("provider = \"static\""), "{:?}", loaded.problems);
        // The static model keeps its own weight unless one is set.
        let loaded = Config::from_toml("[embedding]\nprovider = \"static\"\n");
        assert_eq!(loaded.config.search.vector_weight, crate::providers::static_model::VECTOR_WEIGHT);
        assert_eq!(loaded.config.search.bm25_coverage, 0.0);
        let loaded = Config::from_toml(
            "[embedding]\nprovider = \"static\"\n[search]\nvector_weight = 0.9\nbm25_coverage = 1\n",
        );
        assert_eq!((loaded.config.search.vector_weight, loaded.config.search.bm25_coverage), (0.9, 1.0));
        let loaded = Config::from_toml("[search]\nbm25_coverage = -1\n");
        assert_eq!(keys(&loaded), ["search.bm25_coverage"]);
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
        assert_eq!(loaded.config.embedding, Config::default().embedding, "the default model stands in");

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

    #[test]
    fn a_team_cache_is_read_and_checked_without_showing_its_password() {
        let loaded = Config::from_toml(
            "[team]\nurl = \"postgres://u@db.example/docs\"\npush = false\nlease_secs = 0\n",
        );
        assert_eq!(keys(&loaded), ["team.lease_secs"]);
        let team = loaded.config.team.unwrap();
        assert_eq!((team.push, team.lease_secs, team.timeout_secs), (false, 120, 5));

        let loaded = Config::from_toml("[team]\nurl = \"postgres://u:hunter22@db/docs?sslmode=sometimes\"\n");
        assert_eq!(keys(&loaded), ["team.url"]);
        assert!(loaded.config.team.is_none());
        assert!(!loaded.problems[0].message.contains("hunter22"), "{}", loaded.problems[0]);

        let loaded = Config::from_toml("[team]\nurl = \"postgres://u@db/docs\"\nenabled = false\n");
        assert!(loaded.problems.is_empty() && loaded.config.team.is_none());
    }
}
