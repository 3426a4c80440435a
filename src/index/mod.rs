//! The on-disk index: the chunk store and BM25 (tantivy), vectors (usearch) and the
//! manifest, kept consistent through one commit sequence.
//!
//! A commit writes, in order: the new vectors (in memory), the tantivy commit (its payload
//! carries the generation and the pipeline fingerprint), the vector changes (appended to the
//! journal, or the vector file written whole), the manifest. Each write is atomic. Tantivy is the source of truth: on open, a manifest or vector file from another
//! generation is repaired from the chunk store (the manifest rebuilt, missing vectors
//! re-embedded from stored texts), so a crash at any point costs work, never correctness.

pub mod files;
pub mod journal;
pub mod lock;
pub mod manifest;
pub mod schema;
pub mod tokenizer;
pub mod vectors;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::{Deserialize, Serialize};
use tantivy::collector::TopDocs;
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{DocAddress, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

use crate::chunk::Chunk;
use crate::context;
use crate::providers::{EmbedError, Embedder, EmbedderIdentity};
use crate::snippets::{Snippet, SnippetSlot};
use files::{FORMAT_VERSION, IndexLayout};
use journal::{Journal, VectorOp};
use lock::WriterLock;
use manifest::{ChunkRef, FileEntry, Manifest};
use schema::Fields;
use vectors::{VectorError, VectorIndex};

/// Texts sent to the embedder at once.
const EMBED_BATCH: usize = 64;
/// The vector file is rewritten whole (and the journal emptied) once the journal holds more
/// additions than this: replaying one costs a graph insert on every open, so the journal
/// stays short, while a long run of changes ends with one full write.
const JOURNAL_MAX_ADDS: usize = 512;
/// Memory the tantivy writer may use before it flushes a segment.
const WRITER_HEAP_BYTES: usize = 64 * 1024 * 1024;

/// An index failure, with the path involved.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("chunk store {path}: {source}")]
    Store { path: String, source: tantivy::TantivyError },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error(transparent)]
    Vector(#[from] VectorError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("no index at {path} yet: run `situate index` first")]
    Missing { path: String },
    #[error("the index is read-only here: another situate process is writing it")]
    ReadOnly,
}

fn store_err(path: &Path) -> impl FnOnce(tantivy::TantivyError) -> IndexError + '_ {
    move |source| IndexError::Store { path: path.display().to_string(), source }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io { path: path.display().to_string(), source }
}

/// A chunk as the index holds it: where it is, its text and its context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRecord {
    pub id: u64,
    pub path: String,
    pub ordinal: u32,
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: u64,
    pub end_byte: u64,
    pub title: String,
    pub heading_path: Vec<String>,
    /// The original text.
    pub text: String,
    /// The header context that was indexed with it.
    pub context: String,
    /// The LLM-written snippet indexed with it, if any (its text is empty when the model's
    /// reply was rejected).
    pub snippet: Option<Snippet>,
    /// The cache key of `snippet` (0 when there is none).
    #[serde(skip)]
    pub snippet_key: u128,
    pub token_count: u32,
    pub content_hash: u64,
    pub embed_hash: u64,
}

impl ChunkRecord {
    /// The snippet's text, empty when there is none.
    pub fn snippet_text(&self) -> &str {
        self.snippet.as_ref().map_or("", |s| s.text.as_str())
    }

    /// The text the embedder saw.
    pub fn embedding_text(&self) -> String {
        context::embedding_text(&self.context, self.snippet_text(), &self.text)
    }
}

/// A chunk ready to be written: the chunker's output, its header context and its snippet.
#[derive(Debug, Clone)]
pub struct PreparedChunk {
    pub chunk: Chunk,
    pub context: String,
    pub snippet: SnippetSlot,
}

/// A snippet that arrived for a committed chunk.
#[derive(Debug, Clone)]
pub struct SnippetUpdate {
    pub chunk_id: u64,
    pub key: u128,
    pub snippet: Snippet,
}

/// One file's new contents, chunked and contextualised.
#[derive(Debug, Clone)]
pub struct PreparedFile {
    pub path: String,
    pub size: u64,
    pub mtime_ns: u64,
    pub content_hash: u64,
    pub lossy: bool,
    pub title: String,
    pub chunks: Vec<PreparedChunk>,
    pub warnings: Vec<String>,
}

/// A change to apply to the index.
#[derive(Debug, Clone)]
pub enum FileChange {
    /// New or changed contents.
    Upsert(PreparedFile),
    /// Same contents, new size or mtime: only the manifest changes.
    Touch {
        path: String,
        size: u64,
        mtime_ns: u64,
    },
    Remove {
        path: String,
    },
}

/// What one `apply` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ApplyStats {
    pub files_written: usize,
    pub files_removed: usize,
    pub chunks_written: usize,
    pub vectors_embedded: usize,
    pub vectors_reused: usize,
}

/// Whether this process may change the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Take the writer lock (fails over to read-only in the caller when it is held).
    Write,
    ReadOnly,
}

