//! The engine: one workspace, its configuration, embedder and index, and the operations the
//! CLI and the language server call — reconcile with the disk, search, show, status.
//!
//! The engine speaks plain data (paths, line numbers, strings); it knows nothing of LSP or
//! terminals.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::Serialize;

use crate::chunk::{self, ChunkConfig, ChunkStrategy};
use crate::config::{Config, ConfigProblem};
use crate::context;
use crate::index::{
    ApplyStats, ChunkRecord, FileChange, Index, IndexError, OpenMode, PreparedChunk, PreparedFile, Snapshot,
    SnippetUpdate,
};
use crate::providers::{EmbedError, Embedder, EmbedderIdentity};
use crate::search::{self, Expand, Hit, SearchConfig, SearchError, SearchRequest, expand};
use crate::snippets::cache::SnippetCache;
use crate::snippets::estimate::{self, Estimate};
use crate::snippets::generator::{self, Limits, Outcome, RunEnd, SnippetJob, Totals};
use crate::snippets::prompt::ChunkInput;
use crate::snippets::{SnippetSetup, SnippetSlot};
use crate::workspace::{self, SkipReason, Skipped, SourceFile};

/// Files read and chunked (in parallel) before their changes are applied.
const READ_BATCH: usize = 128;
/// Files applied between two commits of a long reconcile, so an interrupted cold index
/// keeps most of its work.
const CHECKPOINT_FILES: usize = 2_000;
/// A long reconcile also commits once this much time has passed since its last commit, so
/// that what it has done becomes searchable.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(5);
/// Chunks embedded between two checks of the clock when vectors are filled in late.
const FILL_BATCH: usize = 64;

/// Snippets that arrived are indexed in batches of this many, or
const SNIPPET_BATCH: usize = 256;
/// after this long, whichever comes first.
const SNIPPET_COMMIT: Duration = Duration::from_secs(1);

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
    /// Vectors filled in so far, after the texts were committed (a slow embedder).
    Embedding { done: usize, total: usize },
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
    /// The run was interrupted; what it did is committed, the rest is left for the next.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
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
    /// Commits so far (each save or batch of changes makes one).
    pub generation: u64,
    pub disk_bytes: u64,
    pub skipped: Vec<Skipped>,
    pub config_problems: Vec<String>,
    /// Why parts of the index were rebuilt when it was opened.
    pub notes: Vec<String>,
    /// LLM-written snippets, when they are on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippets: Option<SnippetStatus>,
}

/// What does not change while an engine is open: the workspace, its settings and models.
struct Setup {
    root: PathBuf,
    config: Config,
    config_problems: Vec<ConfigProblem>,
    embedder: Arc<dyn Embedder>,
    /// The snippet model, when snippets are on.
    snippets: Option<SnippetSetup>,
}

/// One workspace's engine: the only writer of its index.
pub struct Engine {
    setup: Arc<Setup>,
    index: Index,
    /// Set from another thread to make a running reconcile stop at its next batch.
    interrupt: Arc<AtomicBool>,
    /// Leave deferred vectors to [`Engine::fill_vectors`] instead of filling them at the
    /// end of a reconcile (a server fills them between other work).
    fill_later: bool,
    /// The snippet cache (writers with snippets on).
    snippet_cache: Option<Arc<SnippetCache>>,
    /// Chunks handed out by [`Engine::snippet_jobs`] whose outcome has not come back.
    snippets_in_flight: HashSet<u64>,
}

/// Snippets in an index, for `status`.
#[derive(Debug, Clone, Serialize)]
pub struct SnippetStatus {
    /// `provider/model@host`.
    pub model: String,
    pub mode: String,
    /// Chunks indexed with their snippet.
    pub done: usize,
    /// Chunks indexed with their header context alone, waiting for a snippet.
    pub pending: usize,
    pub max_calls: Option<u64>,
    pub max_run_tokens: Option<u64>,
    /// What writing the pending snippets would cost; filled by callers that ask for it
    /// ([`View::snippet_estimate`] counts tokens of every pending request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Estimate>,
}

/// How far [`Engine::write_snippets`] has come.
#[derive(Debug, Clone, Copy)]
pub struct SnippetProgress {
    /// Jobs answered (or failed) so far, of `total`.
    pub done: usize,
    pub total: usize,
    pub totals: Totals,
}

