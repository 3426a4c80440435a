//! The vector journal of earlier versions: an append-only log of vector additions and
//! removals since their usearch file was last written whole, replayed once when such an
//! index is converted to the vector file of rows (`load.rs`). Only tests write one now.
//!
//! Layout: a header (`MAGIC`, dimensions as u32), then records, little-endian: `1` id
//! vector (add), `2` id (remove), `3` generation checksum (commit). The checksum (xxh3) covers
//! every byte of the commit's records and its generation, so that damage anywhere (a changed
//! id, a zeroed run, bytes inserted) ends the replay at the last intact commit instead of
//! misapplying a record. Replay applies records up to the last intact commit marker; a torn
//! tail (a crash mid-append) is ignored and cut off by the next writer. Replaying is idempotent — ids are never reused — so a log that outlived a full
//! rewrite of the vector file (a crash between the two) does no harm.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 8] = b"SITVJNL2";
const HEADER_LEN: u64 = 12;
const ADD: u8 = 1;
const REMOVE: u8 = 2;
const COMMIT: u8 = 3;

/// One change to the vectors.
#[derive(Debug, Clone, PartialEq)]
pub enum VectorOp {
    Add(u64, Vec<f32>),
    Remove(u64),
}

/// What a replay found.
#[derive(Debug, Default)]
pub struct Replay {
    /// Committed operations in order.
    pub ops: Vec<VectorOp>,
    /// The generation of the last commit marker.
    pub generation: Option<u64>,
    /// Byte length of the log up to and including the last commit marker.
    pub committed_len: u64,
}

/// The journal file of one index, as earlier versions wrote it.
#[cfg(test)]
#[derive(Debug)]
pub struct Journal {
    path: std::path::PathBuf,
    dimensions: usize,
    /// Bytes of committed records after the header.
    len: u64,
    /// Committed additions: each costs a graph insert when the journal is replayed.
    adds: usize,
}

fn journal_err(path: &Path, e: impl ToString) -> std::io::Error {
    std::io::Error::other(format!("{}: {}", path.display(), e.to_string()))
}

/// Reads the committed records of the journal at `path` (none when it does not exist).
pub fn replay(path: &Path, dimensions: usize) -> std::io::Result<Replay> {
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut f) => {
            f.read_to_end(&mut bytes)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Replay::default()),
        Err(e) => return Err(e),
    }
    if bytes.len() < HEADER_LEN as usize || &bytes[..8] != MAGIC {
        return Err(journal_err(path, "not a vector journal"));
    }
    let dims = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or_default()) as usize;
    if dims != dimensions {
        return Err(journal_err(path, format!("journal of {dims} dimensions, expected {dimensions}")));
    }
    let mut replay = Replay { committed_len: HEADER_LEN, ..Replay::default() };
    let mut pending = Vec::new();
    let mut at = HEADER_LEN as usize;
    // Where the records of the commit being read begin.
    let mut group = at;
    let take_u64 =
        |at: usize| bytes.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
    while let Some(&tag) = bytes.get(at) {
        match tag {
            ADD => {
                let Some(id) = take_u64(at + 1) else { break };
                let start = at + 9;
                let Some(raw) = bytes.get(start..start + 4 * dimensions) else { break };
                let v = raw
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap_or_default()))
                    .collect();
                pending.push(VectorOp::Add(id, v));
                at = start + 4 * dimensions;
            }
            REMOVE => {
                let Some(id) = take_u64(at + 1) else { break };
                pending.push(VectorOp::Remove(id));
                at += 9;
            }
            COMMIT => {
                let (Some(generation), Some(checksum)) = (take_u64(at + 1), take_u64(at + 9)) else {
                    break;
                };
                if xxh3_64(&bytes[group..at + 9]) != checksum {
                    break;
                }
                at += 17;
                group = at;
                replay.ops.append(&mut pending);
                replay.generation = Some(generation);
                replay.committed_len = at as u64;
            }
            // Anything else is a torn or damaged tail: stop at the last commit.
            _ => break,
        }
    }
    Ok(replay)
}

#[cfg(test)]
impl Journal {
    /// Opens the journal for appending after what `replay` found committed, cutting off any
    /// torn tail; creates it when missing.
    pub fn open(path: &Path, dimensions: usize, replay: &Replay) -> std::io::Result<Journal> {
        use std::fs::OpenOptions;
        let committed_len = replay.committed_len;
        if committed_len <= HEADER_LEN {
            return Journal::reset(path, dimensions);
        }
        let f = OpenOptions::new().write(true).open(path)?;
        if f.metadata()?.len() != committed_len {
            f.set_len(committed_len)?;
            f.sync_all()?;
        }
        let adds = replay.ops.iter().filter(|op| matches!(op, VectorOp::Add(..))).count();
        Ok(Journal { path: path.to_path_buf(), dimensions, len: committed_len - HEADER_LEN, adds })
    }

