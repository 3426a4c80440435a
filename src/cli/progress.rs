//! A progress bar on a terminal, nothing on a pipe.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::engine::Progress;

/// Shows reconcile progress on stderr when it is a terminal.
pub struct Bar {
    bar: Option<ProgressBar>,
    /// Show the bar even for small jobs (`situate index`), not only long ones.
    announce: bool,
}

impl Bar {
    pub fn new(announce: bool) -> Self {
        Bar { bar: None, announce }
    }

    pub fn update(&mut self, progress: &Progress) {
        if !std::io::stderr().is_terminal() {
            return;
        }
        match *progress {
            Progress::Scanned { .. } => {}
            Progress::Indexing { done, total } => {
                // A search that finds a few changed files should not flash a bar.
                if self.bar.is_none() && (self.announce || total > 200) {
                    let bar = ProgressBar::new(total as u64);
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} indexing {pos}/{len} files [{bar:30}] {eta}")
                            .unwrap_or_else(|_| ProgressStyle::default_bar())
                            .progress_chars("=> "),
                    );
                    self.bar = Some(bar);
                }
                if let Some(bar) = &self.bar {
                    bar.set_position(done as u64);
                }
            }
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
