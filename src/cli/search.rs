//! `situate search`: one query against the index, brought up to date first.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{ExpandArg, ModeArg, open, reconcile, render, warn_skips};
use crate::engine::{OpenMode, PendingVectors};
use crate::search::{Filter, MAX_LIMIT, SearchOptions, SearchRequest};
use crate::wire::HitJson;

/// Search the index (brought up to date first).
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What to look for, in plain words.
    pub query: String,
    /// The workspace folder.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// How many hits (1 to 1000).
    #[arg(short = 'k', long = "limit", value_parser = limit_parser())]
    pub limit: Option<usize>,
    /// Which retrieval to use.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Only hits under these workspace-relative paths (repeatable).
    #[arg(long = "path")]
    pub paths: Vec<String>,
    /// Only hits of documents whose front matter FIELD has VALUE, e.g. `tags=backup`
    /// (repeatable: all must match; case is ignored, `tags=ops` matches `ops/storage`, and a
    /// note's tags include the `#tags` written in its text).
    #[arg(long = "where", value_name = "FIELD=VALUE", value_parser = filter_parser)]
    pub filters: Vec<Filter>,
    /// Print hits as a JSON array.
    #[arg(long)]
    pub json: bool,
    /// Show each arm's rank and score.
    #[arg(long)]
    pub explain: bool,
    /// Search the index as it is, without reconciling it with the files first.
    #[arg(long)]
    pub no_update: bool,
    /// Widen each hit with its context: its neighbouring chunks (`window`) or its whole
    /// section when enough of it matched (`merge`). Default: `search.expand`.
    #[arg(long, value_enum)]
    pub expand: Option<ExpandArg>,
}

fn filter_parser(value: &str) -> Result<Filter, String> {
    value.parse()
}

/// `-k`: a count of hits within the bounds of one search, refused with the range otherwise.
fn limit_parser() -> impl clap::builder::TypedValueParser<Value = usize> {
    use clap::builder::TypedValueParser;
    clap::value_parser!(u64).range(1..=MAX_LIMIT as u64).map(|n| n as usize)
}

pub fn run(args: SearchArgs, config: Option<&Path>, out: &mut impl Write) -> Result<()> {
    // A search by words alone, on the index as it is, reads no vectors.
    let mode = match (args.no_update, args.mode.as_ref()) {
        (true, Some(ModeArg::Bm25)) => OpenMode::ReadWords,
        (true, _) => OpenMode::ReadOnly,
        (false, _) => OpenMode::Write,
    };
    let mut engine = open(&args.dir, config, mode)?;
    if !args.no_update {
        if engine.is_read_only() {
            eprintln!("situate: {} writes this index; searching its last commit", engine.other_writer());
        } else {
            // A search never waits for a slow model's vectors: the texts are committed and
            // searched at once, with the built-in static model standing in.
            engine.set_pending_vectors(PendingVectors::Left);
            let before = engine.index().manifest().skipped.clone();
            warn_skips(&reconcile(&mut engine, false)?, &before);
            // Unless only a few wait (a note just saved): those are embedded now.
            if let Err(e) = engine.fill_few_pending() {
                eprintln!("situate: the waiting vectors were not computed: {e}");
            }
        }
    }
    let status = engine.status();
    if status.vectors_pending > 0 {
        // While another process writes the index, that one computes them.
        let who = if engine.is_read_only() { "the process that writes the index" } else { "`situate index`" };
        eprintln!("situate: {}; {who} computes them", render::pending_vectors_line(&status));
    }
    // `./ops` and absolute paths are read as workspace-relative; a path under which nothing
    // is indexed is a mistake to point out rather than a search that finds nothing.
    let view = engine.view();
    let paths = args
        .paths
        .iter()
        .map(|p| view.indexed_prefix(p).map_err(|e| anyhow::anyhow!("--path: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let options = SearchOptions {
        limit: args.limit,
        mode: args.mode.map(Into::into),
        expand: args.expand.map(Into::into),
        paths,
        filters: args.filters,
    };
    let hits = view.search(&SearchRequest::with_defaults(args.query, options, &engine.config().search))?;
    if args.json {
        let hits: Vec<HitJson> = hits.iter().map(HitJson::from).collect();
        serde_json::to_writer_pretty(&mut *out, &hits)?;
        writeln!(out)?;
    } else {
        render::hits(out, &hits, args.explain, super::colour_on_stdout())?;
    }
    Ok(())
}
