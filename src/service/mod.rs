//! The language server's work on its workspace folders, without the protocol: each folder has
//! a writer thread that owns the folder's engine and applies jobs in the order they came
//! (saves and watcher events, reconciles, new settings, snippets), and publishes a [`View`]
//! and a [`FolderState`] that request handlers read without ever waiting for it.
//!
//! It knows nothing of LSP: what the editor should hear comes out as [`Notice`]s, and
//! answers to jobs as plain reports.

mod batch;
mod problems;
mod read;
mod snippet_queue;
mod takeover;
mod worker;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use crate::engine::{Engine, EngineError, ReconcileReport, View};
use crate::providers::{Embedder, EmbeddingConfig};
use crate::snippets::generator::{Outcome, RunEnd};
use crate::workspace;
pub use read::{FolderHits, LineReader, Passage, Related, line_before, saved_text, search};
pub use snippet_queue::{SnippetLive, SnippetState};
use worker::Worker;

/// The answer to a job that someone waits for.
pub type Reply = oneshot::Sender<Result<ReconcileReport, String>>;

/// Work for a folder's writer.
#[derive(Debug)]
pub enum Job {
    /// Re-read these files (absolute paths).
    Update {
        paths: Vec<String>,
        reply: Option<Reply>,
    },
    /// Walk the folder and bring the index in line with it.
    Reconcile {
        reply: Option<Reply>,
    },
    /// New editor settings: reopen with them and reconcile.
    Configure {
        settings: Option<serde_json::Value>,
    },
    /// Snippets that came back from the model (or failed), to index.
    Snippets(Vec<Outcome>),
    /// The snippet run of this number has ended.
    SnippetRunEnded {
        run: u32,
        end: RunEnd,
    },
    /// Start a new snippet budget period (and retry a stopped run now).
    NewSnippetPeriod,
    /// A read found the index's files damaged (`problem` says how): open it again, which
    /// rebuilds what is damaged, and reconcile.
    Heal {
        problem: String,
    },
    Stop,
}

/// What the writer tells the editor.
#[derive(Debug, Clone)]
pub enum Notice {
    ProgressBegin {
        token: String,
        title: String,
    },
    ProgressReport {
        token: String,
        message: String,
        percentage: u32,
    },
    ProgressEnd {
        token: String,
        message: String,
    },
    /// A problem the user must fix while work goes on; shown once, as a warning.
    Problem(String),
    /// Something that failed (the index cannot be opened, a run failed); shown once, as an
    /// error.
    Failure(String),
}

/// What the writer is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Opening,
    Indexing,
    Ready,
    /// Another process writes the index; this one serves it as that one commits.
    ReadOnly,
    /// The index could not be opened (see `errors`).
    Failed,
}

/// A folder's state as status reports it, beside its index.
#[derive(Debug, Clone)]
pub struct FolderState {
    pub phase: Phase,
    /// Files done and to do in the running reconcile.
    pub progress: Option<(usize, usize)>,
    /// Workspace-relative paths changed but not yet indexed.
    pub pending: BTreeSet<String>,
    /// Problems met so far (the latest last).
    pub errors: Vec<String>,
    pub last_run: Option<ReconcileReport>,
    /// Chunks searchable by their words whose vectors are still being computed.
    pub vectors_pending: usize,
    /// The snippet queue, when snippets are on.
    pub snippets: Option<SnippetLive>,
}

impl FolderState {
    /// Whether the folder's index is being built or rebuilt, so that answers come from an
    /// older commit.
    pub fn indexing(&self) -> bool {
        matches!(self.phase, Phase::Opening | Phase::Indexing)
    }

    /// Drops the pending paths that `view` has indexed as they now are on disk (and those
    /// that are gone and no longer indexed).
    fn prune_pending(&mut self, view: &View) {
        use crate::engine::Freshness;
        self.pending.retain(|rel| !matches!(view.freshness(rel), Freshness::Current | Freshness::Absent));
    }
}

/// Builds embedders once per process and shares them between folders.
#[derive(Default)]
pub struct Embedders {
    built: Mutex<Vec<(EmbeddingConfig, Arc<dyn Embedder>)>>,
}

impl Embedders {
    fn get(&self, config: &EmbeddingConfig) -> Result<Arc<dyn Embedder>, String> {
        let mut built = lock(&self.built);
        if let Some((_, e)) = built.iter().find(|(c, _)| c == config) {
            return Ok(Arc::clone(e));
        }
        let embedder = crate::providers::build(config).map_err(|e| e.to_string())?;
        built.push((config.clone(), Arc::clone(&embedder)));
        Ok(embedder)
    }
}

