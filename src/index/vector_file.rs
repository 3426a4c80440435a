//! Vector files of int8 rows, searched with positioned reads: the index's model's vectors
//! (`vectors.vec`) and quick vectors. While a slow model's vectors are pending, each
//! waiting chunk has a vector from the built-in static model, so that the vector arm of a
//! search covers every chunk from the first commit on.
//!
//! They are kept with the index in `quick.vec`, so that no process makes them again when it
//! opens the index: an append-only file of int8 rows (`MAGIC`, dimensions as u32, a nonce
//! as u32, then rows of id u64, scale f32 and one signed byte per dimension, all
//! little-endian). A vector is stored as `scale × bytes`; unit vectors lose well under a
//! percent of their similarity to rounding, and a quarter of the space of f32. Beside it,
//! `quick.sig` holds each row's id and signs (`vector_sidecar.rs`), which is all an open
//! reads. The manifest records, with each commit, how many rows the file holds and the
//! xxh3 checksum of their sidecar rows:
//! rows past that count are an unfinished write and are cut off by the next writer, and
//! rows that no longer stand in for anything (their chunk's own vector arrived, or the
//! chunk went) are skipped, and dropped when the file is rewritten at its next compaction.
//!
//! `VectorLog` (in `vector_log.rs`) is the writer's side; [`VectorSet`] is one commit's searchable rows, shared
//! by snapshots. A set reads the file with positioned reads, never through a memory map: a
//! mapped file cut short under a running process (a sync tool, a disk fault, another
//! program) kills it with SIGBUS at the next search, where a read is an error that the
//! search reports while the process goes on serving. A set keeps each row's sign bits in
//! memory ([`super::sign_bits`], 32 bytes a row at 256 dimensions); up to
//! [`EXACT_VECTOR_LIMIT`] rows a search compares every row exactly, above it the sign bits
//! preselect a few hundred candidates and only their rows are read and compared.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use rayon::prelude::*;

use super::IndexError;
use super::sign_bits::{self, QueryPlanes};
use super::vector_scan::{Scan, ScanRows, TopK, dot_i8};
use super::vector_sidecar::{RowFacts, SharedFacts};

const MAGIC: &[u8; 8] = b"SITQVEC1";
pub(super) const HEADER_LEN: u64 = 16;
/// Bytes of a row before its vector: the chunk id and the scale.
const ROW_PREFIX: usize = 12;
/// Sets with more rows than this are scanned on the rayon pool.
const PARALLEL_ROWS: usize = 32_768;
/// Rows read at once by a scan or an open: about a megabyte at 256 dimensions.
pub(super) const BLOCK_ROWS: u32 = 4_096;
/// Sets of up to this many rows are searched exactly: every row read and compared. Above
/// it, the sign bits choose the candidates whose rows are read.
pub const EXACT_VECTOR_LIMIT: usize = 100_000;
/// Above [`EXACT_VECTOR_LIMIT`], the candidates the sign bits keep for each result asked,
/// and the fewest they keep. Chosen by the recall measured against the exact scan on a
/// million rows (`benches/vectors.rs`, docs/performance.md).
const PRESELECT_PER_RESULT: usize = 40;
const PRESELECT_MIN: usize = 4_000;
/// A search among some rows reads them one by one when they are fewer than one in this
/// many of the rows they span, and a block at a time otherwise.
const SPARSE_ROWS: usize = 8;
/// Candidates compared on one thread; more are split over the rayon pool.
const COMPARE_ROWS: usize = 1_024;

pub(super) fn row_len(dims: usize) -> usize {
    ROW_PREFIX + dims
}

/// A unit vector as a scale and one signed byte per dimension.
pub fn quantize(v: &[f32]) -> (f32, Vec<i8>) {
    let max = v.iter().fold(0.0f32, |m, x| if x.is_finite() { m.max(x.abs()) } else { m });
    if max == 0.0 {
        return (0.0, vec![0; v.len()]);
    }
    let scale = max / 127.0;
    let bytes = v
        .iter()
        .map(|x| if x.is_finite() { (x / scale).round().clamp(-127.0, 127.0) as i8 } else { 0 })
        .collect();
    (scale, bytes)
}

