//! The manifest: what the index knows of each file (size, mtime, content hash, chunk ids),
//! so that a reconcile reads only what changed.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};

use crate::workspace::{Skipped, SourceFile};

/// Chunk ids by the hash of their embedded text. The keys are xxh3 hashes, evenly spread
/// already, so the map takes them as they are instead of hashing them again: at a million
/// chunks that is most of the cost of building it, which a one-file edit pays once.
pub type IdsByEmbedHash = HashMap<u64, u64, BuildHasherDefault<TakenAsIs>>;

/// A hasher for keys that are hashes: the key is its own hash.
#[derive(Default)]
pub struct TakenAsIs(u64);

impl Hasher for TakenAsIs {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// One indexed chunk as the manifest sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRef {
    pub id: u64,
    /// xxh3 of the text that was embedded (header + snippet + text): equal hashes share a
    /// vector.
    pub embed_hash: u64,
    /// The chunk waits for its snippet (written with its header context alone).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub snippet_pending: bool,
}

/// One indexed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub size: u64,
    pub mtime_ns: u64,
    pub content_hash: u64,
    pub chunks: Vec<ChunkRef>,
    /// The file was not valid UTF-8 and was decoded lossily.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lossy: bool,
    /// Chunker warnings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The file was modified within the clock's resolution of being read, so its size and
    /// mtime cannot prove it unchanged: the next reconcile reads it again (as git does).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub racy: bool,
}

/// Seconds within which an mtime is too close to the read to be trusted.
const RACY_SECONDS: u64 = 2;

/// Whether a file with this mtime, read now, could change again without its mtime moving.
pub fn is_racy(mtime_ns: u64) -> bool {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    mtime_ns / 1_000_000_000 + RACY_SECONDS >= now
}

/// Whether a file's recorded entry stands for `file` as found now: its size and mtime say it
/// is unchanged, and it is within the size limit `max_bytes` (see [`Manifest::holds_current`]).
fn entry_is_current(entry: &FileEntry, file: &SourceFile, max_bytes: u64) -> bool {
    file.size <= max_bytes
        && entry.size == file.size
        && entry.mtime_ns == file.mtime_ns
        && entry.content_hash != 0
        && !entry.racy
}

/// The manifest of one index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Matches the tantivy commit and the vector file it was written with.
    pub generation: u64,
    /// The next unused chunk id; ids are never reused.
    pub next_chunk_id: u64,
    /// Unix seconds of the last commit that changed chunks.
    pub committed_at: u64,
    pub files: BTreeMap<String, FileEntry>,
    /// Files left out at the last reconcile, with reasons.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// Some committed chunks have no vector yet (their vectors are pending).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vectors_pending: bool,
    /// Chunks a second that the index's model embedded when it last filled pending
    /// vectors, to tell how long the rest will take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill_rate: Option<f32>,
    /// The snippet settings (model, prompt) every chunk's snippet was last checked against;
    /// empty when snippets were off. When they differ from the settings in force, every
    /// chunk is checked again.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub snippet_identity: String,
    /// The quick vector file as of this commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick: Option<VectorFileRecord>,
}

/// What a commit records of the quick vector file: whose vectors it holds, how many of its
/// rows were committed, and their checksum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorFileRecord {
    /// The quick model (`provider/model`).
    pub model: String,
    pub dimensions: usize,
    pub rows: u64,
    /// xxh3 of the committed rows.
    pub checksum: u64,
}

impl Manifest {
    /// Number of chunks over all files.
    pub fn chunk_count(&self) -> usize {
        self.files.values().map(|f| f.chunks.len()).sum()
    }

    /// Chunk id by embedded-text hash, for reusing vectors of texts already embedded.
    pub fn ids_by_embed_hash(&self) -> IdsByEmbedHash {
        let mut map = IdsByEmbedHash::with_capacity_and_hasher(self.chunk_count(), Default::default());
        map.extend(self.files.values().flat_map(|f| f.chunks.iter()).map(|c| (c.embed_hash, c.id)));
        map
    }

