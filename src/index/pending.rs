//! Pending vectors: chunks committed without a vector (a slow embedder, a crash, a model
//! change) and embedded afterwards from their stored texts; quick vectors stand in for them
//! meanwhile. A text is embedded once however many chunks hold it (copies of a file, the
//! same boilerplate in many notes): a waiting chunk whose text already has a vector takes
//! it, and of the chunks of one text in one step only the first is embedded, the others
//! taking its vector when it is stored.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::vector_file::VectorSet;
use super::vector_log::VectorLog;
use super::vector_open;
use super::write::embed_texts;
use super::{ChunkRecord, Index, IndexError, io_err};
use crate::providers::Embedder;

/// What a step of the fill asks the model for: the texts of waiting chunks that need
/// embedding, one per text; `reused` waiting chunks took a vector already made instead.
#[derive(Debug, Default)]
pub struct PendingTexts {
    pub texts: Vec<(u64, String)>,
    pub reused: usize,
}

/// What a waiting chunk needs ([`Index::pending_texts`]).
enum Waiting<'a> {
    /// Its text embedded: the first chunk of its text in the step.
    Embed(&'a ChunkRecord),
    /// The vector of the step's first chunk of its text, once stored.
    Twin { first: u64, id: u64, hash: u64 },
    /// A vector already made for its text.
    Made(u64, Vec<f32>),
}

impl Index {
    /// The model whose vectors stand in for pending ones ([`super::vector_file`]): the built-in
    /// static model when the index's own model is slow, `None` otherwise. Opens the quick
    /// vector file the last commit left (a writer cuts off an unfinished write, or starts it
    /// afresh when it does not match its record); nothing is embedded here.
    pub fn set_quick_embedder(&mut self, quick: Option<Arc<dyn Embedder>>) -> Result<(), IndexError> {
        self.quick_embedder = quick.filter(|_| !self.words_only);
        let path = self.layout.quick();
        let Some(model) = self.quick_embedder.as_ref().map(|q| q.identity()) else {
            if self.writer.is_some() && self.manifest.quick.is_some() {
                Arc::make_mut(&mut self.manifest).quick = None;
                self.manifest_dirty = true;
                let _ = std::fs::remove_file(&path);
            }
            self.quick = Arc::default();
            return Ok(());
        };
        let name = format!("{}/{}", model.provider, model.model);
        let wanted = self.pending_filter();
        let record = self.committed_manifest.quick.clone();
        if self.writer.is_some() {
            let (mut log, note) = VectorLog::open(&path, &name, model.dimensions, record.as_ref(), &wanted)
                .map_err(io_err(&path))?;
            if let Some(note) = note.filter(|_| self.committed_manifest.vectors_pending) {
                self.notes.push(format!("{note}: quick vectors are made again"));
            }
            if let Some(set) = log.publish() {
                self.quick = Arc::new(set.map_err(io_err(&path))?);
            }
            self.quick_log = Some(log);
        } else if let Some(record) = record.filter(|r| r.model == name) {
            match vector_open::open_set(&path, &record, model.dimensions, &wanted) {
                Ok(set) => self.quick = Arc::new(set),
                Err(e) => self.notes.push(format!("{e}: quick vectors are made in memory")),
            }
        }
        Ok(())
    }

    /// Whether a chunk of the last commit waits for its own vector.
    fn pending_filter(&self) -> impl Fn(u64) -> bool + use<> {
        let live = self.live_filter();
        let model = Arc::clone(&self.model);
        move |id| live(id) && !model.contains(id)
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
        let missing: Vec<u64> = self.vectorless_ids().into_iter().filter(|id| !queued.contains(id)).collect();
        let count = missing.len();
        self.stand_in_ids(&missing)?;
        self.pending_vectors.extend(missing);
        self.vectors_unchecked = false;
        Ok(count)
    }

