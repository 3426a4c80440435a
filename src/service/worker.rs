//! A folder's writer thread: the job loop that owns the folder's engine. It opens the index,
//! reconciles it, applies saves in debounced batches, fills pending vectors between other
//! work, runs the snippet queue, and publishes each commit with the state it brings.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;

use super::batch::{Debounce, gather};
use super::snippet_queue::SnippetQueue;
use super::{Embedders, Folder, FolderState, Job, Notice, Phase, Reply, lock};
use crate::config::Config;
use crate::engine::{CommitStamp, Engine, OpenMode, PendingVectors, Progress, ReconcileReport};
use crate::snippets::generator::{Outcome, RunEnd};

/// Changes in a burst become one commit: a quiet time after each, and a cap in all.
const CHANGES: Debounce = Debounce { quiet: Duration::from_millis(50), max_wait: Duration::from_secs(1) };
/// How often a folder that cannot write checks whether it may now, or whether the other
/// writer has committed; also the pause after a failed fill.
pub(super) const POLL: Duration = Duration::from_secs(2);

/// The writer thread's state.
pub(super) struct Worker {
    pub(super) folder: Arc<Folder>,
    jobs: Receiver<Job>,
    /// Jobs received while gathering a batch, to run after it.
    backlog: VecDeque<Job>,
    pub(super) notices: UnboundedSender<Notice>,
    embedders: Arc<Embedders>,
    settings: Option<serde_json::Value>,
    pub(super) engine: Option<Engine>,
    /// When read-only: the stamp of the commit this engine was opened at.
    pub(super) seen_commit: CommitStamp,
    /// Reconciles run, for progress tokens.
    runs: u32,
    /// The progress token and starting count of the vectors being filled in.
    filling: Option<(String, usize)>,
    snippets: SnippetQueue,
    /// The progress token of the running snippet run.
    snippet_token: Option<String>,
    /// The folder's errors that the settings last opened with gave (`problems.rs`).
    pub(super) settings_errors: Vec<String>,
    /// When files handed over by processes that only read the index were last looked for.
    handoff_checked: Instant,
}

impl Worker {
    pub(super) fn new(
        folder: Arc<Folder>,
        jobs: Receiver<Job>,
        notices: UnboundedSender<Notice>,
        embedders: Arc<Embedders>,
        settings: Option<serde_json::Value>,
    ) -> Worker {
        Worker {
            folder,
            jobs,
            backlog: VecDeque::new(),
            notices,
            embedders,
            settings,
            engine: None,
            seen_commit: CommitStamp::default(),
            runs: 0,
            filling: None,
            snippets: SnippetQueue::default(),
            snippet_token: None,
            settings_errors: Vec::new(),
            handoff_checked: Instant::now(),
        }
    }

    pub(super) fn run(mut self) {
        self.open();
        self.reconcile(None);
        self.start_snippets();
        loop {
            let Some(job) = self.next_job() else { return };
            match job {
                None => self.poll(),
                Some(Job::Update { paths, reply }) => self.update(paths, reply),
                Some(Job::Reconcile { reply }) => self.reconcile(reply),
                Some(Job::Configure { settings }) => {
                    self.settings = settings;
                    self.reopen();
                }
                Some(Job::Snippets(outcomes)) => self.apply_snippets(outcomes),
                Some(Job::SnippetRunEnded { run, end }) => self.snippet_run_ended(run, end),
                Some(Job::NewSnippetPeriod) => {
                    // A new period: the old pause or stop is no longer a problem.
                    if let Some(reason) = self.snippets.new_period() {
                        self.state().errors.retain(|e| !e.ends_with(&reason));
                    }
                    self.publish_snippets();
                }
                Some(Job::Heal { problem }) => self.heal(problem),
                Some(Job::Stop) => return,
            }
            self.start_snippets();
        }
    }

