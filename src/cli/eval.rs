//! `situate eval`: retrieval measured on queries with known answers, one configuration or
//! several compared in one table.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{ExpandArg, ModeArg, open, reconcile, render, warn_skips};
use crate::compare::{self, Override};
use crate::config::CONFIG_FILE;
use crate::engine::OpenMode;
use crate::eval;
use crate::search::{Expand, SearchMode};
use crate::wire::EvalReportJson;

/// Measure retrieval on queries with known answers (JSON lines: id, query, kind, gold).
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The query file.
    pub queries: PathBuf,
    /// The workspace folder the gold paths are relative to.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Evaluate one mode only (default: all three).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Widen hits before scoring them; a hit then counts when its expanded lines overlap
    /// the answer.
    #[arg(long, value_enum)]
    pub expand: Option<ExpandArg>,
    /// Compare settings: KEY=V1,V2,… (repeatable; the rows are every combination).
    /// KEY is a `situate.toml` key (`chunk.max_tokens`) or `mode`, `expand`, `window`,
    /// `merge_share`, `header` (on|off).
    #[arg(long, value_name = "KEY=V1,V2")]
    pub compare: Vec<String>,
    /// Compare one named set of settings: "KEY=V KEY=V …" (repeatable; each is a row,
    /// combined with any --compare axes).
    #[arg(long, value_name = "SETTINGS")]
    pub variant: Vec<String>,
    /// Show the figures of each query kind under every row (always shown without
    /// --compare or --variant).
    #[arg(long)]
    pub by_kind: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// List each query with the rank of its first correct hit.
    #[arg(long)]
    pub per_query: bool,
    /// Write the results in the run-file format (one JSON line per query).
    #[arg(long, value_name = "FILE")]
    pub run_file: Option<PathBuf>,
}

pub fn run(args: EvalArgs, config: Option<&Path>, out: &mut impl Write) -> Result<()> {
    let queries = eval::load_queries(&args.queries)?;
    let variants = eval_variants(args.mode, args.expand, &args.compare, &args.variant)?;
    let comparing = !args.compare.is_empty() || !args.variant.is_empty();
    let mut engine = open(&args.dir, config, OpenMode::Write)?;
    if !engine.is_read_only() {
        let before = engine.index().manifest().skipped.clone();
        warn_skips(&reconcile(&mut engine, true)?, &before);
    }
    let settings = config.map_or_else(|| args.dir.join(CONFIG_FILE), Path::to_path_buf);
    let base_toml = std::fs::read_to_string(&settings).unwrap_or_default();
    let reports = compare::compare(&engine, &base_toml, &variants, &queries)?;
    // Every variant reads the same files: one warning per query is enough.
    if let Some(report) = reports.first() {
        let view = engine.view();
        for q in &report.queries {
            for path in &q.unknown_gold {
                let why = match view.indexed_file(path) {
                    Ok(rel) => format!("write it `{rel}`, as search results name it"),
                    Err(e) => e.to_string(),
                };
                eprintln!(
                    "situate: query `{}`: gold path `{path}` names no indexed file, so it always counts as a miss ({why})",
                    q.id
                );
            }
        }
    }
    if let Some(path) = args.run_file
        && let Some(last) = reports.last()
    {
        render::write_run_file(&path, last).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        let reports: Vec<EvalReportJson> = reports.iter().map(EvalReportJson::from).collect();
        serde_json::to_writer_pretty(&mut *out, &reports)?;
        writeln!(out)?;
    } else {
        render::eval(out, &reports, args.per_query, args.by_kind || !comparing)?;
    }
    Ok(())
}

/// The rows of an evaluation: the `--compare` axes and `--variant` bundles multiplied out,
/// with a mode axis (`--mode`, or all three) when none of them sets the mode, and
/// `--expand` added to every row. Without `--compare` and `--variant`, rows are labelled by
/// their values alone ("hybrid", "hybrid window").
fn eval_variants(
    mode: Option<ModeArg>,
    expand: Option<ExpandArg>,
    axes: &[String],
    bundles: &[String],
) -> Result<Vec<compare::Variant>> {
    let mut all: Vec<compare::Axis> =
        axes.iter().map(|a| compare::parse_axis(a)).collect::<Result<_, _>>()?;
    if !bundles.is_empty() {
        all.push(bundles.iter().map(|b| compare::parse_variant(b)).collect::<Result<_, _>>()?);
    }
    let comparing = !all.is_empty();
    let setting = |key: &str, value: String| vec![Override { key: key.to_string(), value }];
    if all.iter().flatten().flatten().any(|o| compare::is_mode_key(&o.key)) {
        if mode.is_some() {
            bail!("--mode and a compared mode together: compare `mode=…` alone");
        }
    } else {
        let modes = match mode {
            Some(m) => vec![SearchMode::from(m)],
            None => vec![SearchMode::Bm25, SearchMode::Vector, SearchMode::Hybrid],
        };
        all.insert(0, modes.into_iter().map(|m| setting("mode", m.to_string())).collect());
    }
    if let Some(e) = expand {
        all.push(vec![setting("expand", Expand::from(e).to_string())]);
    }
    let mut variants = compare::variants(&all);
    if !comparing {
        for v in &mut variants {
            v.label = v.overrides.iter().map(|o| o.value.as_str()).collect::<Vec<_>>().join(" ");
        }
    }
    Ok(variants)
}
