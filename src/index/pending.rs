//! Pending vectors: chunks committed without a vector (a slow embedder, a crash, a model
//! change) and embedded afterwards from their stored texts; quick vectors stand in for them
//! meanwhile.

use std::collections::HashSet;
use std::sync::Arc;

use super::record::ChunkRecord;
use super::write::embed_texts;
use super::{Index, IndexError, read, write};
use crate::providers::Embedder;

impl Index {
    /// The model whose vectors stand in for pending ones ([`super::quick`]): the built-in
    /// static model when the index's own model is slow, `None` otherwise.
    pub fn set_quick_embedder(&mut self, quick: Option<Arc<dyn Embedder>>) {
        self.quick_embedder = quick;
    }

    /// Embeds the stored texts of chunks that have no vector (after a crash, a corrupt
    /// vector file or a model change). Returns how many were embedded.
    pub fn embed_vectorless(&mut self, embedder: &dyn Embedder) -> Result<usize, IndexError> {
        if !self.vectors_unchecked {
            return Ok(0);
        }
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        self.queue_vectorless()?;
        let mut filled = 0;
        while !self.pending_vectors.is_empty() {
            filled += self.fill_pending_vectors(embedder, self.pending_vectors.len())?;
        }
        Ok(filled)
    }

    /// Queues every chunk that has no vector (after a crash or a model change) for
    /// [`Index::fill_pending_vectors`], instead of embedding them all at once, and gives
    /// each a quick vector meanwhile. Returns how many were queued.
    pub fn queue_vectorless(&mut self) -> Result<usize, IndexError> {
        if !self.vectors_unchecked {
            return Ok(0);
        }
        let queued: HashSet<u64> = self.pending_vectors.iter().copied().collect();
        let missing: Vec<ChunkRecord> =
            self.vectorless_records()?.into_iter().filter(|r| !queued.contains(&r.id)).collect();
        let count = missing.len();
        self.stand_in_records(&missing)?;
        self.pending_vectors.extend(missing.into_iter().map(|r| r.id));
        self.vectors_unchecked = false;
        Ok(count)
    }

    /// Quick vectors for the committed chunks that have no vector of their own, right after
    /// opening, so that searches cover them before a reconcile queues them (a reader never
    /// does). Returns how many chunks have one.
    pub fn stand_in_for_vectorless(&mut self) -> Result<usize, IndexError> {
        if self.quick_embedder.is_none() || !self.committed_manifest.vectors_pending {
            return Ok(0);
        }
        let missing = self.vectorless_records()?;
        self.stand_in_records(&missing)?;
        Ok(missing.len())
    }

    /// Committed chunks without a vector of their own.
    fn vectorless_records(&self) -> Result<Vec<ChunkRecord>, IndexError> {
        let vectors = read(&self.vectors);
        Ok(self.snapshot().all_records()?.into_iter().filter(|r| !vectors.contains(r.id)).collect())
    }

    /// Quick vectors for those of `records` that have none yet.
    fn stand_in_records(&mut self, records: &[ChunkRecord]) -> Result<(), IndexError> {
        let texts: Vec<(u64, String)> = {
            let quick = read(&self.quick);
            records.iter().filter(|r| !quick.contains(r.id)).map(|r| (r.id, r.embedding_text())).collect()
        };
        self.stand_in(&texts)
    }

    /// Records how fast the index's model filled pending vectors (`chunks` in `seconds`),
    /// smoothed over fills, for an estimate of the time the rest will take.
    pub fn note_fill_rate(&mut self, chunks: usize, seconds: f64) {
        if chunks == 0 || seconds <= 0.0 {
            return;
        }
        let rate = (chunks as f64 / seconds) as f32;
        let smoothed = match self.manifest.fill_rate {
            Some(old) => 0.7 * old + 0.3 * rate,
            None => rate,
        };
        self.manifest.fill_rate = Some(smoothed);
        self.manifest_dirty = true;
    }

    /// Chunks written without a vector and not embedded yet.
    pub fn pending_vector_count(&self) -> usize {
        self.pending_vectors.len()
    }

    /// Embeds up to `max` of the chunks written without a vector, from their committed
    /// texts. Returns how many were embedded; chunks removed meanwhile are dropped.
    pub fn fill_pending_vectors(&mut self, embedder: &dyn Embedder, max: usize) -> Result<usize, IndexError> {
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        let take = max.min(self.pending_vectors.len());
        let ids: Vec<u64> = self.pending_vectors[..take].to_vec();
        let records = self.snapshot().records(&ids)?;
        let texts: Vec<(u64, String)> =
            ids.iter().filter_map(|id| records.get(id)).map(|r| (r.id, r.embedding_text())).collect();
        let vectors = embed_texts(embedder, &texts)?;
        let embedded = vectors.len();
        for (id, v) in vectors {
            self.stage_vector(id, v)?;
        }
        // A chunk removed meanwhile has no record, and needs no stand-in either.
        for id in ids.iter().filter(|id| !records.contains_key(id)) {
            write(&self.quick).remove(*id);
        }
        self.pending_vectors.drain(..take);
        self.manifest_dirty = true;
        Ok(embedded)
    }
}
