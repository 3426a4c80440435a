//! Changes to the uncommitted state: files upserted, touched and removed, snippets that
//! arrived, the skip list and snippet bookkeeping.

use std::collections::HashSet;
use std::sync::Arc;

use tantivy::Term;

use super::manifest::{self, ChunkRef, FileEntry};
use super::record::{
    self, ApplyStats, ChunkRecord, FileChange, PreparedFile, SnippetUpdate, StoredFileMeta, VectorTiming,
};
use super::vectors::VectorError;
use super::{Index, IndexError, store_err};
use crate::providers::{EmbedError, Embedder};
use crate::snippets::SnippetSlot;

/// Texts sent to the embedder at once.
const EMBED_BATCH: usize = 64;

impl Index {
    /// Applies file changes to the uncommitted state: chunk store, vectors and manifest.
    /// Vectors of texts already embedded anywhere in the index are reused; new texts are
    /// embedded now, or written without a vector and made pending ([`VectorTiming`]).
    pub fn apply(
        &mut self,
        changes: Vec<FileChange>,
        embedder: &dyn Embedder,
        timing: VectorTiming,
    ) -> Result<ApplyStats, IndexError> {
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        let mut stats = ApplyStats::default();
        let mut reusable = self.take_embed_hashes();
        // Vectors first: if embedding fails, nothing of this batch has been written.
        let mut upserts = Vec::new();
        for change in changes {
            match change {
                FileChange::Touch { path, size, mtime_ns } => {
                    if let Some(entry) = Arc::make_mut(&mut self.manifest).files.get_mut(&path) {
                        entry.size = size;
                        entry.mtime_ns = mtime_ns;
                        entry.racy = manifest::is_racy(mtime_ns);
                        self.manifest_dirty = true;
                    }
                }
                FileChange::Remove { path } => {
                    if let Some(entry) = Arc::make_mut(&mut self.manifest).files.remove(&path) {
                        self.delete_file_docs(&path);
                        self.pending_removals.extend(entry.chunks.iter().copied());
                        stats.files_removed += 1;
                    }
                }
                FileChange::Upsert(file) => upserts.push(file),
            }
        }
        let mut new_vectors: Vec<(u64, Vec<f32>)> = Vec::new();
        let mut to_embed: Vec<(u64, String)> = Vec::new();
        let mut staged: Vec<(PreparedFile, Vec<ChunkRef>)> = Vec::new();
        for file in upserts {
            let mut refs = Vec::with_capacity(file.chunks.len());
            for prepared in &file.chunks {
                let snippet = match &prepared.snippet {
                    SnippetSlot::Ready { snippet, .. } => snippet.text.as_str(),
                    _ => "",
                };
                let embed_text = record::embedding_text(&prepared.context, snippet, &prepared.chunk.text);
                let embed_hash = xxhash_rust::xxh3::xxh3_64(embed_text.as_bytes());
                let id = Arc::make_mut(&mut self.manifest).allocate_id();
                match self.reusable_vector(&reusable, embed_hash)? {
                    Some(v) => {
                        new_vectors.push((id, v));
                        stats.vectors_reused += 1;
                    }
                    None => to_embed.push((id, embed_text)),
                }
                let snippet_pending = matches!(prepared.snippet, SnippetSlot::Missing { .. });
                refs.push(ChunkRef { id, embed_hash, snippet_pending });
                reusable.insert(embed_hash, id);
            }
            staged.push((file, refs));
        }
        if timing == VectorTiming::Later && !to_embed.is_empty() {
            self.stand_in(&to_embed)?;
            self.pending_vectors.extend(to_embed.drain(..).map(|(id, _)| id));
        }
        let embedded = embed_texts(embedder, &to_embed)?;
        stats.vectors_embedded += embedded.len();
        new_vectors.extend(embedded);
        for (id, v) in new_vectors {
            self.stage_vector(id, v)?;
        }
        for (file, refs) in staged {
            self.delete_file_docs(&file.path);
            if let Some(old) = self.manifest.files.get(&file.path) {
                self.pending_removals.extend(old.chunks.iter().copied());
            }
            for (prepared, r) in file.chunks.iter().zip(&refs) {
                let record = record::prepared_record(&file, prepared, *r);
                let doc =
                    record::document(&self.fields, &record, (file.size, file.mtime_ns, file.content_hash));
                let writer = self.writer.as_ref().ok_or(IndexError::ReadOnly)?;
                writer.add_document(doc).map_err(store_err(&self.layout.tantivy()))?;
            }
            stats.files_written += 1;
            stats.chunks_written += refs.len();
            Arc::make_mut(&mut self.manifest).files.insert(
                file.path.clone(),
                FileEntry {
                    size: file.size,
                    mtime_ns: file.mtime_ns,
                    content_hash: file.content_hash,
                    chunks: refs,
                    lossy: file.lossy,
                    warnings: file.warnings,
                    racy: manifest::is_racy(file.mtime_ns),
                },
            );
        }
        if stats.files_written + stats.files_removed > 0 {
            self.store_dirty = true;
        }
        if !self.pending_removals.is_empty() {
            // A waiting chunk that went must not take a vector when its twin's arrives.
            self.fill_twins.clear();
        }
        self.embed_hashes = Some(reusable);
        Ok(stats)
    }