/// The tantivy commit payload.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct CommitPayload {
    generation: u64,
    pipeline: String,
}

/// The record next to the vector file: which model made the vectors and at which commit.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct VectorsMeta {
    generation: u64,
    embedder: EmbedderIdentity,
}

/// The format record.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FormatRecord {
    format: u32,
}

/// The fields BM25 searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// The chunk's original text.
    Text,
    /// The document title.
    Title,
    /// The heading path.
    Headings,
    /// The file path as words.
    Path,
    /// The LLM-written snippet.
    Snippet,
}

/// One term of a BM25 query: an analysed term in one field, with its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedTerm {
    pub field: TextField,
    pub term: String,
    pub weight: f32,
}

/// One index folder, open for reading or writing.
pub struct Index {
    layout: IndexLayout,
    fields: Fields,
    reader: IndexReader,
    writer: Option<IndexWriter>,
    /// Shared with snapshots: searches read it while the writer adds to it. A snapshot's
    /// chunk store decides which ids exist, so vectors of uncommitted chunks are never seen.
    vectors: Arc<RwLock<VectorIndex>>,
    manifest: Manifest,
    /// The manifest as of the last commit, shared with snapshots.
    committed_manifest: Arc<Manifest>,
    embedder: EmbedderIdentity,
    pipeline: String,
    /// Generation of the last tantivy commit.
    committed_generation: u64,
    /// Uncommitted changes exist in the chunk store.
    store_dirty: bool,
    /// Uncommitted changes exist in the vectors only.
    vectors_dirty: bool,
    /// Chunk ids whose vectors must be removed once the store commit is durable.
    pending_removals: Vec<u64>,
    /// Vector changes not yet in the journal or the vector file.
    pending_ops: Vec<VectorOp>,
    /// The vector journal (writers only; `None` until the vector file is first written).
    journal: Option<Journal>,
    /// Some chunk may lack a vector (after a crash or a model change).
    vectors_incomplete: bool,
    /// Chunks written without a vector, to embed after their text is committed (a slow
    /// embedder must not hold back BM25).
    deferred: Vec<u64>,
    /// Why parts of the index were rebuilt or repaired while opening.
    notes: Vec<String>,
    /// Another process held the writer lock when this one opened the index.
    other_writer: bool,
    _lock: Option<WriterLock>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("dir", &self.layout.dir)
            .field("files", &self.manifest.files.len())
            .finish()
    }
}

impl Index {
    /// Opens (or creates) the index in `dir` for an embedder and a pipeline fingerprint.
    /// In `Write` mode the writer lock is taken; `Ok(None)` means another process holds it.
    pub fn open(
        dir: &Path,
        embedder: &EmbedderIdentity,
        pipeline: &str,
        mode: OpenMode,
    ) -> Result<Option<Index>, IndexError> {
        let layout = IndexLayout::new(dir);
        match mode {
            OpenMode::Write => {
                std::fs::create_dir_all(dir).map_err(io_err(dir))?;
                let lock_path = layout.lock();
                match WriterLock::try_acquire(&lock_path).map_err(io_err(&lock_path))? {
                    Some(lock) => Index::open_writable(layout, lock, embedder, pipeline).map(Some),
                    None => Ok(None),
                }
            }
            OpenMode::ReadOnly => Index::open_read_only(layout, embedder, pipeline).map(Some),
        }
    }

    fn open_writable(
        layout: IndexLayout,
        lock: WriterLock,
        embedder: &EmbedderIdentity,
        pipeline: &str,
    ) -> Result<Index, IndexError> {
        let mut notes = Vec::new();
        let has_contents = layout.tantivy().exists() || layout.manifest().exists();
        let wipe = match files::read_json::<FormatRecord>(&layout.meta()) {
            Ok(Some(r)) if r.format == FORMAT_VERSION => false,
            Ok(Some(r)) => {
                notes.push(format!("index format {} is not {FORMAT_VERSION}: rebuilt", r.format));
                true
            }
            Ok(None) => {
                if has_contents {
                    notes.push("index format record missing: rebuilt".to_string());
                }
                true
            }
            Err(e) => {
                notes.push(format!("index format record unreadable ({e}): rebuilt"));
                true
            }
        };
        if wipe {
            reset_index_files(&layout)?;
        }

        let (store, fields) = match open_store(&layout, true) {
            Ok(s) => s,
            Err(e) => {
                notes.push(format!("chunk store unreadable ({e}): rebuilt"));
                reset_index_files(&layout)?;
                open_store(&layout, true)?
            }
        };
        let tantivy_dir = layout.tantivy();
        let writer: IndexWriter =
            store.writer_with_num_threads(1, WRITER_HEAP_BYTES).map_err(store_err(&tantivy_dir))?;
        let (mut index, payload) =
            Index::assemble(layout, &store, fields, embedder, pipeline, Some((writer, lock)), notes)?;
        if !payload.pipeline.is_empty() && payload.pipeline != pipeline {
            index.notes.push("chunking or context settings changed: files are re-chunked".to_string());
            // Forgetting the content hashes makes the next reconcile re-chunk every file,
            // while vectors of unchanged embedded texts are still reused.
            for entry in index.manifest.files.values_mut() {
                entry.content_hash = 0;
            }
        }
        for note in &index.notes {
            tracing::warn!(index = %index.layout.dir.display(), "{note}");
        }
        Ok(index)
    }

