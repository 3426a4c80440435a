//! Comparing settings in one run: variants of the workspace's configuration, each a list of
//! `key=value` overrides, evaluated on the same queries.
//!
//! Variants come from axes (`mode=bm25,vector,hybrid`), whose cartesian product makes the
//! rows, and from explicit bundles (`mode=hybrid expand=window`), which form one more axis.
//! A key is any dotted key of `situate.toml` (`chunk.max_tokens`, `search.rrf_k`) or a
//! shorthand: `mode`, `expand`, `window`, `merge_share` (the `search.` keys) and
//! `header=on|off` (off: no header in the embedded text, and no title, headings or path
//! fields for BM25).
//!
//! A variant that changes what is indexed (files, chunking, the header, the model) is
//! evaluated on its own index, built in a temporary folder that is removed afterwards; the
//! workspace's own index only serves variants that index the same way it does.

use crate::config::Config;
use crate::context::ContextConfig;
use crate::engine::{Engine, EngineError, OpenMode};
use crate::eval::{self, EvalError, EvalQuery, EvalReport};
use crate::providers::EmbeddingConfig;
use crate::workspace::WalkConfig;

/// One setting of a variant, as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    pub key: String,
    pub value: String,
}

impl std::fmt::Display for Override {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// One row of a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub label: String,
    pub overrides: Vec<Override>,
}

/// The alternatives of one axis; each alternative is a bundle of settings.
pub type Axis = Vec<Vec<Override>>;

/// A comparison failure.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{0}")]
    Syntax(String),
    #[error("variant `{variant}`: {problems}")]
    Setting { variant: String, problems: String },
    #[error("cannot make a temporary index folder: {0}")]
    TempDir(std::io::Error),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Eval(#[from] EvalError),
}

fn one_setting(text: &str) -> Result<(String, String), CompareError> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
            Ok((k.trim().to_string(), v.trim().to_string()))
        }
        _ => Err(CompareError::Syntax(format!("`{text}` is not KEY=VALUE"))),
    }
}

/// `KEY=V1,V2,…`: one axis, one alternative per value.
pub fn parse_axis(arg: &str) -> Result<Axis, CompareError> {
    let (key, values) = one_setting(arg)?;
    let values: Vec<&str> = values.split(',').map(str::trim).collect();
    if values.iter().any(|v| v.is_empty()) {
        return Err(CompareError::Syntax(format!("`{arg}` has an empty value")));
    }
    Ok(values.into_iter().map(|v| vec![Override { key: key.clone(), value: v.to_string() }]).collect())
}

/// `KEY=V KEY=V …`: one variant with several settings.
pub fn parse_variant(arg: &str) -> Result<Vec<Override>, CompareError> {
    let settings: Vec<Override> = arg
        .split_whitespace()
        .map(|s| one_setting(s).map(|(key, value)| Override { key, value }))
        .collect::<Result<_, _>>()?;
    if settings.is_empty() {
        return Err(CompareError::Syntax("an empty variant".to_string()));
    }
    Ok(settings)
}

/// The cartesian product of the axes, the first axis varying slowest. Each variant is
/// labelled with its settings.
pub fn variants(axes: &[Axis]) -> Vec<Variant> {
    let mut rows: Vec<Vec<Override>> = vec![Vec::new()];
    for axis in axes {
        rows = rows
            .into_iter()
            .flat_map(|row| {
                axis.iter().map(move |alternative| {
                    let mut r = row.clone();
                    r.extend(alternative.iter().cloned());
                    r
                })
            })
            .collect();
    }
    rows.into_iter()
        .filter(|r| !r.is_empty())
        .map(|overrides| Variant {
            label: overrides.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "),
            overrides,
        })
        .collect()
}

/// Whether a key is the search mode (its shorthand or its full name).
pub fn is_mode_key(key: &str) -> bool {
    key == "mode" || key == "search.mode"
}

