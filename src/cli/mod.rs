//! The command line: `situate index|search|show|status|eval|lsp`. The only module that prints.
//!
//! stdout carries the data (results, summaries, JSON); progress, warnings and logs go to
//! stderr, so that `situate search … --json | jq` always works.

mod progress;
mod render;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use crate::compare::{self, Override};
use crate::config::CONFIG_FILE;
use crate::engine::OpenMode;
use crate::engine::{Engine, ReconcileReport, SnippetRun};
use crate::eval;
use crate::search::{Expand, SearchMode, SearchRequest};
use crate::snippets::generator::Totals;
use crate::wire::{
    ChunkJson, EvalReportJson, HitJson, IndexSummaryJson, ReportJson, SnippetRunJson, StatusJson,
};

/// Contextual semantic search over the markdown and text files of a folder.
#[derive(Debug, Parser)]
#[command(name = "situate", version, about, long_about = None)]
struct Cli {
    /// Read settings from this file instead of `situate.toml` in the workspace.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Index a folder (only what changed since the last run).
    Index {
        /// The workspace folder.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
        /// Also write the LLM snippets that chunks wait for (needs a `[snippets]` table),
        /// within the configured budget; shows progress and the tokens spent.
        #[arg(long)]
        snippets: bool,
    },
    /// Search the index (brought up to date first).
    Search {
        /// What to look for, in plain words.
        query: String,
        /// The workspace folder.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// How many hits.
        #[arg(short = 'k', long = "limit")]
        limit: Option<usize>,
        /// Which retrieval to use.
        #[arg(long, value_enum)]
        mode: Option<ModeArg>,
        /// Only hits under these workspace-relative paths (repeatable).
        #[arg(long = "path")]
        paths: Vec<String>,
        /// Print hits as a JSON array.
        #[arg(long)]
        json: bool,
        /// Show each arm's rank and score.
        #[arg(long)]
        explain: bool,
        /// Search the index as it is, without reconciling it with the files first.
        #[arg(long)]
        no_update: bool,
        /// Widen each hit with its context: its neighbouring chunks (`window`) or its whole
        /// section when enough of it matched (`merge`). Default: `search.expand`.
        #[arg(long, value_enum)]
        expand: Option<ExpandArg>,
    },
    /// Show how a file, or the chunk at one of its lines, was indexed.
    Show {
        /// FILE or FILE:LINE (workspace-relative or absolute).
        target: String,
        /// The workspace folder.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Measure retrieval on queries with known answers (JSON lines: id, query, kind, gold).
    Eval {
        /// The query file.
        queries: PathBuf,
        /// The workspace folder the gold paths are relative to.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Evaluate one mode only (default: all three).
        #[arg(long, value_enum)]
        mode: Option<ModeArg>,
        /// Widen hits before scoring them; a hit then counts when its expanded lines overlap
        /// the answer.
        #[arg(long, value_enum)]
        expand: Option<ExpandArg>,
        /// Compare settings: KEY=V1,V2,… (repeatable; the rows are every combination).
        /// KEY is a `situate.toml` key (`chunk.max_tokens`) or `mode`, `expand`, `window`,
        /// `merge_share`, `header` (on|off).
        #[arg(long, value_name = "KEY=V1,V2")]
        compare: Vec<String>,
        /// Compare one named set of settings: "KEY=V KEY=V …" (repeatable; each is a row,
        /// combined with any --compare axes).
        #[arg(long, value_name = "SETTINGS")]
        variant: Vec<String>,
        /// Show the figures of each query kind under every row (always shown without
        /// --compare or --variant).
        #[arg(long)]
        by_kind: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// List each query with the rank of its first correct hit.
        #[arg(long)]
        per_query: bool,
        /// Write the results in the run-file format (one JSON line per query).
        #[arg(long, value_name = "FILE")]
        run_file: Option<PathBuf>,
    },
    /// Run the language server on stdin/stdout (editors start this).
    Lsp {
        /// Accepted for clients that always pass it; stdio is the only transport.
        #[arg(long, hide = true)]
        stdio: bool,
    },
    /// Show what the index holds and its health.
    Status {
        /// The workspace folder.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ModeArg {
    Hybrid,
    Bm25,
    Vector,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ExpandArg {
    None,
    Window,
    Merge,
}

impl From<ExpandArg> for Expand {
    fn from(e: ExpandArg) -> Self {
        match e {
            ExpandArg::None => Expand::None,
            ExpandArg::Window => Expand::Window,
            ExpandArg::Merge => Expand::Merge,
        }
    }
}

impl From<ModeArg> for SearchMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Hybrid => SearchMode::Hybrid,
            ModeArg::Bm25 => SearchMode::Bm25,
            ModeArg::Vector => SearchMode::Vector,
        }
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Lsp { .. } => return crate::lsp::serve_stdio(),
        command => run(command, cli.config.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("situate: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = || {
        tracing_subscriber::EnvFilter::try_from_env("SITUATE_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
    };
    if let Some(path) = std::env::var_os("SITUATE_LOG_FILE") {
        match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
            Ok(file) => {
                let _ = tracing_subscriber::fmt()
                    .with_env_filter(filter())
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(file))
                    .try_init();
                return;
            }
            Err(e) => eprintln!("situate: cannot open the log file {}: {e}", Path::new(&path).display()),
        }
    }
    let _ = tracing_subscriber::fmt().with_env_filter(filter()).with_writer(std::io::stderr).try_init();
}

fn run(command: Command, config: Option<&Path>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match command {
        Command::Index { dir, json, snippets } => {
            let mut engine = open(&dir, config, OpenMode::Write)?;
            if engine.is_read_only() {
                bail!(
                    "another situate process is writing the index of {}; try again when it is done",
                    dir.display()
                );
            }
            if snippets && !engine.snippets_on() {
                let why: Vec<String> = engine
                    .config_problems()
                    .iter()
                    .filter(|p| p.key.starts_with("snippets"))
                    .map(ToString::to_string)
                    .collect();
                if why.is_empty() {
                    bail!("snippets are off: add a [snippets] table to situate.toml (see the README)");
                }
                bail!("snippets are off: {}", why.join("; "));
            }
            let report = reconcile(&mut engine, true)?;
            let run = if snippets { Some(write_snippets(&mut engine, json)?) } else { None };
            if json {
                let summary = IndexSummaryJson {
                    report: ReportJson::from(&report),
                    snippets: run.as_ref().map(SnippetRunJson::from),
                };
                serde_json::to_writer_pretty(&mut out, &summary)?;
                writeln!(out)?;
            } else {
                render::index_summary(&mut out, &engine, &report)?;
                match &run {
                    Some(run) => render::snippet_run(&mut out, run)?,
                    None if engine.snippets_waiting() > 0 => {
                        let estimate = engine.snippet_estimate()?;
                        writeln!(
                            out,
                            "snippets: {} chunks wait for one ({estimate}); `situate index --snippets` writes them",
                            engine.snippets_waiting()
                        )?;
                    }
                    None => {}
                }
            }
        }
        Command::Search { query, dir, limit, mode, paths, json, explain, no_update, expand } => {
            let mut engine =
                open(&dir, config, if no_update { OpenMode::ReadOnly } else { OpenMode::Write })?;
            if !no_update {
                if engine.is_read_only() {
                    eprintln!("situate: another process is updating the index; searching it as it is");
                } else {
                    let report = reconcile(&mut engine, false)?;
                    warn_skips(&report);
                }
            }
            let request = SearchRequest {
                query,
                limit: limit.unwrap_or(engine.config().search.limit).max(1),
                mode: mode.map_or(engine.config().search.mode, Into::into),
                paths,
                expand: expand.map_or(engine.config().search.expand, Into::into),
            };
            let hits = engine.search(&request)?;
            if json {
                let hits: Vec<HitJson> = hits.iter().map(HitJson::from).collect();
                serde_json::to_writer_pretty(&mut out, &hits)?;
                writeln!(out)?;
            } else {
                render::hits(&mut out, &hits, explain)?;
            }
        }
        Command::Show { target, dir, json } => {
            let engine = open(&dir, config, OpenMode::ReadOnly)?;
            let (file, line) = split_target(&target);
            let chunks = engine.chunks_at(file, line)?;
            if json {
                let chunks: Vec<ChunkJson> = chunks.iter().map(ChunkJson::from).collect();
                serde_json::to_writer_pretty(&mut out, &chunks)?;
                writeln!(out)?;
            } else {
                render::chunks(&mut out, &chunks)?;
            }
        }
        Command::Eval {
            queries,
            dir,
            mode,
            expand,
            compare,
            variant,
            by_kind,
            json,
            per_query,
            run_file,
        } => {
            let queries = eval::load_queries(&queries)?;
            let variants = eval_variants(mode, expand, &compare, &variant)?;
            let comparing = !compare.is_empty() || !variant.is_empty();
            let mut engine = open(&dir, config, OpenMode::Write)?;
            if !engine.is_read_only() {
                warn_skips(&reconcile(&mut engine, true)?);
            }
            let settings = config.map_or_else(|| dir.join(CONFIG_FILE), Path::to_path_buf);
            let base_toml = std::fs::read_to_string(&settings).unwrap_or_default();
            let reports = compare::compare(&engine, &base_toml, &variants, &queries)?;
            if let Some(path) = run_file
                && let Some(last) = reports.last()
            {
                render::write_run_file(&path, last)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            if json {
                let reports: Vec<EvalReportJson> = reports.iter().map(EvalReportJson::from).collect();
                serde_json::to_writer_pretty(&mut out, &reports)?;
                writeln!(out)?;
            } else {
                render::eval(&mut out, &reports, per_query, by_kind || !comparing)?;
            }
        }
        Command::Lsp { .. } => bail!("`situate lsp` is served on its own"),
        Command::Status { dir, json } => {
            let engine = open(&dir, config, OpenMode::ReadOnly)?;
            let status = engine.view().status_with_estimate()?;
            if json {
                serde_json::to_writer_pretty(&mut out, &StatusJson::from(&status))?;
                writeln!(out)?;
            } else {
                render::status(&mut out, &status)?;
            }
        }
    }
    out.flush()?;
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

fn open(dir: &Path, config: Option<&Path>, mode: OpenMode) -> Result<Engine> {
    let engine = Engine::open(dir, config, mode)
        .with_context(|| format!("cannot open the index of {}", dir.display()))?;
    for problem in engine.config_problems() {
        eprintln!("situate: {problem} (using the default)");
    }
    for note in engine.notes() {
        eprintln!("situate: {note}");
    }
    Ok(engine)
}

fn reconcile(engine: &mut Engine, announce: bool) -> Result<ReconcileReport> {
    let mut bar = progress::Bar::new(announce);
    let report = engine.reconcile(&mut |p| bar.update(&p))?;
    bar.finish();
    Ok(report)
}

/// Writes the snippets chunks wait for, with the estimate first and a progress bar.
fn write_snippets(engine: &mut Engine, quiet: bool) -> Result<SnippetRun> {
    let waiting = engine.snippets_waiting();
    if waiting > 0 && !quiet {
        eprintln!("situate: writing {waiting} snippets: {}", engine.snippet_estimate()?);
    }
    let mut bar = progress::SnippetBar::new();
    let run = engine.write_snippets(Totals::default(), &mut |p| bar.update(p))?;
    bar.finish();
    Ok(run)
}

fn warn_skips(report: &ReconcileReport) {
    for s in &report.skipped {
        eprintln!("situate: skipped {}: {}", s.path, s.reason);
    }
}

/// `notes/a.md:12` → (`notes/a.md`, 12). A suffix that is not a line number stays part of
/// the path.
fn split_target(target: &str) -> (&str, Option<u32>) {
    match target.rsplit_once(':') {
        Some((file, line)) if !file.is_empty() => match line.parse::<u32>() {
            Ok(n) => (file, Some(n)),
            Err(_) => (target, None),
        },
        _ => (target, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_at_a_trailing_line_number() {
        assert_eq!(split_target("a.md:12"), ("a.md", Some(12)));
        assert_eq!(split_target("a.md"), ("a.md", None));
        assert_eq!(split_target("dir:x/a.md"), ("dir:x/a.md", None));
        assert_eq!(split_target(":3"), (":3", None));
    }

    #[test]
    fn the_command_line_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
