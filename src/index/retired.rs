//! Retired vectors: the model's vectors of chunks that went (a file deleted, moved out,
//! briefly unreadable, or edited), kept for a while so that a text that comes back (a
//! branch switched back, an edit undone, a folder excluded and included again) takes its
//! vector again instead of being embedded anew, which costs minutes of a transformer's time
//! on a large folder, or money at a remote model.
//!
//! The vectors themselves stay in the model's vector file as kept rows
//! ([`super::vector_log::VectorLog::retire`]), readable but never searched. This file lists
//! which text each belongs to: `retired.list` beside `vectors.vec`, a header (`MAGIC`) and
//! then entries of the embedded text's xxh3 hash, the chunk id and a checksum of the two,
//! each a little-endian u64, appended at each commit that retires chunks. The list is a
//! cache: an entry whose row is gone, or that fails its checksum, is passed over, and a
//! lost list only means texts embedded again. Rows are found by chunk id, which is never
//! reused, and checked against their commit as every row is, so an entry can never hand one
//! text another's vector.
//!
//! At most [`limit`] vectors are kept, the most recently retired; older ones are forgotten
//! and their rows dropped at the vector file's next compaction.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::Index;
use super::files;
use super::manifest::ChunkRef;

const MAGIC: &[u8; 8] = b"SITRET01";
const ENTRY_LEN: usize = 24;
/// Vectors kept whatever the index's size: a notes folder can take most of itself back.
const KEPT_FLOOR: usize = 4_096;

/// How many retired vectors an index of `live` chunks keeps: a quarter of its size beyond
/// the floor. The vector file compacts when its dead rows outnumber half the live ones by
/// more than the floor, and kept rows are not dead, so keeping them never makes it compact
/// at every commit; on disk they cost at most a quarter more than the live rows.
pub fn limit(live: usize) -> usize {
    live / 4 + KEPT_FLOOR
}

fn checksum(hash: u64, id: u64) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hash.to_le_bytes());
    bytes[8..].copy_from_slice(&id.to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

fn encode(out: &mut Vec<u8>, hash: u64, id: u64) {
    out.extend_from_slice(&hash.to_le_bytes());
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&checksum(hash, id).to_le_bytes());
}

/// The retired vectors of one index, as its writer holds them.
#[derive(Debug)]
pub struct Retired {
    path: PathBuf,
    /// The latest chunk retired with each embedded text's hash.
    by_hash: HashMap<u64, u64>,
    /// Retirements as (hash, id), oldest first; an entry whose hash now names a later
    /// chunk is stale.
    order: VecDeque<(u64, u64)>,
    /// Entries in the file, stale and unreadable ones included.
    in_file: usize,
    /// Entries not yet in the file.
    unsaved: Vec<(u64, u64)>,
    /// The file must be written whole at the next save (it is missing, damaged, or holds
    /// many stale entries).
    rewrite_due: bool,
}