/// What [`Engine::write_snippets`] did.
#[derive(Debug, Clone, Serialize)]
pub struct SnippetRun {
    /// Calls and tokens, those spent before the run included.
    pub totals: Totals,
    pub end: RunEnd,
    /// Chunks re-indexed with their snippet.
    pub indexed: usize,
    /// Chunks still waiting (failed, over budget, or interrupted).
    pub waiting: usize,
}

/// What [`Engine::apply_snippets`] did.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct SnippetsApplied {
    /// Chunks re-indexed with their new snippet.
    pub indexed: usize,
    /// Chunks whose call failed or did not run: they wait for the next run.
    pub returned: usize,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("root", &self.setup.root).field("index", &self.index).finish()
    }
}

/// A read-only view of one commit of an engine's index, with the settings and model that
/// made it: what searches, hovers and status read. Cheap to clone and to send to another
/// thread; it never waits on the writer, which goes on indexing meanwhile.
#[derive(Clone)]
pub struct View {
    setup: Arc<Setup>,
    snapshot: Snapshot,
    index_dir: PathBuf,
    read_only: bool,
    other_writer: bool,
    notes: Vec<String>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View").field("root", &self.setup.root).field("snapshot", &self.snapshot).finish()
    }
}

/// A fingerprint of everything that shapes stored chunks and contexts.
fn pipeline_fingerprint(chunk: &ChunkConfig, config: &Config, embedder: &EmbedderIdentity) -> String {
    let mut fingerprint = format!(
        "v{PIPELINE_VERSION}:{:?}:{}:{}:{}",
        chunk.strategy, chunk.max_tokens, chunk.overlap_tokens, config.context.header_template
    );
    // Semantic breakpoints move with the threshold and with the model that embeds sentences.
    if chunk.strategy == ChunkStrategy::Semantic {
        fingerprint
            .push_str(&format!(":k={}:{}/{}", chunk.semantic_threshold, embedder.provider, embedder.model));
    }
    fingerprint
}

impl Engine {
    /// Opens the engine of `root` with its `situate.toml`, or the given settings file
    /// (problems are kept for status).
    pub fn open(root: &Path, config_file: Option<&Path>, mode: OpenMode) -> Result<Engine, EngineError> {
        let loaded = match config_file {
            Some(file) => Config::load_file(file),
            None => Config::load(root),
        };
        let embedder = crate::providers::build(&loaded.config.embedding)?;
        Engine::open_with(root, loaded.config, loaded.problems, embedder, mode)
    }

