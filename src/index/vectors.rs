//! The vector index of earlier versions: one unit vector per chunk id in a usearch HNSW
//! graph, cosine metric, stored as f16. An index that still has one is converted to the
//! vector file of rows (`load.rs`) when a writer first opens it, and read as it is by a
//! reader until then; tests write such files, and `benches/vectors.rs` measures the graph
//! against the vector file's search.
//!
//! A writer holds the index in memory. A reader reads a file of up to
//! [`READER_LOAD_LIMIT`] bytes into memory too, so that the file cut short or rewritten
//! under it cannot touch it; a larger file is mapped (usearch's view) to keep a reader's
//! memory bounded, and each search first checks that the mapped file still has its length:
//! a mapped page past the end of a file kills the process with SIGBUS, where the check
//! makes it an error the search reports.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::files;

/// Below this many vectors a search scans them all: exact, so that the same vectors give the
/// same neighbours whatever order they were added in (an approximate graph depends on it),
/// at a few milliseconds at the limit (1.4 ms measured for 30,000 vectors of 256
/// dimensions).
const EXACT_SEARCH_LIMIT: usize = 200_000;
/// Candidates examined when a vector is inserted into the graph. usearch's default (128)
/// costs about three times as much per insert; 40 keeps cold indexing fast, and the graph
/// only serves indexes over `EXACT_SEARCH_LIMIT` vectors.
const EXPANSION_ADD: usize = 40;

/// Files of up to this many bytes are read into memory by a reader rather than mapped:
/// about 330,000 vectors of 384 dimensions with their graph.
pub const READER_LOAD_LIMIT: u64 = 512 << 20;

/// A usearch failure, with the file involved when there is one.
#[derive(Debug, thiserror::Error)]
#[error("vector index{}: {message}", path.as_ref().map(|p| format!(" {p}")).unwrap_or_default())]
pub struct VectorError {
    pub path: Option<String>,
    pub message: String,
    /// The error of the file system, when the failure was one: whether the machine failed
    /// or the file is wrong tells index damage apart ([`super::IndexError::is_damage`]).
    pub io: Option<std::io::Error>,
}

impl VectorError {
    pub(super) fn new(message: impl ToString) -> Self {
        VectorError { path: None, message: message.to_string(), io: None }
    }
    pub(super) fn at(path: &Path, message: impl ToString) -> Self {
        VectorError { path: Some(path.display().to_string()), message: message.to_string(), io: None }
    }
    /// A file system error on `path`.
    pub(super) fn io_at(path: &Path, error: std::io::Error) -> Self {
        VectorError { path: Some(path.display().to_string()), message: error.to_string(), io: Some(error) }
    }
}

/// The vectors of one index.
pub struct VectorIndex {
    index: Index,
    dimensions: usize,
    /// Removed entries still holding slots; when they outnumber live ones the owner rebuilds.
    removed: usize,
    /// The mapped file, when the index is a view of one.
    mapped: Option<MappedFile>,
}

/// A file usearch maps, held open to check before each search that it still has the
/// length it was mapped with.
struct MappedFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl MappedFile {
    fn check(&self) -> Result<(), VectorError> {
        let now = self.file.metadata().map_err(|e| VectorError::io_at(&self.path, e))?.len();
        if now < self.len {
            return Err(VectorError::at(
                &self.path,
                format!(
                    "the file was cut from {} to {now} bytes under the index (it is read again at the next open)",
                    self.len
                ),
            ));
        }
        Ok(())
    }
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex").field("len", &self.len()).field("dimensions", &self.dimensions).finish()
    }
}

fn options(dimensions: usize) -> IndexOptions {
    IndexOptions {
        dimensions,
        metric: MetricKind::Cos,
        quantization: ScalarKind::F16,
        connectivity: 0,
        expansion_add: EXPANSION_ADD,
        expansion_search: 0,
        multi: false,
    }
}

impl VectorIndex {
    /// An empty index for vectors of `dimensions` floats.
    pub fn create(dimensions: usize) -> Result<Self, VectorError> {
        let index = Index::new(&options(dimensions)).map_err(VectorError::new)?;
        index.reserve(64).map_err(VectorError::new)?;
        Ok(VectorIndex { index, dimensions, removed: 0, mapped: None })
    }

    /// Loads a saved index. `writable = false` memory-maps a file larger than
    /// [`READER_LOAD_LIMIT`] instead of copying it in. The file must hold vectors of
    /// `dimensions` floats.
    pub fn open(path: &Path, dimensions: usize, writable: bool) -> Result<Self, VectorError> {
        VectorIndex::open_loading_up_to(path, dimensions, if writable { u64::MAX } else { READER_LOAD_LIMIT })
    }