/// One workspace folder.
pub struct Folder {
    pub root: PathBuf,
    /// The settings file given for every folder (`situate lsp --config`), read instead of
    /// the folder's own `situate.toml`.
    pub config_file: Option<PathBuf>,
    view: RwLock<Option<View>>,
    state: Mutex<FolderState>,
    jobs: Mutex<Sender<Job>>,
    /// The running engine's interrupt flag, to cut a long reconcile short at shutdown.
    interrupt: Mutex<Option<Arc<AtomicBool>>>,
    /// The running snippet run's stop flag.
    snippet_stop: Mutex<Option<Arc<AtomicBool>>>,
    /// A rebuild after damage is asked for and not yet done, so that the reads that meet the
    /// same damage meanwhile ask once.
    healing: AtomicBool,
    /// When a search last read the folder, in milliseconds of [`clock`]: its writer's
    /// vector fill gives way for a while after it.
    last_read: AtomicU64,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// How long a folder's vector fill waits after a search read it: a person searching sends
/// the next query within it, and each then has both cores to itself. Measured at a million
/// chunks with e5's fill pending, 60 searches in a row: p50 / p90 27 / 43 ms with the wait,
/// 33 / 52 ms without (docs/performance.md).
pub const FILL_GIVES_WAY: Duration = Duration::from_secs(1);

/// Milliseconds since the first call in this process.
fn clock() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// How much longer something done at `last` (milliseconds of [`clock`]) holds off work that
/// waits `within` after it, at `now`.
fn wait_left(last: u64, now: u64, within: Duration) -> Option<Duration> {
    let until = last.saturating_add(within.as_millis() as u64);
    (last > 0 && until > now).then(|| Duration::from_millis(until - now))
}

impl std::fmt::Debug for Folder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Folder").field("root", &self.root).finish()
    }
}

impl Folder {
    /// Starts the folder's writer: it opens the index, publishes it, and reconciles it.
    pub fn start(
        root: PathBuf,
        config_file: Option<PathBuf>,
        settings: Option<serde_json::Value>,
        embedders: Arc<Embedders>,
        notices: UnboundedSender<Notice>,
    ) -> Arc<Folder> {
        let (tx, rx) = std::sync::mpsc::channel();
        let folder = Arc::new(Folder {
            root,
            config_file,
            view: RwLock::new(None),
            state: Mutex::new(FolderState {
                phase: Phase::Opening,
                progress: None,
                pending: BTreeSet::new(),
                errors: Vec::new(),
                last_run: None,
                vectors_pending: 0,
                snippets: None,
            }),
            jobs: Mutex::new(tx),
            interrupt: Mutex::new(None),
            snippet_stop: Mutex::new(None),
            healing: AtomicBool::new(false),
            last_read: AtomicU64::new(0),
            thread: Mutex::new(None),
        });
        let worker = Worker::new(Arc::clone(&folder), rx, notices, embedders, settings);
        let name = format!("situate-writer-{}", folder.name());
        let handle = std::thread::Builder::new().name(name).spawn(move || worker.run());
        match handle {
            Ok(h) => *lock(&folder.thread) = Some(h),
            Err(e) => folder.fail(format!("cannot start the indexing thread: {e}")),
        }
        folder
    }

    /// The settings file the folder reads: the one given for every folder, or its own.
    pub fn settings_file(&self) -> PathBuf {
        self.config_file.clone().unwrap_or_else(|| self.root.join(crate::config::CONFIG_FILE))
    }

    /// The folder's name, for messages.
    pub fn name(&self) -> String {
        self.root.file_name().map_or_else(|| self.root.display().to_string(), |n| n.to_string_lossy().into())
    }

