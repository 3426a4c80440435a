//! A vector file's sidecar (`vectors.sig`, `quick.sig`): each row's chunk id, checksum and
//! sign bits, in the file's row order, so that an open reads these 48 bytes a row (at 256
//! dimensions) instead of the whole 268-byte row.
//!
//! Layout: `MAGIC`, dimensions as u32 and the quick file's nonce as u32, then per row the
//! id, the xxh3 of the row's bytes and the sign words, each a u64, all little-endian. The
//! manifest's checksum of the quick file is the xxh3 of these sidecar rows; a row's own
//! bytes are checked against their checksum each time they are read, so a row changed
//! under the process is found when it would be used, not only at an open. Both files carry the same
//! nonce, made anew when the quick file is rewritten, so that a sidecar of another
//! generation of the file is never taken for this one's; without a usable sidecar an open
//! reads the quick file through and derives the sidecar rows again, as every open did
//! before there was one.
//!
//! The rows themselves are read through at an open, and checked against their checksums,
//! only when the quick file's status (size, modification and change times, inode) is not
//! the one its writer last recorded in `quick.checked`, the way the chunk store's files are
//! trusted (`checked.rs`): a writer knows the rows it wrote, and any change made through
//! the file system moves the change time.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use super::checked::{self, Status};
use super::sign_bits::SignBits;

const MAGIC: &[u8; 8] = b"SITQSIG1";
pub(super) const HEADER_LEN: u64 = 16;
/// Rows read at once by an open: about a megabyte.
const BLOCK_ROWS: usize = 25_000;

/// The sidecar of the quick file at `quick`.
pub(super) fn path_of(quick: &Path) -> PathBuf {
    quick.with_extension("sig")
}

/// Bytes of a sidecar row: the id, the checksum and the sign words.
pub(super) fn row_len(dims: usize) -> usize {
    16 + dims.div_ceil(64) * 8
}

/// A file's row facts, shared by its writer and the sets it published. Rows are only ever
/// appended to them (a rewrite starts new ones), and a set reads only the rows it was
/// published with, so a commit appends under the lock instead of copying them.
#[derive(Clone, Default)]
pub(super) struct SharedFacts(Arc<RwLock<RowFacts>>);

impl SharedFacts {
    pub(super) fn new(facts: RowFacts) -> SharedFacts {
        SharedFacts(Arc::new(RwLock::new(facts)))
    }

    pub(super) fn read(&self) -> RwLockReadGuard<'_, RowFacts> {
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves `staged`'s rows after the shared ones.
    pub(super) fn append(&self, staged: &mut RowFacts) {
        self.0.write().unwrap_or_else(PoisonError::into_inner).append(staged);
    }
}

/// What is kept in memory of every row of a quick file: its signs, for the first pass of a
/// search, and the checksum of its bytes, to check the row when it is read back.
#[derive(Clone, Default)]
pub(super) struct RowFacts {
    pub(super) signs: SignBits,
    checksums: Vec<u64>,
}

impl RowFacts {
    pub(super) fn new(dims: usize) -> RowFacts {
        RowFacts { signs: SignBits::new(dims), checksums: Vec::new() }
    }

    /// No rows, of the same dimensions.
    pub(super) fn empty_like(&self) -> RowFacts {
        RowFacts { signs: self.signs.empty_like(), checksums: Vec::new() }
    }

    /// Appends the facts of an encoded row whose vector bytes are `v`.
    pub(super) fn push(&mut self, row: &[u8], v: &[i8]) {
        self.signs.push(v);
        self.checksums.push(xxh3_64(row));
    }

    /// Moves `other`'s rows after these.
    pub(super) fn append(&mut self, other: &mut RowFacts) {
        self.signs.append(&mut other.signs);
        self.checksums.append(&mut other.checksums);
    }

    /// Appends a row's facts as another set holds them.
    pub(super) fn push_from(&mut self, other: &RowFacts, row: u32) {
        self.signs.push_from(&other.signs, row);
        self.checksums.push(other.checksums[row as usize]);
    }

    /// Whether `bytes` are the bytes committed as `row`.
    pub(super) fn matches(&self, row: u32, bytes: &[u8]) -> bool {
        self.checksums.get(row as usize) == Some(&xxh3_64(bytes))
    }