    /// Loads a saved index, read into memory when the file has at most `load_limit` bytes
    /// and mapped otherwise.
    fn open_loading_up_to(path: &Path, dimensions: usize, load_limit: u64) -> Result<Self, VectorError> {
        let p = path.to_str().ok_or_else(|| VectorError::at(path, "path is not UTF-8"))?;
        let meta = Index::metadata(p).map_err(|e| VectorError::at(path, e))?;
        if meta.dimensions as usize != dimensions {
            return Err(VectorError::at(
                path,
                format!("holds vectors of {} dimensions, expected {dimensions}", meta.dimensions),
            ));
        }
        let file = File::open(path).map_err(|e| VectorError::io_at(path, e))?;
        let len = file.metadata().map_err(|e| VectorError::io_at(path, e))?.len();
        let (index, mapped) = if len <= load_limit {
            (Index::restore(p).map_err(|e| VectorError::at(path, e))?, None)
        } else {
            let index = Index::restore_view(p).map_err(|e| VectorError::at(path, e))?;
            // The file must be the one mapped: a writer may have renamed a new one into
            // place meanwhile.
            let held = file.metadata().map_err(|e| VectorError::io_at(path, e))?;
            let now = std::fs::metadata(path).map_err(|e| VectorError::io_at(path, e))?;
            if (held.dev(), held.ino()) != (now.dev(), now.ino()) {
                return Err(VectorError::at(path, "the file was replaced while it was opened"));
            }
            (index, Some(MappedFile { file, path: path.to_path_buf(), len }))
        };
        // Not stored in the file: a restored index would insert with usearch's default.
        index.change_expansion_add(EXPANSION_ADD);
        Ok(VectorIndex { index, dimensions, removed: meta.count_deleted as usize, mapped })
    }

    /// Whether the index is a view of a mapped file.
    pub fn is_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// Number of live vectors.
    pub fn len(&self) -> usize {
        self.index.size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removed entries that still take space.
    pub fn removed(&self) -> usize {
        self.removed
    }

    pub fn contains(&self, id: u64) -> bool {
        self.index.contains(id)
    }

    /// Adds (or replaces) the vector of `id`.
    pub fn add(&mut self, id: u64, vector: &[f32]) -> Result<(), VectorError> {
        if vector.len() != self.dimensions {
            return Err(VectorError::new(format!(
                "vector of {} dimensions for an index of {}",
                vector.len(),
                self.dimensions
            )));
        }
        if self.index.contains(id) {
            self.remove(id)?;
        }
        let needed = self.index.size() + self.removed + 1;
        if needed > self.index.capacity() {
            self.index.reserve((needed * 2).max(64)).map_err(VectorError::new)?;
        }
        self.index.add(id, vector).map_err(VectorError::new)
    }

    /// Removes the vector of `id`; says whether there was one.
    pub fn remove(&mut self, id: u64) -> Result<bool, VectorError> {
        let n = self.index.remove(id).map_err(VectorError::new)?;
        self.removed += n;
        Ok(n > 0)
    }

    /// The stored vector of `id` (as stored: f16 precision). `None` too when the mapped
    /// file was cut short.
    pub fn get(&self, id: u64) -> Option<Vec<f32>> {
        if self.mapped.as_ref().is_some_and(|m| m.check().is_err()) {
            return None;
        }
        let mut v = vec![0.0f32; self.dimensions];
        match self.index.get(id, &mut v) {
            Ok(n) if n > 0 => Some(v),
            _ => None,
        }
    }

    /// The `count` nearest chunk ids with their cosine distance (0 = same direction).
    pub fn search(&self, query: &[f32], count: usize) -> Result<Vec<(u64, f32)>, VectorError> {
        if self.is_empty() || count == 0 {
            return Ok(Vec::new());
        }
        if let Some(mapped) = &self.mapped {
            mapped.check()?;
        }
        let matches = if self.len() <= EXACT_SEARCH_LIMIT {
            self.index.exact_search(query, count)
        } else {
            self.index.change_expansion_search(count.max(64) * 2);
            self.index.search(query, count)
        }
        .map_err(VectorError::new)?;
        Ok(matches.keys.into_iter().zip(matches.distances).collect())
    }

    /// The `count` nearest through the graph, `expansion` candidates examined, whatever the
    /// index's size: to measure the graph's recall against [`VectorIndex::search`]'s exact
    /// answer.
    pub fn search_with_expansion(
        &self,
        query: &[f32],
        count: usize,
        expansion: usize,
    ) -> Result<Vec<(u64, f32)>, VectorError> {
        if let Some(mapped) = &self.mapped {
            mapped.check()?;
        }
        self.index.change_expansion_search(expansion.max(count));
        let matches = self.index.search(query, count).map_err(VectorError::new)?;
        Ok(matches.keys.into_iter().zip(matches.distances).collect())
    }

    /// Writes the index to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<(), VectorError> {
        let tmp = files::temp_sibling(path);
        let t = tmp.to_str().ok_or_else(|| VectorError::at(path, "path is not UTF-8"))?;
        self.index.save(t).map_err(|e| VectorError::at(path, e))?;
        std::fs::File::open(&tmp).and_then(|f| f.sync_all()).map_err(|e| VectorError::io_at(path, e))?;
        std::fs::rename(&tmp, path).map_err(|e| VectorError::io_at(path, e))?;
        files::sync_parent(path);
        Ok(())
    }

