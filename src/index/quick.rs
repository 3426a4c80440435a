//! Quick vectors: while a slow model's vectors are pending, each waiting chunk has a vector
//! from the built-in static model, so that the vector arm of a search covers every chunk
//! from the first commit on.
//!
//! They are kept with the index in `quick.vec`, so that no process makes them again when it
//! opens the index: an append-only file of int8 rows (`MAGIC`, dimensions as u32, four
//! reserved bytes, then rows of id u64, scale f32 and one signed byte per dimension, all
//! little-endian). A vector is stored as `scale × bytes`; unit vectors lose well under a
//! percent of their similarity to rounding, and a quarter of the space of f32. The manifest
//! records, with each commit, how many rows the file holds and their xxh3 checksum:
//! rows past that count are an unfinished write and are cut off by the next writer, and
//! rows that no longer stand in for anything (their chunk's own vector arrived, or the
//! chunk went) are skipped, and dropped when the file is rewritten at its next compaction.
//!
//! [`QuickLog`] is the writer's side; [`QuickSet`] is one commit's searchable rows, shared
//! by snapshots and read through a memory map.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use xxhash_rust::xxh3::Xxh3;

use super::files;
use super::manifest::QuickFile;
use super::quick_scan::{Scan, ScanRows, dot_i8};

const MAGIC: &[u8; 8] = b"SITQVEC1";
const HEADER_LEN: u64 = 16;
/// Bytes of a row before its vector: the chunk id and the scale.
const ROW_PREFIX: usize = 12;
/// Sets with more rows than this are scanned on the rayon pool.
const PARALLEL_ROWS: usize = 32_768;
/// The file is rewritten without its dead rows once they outnumber the live ones by this
/// many.
const COMPACT_SLACK: u64 = 4_096;

fn row_len(dims: usize) -> usize {
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

fn encode_row(out: &mut Vec<u8>, id: u64, v: &[f32]) {
    let (scale, bytes) = quantize(v);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend(bytes.iter().map(|b| *b as u8));
}

fn header(dims: usize) -> [u8; HEADER_LEN as usize] {
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&(dims as u32).to_le_bytes());
    h
}

/// The bytes of a quick file's rows: mapped from disk, or made in memory.
enum Rows {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
    Empty,
}

impl Rows {
    fn bytes(&self) -> &[u8] {
        match self {
            Rows::Mapped(m) => &m[HEADER_LEN as usize..],
            Rows::Owned(v) => v,
            Rows::Empty => &[],
        }
    }
}

/// One commit's quick vectors: the rows that stand in for pending vectors, searched exactly.
pub struct QuickSet {
    dims: usize,
    rows: Rows,
    /// Row numbers of the live rows, ascending.
    live: Vec<u32>,
    /// The live row of each chunk, by id.
    by_id: Vec<(u64, u32)>,
}

impl Default for QuickSet {
    fn default() -> Self {
        QuickSet { dims: 0, rows: Rows::Empty, live: Vec::new(), by_id: Vec::new() }
    }
}

impl std::fmt::Debug for QuickSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuickSet").field("len", &self.live.len()).field("dims", &self.dims).finish()
    }
}

impl QuickSet {
    /// A set made in memory (a reader of an index whose writer has not stored them yet).
    pub fn in_memory(dims: usize, vectors: &[(u64, Vec<f32>)]) -> QuickSet {
        let mut bytes = Vec::with_capacity(vectors.len() * row_len(dims));
        let mut live = Vec::with_capacity(vectors.len());
        for (id, v) in vectors.iter().filter(|(_, v)| v.len() == dims) {
            live.push((*id, live.len() as u32));
            encode_row(&mut bytes, *id, v);
        }
        QuickSet::with_live(dims, Rows::Owned(bytes), live.into_iter())
    }