/// The dotted `situate.toml` keys and values an override stands for.
fn expand_shorthand(o: &Override) -> Result<Vec<(String, toml::Value)>, CompareError> {
    let full = |k: &str| vec![(format!("search.{k}"), value_of(&o.value))];
    Ok(match o.key.as_str() {
        "mode" | "expand" | "window" | "merge_share" => full(&o.key),
        "header" => match o.value.as_str() {
            "on" => Vec::new(),
            "off" => vec![
                ("context.header_template".to_string(), toml::Value::String(String::new())),
                ("search.title_boost".to_string(), toml::Value::Float(0.0)),
                ("search.headings_boost".to_string(), toml::Value::Float(0.0)),
                ("search.path_boost".to_string(), toml::Value::Float(0.0)),
            ],
            other => return Err(CompareError::Syntax(format!("header={other}: use on or off"))),
        },
        key => vec![(key.to_string(), value_of(&o.value))],
    })
}

/// A value as TOML reads it (`200`, `0.5`, `true`, `"quoted"`), else as a string.
fn value_of(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

fn set(table: &mut toml::Table, key: &str, value: toml::Value) -> Result<(), CompareError> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or(key);
    let mut at = table;
    for part in parts {
        at = at
            .entry(part)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| CompareError::Syntax(format!("`{key}`: `{part}` is not a table")))?;
    }
    at.insert(last.to_string(), value);
    Ok(())
}

/// The configuration of a variant: the base document (`situate.toml` text) with the
/// overrides applied, validated. A problem with an overridden key is an error: a variant
/// that silently fell back to the default would be a row that lies.
pub fn config_for(base_toml: &str, overrides: &[Override]) -> Result<Config, CompareError> {
    let label = overrides.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    // A base document that does not parse was reported when the workspace was opened, and
    // the workspace runs on defaults: so do the variants.
    let mut table: toml::Table = base_toml.parse().unwrap_or_default();
    let mut keys = Vec::new();
    for o in overrides {
        for (key, value) in expand_shorthand(o)? {
            set(&mut table, &key, value)?;
            keys.push(key);
        }
    }
    let text = toml::to_string(&table).map_err(|e| CompareError::Syntax(e.to_string()))?;
    let loaded = Config::from_toml(&text);
    let problems: Vec<String> = loaded
        .problems
        .iter()
        .filter(|p| keys.contains(&p.key) || p.key == "(document)")
        .map(ToString::to_string)
        .collect();
    if !problems.is_empty() {
        return Err(CompareError::Setting { variant: label, problems: problems.join("; ") });
    }
    Ok(loaded.config)
}

/// The settings that decide what an index holds.
#[derive(Debug, Clone, PartialEq)]
struct IndexShape {
    walk: WalkConfig,
    chunk: crate::chunk::ChunkConfig,
    context: ContextConfig,
    embedding: EmbeddingConfig,
}

impl IndexShape {
    fn of(c: &Config) -> IndexShape {
        IndexShape {
            walk: c.walk.clone(),
            chunk: c.chunk.clone(),
            context: c.context.clone(),
            embedding: c.embedding.clone(),
        }
    }
}

/// An index built for variants that index differently from the workspace. The engine is
/// declared first so that it closes before its folder is removed.
struct TemporaryIndex {
    shape: IndexShape,
    engine: Engine,
    _dir: tempfile::TempDir,
}

