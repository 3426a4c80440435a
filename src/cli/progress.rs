//! A progress bar on a terminal, nothing on a pipe.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::engine::{Progress, SnippetProgress};

/// Shows reconcile progress on stderr when it is a terminal.
pub struct Bar {
    bar: Option<ProgressBar>,
    /// Show the bar even for small jobs (`situate index`), not only long ones.
    announce: bool,
    /// The template of the stage the bar shows.
    phase: &'static str,
}

impl Bar {
    pub fn new(announce: bool) -> Self {
        Bar { bar: None, announce, phase: "" }
    }

    pub fn update(&mut self, progress: &Progress) {
        if !std::io::stderr().is_terminal() {
            return;
        }
        let (done, total, what, from_team) = match *progress {
            Progress::Scanned { .. } => return,
            Progress::Indexing { done, total } => (done, total, "indexing {pos}/{len} files", 0),
            Progress::Embedding { done, total, from_team } => {
                (done, total, "vectors {pos}/{len}{msg} (safe to interrupt: done ones are kept)", from_team)
            }
        };
        if self.phase != what {
            if let Some(bar) = self.bar.take() {
                bar.finish_and_clear();
            }
            self.phase = what;
        }
        // A search that finds a few changed files should not flash a bar.
        if self.bar.is_none() && (self.announce || total > 200) {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(&format!("{{spinner}} {what} [{{bar:30}}] {{eta}}"))
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            if from_team > 0 {
                bar.set_message(format!(", {from_team} from the team"));
            }
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Shows how many snippets have been written, and the tokens spent, on stderr when it is a
/// terminal.
pub struct SnippetBar {
    bar: Option<ProgressBar>,
}

impl SnippetBar {
    pub fn new() -> Self {
        SnippetBar { bar: None }
    }

    pub fn update(&mut self, p: &SnippetProgress) {
        if !std::io::stderr().is_terminal() || p.total == 0 {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::new(p.total as u64);
            bar.set_style(
                ProgressStyle::with_template("{spinner} snippets {pos}/{len} [{bar:30}] {eta} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar
        });
        bar.set_position(p.done as u64);
        let t = &p.totals;
        bar.set_message(format!(
            "{} calls, {} in ({} cached), {} out",
            t.calls, t.input_tokens, t.cache_read_tokens, t.output_tokens
        ));
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