    /// A set of the given rows; an id given twice keeps its later row.
    fn with_live(dims: usize, rows: Rows, live: impl Iterator<Item = (u64, u32)>) -> QuickSet {
        let mut by_id: Vec<(u64, u32)> = live.collect();
        by_id.sort_unstable();
        by_id.reverse();
        by_id.dedup_by_key(|(id, _)| *id);
        by_id.reverse();
        let mut live: Vec<u32> = by_id.iter().map(|(_, row)| *row).collect();
        live.sort_unstable();
        QuickSet { dims, rows, live, by_id }
    }

    fn row_of(&self, id: u64) -> Option<u32> {
        self.by_id.binary_search_by_key(&id, |(id, _)| *id).ok().map(|i| self.by_id[i].1)
    }

    fn row(&self, row: u32) -> &[u8] {
        let len = row_len(self.dims);
        let start = row as usize * len;
        &self.rows.bytes()[start..start + len]
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
        self.by_id.iter().map(|(id, _)| *id).collect()
    }

    /// The quick vector of a chunk, as stored (int8 precision).
    pub fn vector_of(&self, id: u64) -> Option<Vec<f32>> {
        let row = self.row_of(id)?;
        let scale = self.scale_at(row);
        Some(self.bytes_at(row).iter().map(|b| f32::from(*b) * scale).collect())
    }

    /// The cosine similarity of a chunk's quick vector to `query` (unit length).
    pub fn similarity(&self, id: u64, query: &[f32]) -> Option<f32> {
        if query.len() != self.dims {
            return None;
        }
        let row = self.row_of(id)?;
        let (qscale, q) = quantize(query);
        Some(dot_i8(self.bytes_at(row), &q) as f32 * qscale * self.scale_at(row))
    }

    /// The `limit` nearest vectors to `query` by cosine similarity (all vectors are unit
    /// length), best first; ties go to the smaller id. An exact scan of every live row,
    /// split over the rayon pool when the set is large.
    pub fn nearest(&self, query: &[f32], limit: usize) -> Vec<(u64, f32)> {
        if query.len() != self.dims || limit == 0 || self.is_empty() {
            return Vec::new();
        }
        let (qscale, q) = quantize(query);
        let scan = Scan::detect();
        let best_of = |rows: &[u32]| scan.best_of(self, rows, &q, limit);
        let mut all: Vec<(u64, f32)> = if self.live.len() > PARALLEL_ROWS {
            self.live.par_chunks(PARALLEL_ROWS).flat_map_iter(&best_of).collect()
        } else {
            best_of(&self.live)
        };
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(limit);
        for hit in &mut all {
            hit.1 *= qscale;
        }
        all
    }
}

impl ScanRows for QuickSet {
    #[inline(always)]
    fn id_at(&self, row: u32) -> u64 {
        let r = self.row(row);
        u64::from_le_bytes(r[..8].try_into().unwrap_or_default())
    }

    #[inline(always)]
    fn scale_at(&self, row: u32) -> f32 {
        let r = self.row(row);
        f32::from_le_bytes(r[8..12].try_into().unwrap_or_default())
    }

    #[inline(always)]
    fn bytes_at(&self, row: u32) -> &[i8] {
        let r = &self.row(row)[ROW_PREFIX..];
        // SAFETY: i8 and u8 have the same size and alignment; every bit pattern is valid.
        unsafe { std::slice::from_raw_parts(r.as_ptr().cast::<i8>(), r.len()) }
    }
}

/// Why a quick file on disk cannot be used as it is.
fn check_file(path: &Path, record: &QuickFile, dims: usize) -> Result<File, String> {
    let mut file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut head = [0u8; HEADER_LEN as usize];
    file.read_exact(&mut head).map_err(|e| format!("{}: {e}", path.display()))?;
    if head != header(dims) {
        return Err(format!("{}: not a quick vector file of {dims} dimensions", path.display()));
    }
    let need = HEADER_LEN + record.rows * row_len(dims) as u64;
    let have = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
    if have < need {
        return Err(format!("{}: holds {have} bytes, its commit {need}", path.display()));
    }
    Ok(file)
}

