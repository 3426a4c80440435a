//! The writer lock: one process at a time may change an index; others read it.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Held for as long as this process may write the index. The operating system releases it
/// when the process ends, however it ends, so a crash never leaves a stale lock.
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

impl WriterLock {
    /// Takes the lock if no other process holds it; `Ok(None)` when one does.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<WriterLock>> {
        let file = OpenOptions::new().create(true).truncate(false).read(true).write(true).open(path)?;
        match file.try_lock() {
            // What a holder that ended wrote of itself is gone with it.
            Ok(()) => file.set_len(0).map(|()| Some(WriterLock { _file: file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }

    /// Writes this process into the lock file (its id and its command, `situate lsp`), so
    /// that the processes it turns away can say who writes the index.
    pub fn name_holder(&self) -> std::io::Result<()> {
        const COMMANDS: [&str; 7] = ["index", "search", "show", "status", "eval", "lsp", "mcp"];
        let mut args = std::env::args().skip(1);
        let command = args
            .find(|a| COMMANDS.contains(&a.as_str()))
            .map_or_else(|| "situate".to_string(), |c| format!("situate {c}"));
        let line = format!("{} {command}\n", std::process::id());
        self._file.write_all_at(line.as_bytes(), 0)
    }

    /// Who holds the lock at `path`, as its holder wrote itself in ([`WriterLock::name_holder`]):
    /// `None` when nobody holds it or nobody said.
    pub fn holder(path: &Path) -> Option<Holder> {
        if !matches!(WriterLock::try_acquire(path), Ok(None)) {
            return None;
        }
        let text = std::fs::read_to_string(path).ok()?;
        let (pid, command) = text.trim().split_once(' ')?;
        Some(Holder { pid: pid.parse().ok()?, command: command.to_string() })
    }
}

/// The process that holds a writer lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// `situate lsp`, `situate mcp`, `situate index`, ...
    pub command: String,
}

impl Holder {
    /// What the holder does with the index, for the message of a process it turns away.
    pub fn describe(&self) -> String {
        let what = match self.command.as_str() {
            "situate lsp" => "an editor's language server",
            "situate mcp" => "an AI agent's MCP server",
            _ => "another situate process",
        };
        format!("{what} (`{}`, process {})", self.command, self.pid)
    }

    /// What a process it turns away from writing can do meanwhile.
    pub fn meanwhile(&self) -> &'static str {
        match self.command.as_str() {
            "situate lsp" => "it indexes files as they change, and `situate search` reads its commits",
            "situate mcp" => "it lets go of the index a few seconds after its last call: try again then",
            _ => "try again when it is done",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("writer.lock");
        let first = WriterLock::try_acquire(&p).unwrap();
        assert!(first.is_some());
        assert!(WriterLock::try_acquire(&p).unwrap().is_none());
        drop(first);
        assert!(WriterLock::try_acquire(&p).unwrap().is_some());
    }

    #[test]
    fn a_holder_that_named_itself_is_known_while_it_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("writer.lock");
        std::fs::write(&p, "999999 situate a stale holder with a longer line\n").unwrap();
        let lock = WriterLock::try_acquire(&p).unwrap().unwrap();
        assert_eq!(WriterLock::holder(&p), None, "it has not named itself yet");
        lock.name_holder().unwrap();
        let holder = WriterLock::holder(&p).unwrap();
        assert_eq!(holder.pid, std::process::id());
        assert!(holder.command.starts_with("situate"), "{holder:?}");
        drop(lock);
        assert_eq!(WriterLock::holder(&p), None, "nobody holds it");
        let lsp = Holder { pid: 12, command: "situate lsp".into() };
        assert_eq!(lsp.describe(), "an editor's language server (`situate lsp`, process 12)");
    }
}
