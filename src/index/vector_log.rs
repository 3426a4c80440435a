//! The writer's side of a vector file (`vectors.vec` or `quick.vec`, laid out in
//! [`super::vector_file`]): rows staged for the next commit, appended and synced at the
//! commit, the live row of each chunk, the running checksum, the rows' sign bits and
//! checksums, and the rewrite without dead rows once they pile up.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use xxhash_rust::xxh3::Xxh3;

use super::files;
use super::manifest::VectorFileRecord;
use super::vector_file::{
    BLOCK_ROWS, HEADER_LEN, Rows, RowsById, VectorSet, decode_row, encode_row, header, row_len,
};
use super::vector_open::{Loaded, load};
use super::vector_sidecar::{self, RowFacts, SharedFacts};

/// The file is rewritten without its dead rows once they outnumber half the live ones by
/// this many. Every open reads every row, dead ones included: after a re-chunk of the whole
/// index (a new chunking or analysis version) half the file would be dead, and every
/// command would read twice what it needs until the dead rows outnumbered all the live ones.
const COMPACT_SLACK: u64 = 4_096;

/// A file made anew at `path` with `header` and `body`, synced with its folder.
fn fresh_file(path: &Path, header: &[u8], body: &[u8]) -> io::Result<File> {
    let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
    file.write_all(header)?;
    file.write_all(body)?;
    file.sync_all()?;
    files::sync_parent(path);
    Ok(file)
}

/// The writer's side of the quick file: rows staged for the next commit, the live row of
/// each chunk whose vector is pending, and the running checksum.
pub struct VectorLog {
    path: PathBuf,
    model: String,
    dims: usize,
    file: File,
    /// The sidecar: each row's id and signs.
    sidecar: File,
    /// The nonce the file and its sidecar share.
    nonce: u32,
    /// Committed rows in the file.
    rows: u64,
    /// The checksum state over the committed sidecar rows.
    hasher: Xxh3,
    /// The live row of each chunk (staged rows included), shared with the published set
    /// until the next change.
    live: Arc<RowsById>,
    /// The signs and checksums of every row (staged ones included), shared with the
    /// published set until the next row is staged.
    facts: SharedFacts,
    /// The rows of chunks that went, kept readable but never searched, so that their
    /// vectors serve again when their texts come back (the index's retired vectors,
    /// `retired.rs`). Compaction keeps them; the index says when one is no longer wanted.
    kept: RowsById,
    /// The facts of the staged rows, kept apart until the commit appends them, so that
    /// staging a row never copies the committed rows' facts that a published set shares.
    staged_facts: RowFacts,
    /// Encoded rows written at the next commit.
    staged: Vec<u8>,
    /// Their sidecar rows.
    staged_sidecar: Vec<u8>,
    /// The live rows changed since the set was last published.
    changed: bool,
    /// Damaged rows were found: the next commit rewrites the file without them.
    compact_due: bool,
}

impl std::fmt::Debug for VectorLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorLog").field("rows", &self.rows).field("live", &self.live.len()).finish()
    }
}

impl VectorLog {
    /// Opens the quick file for writing. A file that does not match `record` (missing,
    /// damaged, of another model) is started afresh, with the reason in the second value;
    /// a tail past the committed rows (a write cut short) is cut off.
    pub fn open(
        path: &Path,
        model: &str,
        dims: usize,
        record: Option<&VectorFileRecord>,
        wanted: &dyn Fn(u64) -> bool,
    ) -> std::io::Result<(VectorLog, Option<String>)> {
        VectorLog::open_keeping(path, model, dims, record, wanted, &|_| false)
    }