impl Retired {
    /// The list at `path`, its newest `limit` entries; a missing or unreadable file is an
    /// empty list (written anew at the next save).
    pub fn load(path: &Path, limit: usize) -> Retired {
        let mut retired = Retired {
            path: path.to_path_buf(),
            by_hash: HashMap::new(),
            order: VecDeque::new(),
            in_file: 0,
            unsaved: Vec::new(),
            rewrite_due: true,
        };
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::debug!("{}: {e}: retired vectors are not reused", path.display());
                }
                return retired;
            }
        };
        let Some(body) = bytes.strip_prefix(MAGIC.as_slice()) else { return retired };
        let mut entries = Vec::with_capacity(body.len() / ENTRY_LEN);
        let mut intact = body.len() % ENTRY_LEN == 0;
        for entry in body.chunks_exact(ENTRY_LEN) {
            let word = |n: usize| u64::from_le_bytes(entry[n * 8..n * 8 + 8].try_into().unwrap_or_default());
            let (hash, id) = (word(0), word(1));
            if word(2) == checksum(hash, id) {
                entries.push((hash, id));
            } else {
                intact = false;
            }
        }
        retired.in_file = body.len().div_ceil(ENTRY_LEN);
        retired.rewrite_due = !intact;
        // The newest entry of each hash, newest first, up to the limit; then oldest first.
        let mut seen = HashSet::new();
        let mut newest: Vec<(u64, u64)> =
            entries.into_iter().rev().filter(|(hash, _)| seen.insert(*hash)).take(limit).collect();
        newest.reverse();
        retired.by_hash = newest.iter().copied().collect();
        retired.order = newest.into();
        retired
    }

    /// The chunk ids whose rows the list would take back (for opening the vector file).
    pub fn ids(&self) -> HashSet<u64> {
        self.by_hash.values().copied().collect()
    }

    /// Keeps only the entries whose chunk `has_row` holds (a row lost to a compaction, a
    /// model change or damage takes its entry with it).
    pub fn retain(&mut self, has_row: impl Fn(u64) -> bool) {
        let before = self.by_hash.len();
        self.by_hash.retain(|_, id| has_row(*id));
        // Entries that lost their rows are not read again.
        self.rewrite_due |= self.by_hash.len() < before;
        let by_hash = &self.by_hash;
        self.order.retain(|(hash, id)| by_hash.get(hash) == Some(id));
    }

    /// The retired chunk whose vector is that of the text with this hash.
    pub fn get(&self, hash: u64) -> Option<u64> {
        self.by_hash.get(&hash).copied()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// Records that the chunk `id`, whose text has `hash`, went with its row kept; returns
    /// the chunk retired earlier with the same text, whose row is no longer wanted.
    pub fn retire(&mut self, hash: u64, id: u64) -> Option<u64> {
        let before = self.by_hash.insert(hash, id).filter(|old| *old != id);
        self.order.push_back((hash, id));
        self.unsaved.push((hash, id));
        before
    }

    /// Forgets the oldest entries past `limit`; returns their chunks, whose rows are no
    /// longer wanted.
    pub fn trim(&mut self, limit: usize) -> Vec<u64> {
        let mut forgotten = Vec::new();
        while self.by_hash.len() > limit {
            let Some((hash, id)) = self.order.pop_front() else { break };
            if self.by_hash.get(&hash) == Some(&id) {
                self.by_hash.remove(&hash);
                forgotten.push(id);
            }
        }
        // Stale entries in the queue are dropped once they outnumber the current ones.
        if self.order.len() > 2 * self.by_hash.len() + KEPT_FLOOR {
            let by_hash = &self.by_hash;
            self.order.retain(|(hash, id)| by_hash.get(hash) == Some(id));
        }
        forgotten
    }

    /// Writes what changed: the new entries appended, or the file written whole when it
    /// is due or holds more stale entries than current ones. Call after the vector file's
    /// commit, so that no entry names a row that a crash could leave unwritten.
    pub fn save(&mut self) -> io::Result<()> {
        if self.unsaved.is_empty() && !self.rewrite_due {
            return Ok(());
        }
        if self.rewrite_due || self.in_file + self.unsaved.len() > 2 * self.by_hash.len() + KEPT_FLOOR {
            let by_hash = &self.by_hash;
            self.order.retain(|(hash, id)| by_hash.get(hash) == Some(id));
            let mut bytes = Vec::with_capacity(MAGIC.len() + self.order.len() * ENTRY_LEN);
            bytes.extend_from_slice(MAGIC);
            for (hash, id) in &self.order {
                encode(&mut bytes, *hash, *id);
            }
            files::write_atomic(&self.path, &bytes)?;
            self.in_file = self.order.len();
            self.rewrite_due = false;
        } else {
            let mut bytes = Vec::with_capacity(self.unsaved.len() * ENTRY_LEN);
            for (hash, id) in &self.unsaved {
                encode(&mut bytes, *hash, *id);
            }
            // Not synced: a list cut short by a crash loses its last entries, which only
            // means their texts are embedded again if they come back.
            OpenOptions::new().append(true).open(&self.path)?.write_all(&bytes)?;
            self.in_file += self.unsaved.len();
        }
        self.unsaved.clear();
        Ok(())
    }
}

