//! The engine: one workspace, its configuration, embedder and index, and the operations the
//! CLI and the language server call — reconcile with the disk, search, show, status.
//!
//! The engine speaks plain data (paths, line numbers, strings); it knows nothing of LSP or
//! terminals.

mod background;
mod estimates;
mod lookup;
mod report;
mod snippets;
mod sync;
mod team;
mod unshared;
mod view;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::chunk::{ChunkConfig, ChunkStrategy};
use crate::config::{Config, ConfigProblem, Effect};
pub use crate::index::{ChunkRecord, OpenMode};
use crate::index::{Index, IndexError};
use crate::providers::{EmbedError, Embedder, EmbedderIdentity};
use crate::search::{Hit, SearchError, SearchRequest};
use crate::snippets::SnippetSetup;
use crate::snippets::cache::SnippetCache;
use crate::snippets::estimate::Estimate;
use crate::team::Team;
use crate::workspace;
pub use lookup::LookupError;
pub use report::{
    LanguageChunks, Progress, ReconcileReport, SnippetProgress, SnippetRun, SnippetStatus, SnippetsApplied,
    Stale, Status, TeamReport,
};
pub use snippets::SnippetRunner;
pub use team::Filled;
pub use view::{Freshness, View};

/// Bumped when chunking or context code changes what it produces for the same input (or
/// how a file's bytes are decoded, what a chunk records of its file, such as the language
/// detected in its document, or the text embedded for it: a chunk whose embedded text
/// changed is embedded again, the others keep their vectors).
const PIPELINE_VERSION: u32 = 17;

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
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// A settings file named explicitly could not be read.
    #[error("{problem}")]
    SettingsUnreadable { problem: String },
    /// The settings file could not be used, and writing the index with the defaults in its
    /// place could take in files that it leaves out.
    #[error(
        "{problem}; nothing is indexed until the file is fixed, since the default settings \
         would take in files that it may leave out"
    )]
    SettingsUnusable { problem: String },
    #[error(
        "the index of {folder} was damaged ({problem}); it is being rebuilt from the files and answers again when that is done"
    )]
    Rebuilding { folder: String, problem: String },
}

impl EngineError {
    /// The index has never been committed: a read-only open while another process creates
    /// it, or after that process stopped before its first commit. Opening again later
    /// finds the index, or the writer lock free.
    pub fn is_missing_index(&self) -> bool {
        matches!(self, EngineError::Index(IndexError::Missing { .. } | IndexError::BeingCreated { .. }))
    }

    /// The index's own files could not be read as they were written: cut short, rewritten
    /// or removed under the process (a sync tool, a disk fault, another program). Opening
    /// the index again finds the damage and rebuilds what it holds. A failing machine (no
    /// space, no permission) is not damage ([`IndexError::is_damage`]).
    pub fn is_damage(&self) -> bool {
        let index = match self {
            EngineError::Index(e) | EngineError::Search(SearchError::Index(e)) => e,
            _ => return false,
        };
        index.is_damage()
    }
}

/// When the last commit on disk was made; compared, never read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommitStamp(Option<std::time::SystemTime>);

/// What does not change while an engine is open: the workspace, its settings and models.
struct Setup {
    root: PathBuf,
    config: Config,
    config_problems: Vec<ConfigProblem>,
    embedder: Arc<dyn Embedder>,
    /// The built-in model, whose quick vectors stand in for pending ones when `embedder` is
    /// slow.
    quick: Option<Arc<dyn Embedder>>,
    /// The snippet model, when snippets are on.
    snippets: Option<SnippetSetup>,
    /// The team cache, for a writer whose settings name one.
    team: Option<Arc<Team>>,
    /// The snippet estimate of each file, as last counted, for every view of this engine.
    estimates: estimates::EstimateMemo,
}

/// What becomes of the vectors a reconcile with a slow embedder leaves pending (its texts
/// are committed first, so that they are searchable at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingVectors {
    /// Filled at the end of the reconcile.
    FilledNow,
    /// Queued for [`Engine::fill_pending_vectors`], which the owner calls between other
    /// work (a server).
    Queued,
    /// Left to a later process: this one indexes texts and stops. Nothing is queued, so
    /// the chunks without a vector are not even listed, which at a million chunks is a
    /// good part of a one-file update.
    Left,
}