    /// Stages a chunk's vector for the next commit; a quick vector that stood in for it is
    /// no longer needed.
    pub(super) fn stage_vector(&mut self, id: u64, vector: Vec<f32>) -> Result<(), IndexError> {
        if vector.len() != self.embedder.dimensions {
            return Err(VectorError::new(format!(
                "vector of {} dimensions for an index of {}",
                vector.len(),
                self.embedder.dimensions
            ))
            .into());
        }
        self.model_log.as_mut().ok_or(IndexError::ReadOnly)?.stage(id, &vector);
        if let Some(log) = self.quick_log.as_mut() {
            log.drop_id(id);
        }
        Ok(())
    }

    /// Gives chunks whose vectors will be pending a quick vector to stand in meanwhile (when
    /// there is a quick model: the quick model embeds thousands of texts a second).
    pub(super) fn stand_in(&mut self, items: &[(u64, String)]) -> Result<(), IndexError> {
        let Some(quick) = self.quick_embedder.clone() else { return Ok(()) };
        if self.quick_log.is_none() {
            return Ok(());
        }
        for (id, v) in embed_texts(quick.as_ref(), items)? {
            if let Some(log) = self.quick_log.as_mut() {
                log.stage(id, &v);
            }
        }
        Ok(())
    }

    /// The chunk id of each embedded text's hash, built from the manifest once and then
    /// kept up to date, so that a batch costs what it holds, not the size of the index. An
    /// entry may name a chunk that is gone: its vector is gone too, and the text is
    /// embedded again.
    pub(super) fn take_embed_hashes(&mut self) -> super::manifest::IdsByEmbedHash {
        match self.embed_hashes.take() {
            Some(map) => map,
            None => self.manifest.ids_by_embed_hash(),
        }
    }

    /// A vector already made for the text with this hash: a live chunk's, else one that a
    /// chunk which went left.
    pub(super) fn reusable_vector(
        &self,
        reusable: &super::manifest::IdsByEmbedHash,
        hash: u64,
    ) -> Result<Option<Vec<f32>>, IndexError> {
        match reusable.get(&hash).map(|id| self.stored_vector(*id)).transpose()?.flatten() {
            Some(vector) => Ok(Some(vector)),
            None => Ok(self.retired_vector(hash)),
        }
    }

    fn delete_file_docs(&mut self, path: &str) {
        if let Some(writer) = &self.writer {
            writer.delete_term(Term::from_field_text(self.fields.path, path));
            self.store_dirty = true;
        }
    }

