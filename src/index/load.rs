//! Loading the vectors when an index opens: the model's vector file checked against its
//! record (a writer cuts off an unfinished write, or starts afresh when it does not match),
//! an earlier version's usearch file converted once, and the chunks left without a vector
//! found for re-embedding.

use std::collections::HashMap;
use std::sync::Arc;

use super::files::{self, VectorsMeta};
use super::journal::{self, VectorOp};
use super::open::Index;
use super::retired::{self, Retired};
use super::vector_file::VectorSet;
use super::vector_log::VectorLog;
use super::vector_open;
use super::vectors::{VectorError, VectorIndex};
use super::{IndexError, io_err};

/// Vectors converted from an earlier version's file are committed this many at a time, so
/// that a million of them never sit in memory at once.
const CONVERT_BATCH: usize = 65_536;

impl Index {
    pub(super) fn load_vectors(&mut self, writable: bool) -> Result<(), IndexError> {
        let path = self.layout.vectors();
        let meta = files::read_json::<VectorsMeta>(&self.layout.vectors_meta()).ok().flatten();
        let expected = self.manifest.chunk_count();
        let dims = self.embedder.dimensions;
        let name = format!("{}/{}", self.embedder.provider, self.embedder.model);
        let mut legacy = None;
        let record = match meta {
            Some(m) if m.embedder == self.embedder => match m.rows.clone() {
                Some(rows) => Some(rows),
                None => {
                    legacy = Some(m);
                    None
                }
            },
            Some(m) => {
                self.notes.push(format!(
                    "embedding model changed from {}/{} to {}/{}: vectors are rebuilt from stored texts",
                    m.embedder.provider, m.embedder.model, self.embedder.provider, self.embedder.model
                ));
                if writable {
                    // Vectors of another model must never be read as this model's.
                    self.remove_legacy_files();
                }
                None
            }
            None => {
                if expected > 0 {
                    self.notes
                        .push("vector record missing: vectors are re-embedded from stored texts".to_string());
                }
                None
            }
        };
        let wanted = self.live_filter();
        if writable {
            let mut retired = Retired::load(&self.layout.retired(), retired::limit(expected));
            let kept = retired.ids();
            let (mut log, note) =
                VectorLog::open_keeping(&path, &name, dims, record.as_ref(), &wanted, &|id| {
                    kept.contains(&id)
                })
                .map_err(io_err(&path))?;
            retired.retain(|id| log.keeps(id));
            self.retired = Some(retired);
            let fresh = record.is_none() || note.is_some();
            if let Some(note) = note {
                self.notes.push(format!("{note}: vectors are re-embedded from stored texts"));
            }
            if fresh && legacy.is_none() {
                // The file was started afresh: its record says so before anything reads it.
                self.record_vectors(log.commit().map_err(io_err(&path))?)?;
            }
            if let Some(meta) = legacy {
                if let Some(source) = self.legacy_source(&meta) {
                    for batch in source.ids.chunks(CONVERT_BATCH) {
                        for id in batch {
                            if let Some(v) = source.vector(*id) {
                                log.stage(*id, &v);
                            }
                        }
                        log.commit().map_err(io_err(&path))?;
                    }
                }
                self.model_log = Some(log);
                self.persist_vectors()?;
                self.remove_legacy_files();
            } else {
                self.model_log = Some(log);
            }
            if let Some(set) = self.model_log.as_mut().and_then(|log| log.publish()) {
                self.model = Arc::new(set.map_err(io_err(&path))?);
            }
        } else if let Some(record) = record {
            match vector_open::open_set(&path, &record, dims, &wanted) {
                Ok(set) => self.model = Arc::new(set),
                Err(e) => self.notes.push(format!("{e}: vectors are re-embedded from stored texts")),
            }
        } else if let Some(source) = legacy.and_then(|meta| self.legacy_source(&meta)) {
            let vectors: Vec<(u64, Vec<f32>)> =
                source.ids.iter().filter_map(|id| source.vector(*id).map(|v| (*id, v))).collect();
            self.model = Arc::new(VectorSet::in_memory(dims, &vectors));
        }
        if self.vector_count() < expected {
            self.vectors_unchecked = true;
        }
        Ok(())
    }

    /// Whether a chunk id is in the manifest. Ids are handed out in order, so the live ones
    /// fit a bit set.
    pub(super) fn live_filter(&self) -> impl Fn(u64) -> bool + use<> {
        let end = self.manifest.next_chunk_id;
        let mut live = vec![0u64; (end / 64 + 1) as usize];
        for id in self.manifest.chunk_ids().filter(|id| *id < end) {
            live[(id / 64) as usize] |= 1 << (id % 64);
        }
        move |id| id < end && live[(id / 64) as usize] & (1 << (id % 64)) != 0
    }

    /// An earlier version's usearch file and its journal, to read the vectors of the
    /// chunks in the manifest from. Damage means re-embedding, with a note.
    fn legacy_source(&mut self, meta: &VectorsMeta) -> Option<LegacyVectors> {
        let path = self.layout.legacy_vectors();
        let dims = self.embedder.dimensions;
        let intact = match (meta.checksum, files::file_checksum(&path)) {
            (Some(expected), Ok(found)) if expected != found => {
                Err(VectorError::at(&path, "the file does not match the checksum it was written with"))
            }
            _ => Ok(()),
        };
        let index = match intact.and_then(|()| VectorIndex::open(&path, dims, false)) {
            Ok(index) => index,
            Err(e) => {
                self.notes.push(format!("{e}: vectors are re-embedded from stored texts"));
                return None;
            }
        };
        // The journal's changes since the file was written whole, over it.
        let mut changed: HashMap<u64, Option<Vec<f32>>> = HashMap::new();
        match journal::replay(&self.layout.legacy_journal(), dims) {
            Ok(replay) => {
                for op in replay.ops {
                    match op {
                        VectorOp::Add(id, v) => changed.insert(id, Some(v)),
                        VectorOp::Remove(id) => changed.insert(id, None),
                    };
                }
            }
            Err(e) => self.notes.push(format!("{e}: vectors since the last full write are re-embedded")),
        }
        let mut ids: Vec<u64> = self.manifest.chunk_ids().collect();
        ids.sort_unstable();
        Some(LegacyVectors { index, changed, ids, dims })
    }

    /// Removes an earlier version's vector files (best effort: a file left behind is never
    /// read once the record names the new file).
    fn remove_legacy_files(&self) {
        for p in [self.layout.legacy_vectors(), self.layout.legacy_journal()] {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The vectors an earlier version kept, read one chunk at a time.
struct LegacyVectors {
    index: VectorIndex,
    changed: HashMap<u64, Option<Vec<f32>>>,
    /// The chunks of the manifest, by id.
    ids: Vec<u64>,
    dims: usize,
}

impl LegacyVectors {
    fn vector(&self, id: u64) -> Option<Vec<f32>> {
        let v = match self.changed.get(&id) {
            Some(v) => v.clone(),
            None => self.index.get(id),
        };
        v.filter(|v| v.len() == self.dims)
    }
}
