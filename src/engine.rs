//! The engine: one workspace, its configuration, embedder and index, and the operations the
//! CLI and the language server call — reconcile with the disk, search, show, status.
//!
//! The engine speaks plain data (paths, line numbers, strings); it knows nothing of LSP or
//! terminals.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::chunk::{self, ChunkConfig};
use crate::config::{Config, ConfigProblem, EmbeddingConfig};
use crate::context;
use crate::index::{
    ApplyStats, ChunkRecord, FileChange, Index, IndexError, OpenMode, PreparedChunk, PreparedFile,
};
use crate::providers::{EmbedError, Embedder, EmbedderIdentity, static_model::StaticEmbedder};
use crate::search::{self, Hit, SearchError, SearchRequest};
use crate::workspace::{self, SkipReason, Skipped, SourceFile};

/// Files read and chunked (in parallel) before their changes are applied.
const READ_BATCH: usize = 128;
/// Files applied between two commits of a long reconcile, so an interrupted cold index
/// keeps most of its work.
const CHECKPOINT_FILES: usize = 2_000;

/// Bumped when chunking or context code changes what it produces for the same input.
const PIPELINE_VERSION: u32 = 1;

/// An engine failure.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("workspace {path}: {reason}")]
    Workspace { path: String, reason: String },
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error("{path} is not an indexed file")]
    NotIndexed { path: String },
}

/// How far a reconcile has come.
#[derive(Debug, Clone)]
pub enum Progress {
    /// The walk found this many files to look at.
    Scanned { files: usize },
    /// Files read and indexed so far out of those that changed.
    Indexing { done: usize, total: usize },
}

/// What a reconcile did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReconcileReport {
    /// Files the walk selected.
    pub files_seen: usize,
    pub files_unchanged: usize,
    /// New or changed files re-chunked.
    pub files_indexed: usize,
    /// Files whose mtime changed but whose contents did not.
    pub files_touched: usize,
    pub files_removed: usize,
    pub chunks_written: usize,
    pub vectors_embedded: usize,
    pub vectors_reused: usize,
    /// Vectors re-embedded from stored texts (after a model change or a repair).
    pub vectors_refilled: usize,
    pub skipped: Vec<Skipped>,
    /// Files decoded with replacement characters.
    pub lossy: Vec<String>,
    pub seconds: f64,
}

impl ReconcileReport {
    fn add(&mut self, stats: ApplyStats) {
        self.chunks_written += stats.chunks_written;
        self.vectors_embedded += stats.vectors_embedded;
        self.vectors_reused += stats.vectors_reused;
    }
}

/// The state of an index, for `status`.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub workspace: String,
    pub index_dir: String,
    /// This engine cannot write the index.
    pub read_only: bool,
    /// Another process is writing the index.
    pub other_writer: bool,
    pub files: usize,
    pub chunks: usize,
    pub vectors: usize,
    pub embedder: EmbedderIdentity,
    /// Unix seconds of the last commit (0: never).
    pub last_commit: u64,
    pub disk_bytes: u64,
    pub skipped: Vec<Skipped>,
    pub config_problems: Vec<String>,
    /// Why parts of the index were rebuilt when it was opened.
    pub notes: Vec<String>,
}

/// One workspace's engine.
pub struct Engine {
    root: PathBuf,
    config: Config,
    config_problems: Vec<ConfigProblem>,
    embedder: Arc<dyn Embedder>,
    index: Index,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("root", &self.root).field("index", &self.index).finish()
    }
}

/// Builds the embedder a configuration asks for.
pub fn embedder_for(config: &EmbeddingConfig) -> Result<Arc<dyn Embedder>, EmbedError> {
    match config {
        EmbeddingConfig::Static { model_path: None } => Ok(Arc::new(StaticEmbedder::builtin()?)),
        EmbeddingConfig::Static { model_path: Some(p) } => Ok(Arc::new(StaticEmbedder::from_dir(p)?)),
        #[cfg(feature = "transformer")]
        EmbeddingConfig::Transformer { model_path, batch_size, max_tokens } => {
            use crate::providers::transformer::{TransformerEmbedder, TransformerOptions};
            let options = TransformerOptions { batch_size: *batch_size, max_tokens: *max_tokens };
            Ok(Arc::new(TransformerEmbedder::from_dir(model_path, options)?))
        }
        #[cfg(not(feature = "transformer"))]
        EmbeddingConfig::Transformer { model_path, .. } => Err(EmbedError::Load {
            path: model_path.display().to_string(),
            reason: crate::config::TRANSFORMER_NOT_BUILT.to_string(),
        }),
    }
}