    /// Quick vectors for the committed chunks that have no vector of their own and no quick
    /// vector on disk (the quick file was lost, or the index was written before it was
    /// kept), right after opening, so that searches cover them before a reconcile queues
    /// them. A reader keeps them in memory. Returns how many were made.
    pub fn stand_in_for_vectorless(&mut self) -> Result<usize, IndexError> {
        if self.quick_embedder.is_none() || !self.committed_manifest.vectors_pending {
            return Ok(0);
        }
        // Every chunk has its own vector or a quick one (the usual case: the quick file
        // holds them): nothing to look for.
        let quick = self.quick_log.as_ref().map_or(self.quick.len(), |log| log.len());
        if quick + self.vector_count() >= self.committed_manifest.chunk_count() {
            return Ok(0);
        }
        let missing = self.vectorless_ids();
        if self.quick_log.is_some() {
            let made = self.stand_in_ids(&missing)?;
            if made > 0 {
                self.commit()?;
            }
            return Ok(made);
        }
        let missing: Vec<u64> = missing.into_iter().filter(|id| !self.quick.contains(*id)).collect();
        if missing.is_empty() {
            return Ok(0);
        }
        let Some(quick) = self.quick_embedder.clone() else { return Ok(0) };
        let records = self.snapshot().records(&missing)?;
        let texts: Vec<(u64, String)> = records.values().map(|r| (r.id, r.embedding_text())).collect();
        let mut vectors = embed_texts(quick.as_ref(), &texts)?;
        let dims = quick.identity().dimensions;
        for id in self.quick.ids() {
            if let Some(v) = self.quick.vector_of(id)? {
                vectors.push((id, v));
            }
        }
        self.quick = Arc::new(VectorSet::in_memory(dims, &vectors));
        Ok(texts.len())
    }

    /// Committed chunks without a vector of their own, in id order.
    fn vectorless_ids(&self) -> Vec<u64> {
        // Before the first of the model's own vectors arrives, none needs looking up.
        let none = self.vector_count() == 0;
        let mut ids: Vec<u64> =
            self.manifest.chunk_ids().filter(|id| none || !self.has_vector(*id)).collect();
        ids.sort_unstable();
        ids
    }

    /// Quick vectors for those of `ids` that have none yet (their stored texts embedded by
    /// the quick model). Returns how many were made.
    fn stand_in_ids(&mut self, ids: &[u64]) -> Result<usize, IndexError> {
        if self.quick_embedder.is_none() {
            return Ok(0);
        }
        let need: Vec<u64> = match &self.quick_log {
            Some(log) => ids.iter().copied().filter(|id| !log.contains(*id)).collect(),
            None => return Ok(0),
        };
        let mut made = 0;
        for batch in need.chunks(4_096) {
            let records = self.snapshot().records(batch)?;
            let texts: Vec<(u64, String)> =
                batch.iter().filter_map(|id| records.get(id)).map(|r| (r.id, r.embedding_text())).collect();
            made += texts.len();
            self.stand_in(&texts)?;
        }
        Ok(made)
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
        Arc::make_mut(&mut self.manifest).fill_rate = Some(smoothed);
        self.manifest_dirty = true;
    }

    /// Chunks written without a vector and not embedded yet.
    pub fn pending_vector_count(&self) -> usize {
        self.pending_vectors.len()
    }

    /// Embeds up to `max` of the chunks written without a vector, from their committed
    /// texts. Returns how many were embedded; chunks removed meanwhile are dropped.
    pub fn fill_pending_vectors(&mut self, embedder: &dyn Embedder, max: usize) -> Result<usize, IndexError> {
        let ids = self.pending_vector_ids(0, max);
        let pending = self.pending_texts(&ids)?;
        let vectors = embed_texts(embedder, &pending.texts)?;
        Ok(pending.reused + self.put_pending_vectors(vectors)?)
    }

    /// Up to `max` of the chunks waiting for a vector, from `start` in the queue.
    pub fn pending_vector_ids(&self, start: usize, max: usize) -> Vec<u64> {
        self.pending_vectors.iter().skip(start).take(max).copied().collect()
    }