    /// A fresh index holding only the vectors of `ids`, without the space of removed ones.
    pub fn compacted(&self, ids: impl IntoIterator<Item = u64>) -> Result<VectorIndex, VectorError> {
        let mut fresh = VectorIndex::create(self.dimensions)?;
        fresh.index.reserve(self.len().max(64)).map_err(VectorError::new)?;
        for id in ids {
            if let Some(v) = self.get(id) {
                fresh.add(id, &v)?;
            }
        }
        Ok(fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(dims: usize, hot: usize) -> Vec<f32> {
        let mut v = vec![0.0; dims];
        v[hot] = 1.0;
        v
    }

    #[test]
    fn add_search_remove_save_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.usearch");
        let mut idx = VectorIndex::create(8).unwrap();
        for i in 0..8u64 {
            idx.add(100 + i, &unit(8, i as usize)).unwrap();
        }
        assert_eq!(idx.search(&unit(8, 3), 1).unwrap()[0].0, 103);
        idx.remove(103).unwrap();
        assert!(!idx.contains(103));
        assert_ne!(idx.search(&unit(8, 3), 1).unwrap()[0].0, 103);
        idx.save(&path).unwrap();

        let back = VectorIndex::open(&path, 8, true).unwrap();
        assert_eq!(back.len(), 7);
        assert_eq!(back.search(&unit(8, 5), 1).unwrap()[0].0, 105);
        assert_eq!(back.get(105).unwrap(), unit(8, 5));
        let view = VectorIndex::open(&path, 8, false).unwrap();
        assert_eq!(view.search(&unit(8, 6), 1).unwrap()[0].0, 106);
    }

    #[test]
    fn wrong_dimensions_and_corrupt_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.usearch");
        let mut idx = VectorIndex::create(4).unwrap();
        assert!(idx.add(1, &[1.0, 0.0]).is_err());
        idx.add(1, &[1.0, 0.0, 0.0, 0.0]).unwrap();
        idx.save(&path).unwrap();
        assert!(VectorIndex::open(&path, 8, true).unwrap_err().to_string().contains("dimensions"));
        std::fs::write(&path, b"garbage").unwrap();
        assert!(VectorIndex::open(&path, 4, true).is_err());
    }

    #[test]
    fn a_mapped_file_cut_short_under_a_reader_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.usearch");
        let mut idx = VectorIndex::create(8).unwrap();
        for i in 0..8u64 {
            idx.add(100 + i, &unit(8, i as usize)).unwrap();
        }
        idx.save(&path).unwrap();
        let small = VectorIndex::open(&path, 8, false).unwrap();
        assert!(!small.is_mapped(), "a small file is read into memory");
        let view = VectorIndex::open_loading_up_to(&path, 8, 0).unwrap();
        assert!(view.is_mapped());
        assert_eq!(view.search(&unit(8, 2), 1).unwrap()[0].0, 102);
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len / 3).unwrap();
        let e = view.search(&unit(8, 2), 1).unwrap_err().to_string();
        assert!(e.contains("v.usearch") && e.contains("cut from"), "{e}");
        assert!(view.get(102).is_none());
        // Read into memory, the index never sees the file again.
        assert_eq!(small.search(&unit(8, 2), 1).unwrap()[0].0, 102);
    }

    #[test]
    fn compaction_keeps_only_live_vectors() {
        let mut idx = VectorIndex::create(4).unwrap();
        for i in 0..4u64 {
            idx.add(i, &unit(4, i as usize)).unwrap();
        }
        idx.remove(0).unwrap();
        assert_eq!(idx.removed(), 1);
        let fresh = idx.compacted([1, 2, 3]).unwrap();
        assert_eq!(fresh.len(), 3);
        assert_eq!(fresh.removed(), 0);
        assert_eq!(fresh.search(&unit(4, 2), 1).unwrap()[0].0, 2);
    }
}