/// A fingerprint of everything that shapes stored chunks and contexts.
fn pipeline_fingerprint(chunk: &ChunkConfig, config: &Config) -> String {
    format!(
        "v{PIPELINE_VERSION}:{:?}:{}:{}:{}",
        chunk.strategy, chunk.max_tokens, chunk.overlap_tokens, config.context.header_template
    )
}

impl Engine {
    /// Opens the engine of `root` with its `situate.toml`, or the given settings file
    /// (problems are kept for status).
    pub fn open(root: &Path, config_file: Option<&Path>, mode: OpenMode) -> Result<Engine, EngineError> {
        let loaded = match config_file {
            Some(file) => Config::load_file(file),
            None => Config::load(root),
        };
        let embedder = embedder_for(&loaded.config.embedding)?;
        Engine::open_with(root, loaded.config, loaded.problems, embedder, mode)
    }

    /// Opens the engine with an explicit configuration and embedder. In `Write` mode, when
    /// another process holds the writer lock, the index is opened read-only instead.
    pub fn open_with(
        root: &Path,
        config: Config,
        config_problems: Vec<ConfigProblem>,
        embedder: Arc<dyn Embedder>,
        mode: OpenMode,
    ) -> Result<Engine, EngineError> {
        let root = root.canonicalize().map_err(|e| EngineError::Workspace {
            path: root.display().to_string(),
            reason: e.to_string(),
        })?;
        if !root.is_dir() {
            return Err(EngineError::Workspace {
                path: root.display().to_string(),
                reason: "not a folder".to_string(),
            });
        }
        let index_dir = match &config.index_dir {
            Some(d) if d.is_absolute() => d.clone(),
            Some(d) => root.join(d),
            None => crate::index::default_dir(&root),
        };
        let identity = embedder.identity();
        let pipeline = pipeline_fingerprint(&config.chunk, &config);
        let index = match Index::open(&index_dir, &identity, &pipeline, mode)? {
            Some(index) => index,
            None => {
                tracing::warn!(index = %index_dir.display(), "another process is writing this index; opening it read-only");
                Index::open(&index_dir, &identity, &pipeline, OpenMode::ReadOnly)?
                    .ok_or(IndexError::ReadOnly)?
            }
        };
        Ok(Engine { root, config, config_problems, embedder, index })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn index(&self) -> &Index {
        &self.index
    }

    pub fn is_read_only(&self) -> bool {
        self.index.is_read_only()
    }

    /// Brings the index in line with the files on disk: new, changed and deleted files only.
    pub fn reconcile(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<ReconcileReport, EngineError> {
        let started = Instant::now();
        let mut report = ReconcileReport::default();
        if self.index.is_read_only() {
            return Err(IndexError::ReadOnly.into());
        }
        report.vectors_refilled = self.index.fill_missing_vectors(self.embedder.as_ref())?;

        let walked = workspace::walk(&self.root, &self.config.walk, Some(self.index.dir()));
        report.files_seen = walked.files.len();
        progress(Progress::Scanned { files: walked.files.len() });
        let mut skipped = walked.skipped;

        let mut changes: Vec<FileChange> = Vec::new();
        let seen: std::collections::HashSet<&str> =
            walked.files.iter().map(|f| f.rel_path.as_str()).collect();
        for path in self.index.manifest().files.keys() {
            if !seen.contains(path.as_str()) {
                changes.push(FileChange::Remove { path: path.clone() });
            }
        }
        let to_read: Vec<&SourceFile> = walked
            .files
            .iter()
            .filter(|f| !self.index.manifest().is_unchanged(&f.rel_path, f.size, f.mtime_ns))
            .collect();
        report.files_unchanged = walked.files.len() - to_read.len();
        report.files_removed = changes.len();
        if !changes.is_empty() {
            self.index.apply(std::mem::take(&mut changes), self.embedder.as_ref())?;
        }

        let total = to_read.len();
        let mut since_checkpoint = 0;
        for (n, batch) in to_read.chunks(READ_BATCH).enumerate() {
            let prepared: Vec<Result<Prepared, Skipped>> =
                batch.par_iter().map(|f| prepare(f, &self.config, &self.index)).collect();
            for p in prepared {
                stage(p, &self.index, &mut report, &mut changes, &mut skipped);
            }
            since_checkpoint += batch.len();
            let stats = self.index.apply(std::mem::take(&mut changes), self.embedder.as_ref())?;
            report.add(stats);
            if since_checkpoint >= CHECKPOINT_FILES {
                self.index.commit()?;
                since_checkpoint = 0;
            }
            progress(Progress::Indexing { done: ((n + 1) * READ_BATCH).min(total), total });
        }
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        for s in &skipped {
            tracing::info!(path = %s.path, "skipped: {}", s.reason);
        }
        report.skipped = skipped.clone();
        self.index.set_skipped(skipped);
        self.index.commit()?;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Re-indexes these files alone, without walking the workspace (an editor's save, a
    /// file watcher's event). Paths are workspace-relative or absolute. A file that exists
    /// and is selected is re-chunked if its contents changed; one that is gone, no longer
    /// selected, or now unreadable leaves the index.
    pub fn update(&mut self, paths: &[String]) -> Result<ReconcileReport, EngineError> {
        let started = Instant::now();
        if self.index.is_read_only() {
            return Err(IndexError::ReadOnly.into());
        }
        let mut report = ReconcileReport::default();
        let mut changes = Vec::new();
        let mut skipped = Vec::new();
        let mut touched_paths = Vec::new();
        let index_dir = self.index.dir().canonicalize().ok();
        for path in paths {
            let Some(rel) = self.relative(path) else {
                skipped.push(Skipped {
                    path: path.clone(),
                    reason: SkipReason::Unreadable { error: "outside the workspace".to_string() },
                });
                continue;
            };
            touched_paths.push(rel.clone());
            let in_index_dir = index_dir.as_ref().is_some_and(|d| self.root.join(&rel).starts_with(d));
            let selected = !in_index_dir && workspace::is_selected(&self.root, &rel, &self.config.walk);
            let file = match workspace::stat(&self.root, &rel) {
                Ok(file) if selected => Some(file),
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    let skip = Skipped { path: rel, reason: SkipReason::Unreadable { error: e.to_string() } };
                    stage(Err(skip), &self.index, &mut report, &mut changes, &mut skipped);
                    continue;
                }
                // Gone, or no longer selected.
                _ => None,
            };
            let Some(file) = file else {
                if self.index.manifest().files.contains_key(&rel) {
                    changes.push(FileChange::Remove { path: rel });
                    report.files_removed += 1;
                }
                continue;
            };
            report.files_seen += 1;
            if self.index.manifest().is_unchanged(&file.rel_path, file.size, file.mtime_ns) {
                report.files_unchanged += 1;
                continue;
            }
            let prepared = prepare(&file, &self.config, &self.index);
            stage(prepared, &self.index, &mut report, &mut changes, &mut skipped);
        }
        let stats = self.index.apply(changes, self.embedder.as_ref())?;
        report.add(stats);
        // The skip list keeps its entries for other files and takes this call's.
        let mut all_skipped: Vec<Skipped> = self
            .index
            .manifest()
            .skipped
            .iter()
            .filter(|s| !touched_paths.contains(&s.path))
            .cloned()
            .chain(skipped.iter().cloned())
            .collect();
        all_skipped.sort_by(|a, b| a.path.cmp(&b.path));
        self.index.set_skipped(all_skipped);
        self.index.commit()?;
        report.skipped = skipped;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Runs a search on the last committed snapshot.
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, EngineError> {
        Ok(search::search(&self.index, self.embedder.as_ref(), &self.config.search, request)?)
    }

    /// The indexed chunks of a file (workspace-relative or absolute path), or only those
    /// whose line range holds `line`.
    pub fn chunks_at(&self, path: &str, line: Option<u32>) -> Result<Vec<ChunkRecord>, EngineError> {
        let rel = self.relative(path).ok_or_else(|| EngineError::NotIndexed { path: path.to_string() })?;
        if !self.index.manifest().files.contains_key(&rel) {
            return Err(EngineError::NotIndexed { path: path.to_string() });
        }
        let records = self.index.file_records(&self.index.searcher(), &rel)?;
        Ok(match line {
            None => records,
            Some(line) => {
                let holding: Vec<ChunkRecord> =
                    records.iter().filter(|r| r.start_line <= line && line <= r.end_line).cloned().collect();
                if holding.is_empty() {
                    // Between chunks (a blank line, a bare heading): the chunk that follows.
                    records.into_iter().find(|r| r.start_line > line).into_iter().collect()
                } else {
                    holding
                }
            }
        })
    }

    /// Files, chunks, model and health of the index.
    pub fn status(&self) -> Status {
        let manifest = self.index.manifest();
        Status {
            workspace: self.root.display().to_string(),
            index_dir: self.index.dir().display().to_string(),
            read_only: self.index.is_read_only(),
            other_writer: self.index.other_writer(),
            files: manifest.files.len(),
            chunks: manifest.chunk_count(),
            vectors: self.index.vector_count(),
            embedder: self.index.embedder().clone(),
            last_commit: manifest.committed_at,
            disk_bytes: self.index.disk_bytes(),
            skipped: manifest.skipped.clone(),
            config_problems: self.config_problems.iter().map(ToString::to_string).collect(),
            notes: self.index.notes().to_vec(),
        }
    }

    /// Problems found in the configuration (the defaults were used for those keys).
    pub fn config_problems(&self) -> &[ConfigProblem] {
        &self.config_problems
    }

    /// `path` relative to the workspace root, `/`-separated; `None` when outside it.
    pub fn relative(&self, path: &str) -> Option<String> {
        let p = Path::new(path);
        if p.is_absolute() {
            let canonical = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            workspace::relative_path(&self.root, &canonical)
        } else {
            let normal = path.trim_start_matches("./").replace('\\', "/");
            if normal.split('/').any(|s| s == "..") { None } else { Some(normal) }
        }
    }
}

/// The outcome of reading and chunking one file.
enum Prepared {
    Changed(PreparedFile),
    Touched { path: String, size: u64, mtime_ns: u64 },
}

/// Turns the outcome of reading one file into the change to apply, and counts it.
fn stage(
    prepared: Result<Prepared, Skipped>,
    index: &Index,
    report: &mut ReconcileReport,
    changes: &mut Vec<FileChange>,
    skipped: &mut Vec<Skipped>,
) {
    match prepared {
        Ok(Prepared::Changed(file)) => {
            if file.lossy {
                report.lossy.push(file.path.clone());
            }
            report.files_indexed += 1;
            changes.push(FileChange::Upsert(file));
        }
        Ok(Prepared::Touched { path, size, mtime_ns }) => {
            report.files_touched += 1;
            changes.push(FileChange::Touch { path, size, mtime_ns });
        }
        Err(skip) => {
            // A file that can no longer be read must not keep stale chunks.
            if index.manifest().files.contains_key(&skip.path) {
                changes.push(FileChange::Remove { path: skip.path.clone() });
                report.files_removed += 1;
            }
            skipped.push(skip);
        }
    }
}

fn prepare(file: &SourceFile, config: &Config, index: &Index) -> Result<Prepared, Skipped> {
    let skip = |reason: SkipReason| Skipped { path: file.rel_path.clone(), reason };
    let read = workspace::read(file, config.walk.max_file_bytes).map_err(skip)?;
    if let Some(entry) = index.manifest().files.get(&file.rel_path)
        && entry.content_hash == read.content_hash
    {
        return Ok(Prepared::Touched {
            path: file.rel_path.clone(),
            size: file.size,
            mtime_ns: file.mtime_ns,
        });
    }
    let file_name = file.rel_path.rsplit('/').next().unwrap_or(&file.rel_path);
    let kind = workspace::doc_kind(&file.rel_path);
    let doc = chunk::chunk_document(file_name, &read.text, kind, &config.chunk);
    let chunks = doc
        .chunks
        .into_iter()
        .map(|c| PreparedChunk {
            context: context::render_header(&config.context, &file.rel_path, &doc.title, &c.heading_path),
            chunk: c,
        })
        .collect();
    Ok(Prepared::Changed(PreparedFile {
        path: file.rel_path.clone(),
        size: file.size,
        mtime_ns: file.mtime_ns,
        content_hash: read.content_hash,
        lossy: read.lossy,
        title: doc.title,
        chunks,
        warnings: doc.warnings,
    }))
}
