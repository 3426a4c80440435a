//! The [`Index`] handle: opening an index folder (for writing under the lock, or read-only),
//! and repairing on open what a crash or a model change left behind.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use tantivy::{IndexReader, IndexWriter, ReloadPolicy};

use super::checked;
use super::files::{self, CommitPayload, FORMAT_VERSION, FormatRecord, IndexLayout, dir_bytes};
use super::lock::WriterLock;
use super::manifest::Manifest;
use super::manifest_log::LogState;
use super::schema::{self, Fields};
use super::snapshot::Snapshot;
use super::store_dir::ReadingDirectory;
use super::vector_file::VectorSet;
use super::vector_log::VectorLog;
use super::vector_sidecar;
use super::{IndexError, OpenMode, io_err, store_err};
use crate::analysis;
use crate::providers::{Embedder, EmbedderIdentity};

/// Memory the tantivy writer may use before it flushes a segment.
const WRITER_HEAP_BYTES: usize = 64 * 1024 * 1024;
/// How many times a reader opens the index again when a writer in another process committed
/// meanwhile.
const READ_RETRIES: u32 = 5;

/// One index folder, open for reading or writing.
pub struct Index {
    pub(super) layout: IndexLayout,
    pub(super) fields: Fields,
    pub(super) reader: IndexReader,
    pub(super) writer: Option<IndexWriter>,
    /// The index's model's vectors as of the last commit, shared with snapshots.
    pub(super) model: Arc<VectorSet>,
    /// The model's vector file (writers), with the vectors staged for the next commit.
    pub(super) model_log: Option<VectorLog>,
    /// Which texts the model's kept rows belong to (writers).
    pub(super) retired: Option<super::retired::Retired>,
    /// Shared with `committed_manifest` until the first change after a commit, so that
    /// neither an open nor a commit copies a manifest of a million chunks.
    pub(super) manifest: Arc<Manifest>,
    /// The manifest as of the last commit, shared with snapshots.
    pub(super) committed_manifest: Arc<Manifest>,
    /// The manifest's journal, when the manifest on disk is `committed_manifest` read from
    /// the binary file and that journal: a commit then appends its changes to it.
    pub(super) manifest_log: Option<LogState>,
    pub(super) embedder: EmbedderIdentity,
    pub(super) pipeline: String,
    /// Generation of the last tantivy commit.
    pub(super) committed_generation: u64,
    /// Uncommitted changes exist in the chunk store.
    pub(super) store_dirty: bool,
    /// Uncommitted changes exist in the vectors only.
    pub(super) manifest_dirty: bool,
    /// Chunks whose vectors must be removed (or retired) once the store commit is durable.
    pub(super) pending_removals: Vec<super::manifest::ChunkRef>,
    /// Some chunk may lack a vector (after a crash or a model change).
    pub(super) vectors_unchecked: bool,
    /// Chunks written without a vector, to embed after their text is committed (a slow
    /// embedder must not hold back BM25).
    pub(super) pending_vectors: Vec<u64>,
    /// The quick model whose vectors stand in for pending ones (`None`: no stand-ins).
    pub(super) quick_embedder: Option<Arc<dyn Embedder>>,
    /// Stand-in vectors of the chunks whose vectors are pending, as of the last commit,
    /// shared with snapshots.
    pub(super) quick: Arc<VectorSet>,
    /// The quick vector file (writers with a quick model).
    pub(super) quick_log: Option<VectorLog>,
    /// Chunk id by embedded-text hash, kept up to date by a writer once first asked for.
    pub(super) embed_hashes: Option<super::manifest::IdsByEmbedHash>,
    /// Waiting chunks whose texts a fill step gave the model, by id: the hash of the text,
    /// and the other waiting chunks of the same text, which take its vector once it is
    /// stored (`pending.rs`).
    pub(super) fill_twins: std::collections::HashMap<u64, (u64, Vec<u64>)>,
    /// Why parts of the index were rebuilt or repaired while opening.
    pub(super) notes: Vec<String>,
    /// Another process held the writer lock when this one opened the index.
    pub(super) other_writer: bool,
    /// Opened for a search by words alone: no vectors were read ([`OpenMode::ReadWords`]).
    pub(super) words_only: bool,
    pub(super) _lock: Option<WriterLock>,
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
                    Some(lock) => {
                        // Only for the messages of other processes: a failure changes nothing.
                        if let Err(e) = lock.name_holder() {
                            tracing::debug!("cannot write the lock's holder: {e}");
                        }
                        Index::open_writable(layout, lock, embedder, pipeline).map(Some)
                    }
                    None => Ok(None),
                }
            }
            OpenMode::ReadOnly => Index::open_read_only(layout, embedder, pipeline, true).map(Some),
            OpenMode::ReadWords => Index::open_read_only(layout, embedder, pipeline, false).map(Some),
        }
    }

    fn open_writable(
        layout: IndexLayout,
        lock: WriterLock,
        embedder: &EmbedderIdentity,
        pipeline: &str,
    ) -> Result<Index, IndexError> {
        let mut notes = Vec::new();
        let has_contents =
            layout.tantivy().exists() || layout.manifest().exists() || layout.manifest_json().exists();
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

        // The index is derived data: a chunk store that cannot be read whole is set aside
        // and rebuilt from the files (the snippet cache, which cost money, stays).
        let (store, fields) = match open_store(&layout, true).and_then(|(store, fields)| {
            checked::check_store(&store, &layout)?;
            Ok((store, fields))
        }) {
            Ok(s) => s,
            Err(e) => {
                let aside = set_aside(&layout);
                notes.push(format!(
                    "the chunk store is damaged ({e}); {aside}, and the index is rebuilt from the files"
                ));
                reset_index_files(&layout)?;
                open_store(&layout, true)?
            }
        };
        let tantivy_dir = layout.tantivy();
        let writer: IndexWriter =
            store.writer_with_num_threads(1, WRITER_HEAP_BYTES).map_err(store_err(&tantivy_dir))?;
        // A writer killed before its commit leaves files that no commit names (a segment's
        // delete file, say); the next writer would reach the same names and fail on them for
        // good. Nothing reads this store yet, so they go now.
        if let Err(e) = writer.garbage_collect_files().wait() {
            tracing::warn!(index = %tantivy_dir.display(), "leftover files of an unfinished write not removed: {e}");
        }
        let (mut index, payload) = Index::assemble(
            layout,
            &store,
            fields,
            embedder,
            pipeline,
            Some((writer, lock)),
            Vectors::Load,
            false,
        )?;
        index.notes.splice(0..0, notes);
        if !payload.pipeline.is_empty() && payload.pipeline != pipeline {
            index.notes.push("chunking or context settings changed: files are re-chunked".to_string());
            // Forgetting the content hashes makes the next reconcile re-chunk every file,
            // while vectors of unchanged embedded texts are still reused.
            for entry in Arc::make_mut(&mut index.manifest).files.values_mut() {
                entry.content_hash = 0;
            }
        }
        // Each front end says them once, as suits it: the CLI on stderr, the language and MCP
        // servers in their logs.
        for note in &index.notes {
            tracing::debug!(index = %index.layout.dir.display(), "{note}");
        }
        Ok(index)
    }

    fn open_read_only(
        layout: IndexLayout,
        embedder: &EmbedderIdentity,
        pipeline: &str,
        with_vectors: bool,
    ) -> Result<Index, IndexError> {
        // Only asked, not kept: a reader must not stop a writer from starting.
        let other_writer = matches!(WriterLock::try_acquire(&layout.lock()), Ok(None));
        if !layout.tantivy().join("meta.json").exists() {
            let path = layout.dir.display().to_string();
            return Err(if other_writer {
                IndexError::BeingCreated { path }
            } else {
                IndexError::Missing { path }
            });
        }
        // A writer in another process may commit while this one opens, and remove the files
        // of the commit it had just read: read the new commit instead.
        let mut attempt = 0;
        loop {
            let opened = open_store(&layout, false).and_then(|(store, fields)| {
                checked::check_store(&store, &layout)?;
                let vectors = if with_vectors { Vectors::Load } else { Vectors::Skip };
                // Until the last attempt, a manifest of another commit than the store's is
                // the other writer's commit under way: read both again.
                let strict = other_writer && attempt < READ_RETRIES;
                Index::assemble(layout.clone(), &store, fields, embedder, pipeline, None, vectors, strict)
            });
            match opened {
                Ok((mut index, _)) => {
                    index.other_writer = other_writer;
                    return Ok(index);
                }
                Err(e) if other_writer && attempt < READ_RETRIES => {
                    attempt += 1;
                    tracing::debug!("index changed while it was opened ({e}); reading it again");
                    std::thread::sleep(std::time::Duration::from_millis(20 * attempt as u64));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Builds the index around an open chunk store and loads (or repairs) the manifest and
    /// the vectors. With a writer and its lock, repairs may write; without, nothing does.
    /// `strict`: a manifest of another commit than the store's is an error rather than
    /// rebuilt from the store (a reader racing another process's commit).
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        layout: IndexLayout,
        store: &tantivy::Index,
        fields: Fields,
        embedder: &EmbedderIdentity,
        pipeline: &str,
        writer: Option<(IndexWriter, WriterLock)>,
        vectors: Vectors,
        strict: bool,
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
            model: Arc::default(),
            model_log: None,
            retired: None,
            layout,
            fields,
            reader,
            writer,
            manifest: Arc::default(),
            committed_manifest: Arc::default(),
            manifest_log: None,
            embedder: embedder.clone(),
            pipeline: pipeline.to_string(),
            committed_generation: payload.generation,
            store_dirty: false,
            manifest_dirty: false,
            pending_removals: Vec::new(),
            vectors_unchecked: false,
            pending_vectors: Vec::new(),
            quick_embedder: None,
            quick: Arc::default(),
            quick_log: None,
            embed_hashes: None,
            fill_twins: Default::default(),
            notes: Vec::new(),
            other_writer: false,
            words_only: vectors == Vectors::Skip,
            _lock: lock,
        };
        index.load_manifest(&payload, strict)?;
        if vectors == Vectors::Load {
            index.load_vectors(writable)?;
        }
        if index.manifest.vectors_pending {
            index.vectors_unchecked = true;
        }
        index.committed_manifest = Arc::clone(&index.manifest);
        Ok((index, payload))
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

    pub fn embedder(&self) -> &EmbedderIdentity {
        &self.embedder
    }

    /// Chunks with a vector of the index's model (staged ones included).
    pub fn vector_count(&self) -> usize {
        self.model_log.as_ref().map_or(self.model.len(), |log| log.len())
    }

    /// Some chunks may lack vectors until [`Index::embed_vectorless`] runs.
    pub fn vectors_unchecked(&self) -> bool {
        self.vectors_unchecked
    }

    /// The process that holds the writer lock, when it named itself.
    pub fn writer_holder(&self) -> Option<super::lock::Holder> {
        WriterLock::holder(&self.layout.lock())
    }

    /// Whether no process holds the writer lock right now (asked, not kept): a read-only
    /// index may be taken over.
    pub fn writer_free(&self) -> bool {
        matches!(WriterLock::try_acquire(&self.layout.lock()), Ok(Some(_)))
    }

    /// When the last commit on disk was made (by any process), as the file system tells
    /// it: a reader compares two of these to learn that a writer has committed.
    pub fn disk_commit_stamp(&self) -> Option<std::time::SystemTime> {
        // A commit writes the manifest whole or appends to its journal.
        let modified = |path: std::path::PathBuf| std::fs::metadata(path).and_then(|m| m.modified()).ok();
        modified(self.layout.manifest()).max(modified(self.layout.manifest_log()))
    }

    /// Size of the index folder in bytes.
    pub fn disk_bytes(&self) -> u64 {
        dir_bytes(&self.layout.dir)
    }

    /// A read-only view of the last commit, for searches on any thread.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            searcher: self.reader.searcher(),
            fields: self.fields,
            model: Arc::clone(&self.model),
            quick: Arc::clone(&self.quick),
            manifest: Arc::clone(&self.committed_manifest),
            store_dir: self.layout.tantivy(),
            tokens: Arc::default(),
        }
    }

    /// Ids of every chunk in the manifest (for consistency checks).
    pub fn chunk_ids(&self) -> HashSet<u64> {
        self.manifest.files.values().flat_map(|f| f.chunks.iter().map(|c| c.id)).collect()
    }

    /// Whether a vector is stored for this chunk id (staged ones included).
    pub fn has_vector(&self, id: u64) -> bool {
        self.model_log.as_ref().map_or(self.model.contains(id), |log| log.contains(id))
    }

    /// The stored vector of a chunk (staged ones included), as stored.
    pub fn stored_vector(&self, id: u64) -> Result<Option<Vec<f32>>, IndexError> {
        match &self.model_log {
            Some(log) => log.vector_of(id).map_err(io_err(&self.layout.vectors())),
            None => self.model.vector_of(id),
        }
    }
}