    /// [`VectorLog::open`], with the rows of the chunks that went for which `kept` holds
    /// kept readable ([`VectorLog::kept_vector`]).
    pub fn open_keeping(
        path: &Path,
        model: &str,
        dims: usize,
        record: Option<&VectorFileRecord>,
        wanted: &dyn Fn(u64) -> bool,
        kept: &dyn Fn(u64) -> bool,
    ) -> std::io::Result<(VectorLog, Option<String>)> {
        let usable = match record {
            Some(r) if r.model == model && r.dimensions == dims => {
                Some(load(path, r, dims, wanted, kept).map(|l| (l, r)))
            }
            Some(r) => Some(Err(format!("the vectors are of {}, not {model}", r.model))),
            None => None,
        };
        let sidecar_path = vector_sidecar::path_of(path);
        let (file, sidecar, nonce, hasher, live, kept_rows, facts, rows, note) = match usable {
            Some(Ok((loaded, r))) => {
                let Loaded { file, mut nonce, hasher, facts, live, kept, rebuilt, damaged } = loaded;
                drop(file);
                let file = OpenOptions::new().read(true).write(true).open(path)?;
                file.set_len(HEADER_LEN + r.rows * row_len(dims) as u64)?;
                let sidecar = match rebuilt {
                    Some(rows) => {
                        // A file written before there were sidecars has none, nor a nonce:
                        // it is given one, after the sidecar that carries it is in place.
                        let renonce = nonce == 0;
                        if renonce {
                            nonce = vector_sidecar::new_nonce();
                        }
                        let sidecar = fresh_file(&sidecar_path, &vector_sidecar::header(dims, nonce), &rows)?;
                        if renonce {
                            file.write_all_at(&header(dims, nonce), 0)?;
                            file.sync_data()?;
                        }
                        sidecar
                    }
                    None => {
                        let sidecar = OpenOptions::new().read(true).write(true).open(&sidecar_path)?;
                        sidecar.set_len(
                            vector_sidecar::HEADER_LEN + r.rows * vector_sidecar::row_len(dims) as u64,
                        )?;
                        sidecar
                    }
                };
                // Damaged rows are left out, and dropped at the next commit's compaction;
                // until then every open checks the rows again.
                let note = match damaged {
                    0 => None,
                    1 => Some(format!("{}: 1 row does not match its checksum", path.display())),
                    n => Some(format!("{}: {n} rows do not match their checksums", path.display())),
                };
                if note.is_none() {
                    vector_sidecar::record_intact(path);
                }
                let live = Arc::new(RowsById::from_rows(live));
                (file, sidecar, nonce, hasher, live, RowsById::from_rows(kept), facts, r.rows, note)
            }
            problem => {
                let note = match problem {
                    Some(Err(e)) => Some(e),
                    _ => None,
                };
                let nonce = vector_sidecar::new_nonce();
                // The sidecar first: a new quick file never meets an old sidecar of its nonce.
                let sidecar = fresh_file(&sidecar_path, &vector_sidecar::header(dims, nonce), &[])?;
                let file = fresh_file(path, &header(dims, nonce), &[])?;
                let facts = RowFacts::new(dims);
                (file, sidecar, nonce, Xxh3::new(), Arc::default(), RowsById::default(), facts, 0, note)
            }
        };
        let log = VectorLog {
            path: path.to_path_buf(),
            model: model.to_string(),
            dims,
            file,
            sidecar,
            nonce,
            rows,
            hasher,
            live,
            kept: kept_rows,
            staged_facts: facts.empty_like(),
            facts: SharedFacts::new(facts),
            staged: Vec::new(),
            staged_sidecar: Vec::new(),
            changed: true,
            compact_due: note.is_some() && rows > 0,
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

    /// The vector of a chunk (committed or staged), as stored.
    pub fn vector_of(&self, id: u64) -> std::io::Result<Option<Vec<f32>>> {
        match self.live.get(id) {
            Some(row) => self.read_row(row).map(Some),
            None => Ok(None),
        }
    }

    /// The vector of a chunk that went, when its row is kept.
    pub fn kept_vector(&self, id: u64) -> std::io::Result<Option<Vec<f32>>> {
        match self.kept.get(id) {
            Some(row) => self.read_row(row).map(Some),
            None => Ok(None),
        }
    }

    /// Whether the row of a chunk that went is kept.
    pub fn keeps(&self, id: u64) -> bool {
        self.kept.get(id).is_some()
    }

    /// The vector a row holds, checked against the facts of the row committed or staged.
    fn read_row(&self, row: u32) -> std::io::Result<Vec<f32>> {
        let len = row_len(self.dims);
        let bytes = if u64::from(row) < self.rows {
            let mut bytes = vec![0u8; len];
            self.file.read_exact_at(&mut bytes, HEADER_LEN + u64::from(row) * len as u64)?;
            bytes
        } else {
            let start = (u64::from(row) - self.rows) as usize * len;
            self.staged[start..start + len].to_vec()
        };
        let matches = match u64::from(row).checked_sub(self.rows) {
            Some(staged) => self.staged_facts.matches(staged as u32, &bytes),
            None => self.facts.read().matches(row, &bytes),
        };
        if !matches {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: row {row} is not the row committed (the file was changed under the index)",
                    self.path.display()
                ),
            ));
        }
        Ok(decode_row(&bytes).1)
    }

    /// Stages a chunk's quick vector for the next commit.
    pub fn stage(&mut self, id: u64, vector: &[f32]) {
        if vector.len() != self.dims {
            return;
        }
        let row = self.rows + (self.staged.len() / row_len(self.dims)) as u64;
        encode_row(&mut self.staged, &mut self.staged_facts, id, vector);
        self.staged_facts.encode_last(&mut self.staged_sidecar, id);
        Arc::make_mut(&mut self.live).insert(id, row as u32);
        self.changed = true;
    }

    /// The chunk no longer needs a stand-in (its own vector arrived, or it went); says
    /// whether it had a row.
    pub fn drop_id(&mut self, id: u64) -> bool {
        let had = self.live.get(id).is_some() && Arc::make_mut(&mut self.live).remove(id);
        self.changed |= had;
        had
    }

    /// The chunk went, and its row is kept readable, out of the searched rows; says whether
    /// it had a row.
    pub fn retire(&mut self, id: u64) -> bool {
        let Some(row) = self.live.get(id) else { return false };
        Arc::make_mut(&mut self.live).remove(id);
        self.kept.insert(id, row);
        self.changed = true;
        true
    }

    /// A kept row is no longer wanted: it is dropped at the next compaction.
    pub fn forget_kept(&mut self, id: u64) {
        self.kept.remove(id);
    }

    /// Whether there is anything to write at the next commit.
    pub fn is_dirty(&self) -> bool {
        !self.staged.is_empty() || self.changed
    }

    /// Writes the staged rows (or the live rows alone, when dead ones have piled up) and
    /// returns what the manifest records of the file.
    pub fn commit(&mut self) -> std::io::Result<VectorFileRecord> {
        let held = (self.live.len() + self.kept.len()) as u64;
        let dead = (self.rows + (self.staged.len() / row_len(self.dims)) as u64).saturating_sub(held);
        if self.compact_due || dead > self.live.len() as u64 / 2 + COMPACT_SLACK {
            self.compact()?;
        } else if !self.staged.is_empty() {
            self.file.seek(SeekFrom::Start(HEADER_LEN + self.rows * row_len(self.dims) as u64))?;
            self.file.write_all(&self.staged)?;
            self.file.sync_data()?;
            let sidecar_len = vector_sidecar::row_len(self.dims) as u64;
            self.sidecar.seek(SeekFrom::Start(vector_sidecar::HEADER_LEN + self.rows * sidecar_len))?;
            // Not synced: a sidecar that a crash left short or stale fails its checksum at
            // the next open, which then derives it again from the rows, which are synced.
            self.sidecar.write_all(&self.staged_sidecar)?;
            self.hasher.update(&self.staged_sidecar);
            self.rows += (self.staged.len() / row_len(self.dims)) as u64;
            self.staged.clear();
            self.staged_sidecar.clear();
            self.facts.append(&mut self.staged_facts);
            vector_sidecar::record_intact(&self.path);
        }
        Ok(self.record())
    }

    fn record(&self) -> VectorFileRecord {
        VectorFileRecord {
            model: self.model.clone(),
            dimensions: self.dims,
            rows: self.rows,
            checksum: self.hasher.digest(),
        }
    }

    /// Rewrites the file with the live and kept rows only, in their order, a block at a time.
    fn compact(&mut self) -> std::io::Result<()> {
        let len = row_len(self.dims);
        let committed = self.rows;
        let mut order: Vec<(u32, u64)> =
            self.live.iter().chain(self.kept.iter()).map(|(id, row)| (row, id)).collect();
        order.sort_unstable();
        let tmp = files::temp_sibling(&self.path);
        let sidecar_path = vector_sidecar::path_of(&self.path);
        let sidecar_tmp = files::temp_sibling(&sidecar_path);
        let nonce = vector_sidecar::new_nonce();
        let mut hasher = Xxh3::new();
        let mut facts = self.facts.read().empty_like();
        let mut sidecar_rows = Vec::with_capacity(order.len() * vector_sidecar::row_len(self.dims));
        {
            let committed_facts = self.facts.read();
            let mut out = io::BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
            out.write_all(&header(self.dims, nonce))?;
            let mut buffer = Vec::new();
            let mut rest = &order[..];
            while let Some(&(first, _)) = rest.first() {
                let end = rest.partition_point(|(row, _)| *row - first < BLOCK_ROWS);
                let (group, after) = rest.split_at(end);
                rest = after;
                // Committed rows are read from the file, staged ones taken from memory.
                let in_file = group.partition_point(|(row, _)| u64::from(*row) < committed);
                if in_file > 0 {
                    let last = group[in_file - 1].0;
                    let rows = Rows::File(self.file.try_clone()?);
                    let bytes = rows.read(first, last - first + 1, len, &mut buffer)?;
                    for (row, _) in &group[..in_file] {
                        let start = (row - first) as usize * len;
                        out.write_all(&bytes[start..start + len])?;
                    }
                }
                for (row, _) in &group[in_file..] {
                    let start = (u64::from(*row) - committed) as usize * len;
                    out.write_all(&self.staged[start..start + len])?;
                }
                for (row, id) in group {
                    match u64::from(*row).checked_sub(committed) {
                        Some(staged) => facts.push_from(&self.staged_facts, staged as u32),
                        None => facts.push_from(&committed_facts, *row),
                    }
                    facts.encode_last(&mut sidecar_rows, *id);
                }
            }
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        }
        hasher.update(&sidecar_rows);
        drop(fresh_file(&sidecar_tmp, &vector_sidecar::header(self.dims, nonce), &sidecar_rows)?);
        // The sidecar is put in place first: cut off between the two renames, the old file
        // meets a sidecar of another nonce and is read through, as its commit recorded it.
        std::fs::rename(&sidecar_tmp, &sidecar_path)?;
        std::fs::rename(&tmp, &self.path)?;
        files::sync_parent(&self.path);
        vector_sidecar::record_intact(&self.path);
        self.file = OpenOptions::new().read(true).write(true).open(&self.path)?;
        self.sidecar = OpenOptions::new().read(true).write(true).open(&sidecar_path)?;
        self.nonce = nonce;
        self.hasher = hasher;
        self.rows = order.len() as u64;
        let mut live = RowsById::default();
        let mut kept = RowsById::default();
        for (n, (_, id)) in order.iter().enumerate() {
            let table = if self.live.get(*id).is_some() { &mut live } else { &mut kept };
            table.insert(*id, n as u32);
        }
        self.live = Arc::new(live);
        self.kept = kept;
        self.staged_facts = facts.empty_like();
        self.facts = SharedFacts::new(facts);
        self.staged.clear();
        self.staged_sidecar.clear();
        self.changed = true;
        self.compact_due = false;
        Ok(())
    }

    /// The committed live rows as a set for snapshots, or `None` when nothing changed since
    /// the last one. Call after [`VectorLog::commit`].
    pub fn publish(&mut self) -> Option<std::io::Result<VectorSet>> {
        if !self.changed {
            return None;
        }
        self.changed = false;
        let rows = if self.rows == 0 { Ok(Rows::Empty) } else { self.file.try_clone().map(Rows::File) };
        Some(rows.map(|rows| {
            VectorSet::with_table(
                self.dims,
                rows,
                self.path.clone(),
                self.facts.clone(),
                Arc::clone(&self.live),
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    use super::*;
    use crate::index::vector_file::VectorSearch;
    use crate::index::vector_open::open_set;

    fn record(log: &mut VectorLog) -> VectorFileRecord {
        log.commit().unwrap()
    }

    /// A new file at `path` holding `vectors`, committed, with its writer still open.
    fn written(path: &Path, dims: usize, vectors: &[(u64, Vec<f32>)]) -> (VectorLog, VectorFileRecord) {
        let (mut log, _) = VectorLog::open(path, "static/m", dims, None, &|_| true).unwrap();
        for (id, v) in vectors {
            log.stage(*id, v);
        }
        let committed = record(&mut log);
        (log, committed)
    }

    /// `count` unit vectors of `dims` dimensions, fixed pseudo-random, under ids out of row
    /// order.
    fn vectors(dims: usize, count: u64) -> Vec<(u64, Vec<f32>)> {
        let mut seed = 13u64;
        (0..count)
            .map(|n| {
                let v: Vec<f32> = (0..dims)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
                    })
                    .collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                ((n * 7_919) % (count + 1), v.iter().map(|x| x / norm).collect())
            })
            .collect()
    }

    #[test]
    fn a_published_set_keeps_its_rows_while_later_commits_append_to_the_shared_facts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let dims = 16;
        let vectors = vectors(dims, 400);
        let (mut log, _) = written(&path, dims, &vectors[..200]);
        let first = log.publish().unwrap().unwrap();
        let query = vectors[250].1.clone();
        let before = first.nearest(&query, 10).unwrap();
        // More rows, one of them the query itself, and a chunk of the first set dropped.
        for (id, v) in &vectors[200..] {
            log.stage(*id, v);
        }
        assert!(log.drop_id(vectors[0].0));
        record(&mut log);
        let second = log.publish().unwrap().unwrap();
        assert_eq!(first.len(), 200);
        assert_eq!(first.nearest(&query, 10).unwrap(), before, "the first set sees only its own rows");
        assert!(first.contains(vectors[0].0) && !first.contains(vectors[250].0));
        assert_eq!(second.len(), 399);
        assert_eq!(second.nearest(&query, 1).unwrap()[0].0, vectors[250].0);
        assert!(!second.contains(vectors[0].0));
    }

    #[test]
    fn rows_persist_and_a_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let all = |_: u64| true;
        let (mut log, note) = VectorLog::open(&path, "static/m", 2, None, &all).unwrap();
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
        assert_eq!(set.nearest(&[0.0, 1.0], 1).unwrap()[0].0, 2);
        assert!(set.vector_of(3).unwrap().is_none());

        let (mut log, note) = VectorLog::open(&path, "static/m", 2, Some(&committed), &|id| id != 1).unwrap();
        assert!(note.is_none(), "{note:?}");
        assert!(!log.contains(1) && log.contains(2));
        log.stage(4, &[0.6, 0.8]);
        let next = record(&mut log);
        assert_eq!(next.rows, 3);
        let set = log.publish().unwrap().unwrap();
        assert_eq!(set.len(), 2);
        assert!((set.vector_of(4).unwrap().unwrap()[1] - 0.8).abs() < 0.01);
    }

    #[test]
    fn damage_or_another_model_starts_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let all = |_: u64| true;
        let (mut log, _) = VectorLog::open(&path, "static/m", 2, None, &all).unwrap();
        log.stage(1, &[1.0, 0.0]);
        let committed = record(&mut log);
        drop(log);
        let (_, note) = VectorLog::open(&path, "static/other", 2, Some(&committed), &all).unwrap();
        assert!(note.unwrap().contains("static/m"));

        let (mut log, _) = VectorLog::open(&path, "static/m", 2, None, &all).unwrap();
        log.stage(1, &[1.0, 0.0]);
        let committed = record(&mut log);
        drop(log);
        let sidecar = vector_sidecar::path_of(&path);
        let (good, good_sidecar) = (std::fs::read(&path).unwrap(), std::fs::read(&sidecar).unwrap());
        let flip_last = |p: &Path| {
            let mut bytes = std::fs::read(p).unwrap();
            let last = bytes.len() - 1;
            bytes[last] ^= 0x55;
            std::fs::write(p, &bytes).unwrap();
        };
        // A row changed on disk, its sign unchanged: the file's status is no longer the one
        // its writer recorded, so the open reads the rows through and leaves it out.
        flip_last(&path);
        assert!(!open_set(&path, &committed, 2, &all).unwrap().contains(1));
        // Changed where no status shows it (below the file system): the open trusts the
        // rows, and the row is refused when it is read.
        vector_sidecar::record_intact(&path);
        let set = open_set(&path, &committed, 2, &all).unwrap();
        assert!(set.vector_of(1).unwrap_err().to_string().contains("changed under the index"));
        // A damaged sidecar: the file is read through instead, and a writer puts the
        // sidecar right.
        std::fs::write(&path, &good).unwrap();
        flip_last(&sidecar);
        let set = open_set(&path, &committed, 2, &all).unwrap();
        assert!((set.vector_of(1).unwrap().unwrap()[0] - 1.0).abs() < 0.01);
        let (log, note) = VectorLog::open(&path, "static/m", 2, Some(&committed), &all).unwrap();
        assert!(note.is_none() && log.contains(1));
        drop(log);
        assert_eq!(std::fs::read(&sidecar).unwrap(), good_sidecar);
        // Both damaged: nothing to check the rows by, so they are made again.
        flip_last(&path);
        flip_last(&sidecar);
        assert!(open_set(&path, &committed, 2, &all).unwrap_err().contains("checksum"));
        let (log, note) = VectorLog::open(&path, "static/m", 2, Some(&committed), &all).unwrap();
        assert!(note.unwrap().contains("checksum"));
        assert!(!log.contains(1));
    }

    #[test]
    fn a_file_from_before_sidecars_is_read_through_and_then_given_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let dims = 8;
        let vectors = vectors(dims, 300);
        let (log, mut committed) = written(&path, dims, &vectors);
        drop(log);
        let query = vectors[3].1.clone();
        let before = open_set(&path, &committed, dims, &|_| true).unwrap().nearest(&query, 5).unwrap();
        // As such a file was: no nonce, no sidecar, and the checksum of the rows themselves.
        let sidecar = vector_sidecar::path_of(&path);
        std::fs::remove_file(&sidecar).unwrap();
        let file = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        file.write_all_at(&header(dims, 0), 0).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        committed.checksum = xxhash_rust::xxh3::xxh3_64(&bytes[HEADER_LEN as usize..]);
        assert_eq!(open_set(&path, &committed, dims, &|_| true).unwrap().nearest(&query, 5).unwrap(), before);
        let (mut log, note) = VectorLog::open(&path, "static/m", dims, Some(&committed), &|_| true).unwrap();
        assert!(note.is_none(), "{note:?}");
        assert!(sidecar.exists(), "the writer wrote the sidecar");
        let mut nonce = [0u8; 4];
        file.read_exact_at(&mut nonce, 12).unwrap();
        assert_ne!(nonce, [0; 4], "and gave the file a nonce");
        // Its next commit records the sidecar's checksum, which the next open reads alone.
        let next = record(&mut log);
        assert_ne!(next.checksum, committed.checksum);
        drop(log);
        assert!(vector_sidecar::recorded_intact(&path));
        assert_eq!(open_set(&path, &next, dims, &|_| true).unwrap().nearest(&query, 5).unwrap(), before);
        // Rows zeroed after the header: checked against the sidecar, row by row, and left
        // out, while the rows after them are kept.
        file.write_all_at(&vec![0u8; row_len(dims) * 100], HEADER_LEN).unwrap();
        let set = open_set(&path, &next, dims, &|_| true).unwrap();
        assert_eq!(set.len(), 200);
        assert!(!set.contains(vectors[99].0) && set.contains(vectors[100].0));
        // A writer says so, and its next commit rewrites the file without them.
        let (mut log, note) = VectorLog::open(&path, "static/m", dims, Some(&next), &|_| true).unwrap();
        assert!(note.unwrap().contains("100 rows do not match their checksums"));
        assert_eq!(log.len(), 200);
        let compacted = record(&mut log);
        assert_eq!(compacted.rows, 200);
        drop(log);
        let (_, note) = VectorLog::open(&path, "static/m", dims, Some(&compacted), &|_| true).unwrap();
        assert!(note.is_none());
    }

    #[test]
    fn a_file_cut_short_or_rewritten_under_an_open_set_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let dims = 32;
        let vectors = vectors(dims, 2_000);
        let (mut log, committed) = written(&path, dims, &vectors);
        let query = vectors[10].1.clone();
        let id = vectors[10].0;
        let intact = open_set(&path, &committed, dims, &|_| true).unwrap();
        let published = log.publish().unwrap().unwrap();
        let before = intact.nearest(&query, 5).unwrap();
        assert_eq!(published.nearest(&query, 5).unwrap(), before);
        // Rewritten in place, the same length: each search path notices the rows changed.
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        for b in &mut flipped[HEADER_LEN as usize..] {
            *b = b.wrapping_neg();
        }
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_all_at(&flipped, 0).unwrap();
        for set in [&intact, &published] {
            for how in [VectorSearch::Exact, VectorSearch::Preselect(50)] {
                let e = set.nearest_with(&query, 5, how).unwrap_err().to_string();
                assert!(e.contains("quick.vec") && e.contains("changed under the index"), "{how:?}: {e}");
            }
            assert!(set.vector_of(id).is_err() && set.similarity(id, &query).is_err());
        }
        // Cut short: an error again, and once the file is whole the same set reads it.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(HEADER_LEN + 100).unwrap();
        for how in [VectorSearch::Exact, VectorSearch::Preselect(50)] {
            let e = intact.nearest_with(&query, 5, how).unwrap_err().to_string();
            assert!(e.contains("changed under the index"), "{how:?}: {e}");
        }
        std::fs::write(&path, &good).unwrap();
        assert_eq!(intact.nearest(&query, 5).unwrap(), before);
    }

    #[test]
    fn a_file_whose_every_row_was_replaced_is_compacted_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let (mut log, _) = VectorLog::open(&path, "static/m", 2, None, &|_| true).unwrap();
        let n = 3 * COMPACT_SLACK;
        for id in 0..n {
            log.stage(id, &[1.0, 0.0]);
        }
        record(&mut log);
        // A re-chunk of everything: each chunk gone, and as many new ones.
        for id in 0..n {
            log.drop_id(id);
            log.stage(n + id, &[0.0, 1.0]);
        }
        let committed = record(&mut log);
        assert_eq!(committed.rows, n, "the dead half is not kept");
    }

    #[test]
    fn dead_rows_are_compacted_away() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quick.vec");
        let (mut log, _) = VectorLog::open(&path, "static/m", 2, None, &|_| true).unwrap();
        let n = COMPACT_SLACK + 10;
        for id in 0..n {
            log.stage(id, &[1.0, 0.0]);
        }
        record(&mut log);
        for id in 0..n - 3 {
            log.drop_id(id);
        }
        // Staged rows are compacted with the committed ones.
        log.stage(n, &[0.0, 1.0]);
        let committed = record(&mut log);
        assert_eq!(committed.rows, 4, "only the live rows are left");
        let set = open_set(&path, &committed, 2, &|_| true).unwrap();
        assert_eq!(set.len(), 4);
        assert!(set.contains(n - 1) && !set.contains(0));
        assert_eq!(set.nearest(&[0.0, 1.0], 1).unwrap()[0].0, n);
        let published = log.publish().unwrap().unwrap();
        assert_eq!(published.nearest(&[0.0, 1.0], 1).unwrap()[0].0, n);
    }

    #[test]
    fn kept_rows_are_read_but_never_searched_and_outlive_a_compaction_and_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.vec");
        let (mut log, _) = VectorLog::open(&path, "static/m", 2, None, &|_| true).unwrap();
        let n = COMPACT_SLACK + 10;
        for id in 0..n {
            log.stage(id, &[1.0, 0.0]);
        }
        log.stage(n, &[0.0, 1.0]);
        record(&mut log);
        assert!(log.retire(n) && !log.retire(n + 1), "only a chunk with a row is retired");
        assert!(!log.contains(n) && log.keeps(n));
        assert_eq!(log.kept_vector(n).unwrap(), Some(vec![0.0, 1.0]));
        assert_eq!(log.vector_of(n).unwrap(), None);
        // Enough rows die to compact the file: the kept row stays, out of the searched ones.
        for id in 0..n - 3 {
            log.drop_id(id);
        }
        let committed = record(&mut log);
        assert_eq!(committed.rows, 4, "three live rows and the kept one");
        assert_eq!(log.kept_vector(n).unwrap(), Some(vec![0.0, 1.0]));
        let published = log.publish().unwrap().unwrap();
        assert_eq!(published.len(), 3);
        assert!(published.nearest(&[0.0, 1.0], 5).unwrap().iter().all(|(id, _)| *id != n));
        let live = |id| id < n;
        drop(log);
        let (log, _) =
            VectorLog::open_keeping(&path, "static/m", 2, Some(&committed), &live, &|id| id == n).unwrap();
        assert_eq!((log.len(), log.kept_vector(n).unwrap()), (3, Some(vec![0.0, 1.0])));
        let set = open_set(&path, &committed, 2, &live).unwrap();
        assert!(!set.contains(n) && set.len() == 3, "a reader never sees kept rows");
        // A kept row given up is dropped at the next compaction.
        let (mut log, _) =
            VectorLog::open_keeping(&path, "static/m", 2, Some(&committed), &live, &|id| id == n).unwrap();
        log.forget_kept(n);
        assert_eq!(log.kept_vector(n).unwrap(), None);
        log.compact().unwrap();
        assert_eq!(log.record().rows, 3);
    }
}