    fn open_read_only(
        layout: IndexLayout,
        embedder: &EmbedderIdentity,
        pipeline: &str,
    ) -> Result<Index, IndexError> {
        if !layout.tantivy().join("meta.json").exists() {
            return Err(IndexError::Missing { path: layout.dir.display().to_string() });
        }
        // Only asked, not kept: a reader must not stop a writer from starting.
        let other_writer = matches!(WriterLock::try_acquire(&layout.lock()), Ok(None));
        let (store, fields) = open_store(&layout, false)?;
        let (mut index, _) = Index::assemble(layout, &store, fields, embedder, pipeline, None, Vec::new())?;
        index.other_writer = other_writer;
        Ok(index)
    }

    /// Builds the index around an open chunk store and loads (or repairs) the manifest and
    /// the vectors. With a writer and its lock, repairs may write; without, nothing does.
    fn assemble(
        layout: IndexLayout,
        store: &tantivy::Index,
        fields: Fields,
        embedder: &EmbedderIdentity,
        pipeline: &str,
        writer: Option<(IndexWriter, WriterLock)>,
        notes: Vec<String>,
    ) -> Result<(Index, CommitPayload), IndexError> {
        let payload = read_payload(store);
        let reader = store
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(store_err(&layout.tantivy()))?;
        let writable = writer.is_some();
        let (writer, lock) = writer.unzip();
        let mut index = Index {
            vectors: Arc::new(RwLock::new(VectorIndex::create(embedder.dimensions)?)),
            layout,
            fields,
            reader,
            writer,
            manifest: Manifest::default(),
            committed_manifest: Arc::default(),
            embedder: embedder.clone(),
            pipeline: pipeline.to_string(),
            committed_generation: payload.generation,
            store_dirty: false,
            vectors_dirty: false,
            pending_removals: Vec::new(),
            pending_ops: Vec::new(),
            journal: None,
            vectors_incomplete: false,
            deferred: Vec::new(),
            notes,
            other_writer: false,
            _lock: lock,
        };
        index.load_manifest(&payload)?;
        index.load_vectors(writable)?;
        if index.manifest.vectors_pending {
            index.vectors_incomplete = true;
        }
        index.committed_manifest = Arc::new(index.manifest.clone());
        Ok((index, payload))
    }