/// Evaluates each variant on `queries`. `base` is the workspace's engine, opened with the
/// configuration document `base_toml` and already up to date; variants that index the same
/// way search its index, the others get a temporary index each (shared by the variants
/// that index alike). Reports come in the order of `variants`, labelled with theirs.
pub fn compare(
    base: &Engine,
    base_toml: &str,
    variants: &[Variant],
    queries: &[EvalQuery],
) -> Result<Vec<EvalReport>, CompareError> {
    let base_shape = IndexShape::of(base.config());
    let mut built: Vec<TemporaryIndex> = Vec::new();
    let mut reports = Vec::with_capacity(variants.len());
    for v in variants {
        let config = config_for(base_toml, &v.overrides)?;
        let shape = IndexShape::of(&config);
        let view = if shape == base_shape {
            base.view()
        } else if let Some(t) = built.iter().find(|t| t.shape == shape) {
            t.engine.view()
        } else {
            tracing::info!(variant = %v.label, "building a temporary index");
            let dir = tempfile::Builder::new()
                .prefix("situate-compare-")
                .tempdir()
                .map_err(CompareError::TempDir)?;
            let mut own = config.clone();
            own.index_dir = Some(dir.path().to_path_buf());
            let embedder = crate::providers::build(&own.embedding).map_err(EngineError::from)?;
            let mut engine = Engine::open_with(base.root(), own, Vec::new(), embedder, OpenMode::Write)?;
            engine.reconcile(&mut |_| {})?;
            let view = engine.view();
            built.push(TemporaryIndex { shape, engine, _dir: dir });
            view
        };
        let mut report = eval::evaluate(&view, &config.search, queries)?;
        report.label = v.label.clone();
        reports.push(report);
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{Expand, SearchMode};

    fn axes(args: &[&str]) -> Vec<Axis> {
        args.iter().map(|a| parse_axis(a).unwrap()).collect()
    }

    #[test]
    fn axes_multiply_first_axis_slowest() {
        let v = variants(&axes(&["mode=bm25,hybrid", "header=on,off"]));
        let labels: Vec<&str> = v.iter().map(|v| v.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "mode=bm25 header=on",
                "mode=bm25 header=off",
                "mode=hybrid header=on",
                "mode=hybrid header=off"
            ]
        );
    }

    #[test]
    fn explicit_variants_are_one_axis() {
        let bundle = vec![
            parse_variant("mode=bm25 header=off").unwrap(),
            parse_variant("mode=hybrid  expand=window").unwrap(),
        ];
        let v = variants(&[bundle]);
        assert_eq!(v.len(), 2);
        assert_eq!(v[1].label, "mode=hybrid expand=window");
    }

    #[test]
    fn bad_syntax_is_refused() {
        assert!(parse_axis("mode").is_err());
        assert!(parse_axis("mode=").is_err());
        assert!(parse_axis("mode=bm25,").is_err());
        assert!(parse_variant("   ").is_err());
        assert!(parse_variant("mode=bm25 header").is_err());
    }

    #[test]
    fn overrides_apply_over_the_base_document() {
        let base = "exclude = [\"drafts/**\"]\n[search]\nrrf_k = 20\n";
        let o = parse_variant("mode=vector header=off chunk.max_tokens=200 expand=merge merge_share=0.75")
            .unwrap();
        let c = config_for(base, &o).unwrap();
        assert_eq!(c.search.mode, SearchMode::Vector);
        assert_eq!(c.search.expand, Expand::Merge);
        assert_eq!(c.search.merge_share, 0.75);
        assert_eq!(c.search.rrf_k, 20.0);
        assert_eq!(c.search.title_boost, 0.0);
        assert_eq!(c.context.header_template, "");
        assert_eq!(c.chunk.max_tokens, 200);
        assert_eq!(c.walk.exclude, ["drafts/**"]);
        let on = config_for(base, &parse_variant("header=on").unwrap()).unwrap();
        assert_eq!(on.context, Config::default().context);
    }

    #[test]
    fn a_variant_that_would_fall_back_to_a_default_is_an_error() {
        for bad in ["mode=psychic", "chunk.max_token=200", "chunk.max_tokens=3", "header=maybe"] {
            let err = config_for("", &parse_variant(bad).unwrap()).unwrap_err().to_string();
            let key = bad.split('=').next().unwrap();
            assert!(err.contains(key), "{bad}: {err}");
        }
    }
}
