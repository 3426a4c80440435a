//! The one workspace an MCP server answers for: its engine, opened on first use under the
//! writer lock when it is free and read-only otherwise, and brought up to date before every
//! tool call: a reconcile when this server writes (a walk and a stat per file when nothing
//! changed), a reload of the other writer's last commit when it reads, and a takeover when
//! the other writer lets go. A slow model's vectors never hold back an answer: the texts are
//! committed first and searched through the built-in model's vectors, and the slow model's
//! are filled in the background a few at a time ([`Folder::fill_some`]), between tool calls.
//! A server left idle lets go of the writer lock ([`Folder::let_go_if_idle`]): an agent's
//! session lasts hours, and an editor's language server or `situate index` must be able to
//! write the index meanwhile.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::engine::{CommitStamp, Engine, OpenMode, PendingVectors, Progress, View};

/// A workspace and its engine, shared by the tool calls of one server.
pub struct Folder {
    dir: PathBuf,
    config: Option<PathBuf>,
    slot: Mutex<Slot>,
    /// The open engine's interrupt flag, kept apart from the slot so that [`Folder::stop`]
    /// reaches it while a reconcile holds the slot.
    interrupt: Mutex<Option<Arc<AtomicBool>>>,
    /// Set when the server stops.
    stopping: AtomicBool,
    /// When the last tool call ended (or the server started).
    last_call: Mutex<Instant>,
    /// How long without a call before a writing server lets go of the writer lock.
    idle: Duration,
    /// How far the reconcile under way has got, whichever call (or the warm-up at start)
    /// runs it: the calls that wait for it tell their clients.
    indexing: watch::Sender<Option<Indexing>>,
}

/// How far a reconcile has got: files indexed out of those that changed (none counted yet
/// while it walks the folder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indexing {
    pub done: usize,
    pub total: Option<usize>,
}

#[derive(Default)]
struct Slot {
    engine: Option<Engine>,
    /// The last commit on disk when the engine was opened: a read-only engine that sees it
    /// change reopens to read the new commit.
    seen: CommitStamp,
}

/// The index as a tool call reads it: brought up to date just before.
pub struct Fresh {
    pub view: View,
    /// This server writes the index (else another process does, and this one reads).
    pub writer: bool,
    /// What the answer must say about the index, e.g. that it could not be updated.
    pub notice: Option<String>,
}

impl Folder {
    pub fn new(dir: &Path, config: Option<&Path>, idle: Duration) -> Folder {
        Folder {
            dir: dir.to_path_buf(),
            config: config.map(Path::to_path_buf),
            slot: Mutex::default(),
            interrupt: Mutex::default(),
            stopping: AtomicBool::new(false),
            last_call: Mutex::new(Instant::now()),
            idle,
            indexing: watch::Sender::new(None),
        }
    }

    /// Follows the progress of the reconciles to come and the one under way.
    pub fn indexing(&self) -> watch::Receiver<Option<Indexing>> {
        self.indexing.subscribe()
    }

    /// Closes the engine when this server writes the index, no call came for `idle`, and no
    /// vector is left to fill: the writer lock is then free for an editor or `situate index`.
    /// The next call opens the index again, writing it when the lock is free and reading
    /// the other writer's commits when not. Returns whether it let go.
    pub fn let_go_if_idle(&self) -> bool {
        if self.last_call.lock().unwrap_or_else(PoisonError::into_inner).elapsed() < self.idle {
            return false;
        }
        // A call under way holds the slot: the server is not idle.
        let mut slot = match self.slot.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        if !slot.engine.as_ref().is_some_and(|e| !e.is_read_only() && e.pending_vectors() == 0) {
            return false;
        }
        slot.engine = None;
        *self.interrupt.lock().unwrap_or_else(PoisonError::into_inner) = None;
        tracing::info!(
            "no call for {} s: the index is left to other processes until the next one",
            self.idle.as_secs()
        );
        true
    }