    /// The next thing to do: a job (`Some(Some(job))`), a poll of the read-only index
    /// (`Some(None)`), or the end (`None`, the folder is gone). Between jobs, pending vectors
    /// are filled and a stopped snippet queue is restarted when its time comes.
    fn next_job(&mut self) -> Option<Option<Job>> {
        loop {
            if let Some(job) = self.backlog.pop_front() {
                return Some(Some(job));
            }
            // Files saved in another editor on this folder, which only reads the index.
            if self.handoff_checked.elapsed() >= POLL
                && let Some(engine) = self.engine.as_ref().filter(|e| !e.is_read_only())
            {
                self.handoff_checked = Instant::now();
                let paths = engine.take_handed_over();
                if !paths.is_empty() {
                    return Some(Some(Job::Update { paths, reply: None }));
                }
            }
            // Work done between jobs: vectors are filled in while nothing else waits and no
            // search read the folder just now (a person searching has the cores first); then
            // vectors computed while the team cache was away go to it once it answers.
            let idle_step: Option<fn(&mut Self)> =
                if self.engine.as_ref().is_some_and(|e| e.pending_vectors() > 0) {
                    if let Some(wait) = self.folder.fill_waits() {
                        match self.jobs.recv_timeout(wait) {
                            Ok(job) => return Some(Some(job)),
                            Err(RecvTimeoutError::Timeout) => continue,
                            Err(RecvTimeoutError::Disconnected) => return None,
                        }
                    }
                    Some(Self::fill_pending_vectors)
                } else if self.engine.as_ref().is_some_and(|e| e.vectors_to_share() > 0) {
                    Some(Self::share_vectors)
                } else {
                    None
                };
            if let Some(step) = idle_step {
                match self.jobs.try_recv() {
                    Ok(job) => return Some(Some(job)),
                    Err(TryRecvError::Empty) => {
                        step(self);
                        continue;
                    }
                    Err(TryRecvError::Disconnected) => return None,
                }
            }
            if self.needs_polling() {
                return match self.jobs.recv_timeout(POLL) {
                    Ok(job) => Some(Some(job)),
                    Err(RecvTimeoutError::Timeout) => Some(None),
                    Err(RecvTimeoutError::Disconnected) => None,
                };
            }
            // A stopped snippet queue tries again when its time comes.
            if let Some(at) = self.snippets.retry_at() {
                match self.jobs.recv_timeout(at.saturating_duration_since(Instant::now())) {
                    Ok(job) => return Some(Some(job)),
                    Err(RecvTimeoutError::Timeout) => {
                        self.snippets.retry_now();
                        self.start_snippets();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return None,
                }
            }
            // A writer wakes now and then for files handed over.
            return match self.jobs.recv_timeout(POLL) {
                Ok(job) => Some(Some(job)),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => None,
            };
        }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, FolderState> {
        lock(&self.folder.state)
    }

    /// Starts a snippet run when chunks wait for one and nothing holds the queue back.
    fn start_snippets(&mut self) {
        if !self.snippets.may_start() {
            return;
        }
        let Some(engine) = self.engine.as_mut().filter(|e| !e.is_read_only() && e.snippets_on()) else {
            return;
        };
        if engine.snippets_waiting() == 0 {
            return;
        }
        let runner = match engine.snippet_runner(self.snippets.spent()) {
            Ok(runner) => runner,
            Err(e) => {
                self.error(format!("{}: snippets: {e}", self.folder.name()));
                return;
            }
        };
        // Chunks whose snippets were in the cache were indexed meanwhile.
        self.folder.publish(engine);
        let Some(runner) = runner else {
            self.publish_snippets();
            return;
        };
        let run = self.snippets.start(runner.len());
        let token = format!("situate/snippets/{}/{run}", self.folder.name());
        let title = format!("Writing snippets for {}", self.folder.name());
        let _ = self.notices.send(Notice::ProgressBegin { token: token.clone(), title });
        self.snippet_token = Some(token);
        let stop = Arc::new(AtomicBool::new(false));
        *lock(&self.folder.snippet_stop) = Some(Arc::clone(&stop));
        let tx = lock(&self.folder.jobs).clone();
        let name = format!("situate-snippets-{}", self.folder.name());
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            let end = runner.run(&stop, &mut |outcome| {
                let _ = tx.send(Job::Snippets(vec![outcome]));
            });
            let _ = tx.send(Job::SnippetRunEnded { run, end });
        });
        if let Err(e) = spawned {
            self.snippets.abandon();
            self.error(format!("{}: cannot start the snippet thread: {e}", self.folder.name()));
        }
        self.publish_snippets();
    }