    fn load_manifest(&mut self, payload: &CommitPayload) -> Result<(), IndexError> {
        let path = self.layout.manifest();
        let loaded = match files::read_json::<Manifest>(&path) {
            Ok(Some(m)) if m.generation == payload.generation => Some(m),
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
        self.manifest = match loaded {
            Some(m) => m,
            None => self.manifest_from_store(payload.generation)?,
        };
        Ok(())
    }

    fn load_vectors(&mut self, writable: bool) -> Result<(), IndexError> {
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
                match VectorIndex::open(&path, dims, in_memory) {
                    Ok(v) => {
                        *write(&self.vectors) = v;
                        let mut generation = m.generation;
                        let mut replayed = journal::Replay::default();
                        match replay {
                            Ok(r) => {
                                for op in &r.ops {
                                    match op {
                                        VectorOp::Add(id, v) => write(&self.vectors).add(*id, v)?,
                                        VectorOp::Remove(id) => write(&self.vectors).remove(*id)?,
                                    }
                                }
                                generation = r.generation.unwrap_or(generation);
                                replayed = r;
                            }
                            Err(e) => {
                                self.notes
                                    .push(format!("{e}: vectors since the last full write are re-embedded"));
                                self.vectors_incomplete = expected > 0;
                            }
                        }
                        if generation != self.committed_generation {
                            self.notes.push(format!(
                                "vectors are from commit {generation} but the chunk store from {}: missing vectors are re-embedded",
                                self.committed_generation
                            ));
                            self.vectors_incomplete = true;
                        }
                        if writable {
                            self.journal = Some(
                                Journal::open(&journal_path, dims, &replayed)
                                    .map_err(io_err(&journal_path))?,
                            );
                        }
                    }
                    Err(e) => {
                        self.notes.push(format!("{e}: vectors are re-embedded from stored texts"));
                        self.vectors_incomplete = expected > 0;
                    }
                }
            }
            Some(m) => {
                self.notes.push(format!(
                    "embedding model changed from {}/{} to {}/{}: vectors are rebuilt from stored texts",
                    m.embedder.provider, m.embedder.model, self.embedder.provider, self.embedder.model
                ));
                self.vectors_incomplete = expected > 0;
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
                    self.vectors_incomplete = true;
                }
            }
        }
        Ok(())
    }

    /// Rebuilds the manifest from the stored chunks.
    fn manifest_from_store(&self, generation: u64) -> Result<Manifest, IndexError> {
        let mut manifest = Manifest { generation, ..Manifest::default() };
        let mut by_file: BTreeMap<String, Vec<(u32, ChunkRef)>> = BTreeMap::new();
        let mut max_id = None::<u64>;
        for (record, file) in self.all_records_with_file_meta()? {
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

    /// The folder this index lives in.
    pub fn dir(&self) -> &Path {
        &self.layout.dir
    }

    pub fn is_read_only(&self) -> bool {
        self.writer.is_none()
    }

    /// Whether another process was writing this index when it was opened read-only.
    pub fn other_writer(&self) -> bool {
        self.other_writer
    }

    /// Why parts of the index were rebuilt or repaired when it was opened.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Replaces the list of files left out (after an update of single files).
    pub fn set_skipped(&mut self, skipped: Vec<crate::workspace::Skipped>) {
        if self.manifest.skipped != skipped {
            self.manifest.skipped = skipped;
            self.vectors_dirty = true;
        }
    }

    pub fn embedder(&self) -> &EmbedderIdentity {
        &self.embedder
    }

    /// Live vectors.
    pub fn vector_count(&self) -> usize {
        read(&self.vectors).len()
    }

    /// Some chunks may lack vectors until [`Index::fill_missing_vectors`] runs.
    pub fn vectors_incomplete(&self) -> bool {
        self.vectors_incomplete
    }

    /// Size of the index folder in bytes.
    pub fn disk_bytes(&self) -> u64 {
        dir_bytes(&self.layout.dir)
    }

    /// Applies file changes to the uncommitted state: chunk store, vectors and manifest.
    /// Vectors of texts already embedded anywhere in the index are reused.
    pub fn apply(
        &mut self,
        changes: Vec<FileChange>,
        embedder: &dyn Embedder,
    ) -> Result<ApplyStats, IndexError> {
        self.apply_with(changes, embedder, false)
    }

    /// [`Index::apply`]; with `defer`, texts not embedded before are written without a
    /// vector and queued for [`Index::fill_deferred`].
    pub fn apply_with(
        &mut self,
        changes: Vec<FileChange>,
        embedder: &dyn Embedder,
        defer: bool,
    ) -> Result<ApplyStats, IndexError> {
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        let mut stats = ApplyStats::default();
        let reusable = self.manifest.ids_by_embed_hash();
        // Vectors first: if embedding fails, nothing of this batch has been written.
        let mut upserts = Vec::new();
        for change in changes {
            match change {
                FileChange::Touch { path, size, mtime_ns } => {
                    if let Some(entry) = self.manifest.files.get_mut(&path) {
                        entry.size = size;
                        entry.mtime_ns = mtime_ns;
                        entry.racy = manifest::is_racy(mtime_ns);
                        self.vectors_dirty = true;
                    }
                }
                FileChange::Remove { path } => {
                    if let Some(entry) = self.manifest.files.remove(&path) {
                        self.delete_file_docs(&path);
                        self.pending_removals.extend(entry.chunks.iter().map(|c| c.id));
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
                let embed_text = context::embedding_text(&prepared.context, snippet, &prepared.chunk.text);
                let embed_hash = xxhash_rust::xxh3::xxh3_64(embed_text.as_bytes());
                let id = self.manifest.allocate_id();
                match reusable.get(&embed_hash).and_then(|old| read(&self.vectors).get(*old)) {
                    Some(v) => {
                        new_vectors.push((id, v));
                        stats.vectors_reused += 1;
                    }
                    None => to_embed.push((id, embed_text)),
                }
                let snippet_pending = matches!(prepared.snippet, SnippetSlot::Missing { .. });
                refs.push(ChunkRef { id, embed_hash, snippet_pending });
            }
            staged.push((file, refs));
        }
        if defer && !to_embed.is_empty() {
            self.deferred.extend(to_embed.drain(..).map(|(id, _)| id));
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
                self.pending_removals.extend(old.chunks.iter().map(|c| c.id));
            }
            for (prepared, r) in file.chunks.iter().zip(&refs) {
                let record = prepared_record(&file, prepared, *r);
                let doc = self.document(&record, (file.size, file.mtime_ns, file.content_hash));
                let writer = self.writer.as_ref().ok_or(IndexError::ReadOnly)?;
                writer.add_document(doc).map_err(store_err(&self.layout.tantivy()))?;
            }
            stats.files_written += 1;
            stats.chunks_written += refs.len();
            self.manifest.files.insert(
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
        Ok(stats)
    }

    /// Puts a chunk's vector in the shared index and queues it for the next commit.
    fn stage_vector(&mut self, id: u64, vector: Vec<f32>) -> Result<(), IndexError> {
        write(&self.vectors).add(id, &vector)?;
        self.pending_ops.push(VectorOp::Add(id, vector));
        Ok(())
    }

    fn delete_file_docs(&mut self, path: &str) {
        if let Some(writer) = &self.writer {
            writer.delete_term(Term::from_field_text(self.fields.path, path));
            self.store_dirty = true;
        }
    }

    fn document(&self, r: &ChunkRecord, file: StoredFileMeta) -> TantivyDocument {
        let f = &self.fields;
        let mut doc = TantivyDocument::default();
        doc.add_u64(f.id, r.id);
        doc.add_text(f.path, &r.path);
        doc.add_text(f.path_text, path_words(&r.path));
        doc.add_u64(f.ordinal, u64::from(r.ordinal));
        doc.add_u64(f.start_line, r.start_line as u64);
        doc.add_u64(f.end_line, r.end_line as u64);
        doc.add_u64(f.start_byte, r.start_byte);
        doc.add_u64(f.end_byte, r.end_byte);
        doc.add_text(f.title, &r.title);
        doc.add_text(f.headings, context::context_headings(&r.title, &r.heading_path).join(" > "));
        doc.add_text(f.heading_path, serde_json::to_string(&r.heading_path).unwrap_or_default());
        doc.add_text(f.text, &r.text);
        doc.add_text(f.context, &r.context);
        if let Some(snippet) = &r.snippet {
            doc.add_text(f.snippet, &snippet.text);
            doc.add_text(f.snippet_key, format!("{:032x}", r.snippet_key));
            doc.add_text(f.snippet_model, &snippet.model);
            doc.add_u64(f.snippet_at, snippet.created_at);
        }
        doc.add_u64(f.token_count, r.token_count as u64);
        doc.add_u64(f.content_hash, r.content_hash);
        doc.add_u64(f.embed_hash, r.embed_hash);
        doc.add_u64(f.file_size, file.0);
        doc.add_u64(f.file_mtime, file.1);
        doc.add_u64(f.file_hash, file.2);
        doc
    }

    /// Puts snippets that arrived into the index: each chunk's stored document is rewritten
    /// with its snippet (so BM25 sees it) and its vector replaced by one of
    /// header + snippet + text (reused when that text was embedded before; with `defer`,
    /// left to [`Index::fill_deferred`]). Chunks that are gone or not yet committed, and
    /// those `wanted` turns down (given the stored chunk and the snippet's key), are passed
    /// over. Returns how many chunks changed.
    pub fn set_snippets(
        &mut self,
        updates: &[SnippetUpdate],
        embedder: &dyn Embedder,
        defer: bool,
        wanted: &dyn Fn(&ChunkRecord, u128) -> bool,
    ) -> Result<usize, IndexError> {
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        let ids: Vec<u64> = updates.iter().map(|u| u.chunk_id).collect();
        let records = self.snapshot().records(&ids)?;
        let reusable = self.manifest.ids_by_embed_hash();
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
                match reusable.get(&record.embed_hash).and_then(|other| read(&self.vectors).get(*other)) {
                    Some(v) => self.stage_vector(record.id, v)?,
                    None => to_embed.push((record.id, embed_text)),
                }
            }
            staged.push((record, file));
        }
        if defer {
            self.deferred.extend(to_embed.drain(..).map(|(id, _)| id));
        }
        for (id, v) in embed_texts(embedder, &to_embed)? {
            self.stage_vector(id, v)?;
        }
        for (record, file) in &staged {
            let writer = self.writer.as_ref().ok_or(IndexError::ReadOnly)?;
            writer.delete_term(Term::from_field_u64(self.fields.id, record.id));
            let doc = self.document(record, *file);
            let writer = self.writer.as_ref().ok_or(IndexError::ReadOnly)?;
            writer.add_document(doc).map_err(store_err(&self.layout.tantivy()))?;
            if let Some(entry) = self.manifest.files.get_mut(&record.path)
                && let Some(c) = entry.chunks.iter_mut().find(|c| c.id == record.id)
            {
                c.embed_hash = record.embed_hash;
                c.snippet_pending = false;
            }
        }
        if !staged.is_empty() {
            self.store_dirty = true;
        }
        Ok(staged.len())
    }

    /// Marks chunks as waiting for their snippet (after a change of snippet settings), or
    /// as no longer waiting.
    pub fn set_snippet_pending(&mut self, ids: &HashSet<u64>, pending: bool) {
        for c in self.manifest.files.values_mut().flat_map(|f| f.chunks.iter_mut()) {
            if ids.contains(&c.id) && c.snippet_pending != pending {
                c.snippet_pending = pending;
                self.vectors_dirty = true;
            }
        }
    }

    /// Records the snippet settings every chunk has now been checked against.
    pub fn set_snippet_identity(&mut self, identity: &str) {
        if self.manifest.snippet_identity != identity {
            self.manifest.snippet_identity = identity.to_string();
            self.vectors_dirty = true;
        }
    }

    /// Every committed chunk (for a check of all snippets against new settings).
    pub fn committed_records(&self) -> Result<Vec<ChunkRecord>, IndexError> {
        self.all_records()
    }

    /// Embeds the stored texts of chunks that have no vector (after a crash, a corrupt
    /// vector file or a model change). Returns how many were embedded.
    pub fn fill_missing_vectors(&mut self, embedder: &dyn Embedder) -> Result<usize, IndexError> {
        if !self.vectors_incomplete {
            return Ok(0);
        }
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        self.defer_missing_vectors()?;
        let mut filled = 0;
        while !self.deferred.is_empty() {
            filled += self.fill_deferred(embedder, self.deferred.len())?;
        }
        Ok(filled)
    }

    /// Queues every chunk that has no vector (after a crash or a model change) for
    /// [`Index::fill_deferred`], instead of embedding them all at once.
    /// Returns how many were queued.
    pub fn defer_missing_vectors(&mut self) -> Result<usize, IndexError> {
        if !self.vectors_incomplete {
            return Ok(0);
        }
        let queued: HashSet<u64> = self.deferred.iter().copied().collect();
        let missing: Vec<u64> = self
            .all_records()?
            .into_iter()
            .map(|r| r.id)
            .filter(|id| !queued.contains(id) && !read(&self.vectors).contains(*id))
            .collect();
        let queued = missing.len();
        self.deferred.extend(missing);
        self.vectors_incomplete = false;
        Ok(queued)
    }

    /// Chunks written without a vector and not embedded yet.
    pub fn deferred_count(&self) -> usize {
        self.deferred.len()
    }

    /// Embeds up to `max` of the chunks written without a vector, from their committed
    /// texts. Returns how many were embedded; chunks removed meanwhile are dropped.
    pub fn fill_deferred(&mut self, embedder: &dyn Embedder, max: usize) -> Result<usize, IndexError> {
        if self.writer.is_none() {
            return Err(IndexError::ReadOnly);
        }
        let take = max.min(self.deferred.len());
        let ids: Vec<u64> = self.deferred[..take].to_vec();
        let records = self.snapshot().records(&ids)?;
        let texts: Vec<(u64, String)> =
            ids.iter().filter_map(|id| records.get(id)).map(|r| (r.id, r.embedding_text())).collect();
        let vectors = embed_texts(embedder, &texts)?;
        let embedded = vectors.len();
        for (id, v) in vectors {
            self.stage_vector(id, v)?;
        }
        self.deferred.drain(..take);
        self.vectors_dirty = true;
        Ok(embedded)
    }

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
        } else if !self.vectors_dirty && self.pending_removals.is_empty() {
            return Ok(());
        }
        for id in std::mem::take(&mut self.pending_removals) {
            write(&self.vectors).remove(id)?;
            self.pending_ops.push(VectorOp::Remove(id));
        }
        self.persist_vectors()?;
        self.manifest.generation = self.committed_generation;
        // Chunks committed without vectors are embedded after a restart if not before.
        self.manifest.vectors_pending = !self.deferred.is_empty() || self.vectors_incomplete;
        if store_changed {
            self.manifest.committed_at =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        }
        files::write_json(&self.layout.manifest(), &self.manifest)
            .map_err(io_err(&self.layout.manifest()))?;
        self.committed_manifest = Arc::new(self.manifest.clone());
        self.vectors_dirty = false;
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
        let vectors_meta =
            VectorsMeta { generation: self.committed_generation, embedder: self.embedder.clone() };
        files::write_json(&self.layout.vectors_meta(), &vectors_meta)
            .map_err(io_err(&self.layout.vectors_meta()))?;
        self.journal =
            Some(Journal::reset(&journal_path, self.embedder.dimensions).map_err(io_err(&journal_path))?);
        Ok(())
    }

    /// A read-only view of the last commit, for searches on any thread.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            searcher: self.reader.searcher(),
            fields: self.fields,
            vectors: Arc::clone(&self.vectors),
            manifest: Arc::clone(&self.committed_manifest),
            store_dir: self.layout.tantivy(),
        }
    }

    fn all_records(&self) -> Result<Vec<ChunkRecord>, IndexError> {
        Ok(self.all_records_with_file_meta()?.into_iter().map(|(r, _)| r).collect())
    }

    fn all_records_with_file_meta(&self) -> Result<Vec<(ChunkRecord, StoredFileMeta)>, IndexError> {
        let searcher = self.reader.searcher();
        let mut out = Vec::new();
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            for doc_id in segment.doc_ids_alive() {
                let doc: TantivyDocument = searcher
                    .doc(DocAddress::new(ord as u32, doc_id))
                    .map_err(store_err(&self.layout.tantivy()))?;
                let f = &self.fields;
                let file = (u64_of(&doc, f.file_size), u64_of(&doc, f.file_mtime), u64_of(&doc, f.file_hash));
                out.extend(record_of(f, &doc).map(|r| (r, file)));
            }
        }
        Ok(out)
    }

    /// Ids of every chunk in the manifest (for consistency checks).
    pub fn chunk_ids(&self) -> HashSet<u64> {
        self.manifest.files.values().flat_map(|f| f.chunks.iter().map(|c| c.id)).collect()
    }

    /// Whether a vector is stored for this chunk id.
    pub fn has_vector(&self, id: u64) -> bool {
        read(&self.vectors).contains(id)
    }
}