    /// Puts snippets that arrived into the index: each chunk's stored document is rewritten
    /// with its snippet (so BM25 sees it) and its vector replaced by one of
    /// header + snippet + text (reused when that text was embedded before; embedded now or
    /// made pending, as `timing` says). Chunks that are gone or not yet committed, and
    /// those `wanted` turns down (given the stored chunk and the snippet's key), are passed
    /// over. Returns how many chunks changed.
    pub fn set_snippets(
        &mut self,
        updates: &[SnippetUpdate],
        embedder: &dyn Embedder,
        timing: VectorTiming,
        wanted: &dyn Fn(&ChunkRecord, u128) -> bool,
    ) -> Result<usize, IndexError> {
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        let ids: Vec<u64> = updates.iter().map(|u| u.chunk_id).collect();
        let records = self.snapshot().records(&ids)?;
        let mut reusable = self.take_embed_hashes();
        let mut staged: Vec<(ChunkRecord, StoredFileMeta)> = Vec::new();
        let mut to_embed: Vec<(u64, String)> = Vec::new();
        for update in updates {
            let Some(old) = records.get(&update.chunk_id).filter(|r| wanted(r, update.key)) else { continue };
            let file = match self.manifest.files.get(&old.path) {
                Some(e) if e.chunks.iter().any(|c| c.id == update.chunk_id) => {
                    (e.size, e.mtime_ns, e.content_hash)
                }
                _ => continue,
            };
            let mut record = old.clone();
            record.snippet = Some(update.snippet.clone());
            record.snippet_key = update.key;
            let embed_text = record.embedding_text();
            record.embed_hash = xxhash_rust::xxh3::xxh3_64(embed_text.as_bytes());
            if record.embed_hash != old.embed_hash {
                match self.reusable_vector(&reusable, record.embed_hash)? {
                    Some(v) => self.stage_vector(record.id, v)?,
                    None => to_embed.push((record.id, embed_text)),
                }
            }
            staged.push((record, file));
        }
        if timing == VectorTiming::Later {
            self.stand_in(&to_embed)?;
            self.pending_vectors.extend(to_embed.drain(..).map(|(id, _)| id));
        }
        for (id, v) in embed_texts(embedder, &to_embed)? {
            self.stage_vector(id, v)?;
        }
        for (record, file) in &staged {
            let writer = self.writer.as_ref().ok_or(IndexError::ReadOnly)?;
            writer.delete_term(Term::from_field_u64(self.fields.id, record.id));
            let doc = record::document(&self.fields, record, *file);
            let writer = self.writer.as_ref().ok_or(IndexError::ReadOnly)?;
            writer.add_document(doc).map_err(store_err(&self.layout.tantivy()))?;
            if let Some(entry) = Arc::make_mut(&mut self.manifest).files.get_mut(&record.path)
                && let Some(c) = entry.chunks.iter_mut().find(|c| c.id == record.id)
            {
                c.embed_hash = record.embed_hash;
                c.snippet_pending = false;
            }
            reusable.insert(record.embed_hash, record.id);
        }
        self.embed_hashes = Some(reusable);
        if !staged.is_empty() {
            self.store_dirty = true;
        }
        Ok(staged.len())
    }

    /// Marks chunks as waiting for their snippet (after a change of snippet settings), or
    /// as no longer waiting.
    pub fn set_snippet_pending(&mut self, ids: &HashSet<u64>, pending: bool) {
        if ids.is_empty() {
            // Nothing to mark: the manifest shared with the last commit stays uncopied.
            return;
        }
        for c in Arc::make_mut(&mut self.manifest).files.values_mut().flat_map(|f| f.chunks.iter_mut()) {
            if ids.contains(&c.id) && c.snippet_pending != pending {
                c.snippet_pending = pending;
                self.manifest_dirty = true;
            }
        }
    }

    /// Records the snippet settings every chunk has now been checked against.
    pub fn set_snippet_identity(&mut self, identity: &str) {
        if self.manifest.snippet_identity != identity {
            Arc::make_mut(&mut self.manifest).snippet_identity = identity.to_string();
            self.manifest_dirty = true;
        }
    }

    /// Replaces the list of files left out (after an update of single files).
    pub fn set_skipped(&mut self, skipped: Vec<crate::workspace::Skipped>) {
        if self.manifest.skipped != skipped {
            Arc::make_mut(&mut self.manifest).skipped = skipped;
            self.manifest_dirty = true;
        }
    }

    /// Every committed chunk (for a check of all snippets against new settings).
    pub fn committed_records(&self) -> Result<Vec<ChunkRecord>, IndexError> {
        self.snapshot().all_records()
    }
}

/// Embeds `(id, text)` pairs in batches; the vectors come back with their ids, in order.
pub fn embed_texts(
    embedder: &dyn Embedder,
    items: &[(u64, String)],
) -> Result<Vec<(u64, Vec<f32>)>, IndexError> {
    let mut out = Vec::with_capacity(items.len());
    for batch in items.chunks(EMBED_BATCH) {
        let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = embedder.embed(&texts)?;
        if vectors.len() != batch.len() {
            return Err(EmbedError::Failed(format!(
                "asked for {} vectors, got {}",
                batch.len(),
                vectors.len()
            ))
            .into());
        }
        out.extend(batch.iter().map(|(id, _)| *id).zip(vectors));
    }
    Ok(out)
}