    fn stop_snippets(&mut self) {
        if let Some(flag) = lock(&self.folder.snippet_stop).take() {
            flag.store(true, Ordering::Relaxed);
        }
        self.snippets.abandon();
        if let Some(token) = self.snippet_token.take() {
            let _ = self.notices.send(Notice::ProgressEnd { token, message: "stopped".to_string() });
        }
    }

    /// Indexes snippets that came back, together with those that follow right behind.
    fn apply_snippets(&mut self, outcomes: Vec<Outcome>) {
        let take = |job| match job {
            Job::Snippets(more) => Ok(more),
            other => Err(other),
        };
        let outcomes: Vec<Outcome> =
            gather(&self.jobs, outcomes, take, &mut self.backlog, CHANGES).into_iter().flatten().collect();
        for outcome in &outcomes {
            self.snippets.record(outcome);
        }
        let Some(engine) = self.engine.as_mut().filter(|e| !e.is_read_only()) else { return };
        let result = engine.apply_snippets(outcomes);
        self.folder.publish(engine);
        if let Err(e) = result {
            self.error(format!("{}: indexing snippets failed: {e}", self.folder.name()));
        }
        if let Some(token) = &self.snippet_token {
            let (done, total) = self.snippets.progress();
            let percentage = (done * 100).checked_div(total).map_or(100, |p| p as u32);
            let message = format!("{done}/{total} snippets");
            let _ = self.notices.send(Notice::ProgressReport { token: token.clone(), message, percentage });
        }
        self.publish_snippets();
    }

    /// Takes note of how a snippet run ended and tells the user when it needs them.
    fn snippet_run_ended(&mut self, run: u32, end: RunEnd) {
        let waiting = self.engine.as_ref().map_or(0, Engine::snippets_waiting);
        let Some(ended) = self.snippets.ended(run, &end, waiting, Instant::now()) else { return };
        *lock(&self.folder.snippet_stop) = None;
        if let Some(token) = self.snippet_token.take() {
            let _ = self.notices.send(Notice::ProgressEnd { token, message: ended.summary });
        }
        // The state first: a client that reads status on the message sees the stop in it.
        self.publish_snippets();
        match ended.reason {
            Some(reason) if ended.tell => self.error(format!("{}: {reason}", self.folder.name())),
            Some(reason) => tracing::warn!(folder = %self.folder.root.display(), "{reason}"),
            None => {}
        }
    }

    /// Puts the snippet queue's state in the folder's state.
    fn publish_snippets(&self) {
        let on = self.engine.as_ref().is_some_and(Engine::snippets_on);
        let live = self.snippets.live(on, Instant::now(), crate::snippets::now_secs());
        self.state().snippets = live;
    }

    pub(super) fn needs_polling(&self) -> bool {
        self.engine.as_ref().is_none_or(Engine::is_read_only)
    }

    pub(super) fn set_phase(&self, phase: Phase) {
        let mut state = self.state();
        state.phase = phase;
        if phase != Phase::Indexing {
            state.progress = None;
        }
    }

    /// Rebuilds the index after a read found its files damaged: the engine lets go of it,
    /// and opening it again finds what is damaged and rebuilds it from the files (or, when
    /// another process writes it, reads it as that process left it).
    fn heal(&mut self, problem: String) {
        self.error(format!(
            "{}: the index's files were damaged ({problem}); rebuilding the index from the files",
            self.folder.name()
        ));
        self.reopen();
        self.folder.healing.store(false, Ordering::Release);
    }