/// Whether an open reads the vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Vectors {
    Load,
    Skip,
}

fn open_store(layout: &IndexLayout, create: bool) -> Result<(tantivy::Index, Fields), IndexError> {
    let dir = layout.tantivy();
    if create {
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    }
    let (schema, fields) = schema::build();
    let directory = ReadingDirectory::open(&dir).map_err(|e| IndexError::Store {
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
    analysis::register(&store);
    Ok((store, fields))
}

/// Moves a damaged chunk store out of the way (replacing one set aside before), for a look
/// afterwards; says where it went, or that it was removed.
fn set_aside(layout: &IndexLayout) -> String {
    let (from, to) = (layout.tantivy(), layout.dir.join("tantivy.damaged"));
    let _ = std::fs::remove_dir_all(&to);
    match std::fs::rename(&from, &to) {
        Ok(()) => format!("it is set aside in {}", to.display()),
        Err(_) => "it is removed".to_string(),
    }
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
    for p in [
        layout.vectors(),
        vector_sidecar::path_of(&layout.vectors()),
        vector_sidecar::status_record(&layout.vectors()),
        layout.vectors_meta(),
        layout.legacy_vectors(),
        layout.legacy_journal(),
        layout.quick(),
        vector_sidecar::path_of(&layout.quick()),
        vector_sidecar::status_record(&layout.quick()),
        layout.manifest(),
        layout.manifest_log(),
        layout.manifest_json(),
        layout.meta(),
    ] {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&p)(e)),
        }
    }
    Ok(())
}