/// Appends a row to `out` and its facts to `facts`. The vector is rounded to half floats
/// first, as the team cache keeps vectors, so that one taken from the cache is stored as
/// the very bytes of the one computed here, and both machines answer alike.
pub(super) fn encode_row(out: &mut Vec<u8>, facts: &mut RowFacts, id: u64, v: &[f32]) {
    let halved: Vec<f32> = v.iter().map(|x| half::f16::from_f32(*x).to_f32()).collect();
    let (scale, bytes) = quantize(&halved);
    let start = out.len();
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend(bytes.iter().map(|b| *b as u8));
    facts.push(&out[start..], &bytes);
}

/// The vector an encoded row holds, and its chunk id.
pub(super) fn decode_row(row: &[u8]) -> (u64, Vec<f32>) {
    let (id, scale, bytes) = split_row(row);
    (id, bytes.iter().map(|b| f32::from(*b) * scale).collect())
}

fn as_i8(bytes: &[u8]) -> &[i8] {
    // SAFETY: i8 and u8 have the same size and alignment; every bit pattern is valid.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<i8>(), bytes.len()) }
}

/// A row's chunk id, scale and bytes.
pub(super) fn split_row(row: &[u8]) -> (u64, f32, &[i8]) {
    let id = u64::from_le_bytes(row[..8].try_into().unwrap_or_default());
    let scale = f32::from_le_bytes(row[8..12].try_into().unwrap_or_default());
    (id, scale, as_i8(&row[ROW_PREFIX..]))
}

/// The file's header: its dimensions and the nonce its sidecar must carry too.
pub(super) fn header(dims: usize, nonce: u32) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&(dims as u32).to_le_bytes());
    h[12..16].copy_from_slice(&nonce.to_le_bytes());
    h
}

/// The error of a row that cannot be read as it was committed.
fn changed_under(what: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{what} (the file was changed under the index: its vectors are made again)"),
    )
}

/// Where a set's rows are: the quick file, read by positioned reads, or memory.
pub(super) enum Rows {
    File(File),
    Owned(Vec<u8>),
    Empty,
}

impl Rows {
    /// The bytes of rows `first..first + count`, read into `buffer` or borrowed.
    pub(super) fn read<'a>(
        &'a self,
        first: u32,
        count: u32,
        len: usize,
        buffer: &'a mut Vec<u8>,
    ) -> io::Result<&'a [u8]> {
        let start = first as usize * len;
        let bytes = count as usize * len;
        match self {
            Rows::File(file) => {
                buffer.resize(bytes, 0);
                file.read_exact_at(buffer, HEADER_LEN + start as u64).map_err(|e| {
                    changed_under(format_args!("rows {first}..{} cannot be read: {e}", first + count))
                })?;
                Ok(buffer)
            }
            Rows::Owned(v) => v.get(start..start + bytes).ok_or_else(|| changed_under("rows past the end")),
            Rows::Empty => Err(changed_under("rows of an empty set")),
        }
    }
}

/// Rows read at once, seen by the scan.
struct Block<'a> {
    first: u32,
    len: usize,
    bytes: &'a [u8],
}

impl Block<'_> {
    #[inline(always)]
    fn row(&self, row: u32) -> &[u8] {
        let start = (row - self.first) as usize * self.len;
        &self.bytes[start..start + self.len]
    }
}

impl ScanRows for Block<'_> {
    #[inline(always)]
    fn id_at(&self, row: u32) -> u64 {
        u64::from_le_bytes(self.row(row)[..8].try_into().unwrap_or_default())
    }

    #[inline(always)]
    fn scale_at(&self, row: u32) -> f32 {
        f32::from_le_bytes(self.row(row)[8..12].try_into().unwrap_or_default())
    }

    #[inline(always)]
    fn bytes_at(&self, row: u32) -> &[i8] {
        as_i8(&self.row(row)[ROW_PREFIX..])
    }
}

/// The live row of each chunk, in a table indexed by chunk id. Ids are handed out in order
/// from zero and never reused, so the table is dense; at a million chunks it is a tenth of
/// the memory of a hash map and is built and asked many times faster, which an open of a
/// large index does a million times over.
#[derive(Clone, Default)]
pub(super) struct RowsById {
    rows: Vec<u32>,
    count: usize,
}

/// A table slot without a row.
const NO_ROW: u32 = u32::MAX;

impl RowsById {
    /// A table of (id, row) pairs; an id given twice keeps its later row.
    pub(super) fn from_rows(pairs: impl IntoIterator<Item = (u64, u32)>) -> Self {
        let mut table = RowsById::default();
        for (id, row) in pairs {
            table.insert(id, row);
        }
        table
    }