    /// Opens the engine with an explicit configuration and embedder. In `Write` mode, when
    /// another process holds the writer lock, the index is opened read-only instead.
    pub fn open_with(
        root: &Path,
        config: Config,
        mut config_problems: Vec<ConfigProblem>,
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
        let pipeline = pipeline_fingerprint(&config.chunk, &config, &identity);
        let index = match Index::open(&index_dir, &identity, &pipeline, mode)? {
            Some(index) => index,
            None => {
                tracing::warn!(index = %index_dir.display(), "another process is writing this index; opening it read-only");
                Index::open(&index_dir, &identity, &pipeline, OpenMode::ReadOnly)?
                    .ok_or(IndexError::ReadOnly)?
            }
        };
        let mut snippets = match &config.snippets {
            Some(c) => match SnippetSetup::from_config(c) {
                Ok(setup) => Some(setup),
                Err(e) => {
                    config_problems.push(snippet_problem(format!("{e}; snippets are off")));
                    None
                }
            },
            None => None,
        };
        let mut snippet_cache = None;
        if snippets.is_some() && !index.is_read_only() {
            match SnippetCache::open(index.dir()) {
                Ok(cache) => snippet_cache = Some(Arc::new(cache)),
                Err(e) => {
                    let path = index.dir().join(crate::snippets::cache::FILE_NAME);
                    config_problems.push(snippet_problem(format!(
                        "cannot open the snippet cache {}: {e}; snippets are off",
                        path.display()
                    )));
                    snippets = None;
                }
            }
        }
        let setup = Arc::new(Setup { root, config, config_problems, embedder, snippets });
        Ok(Engine {
            setup,
            index,
            interrupt: Arc::default(),
            fill_later: false,
            snippet_cache,
            snippets_in_flight: HashSet::new(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.setup.root
    }

    pub fn config(&self) -> &Config {
        &self.setup.config
    }

    /// A flag that, once set, makes a running [`Engine::reconcile`] commit what it has
    /// done and return early (with `interrupted` in its report).
    pub fn interrupt_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.interrupt)
    }

    /// With `true`, a reconcile with a slow embedder commits the texts and leaves their
    /// vectors to [`Engine::fill_vectors`], called by its owner between other work.
    pub fn fill_vectors_later(&mut self, later: bool) {
        self.fill_later = later;
    }

    /// Chunks committed without a vector, waiting for [`Engine::fill_vectors`].
    pub fn vectors_to_fill(&self) -> usize {
        self.index.deferred_count()
    }

    /// Embeds up to `max` of the chunks committed without a vector and commits them.
    /// Returns how many were embedded.
    pub fn fill_vectors(&mut self, max: usize) -> Result<usize, EngineError> {
        let embedded = self.index.fill_deferred(self.setup.embedder.as_ref(), max)?;
        self.index.commit()?;
        Ok(embedded)
    }

    /// The last commit, for readers on any thread.
    pub fn view(&self) -> View {
        View {
            setup: Arc::clone(&self.setup),
            snapshot: self.index.snapshot(),
            index_dir: self.index.dir().to_path_buf(),
            read_only: self.index.is_read_only(),
            other_writer: self.index.other_writer(),
            notes: self.index.notes().to_vec(),
        }
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
        // A slow embedder must not hold back the texts: they are committed first and their
        // vectors filled in afterwards, with commits along the way.
        let defer = !self.setup.embedder.embeds_fast();
        // Vectors missing since the last run (a model change, a crash) come first in the
        // queue; they are counted as refilled.
        let mut refill = 0;
        if defer {
            refill = self.index.defer_missing_vectors()?;
        } else {
            report.vectors_refilled = self.index.fill_missing_vectors(self.setup.embedder.as_ref())?;
        }

        self.check_snippets()?;

        let walked = workspace::walk(&self.setup.root, &self.setup.config.walk, Some(self.index.dir()));
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
            self.index.apply_with(std::mem::take(&mut changes), self.setup.embedder.as_ref(), defer)?;
        }

        let total = to_read.len();
        let mut since_checkpoint = 0;
        let mut last_commit = Instant::now();
        for (n, batch) in to_read.chunks(READ_BATCH).enumerate() {
            let prepared: Vec<Result<Prepared, Skipped>> =
                batch.par_iter().map(|f| self.prepare(f)).collect();
            for p in prepared {
                stage(p, &self.index, &mut report, &mut changes, &mut skipped);
            }
            since_checkpoint += batch.len();
            let stats =
                self.index.apply_with(std::mem::take(&mut changes), self.setup.embedder.as_ref(), defer)?;
            report.add(stats);
            if since_checkpoint >= CHECKPOINT_FILES || last_commit.elapsed() >= CHECKPOINT_INTERVAL {
                self.index.commit()?;
                since_checkpoint = 0;
                last_commit = Instant::now();
            }
            progress(Progress::Indexing { done: ((n + 1) * READ_BATCH).min(total), total });
            if self.interrupt.swap(false, Ordering::Relaxed) {
                report.interrupted = true;
                break;
            }
        }
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        for s in &skipped {
            tracing::info!(path = %s.path, "skipped: {}", s.reason);
        }
        report.skipped = skipped.clone();
        self.index.set_skipped(skipped);
        self.index.commit()?;
        if defer && !report.interrupted && !self.fill_later {
            let embedded_before = report.vectors_embedded;
            self.fill_deferred(&mut report, progress)?;
            let filled = report.vectors_embedded - embedded_before;
            report.vectors_refilled += filled.min(refill);
            report.vectors_embedded -= filled.min(refill);
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Embeds the chunks committed without vectors, committing every few seconds so that
    /// searches see the vectors as they come; stops early when interrupted.
    fn fill_deferred(
        &mut self,
        report: &mut ReconcileReport,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), EngineError> {
        let total = self.index.deferred_count();
        let mut done = 0;
        let mut last_commit = Instant::now();
        while self.index.deferred_count() > 0 {
            let embedded = self.index.fill_deferred(self.setup.embedder.as_ref(), FILL_BATCH)?;
            report.vectors_embedded += embedded;
            done = (total - self.index.deferred_count()).max(done);
            progress(Progress::Embedding { done, total });
            if last_commit.elapsed() >= CHECKPOINT_INTERVAL {
                self.index.commit()?;
                last_commit = Instant::now();
            }
            if self.interrupt.swap(false, Ordering::Relaxed) {
                report.interrupted = true;
                break;
            }
        }
        self.index.commit()?;
        Ok(())
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
            let in_index_dir = index_dir.as_ref().is_some_and(|d| self.setup.root.join(&rel).starts_with(d));
            let selected =
                !in_index_dir && workspace::is_selected(&self.setup.root, &rel, &self.setup.config.walk);
            let file = match workspace::stat(&self.setup.root, &rel) {
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
                } else if !self.setup.root.join(&rel).exists() {
                    // A folder that is gone takes its files with it.
                    let prefix = format!("{}/", rel.trim_end_matches('/'));
                    for path in self.index.manifest().files.keys().filter(|p| p.starts_with(&prefix)) {
                        changes.push(FileChange::Remove { path: path.clone() });
                        report.files_removed += 1;
                    }
                }
                continue;
            };
            report.files_seen += 1;
            if self.index.manifest().is_unchanged(&file.rel_path, file.size, file.mtime_ns) {
                report.files_unchanged += 1;
                continue;
            }
            let prepared = self.prepare(&file);
            stage(prepared, &self.index, &mut report, &mut changes, &mut skipped);
        }
        let stats = self.index.apply(changes, self.setup.embedder.as_ref())?;
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

    /// Reads and chunks one file; each chunk gets its header and, when snippets are on, its
    /// snippet from the cache or a mark that it waits for one.
    fn prepare(&self, file: &SourceFile) -> Result<Prepared, Skipped> {
        let config = &self.setup.config;
        let skip = |reason: SkipReason| Skipped { path: file.rel_path.clone(), reason };
        let read = workspace::read(file, config.walk.max_file_bytes).map_err(skip)?;
        if let Some(entry) = self.index.manifest().files.get(&file.rel_path)
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
        // Only the `semantic` strategy embeds sentences, with the index's own model.
        let embedder = self.setup.embedder.as_ref();
        let sentences = |texts: &[&str]| embedder.embed(texts).map_err(|e| e.to_string());
        let doc = chunk::chunk_document_with(file_name, &read.text, kind, &config.chunk, &sentences);
        let chunks = doc
            .chunks
            .into_iter()
            .map(|c| {
                let input = ChunkInput {
                    path: &file.rel_path,
                    title: &doc.title,
                    heading_path: &c.heading_path,
                    text: &c.text,
                };
                PreparedChunk {
                    context: context::render_header(
                        &config.context,
                        &file.rel_path,
                        &doc.title,
                        &c.heading_path,
                    ),
                    snippet: self.snippet_slot(&input),
                    chunk: c,
                }
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

    /// A chunk's snippet: off, in the cache, or still to be written.
    fn snippet_slot(&self, input: &ChunkInput) -> SnippetSlot {
        let (Some(setup), Some(cache)) = (&self.setup.snippets, &self.snippet_cache) else {
            return SnippetSlot::Off;
        };
        let key = setup.key(input);
        match cache.get(key) {
            Some(snippet) => SnippetSlot::Ready { key, snippet },
            None => SnippetSlot::Missing { key },
        }
    }

    /// After a change of snippet settings (or when they are first turned on), checks every
    /// chunk's snippet against them: a chunk whose snippet is in the cache under its new key
    /// gets it now, the others are marked as waiting. Does nothing while the settings are
    /// those of the last check.
    fn check_snippets(&mut self) -> Result<(), EngineError> {
        let (Some(setup), Some(cache)) = (&self.setup.snippets, &self.snippet_cache) else {
            return Ok(());
        };
        let identity = setup.identity();
        if self.index.manifest().snippet_identity == identity {
            return Ok(());
        }
        let mut updates = Vec::new();
        let mut waiting = HashSet::new();
        for record in self.index.committed_records()? {
            let key = setup.key(&chunk_input(&record));
            if record.snippet_key == key {
                continue;
            }
            match cache.get(key) {
                Some(snippet) => updates.push(SnippetUpdate { chunk_id: record.id, key, snippet }),
                None => {
                    waiting.insert(record.id);
                }
            }
        }
        tracing::info!(
            from_cache = updates.len(),
            waiting = waiting.len(),
            "snippet settings changed: snippets checked again"
        );
        self.index.set_snippets(
            &updates,
            self.setup.embedder.as_ref(),
            !self.setup.embedder.embeds_fast(),
            &|_, _| true,
        )?;
        self.index.set_snippet_pending(&waiting, true);
        self.index.set_snippet_identity(&identity);
        self.index.commit()?;
        Ok(())
    }

    /// Whether snippets are on (and this engine can write them).
    pub fn snippets_on(&self) -> bool {
        self.setup.snippets.is_some() && self.snippet_cache.is_some()
    }

    /// The snippet model and settings, when snippets are on.
    pub fn snippet_setup(&self) -> Option<&SnippetSetup> {
        self.setup.snippets.as_ref()
    }

    /// Committed chunks waiting for a snippet and not handed out yet.
    pub fn snippets_waiting(&self) -> usize {
        if !self.snippets_on() {
            return 0;
        }
        self.index.manifest().snippets_pending().filter(|id| !self.snippets_in_flight.contains(id)).count()
    }

    /// Hands out the jobs of up to about `max` chunks waiting for a snippet, whole files at
    /// a time and in file order (so that requests about one document follow each other).
    /// Chunks whose snippet is in the cache by now are indexed at once instead. Each job's
    /// outcome must come back through [`Engine::apply_snippets`].
    pub fn snippet_jobs(&mut self, max: usize) -> Result<Vec<SnippetJob>, EngineError> {
        let (Some(setup), Some(cache)) = (self.setup.snippets.clone(), self.snippet_cache.clone()) else {
            return Ok(Vec::new());
        };
        self.check_snippets()?;
        let snapshot = self.index.snapshot();
        let mut by_file: Vec<(String, HashSet<u64>)> = Vec::new();
        let mut taken = 0;
        for (path, entry) in &self.index.manifest().files {
            if taken >= max {
                break;
            }
            let ids: HashSet<u64> = entry
                .chunks
                .iter()
                .filter(|c| c.snippet_pending && !self.snippets_in_flight.contains(&c.id))
                .map(|c| c.id)
                .collect();
            if !ids.is_empty() {
                taken += ids.len();
                by_file.push((path.clone(), ids));
            }
        }
        let mut jobs = Vec::new();
        let mut cached = Vec::new();
        for (path, ids) in by_file {
            let records = snapshot.file_records(&path)?;
            let inputs: Vec<ChunkInput> = records.iter().map(chunk_input).collect();
            for (i, record) in records.iter().enumerate() {
                if !ids.contains(&record.id) {
                    continue;
                }
                let key = setup.key(&inputs[i]);
                match cache.get(key) {
                    Some(snippet) => cached.push(SnippetUpdate { chunk_id: record.id, key, snippet }),
                    None => {
                        self.snippets_in_flight.insert(record.id);
                        jobs.push(SnippetJob {
                            chunk_id: record.id,
                            key,
                            path: path.clone(),
                            request: setup.request(&inputs, i),
                        });
                    }
                }
            }
        }
        if !cached.is_empty() {
            self.index.set_snippets(
                &cached,
                self.setup.embedder.as_ref(),
                !self.setup.embedder.embeds_fast(),
                &|_, _| true,
            )?;
            self.index.commit()?;
        }
        Ok(jobs)
    }

    /// Takes back the outcomes of snippet jobs: snippets written go to the cache (made
    /// durable first) and into the index, committed; chunks whose call failed or did not
    /// run keep their header context and wait for the next run.
    pub fn apply_snippets(&mut self, outcomes: Vec<Outcome>) -> Result<SnippetsApplied, EngineError> {
        let mut applied = SnippetsApplied::default();
        let mut updates = Vec::new();
        for outcome in outcomes {
            self.snippets_in_flight.remove(&outcome.chunk_id());
            match outcome {
                Outcome::Written { chunk_id, key, snippet, .. } => {
                    if let Some(cache) = &self.snippet_cache {
                        cache.put(key, &snippet).map_err(|e| IndexError::Io {
                            path: cache.path().display().to_string(),
                            source: e,
                        })?;
                    }
                    updates.push(SnippetUpdate { chunk_id, key, snippet });
                }
                Outcome::Failed { .. } | Outcome::NotRun { .. } => applied.returned += 1,
            }
        }
        if updates.is_empty() {
            return Ok(applied);
        }
        if let Some(cache) = &self.snippet_cache {
            cache
                .sync()
                .map_err(|e| IndexError::Io { path: cache.path().display().to_string(), source: e })?;
        }
        let defer = !self.setup.embedder.embeds_fast();
        // A snippet asked for under other settings (a run that outlived a change of them)
        // goes to the cache, but not into the index.
        let setup = self.setup.snippets.as_ref();
        let wanted = |r: &ChunkRecord, key: u128| setup.is_some_and(|s| s.key(&chunk_input(r)) == key);
        applied.indexed = self.index.set_snippets(&updates, self.setup.embedder.as_ref(), defer, &wanted)?;
        self.index.commit()?;
        Ok(applied)
    }

    /// Writes the snippets of every chunk waiting for one, within `limits` (with `spent`
    /// already used from them), committing every second or so as they arrive. Stops early
    /// when the interrupt flag is set or the model keeps failing; what arrived is kept.
    pub fn write_snippets(
        &mut self,
        limits: Limits,
        spent: Totals,
        progress: &mut dyn FnMut(&SnippetProgress),
    ) -> Result<SnippetRun, EngineError> {
        let Some(setup) = self.setup.snippets.clone() else {
            return Ok(SnippetRun { totals: spent, end: RunEnd::Finished, indexed: 0, waiting: 0 });
        };
        let jobs = self.snippet_jobs(usize::MAX)?;
        let mut state = SnippetProgress { done: 0, total: jobs.len(), totals: spent };
        progress(&state);
        let interrupt = Arc::clone(&self.interrupt);
        let mut buffer = Vec::new();
        let mut last_apply = Instant::now();
        let mut indexed = 0;
        let mut failure: Option<EngineError> = None;
        let end = generator::run(&setup, jobs, limits, spent, &interrupt, &mut |outcome| {
            state.totals.count(&outcome);
            if !matches!(outcome, Outcome::NotRun { .. }) {
                state.done += 1;
            }
            buffer.push(outcome);
            if failure.is_none() && (buffer.len() >= SNIPPET_BATCH || last_apply.elapsed() >= SNIPPET_COMMIT)
            {
                match self.apply_snippets(std::mem::take(&mut buffer)) {
                    Ok(applied) => indexed += applied.indexed,
                    Err(e) => {
                        // Stop asking; what is in the cache is not lost.
                        interrupt.store(true, Ordering::Relaxed);
                        failure = Some(e);
                    }
                }
                last_apply = Instant::now();
            }
            progress(&state);
        });
        if let Some(e) = failure {
            return Err(e);
        }
        indexed += self.apply_snippets(buffer)?.indexed;
        if matches!(end, RunEnd::Interrupted) {
            self.interrupt.store(false, Ordering::Relaxed);
        }
        let waiting = self.snippets_waiting();
        Ok(SnippetRun { totals: state.totals, end, indexed, waiting })
    }

    /// What writing the snippets still missing would cost, counted before any call.
    pub fn snippet_estimate(&self) -> Result<Estimate, EngineError> {
        self.view().snippet_estimate()
    }

    /// Runs a search on the last commit.
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, EngineError> {
        self.view().search(request)
    }

    /// See [`View::chunks_at`].
    pub fn chunks_at(&self, path: &str, line: Option<u32>) -> Result<Vec<ChunkRecord>, EngineError> {
        self.view().chunks_at(path, line)
    }

    /// Files, chunks, model and health of the index.
    pub fn status(&self) -> Status {
        self.view().status()
    }

    /// Problems found in the configuration (the defaults were used for those keys).
    pub fn config_problems(&self) -> &[ConfigProblem] {
        &self.setup.config_problems
    }

    /// `path` relative to the workspace root, `/`-separated; `None` when outside it.
    pub fn relative(&self, path: &str) -> Option<String> {
        relative_to(&self.setup.root, path)
    }
}

impl View {
    pub fn root(&self) -> &Path {
        &self.setup.root
    }

    pub fn config(&self) -> &Config {
        &self.setup.config
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Runs a search.
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<Hit>, EngineError> {
        self.search_with(&self.setup.config.search, request)
    }

    /// Runs a search with other ranking settings than the configured ones (an evaluation
    /// compares settings this way), widening the hits as `request.expand` asks.
    pub fn search_with(
        &self,
        config: &SearchConfig,
        request: &SearchRequest,
    ) -> Result<Vec<Hit>, EngineError> {
        let embedder = self.setup.embedder.as_ref();
        if request.expand == Expand::None {
            return Ok(search::search(&self.snapshot, embedder, config, request)?);
        }
        let pool = SearchRequest { limit: expand::pool_size(request.limit), ..request.clone() };
        let hits = search::search(&self.snapshot, embedder, config, &pool)?;
        let mut files = expand::FileSource::new(&self.snapshot, &self.setup.root);
        let settings = config.expand_settings(request.expand);
        Ok(expand::expand(hits, request.limit, &settings, &mut files)?)
    }

    /// The indexed chunks of a file (workspace-relative or absolute path), or only those
    /// whose line range holds `line`.
    pub fn chunks_at(&self, path: &str, line: Option<u32>) -> Result<Vec<ChunkRecord>, EngineError> {
        let rel = self.relative(path).ok_or_else(|| EngineError::NotIndexed { path: path.to_string() })?;
        if !self.snapshot.manifest().files.contains_key(&rel) {
            return Err(EngineError::NotIndexed { path: path.to_string() });
        }
        let records = self.snapshot.file_records(&rel)?;
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

    /// The chunks most related to `of`, leaving out itself and its neighbours (the chunks
    /// just before and after it in its file).
    pub fn similar(&self, of: &ChunkRecord, limit: usize) -> Result<Vec<Hit>, EngineError> {
        let neighbour = |r: &ChunkRecord| r.path == of.path && r.ordinal.abs_diff(of.ordinal) <= 1;
        Ok(search::similar(&self.snapshot, &self.setup.config.search, of, limit, neighbour)?)
    }

    /// Files, chunks, model and health of the index.
    pub fn status(&self) -> Status {
        let manifest = self.snapshot.manifest();
        Status {
            workspace: self.setup.root.display().to_string(),
            index_dir: self.index_dir.display().to_string(),
            read_only: self.read_only,
            other_writer: self.other_writer,
            files: manifest.files.len(),
            chunks: manifest.chunk_count(),
            vectors: self.snapshot.vector_count(),
            embedder: self.setup.embedder.identity(),
            last_commit: manifest.committed_at,
            generation: manifest.generation,
            disk_bytes: crate::index::dir_bytes(&self.index_dir),
            skipped: manifest.skipped.clone(),
            config_problems: self.setup.config_problems.iter().map(ToString::to_string).collect(),
            notes: self.notes.clone(),
            snippets: self.setup.snippets.as_ref().map(|setup| {
                let pending = manifest.snippets_pending().count();
                SnippetStatus {
                    model: setup.model_label.clone(),
                    mode: setup.config.mode.to_string(),
                    done: manifest.chunk_count() - pending,
                    pending,
                    max_calls: setup.config.max_calls,
                    max_run_tokens: setup.config.max_run_tokens,
                    estimate: None,
                }
            }),
        }
    }

    /// What writing the snippets of the chunks still waiting would cost: the requests are
    /// built and their tokens counted, nothing is sent.
    pub fn snippet_estimate(&self) -> Result<Estimate, EngineError> {
        let Some(setup) = &self.setup.snippets else { return Ok(Estimate::default()) };
        let mut requests = Vec::new();
        for (path, entry) in &self.snapshot.manifest().files {
            if !entry.chunks.iter().any(|c| c.snippet_pending) {
                continue;
            }
            let records = self.snapshot.file_records(path)?;
            let inputs: Vec<ChunkInput> = records.iter().map(chunk_input).collect();
            for (i, c) in entry.chunks.iter().enumerate() {
                if c.snippet_pending && i < inputs.len() {
                    requests.push(setup.request(&inputs, i));
                }
            }
        }
        Ok(estimate::estimate(&requests))
    }

    /// `path` relative to the workspace root, `/`-separated; `None` when outside it.
    pub fn relative(&self, path: &str) -> Option<String> {
        relative_to(&self.setup.root, path)
    }
}

/// `path` (absolute, or relative to `root`) as a `/`-separated path under `root`.
fn relative_to(root: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    if p.is_absolute() {
        let canonical = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        workspace::relative_path(root, &canonical)
    } else {
        let normal = path.trim_start_matches("./").replace('\\', "/");
        if normal.split('/').any(|s| s == "..") { None } else { Some(normal) }
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

/// The context inputs of a stored chunk.
fn chunk_input(r: &ChunkRecord) -> ChunkInput<'_> {
    ChunkInput { path: &r.path, title: &r.title, heading_path: &r.heading_path, text: &r.text }
}

fn snippet_problem(message: String) -> ConfigProblem {
    ConfigProblem { key: "snippets".to_string(), message }
}
