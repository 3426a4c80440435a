//! The command line: `situate index|search|show|status|eval|lsp|mcp|completions|man`. The only
//! module that prints.
//!
//! stdout carries the data (results, summaries, JSON); progress, warnings and logs go to
//! stderr, so that `situate search … --json | jq` always works.

mod eval;
mod index;
mod mcp;
mod progress;
mod render;
mod search;
mod shell;
mod show;
mod status;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::engine::{Engine, EngineError, OpenMode, ReconcileReport};
use crate::search::{Expand, SearchMode};

/// The workspace folder of a command that takes no other argument: given as `DIR` or as
/// `--dir DIR`, as the other commands take it.
#[derive(Debug, clap::Args)]
struct Folder {
    /// The workspace folder (also `--dir DIR`) [default: .]
    #[arg(value_name = "DIR")]
    positional: Option<PathBuf>,
    /// The workspace folder, as the other commands take it.
    #[arg(long = "dir", value_name = "DIR", conflicts_with = "positional")]
    flag: Option<PathBuf>,
}

impl Folder {
    fn path(&self) -> &Path {
        self.positional.as_deref().or(self.flag.as_deref()).unwrap_or(Path::new("."))
    }
}

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
    Index(index::IndexArgs),
    /// Search the index (brought up to date first).
    Search(search::SearchArgs),
    /// Show how a file, or the chunk at one of its lines, was indexed.
    Show(show::ShowArgs),
    /// Measure retrieval on queries with known answers (JSON lines: id, query, kind, gold).
    Eval(eval::EvalArgs),
    /// Run the language server on stdin/stdout (editors start this).
    Lsp {
        /// Accepted for clients that always pass it; stdio is the only transport.
        #[arg(long, hide = true)]
        stdio: bool,
    },
    /// Show what the index holds and its health.
    Status(status::StatusArgs),
    /// Serve search to AI agents over the Model Context Protocol on stdin/stdout.
    Mcp(mcp::McpArgs),
    /// Print the completion script of a shell (e.g. `situate completions bash > ~/.local/share/bash-completion/completions/situate`).
    Completions {
        #[arg(value_enum)]
        shell: shell::Shell,
    },
    /// Print the man page, situate(1); with `--out DIR`, write it and one page per command there.
    Man {
        /// Write `situate.1` and `situate-COMMAND.1` into this folder.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

/// What the exit status means (also in the man page and docs/commands.md).
pub const EXIT_CODES: [(u8, &str); 3] = [
    (0, "Success, including a search that found nothing."),
    (
        1,
        "An error: the folder, the index, a file or a model could not be used; the message on stderr says which.",
    ),
    (2, "A usage error: an unknown command or option, or a value out of range."),
];

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
        Command::Lsp { .. } => match lsp_config(cli.config.as_deref()).map(crate::lsp::serve_stdio) {
            Err(e) => Err(e),
            Ok(Ok(code)) => return code,
            Ok(Err(e)) => Err(anyhow::Error::new(e).context("cannot start the language server")),
        },
        // stdout carries the protocol: nothing else may write to it.
        Command::Mcp(args) => mcp::run(args, cli.config.as_deref()),
        command => run(command, cli.config.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout has gone (`situate search … | head -1`): it has all it wanted,
        // so the command ends quietly, as other Unix tools do.
        Err(e) if closed_stdout(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("situate: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The settings file `situate lsp --config` names, made absolute (the server reads it for
/// every folder, whatever its working folder).
fn lsp_config(config: Option<&Path>) -> Result<Option<PathBuf>> {
    let Some(file) = config else { return Ok(None) };
    settings_readable(Some(file))?;
    Ok(Some(std::path::absolute(file)?))
}

/// A settings file given on the command line that cannot be read is an error, before a
/// server starts; a problem inside it is the server's to report.
fn settings_readable(config: Option<&Path>) -> Result<()> {
    if let Some(file) = config
        && let Some(problem) = crate::config::Config::load_file(file).unusable()
        && problem.effect == crate::config::Effect::Unreadable
    {
        anyhow::bail!("{problem}");
    }
    Ok(())
}

/// Whether `e` is a write to a pipe whose reader has gone.
fn closed_stdout(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        let kind = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => Some(io.kind()),
            None => cause.downcast_ref::<serde_json::Error>().and_then(serde_json::Error::io_error_kind),
        };
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
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
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_ansi(colour_on_stderr())
        .with_writer(std::io::stderr)
        .try_init();
}

/// Colour codes go to a terminal only, and never when `NO_COLOR` is set to anything but
/// the empty string (no-color.org): a log file, an editor's output panel or a pipe gets
/// plain text.
pub fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && colour_allowed()
}

/// Whether search results may mark matched terms in bold: stdout is a terminal and
/// `NO_COLOR` is not set.
pub fn colour_on_stdout() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && colour_allowed()
}

fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn run(command: Command, config: Option<&Path>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match command {
        Command::Index(args) => index::run(args, config, &mut out)?,
        Command::Search(args) => search::run(args, config, &mut out)?,
        Command::Show(args) => show::run(args, config, &mut out)?,
        Command::Eval(args) => eval::run(args, config, &mut out)?,
        Command::Status(args) => status::run(args, config, &mut out)?,
        Command::Completions { shell } => shell::completions(shell, &mut out)?,
        Command::Man { out: dir } => shell::man(dir.as_deref(), &mut out)?,
        // Served by `main` before any command runs.
        Command::Lsp { .. } | Command::Mcp(_) => {}
    }
    out.flush()?;
    Ok(())
}

/// Opens the engine of `dir`, telling of configuration problems and repairs on stderr.
fn open(dir: &Path, config: Option<&Path>, mode: OpenMode) -> Result<Engine> {
    let engine = Engine::open(dir, config, mode).map_err(|e| {
        if matches!(e, EngineError::SettingsUnreadable { .. } | EngineError::SettingsUnusable { .. }) {
            anyhow::Error::new(e)
        } else if e.is_damage() {
            // A writer heals the index as it opens it; a reader cannot, so it says who can.
            anyhow::anyhow!(
                "the index of {} is damaged ({e}); `situate index {}` rebuilds it from the files, \
                 or, while an editor or another situate process writes it, that process does when \
                 it next reads it",
                dir.display(),
                dir.display()
            )
        } else {
            anyhow::Error::new(e).context(format!("cannot open the index of {}", dir.display()))
        }
    })?;
    for problem in engine.config_problems() {
        eprintln!("situate: {problem} ({})", problem.effect.note());
    }
    for note in engine.notes() {
        eprintln!("situate: {note}");
    }
    Ok(engine)
}

/// Reconciles with a progress bar on a terminal.
fn reconcile(engine: &mut Engine, announce: bool) -> Result<ReconcileReport> {
    let mut bar = progress::Bar::new(announce);
    let report = engine.reconcile(&mut |p| bar.update(&p))?;
    bar.finish();
    Ok(report)
}

/// Tells of the files a run left out, on stderr.
/// Warns of the files this run left out that the index did not already list as left out
/// (`before`, its list when the run began): a search or an evaluation run after run names
/// each such file once, and `situate status` lists them all.
fn warn_skips(report: &ReconcileReport, before: &[crate::workspace::Skipped]) {
    for s in report.skipped.iter().filter(|s| !before.contains(s)) {
        eprintln!("situate: skipped {}: {}", s.path, s.reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_parses() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