/// One commit of the index, readable from any thread while the writer goes on: the chunk
/// store as of that commit, its manifest, and the shared vectors (filtered through the
/// chunk store, so chunks added since are never returned).
#[derive(Clone)]
pub struct Snapshot {
    searcher: Searcher,
    fields: Fields,
    vectors: Arc<RwLock<VectorIndex>>,
    manifest: Arc<Manifest>,
    store_dir: PathBuf,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("generation", &self.manifest.generation).finish()
    }
}

impl Snapshot {
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The stored vector of a chunk (f16 precision).
    pub fn vector_of(&self, id: u64) -> Option<Vec<f32>> {
        read(&self.vectors).get(id)
    }

    /// Live vectors (those of chunks being added may already count).
    pub fn vector_count(&self) -> usize {
        read(&self.vectors).len()
    }

    /// Chunks in this commit.
    pub fn num_docs(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// In how many chunks an analysed term occurs in a searched field.
    pub fn doc_freq(&self, field: TextField, term: &str) -> u64 {
        self.searcher.doc_freq(&Term::from_field_text(self.fields.searched(field), term)).unwrap_or(0)
    }

    /// Runs a disjunction of weighted term queries (BM25 per field, each scaled by its
    /// weight) and returns the ids and scores of the best `limit` chunks.
    pub fn search_terms(&self, terms: &[WeightedTerm], limit: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(self.fields.searched(t.field), &t.term);
                let q = TermQuery::new(term, IndexRecordOption::WithFreqs);
                (Occur::Should, Box::new(BoostQuery::new(Box::new(q), t.weight)) as Box<dyn Query>)
            })
            .collect();
        let query = BooleanQuery::new(clauses);
        let top = self
            .searcher
            .search(&query, &TopDocs::with_limit(limit).order_by_score())
            .map_err(store_err(&self.store_dir))?;
        let mut out = Vec::with_capacity(top.len());
        for (score, address) in top {
            if let Some(id) = self.id_at(address) {
                out.push((id, score));
            }
        }
        Ok(out)
    }

    /// The `limit` chunks nearest to `query`, with cosine distances.
    pub fn nearest(&self, query: &[f32], limit: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        Ok(read(&self.vectors).search(query, limit)?)
    }

    fn id_at(&self, address: DocAddress) -> Option<u64> {
        let segment = self.searcher.segment_reader(address.segment_ord);
        let ids = segment.fast_fields().u64("id").ok()?;
        ids.first(address.doc_id)
    }

    /// The stored chunks with these ids (those that exist in the snapshot).
    pub fn records(&self, ids: &[u64]) -> Result<HashMap<u64, ChunkRecord>, IndexError> {
        let mut out = HashMap::with_capacity(ids.len());
        for &id in ids {
            let q = TermQuery::new(Term::from_field_u64(self.fields.id, id), IndexRecordOption::Basic);
            let top = self
                .searcher
                .search(&q, &TopDocs::with_limit(1).order_by_score())
                .map_err(store_err(&self.store_dir))?;
            if let Some((_, address)) = top.first() {
                let doc: TantivyDocument = self.searcher.doc(*address).map_err(store_err(&self.store_dir))?;
                if let Some(r) = record_of(&self.fields, &doc) {
                    out.insert(id, r);
                }
            }
        }
        Ok(out)
    }

    /// All stored chunks of one file, in order.
    pub fn file_records(&self, path: &str) -> Result<Vec<ChunkRecord>, IndexError> {
        let q = TermQuery::new(Term::from_field_text(self.fields.path, path), IndexRecordOption::Basic);
        let limit = (self.searcher.num_docs() as usize).max(1);
        let top = self
            .searcher
            .search(&q, &TopDocs::with_limit(limit).order_by_score())
            .map_err(store_err(&self.store_dir))?;
        let mut out = Vec::with_capacity(top.len());
        for (_, address) in top {
            let doc: TantivyDocument = self.searcher.doc(address).map_err(store_err(&self.store_dir))?;
            out.extend(record_of(&self.fields, &doc));
        }
        out.sort_by_key(|r| r.ordinal);
        Ok(out)
    }
}

