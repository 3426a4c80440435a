//! The index folder's layout, its format record, and crash-safe file writes.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest::VectorFileRecord;
use crate::providers::EmbedderIdentity;

/// Bumped whenever the on-disk layout or the meaning of a stored field changes; an index
/// of another version is rebuilt.
pub const FORMAT_VERSION: u32 = 4;

/// Paths inside one index folder.
#[derive(Debug, Clone)]
pub struct IndexLayout {
    pub dir: PathBuf,
}

impl IndexLayout {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        IndexLayout { dir: dir.into() }
    }
    /// The format and embedder record.
    pub fn meta(&self) -> PathBuf {
        self.dir.join("situate.json")
    }
    pub fn tantivy(&self) -> PathBuf {
        self.dir.join("tantivy")
    }
    /// The index's model's vectors (rows laid out as the quick file's, with a sidecar).
    pub fn vectors(&self) -> PathBuf {
        self.dir.join("vectors.vec")
    }
    /// Files saved in a process that only reads the index, for the writer to index (the
    /// handoff module).
    pub fn handed_over(&self) -> PathBuf {
        self.dir.join("handed-over")
    }
    /// Which text each of the model's kept rows belongs to (the retired module).
    pub fn retired(&self) -> PathBuf {
        self.dir.join("retired.list")
    }
    pub fn vectors_meta(&self) -> PathBuf {
        self.dir.join("vectors.json")
    }
    /// The vector index of earlier versions (usearch), read once to convert it.
    pub fn legacy_vectors(&self) -> PathBuf {
        self.dir.join("vectors.usearch")
    }
    /// The changes to `legacy_vectors()` since it was last written whole.
    pub fn legacy_journal(&self) -> PathBuf {
        self.dir.join("vectors.journal")
    }
    /// Quick vectors standing in for pending ones (the quick module).
    pub fn quick(&self) -> PathBuf {
        self.dir.join("quick.vec")
    }
    /// The chunk-store files whose checksums were found intact, by their file status.
    pub fn store_checked(&self) -> PathBuf {
        self.dir.join("store-checked.json")
    }
    /// The manifest, in its binary form (the manifest_file module).
    pub fn manifest(&self) -> PathBuf {
        self.dir.join("manifest.bin")
    }
    /// The manifest's journal: what commits changed since it was written whole (the
    /// manifest_log module).
    pub fn manifest_log(&self) -> PathBuf {
        self.dir.join("manifest.log")
    }
    /// The manifest as older versions wrote it (JSON): read when no binary one of the
    /// same commit exists, and removed once a writer has written the binary one.
    pub fn manifest_json(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }
    pub fn lock(&self) -> PathBuf {
        self.dir.join("writer.lock")
    }
}

/// What an index was built with. A different format rebuilds everything; a different
/// embedder rebuilds the vectors from stored texts; a different pipeline (chunking, header)
/// re-chunks the files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexMeta {
    pub format: u32,
    pub embedder: EmbedderIdentity,
    /// Fingerprint of the settings that shape chunks and their stored context.
    pub pipeline: String,
}

/// Writes `bytes` to `path` so that a crash leaves either the old or the new file: a
/// temporary sibling is written, flushed to disk and renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temp_sibling(path);
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    sync_parent(path);
    Ok(())
}

/// A temporary name next to `path`, for writers that produce the file themselves: one of
/// its own for each call, so that two threads of one process writing the same file never
/// share it.
pub fn temp_sibling(path: &Path) -> PathBuf {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".tmp-{}-{n}", std::process::id()));
    path.with_file_name(name)
}

/// Makes a rename durable. Best effort: not every platform can open a folder.
pub fn sync_parent(path: &Path) {
    if let Some(parent) = path.parent()
        && let Ok(dir) = std::fs::File::open(parent)
    {
        let _ = dir.sync_all();
    }
}

/// Reads a JSON file; `Ok(None)` when it does not exist.
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Writes a JSON file atomically.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn read_json_tells_missing_from_broken() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.json");
        assert_eq!(read_json::<u32>(&p).unwrap(), None);
        std::fs::write(&p, b"{not json").unwrap();
        assert!(read_json::<u32>(&p).unwrap_err().contains("m.json"));
    }
}

/// The tantivy commit payload.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct CommitPayload {
    pub(super) generation: u64,
    pub(super) pipeline: String,
}

/// The record next to the vector file: which model made the vectors, at which commit, and
/// what the commit wrote of the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct VectorsMeta {
    pub(super) generation: u64,
    pub(super) embedder: EmbedderIdentity,
    /// xxh3 of the earlier versions' usearch file as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) checksum: Option<u64>,
    /// The committed rows of `vectors.vec`; absent in records of earlier versions, whose
    /// vectors are in `vectors.usearch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) rows: Option<VectorFileRecord>,
}

/// The xxh3 hash of a file's bytes, read in pieces.
pub(super) fn file_checksum(path: &Path) -> std::io::Result<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            return Ok(hasher.digest());
        }
        hasher.update(&buffer[..n]);
    }
}

/// The format record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct FormatRecord {
    pub(super) format: u32,
}

/// Size in bytes of the files under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The default index folder of a workspace: `<cache dir>/situate/<name>-<hash of the path>`.
pub fn default_dir(root: &Path) -> PathBuf {
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let hash = xxhash_rust::xxh3::xxh3_64(canonical.to_string_lossy().as_bytes());
    let name: String = canonical
        .file_name()
        .map(|n| {
            n.to_string_lossy().chars().filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_')).collect()
        })
        .unwrap_or_default();
    let base = dirs::cache_dir().unwrap_or_else(std::env::temp_dir);
    base.join("situate").join(format!("{name}-{hash:016x}"))
}