/// One workspace's engine: the only writer of its index.
pub struct Engine {
    setup: Arc<Setup>,
    index: Index,
    /// Set from another thread to make a running reconcile stop at its next batch.
    interrupt: Arc<AtomicBool>,
    /// When a reconcile with a slow embedder gets the vectors it leaves pending.
    pending_vectors: PendingVectors,
    /// The snippet cache (writers with snippets on).
    snippet_cache: Option<Arc<SnippetCache>>,
    /// Chunks handed out by [`Engine::snippet_jobs`] whose outcome has not come back.
    snippets_in_flight: snippets::InFlight,
    /// Where a fill with the team cache is (writers with a team cache and a slow model).
    team_fill: Option<team::TeamFill>,
    /// How long the last commit of a fill's step took ([`Engine::fill_step_size`]).
    fill_commit_cost: std::time::Duration,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("root", &self.setup.root).field("index", &self.index).finish()
    }
}

/// A fingerprint of everything that shapes stored chunks and contexts.
fn pipeline_fingerprint(chunk: &ChunkConfig, config: &Config, embedder: &EmbedderIdentity) -> String {
    let mut fingerprint = format!(
        "v{PIPELINE_VERSION}:a{}:{:?}:{}:{}:{}:{}",
        crate::analysis::VERSION,
        chunk.strategy,
        chunk.max_tokens,
        chunk.overlap_tokens,
        config.context.header_template,
        config.context.header_fields.join(",")
    );
    if let Some(language) = &chunk.language {
        fingerprint.push_str(&format!(":lang={language}"));
    }
    // A file neither UTF-8 nor UTF-16 is read again in the encoding now named.
    if config.walk.encoding != workspace::Legacy::Guessed {
        fingerprint.push_str(&format!(":enc={}", config.walk.encoding.name()));
    }
    // Semantic breakpoints move with the threshold and with the model that embeds sentences.
    if chunk.strategy == ChunkStrategy::Semantic {
        fingerprint
            .push_str(&format!(":k={}:{}/{}", chunk.semantic_threshold, embedder.provider, embedder.model));
    }
    fingerprint
}

/// The built-in static model, when `embedder` is slow enough to leave vectors pending.
fn quick_model_for(embedder: &dyn Embedder) -> Result<Option<Arc<dyn Embedder>>, EngineError> {
    if embedder.embeds_fast() {
        return Ok(None);
    }
    Ok(Some(Arc::new(crate::providers::static_model::StaticEmbedder::builtin()?)))
}