/// The record a prepared chunk is stored as.
fn prepared_record(file: &PreparedFile, prepared: &PreparedChunk, r: ChunkRef) -> ChunkRecord {
    let c = &prepared.chunk;
    let (snippet, snippet_key) = match &prepared.snippet {
        SnippetSlot::Ready { key, snippet } => (Some(snippet.clone()), *key),
        _ => (None, 0),
    };
    ChunkRecord {
        id: r.id,
        path: file.path.clone(),
        ordinal: c.ordinal,
        start_line: c.start_line,
        end_line: c.end_line,
        start_byte: c.byte_range.start as u64,
        end_byte: c.byte_range.end as u64,
        title: file.title.clone(),
        heading_path: c.heading_path.clone(),
        text: c.text.clone(),
        context: prepared.context.clone(),
        snippet,
        snippet_key,
        token_count: c.token_count,
        content_hash: c.content_hash,
        embed_hash: r.embed_hash,
    }
}

fn record_of(f: &Fields, doc: &TantivyDocument) -> Option<ChunkRecord> {
    let text = |field| doc.get_first(field).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let snippet_key = doc
        .get_first(f.snippet_key)
        .and_then(|v| v.as_str())
        .and_then(|k| u128::from_str_radix(k, 16).ok())
        .unwrap_or(0);
    let snippet = (snippet_key != 0).then(|| Snippet {
        text: text(f.snippet),
        model: text(f.snippet_model),
        created_at: u64_of(doc, f.snippet_at),
    });
    Some(ChunkRecord {
        id: doc.get_first(f.id)?.as_u64()?,
        path: text(f.path),
        ordinal: u64_of(doc, f.ordinal) as u32,
        start_line: u64_of(doc, f.start_line) as u32,
        end_line: u64_of(doc, f.end_line) as u32,
        start_byte: u64_of(doc, f.start_byte),
        end_byte: u64_of(doc, f.end_byte),
        title: text(f.title),
        heading_path: serde_json::from_str(&text(f.heading_path)).unwrap_or_default(),
        text: text(f.text),
        context: text(f.context),
        snippet,
        snippet_key,
        token_count: u64_of(doc, f.token_count) as u32,
        content_hash: u64_of(doc, f.content_hash),
        embed_hash: u64_of(doc, f.embed_hash),
    })
}