    pub(super) fn get(&self, id: u64) -> Option<u32> {
        self.rows.get(usize::try_from(id).ok()?).copied().filter(|row| *row != NO_ROW)
    }

    pub(super) fn insert(&mut self, id: u64, row: u32) {
        let slot = id as usize;
        if slot >= self.rows.len() {
            self.rows.resize((slot + 1).max(self.rows.len() * 2), NO_ROW);
        }
        if self.rows[slot] == NO_ROW {
            self.count += 1;
        }
        self.rows[slot] = row;
    }

    /// Whether the id had a row.
    pub(super) fn remove(&mut self, id: u64) -> bool {
        match self.rows.get_mut(id as usize) {
            Some(row) if *row != NO_ROW => {
                *row = NO_ROW;
                self.count -= 1;
                true
            }
            _ => false,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Bytes held in memory.
    fn bytes(&self) -> usize {
        self.rows.len() * 4
    }

    /// The live rows, ascending, of a file of `rows` rows: found by marking each in a bit
    /// set rather than by sorting them, so that a set is published in linear time.
    pub(super) fn ascending(&self, rows: usize) -> Vec<u32> {
        let mut marks = vec![0u64; rows.div_ceil(64)];
        for row in self.rows.iter().copied().filter(|row| (*row as usize) < rows) {
            marks[row as usize / 64] |= 1 << (row % 64);
        }
        let mut out = Vec::with_capacity(self.count);
        for (w, mut word) in marks.into_iter().enumerate() {
            while word != 0 {
                out.push((w * 64) as u32 + word.trailing_zeros());
                word &= word - 1;
            }
        }
        out
    }

    /// The (id, row) pairs, by id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.rows.iter().enumerate().filter(|(_, row)| **row != NO_ROW).map(|(id, row)| (id as u64, *row))
    }
}

/// How a quick set is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorSearch {
    /// Every live row read and compared.
    Exact,
    /// The best `n` rows by their sign bits read and compared.
    Preselect(usize),
}

impl VectorSearch {
    /// How a search for `limit` results in a set of `rows` rows goes by default.
    pub fn for_size(rows: usize, limit: usize) -> VectorSearch {
        if rows <= EXACT_VECTOR_LIMIT {
            VectorSearch::Exact
        } else {
            VectorSearch::Preselect((limit * PRESELECT_PER_RESULT).max(PRESELECT_MIN))
        }
    }
}

/// One commit's quick vectors: the rows that stand in for pending vectors.
pub struct VectorSet {
    dims: usize,
    rows: Rows,
    /// The file the rows are read from, for errors.
    path: PathBuf,
    /// The signs and checksums of every row of the file (live or not), by row number.
    facts: SharedFacts,
    /// Row numbers of the live rows, ascending.
    live: Vec<u32>,
    /// The live row of each chunk, by id (shared with the writer's log).
    by_id: Arc<RowsById>,
}

impl Default for VectorSet {
    fn default() -> Self {
        VectorSet {
            dims: 0,
            rows: Rows::Empty,
            path: PathBuf::new(),
            facts: SharedFacts::default(),
            live: Vec::new(),
            by_id: Arc::default(),
        }
    }
}

impl std::fmt::Debug for VectorSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorSet").field("len", &self.live.len()).field("dims", &self.dims).finish()
    }
}

impl VectorSet {
    /// A set made in memory (a reader of an index whose writer has not stored them yet).
    pub fn in_memory(dims: usize, vectors: &[(u64, Vec<f32>)]) -> VectorSet {
        let mut bytes = Vec::with_capacity(vectors.len() * row_len(dims));
        let mut facts = RowFacts::new(dims);
        let mut live = Vec::with_capacity(vectors.len());
        for (id, v) in vectors.iter().filter(|(_, v)| v.len() == dims) {
            live.push((*id, live.len() as u32));
            encode_row(&mut bytes, &mut facts, *id, v);
        }
        let rows = Rows::Owned(bytes);
        VectorSet::with_live(dims, rows, PathBuf::new(), SharedFacts::new(facts), live.into_iter())
    }