    /// Lets go of the engine and opens the index again (with the current settings), then
    /// reconciles it.
    fn reopen(&mut self) {
        // The running snippet run ends; its answers are checked against the new run's keys
        // when they come back, so none is misfiled.
        self.stop_snippets();
        self.snippets = self.snippets.renewed();
        // The old engine lets go of the index (and its lock) before the new opens.
        self.engine = None;
        self.open();
        self.reconcile(None);
        self.publish_snippets();
    }

    /// Opens the engine with the current settings (read-only when another process writes)
    /// and publishes its last commit.
    pub(super) fn open(&mut self) {
        self.forget_settings_errors();
        let folder = Arc::clone(&self.folder);
        let root = &folder.root;
        let loaded = Config::load_layered(root, self.folder.config_file.as_deref(), self.settings.as_ref());
        if let Some(problem) = loaded.unusable() {
            // The defaults would take in files that the settings file may leave out: the
            // index is not written until the file is fixed (saving it reopens the folder).
            // The phase first: a client that reads the status on the message finds it failed.
            self.set_phase(Phase::Failed);
            let name = self.folder.name();
            self.settings_error(format!("{name}: {problem}; nothing is indexed until the file is fixed"));
            return;
        }
        for problem in &loaded.problems {
            self.settings_error(format!("{}: {problem} ({})", self.folder.name(), problem.effect.note()));
        }
        let embedder = match self.embedders.get(&loaded.config.embedding) {
            Ok(e) => e,
            Err(e) => {
                self.failure(format!("{}: {e}", self.folder.name()));
                self.set_phase(Phase::Failed);
                return;
            }
        };
        match Engine::open_with(root, loaded.config, loaded.problems, embedder, OpenMode::Write) {
            Ok(mut engine) => {
                engine.set_pending_vectors(PendingVectors::Queued);
                for note in engine.notes() {
                    tracing::warn!(folder = %root.display(), "{note}");
                }
                *lock(&self.folder.interrupt) = Some(engine.interrupt_flag());
                if engine.is_read_only() {
                    self.seen_commit = engine.commit_stamp();
                    self.state().prune_pending(&engine.view());
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
                if e.is_missing_index() {
                    tracing::info!("{message}");
                    self.set_phase(Phase::ReadOnly);
                } else {
                    self.failure(message);
                    self.set_phase(Phase::Failed);
                }
            }
        }
    }

    /// Walks the folder and indexes what changed, with progress reports.
    pub(super) fn reconcile(&mut self, reply: Option<Reply>) {
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
        lock(&self.folder.state).phase = Phase::Indexing;
        let folder = &self.folder;
        let result = engine.reconcile(&mut |p| {
            let (done, total, message) = match p {
                Progress::Scanned { files } => (0, files, format!("{files} files found")),
                Progress::Indexing { done, total } => (done, total, format!("{done}/{total} files")),
                Progress::Embedding { done, total, from_team: 0 } => {
                    (done, total, format!("{done}/{total} vectors"))
                }
                Progress::Embedding { done, total, from_team } => {
                    (done, total, format!("{done}/{total} vectors ({from_team} from the team)"))
                }
            };
            lock(&folder.state).progress = Some((done, total));
            let percentage = (done * 100).checked_div(total).map_or(100, |p| p as u32);
            let _ = notices.send(Notice::ProgressReport { token: token.clone(), message, percentage });
        });
        let status = engine.status();
        let view = engine.view();
        let vectors_pending = engine.pending_vectors();
        self.folder.publish_with(engine, |state| {
            state.phase = Phase::Ready;
            state.progress = None;
            state.vectors_pending = vectors_pending;
            // Changes still queued stay pending; those the walk took in are done.
            state.prune_pending(&view);
            if let Ok(report) = &result {
                state.last_run = Some(report.clone());
            }
        });
        let end = match &result {
            Ok(r) if !r.lossy.is_empty() => format!(
                "{} files, {} chunks ({} indexed; {} not valid UTF-8)",
                status.files,
                status.chunks,
                r.files_indexed,
                r.lossy.len()
            ),
            Ok(r) => {
                format!("{} files, {} chunks ({} indexed)", status.files, status.chunks, r.files_indexed)
            }
            Err(e) => format!("failed: {e}"),
        };
        let _ = self.notices.send(Notice::ProgressEnd { token, message: end });
        if let Ok(r) = &result {
            self.warn_lossy(&r.lossy);
        }
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
                self.failure(message.clone());
                answer(reply, Err(message));
            }
        }
    }

    /// Gathers the changes that come in a burst, then applies them in one commit.
    fn update(&mut self, paths: Vec<String>, reply: Option<Reply>) {
        let take = |job| match job {
            Job::Update { paths, reply } => Ok((paths, reply)),
            other => Err(other),
        };
        let mut batch: BTreeSet<String> = BTreeSet::new();
        let mut replies: Vec<Reply> = Vec::new();
        for (paths, reply) in gather(&self.jobs, (paths, reply), take, &mut self.backlog, CHANGES) {
            batch.extend(paths);
            replies.extend(reply);
        }
        let Some(engine) = self.engine.as_mut().filter(|e| !e.is_read_only()) else {
            // Kept pending, and handed to the process that writes the index.
            let paths: Vec<String> = batch.into_iter().collect();
            if let Some(Err(e)) = self.engine.as_ref().map(|engine| engine.hand_over(&paths)) {
                tracing::warn!(folder = %self.folder.root.display(), "saved files not handed over: {e}");
            }
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
            let report = self.folder.state().last_run.unwrap_or_default();
            for reply in replies {
                answer(Some(reply), Ok(report.clone()));
            }
            return;
        }
        let paths: Vec<String> = batch.into_iter().collect();
        let result = engine.update(&paths);
        let vectors_pending = engine.pending_vectors();
        let folder = &self.folder;
        folder.publish_with(engine, |state| {
            state.vectors_pending = vectors_pending;
            for rel in paths.iter().filter_map(|p| folder.relative(Path::new(p))) {
                state.pending.remove(&rel);
            }
        });
        match result {
            Ok(report) => {
                for s in &report.skipped {
                    tracing::info!(path = %s.path, "skipped: {}", s.reason);
                }
                self.warn_lossy(&report.lossy);
                for reply in replies {
                    answer(Some(reply), Ok(report.clone()));
                }
            }
            Err(e) => {
                let message = format!("{}: reindexing {} files failed: {e}", self.folder.name(), paths.len());
                self.failure(message.clone());
                for reply in replies {
                    answer(Some(reply), Err(message.clone()));
                }
            }
        }
    }

    /// Pushes a batch of the vectors computed while the team cache was away.
    fn share_vectors(&mut self) {
        let Some(engine) = self.engine.as_mut() else { return };
        if let Err(e) = engine.share_vectors_step() {
            tracing::warn!("team cache: vectors not shared: {e}");
        }
    }

    /// Embeds a slice of the pending vectors, and reports how far it is.
    fn fill_pending_vectors(&mut self) {
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
        let result = engine.fill_pending_vectors(engine.fill_step_size());
        let left = engine.pending_vectors();
        self.folder.publish_with(engine, |state| state.vectors_pending = left);
        if let Some(outage) = engine.team_outage() {
            self.error(format!("{}: {outage}", self.folder.name()));
        }
        if let Err(e) = result {
            // Left for later: the texts stay searchable, and the next run tries again.
            self.filling = None;
            let _ = self.notices.send(Notice::ProgressEnd { token, message: format!("failed: {e}") });
            self.error(format!("{}: computing vectors failed: {e}", self.folder.name()));
            // Wait before the next attempt; new jobs still come first.
            if let Ok(job) = self.jobs.recv_timeout(POLL) {
                self.backlog.push_back(job);
            }
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

    fn cannot_write(&self) -> String {
        match &self.engine {
            Some(engine) => format!(
                "the index is read-only here: {} is writing it (its changes show up as it commits; \
                 this one takes over when it exits)",
                engine.other_writer()
            ),
            None => format!("the index of {} is not open (see status errors)", self.folder.name()),
        }
    }
}

fn answer(reply: Option<Reply>, result: Result<ReconcileReport, String>) {
    if let Some(reply) = reply {
        let _ = reply.send(result);
    }
}