fn read(vectors: &RwLock<VectorIndex>) -> RwLockReadGuard<'_, VectorIndex> {
    vectors.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(vectors: &RwLock<VectorIndex>) -> RwLockWriteGuard<'_, VectorIndex> {
    vectors.write().unwrap_or_else(PoisonError::into_inner)
}

/// Embeds `(id, text)` pairs in batches; the vectors come back with their ids, in order.
fn embed_texts(embedder: &dyn Embedder, items: &[(u64, String)]) -> Result<Vec<(u64, Vec<f32>)>, IndexError> {
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

/// A file's size, mtime and content hash as stored with each of its chunks.
type StoredFileMeta = (u64, u64, u64);

fn u64_of(doc: &TantivyDocument, field: tantivy::schema::Field) -> u64 {
    doc.get_first(field).and_then(|v| v.as_u64()).unwrap_or(0)
}

/// The words of a path, for BM25: `ops/backup-policy.md` → `ops backup-policy`.
fn path_words(path: &str) -> String {
    let without_ext = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    without_ext.replace('/', " ")
}

fn open_store(layout: &IndexLayout, create: bool) -> Result<(tantivy::Index, Fields), IndexError> {
    let dir = layout.tantivy();
    if create {
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    }
    let (schema, fields) = schema::build();
    let directory = MmapDirectory::open(&dir).map_err(|e| IndexError::Store {
        path: dir.display().to_string(),
        source: tantivy::TantivyError::from(e),
    })?;
    let store = if create {
        tantivy::Index::open_or_create(directory, schema.clone()).map_err(store_err(&dir))?
    } else {
        tantivy::Index::open(directory).map_err(store_err(&dir))?
    };
    if store.schema() != schema {
        return Err(IndexError::Store {
            path: dir.display().to_string(),
            source: tantivy::TantivyError::SchemaError("stored schema differs from this version's".into()),
        });
    }
    tokenizer::register(&store);
    Ok((store, fields))
}

fn read_payload(store: &tantivy::Index) -> CommitPayload {
    store
        .load_metas()
        .ok()
        .and_then(|m| m.payload)
        .and_then(|p| serde_json::from_str(&p).ok())
        .unwrap_or_default()
}

/// Empties the index folder and writes a fresh format record.
fn reset_index_files(layout: &IndexLayout) -> Result<(), IndexError> {
    clear_index_files(layout)?;
    files::write_json(&layout.meta(), &FormatRecord { format: FORMAT_VERSION })
        .map_err(io_err(&layout.meta()))
}

fn clear_index_files(layout: &IndexLayout) -> Result<(), IndexError> {
    let tantivy = layout.tantivy();
    if tantivy.exists() {
        std::fs::remove_dir_all(&tantivy).map_err(io_err(&tantivy))?;
    }
    for p in
        [layout.vectors(), layout.vectors_meta(), layout.vectors_journal(), layout.manifest(), layout.meta()]
    {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&p)(e)),
        }
    }
    Ok(())
}

/// Size in bytes of the files under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The default index folder of a workspace: `<cache dir>/situate/<name>-<hash of the path>`.
pub fn default_dir(root: &Path) -> PathBuf {
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let hash = xxhash_rust::xxh3::xxh3_64(canonical.to_string_lossy().as_bytes());
    let name: String = canonical
        .file_name()
        .map(|n| {
            n.to_string_lossy().chars().filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_')).collect()
        })
        .unwrap_or_default();
    let base = dirs::cache_dir().unwrap_or_else(std::env::temp_dir);
    base.join("situate").join(format!("{name}-{hash:016x}"))
}
