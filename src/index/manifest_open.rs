//! Reading the manifest when an index opens: the binary manifest with its journal (or an
//! older version's JSON one, migrated), checked against the chunk store's commit, and
//! rebuilt from the stored chunks when it is missing, unreadable or of another commit.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::files::{self, CommitPayload};
use super::manifest::{ChunkRef, FileEntry, Manifest};
use super::{Index, IndexError, manifest_file, manifest_log};

impl Index {
    pub(super) fn load_manifest(&mut self, payload: &CommitPayload, strict: bool) -> Result<(), IndexError> {
        let loaded = match self.read_manifest() {
            Ok(Some(m)) if m.generation == payload.generation => Some(m),
            Ok(Some(m)) if strict => {
                return Err(IndexError::Io {
                    path: self.layout.manifest().display().to_string(),
                    source: std::io::Error::other(format!(
                        "manifest of commit {} beside the chunk store's {}",
                        m.generation, payload.generation
                    )),
                });
            }
            Ok(Some(m)) => {
                self.notes.push(format!(
                    "manifest is from commit {} but the chunk store from {}: rebuilt from the chunk store",
                    m.generation, payload.generation
                ));
                None
            }
            Ok(None) if payload.generation == 0 => Some(Manifest::default()),
            Ok(None) => {
                self.notes.push("manifest missing: rebuilt from the chunk store".to_string());
                None
            }
            Err(e) => {
                self.notes.push(format!("manifest unreadable ({e}): rebuilt from the chunk store"));
                None
            }
        };
        self.manifest = Arc::new(match loaded {
            Some(m) => m,
            None => {
                // Not what is on disk: the next commit writes the manifest whole.
                self.manifest_log = None;
                self.manifest_from_store(payload.generation)?
            }
        });
        Ok(())
    }

    /// The manifest on disk: the binary one, or, in an index that an older version wrote
    /// (or one whose binary manifest is missing), the JSON one, which a writer then
    /// replaces with the binary one at its next commit.
    fn read_manifest(&mut self) -> Result<Option<Manifest>, String> {
        let path = self.layout.manifest();
        let binary = match std::fs::read(&path) {
            Ok(bytes) => Some(self.with_journal(&bytes).map_err(|e| format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(Err(format!("{}: {e}", path.display()))),
        };
        let older = self.layout.manifest_json();
        match binary {
            Some(found) if !older.exists() => found.map(Some),
            // Both forms exist only between a writer's writing the binary one and removing
            // the JSON one: the later commit wins.
            Some(found) => {
                // The next commit writes the binary one whole, and removes the JSON one.
                self.manifest_log = None;
                let json = files::read_json::<Manifest>(&older).ok().flatten();
                match (found, json) {
                    (Ok(b), Some(j)) if j.generation > b.generation => Ok(Some(self.migrated(j))),
                    (Ok(b), _) => Ok(Some(b)),
                    (Err(_), Some(j)) => Ok(Some(self.migrated(j))),
                    (Err(e), None) => Err(e),
                }
            }
            None => Ok(files::read_json::<Manifest>(&older)?.map(|m| self.migrated(m))),
        }
    }

    /// The binary manifest `bytes` with the commits of its journal applied.
    fn with_journal(&mut self, bytes: &[u8]) -> Result<Manifest, String> {
        let mut manifest = manifest_file::decode(bytes)?;
        self.manifest_log = manifest_log::replay(&self.layout.manifest_log(), bytes, &mut manifest)?;
        Ok(manifest)
    }

    /// A manifest read in its older JSON form: a writer writes it in the binary form at
    /// its next commit, even when nothing else changed.
    fn migrated(&mut self, manifest: Manifest) -> Manifest {
        self.manifest_log = None;
        if self.writer.is_some() {
            self.manifest_dirty = true;
        }
        tracing::info!(index = %self.layout.dir.display(), "manifest read in its older form");
        manifest
    }

    /// Rebuilds the manifest from the stored chunks.
    fn manifest_from_store(&self, generation: u64) -> Result<Manifest, IndexError> {
        let mut manifest = Manifest { generation, ..Manifest::default() };
        let mut by_file: BTreeMap<String, Vec<(u32, ChunkRef)>> = BTreeMap::new();
        let mut max_id = None::<u64>;
        for (record, file) in self.snapshot().all_records_with_file_meta()? {
            max_id = Some(max_id.map_or(record.id, |m| m.max(record.id)));
            manifest.files.entry(record.path.clone()).or_insert_with(|| FileEntry {
                size: file.0,
                mtime_ns: file.1,
                content_hash: file.2,
                chunks: Vec::new(),
                lossy: false,
                warnings: Vec::new(),
                racy: true,
            });
            by_file.entry(record.path).or_default().push((
                record.ordinal,
                ChunkRef { id: record.id, embed_hash: record.embed_hash, snippet_pending: false },
            ));
        }
        for (path, mut chunks) in by_file {
            chunks.sort_by_key(|(ordinal, _)| *ordinal);
            if let Some(entry) = manifest.files.get_mut(&path) {
                entry.chunks = chunks.into_iter().map(|(_, c)| c).collect();
            }
        }
        manifest.next_chunk_id = max_id.map_or(0, |m| m + 1);
        Ok(manifest)
    }
}
