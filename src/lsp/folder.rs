//! One workspace folder of the language server: a writer thread that owns the folder's
//! engine and applies changes in the order they came, and the published view and live
//! status that request handlers read without ever waiting for it.

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use crate::config::Config;
use crate::engine::{self, Engine, Progress, ReconcileReport, View};
use crate::index::OpenMode;
use crate::index::files::IndexLayout;
use crate::index::lock::WriterLock;
use crate::providers::{Embedder, EmbeddingConfig};
use crate::snippets::generator::{self, Outcome, RunEnd, Totals};
use crate::workspace;

/// Quiet time after a change before it is applied: saves in a burst become one commit.
const DEBOUNCE: Duration = Duration::from_millis(50);
/// The longest a change waits while more keep coming.
const MAX_BATCH_WAIT: Duration = Duration::from_secs(1);
/// Chunks embedded at a time when vectors are filled in between other work.
const FILL_SLICE: usize = 64;
/// How often a folder that cannot write checks whether it may now, or whether the other
/// writer has committed.
const POLL: Duration = Duration::from_secs(2);
/// The wait before a stopped snippet queue tries again; it doubles with each stop in a
/// row, up to [`SNIPPET_RETRY_MAX`].
const SNIPPET_RETRY: Duration = Duration::from_secs(60);
const SNIPPET_RETRY_MAX: Duration = Duration::from_secs(15 * 60);

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
    ResetSnippetBudget,
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
    /// A problem the user must fix; shown once.
    Problem(String),
}

/// What the writer is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Opening,
    Indexing,
    Ready,
    /// Another process writes the index; this one serves it as that one commits.
    ReadOnly,
    /// The index could not be opened (see `errors`).
    Failed,
}

/// The folder's state as status reports it.
#[derive(Debug, Clone, Serialize)]
pub struct Live {
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

/// What the snippet queue is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SnippetState {
    /// Nothing waits, or the queue is about to start.
    Idle,
    /// Requests are out.
    Running,
    /// The budget of this period is spent (`situate.reindex` starts a new one).
    Paused,
    /// The model kept failing; the queue tries again later.
    Stopped,
}

/// The snippet queue as status reports it.
#[derive(Debug, Clone, Serialize)]
pub struct SnippetLive {
    pub state: SnippetState,
    /// Why the queue is paused or stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Jobs of the running (or last) run: answered so far, and in all.
    pub done: usize,
    pub total: usize,
    /// Calls and tokens spent in this budget period.
    pub totals: Totals,
    /// Unix seconds of the next attempt, when stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<u64>,
}

/// Builds embedders once per process and shares them between folders.
#[derive(Default)]
pub struct Embedders {
    built: Mutex<Vec<(EmbeddingConfig, Arc<dyn Embedder>)>>,
}

