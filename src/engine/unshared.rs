//! The chunks whose vectors were computed while the team cache could not take them, kept in
//! the index folder (`unshared.list`) until they are pushed: a process that exits first (a
//! `situate index` run, an editor closed) leaves them to the next one on this index, not
//! to every teammate to compute again.
//!
//! The file is a cache of chunk ids, eight bytes each, little-endian, appended as vectors
//! are kept. An id whose chunk went, or a torn last entry, is passed over; a file that
//! cannot be written only means those vectors may be computed again by teammates.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

/// The file's name in the index folder.
pub(super) const FILE: &str = "unshared.list";

/// At most this many ids are kept (8 MB); beyond, vectors are left for teammates to compute.
pub(super) const MAX: usize = 1_000_000;

/// The ids waiting to be pushed, in the order they were kept, and their file.
pub(super) struct Unshared {
    path: PathBuf,
    ids: Vec<u64>,
    /// How many of `ids` were pushed already (they are dropped from the file when it is
    /// next written whole).
    pushed: usize,
}

impl Unshared {
    /// The ids that `dir`'s file holds; none when it is missing or unreadable.
    pub(super) fn open(dir: &Path) -> Unshared {
        let path = dir.join(FILE);
        let ids = match std::fs::read(&path) {
            Ok(bytes) => bytes
                .chunks_exact(8)
                .take(MAX)
                .map(|b| u64::from_le_bytes(b.try_into().expect("eight bytes")))
                .collect(),
            Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                tracing::warn!(path = %path.display(), "unreadable, passed over: {e}");
                Vec::new()
            }
        };
        Unshared { path, ids, pushed: 0 }
    }

    /// How many wait to be pushed.
    pub(super) fn len(&self) -> usize {
        self.ids.len() - self.pushed
    }

    /// The next `n` ids to push.
    pub(super) fn next(&self, n: usize) -> &[u64] {
        let end = self.ids.len().min(self.pushed + n);
        &self.ids[self.pushed..end]
    }

    /// Keeps these ids, as room allows, in memory and at the end of the file.
    pub(super) fn keep(&mut self, ids: impl IntoIterator<Item = u64>) {
        let room = MAX.saturating_sub(self.len());
        let start = self.ids.len();
        self.ids.extend(ids.into_iter().take(room));
        let bytes: Vec<u8> = self.ids[start..].iter().flat_map(|id| id.to_le_bytes()).collect();
        if bytes.is_empty() {
            return;
        }
        let appended = OpenOptions::new().create(true).append(true).open(&self.path).and_then(|mut f| {
            // A torn entry left by a killed process must not shift the ones after it.
            let len = f.metadata()?.len();
            if len % 8 != 0 {
                f.set_len(len - len % 8)?;
            }
            f.write_all(&bytes)
        });
        if let Err(e) = appended {
            tracing::warn!(path = %self.path.display(), "could not note vectors to share later: {e}");
        }
    }

    /// Notes that the next `n` ids were pushed. The file goes once all were; until then it
    /// is written whole, without them, each time half of what it holds has been pushed.
    pub(super) fn pushed(&mut self, n: usize) {
        self.pushed = self.ids.len().min(self.pushed + n);
        if self.pushed == self.ids.len() {
            self.ids.clear();
            self.pushed = 0;
            if let Err(e) = std::fs::remove_file(&self.path)
                && e.kind() != ErrorKind::NotFound
            {
                tracing::warn!(path = %self.path.display(), "could not remove: {e}");
            }
        } else if self.pushed * 2 >= self.ids.len() {
            self.ids.drain(..self.pushed);
            self.pushed = 0;
            if let Err(e) = self.write_whole() {
                tracing::warn!(path = %self.path.display(), "could not write: {e}");
            }
        }
    }

    fn write_whole(&self) -> std::io::Result<()> {
        let temporary = self.path.with_extension("list.new");
        let mut file = File::create(&temporary)?;
        let bytes: Vec<u8> = self.ids.iter().flat_map(|id| id.to_le_bytes()).collect();
        file.write_all(&bytes)?;
        std::fs::rename(&temporary, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_ids_outlive_the_process_until_they_are_pushed() {
        let dir = tempfile::tempdir().unwrap();
        let mut list = Unshared::open(dir.path());
        assert_eq!(list.len(), 0);
        list.keep([5, 6, 7]);
        list.keep([8]);
        let mut list = Unshared::open(dir.path());
        assert_eq!(list.next(10), &[5, 6, 7, 8]);
        assert_eq!(list.next(2), &[5, 6]);
        list.pushed(1);
        assert_eq!(list.next(10), &[6, 7, 8]);
        // Half pushed: the file is written without them.
        list.pushed(1);
        assert_eq!(Unshared::open(dir.path()).next(10), &[7, 8]);
        list.pushed(2);
        assert_eq!(list.len(), 0);
        assert!(!dir.path().join(FILE).exists());
    }

    #[test]
    fn a_torn_entry_is_passed_over_and_cut_before_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes: Vec<u8> = 9u64.to_le_bytes().to_vec();
        bytes.extend([1, 2, 3]);
        std::fs::write(dir.path().join(FILE), bytes).unwrap();
        let mut list = Unshared::open(dir.path());
        assert_eq!(list.next(10), &[9]);
        list.keep([10]);
        assert_eq!(Unshared::open(dir.path()).next(10), &[9, 10]);
    }

    #[test]
    fn no_more_than_the_limit_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut list = Unshared::open(dir.path());
        list.keep(0..MAX as u64 + 5);
        assert_eq!(list.len(), MAX);
        list.keep([1]);
        assert_eq!(list.len(), MAX);
        assert_eq!(std::fs::metadata(dir.path().join(FILE)).unwrap().len(), 8 * MAX as u64);
    }
}