    /// The ids of every chunk.
    pub fn chunk_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.files.values().flat_map(|f| f.chunks.iter().map(|c| c.id))
    }

    /// Whether the chunks this manifest holds for `file` stand without reading it again: its
    /// recorded size and mtime say it is unchanged, and it is within the size limit
    /// `max_bytes`. A file above the limit is read again to be skipped, however unchanged,
    /// since the limit may have been lowered after it was indexed.
    pub fn holds_current(&self, file: &SourceFile, max_bytes: u64) -> bool {
        self.files.get(&file.rel_path).is_some_and(|e| entry_is_current(e, file, max_bytes))
    }

    /// How the files a walk found differ from this manifest's: the paths of the manifest's
    /// files that were not found, and the found files it does not hold current
    /// ([`Manifest::holds_current`] with the size limit `max_bytes`). Both lists are sorted
    /// by path, which lets one pass over the two answer instead of a lookup per file (about
    /// 80,000 of them at a million chunks).
    pub fn changes_since<'a>(
        &self,
        found: &'a [SourceFile],
        max_bytes: u64,
    ) -> (Vec<String>, Vec<&'a SourceFile>) {
        let mut gone = Vec::new();
        let mut changed = Vec::new();
        if !found.windows(2).all(|w| w[0].rel_path < w[1].rel_path) {
            // Not a walk's sorted list: the same answer, file by file.
            let seen: std::collections::HashSet<&str> = found.iter().map(|f| f.rel_path.as_str()).collect();
            gone.extend(self.files.keys().filter(|p| !seen.contains(p.as_str())).cloned());
            changed.extend(found.iter().filter(|f| !self.holds_current(f, max_bytes)));
            return (gone, changed);
        }
        let mut known = self.files.iter().peekable();
        for file in found {
            while let Some((path, _)) = known.next_if(|(path, _)| path.as_str() < file.rel_path.as_str()) {
                gone.push(path.clone());
            }
            match known.next_if(|(path, _)| path.as_str() == file.rel_path.as_str()) {
                Some((_, entry)) if entry_is_current(entry, file, max_bytes) => {}
                _ => changed.push(file),
            }
        }
        gone.extend(known.map(|(path, _)| path.clone()));
        (gone, changed)
    }

    /// Chunks waiting for their snippet.
    pub fn snippets_pending(&self) -> impl Iterator<Item = u64> + '_ {
        self.files.values().flat_map(|f| f.chunks.iter()).filter(|c| c.snippet_pending).map(|c| c.id)
    }

    /// Hands out a fresh chunk id.
    pub fn allocate_id(&mut self) -> u64 {
        let id = self.next_chunk_id;
        self.next_chunk_id += 1;
        id
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn entry(size: u64, hash: u64, racy: bool) -> FileEntry {
        FileEntry {
            size,
            mtime_ns: 7,
            content_hash: hash,
            chunks: Vec::new(),
            lossy: false,
            warnings: Vec::new(),
            racy,
        }
    }

    proptest! {
        #[test]
        fn changes_in_one_pass_are_the_changes_file_by_file(
            known in prop::collection::btree_map(0u8..40, (0u64..3, 0u64..2, any::<bool>()), 0..30),
            found in prop::collection::btree_map(0u8..40, 0u64..3, 0..30),
            shuffled in any::<bool>(),
            max_bytes in 0u64..4,
        ) {
            let mut manifest = Manifest::default();
            for (name, (size, hash, racy)) in &known {
                manifest.files.insert(format!("f{name:02}.md"), entry(*size, *hash, *racy));
            }
            let mut files: Vec<SourceFile> = found
                .iter()
                .map(|(name, size)| SourceFile {
                    rel_path: format!("f{name:02}.md"),
                    abs_path: std::path::PathBuf::from(format!("/w/f{name:02}.md")),
                    size: *size,
                    mtime_ns: 7,
                })
                .collect();
            if shuffled {
                files.reverse();
            }
            let (gone, changed) = manifest.changes_since(&files, max_bytes);
            let expected_gone: Vec<String> =
                manifest.files.keys().filter(|p| !files.iter().any(|f| &f.rel_path == *p)).cloned().collect();
            let mut expected_changed: Vec<&str> = files
                .iter()
                .filter(|f| !manifest.holds_current(f, max_bytes))
                .map(|f| f.rel_path.as_str())
                .collect();
            let mut changed: Vec<&str> = changed.iter().map(|f| f.rel_path.as_str()).collect();
            expected_changed.sort_unstable();
            changed.sort_unstable();
            prop_assert_eq!(gone, expected_gone);
            prop_assert_eq!(changed, expected_changed);
        }
    }
}