/// The committed quick file at `path`, checked against its record, mapped: its rows, the
/// live rows (the last of each id for which `wanted` holds) and the rows' checksum state.
/// `Err` says why it cannot be used.
fn load(
    path: &Path,
    record: &QuickFile,
    dims: usize,
    wanted: &dyn Fn(u64) -> bool,
) -> Result<Loaded, String> {
    let file = check_file(path, record, dims)?;
    let rows = map(&file, path)?;
    let len = row_len(dims);
    let committed = &rows.bytes()[..record.rows as usize * len];
    let mut hasher = Xxh3::new();
    hasher.update(committed);
    if hasher.digest() != record.checksum {
        return Err(format!(
            "{}: the rows do not match the checksum they were committed with",
            path.display()
        ));
    }
    let live = committed
        .chunks_exact(len)
        .enumerate()
        .map(|(n, row)| (u64::from_le_bytes(row[..8].try_into().unwrap_or_default()), n as u32))
        .filter(|(id, _)| wanted(*id))
        .collect();
    Ok(Loaded { rows, hasher, live })
}

/// A committed quick file as [`load`] found it.
struct Loaded {
    rows: Rows,
    /// The checksum state over the committed rows, to go on from.
    hasher: Xxh3,
    /// The live rows as (id, row), in row order.
    live: Vec<(u64, u32)>,
}

fn map(file: &File, path: &Path) -> Result<Rows, String> {
    // SAFETY: the rows a set reads were committed and are never rewritten in place: the
    // writer only appends past them, and a compaction writes a new file and renames it.
    unsafe { memmap2::Mmap::map(file) }.map(Rows::Mapped).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads a committed quick file for a reader: the rows of the chunks for which `wanted`
/// holds.
pub fn open_set(
    path: &Path,
    record: &QuickFile,
    dims: usize,
    wanted: &dyn Fn(u64) -> bool,
) -> Result<QuickSet, String> {
    let loaded = load(path, record, dims, wanted)?;
    Ok(QuickSet::with_live(dims, loaded.rows, loaded.live.into_iter()))
}

/// The live row of each chunk, in a table indexed by chunk id. Ids are handed out in order
/// from zero and never reused, so the table is dense; at a million chunks it is a tenth of
/// the memory of a hash map and is built and asked many times faster, which an open of a
/// large index does a million times over.
#[derive(Default)]
struct RowsById {
    rows: Vec<u32>,
    count: usize,
}

/// A table slot without a row.
const NO_ROW: u32 = u32::MAX;

impl RowsById {
    /// A table of (id, row) pairs; an id given twice keeps its later row.
    fn from_rows(pairs: impl IntoIterator<Item = (u64, u32)>) -> Self {
        let mut table = RowsById::default();
        for (id, row) in pairs {
            table.insert(id, row);
        }
        table
    }

    fn get(&self, id: u64) -> Option<u32> {
        self.rows.get(usize::try_from(id).ok()?).copied().filter(|row| *row != NO_ROW)
    }

    fn insert(&mut self, id: u64, row: u32) {
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
    fn remove(&mut self, id: u64) -> bool {
        match self.rows.get_mut(id as usize) {
            Some(row) if *row != NO_ROW => {
                *row = NO_ROW;
                self.count -= 1;
                true
            }
            _ => false,
        }
    }

    fn len(&self) -> usize {
        self.count
    }

    /// The (id, row) pairs, by id.
    fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.rows.iter().enumerate().filter(|(_, row)| **row != NO_ROW).map(|(id, row)| (id as u64, *row))
    }
}

/// The writer's side of the quick file: rows staged for the next commit, the live row of
/// each chunk whose vector is pending, and the running checksum.
pub struct QuickLog {
    path: PathBuf,
    model: String,
    dims: usize,
    file: File,
    /// Committed rows in the file.
    rows: u64,
    hasher: Xxh3,
    /// The row that stands in for each pending chunk (staged rows included).
    live: RowsById,
    /// Encoded rows written at the next commit.
    staged: Vec<u8>,
    /// The live rows changed since the set was last published.
    changed: bool,
}

impl std::fmt::Debug for QuickLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuickLog").field("rows", &self.rows).field("live", &self.live.len()).finish()
    }
}