    /// The last published view (`None` until the index has been opened).
    pub fn view(&self) -> Option<View> {
        self.view.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// How its files that are neither UTF-8 nor UTF-16 are read (the `encoding` setting of
    /// the open index; guessed until it is open).
    pub fn encoding(&self) -> crate::workspace::Legacy {
        self.view().map(|view| view.config().walk.encoding).unwrap_or_default()
    }

    /// The folder's state as of now.
    pub fn state(&self) -> FolderState {
        lock(&self.state).clone()
    }

    /// The folder's state and the commit published with it, as one pair. The writer swaps
    /// the view while it holds the state's lock, so a reader that holds it too never pairs
    /// a new state (the run ended: ready) with the view from before (no files yet).
    fn state_and_view(&self) -> (FolderState, Option<View>) {
        let state = lock(&self.state);
        (state.clone(), self.view())
    }

    /// `path` relative to this folder, when it lies inside it.
    pub fn relative(&self, path: &Path) -> Option<String> {
        workspace::relative_path(&self.root, path)
    }

    /// Queues files to re-read; they show as pending until indexed.
    pub fn update(&self, paths: Vec<PathBuf>, reply: Option<Reply>) {
        {
            let mut state = lock(&self.state);
            state.pending.extend(paths.iter().filter_map(|p| self.relative(p)));
        }
        let paths = paths.into_iter().map(|p| p.to_string_lossy().into_owned()).collect();
        self.send(Job::Update { paths, reply });
    }

    /// Notes that a search is reading the folder now.
    pub fn note_read(&self) {
        // Zero means never: a read in the first millisecond counts as the next one.
        self.last_read.store(clock().max(1), Ordering::Relaxed);
    }

    /// How much longer the writer's fill gives way to the searches that read the folder
    /// lately; `None` when none did within [`FILL_GIVES_WAY`].
    pub(super) fn fill_waits(&self) -> Option<Duration> {
        wait_left(self.last_read.load(Ordering::Relaxed), clock(), FILL_GIVES_WAY)
    }

    /// When `error` is damage to the index's files, asks the writer (once) to rebuild the
    /// index, and returns the error to give the reader in its place; otherwise `None`.
    pub fn damaged(&self, error: &EngineError) -> Option<EngineError> {
        if !error.is_damage() {
            return None;
        }
        if !self.healing.swap(true, Ordering::AcqRel) {
            tracing::warn!(folder = %self.root.display(), "the index is damaged: {error}");
            self.send(Job::Heal { problem: error.to_string() });
        }
        Some(EngineError::Rebuilding { folder: self.name(), problem: error.to_string() })
    }

    pub fn send(&self, job: Job) {
        if let Err(std::sync::mpsc::SendError(job)) = lock(&self.jobs).send(job) {
            tracing::warn!(folder = %self.root.display(), "writer has stopped; dropped {job:?}");
        }
    }

    /// Stops the writer: a running reconcile commits what it has and ends; queued work is
    /// dropped, and the snippet queue sends no new request. Waits for the thread.
    pub fn stop(&self) {
        if let Some(flag) = lock(&self.interrupt).as_ref() {
            flag.store(true, Ordering::Relaxed);
        }
        if let Some(flag) = lock(&self.snippet_stop).as_ref() {
            flag.store(true, Ordering::Relaxed);
        }
        self.send(Job::Stop);
        if let Some(handle) = lock(&self.thread).take() {
            let _ = handle.join();
        }
    }

    fn publish(&self, engine: &Engine) {
        self.publish_with(engine, |_| {});
    }

    /// Publishes the engine's last commit together with the state change it brings, so
    /// that no reader sees the new view with the old state after it.
    fn publish_with(&self, engine: &Engine, update: impl FnOnce(&mut FolderState)) {
        let mut state = lock(&self.state);
        update(&mut state);
        *self.view.write().unwrap_or_else(PoisonError::into_inner) = Some(engine.view());
    }

    fn fail(&self, message: String) {
        let mut state = lock(&self.state);
        state.phase = Phase::Failed;
        state.errors.push(message);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fill_waits_from_a_read_until_a_while_after_it() {
        let second = Duration::from_secs(1);
        assert_eq!(wait_left(0, 5_000, second), None, "no read yet");
        assert_eq!(wait_left(4_000, 4_200, second), Some(Duration::from_millis(800)));
        assert_eq!(wait_left(4_000, 5_000, second), None, "a second after the read");
        assert_eq!(wait_left(4_000, 9_000, second), None);
        assert!(wait_left(clock().max(1), clock(), second).is_some(), "a read now holds the fill off");
    }

    #[test]
    fn a_status_never_pairs_an_ended_run_with_the_index_from_before_it() {
        // A reader asks for the status over and over while the writer opens an empty index
        // and indexes the notes: once the phase says ready, the index holds them all.
        for round in 0..8 {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("notes");
            std::fs::create_dir(&root).unwrap();
            for i in 0..20 {
                let note = format!("# Note {i}\n\nThe ferry timetable changes in week {i}.\n");
                std::fs::write(root.join(format!("{i}.md")), note).unwrap();
            }
            let settings = dir.path().join("situate.toml");
            let index = dir.path().join("index");
            std::fs::write(&settings, format!("index_dir = {index:?}\n[embedding]\nprovider = \"static\"\n"))
                .unwrap();
            let (notices, _kept) = tokio::sync::mpsc::unbounded_channel();
            let folder = Folder::start(root, Some(settings), None, Arc::new(Embedders::default()), notices);
            let deadline = Instant::now() + Duration::from_secs(120);
            loop {
                assert!(Instant::now() < deadline, "round {round}: never ready: {:?}", folder.state());
                let (state, status) = folder.status();
                assert_ne!(state.phase, Phase::Failed, "{:?}", state.errors);
                if state.phase == Phase::Ready {
                    let files = status.map(|s| s.files);
                    assert_eq!(files, Some(20), "round {round}: ready, with the index from before the run");
                    break;
                }
            }
            folder.stop();
        }
    }
}
