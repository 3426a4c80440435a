//! The commit sequence: chunk store, then vectors (the model's rows appended and their
//! record written), then the quick rows and the manifest.

use std::sync::Arc;

use super::checked;
use super::files::{self, CommitPayload, VectorsMeta};
use super::manifest::VectorFileRecord;
use super::manifest_file;
use super::manifest_log;
use super::{Index, IndexError, io_err, store_err};

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
            && !self.model_log.as_ref().is_some_and(|m| m.is_dirty())
        {
            return Ok(());
        }
        let removed = std::mem::take(&mut self.pending_removals);
        if let Some(log) = self.quick_log.as_mut() {
            for chunk in &removed {
                log.drop_id(chunk.id);
            }
        }
        self.retire_vectors(removed);
        self.persist_vectors()?;
        self.save_retired();
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
        if let Some(set) = self.model_log.as_mut().and_then(|log| log.publish()) {
            let path = self.layout.vectors();
            self.model = Arc::new(set.map_err(io_err(&path))?);
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

    /// Makes the model's vector changes durable: the staged rows appended (or the file
    /// rewritten without its dead rows), then the record of the committed rows, which the
    /// next open reads them by. A record of more rows than a crash left of the manifest
    /// does no harm: rows of chunks the manifest does not hold are never read.
    pub(super) fn persist_vectors(&mut self) -> Result<(), IndexError> {
        let Some(log) = self.model_log.as_mut().filter(|log| log.is_dirty()) else { return Ok(()) };
        let path = self.layout.vectors();
        let rows = log.commit().map_err(io_err(&path))?;
        self.record_vectors(rows)
    }

    /// Writes the record of the model's committed rows.
    pub(super) fn record_vectors(&self, rows: VectorFileRecord) -> Result<(), IndexError> {
        let meta = VectorsMeta {
            generation: self.committed_generation,
            embedder: self.embedder.clone(),
            checksum: None,
            rows: Some(rows),
        };
        files::write_json(&self.layout.vectors_meta(), &meta).map_err(io_err(&self.layout.vectors_meta()))
    }
}