impl QuickLog {
    /// Opens the quick file for writing. A file that does not match `record` (missing,
    /// damaged, of another model) is started afresh, with the reason in the second value;
    /// a tail past the committed rows (a write cut short) is cut off.
    pub fn open(
        path: &Path,
        model: &str,
        dims: usize,
        record: Option<&QuickFile>,
        wanted: &dyn Fn(u64) -> bool,
    ) -> std::io::Result<(QuickLog, Option<String>)> {
        let usable = match record {
            Some(r) if r.model == model && r.dimensions == dims => {
                Some(load(path, r, dims, wanted).map(|l| (l, r)))
            }
            Some(r) => Some(Err(format!("quick vectors are of {}, not {model}", r.model))),
            None => None,
        };
        let (file, hasher, live, rows, note) = match usable {
            Some(Ok((loaded, r))) => {
                let Loaded { rows, hasher, live } = loaded;
                drop(rows);
                let file = OpenOptions::new().read(true).write(true).open(path)?;
                file.set_len(HEADER_LEN + r.rows * row_len(dims) as u64)?;
                (file, hasher, RowsById::from_rows(live), r.rows, None)
            }
            problem => {
                let note = match problem {
                    Some(Err(e)) => Some(format!("{e}: quick vectors are made again")),
                    _ => None,
                };
                let mut file =
                    OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
                file.write_all(&header(dims))?;
                file.sync_all()?;
                files::sync_parent(path);
                (file, Xxh3::new(), RowsById::default(), 0, note)
            }
        };
        let log = QuickLog {
            path: path.to_path_buf(),
            model: model.to_string(),
            dims,
            file,
            rows,
            hasher,
            live,
            staged: Vec::new(),
            changed: true,
        };
        Ok((log, note))
    }

    /// Whether a chunk has a quick vector (committed or staged).
    pub fn contains(&self, id: u64) -> bool {
        self.live.get(id).is_some()
    }

    /// Chunks with a quick vector (committed or staged).
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Stages a chunk's quick vector for the next commit.
    pub fn stage(&mut self, id: u64, vector: &[f32]) {
        if vector.len() != self.dims {
            return;
        }
        let row = self.rows + (self.staged.len() / row_len(self.dims)) as u64;
        encode_row(&mut self.staged, id, vector);
        self.live.insert(id, row as u32);
        self.changed = true;
    }

    /// The chunk no longer needs a stand-in (its own vector arrived, or it went).
    pub fn drop_id(&mut self, id: u64) {
        if self.live.remove(id) {
            self.changed = true;
        }
    }

    /// Whether there is anything to write at the next commit.
    pub fn is_dirty(&self) -> bool {
        !self.staged.is_empty() || self.changed
    }

    /// Writes the staged rows (or the live rows alone, when dead ones have piled up) and
    /// returns what the manifest records of the file.
    pub fn commit(&mut self) -> std::io::Result<QuickFile> {
        let dead = self.rows + (self.staged.len() / row_len(self.dims)) as u64 - self.live.len() as u64;
        if dead > self.live.len() as u64 + COMPACT_SLACK {
            self.compact()?;
        } else if !self.staged.is_empty() {
            self.file.seek(SeekFrom::Start(HEADER_LEN + self.rows * row_len(self.dims) as u64))?;
            self.file.write_all(&self.staged)?;
            self.file.sync_data()?;
            self.hasher.update(&self.staged);
            self.rows += (self.staged.len() / row_len(self.dims)) as u64;
            self.staged.clear();
        }
        Ok(self.record())
    }

    fn record(&self) -> QuickFile {
        QuickFile {
            model: self.model.clone(),
            dimensions: self.dims,
            rows: self.rows,
            checksum: self.hasher.digest(),
        }
    }

