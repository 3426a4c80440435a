//! The writer lock: one process at a time may change an index; others read it.

use std::fs::{File, OpenOptions, TryLockError};
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
            Ok(()) => Ok(Some(WriterLock { _file: file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(e),
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
}
