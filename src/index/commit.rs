//! The commit sequence: chunk store, then vectors (journal or whole file), then manifest
//! (journal or whole file).

use std::sync::Arc;

use super::checked;
use super::files::{self, CommitPayload, VectorsMeta};
use super::journal::{Journal, VectorOp};
use super::manifest_file;
use super::manifest_log;
use super::{Index, IndexError, io_err, read, store_err, write};

/// The vector file is rewritten whole (and the journal emptied) once the journal holds more
/// additions than this: replaying one costs a graph insert on every open, so the journal
/// stays short, while a long run of changes ends with one full write.
const JOURNAL_MAX_ADDS: usize = 512;
/// Nor may the journal grow past this many bytes of any records: removals are cheap to
/// replay one by one, but every open reads them all.
const JOURNAL_MAX_BYTES: u64 = 1 << 20;

impl Index {
    /// Makes all applied changes durable and visible to new searchers.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        let Some(writer) = self.writer.as_mut() else { return Err(IndexError::ReadOnly) };
        let tantivy_dir = self.layout.tantivy();
        let store_changed = self.store_dirty;
        if store_changed {
            let generation = self.committed_generation + 1;
            let payload =
                serde_json::to_string(&CommitPayload { generation, pipeline: self.pipeline.clone() })
                    .unwrap_or_default();
            let mut prepared = writer.prepare_commit().map_err(store_err(&tantivy_dir))?;
            prepared.set_payload(&payload);
            prepared.commit().map_err(store_err(&tantivy_dir))?;
            self.committed_generation = generation;
            self.store_dirty = false;
            self.reader.reload().map_err(store_err(&tantivy_dir))?;
            checked::record_own_commit(writer.index(), &self.layout);
        } else if !self.manifest_dirty
            && self.pending_removals.is_empty()
            && !self.quick_log.as_ref().is_some_and(|q| q.is_dirty())
        {
            return Ok(());
        }
        for id in std::mem::take(&mut self.pending_removals) {
            if let Some(log) = self.quick_log.as_mut() {
                log.drop_id(id);
            }
            // A chunk whose vector never came (the model's were pending) has none to remove,
            // and journaling its removal anyway would make a re-chunk of a million pending
            // chunks a million records that every later open replays.
            if write(&self.vectors).remove(id)? {
                self.pending_ops.push(VectorOp::Remove(id));
            }
        }
        self.persist_vectors()?;
        if let Some(log) = self.quick_log.as_mut() {
            let path = self.layout.quick();
            Arc::make_mut(&mut self.manifest).quick = Some(log.commit().map_err(io_err(&path))?);
        }
        Arc::make_mut(&mut self.manifest).generation = self.committed_generation;
        // Chunks committed without vectors are embedded after a restart if not before.
        Arc::make_mut(&mut self.manifest).vectors_pending =
            !self.pending_vectors.is_empty() || self.vectors_unchecked;
        if store_changed {
            Arc::make_mut(&mut self.manifest).committed_at =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        }
        self.persist_manifest()?;
        self.committed_manifest = Arc::clone(&self.manifest);
        self.manifest_dirty = false;
        if let Some(set) = self.quick_log.as_mut().and_then(|log| log.publish()) {
            let path = self.layout.quick();
            self.quick = Arc::new(set.map_err(io_err(&path))?);
        }
        Ok(())
    }

    /// Makes the manifest durable: the files this commit changed appended to the manifest's
    /// journal, or, when there is no journal to append to or it is full, the manifest
    /// written whole and a new journal started.
    fn persist_manifest(&mut self) -> Result<(), IndexError> {
        let log_path = self.layout.manifest_log();
        if let Some(state) = self.manifest_log.as_mut() {
            let Some(record) = manifest_log::record(&self.committed_manifest, &self.manifest) else {
                return Ok(());
            };
            if state.has_room_for(record.len()) {
                match manifest_log::append(&log_path, state, &record) {
                    Ok(()) => return Ok(()),
                    // The manifest written whole below makes up for it.
                    Err(e) => {
                        tracing::warn!(journal = %log_path.display(), "manifest journal not written: {e}")
                    }
                }
            }
        }
        self.manifest_log = None;
        let manifest_path = self.layout.manifest();
        let encoded = manifest_file::encode(&self.manifest);
        files::write_atomic(&manifest_path, &encoded).map_err(io_err(&manifest_path))?;
        // An index written by an older version kept its manifest as JSON; the binary one
        // of a later commit now stands in its place.
        let older = self.layout.manifest_json();
        if older.exists() {
            std::fs::remove_file(&older).map_err(io_err(&older))?;
            files::sync_parent(&older);
        }
        self.manifest_log = Some(manifest_log::start(&log_path, &encoded).map_err(io_err(&log_path))?);
        Ok(())
    }

    /// Makes the vector changes durable: appended to the journal, or, when the journal has
    /// grown past the vector file (or there is none yet), by writing the vectors whole.
    fn persist_vectors(&mut self) -> Result<(), IndexError> {
        let ops = std::mem::take(&mut self.pending_ops);
        let journal_path = self.layout.vectors_journal();
        let compact = {
            let vectors = read(&self.vectors);
            vectors.removed() > vectors.len().max(1024)
        };
        let adds = ops.iter().filter(|op| matches!(op, VectorOp::Add(..))).count();
        if let Some(journal) = self.journal.as_mut()
            && !compact
            && journal.adds() + adds <= JOURNAL_MAX_ADDS
            && journal.bytes() <= JOURNAL_MAX_BYTES
        {
            return journal.append(&ops, self.committed_generation).map_err(io_err(&journal_path));
        }
        if compact {
            let live: Vec<u64> =
                self.manifest.files.values().flat_map(|f| f.chunks.iter().map(|c| c.id)).collect();
            let fresh = read(&self.vectors).compacted(live)?;
            *write(&self.vectors) = fresh;
        }
        read(&self.vectors).save(&self.layout.vectors())?;
        let checksum =
            files::file_checksum(&self.layout.vectors()).map_err(io_err(&self.layout.vectors()))?;
        let vectors_meta = VectorsMeta {
            generation: self.committed_generation,
            embedder: self.embedder.clone(),
            checksum: Some(checksum),
        };
        files::write_json(&self.layout.vectors_meta(), &vectors_meta)
            .map_err(io_err(&self.layout.vectors_meta()))?;
        self.journal =
            Some(Journal::reset(&journal_path, self.embedder.dimensions).map_err(io_err(&journal_path))?);
        Ok(())
    }
}
