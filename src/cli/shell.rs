//! `situate completions SHELL` and `situate man`: shell completions and a man page, both
//! generated from the command-line definition itself, so that they never drift from it.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use super::Cli;

/// The shells completions are written for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

/// Writes the completion script of `shell` to `out`.
pub(super) fn completions(shell: Shell, out: &mut impl Write) -> Result<()> {
    use clap_complete::Shell as S;
    let shell = match shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Elvish => S::Elvish,
        Shell::Powershell => S::PowerShell,
    };
    // Written whole first: `generate` panics when its writer fails (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "situate", &mut script);
    out.write_all(&script)?;
    Ok(())
}

/// Writes the man page `situate(1)` in roff to `out`: the commands, the global options and
/// the exit status. With `dir`, writes it there as `situate.1` instead, beside one page per
/// command (`situate-search.1`, …), and names the files on `out`.
pub(super) fn man(dir: Option<&Path>, out: &mut impl Write) -> Result<()> {
    // `situate help` has no page of its own: a man page is the help.
    let command = Cli::command().disable_help_subcommand(true);
    let Some(dir) = dir else {
        return render(&command, true, out);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut pages = vec![("situate.1".to_string(), command.clone(), true)];
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("situate-{}", sub.get_name());
        let file = format!("{name}.1");
        // clap keeps command names as `&'static str`; a few short names for one run.
        pages.push((file, sub.clone().name(&*name.leak()), false));
    }
    for (file, page, main) in pages {
        let path = dir.join(&file);
        let mut roff = Vec::new();
        render(&page, main, &mut roff)?;
        std::fs::write(&path, roff).with_context(|| format!("cannot write {}", path.display()))?;
        writeln!(out, "{}", path.display())?;
    }
    Ok(())
}

/// One page; the main one also lists the exit status.
fn render(command: &clap::Command, main: bool, out: &mut impl Write) -> Result<()> {
    clap_mangen::Man::new(command.clone()).render(out)?;
    if main {
        writeln!(out, ".SH \"EXIT STATUS\"")?;
        for (code, meaning) in super::EXIT_CODES {
            writeln!(out, ".TP\n\\fB{code}\\fR\n{meaning}")?;
        }
    }
    Ok(())
}