impl Index {
    /// Takes the model's rows of chunks that went out of the searched rows: kept, when no
    /// live chunk holds a vector of the same text, else dropped. Call with the removals of
    /// a commit whose chunk store is durable.
    pub(super) fn retire_vectors(&mut self, removed: Vec<ChunkRef>) {
        let Some(log) = self.model_log.as_mut() else { return };
        for chunk in removed {
            let shared = self
                .embed_hashes
                .as_ref()
                .and_then(|ids| ids.get(&chunk.embed_hash))
                .is_some_and(|other| *other != chunk.id && log.contains(*other));
            match self.retired.as_mut() {
                Some(retired) if !shared && log.retire(chunk.id) => {
                    if let Some(earlier) = retired.retire(chunk.embed_hash, chunk.id) {
                        log.forget_kept(earlier);
                    }
                }
                _ => {
                    log.drop_id(chunk.id);
                }
            }
        }
        if let Some(retired) = self.retired.as_mut() {
            for id in retired.trim(limit(log.len())) {
                log.forget_kept(id);
            }
        }
    }

    /// The vector that a chunk which went left for the text with this hash. A row that
    /// cannot be read is passed over: the text is embedded again.
    pub(super) fn retired_vector(&self, hash: u64) -> Option<Vec<f32>> {
        let id = self.retired.as_ref()?.get(hash)?;
        match self.model_log.as_ref()?.kept_vector(id) {
            Ok(vector) => vector,
            Err(e) => {
                tracing::warn!("a retired vector is not reused: {e}");
                None
            }
        }
    }

    /// Writes the list of retired vectors after a commit of the vector file. The list is a
    /// cache: when it cannot be written, the commit stands and the texts of the entries lost
    /// are embedded again if they come back.
    pub(super) fn save_retired(&mut self) {
        if let Some(retired) = self.retired.as_mut()
            && let Err(e) = retired.save()
        {
            tracing::warn!(path = %self.layout.retired().display(), "retired vectors not listed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_entry_of_each_text_is_kept_across_a_save_and_a_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("retired.list");
        let mut list = Retired::load(&path, 10);
        assert_eq!(list.retire(1, 100), None);
        assert_eq!(list.retire(2, 101), None);
        assert_eq!(list.retire(1, 102), Some(100), "the earlier chunk of the same text is given up");
        list.save().unwrap();
        list.retire(3, 103);
        list.save().unwrap();
        let again = Retired::load(&path, 10);
        assert_eq!((again.get(1), again.get(2), again.get(3)), (Some(102), Some(101), Some(103)));
        assert_eq!(again.ids(), HashSet::from([101, 102, 103]));
    }

    #[test]
    fn the_oldest_entries_past_the_limit_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("retired.list");
        let mut list = Retired::load(&path, 10);
        for n in 0..6 {
            list.retire(n, 100 + n);
        }
        assert_eq!(list.trim(4), vec![100, 101]);
        assert_eq!(list.len(), 4);
        list.save().unwrap();
        // A load keeps the newest entries within its own limit.
        let again = Retired::load(&path, 3);
        assert_eq!(again.ids(), HashSet::from([103, 104, 105]));
    }

    #[test]
    fn a_damaged_entry_or_a_torn_tail_is_passed_over_and_the_file_written_whole_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("retired.list");
        let mut list = Retired::load(&path, 10);
        for n in 0..3 {
            list.retire(n, 10 + n);
        }
        list.save().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[MAGIC.len() + ENTRY_LEN + 3] ^= 0x40;
        bytes.extend_from_slice(&[1, 2, 3]);
        std::fs::write(&path, &bytes).unwrap();
        let mut again = Retired::load(&path, 10);
        assert_eq!(again.ids(), HashSet::from([10, 12]));
        again.save().unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), MAGIC.len() + 2 * ENTRY_LEN);
    }

    #[test]
    fn entries_without_a_row_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut list = Retired::load(&dir.path().join("retired.list"), 10);
        list.retire(1, 10);
        list.retire(2, 11);
        list.retain(|id| id == 11);
        assert_eq!((list.get(1), list.get(2)), (None, Some(11)));
    }

    #[test]
    fn stale_entries_are_not_written_again_when_the_file_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("retired.list");
        let mut list = Retired::load(&path, 10);
        // The same text retired many times over: one current entry, the rest stale.
        for n in 0..(KEPT_FLOOR as u64 + 10) {
            list.retire(7, n);
        }
        list.save().unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), MAGIC.len() + ENTRY_LEN);
        assert_eq!(Retired::load(&path, 10).get(7), Some(KEPT_FLOOR as u64 + 9));
    }
}
