//! How a folder's writer tells its user of problems: each listed in the folder's errors
//! (which `situate.status` returns) and shown once. The errors that settings gave are
//! listed while those settings last: a folder opened again with fixed settings drops them.

use super::Notice;
use super::worker::Worker;

impl Worker {
    /// Tells the user (once per message) of files read with replacement characters, as the
    /// command line warns of them; `situate.status` lists them all.
    pub(super) fn warn_lossy(&self, lossy: &[String]) {
        let message = match lossy {
            [] => return,
            [one] => format!(
                "{}: {one} is not valid UTF-8; decoded with replacement characters",
                self.folder.name()
            ),
            [first, rest @ ..] => format!(
                "{}: {first} and {} more files are not valid UTF-8; decoded with replacement characters",
                self.folder.name(),
                rest.len()
            ),
        };
        tracing::warn!("{message}");
        let _ = self.notices.send(Notice::Problem(message));
    }

    /// A problem the user may act on while work goes on (a bad setting, a stopped snippet
    /// queue): listed in the folder's errors and shown once as a warning.
    pub(super) fn error(&self, message: String) {
        tracing::warn!(folder = %self.folder.root.display(), "{message}");
        self.record(&message);
        let _ = self.notices.send(Notice::Problem(message));
    }

    /// Something that failed (the index cannot be opened, a run failed): listed in the
    /// folder's errors and shown once as an error.
    pub(super) fn failure(&self, message: String) {
        tracing::error!(folder = %self.folder.root.display(), "{message}");
        self.record(&message);
        let _ = self.notices.send(Notice::Failure(message));
    }

    fn record(&self, message: &str) {
        let mut state = self.state();
        // A problem that repeats (a server that stays down) is listed once in a row.
        if state.errors.last().is_none_or(|last| last != message) {
            state.errors.push(message.to_string());
        }
    }

    /// A problem with the settings, listed until the folder is opened with other settings.
    pub(super) fn settings_error(&mut self, message: String) {
        self.settings_errors.push(message.clone());
        self.error(message);
    }

    /// Drops the errors the settings last opened with gave, before the settings are read
    /// again: a fixed file leaves no error behind.
    pub(super) fn forget_settings_errors(&mut self) {
        let old = std::mem::take(&mut self.settings_errors);
        if !old.is_empty() {
            self.state().errors.retain(|e| !old.contains(e));
        }
    }
}