impl Engine {
    /// Opens the engine of `root` with its `situate.toml`, or the given settings file
    /// (problems are kept for status). A settings file that cannot be used is an error when
    /// the index is to be written, and so is a `config_file` that cannot be read.
    pub fn open(root: &Path, config_file: Option<&Path>, mode: OpenMode) -> Result<Engine, EngineError> {
        let loaded = match config_file {
            Some(file) => Config::load_file(file),
            None => Config::load(root),
        };
        // A file that cannot be used is never replaced by the defaults where that would
        // change the index: they select files its `exclude` may have left out.
        if let Some(problem) = loaded.unusable() {
            if config_file.is_some() && problem.effect == Effect::Unreadable {
                return Err(EngineError::SettingsUnreadable { problem: problem.to_string() });
            }
            if mode == OpenMode::Write {
                return Err(EngineError::SettingsUnusable { problem: problem.to_string() });
            }
        }
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
        let opening = std::time::Instant::now();
        let identity = embedder.identity();
        let pipeline = pipeline_fingerprint(&config.chunk, &config, &identity);
        let mut index = match Index::open(&index_dir, &identity, &pipeline, mode)? {
            Some(index) => index,
            None => {
                // Each caller says so in its own words (a notice, a status phase, a line on
                // stderr), naming the writer: the log only records it.
                tracing::info!(index = %index_dir.display(), "another process is writing this index; opening it read-only");
                Index::open(&index_dir, &identity, &pipeline, OpenMode::ReadOnly)?
                    .ok_or(IndexError::ReadOnly)?
            }
        };
        // A slow model's vectors come late; the built-in model's stand in for them meanwhile.
        tracing::debug!(ms = opening.elapsed().as_millis() as u64, "index opened");
        let quick = quick_model_for(embedder.as_ref())?;
        tracing::debug!(ms = opening.elapsed().as_millis() as u64, "quick model ready");
        index.set_quick_embedder(quick.clone())?;
        tracing::debug!(ms = opening.elapsed().as_millis() as u64, "quick vectors loaded");
        index.stand_in_for_vectorless()?;
        tracing::debug!(ms = opening.elapsed().as_millis() as u64, "stand-ins ready");
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
        let team = match config.team.as_ref().filter(|_| !index.is_read_only()) {
            Some(c) => match Team::new(c) {
                Ok(team) => Some(Arc::new(team)),
                Err(e) => {
                    config_problems.push(ConfigProblem::key("team", e.to_string()));
                    None
                }
            },
            None => None,
        };
        let team_fill = team
            .as_ref()
            .filter(|_| quick.is_some())
            .map(|t| team::TeamFill::new(Arc::clone(t), embedder.as_ref(), &index_dir));
        let estimates = estimates::EstimateMemo::new(&pipeline, snippets.as_ref().map(|s| &s.config));
        let setup =
            Arc::new(Setup { root, config, config_problems, embedder, quick, snippets, team, estimates });
        Ok(Engine {
            setup,
            index,
            interrupt: Arc::default(),
            pending_vectors: PendingVectors::FilledNow,
            snippet_cache,
            snippets_in_flight: snippets::InFlight::default(),
            team_fill,
            fill_commit_cost: std::time::Duration::ZERO,
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

    /// The folder the index lives in.
    pub fn index_dir(&self) -> &Path {
        self.index.dir()
    }

    /// Why parts of the index were rebuilt or repaired when it was opened.
    pub fn notes(&self) -> &[String] {
        self.index.notes()
    }

    /// Who writes the index when this engine only reads it, for a message: displayed as
    /// "an editor's language server (`situate lsp`, process 1234)", or "another situate
    /// process" when the holder did not say; [`OtherWriter::meanwhile`] says what to do.
    pub fn other_writer(&self) -> OtherWriter {
        OtherWriter(self.index.writer_holder())
    }

    /// Whether no process holds the index's writer lock now: a read-only engine may be
    /// reopened to write.
    pub fn writer_free(&self) -> bool {
        self.index.writer_free()
    }

    /// A stamp of the last commit on disk, by whichever process made it; a read-only
    /// engine that sees it change reopens to read the new commit.
    pub fn commit_stamp(&self) -> CommitStamp {
        CommitStamp(self.index.disk_commit_stamp())
    }

    pub fn is_read_only(&self) -> bool {
        self.index.is_read_only()
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

/// `path` (absolute, or relative to `root`) as a `/`-separated path under `root`.
fn relative_to(root: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    if p.is_absolute() {
        let canonical = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        // A path through a symbolic link in the workspace resolves to a place outside it; as
        // written it is still the workspace's, selected or not by `follow_symlinks`.
        workspace::relative_path(root, &canonical).or_else(|| workspace::relative_path(root, p))
    } else {
        let normal = path.trim_start_matches("./").replace('\\', "/");
        if normal.split('/').any(|s| s == "..") { None } else { Some(normal) }
    }
}

fn snippet_problem(message: String) -> ConfigProblem {
    ConfigProblem::key("snippets", message)
}

/// The process that writes an index another one reads ([`Engine::other_writer`]), read
/// once from the lock file.
#[derive(Debug, Clone)]
pub struct OtherWriter(Option<crate::index::lock::Holder>);

impl OtherWriter {
    /// What a process that may not write the index can do meanwhile.
    pub fn meanwhile(&self) -> &'static str {
        self.0.as_ref().map_or("try again when it is done", |h| h.meanwhile())
    }
}

impl std::fmt::Display for OtherWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(holder) => f.write_str(&holder.describe()),
            None => f.write_str("another situate process"),
        }
    }
}