    /// Brings the index up to date and returns a view of it. Blocks on disk and index work,
    /// and on another call doing the same: run it off the async threads.
    pub fn fresh(&self) -> Result<Fresh, String> {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        // While another process writes: take over when it lets go, read its new commits.
        if let Some(engine) = &slot.engine
            && engine.is_read_only()
            && (engine.writer_free() || engine.commit_stamp() != slot.seen)
        {
            slot.engine = None;
        }
        if self.stopping.load(Ordering::Relaxed) {
            return Err("the server is stopping".to_string());
        }
        let engine = match slot.engine.take() {
            Some(engine) => engine,
            None => {
                let engine = self.open()?;
                slot.seen = engine.commit_stamp();
                *self.interrupt.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(engine.interrupt_flag());
                engine
            }
        };
        let engine = slot.engine.insert(engine);
        let mut notices = Vec::new();
        if engine.is_read_only() {
            notices.push(format!(
                "{} is writing this index: answers come from its last commit, which may miss the latest \
                 changes to files",
                engine.other_writer()
            ));
        } else {
            let indexing = &self.indexing;
            let reconciled = engine.reconcile(&mut |p| match p {
                Progress::Scanned { .. } => {
                    indexing.send_replace(Some(Indexing { done: 0, total: None }));
                }
                Progress::Indexing { done, total } => {
                    indexing.send_replace(Some(Indexing { done, total: Some(total) }));
                }
                Progress::Embedding { .. } => {}
            });
            indexing.send_replace(None);
            match reconciled {
                Ok(report) if report.files_indexed + report.files_removed > 0 => tracing::info!(
                    indexed = report.files_indexed,
                    removed = report.files_removed,
                    seconds = report.seconds,
                    "index brought up to date"
                ),
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("cannot update the index: {e}");
                    notices.push(format!(
                        "the index could not be brought up to date ({e}): answers come from its last commit"
                    ));
                }
            }
        }
        let view = engine.view();
        let (pending, eta_secs) = view.vectors_pending();
        if pending > 0 {
            notices.push(format!(
                "{} of {} passages still wait for their vectors from {}{}: the built-in static model's \
                 stand in for them meanwhile, so matches by meaning are rougher until then",
                pending,
                view.snapshot().manifest().chunk_count(),
                view.embedder().model,
                eta_secs.map(|s| format!(" (about {} min left)", s.div_ceil(60))).unwrap_or_default()
            ));
        }
        let notice = (!notices.is_empty()).then(|| notices.join("; "));
        *self.last_call.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        Ok(Fresh { view, writer: !engine.is_read_only(), notice })
    }

    /// Embeds a step of the chunks whose vectors a slow model still owes, when this server
    /// writes the index, and commits them: as many as take a few hundred milliseconds
    /// ([`Engine::fill_step_size`]), which is as long as a tool call waits for it. Returns
    /// how many are still owed.
    pub fn fill_some(&self) -> Result<usize, String> {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(engine) = slot.engine.as_mut().filter(|e| !e.is_read_only()) else { return Ok(0) };
        if engine.pending_vectors() == 0 || self.stopping.load(Ordering::Relaxed) {
            return Ok(0);
        }
        engine
            .fill_pending_vectors(engine.fill_step_size())
            .map_err(|e| format!("cannot fill in the model's vectors: {e}"))?;
        Ok(engine.pending_vectors())
    }

    /// Lets go of the engine, so that the next call opens the index again: after damage to
    /// its files, opening finds what is damaged and rebuilds it.
    pub fn reopen_later(&self) {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner).engine = None;
    }

    /// Whether the server is stopping.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// Opens the engine, under the writer lock when it is free.
    fn open(&self) -> Result<Engine, String> {
        let mut engine = Engine::open(&self.dir, self.config.as_deref(), OpenMode::Write).map_err(|e| {
            if e.is_missing_index() {
                "another process is building this workspace's index and has not committed it yet: \
                 try again in a moment"
                    .to_string()
            } else {
                format!("cannot open the index of {}: {e}", self.dir.display())
            }
        })?;
        // Tool calls answer at once; the slow model's vectors come from `fill_some`.
        engine.set_pending_vectors(PendingVectors::Queued);
        for problem in engine.config_problems() {
            tracing::warn!("{problem} ({})", problem.effect.note());
        }
        for note in engine.notes() {
            tracing::warn!("{note}");
        }
        Ok(engine)
    }

    /// Makes a reconcile under way commit what it has done and return, and later calls fail
    /// at once: the server is stopping.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(flag) = self.interrupt.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            flag.store(true, Ordering::Relaxed);
        }
    }
}