    /// A set of the given rows; an id given twice keeps its later row.
    pub(super) fn with_live(
        dims: usize,
        rows: Rows,
        path: PathBuf,
        facts: SharedFacts,
        live: impl Iterator<Item = (u64, u32)>,
    ) -> VectorSet {
        VectorSet::with_table(dims, rows, path, facts, Arc::new(RowsById::from_rows(live)))
    }

    /// A set of the rows `by_id` holds.
    pub(super) fn with_table(
        dims: usize,
        rows: Rows,
        path: PathBuf,
        facts: SharedFacts,
        by_id: Arc<RowsById>,
    ) -> VectorSet {
        let live = by_id.ascending(facts.read().rows());
        VectorSet { dims, rows, path, facts, live, by_id }
    }

    fn row_of(&self, id: u64) -> Option<u32> {
        self.by_id.get(id)
    }

    fn error(&self, source: io::Error) -> IndexError {
        IndexError::Io { path: self.path.display().to_string(), source }
    }

    /// The id, scale and bytes of a live row, checked against what the set holds of it.
    fn read_row<'a>(&'a self, row: u32, buffer: &'a mut Vec<u8>) -> Result<(u64, f32, &'a [i8]), IndexError> {
        let bytes = self.rows.read(row, 1, row_len(self.dims), buffer).map_err(|e| self.error(e))?;
        let (id, scale, v) = split_row(bytes);
        if self.row_of(id) != Some(row) || !self.facts.read().matches(row, bytes) {
            return Err(self.error(changed_under(format_args!("row {row} is not the row committed"))));
        }
        Ok((id, scale, v))
    }

    /// Chunks with a quick vector.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.row_of(id).is_some()
    }

    /// The chunks with a quick vector.
    pub fn ids(&self) -> Vec<u64> {
        self.by_id.iter().map(|(id, _)| id).collect()
    }

    /// Bytes this set holds in memory besides its rows on disk (the sign bits and the
    /// tables of live rows).
    pub fn memory_bytes(&self) -> usize {
        let rows = match &self.rows {
            Rows::Owned(v) => v.len(),
            _ => 0,
        };
        rows + self.facts.read().bytes() + self.live.len() * 4 + self.by_id.bytes()
    }

    /// The vector of a chunk, as stored (int8 precision).
    pub fn vector_of(&self, id: u64) -> Result<Option<Vec<f32>>, IndexError> {
        let Some(row) = self.row_of(id) else { return Ok(None) };
        let mut buffer = Vec::new();
        let (_, scale, bytes) = self.read_row(row, &mut buffer)?;
        Ok(Some(bytes.iter().map(|b| f32::from(*b) * scale).collect()))
    }

    /// The cosine similarity of a chunk's quick vector to `query` (unit length).
    #[cfg(test)]
    pub fn similarity(&self, id: u64, query: &[f32]) -> Result<Option<f32>, IndexError> {
        if query.len() != self.dims {
            return Ok(None);
        }
        let Some(row) = self.row_of(id) else { return Ok(None) };
        let (qscale, q) = quantize(query);
        let mut buffer = Vec::new();
        let (_, scale, bytes) = self.read_row(row, &mut buffer)?;
        Ok(Some(dot_i8(bytes, &q) as f32 * qscale * scale))
    }

    /// The `limit` nearest vectors to `query` by cosine similarity (all vectors are unit
    /// length), best first; ties go to the smaller id. Exact up to [`EXACT_VECTOR_LIMIT`]
    /// rows; see [`VectorSearch::for_size`].
    pub fn nearest(&self, query: &[f32], limit: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        self.nearest_with(query, limit, VectorSearch::for_size(self.len(), limit))
    }

    /// [`VectorSet::nearest`], searched as `how` says. The scores of the rows found are the
    /// same either way: a preselected row is compared as the exact scan compares it.
    pub fn nearest_with(
        &self,
        query: &[f32],
        limit: usize,
        how: VectorSearch,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        self.nearest_in_rows(query, limit, how, &self.live)
    }

    /// The `limit` vectors of `ids` nearest to `query`, best first, searched as
    /// [`VectorSet::nearest`] searches the whole set: a filtered search (a folder, front
    /// matter) reads only the rows it may return, exactly up to [`EXACT_VECTOR_LIMIT`] of
    /// them and by their sign bits above. Ids without a row here are passed over.
    pub fn nearest_among(
        &self,
        query: &[f32],
        limit: usize,
        ids: &HashSet<u64>,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let mut rows: Vec<u32> = ids.iter().filter_map(|id| self.row_of(*id)).collect();
        rows.sort_unstable();
        self.nearest_in_rows(query, limit, VectorSearch::for_size(rows.len(), limit), &rows)
    }

    /// The search of [`VectorSet::nearest_with`] over `live`, some of the live rows,
    /// ascending.
    fn nearest_in_rows(
        &self,
        query: &[f32],
        limit: usize,
        how: VectorSearch,
        live: &[u32],
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        if query.len() != self.dims || limit == 0 || live.is_empty() {
            return Ok(Vec::new());
        }
        let (qscale, q) = quantize(query);
        let mut all = match how {
            VectorSearch::Preselect(count) if count.max(limit) < live.len() => {
                let planes = QueryPlanes::new(&q);
                // The guard goes before the rows are read: each takes its own, and a read
                // lock taken twice on one thread could wait behind a writer's.
                let candidates = {
                    let facts = self.facts.read();
                    sign_bits::preselect(&facts.signs, live, &planes, count.max(limit), PARALLEL_ROWS)
                };
                self.compare_rows(&candidates, &q, limit)?
            }
            // Rows far apart (a small folder of a large set) are read one by one: a scan
            // reads every row between them.
            _ if live.len() < (live[live.len() - 1] - live[0]) as usize / SPARSE_ROWS => {
                self.compare_rows(live, &q, limit)?
            }
            _ => self.scan(&q, limit, live)?,
        };
        for hit in &mut all {
            hit.1 *= qscale;
        }
        Ok(all)
    }

    /// The best `limit` of these live rows (ascending), each read on its own, split over
    /// the rayon pool when there are many: a read is a system call of a few microseconds.
    fn compare_rows(&self, rows: &[u32], q: &[i8], limit: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        let best_of = |rows: &[u32]| -> Result<Vec<(u64, f32)>, IndexError> {
            let mut buffer = Vec::new();
            let mut top = TopK::new(limit);
            for &row in rows {
                let (id, scale, bytes) = self.read_row(row, &mut buffer)?;
                let score = dot_i8(bytes, q) as f32 * scale;
                if top.admits(score) {
                    top.push((id, score));
                }
            }
            Ok(top.into_sorted())
        };
        if rows.len() <= COMPARE_ROWS {
            return best_of(rows);
        }
        let lists: Vec<Result<Vec<(u64, f32)>, IndexError>> =
            rows.par_chunks(COMPARE_ROWS).map(best_of).collect();
        let mut top = TopK::new(limit);
        for list in lists {
            for item in list? {
                if top.admits(item.1) {
                    top.push(item);
                }
            }
        }
        Ok(top.into_sorted())
    }

    /// Every row of `live` (live rows, ascending) compared: read a block at a time, split
    /// over the rayon pool when there are many.
    fn scan(&self, q: &[i8], limit: usize, live: &[u32]) -> Result<Vec<(u64, f32)>, IndexError> {
        let scan = Scan::detect();
        let len = row_len(self.dims);
        let best_of = |live: &[u32]| -> io::Result<Vec<(u64, f32)>> {
            let mut buffer = Vec::new();
            let mut out = Vec::new();
            let mut rest = live;
            while let Some(&first) = rest.first() {
                let end = rest.partition_point(|row| *row - first < BLOCK_ROWS);
                let (group, after) = rest.split_at(end);
                let last = group[group.len() - 1];
                let bytes = self.rows.read(first, last - first + 1, len, &mut buffer)?;
                out.extend(scan.best_of(&Block { first, len, bytes }, group, q, limit));
                rest = after;
            }
            Ok(out)
        };
        let lists: Vec<io::Result<Vec<(u64, f32)>>> = if live.len() > PARALLEL_ROWS {
            live.par_chunks(PARALLEL_ROWS).map(best_of).collect()
        } else {
            vec![best_of(live)]
        };
        let mut top = TopK::new(limit);
        for list in lists {
            for item in list.map_err(|e| self.error(e))? {
                if top.admits(item.1) {
                    top.push(item);
                }
            }
        }
        let best = top.into_sorted();
        // Rows rewritten in place under the process would give ids it never committed, or
        // bytes of other signs: the rows found are read again and checked.
        let mut buffer = Vec::new();
        for (id, _) in &best {
            let Some(row) = self.row_of(*id) else {
                return Err(self.error(changed_under(format_args!("a row holds chunk {id}, which has none"))));
            };
            self.read_row(row, &mut buffer)?;
        }
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// A fixed pseudo-random sequence in [-0.5, 0.5).
    fn sequence(mut seed: u64) -> impl FnMut() -> f32 {
        move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        }
    }

    /// `count` unit vectors around `centres` cluster centres, as texts on a few topics
    /// give, under ids out of row order.
    fn clustered(dims: usize, count: u64, centres: usize, seed: u64) -> Vec<(u64, Vec<f32>)> {
        let mut next = sequence(seed);
        let centre: Vec<Vec<f32>> = (0..centres).map(|_| (0..dims).map(|_| next()).collect()).collect();
        (0..count)
            .map(|n| {
                let c = &centre[(n as usize * 7) % centres];
                let v: Vec<f32> = c.iter().map(|x| x + 0.6 * next()).collect();
                ((n * 7_919) % (count + 1), unit(&v))
            })
            .collect()
    }

    #[test]
    fn the_live_rows_of_a_table_come_out_ascending_and_once() {
        // An id given twice keeps its later row; removed ids and rows past the file are
        // left out.
        let mut table = RowsById::from_rows([(9, 4), (2, 7), (9, 1), (130, 0), (64, 300), (5, 65)]);
        assert!(table.remove(2));
        assert!(!table.remove(3));
        assert_eq!(table.len(), 4);
        assert_eq!(table.ascending(200), vec![0, 1, 65]);
        assert_eq!(table.get(9), Some(1));
        let mut pairs: Vec<(u64, u32)> = table.iter().collect();
        pairs.sort_unstable();
        assert_eq!(pairs, vec![(5, 65), (9, 1), (64, 300), (130, 0)]);
    }

    #[test]
    fn quantised_similarities_stay_close_and_ranks_hold() {
        // The int8 scan ranks pseudo-random unit vectors as the exact f32 scan does, and
        // its scores stay within a hundredth.
        let mut next = sequence(7);
        let dims = 64;
        let vectors: Vec<(u64, Vec<f32>)> =
            (0..500u64).map(|id| (id, unit(&(0..dims).map(|_| next()).collect::<Vec<_>>()))).collect();
        let set = VectorSet::in_memory(dims, &vectors);
        let query = unit(&(0..dims).map(|_| next()).collect::<Vec<_>>());
        let mut exact: Vec<(u64, f32)> =
            vectors.iter().map(|(id, v)| (*id, v.iter().zip(&query).map(|(a, b)| a * b).sum())).collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1));
        let got = set.nearest(&query, 10).unwrap();
        assert_eq!(got.len(), 10);
        let exact_top: Vec<u64> = exact[..10].iter().map(|h| h.0).collect();
        let shared = got.iter().filter(|h| exact_top.contains(&h.0)).count();
        assert!(shared >= 9, "{shared} of the exact top 10");
        for (id, score) in &got {
            let truth = exact.iter().find(|h| h.0 == *id).unwrap().1;
            assert!((score - truth).abs() < 0.01, "{score} vs {truth}");
        }
        assert!((set.similarity(got[0].0, &query).unwrap().unwrap() - got[0].1).abs() < 1e-6);
        assert!(set.nearest(&[1.0; 3], 5).unwrap().is_empty(), "another dimension is never compared");
    }

    #[test]
    fn every_scan_finds_the_same_rows_with_the_same_scores() {
        // The loop compiled for the processor's widest instructions must agree exactly with
        // the portable one: integer sums do not depend on their order.
        let mut next = sequence(11);
        let dims = 256;
        // Each vector four times over, under ids out of row order, as near-duplicate files
        // give: ties must go to the smaller id.
        let distinct: Vec<Vec<f32>> =
            (0..1_000).map(|_| unit(&(0..dims).map(|_| next()).collect::<Vec<_>>())).collect();
        let vectors: Vec<(u64, Vec<f32>)> =
            (0..4_000u64).map(|n| ((n * 7_919) % 4_001, distinct[(n % 1_000) as usize].clone())).collect();
        let set = VectorSet::in_memory(dims, &vectors);
        let (_, q) = quantize(&unit(&(0..dims).map(|_| next()).collect::<Vec<_>>()));
        let Rows::Owned(bytes) = &set.rows else { panic!("made in memory") };
        let block = Block { first: 0, len: row_len(dims), bytes };
        let portable = Scan::Portable.best_of(&block, &set.live, &q, 25);
        let mut brute: Vec<(u64, f32)> = set
            .live
            .iter()
            .map(|&row| (block.id_at(row), dot_i8(block.bytes_at(row), &q) as f32 * block.scale_at(row)))
            .collect();
        brute.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        brute.truncate(25);
        assert_eq!(portable, brute);
        assert_eq!(Scan::detect().best_of(&block, &set.live, &q, 25), portable);
        // The scan a block at a time, over the pool, agrees too.
        assert_eq!(set.scan(&q, 25, &set.live).unwrap(), portable);
    }

    #[test]
    fn a_search_among_some_ids_finds_their_nearest_whether_they_are_close_or_far_apart() {
        let dims = 64;
        let mut next = sequence(5);
        let vectors: Vec<(u64, Vec<f32>)> =
            (0..6_000u64).map(|id| (id * 3, unit(&(0..dims).map(|_| next()).collect::<Vec<_>>()))).collect();
        let set = VectorSet::in_memory(dims, &vectors);
        let query = unit(&(0..dims).map(|_| next()).collect::<Vec<_>>());
        // A folder's rows together (read a block at a time), rows far apart (read one by
        // one), and ids the set does not hold, which are passed over.
        let together: HashSet<u64> = (3_000..4_500u64).map(|n| n * 3).collect();
        let apart: HashSet<u64> = (0..6_000u64).step_by(97).map(|n| n * 3).chain([1, 2, 99_999]).collect();
        for ids in [&together, &apart] {
            let mut truth: Vec<(u64, f32)> =
                ids.iter().filter_map(|id| Some((*id, set.similarity(*id, &query).unwrap()?))).collect();
            truth.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            truth.truncate(20);
            let got = set.nearest_among(&query, 20, ids).unwrap();
            assert_eq!(got.len(), 20);
            for ((id, score), (want, truth)) in got.iter().zip(&truth) {
                assert_eq!(id, want);
                assert!((score - truth).abs() < 1e-6);
            }
        }
        // Beyond the exact limit the sign bits choose among the same rows only.
        let mut rows: Vec<u32> = together.iter().filter_map(|id| set.row_of(*id)).collect();
        rows.sort_unstable();
        let preselected = set.nearest_in_rows(&query, 20, VectorSearch::Preselect(400), &rows).unwrap();
        assert!(preselected.iter().all(|(id, _)| together.contains(id)));
        assert!(set.nearest_among(&query, 20, &HashSet::new()).unwrap().is_empty());
    }

    #[test]
    fn below_the_limit_a_search_is_exact_and_above_it_candidates_are_compared_exactly() {
        let dims = 96;
        let vectors = clustered(dims, 3_000, 12, 5);
        let set = VectorSet::in_memory(dims, &vectors);
        assert_eq!(VectorSearch::for_size(EXACT_VECTOR_LIMIT, 10), VectorSearch::Exact);
        assert!(
            matches!(VectorSearch::for_size(EXACT_VECTOR_LIMIT + 1, 10), VectorSearch::Preselect(n) if n >= 400)
        );
        let mut next = sequence(9);
        let mut found = 0;
        let queries = 40;
        for _ in 0..queries {
            let query = unit(&(0..dims).map(|_| next()).collect::<Vec<_>>());
            let exact = set.nearest_with(&query, 10, VectorSearch::Exact).unwrap();
            assert_eq!(set.nearest(&query, 10).unwrap(), exact, "a small set is searched exactly");
            // As many candidates as rows: the same list, whatever the first pass thought.
            assert_eq!(set.nearest_with(&query, 10, VectorSearch::Preselect(3_000)).unwrap(), exact);
            let approximate = set.nearest_with(&query, 10, VectorSearch::Preselect(600)).unwrap();
            assert_eq!(approximate, set.nearest_with(&query, 10, VectorSearch::Preselect(600)).unwrap());
            for (id, score) in &approximate {
                // A row found has the score the exact scan gives it.
                let truth = set.similarity(*id, &query).unwrap().unwrap();
                assert!((score - truth).abs() < 1e-6);
            }
            found += approximate.iter().filter(|hit| exact.iter().any(|e| e.0 == hit.0)).count();
        }
        // One row in five compared: most of the exact ten are still found.
        let recall = found as f32 / (queries * 10) as f32;
        assert!(recall >= 0.9, "recall@10 {recall}");
    }
}
