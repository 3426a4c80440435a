//! Two writers on one folder: while another process holds the index's writer lock, this
//! folder serves the index read-only, reloads it when the other commits, and takes over the
//! writing when the other lets go.

use super::Phase;
use super::worker::Worker;

impl Worker {
    /// While read-only: take over when the other writer is gone, or reload its commits.
    pub(super) fn poll(&mut self) {
        let Some(engine) = &self.engine else {
            // No index yet (the other writer has not committed) or a failed open.
            if super::lock(&self.folder.state).phase == Phase::ReadOnly {
                self.open();
                if self.engine.as_ref().is_some_and(|e| !e.is_read_only()) {
                    self.reconcile(None);
                }
            }
            return;
        };
        let free = engine.writer_free();
        if free || engine.commit_stamp() != self.seen_commit {
            self.engine = None;
            self.open();
            if free && self.engine.as_ref().is_some_and(|e| !e.is_read_only()) {
                tracing::info!(folder = %self.folder.root.display(), "the other writer is gone: indexing here");
                self.reconcile(None);
            }
        }
    }
}
