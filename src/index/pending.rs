//! Pending vectors: chunks committed without a vector (a slow embedder, a crash, a model
//! change) and embedded afterwards from their stored texts.

use std::collections::HashSet;

use super::write::embed_texts;
use super::{Index, IndexError, read};
use crate::providers::Embedder;

impl Index {
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
    /// [`Index::fill_pending_vectors`], instead of embedding them all at once.
    /// Returns how many were queued.
    pub fn queue_vectorless(&mut self) -> Result<usize, IndexError> {
        if !self.vectors_unchecked {
            return Ok(0);
        }
        let queued: HashSet<u64> = self.pending_vectors.iter().copied().collect();
        let missing: Vec<u64> = self
            .snapshot()
            .all_records()?
            .into_iter()
            .map(|r| r.id)
            .filter(|id| !queued.contains(id) && !read(&self.vectors).contains(*id))
            .collect();
        let queued = missing.len();
        self.pending_vectors.extend(missing);
        self.vectors_unchecked = false;
        Ok(queued)
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
        self.pending_vectors.drain(..take);
        self.manifest_dirty = true;
        Ok(embedded)
    }
}