    /// The texts the index's model embeds for these waiting chunks. Chunks removed meanwhile
    /// leave the queue (and need no stand-in either), and so do chunks whose text already
    /// has a vector, which they take; of several chunks of one text, only the first's is
    /// returned, and the others take its vector in [`Index::put_pending_vectors`].
    pub fn pending_texts(&mut self, ids: &[u64]) -> Result<PendingTexts, IndexError> {
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        let records = self.snapshot().records(ids)?;
        let mut done: HashSet<u64> = ids.iter().copied().filter(|id| !records.contains_key(id)).collect();
        if let Some(log) = self.quick_log.as_mut() {
            for id in &done {
                log.drop_id(*id);
            }
        }
        let known = self.take_embed_hashes();
        let sorted = self.sort_waiting(ids.iter().filter_map(|id| records.get(id)), &known);
        self.embed_hashes = Some(known);
        let mut pending = PendingTexts::default();
        for waiting in sorted? {
            match waiting {
                Waiting::Embed(record) => {
                    self.fill_twins.insert(record.id, (record.embed_hash, Vec::new()));
                    pending.texts.push((record.id, record.embedding_text()));
                }
                Waiting::Twin { first, id, hash } => {
                    self.fill_twins.entry(first).or_insert((hash, Vec::new())).1.push(id);
                }
                Waiting::Made(id, vector) => {
                    self.stage_vector(id, vector)?;
                    done.insert(id);
                    pending.reused += 1;
                }
            }
        }
        self.remove_pending(&done);
        Ok(pending)
    }

    /// What each waiting chunk needs, in order: its text embedded (the first of its text),
    /// the vector of the first chunk of its text in this step, or a vector already made.
    fn sort_waiting<'a>(
        &self,
        records: impl Iterator<Item = &'a ChunkRecord>,
        known: &super::manifest::IdsByEmbedHash,
    ) -> Result<Vec<Waiting<'a>>, IndexError> {
        let mut first_of_text: HashMap<u64, u64> = HashMap::new();
        let mut sorted = Vec::new();
        for record in records {
            let hash = record.embed_hash;
            if let Some(first) = first_of_text.get(&hash) {
                sorted.push(Waiting::Twin { first: *first, id: record.id, hash });
            } else if let Some(vector) = self.reusable_vector(known, hash)? {
                sorted.push(Waiting::Made(record.id, vector));
            } else {
                first_of_text.insert(hash, record.id);
                sorted.push(Waiting::Embed(record));
            }
        }
        Ok(sorted)
    }

    /// Stores vectors of waiting chunks (made here, or taken from a team cache) and takes
    /// them off the queue. Returns how many were stored.
    pub fn put_pending_vectors(&mut self, vectors: Vec<(u64, Vec<f32>)>) -> Result<usize, IndexError> {
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        let mut done: HashSet<u64> = vectors.iter().map(|(id, _)| *id).collect();
        for (id, v) in vectors {
            if let Some((hash, twins)) = self.fill_twins.remove(&id) {
                for twin in twins {
                    self.stage_vector(twin, v.clone())?;
                    done.insert(twin);
                }
                // Later chunks of this text find the vector by it.
                if let Some(known) = self.embed_hashes.as_mut() {
                    known.insert(hash, id);
                }
            }
            self.stage_vector(id, v)?;
        }
        let stored = done.len();
        self.remove_pending(&done);
        if self.pending_vectors.is_empty() {
            self.fill_twins.clear();
        }
        Ok(stored)
    }

    /// Moves these waiting chunks to the back of the queue (another machine is making their
    /// vectors).
    pub fn defer_pending_vectors(&mut self, ids: &[u64]) {
        let later: HashSet<u64> = ids.iter().copied().collect();
        let (mut keep, moved): (Vec<u64>, Vec<u64>) =
            self.pending_vectors.iter().partition(|id| !later.contains(id));
        keep.extend(moved);
        self.pending_vectors = keep;
    }

    fn remove_pending(&mut self, ids: &HashSet<u64>) {
        if ids.is_empty() {
            return;
        }
        let head = ids.len().min(self.pending_vectors.len());
        if self.pending_vectors[..head].iter().all(|id| ids.contains(id)) {
            self.pending_vectors.drain(..head);
        } else {
            self.pending_vectors.retain(|id| !ids.contains(id));
        }
        self.manifest_dirty = true;
    }
}