    /// Replaces the journal with an empty one (after the vector file was written whole).
    pub fn reset(path: &Path, dimensions: usize) -> std::io::Result<Journal> {
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&(dimensions as u32).to_le_bytes());
        super::files::write_atomic(path, &header)?;
        Ok(Journal { path: path.to_path_buf(), dimensions, len: 0, adds: 0 })
    }

    /// Committed additions.
    pub fn adds(&self) -> usize {
        self.adds
    }

    /// Appends `ops` and a commit marker for `generation`, and makes them durable.
    pub fn append(&mut self, ops: &[VectorOp], generation: u64) -> std::io::Result<()> {
        use std::fs::OpenOptions;
        use std::io::{BufWriter, Seek, SeekFrom, Write};
        let mut group = Vec::new();
        let mut adds = 0;
        for op in ops {
            match op {
                VectorOp::Add(id, v) => {
                    if v.len() != self.dimensions {
                        return Err(journal_err(&self.path, "vector of the wrong dimension"));
                    }
                    group.push(ADD);
                    group.extend_from_slice(&id.to_le_bytes());
                    for x in v {
                        group.extend_from_slice(&x.to_le_bytes());
                    }
                    adds += 1;
                }
                VectorOp::Remove(id) => {
                    group.push(REMOVE);
                    group.extend_from_slice(&id.to_le_bytes());
                }
            }
        }
        group.push(COMMIT);
        group.extend_from_slice(&generation.to_le_bytes());
        let checksum = xxh3_64(&group);
        group.extend_from_slice(&checksum.to_le_bytes());
        let mut f = OpenOptions::new().write(true).open(&self.path)?;
        f.seek(SeekFrom::Start(HEADER_LEN + self.len))?;
        let mut w = BufWriter::new(&mut f);
        w.write_all(&group)?;
        w.flush()?;
        drop(w);
        f.sync_data()?;
        self.len += group.len() as u64;
        self.adds += adds;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_records_replay_in_order_and_a_torn_tail_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.log");
        let mut j = Journal::reset(&p, 2).unwrap();
        j.append(&[VectorOp::Add(1, vec![1.0, 0.0]), VectorOp::Add(2, vec![0.0, 1.0])], 7).unwrap();
        j.append(&[VectorOp::Remove(1)], 8).unwrap();
        let full = std::fs::read(&p).unwrap();

        let r = replay(&p, 2).unwrap();
        assert_eq!(r.generation, Some(8));
        assert_eq!(
            r.ops,
            [VectorOp::Add(1, vec![1.0, 0.0]), VectorOp::Add(2, vec![0.0, 1.0]), VectorOp::Remove(1)]
        );
        assert_eq!(r.committed_len, full.len() as u64);

        // A crash in the middle of the next append leaves half a record.
        let mut torn = full.clone();
        torn.extend_from_slice(&[ADD, 9, 0, 0]);
        std::fs::write(&p, &torn).unwrap();
        let r = replay(&p, 2).unwrap();
        assert_eq!(r.generation, Some(8));
        assert_eq!(r.ops.len(), 3);
        // Records without a commit marker do not count either.
        let mut uncommitted = full.clone();
        uncommitted.extend_from_slice(&[REMOVE, 2, 0, 0, 0, 0, 0, 0, 0]);
        std::fs::write(&p, &uncommitted).unwrap();
        let r = replay(&p, 2).unwrap();
        assert_eq!(r.ops.len(), 3);

        // The next writer cuts the tail off and appends after the last commit.
        let mut j = Journal::open(&p, 2, &r).unwrap();
        assert_eq!(j.adds(), 2);
        j.append(&[VectorOp::Remove(2)], 9).unwrap();
        let r = replay(&p, 2).unwrap();
        assert_eq!(r.generation, Some(9));
        assert_eq!(r.ops.last(), Some(&VectorOp::Remove(2)));
        assert_eq!(r.ops.len(), 4);
    }

    #[test]
    fn a_changed_byte_ends_the_replay_at_the_last_intact_commit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.log");
        let mut j = Journal::reset(&p, 2).unwrap();
        j.append(&[VectorOp::Add(1, vec![1.0, 0.0])], 7).unwrap();
        let first = std::fs::read(&p).unwrap().len();
        j.append(&[VectorOp::Remove(1), VectorOp::Add(2, vec![0.0, 1.0])], 8).unwrap();
        let full = std::fs::read(&p).unwrap();
        // An id in the second commit turned into another: the record is well formed, only
        // the checksum can tell.
        let mut damaged = full.clone();
        damaged[first + 1] ^= 0x04;
        std::fs::write(&p, &damaged).unwrap();
        let r = replay(&p, 2).unwrap();
        assert_eq!((r.generation, r.ops.len()), (Some(7), 1));
        assert_eq!(r.committed_len, first as u64);
        // The same in the first commit leaves nothing to replay.
        let mut damaged = full;
        damaged[HEADER_LEN as usize + 3] ^= 0x01;
        std::fs::write(&p, &damaged).unwrap();
        let r = replay(&p, 2).unwrap();
        assert_eq!((r.generation, r.ops.len()), (None, 0));
    }

    #[test]
    fn a_missing_journal_is_empty_and_a_foreign_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.log");
        assert!(replay(&p, 4).unwrap().ops.is_empty());
        std::fs::write(&p, b"something else entirely").unwrap();
        assert!(replay(&p, 4).is_err());
        Journal::reset(&p, 4).unwrap();
        assert!(replay(&p, 8).unwrap_err().to_string().contains("dimensions"));
    }
}
