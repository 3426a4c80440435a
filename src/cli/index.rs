//! `situate index`: bring the index in line with the folder, and on request write the LLM
//! snippets that chunks wait for.

use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};

use super::{open, progress, reconcile, render};
use crate::engine::{Engine, OpenMode, PendingVectors, SnippetRun};
use crate::snippets::generator::Totals;
use crate::wire::{IndexSummaryJson, ReportJson, SnippetRunJson};

/// Index a folder (only what changed since the last run).
#[derive(Debug, clap::Args)]
pub struct IndexArgs {
    #[command(flatten)]
    folder: super::Folder,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the LLM snippets that chunks wait for (needs a `[snippets]` table),
    /// within the configured budget; shows progress and the tokens spent.
    #[arg(long)]
    pub snippets: bool,
    /// Stop at the quick tier: commit the texts with vectors of the built-in static model
    /// and leave the vectors of a slower model (the built-in transformer, a remote server)
    /// for a later `situate index` or the language server. Interrupting `situate index`
    /// while it computes them is safe too: what is done is kept.
    #[arg(long)]
    pub quick: bool,
}

pub fn run(args: IndexArgs, config: Option<&Path>, out: &mut impl Write) -> Result<()> {
    let dir = args.folder.path();
    let mut engine = open(dir, config, OpenMode::Write)?;
    if engine.is_read_only() {
        let writer = engine.other_writer();
        bail!("{writer} is writing the index of {}; {}", dir.display(), writer.meanwhile());
    }
    if args.snippets && !engine.snippets_on() {
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
    engine.set_pending_vectors(if args.quick { PendingVectors::Left } else { PendingVectors::FilledNow });
    let report = reconcile(&mut engine, true)?;
    let run = if args.snippets { Some(write_snippets(&mut engine, args.json)?) } else { None };
    if args.json {
        let summary = IndexSummaryJson {
            report: ReportJson::from(&report),
            snippets: run.as_ref().map(SnippetRunJson::from),
        };
        serde_json::to_writer_pretty(&mut *out, &summary)?;
        writeln!(out)?;
        leave(engine);
        return Ok(());
    }
    render::index_summary(out, &engine, &report)?;
    match &run {
        Some(run) => render::snippet_run(out, run)?,
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
    leave(engine);
    Ok(())
}

/// Ends the command without tearing the engine down. All it wrote is committed and synced
/// by now, and the process is about to end: freeing the tables of a million chunks and
/// waiting for the chunk store's background merge took about 70 ms of a one-file update at
/// that size, which the system does for nothing when the process ends, releasing the locks
/// with it. A merge cut short leaves files that no commit names, which the next writer
/// removes, as after any run that was killed.
fn leave(engine: Engine) {
    std::mem::forget(engine);
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
