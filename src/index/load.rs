//! Loading the vectors when an index opens: the vector file checked against its checksum,
//! the journal replayed, and what does not match the chunk store dropped or re-embedded.

use super::files::{self, VectorsMeta};
use super::journal::{self, Journal, VectorOp};
use super::open::Index;
use super::vectors::{VectorError, VectorIndex};
use super::{IndexError, io_err, read, write};

impl Index {
    pub(super) fn load_vectors(&mut self, writable: bool) -> Result<(), IndexError> {
        let path = self.layout.vectors();
        let journal_path = self.layout.vectors_journal();
        let meta = files::read_json::<VectorsMeta>(&self.layout.vectors_meta()).ok().flatten();
        let expected = self.manifest.chunk_count();
        let dims = self.embedder.dimensions;
        match meta {
            Some(m) if m.embedder == self.embedder => {
                let replay = Journal::replay(&journal_path, dims);
                // A view is read-only; a journal to replay needs a copy in memory.
                let in_memory = writable || replay.as_ref().map_or(true, |r| !r.ops.is_empty());
                let intact = match (m.checksum, files::file_checksum(&path)) {
                    (Some(expected), Ok(found)) if expected != found => Err(VectorError::at(
                        &path,
                        "the file does not match the checksum it was written with",
                    )),
                    _ => Ok(()),
                };
                match intact.and_then(|()| VectorIndex::open(&path, dims, in_memory)) {
                    Ok(v) => {
                        *write(&self.vectors) = v;
                        let mut prune = false;
                        let mut generation = m.generation;
                        let mut replayed = journal::Replay::default();
                        match replay {
                            Ok(r) => {
                                for op in &r.ops {
                                    match op {
                                        VectorOp::Add(id, v) => write(&self.vectors).add(*id, v)?,
                                        VectorOp::Remove(id) => {
                                            write(&self.vectors).remove(*id)?;
                                        }
                                    }
                                }
                                generation = r.generation.unwrap_or(generation);
                                replayed = r;
                            }
                            Err(e) => {
                                self.notes
                                    .push(format!("{e}: vectors since the last full write are re-embedded"));
                                self.vectors_unchecked = expected > 0;
                                // Removals since the full write are lost with the journal.
                                prune = true;
                            }
                        }
                        if generation != self.committed_generation {
                            self.notes.push(format!(
                                "vectors are from commit {generation} but the chunk store from {}: missing vectors are re-embedded",
                                self.committed_generation
                            ));
                            self.vectors_unchecked = true;
                            prune = true;
                        }
                        if writable {
                            self.journal = Some(
                                Journal::open(&journal_path, dims, &replayed)
                                    .map_err(io_err(&journal_path))?,
                            );
                        }
                        if prune {
                            self.keep_only_live_vectors(writable)?;
                        }
                    }
                    Err(e) => {
                        self.notes.push(format!("{e}: vectors are re-embedded from stored texts"));
                        self.vectors_unchecked = expected > 0;
                    }
                }
            }
            Some(m) => {
                self.notes.push(format!(
                    "embedding model changed from {}/{} to {}/{}: vectors are rebuilt from stored texts",
                    m.embedder.provider, m.embedder.model, self.embedder.provider, self.embedder.model
                ));
                self.vectors_unchecked = expected > 0;
                if writable {
                    // Vectors of another model must never be read as this model's.
                    for p in [&path, &self.layout.vectors_meta(), &journal_path] {
                        let _ = std::fs::remove_file(p);
                    }
                }
            }
            None => {
                if expected > 0 {
                    self.notes
                        .push("vector record missing: vectors are re-embedded from stored texts".to_string());
                    self.vectors_unchecked = true;
                }
            }
        }
        Ok(())
    }

    /// Drops the vectors of chunks that are not in the chunk store (vectors that outlived a
    /// repair), so that none is ever counted, searched, or taken for a later chunk's. A
    /// writer then writes the vector file whole at its next commit.
    fn keep_only_live_vectors(&mut self, writable: bool) -> Result<(), IndexError> {
        let live: Vec<u64> =
            self.manifest.files.values().flat_map(|f| f.chunks.iter().map(|c| c.id)).collect();
        let before = read(&self.vectors).len();
        let fresh = read(&self.vectors).compacted(live)?;
        let dropped = before.saturating_sub(fresh.len());
        *write(&self.vectors) = fresh;
        if dropped > 0 {
            self.notes.push(format!("{dropped} vectors of chunks no longer in the chunk store were dropped"));
            if writable {
                self.journal = None;
                self.manifest_dirty = true;
            }
        }
        Ok(())
    }
}