    /// Bytes held in memory.
    pub(super) fn bytes(&self) -> usize {
        self.signs.bytes() + self.checksums.len() * 8
    }

    /// Rows held.
    pub(super) fn rows(&self) -> usize {
        self.checksums.len()
    }

    /// Appends the sidecar row of the last row pushed, which holds chunk `id`.
    pub(super) fn encode_last(&self, out: &mut Vec<u8>, id: u64) {
        let row = self.checksums.len() - 1;
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&self.checksums[row].to_le_bytes());
        for word in self.signs.row(row as u32) {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }
}

pub(super) fn header(dims: usize, nonce: u32) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&(dims as u32).to_le_bytes());
    h[12..16].copy_from_slice(&nonce.to_le_bytes());
    h
}

/// A nonce for a new quick file: never zero, which files made before the sidecar carry.
pub(super) fn new_nonce() -> u32 {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mixed =
        (nanos as u64 ^ u64::from(std::process::id()).rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((mixed >> 32) as u32).max(1)
}

/// What a sidecar holds of the first `rows` rows.
pub(super) struct Sidecar {
    /// The checksum state over the rows read, to go on from.
    pub(super) hasher: Xxh3,
    pub(super) facts: RowFacts,
    pub(super) ids: Vec<u64>,
}

/// Reads the first `rows` rows of the sidecar at `path` for a quick file of `dims`
/// dimensions and nonce `nonce`; `Err` says why they cannot be used (missing, of another
/// file, short, or not the rows the manifest's `checksum` was taken of).
pub(super) fn read(
    path: &Path,
    dims: usize,
    nonce: u32,
    rows: u64,
    checksum: u64,
) -> Result<Sidecar, String> {
    let why = |e: io::Error| format!("{}: {e}", path.display());
    let file = File::open(path).map_err(why)?;
    let mut head = [0u8; HEADER_LEN as usize];
    file.read_exact_at(&mut head, 0).map_err(why)?;
    if nonce == 0 || head != header(dims, nonce) {
        return Err(format!("{}: not the sidecar of this quick file", path.display()));
    }
    let len = row_len(dims);
    let mut hasher = Xxh3::new();
    let mut facts = RowFacts::new(dims);
    let mut ids = Vec::with_capacity(rows as usize);
    let mut buffer = vec![0u8; BLOCK_ROWS * len];
    let mut first = 0u64;
    while first < rows {
        let count = (rows - first).min(BLOCK_ROWS as u64) as usize;
        let bytes = &mut buffer[..count * len];
        file.read_exact_at(bytes, HEADER_LEN + first * len as u64).map_err(why)?;
        hasher.update(bytes);
        for row in bytes.chunks_exact(len) {
            let mut words = row.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()));
            ids.push(words.next().unwrap_or_default());
            facts.checksums.push(words.next().unwrap_or_default());
            facts.signs.push_words(words);
        }
        first += count as u64;
    }
    if hasher.digest() != checksum {
        return Err(format!(
            "{}: the rows do not match the checksum they were committed with",
            path.display()
        ));
    }
    Ok(Sidecar { hasher, facts, ids })
}

/// The record of the quick file's status as its writer last left it.
pub(super) fn status_record(quick: &Path) -> PathBuf {
    quick.with_extension("checked")
}

fn encode_status((size, modified, changed, inode): Status) -> String {
    format!("{size} {modified} {changed} {inode}\n")
}

/// Records the quick file's status now as intact: its writer has just written or checked
/// every row. Best effort and not synced: a record lost costs the next open a read of the
/// rows.
pub(super) fn record_intact(quick: &Path) {
    let Some(now) = checked::status(quick) else { return };
    let path = status_record(quick);
    let tmp = super::files::temp_sibling(&path);
    let written = std::fs::write(&tmp, encode_status(now)).and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        tracing::debug!("{}: {e}", path.display());
    }
}

/// Whether the quick file has the status its writer last recorded.
pub(super) fn recorded_intact(quick: &Path) -> bool {
    let recorded = std::fs::read_to_string(status_record(quick)).unwrap_or_default();
    checked::status(quick).is_some_and(|now| encode_status(now) == recorded)
}