    /// Rewrites the file with the live rows only, in their order.
    fn compact(&mut self) -> std::io::Result<()> {
        let len = row_len(self.dims);
        let committed = self.rows;
        let mapped = unsafe { memmap2::Mmap::map(&self.file)? };
        let mut order: Vec<(u32, u64)> = self.live.iter().map(|(id, row)| (row, id)).collect();
        order.sort_unstable();
        let mut out = Vec::with_capacity(order.len() * len);
        for (row, _) in &order {
            let bytes = if u64::from(*row) < committed {
                let start = HEADER_LEN as usize + *row as usize * len;
                &mapped[start..start + len]
            } else {
                let start = (u64::from(*row) - committed) as usize * len;
                &self.staged[start..start + len]
            };
            out.extend_from_slice(bytes);
        }
        drop(mapped);
        let tmp = files::temp_sibling(&self.path);
        {
            let mut f = File::create(&tmp)?;
            f.write_all(&header(self.dims))?;
            f.write_all(&out)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        files::sync_parent(&self.path);
        self.file = OpenOptions::new().read(true).write(true).open(&self.path)?;
        self.hasher = Xxh3::new();
        self.hasher.update(&out);
        self.rows = order.len() as u64;
        self.live = RowsById::from_rows(order.iter().enumerate().map(|(n, (_, id))| (*id, n as u32)));
        self.staged.clear();
        self.changed = true;
        Ok(())
    }

    /// The committed live rows as a set for snapshots, or `None` when nothing changed since
    /// the last one. Call after [`QuickLog::commit`].
    pub fn publish(&mut self) -> Option<std::io::Result<QuickSet>> {
        if !self.changed {
            return None;
        }
        self.changed = false;
        // SAFETY: as in `map`: committed rows are never rewritten in place.
        let rows = if self.rows == 0 {
            Ok(Rows::Empty)
        } else {
            unsafe { memmap2::Mmap::map(&self.file) }.map(Rows::Mapped)
        };
        Some(rows.map(|rows| QuickSet::with_live(self.dims, rows, self.live.iter())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn record(log: &mut QuickLog) -> QuickFile {
        log.commit().unwrap()
    }

    #[test]
    fn quantised_similarities_stay_close_and_ranks_hold() {
        // A fixed pseudo-random set of unit vectors: the int8 scan ranks them as the exact
        // f32 scan does, and its scores stay within a hundredth.
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let dims = 64;
        let vectors: Vec<(u64, Vec<f32>)> =
            (0..500u64).map(|id| (id, unit(&(0..dims).map(|_| next()).collect::<Vec<_>>()))).collect();
        let set = QuickSet::in_memory(dims, &vectors);
        let query = unit(&(0..dims).map(|_| next()).collect::<Vec<_>>());
        let mut exact: Vec<(u64, f32)> =
            vectors.iter().map(|(id, v)| (*id, v.iter().zip(&query).map(|(a, b)| a * b).sum())).collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1));
        let got = set.nearest(&query, 10);
        assert_eq!(got.len(), 10);
        let exact_top: Vec<u64> = exact[..10].iter().map(|h| h.0).collect();
        let shared = got.iter().filter(|h| exact_top.contains(&h.0)).count();
        assert!(shared >= 9, "{shared} of the exact top 10");
        for (id, score) in &got {
            let truth = exact.iter().find(|h| h.0 == *id).unwrap().1;
            assert!((score - truth).abs() < 0.01, "{score} vs {truth}");
        }
        assert!((set.similarity(got[0].0, &query).unwrap() - got[0].1).abs() < 1e-6);
        assert!(set.nearest(&[1.0; 3], 5).is_empty(), "another dimension is never compared");
    }

    #[test]
    fn every_scan_finds_the_same_rows_with_the_same_scores() {
        // The loop compiled for the processor's widest instructions must agree exactly with
        // the portable one: integer sums do not depend on their order.
        let mut seed = 11u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let dims = 256;
        // Each vector four times over, under ids out of row order, as near-duplicate files
        // give: ties must go to the smaller id.
        let distinct: Vec<Vec<f32>> =
            (0..1_000).map(|_| unit(&(0..dims).map(|_| next()).collect::<Vec<_>>())).collect();
        let vectors: Vec<(u64, Vec<f32>)> =
            (0..4_000u64).map(|n| ((n * 7_919) % 4_001, distinct[(n % 1_000) as usize].clone())).collect();
        let set = QuickSet::in_memory(dims, &vectors);
        let (_, q) = quantize(&unit(&(0..dims).map(|_| next()).collect::<Vec<_>>()));
        let portable = Scan::Portable.best_of(&set, &set.live, &q, 25);
        let mut brute: Vec<(u64, f32)> = set
            .live
            .iter()
            .map(|&row| (set.id_at(row), dot_i8(set.bytes_at(row), &q) as f32 * set.scale_at(row)))
            .collect();
        brute.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        brute.truncate(25);
        assert_eq!(portable, brute);
        assert_eq!(Scan::detect().best_of(&set, &set.live, &q, 25), portable);
    }

    #[test]
    fn rows_persist_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let all = |_: u64| true;
        let (mut log, note) = QuickLog::open(&path, "static/m", 2, None, &all).unwrap();
        assert!(note.is_none());
        log.stage(1, &[1.0, 0.0]);
        log.stage(2, &[0.0, 1.0]);
        let committed = record(&mut log);
        assert_eq!(committed.rows, 2);
        // Staged but never committed: the next open cuts it off.
        log.stage(3, &[0.6, 0.8]);
        log.file.seek(SeekFrom::End(0)).unwrap();
        log.file.write_all(&log.staged.clone()[..7]).unwrap();
        drop(log);

        let set = open_set(&path, &committed, 2, &all).unwrap();
        assert_eq!(set.len(), 2);
        assert_eq!(set.nearest(&[0.0, 1.0], 1)[0].0, 2);
        assert!(set.vector_of(3).is_none());

        let (mut log, note) = QuickLog::open(&path, "static/m", 2, Some(&committed), &|id| id != 1).unwrap();
        assert!(note.is_none(), "{note:?}");
        assert!(!log.contains(1) && log.contains(2));
        log.stage(4, &[0.6, 0.8]);
        let next = record(&mut log);
        assert_eq!(next.rows, 3);
        let set = log.publish().unwrap().unwrap();
        assert_eq!(set.len(), 2);
        assert!((set.vector_of(4).unwrap()[1] - 0.8).abs() < 0.01);
    }

    #[test]
    fn damage_or_another_model_starts_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let all = |_: u64| true;
        let (mut log, _) = QuickLog::open(&path, "static/m", 2, None, &all).unwrap();
        log.stage(1, &[1.0, 0.0]);
        let committed = record(&mut log);
        drop(log);
        let (_, note) = QuickLog::open(&path, "static/other", 2, Some(&committed), &all).unwrap();
        assert!(note.unwrap().contains("static/m"));

        let (mut log, _) = QuickLog::open(&path, "static/m", 2, None, &all).unwrap();
        log.stage(1, &[1.0, 0.0]);
        let committed = record(&mut log);
        drop(log);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        std::fs::write(&path, &bytes).unwrap();
        assert!(open_set(&path, &committed, 2, &all).unwrap_err().contains("checksum"));
        let (log, note) = QuickLog::open(&path, "static/m", 2, Some(&committed), &all).unwrap();
        assert!(note.unwrap().contains("checksum"));
        assert!(!log.contains(1));
    }

    #[test]
    fn dead_rows_are_compacted_away() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let (mut log, _) = QuickLog::open(&path, "static/m", 2, None, &|_| true).unwrap();
        let n = COMPACT_SLACK + 10;
        for id in 0..n {
            log.stage(id, &[1.0, 0.0]);
        }
        record(&mut log);
        for id in 0..n - 3 {
            log.drop_id(id);
        }
        let committed = record(&mut log);
        assert_eq!(committed.rows, 3, "only the live rows are left");
        let set = open_set(&path, &committed, 2, &|_| true).unwrap();
        assert_eq!(set.len(), 3);
        assert!(set.contains(n - 1) && !set.contains(0));
    }
}