impl Embedders {
    fn get(&self, config: &EmbeddingConfig) -> Result<Arc<dyn Embedder>, String> {
        let mut built = self.built.lock().unwrap_or_else(PoisonError::into_inner);
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
    view: RwLock<Option<View>>,
    live: Mutex<Live>,
    jobs: Mutex<Sender<Job>>,
    /// The running engine's interrupt flag, to cut a long reconcile short at shutdown.
    interrupt: Mutex<Option<Arc<AtomicBool>>>,
    /// The running snippet run's stop flag.
    snippet_stop: Mutex<Option<Arc<AtomicBool>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
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
        settings: Option<serde_json::Value>,
        embedders: Arc<Embedders>,
        notices: UnboundedSender<Notice>,
    ) -> Arc<Folder> {
        let (tx, rx) = std::sync::mpsc::channel();
        let folder = Arc::new(Folder {
            root,
            view: RwLock::new(None),
            live: Mutex::new(Live {
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
            thread: Mutex::new(None),
        });
        let worker = Worker {
            folder: Arc::clone(&folder),
            jobs: rx,
            backlog: VecDeque::new(),
            notices,
            embedders,
            settings,
            engine: None,
            seen_commit: None,
            runs: 0,
            filling: None,
            snippets: SnippetQueue::default(),
        };
        let name = format!("situate-writer-{}", folder.name());
        let handle = std::thread::Builder::new().name(name).spawn(move || worker.run());
        match handle {
            Ok(h) => *lock(&folder.thread) = Some(h),
            Err(e) => folder.fail(format!("cannot start the indexing thread: {e}")),
        }
        folder
    }

    /// The folder's name, for messages.
    pub fn name(&self) -> String {
        self.root.file_name().map_or_else(|| self.root.display().to_string(), |n| n.to_string_lossy().into())
    }

    /// The last published view (`None` until the index has been opened).
    pub fn view(&self) -> Option<View> {
        self.view.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub fn live(&self) -> Live {
        lock(&self.live).clone()
    }

    /// `path` relative to this folder, when it lies inside it.
    pub fn relative(&self, path: &Path) -> Option<String> {
        workspace::relative_path(&self.root, path)
    }

    /// Queues files to re-read; they show as pending until indexed.
    pub fn update(&self, paths: Vec<PathBuf>, reply: Option<Reply>) {
        {
            let mut live = lock(&self.live);
            live.pending.extend(paths.iter().filter_map(|p| self.relative(p)));
        }
        let paths = paths.into_iter().map(|p| p.to_string_lossy().into_owned()).collect();
        self.send(Job::Update { paths, reply });
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

    /// Publishes the engine's last commit together with the status change it brings, so
    /// that no reader sees the new view with the old status after it.
    fn publish_with(&self, engine: &Engine, update: impl FnOnce(&mut Live)) {
        let mut live = lock(&self.live);
        update(&mut live);
        *self.view.write().unwrap_or_else(PoisonError::into_inner) = Some(engine.view());
    }

    fn fail(&self, message: String) {
        let mut live = lock(&self.live);
        live.phase = Phase::Failed;
        live.errors.push(message);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The writer thread's state.
struct Worker {
    folder: Arc<Folder>,
    jobs: Receiver<Job>,
    /// Jobs received while gathering a batch, to run after it.
    backlog: VecDeque<Job>,
    notices: UnboundedSender<Notice>,
    embedders: Arc<Embedders>,
    settings: Option<serde_json::Value>,
    engine: Option<Engine>,
    /// When read-only: the manifest's modification time at the last open.
    seen_commit: Option<SystemTime>,
    /// Reconciles run, for progress tokens.
    runs: u32,
    /// The progress token and starting count of the vectors being filled in.
    filling: Option<(String, usize)>,
    snippets: SnippetQueue,
}

/// The writer's side of the snippet queue: one run at a time on its own thread, whose
/// outcomes come back as jobs.
#[derive(Default)]
struct SnippetQueue {
    /// The number of the running run, if one runs.
    running: Option<u32>,
    runs: u32,
    /// Spent in this budget period.
    totals: Totals,
    paused: bool,
    /// When a stopped queue tries again, and how many stops in a row there were.
    retry_at: Option<Instant>,
    stops: u32,
    done: usize,
    total: usize,
    reason: Option<String>,
    token: Option<String>,
}

impl Worker {
    fn run(mut self) {
        self.open();
        self.reconcile(None);
        self.start_snippets();
        loop {
            let job = match self.backlog.pop_front() {
                Some(job) => Some(job),
                // Vectors are filled in while nothing else waits.
                None if self.engine.as_ref().is_some_and(|e| e.pending_vectors() > 0) => {
                    match self.jobs.try_recv() {
                        Ok(job) => Some(job),
                        Err(std::sync::mpsc::TryRecvError::Empty) => {
                            self.fill_vectors();
                            continue;
                        }
                        Err(std::sync::mpsc::TryRecvError::Disconnected) => return,
                    }
                }
                None if self.needs_polling() => match self.jobs.recv_timeout(POLL) {
                    Ok(job) => Some(job),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                },
                // A stopped snippet queue tries again when its time comes.
                None if self.snippets.retry_at.is_some() => {
                    let wait = self
                        .snippets
                        .retry_at
                        .map_or(Duration::ZERO, |at| at.saturating_duration_since(Instant::now()));
                    match self.jobs.recv_timeout(wait) {
                        Ok(job) => Some(job),
                        Err(RecvTimeoutError::Timeout) => {
                            self.snippets.retry_at = None;
                            self.start_snippets();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                None => match self.jobs.recv() {
                    Ok(job) => Some(job),
                    Err(_) => return,
                },
            };
            match job {
                None => self.poll(),
                Some(Job::Update { paths, reply }) => self.update(paths, reply),
                Some(Job::Reconcile { reply }) => self.reconcile(reply),
                Some(Job::Configure { settings }) => {
                    self.settings = settings;
                    // The run of the old settings ends; its answers are checked against the
                    // new settings' keys when they come back, so none is misfiled.
                    self.stop_snippets();
                    self.snippets = SnippetQueue { runs: self.snippets.runs, ..SnippetQueue::default() };
                    // The old engine lets go of the index (and its lock) before the new opens.
                    self.engine = None;
                    self.open();
                    self.reconcile(None);
                    self.publish_snippets();
                }
                Some(Job::Snippets(outcomes)) => self.apply_snippets(outcomes),
                Some(Job::SnippetRunEnded { run, end }) => self.snippet_run_ended(run, end),
                Some(Job::ResetSnippetBudget) => {
                    self.snippets.totals = Totals::default();
                    self.snippets.paused = false;
                    self.snippets.retry_at = None;
                    self.snippets.stops = 0;
                    // A new period: the old pause or stop is no longer a problem.
                    if let Some(reason) = self.snippets.reason.take() {
                        lock(&self.folder.live).errors.retain(|e| !e.ends_with(&reason));
                    }
                    self.publish_snippets();
                }
                Some(Job::Stop) => return,
            }
            self.start_snippets();
        }
    }

    /// Starts a snippet run when chunks wait for one and nothing holds the queue back.
    fn start_snippets(&mut self) {
        let q = &self.snippets;
        if q.running.is_some() || q.paused || q.retry_at.is_some() {
            return;
        }
        let Some(engine) = self.engine.as_mut().filter(|e| !e.is_read_only() && e.snippets_on()) else {
            return;
        };
        if engine.snippets_waiting() == 0 {
            return;
        }
        let Some(setup) = engine.snippet_setup().cloned() else { return };
        let jobs = match engine.snippet_jobs(usize::MAX) {
            Ok(jobs) => jobs,
            Err(e) => {
                self.error(format!("{}: snippets: {e}", self.folder.name()));
                return;
            }
        };
        // Chunks whose snippets were in the cache were indexed meanwhile.
        self.folder.publish(engine);
        if jobs.is_empty() {
            self.publish_snippets();
            return;
        }
        let q = &mut self.snippets;
        q.runs += 1;
        let run = q.runs;
        q.running = Some(run);
        (q.done, q.total) = (0, jobs.len());
        q.reason = None;
        let token = format!("situate/snippets/{}/{run}", self.folder.name());
        let _ = self.notices.send(Notice::ProgressBegin {
            token: token.clone(),
            title: format!("Writing snippets for {}", self.folder.name()),
        });
        q.token = Some(token);
        let stop = Arc::new(AtomicBool::new(false));
        *lock(&self.folder.snippet_stop) = Some(Arc::clone(&stop));
        let tx = lock(&self.folder.jobs).clone();
        let (limits, spent) = (setup.limits(), q.totals);
        let name = format!("situate-snippets-{}", self.folder.name());
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            let end = generator::run(&setup, jobs, limits, spent, &stop, &mut |outcome| {
                let _ = tx.send(Job::Snippets(vec![outcome]));
            });
            let _ = tx.send(Job::SnippetRunEnded { run, end });
        });
        if let Err(e) = spawned {
            self.snippets.running = None;
            self.error(format!("{}: cannot start the snippet thread: {e}", self.folder.name()));
        }
        self.publish_snippets();
    }

    fn stop_snippets(&mut self) {
        if let Some(flag) = lock(&self.folder.snippet_stop).take() {
            flag.store(true, Ordering::Relaxed);
        }
        self.snippets.running = None;
        if let Some(token) = self.snippets.token.take() {
            let _ = self.notices.send(Notice::ProgressEnd { token, message: "stopped".to_string() });
        }
    }

    /// Indexes snippets that came back, together with those that follow right behind.
    fn apply_snippets(&mut self, mut outcomes: Vec<Outcome>) {
        let started = Instant::now();
        while started.elapsed() < MAX_BATCH_WAIT {
            match self.jobs.recv_timeout(DEBOUNCE) {
                Ok(Job::Snippets(more)) => outcomes.extend(more),
                Ok(other) => {
                    self.backlog.push_back(other);
                    break;
                }
                Err(_) => break,
            }
        }
        for outcome in &outcomes {
            self.snippets.totals.count(outcome);
            if !matches!(outcome, Outcome::NotRun { .. }) {
                self.snippets.done += 1;
            }
        }
        let Some(engine) = self.engine.as_mut().filter(|e| !e.is_read_only()) else { return };
        let result = engine.apply_snippets(outcomes);
        self.folder.publish(engine);
        if let Err(e) = result {
            self.error(format!("{}: indexing snippets failed: {e}", self.folder.name()));
        }
        let q = &self.snippets;
        if let Some(token) = &q.token {
            let percentage = (q.done * 100).checked_div(q.total).map_or(100, |p| p as u32);
            let message = format!("{}/{} snippets", q.done, q.total);
            let _ = self.notices.send(Notice::ProgressReport { token: token.clone(), message, percentage });
        }
        self.publish_snippets();
    }

    /// Takes note of how a snippet run ended and tells the user when it needs them.
    fn snippet_run_ended(&mut self, run: u32, end: RunEnd) {
        if self.snippets.running != Some(run) {
            return;
        }
        self.snippets.running = None;
        *lock(&self.folder.snippet_stop) = None;
        let waiting = self.engine.as_ref().map_or(0, Engine::snippets_waiting);
        let name = self.folder.name();
        let q = &mut self.snippets;
        let summary = format!("{} snippets; {}", q.done, q.totals);
        match end {
            RunEnd::Finished | RunEnd::Interrupted => q.stops = 0,
            RunEnd::BudgetReached => {
                q.paused = true;
                q.reason = Some(format!(
                    "the snippet budget is spent ({} calls, {} tokens this period); {waiting} chunks keep \
                     their header context until `situate.reindex` starts a new period",
                    q.totals.calls,
                    q.totals.input_tokens + q.totals.output_tokens
                ));
            }
            RunEnd::Failing { error } => {
                let wait = SNIPPET_RETRY.saturating_mul(1 << q.stops.min(4)).min(SNIPPET_RETRY_MAX);
                q.stops += 1;
                q.retry_at = Some(Instant::now() + wait);
                q.reason = Some(format!(
                    "snippets stopped: the model keeps failing ({error}); {waiting} chunks keep their \
                     header context and are tried again in {} min",
                    wait.as_secs().div_ceil(60)
                ));
            }
        }
        if let Some(token) = q.token.take() {
            let _ = self.notices.send(Notice::ProgressEnd { token, message: summary });
        }
        // Said once per outage: a queue that stops again later only updates its status.
        let tell = q.paused || q.stops == 1;
        match q.reason.clone() {
            Some(reason) if tell => self.error(format!("{name}: {reason}")),
            Some(reason) => tracing::warn!(folder = %self.folder.root.display(), "{reason}"),
            None => {}
        }
        self.publish_snippets();
    }

    /// Puts the snippet queue's state in the folder's live status.
    fn publish_snippets(&self) {
        let on = self.engine.as_ref().is_some_and(Engine::snippets_on);
        let q = &self.snippets;
        let state = if !on {
            None
        } else if q.running.is_some() {
            Some(SnippetState::Running)
        } else if q.paused {
            Some(SnippetState::Paused)
        } else if q.retry_at.is_some() {
            Some(SnippetState::Stopped)
        } else {
            Some(SnippetState::Idle)
        };
        let retry_at = q.retry_at.map(|at| {
            let from_now = at.saturating_duration_since(Instant::now()).as_secs();
            crate::snippets::now_secs() + from_now
        });
        lock(&self.folder.live).snippets = state.map(|state| SnippetLive {
            state,
            reason: q.reason.clone(),
            done: q.done,
            total: q.total,
            totals: q.totals,
            retry_at,
        });
    }

    fn needs_polling(&self) -> bool {
        self.engine.as_ref().is_none_or(Engine::is_read_only)
    }

    fn set_phase(&self, phase: Phase) {
        let mut live = lock(&self.folder.live);
        live.phase = phase;
        if phase != Phase::Indexing {
            live.progress = None;
        }
    }

    fn error(&self, message: String) {
        tracing::warn!(folder = %self.folder.root.display(), "{message}");
        let mut live = lock(&self.folder.live);
        // A problem that repeats (a server that stays down) is listed once in a row.
        if live.errors.last() != Some(&message) {
            live.errors.push(message.clone());
        }
        let _ = self.notices.send(Notice::Problem(message));
    }

    /// Opens the engine with the current settings (read-only when another process writes)
    /// and publishes its last commit.
    fn open(&mut self) {
        let root = &self.folder.root;
        let loaded = Config::load_layered(root, None, self.settings.as_ref());
        for problem in &loaded.problems {
            self.error(format!("{}: {problem} (using the default)", self.folder.name()));
        }
        let embedder = match self.embedders.get(&loaded.config.embedding) {
            Ok(e) => e,
            Err(e) => {
                self.error(format!("{}: {e}", self.folder.name()));
                self.set_phase(Phase::Failed);
                return;
            }
        };
        match Engine::open_with(root, loaded.config, loaded.problems, embedder, OpenMode::Write) {
            Ok(mut engine) => {
                engine.fill_pending_vectors_later(true);
                for note in engine.index().notes() {
                    tracing::info!(folder = %root.display(), "{note}");
                }
                *lock(&self.folder.interrupt) = Some(engine.interrupt_flag());
                if engine.is_read_only() {
                    self.seen_commit = manifest_mtime(engine.index().dir());
                    self.prune_pending(&engine);
                    self.set_phase(Phase::ReadOnly);
                } else {
                    // A run always follows; until it ends the index is not current.
                    self.set_phase(Phase::Indexing);
                }
                self.folder.publish(&engine);
                self.engine = Some(engine);
            }
            Err(e) => {
                // Read-only with no index yet: the other writer has not committed. Keep
                // polling without alarming anyone.
                let message = format!("{}: cannot open the index: {e}", self.folder.name());
                if matches!(e, engine::EngineError::Index(crate::index::IndexError::Missing { .. })) {
                    tracing::info!("{message}");
                    self.set_phase(Phase::ReadOnly);
                } else {
                    self.error(message);
                    self.set_phase(Phase::Failed);
                }
            }
        }
    }

    /// Walks the folder and indexes what changed, with progress reports.
    fn reconcile(&mut self, reply: Option<Reply>) {
        let Some(engine) = self.engine.as_mut().filter(|e| !e.is_read_only()) else {
            answer(reply, Err(self.cannot_write()));
            return;
        };
        self.runs += 1;
        let token = format!("situate/index/{}/{}", self.folder.name(), self.runs);
        let notices = &self.notices;
        let _ = notices.send(Notice::ProgressBegin {
            token: token.clone(),
            title: format!("Indexing {}", self.folder.name()),
        });
        set_phase_of(&self.folder, Phase::Indexing);
        let folder = &self.folder;
        let result = engine.reconcile(&mut |p| {
            let (done, total, message) = match p {
                Progress::Scanned { files } => (0, files, format!("{files} files found")),
                Progress::Indexing { done, total } => (done, total, format!("{done}/{total} files")),
                Progress::Embedding { done, total } => (done, total, format!("{done}/{total} vectors")),
            };
            lock(&folder.live).progress = Some((done, total));
            let percentage = (done * 100).checked_div(total).map_or(100, |p| p as u32);
            let _ = notices.send(Notice::ProgressReport { token: token.clone(), message, percentage });
        });
        let status = engine.status();
        let manifest = engine.view().snapshot().manifest().clone();
        let root = &self.folder.root;
        let vectors_pending = engine.pending_vectors();
        self.folder.publish_with(engine, |live| {
            live.phase = Phase::Ready;
            live.progress = None;
            live.vectors_pending = vectors_pending;
            // Changes still queued stay pending; those the walk took in are done.
            prune(root, &manifest, &mut live.pending);
            if let Ok(report) = &result {
                live.last_run = Some(report.clone());
            }
        });
        let end = match &result {
            Ok(r) => {
                format!("{} files, {} chunks ({} indexed)", status.files, status.chunks, r.files_indexed)
            }
            Err(e) => format!("failed: {e}"),
        };
        let _ = self.notices.send(Notice::ProgressEnd { token, message: end });
        match result {
            Ok(report) => {
                tracing::info!(
                    folder = %self.folder.root.display(),
                    "indexed: {} files, {} chunks ({} re-read) in {:.2} s",
                    status.files,
                    status.chunks,
                    report.files_indexed,
                    report.seconds
                );
                answer(reply, Ok(report));
            }
            Err(e) => {
                let message = format!("{}: indexing failed: {e}", self.folder.name());
                self.error(message.clone());
                answer(reply, Err(message));
            }
        }
    }

    /// Gathers the changes that come in a burst, then applies them in one commit.
    fn update(&mut self, paths: Vec<String>, reply: Option<Reply>) {
        let mut batch: BTreeSet<String> = paths.into_iter().collect();
        let mut replies: Vec<Reply> = reply.into_iter().collect();
        let started = Instant::now();
        while let Some(wait) = MAX_BATCH_WAIT.checked_sub(started.elapsed()) {
            match self.jobs.recv_timeout(DEBOUNCE.min(wait)) {
                Ok(Job::Update { paths, reply }) => {
                    batch.extend(paths);
                    replies.extend(reply);
                }
                Ok(other) => {
                    self.backlog.push_back(other);
                    break;
                }
                Err(_) => break,
            }
        }
        let Some(engine) = self.engine.as_mut().filter(|e| !e.is_read_only()) else {
            // Kept pending: the other writer or a later reopen picks them up.
            let message = self.cannot_write();
            for reply in replies {
                answer(Some(reply), Err(message.clone()));
            }
            return;
        };
        // A folder that appeared (a checkout, a copy) needs a walk to find its files.
        if batch.iter().any(|p| Path::new(p).is_dir()) {
            let mut replies = replies.into_iter();
            self.reconcile(replies.next());
            let report = self.folder.live().last_run.unwrap_or_default();
            for reply in replies {
                answer(Some(reply), Ok(report.clone()));
            }
            return;
        }
        let paths: Vec<String> = batch.into_iter().collect();
        let result = engine.update(&paths);
        let folder = &self.folder;
        folder.publish_with(engine, |live| {
            for rel in paths.iter().filter_map(|p| folder.relative(Path::new(p))) {
                live.pending.remove(&rel);
            }
        });
        match result {
            Ok(report) => {
                for s in &report.skipped {
                    tracing::info!(path = %s.path, "skipped: {}", s.reason);
                }
                for reply in replies {
                    answer(Some(reply), Ok(report.clone()));
                }
            }
            Err(e) => {
                let message = format!("{}: reindexing {} files failed: {e}", self.folder.name(), paths.len());
                self.error(message.clone());
                for reply in replies {
                    answer(Some(reply), Err(message.clone()));
                }
            }
        }
    }

    /// Embeds a slice of the chunks committed without vectors, and reports how far it is.
    fn fill_vectors(&mut self) {
        let Some(engine) = self.engine.as_mut() else { return };
        let left_before = engine.pending_vectors();
        let (token, total) = self.filling.get_or_insert_with(|| {
            let token = format!("situate/vectors/{}/{}", self.folder.name(), self.runs);
            let _ = self.notices.send(Notice::ProgressBegin {
                token: token.clone(),
                title: format!("Embedding {}", self.folder.name()),
            });
            (token, left_before)
        });
        let (token, total) = (token.clone(), *total);
        let result = engine.fill_pending_vectors(FILL_SLICE);
        let left = engine.pending_vectors();
        self.folder.publish_with(engine, |live| live.vectors_pending = left);
        if let Err(e) = result {
            // Left for later: the texts stay searchable, and the next run tries again.
            self.filling = None;
            let _ = self.notices.send(Notice::ProgressEnd { token, message: format!("failed: {e}") });
            self.error(format!("{}: computing vectors failed: {e}", self.folder.name()));
            self.stall_filling();
            return;
        }
        let done = total.saturating_sub(left);
        if left == 0 {
            self.filling = None;
            let _ = self.notices.send(Notice::ProgressEnd { token, message: format!("{done} vectors") });
        } else {
            let percentage = (done * 100 / total.max(1)) as u32;
            let message = format!("{done}/{total} vectors");
            let _ = self.notices.send(Notice::ProgressReport { token, message, percentage });
        }
    }

    /// After a failed fill, waits before the next attempt (new jobs still come first).
    fn stall_filling(&mut self) {
        if let Ok(job) = self.jobs.recv_timeout(POLL) {
            self.backlog.push_back(job);
        }
    }

    fn cannot_write(&self) -> String {
        match &self.engine {
            Some(_) => "the index is read-only here: another situate process is writing it (its changes \
                        show up as it commits; this one takes over when it exits)"
                .to_string(),
            None => format!("the index of {} is not open (see status errors)", self.folder.name()),
        }
    }

    /// While read-only: take over when the other writer is gone, or reload its commits.
    fn poll(&mut self) {
        let Some(engine) = &self.engine else {
            // No index yet (the other writer has not committed) or a failed open.
            if lock(&self.folder.live).phase == Phase::ReadOnly {
                self.open();
                if self.engine.as_ref().is_some_and(|e| !e.is_read_only()) {
                    self.reconcile(None);
                }
            }
            return;
        };
        let dir = engine.index().dir().to_path_buf();
        let layout = IndexLayout::new(&dir);
        let free = matches!(WriterLock::try_acquire(&layout.lock()), Ok(Some(_)));
        if free || manifest_mtime(&dir) != self.seen_commit {
            self.engine = None;
            self.open();
            if free && self.engine.as_ref().is_some_and(|e| !e.is_read_only()) {
                tracing::info!(folder = %self.folder.root.display(), "the other writer is gone: indexing here");
                self.reconcile(None);
            }
        }
    }

    /// Drops pending paths that the other writer has indexed as they now are on disk.
    fn prune_pending(&self, engine: &Engine) {
        let manifest = engine.view().snapshot().manifest().clone();
        prune(&self.folder.root, &manifest, &mut lock(&self.folder.live).pending);
    }
}

/// Keeps the pending paths whose state on disk the manifest does not match yet.
fn prune(root: &Path, manifest: &crate::index::manifest::Manifest, pending: &mut BTreeSet<String>) {
    pending.retain(|rel| match (workspace::stat(root, rel), manifest.files.get(rel)) {
        (Ok(f), Some(e)) => e.size != f.size || e.mtime_ns != f.mtime_ns,
        // A new file not indexed yet stays; one that is gone stays until it leaves the index.
        (Ok(_), None) => true,
        (Err(_), entry) => entry.is_some(),
    });
}

fn set_phase_of(folder: &Folder, phase: Phase) {
    lock(&folder.live).phase = phase;
}

fn answer(reply: Option<Reply>, result: Result<ReconcileReport, String>) {
    if let Some(reply) = reply {
        let _ = reply.send(result);
    }
}

fn manifest_mtime(index_dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(IndexLayout::new(index_dir).manifest()).and_then(|m| m.modified()).ok()
}
