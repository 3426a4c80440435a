//! Keeping the index in line with the files: a full reconcile (walk, diff against the
//! manifest, read and chunk in parallel, apply in batches, commit), an update of named
//! files (a save), and the pending vectors a slow embedder leaves behind.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::{Engine, EngineError, PendingVectors, Progress, ReconcileReport};
use crate::analysis;
use crate::chunk;
use crate::context;
use crate::index::{ApplyStats, FileChange, Index, IndexError, PreparedChunk, PreparedFile, VectorTiming};
use crate::providers::EmbeddingConfig;
use crate::snippets::prompt::ChunkInput;
use crate::workspace::{self, SkipReason, Skipped, SourceFile};

/// About how long one step of a fill between other work takes ([`Engine::fill_step_size`]).
pub const FILL_STEP_TIME: Duration = Duration::from_millis(400);
/// The most chunks one step of such a fill embeds.
pub const FILL_STEP_MAX: usize = 64;

/// The chunks of a fill's step at `rate` chunks a second, whose commit took `commit`
/// ([`Engine::fill_step_size`]): a step lasts [`FILL_STEP_TIME`], or longer where commits
/// are slow (a large index), so that they take at most a tenth of the time.
fn fill_step_for(rate: Option<f32>, commit: Duration) -> usize {
    let time = FILL_STEP_TIME.max(commit * CHECKPOINT_SHARE);
    // Not measured yet: a step short on any model.
    made_in(time, rate).map_or(4, |n| n.clamp(1, FILL_STEP_MAX))
}

/// How many chunks a model that makes `rate` a second makes in `time`; `None` before its
/// rate is measured (or when it went wrong).
fn made_in(time: Duration, rate: Option<f32>) -> Option<usize> {
    rate.filter(|rate| rate.is_finite() && *rate > 0.0).map(|rate| (rate * time.as_secs_f32()) as usize)
}

/// About how long [`Engine::fill_few_pending`] may take: the waiting chunks are embedded
/// only when the model makes them in this time at its last measured rate.
pub const FEW_PENDING_TIME: Duration = Duration::from_secs(1);
/// The most waiting chunks [`Engine::fill_few_pending`] embeds, however fast the model.
const FEW_PENDING_MAX: usize = 64;
/// What it embeds before the model's rate is measured: a second of e5 on a slow core.
const FEW_PENDING_UNMEASURED: usize = 16;

/// How many waiting chunks are few enough for [`Engine::fill_few_pending`] at `rate`
/// chunks a second.
fn few_pending_for(rate: Option<f32>) -> usize {
    made_in(FEW_PENDING_TIME, rate).map_or(FEW_PENDING_UNMEASURED, |n| n.min(FEW_PENDING_MAX))
}

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

/// A checkpoint may take at most this share of a long run: a commit writes the manifest
/// whole, which grows with the index, so on a large index commits come further apart and
/// indexing time stays linear in the corpus.
const CHECKPOINT_SHARE: u32 = 10;

/// When a long run commits what it has done: every few seconds or every few thousand
/// files, but never so often that commits take more than a tenth of the time.
struct Checkpoints {
    last: Instant,
    /// How long the last commit took.
    cost: Duration,
    files: usize,
}

impl Checkpoints {
    fn new() -> Self {
        Checkpoints { last: Instant::now(), cost: Duration::ZERO, files: 0 }
    }

    /// Commits if one is due, after `files` more files were applied.
    fn after(&mut self, files: usize, index: &mut Index) -> Result<(), IndexError> {
        self.files += files;
        let elapsed = self.last.elapsed();
        let due = self.files >= CHECKPOINT_FILES || elapsed >= CHECKPOINT_INTERVAL;
        if due && elapsed >= self.cost * CHECKPOINT_SHARE {
            let started = Instant::now();
            index.commit()?;
            self.cost = started.elapsed();
            self.last = Instant::now();
            self.files = 0;
        }
        Ok(())
    }
}

impl Engine {
    /// What a reconcile with a slow embedder does with the vectors it leaves pending:
    /// fill them before it returns (the default), queue them for
    /// [`Engine::fill_pending_vectors`], or leave them to a later process.
    pub fn set_pending_vectors(&mut self, pending: PendingVectors) {
        self.pending_vectors = pending;
    }

    /// Chunks committed without a vector, waiting for [`Engine::fill_pending_vectors`].
    pub fn pending_vectors(&self) -> usize {
        self.index.pending_vector_count()
    }

    /// How many pending vectors a step of a fill between other work should embed: as many
    /// as the model makes in about [`FILL_STEP_TIME`] at its last measured rate, 1 to
    /// [`FILL_STEP_MAX`]. Whatever waits for the step to end (a save in an editor, an
    /// agent's call) waits about that long; a fixed count would make it wait seconds on a
    /// slow model and commit too often on a fast one.
    pub fn fill_step_size(&self) -> usize {
        fill_step_for(self.index.manifest().fill_rate, self.fill_commit_cost)
    }

    /// Stores up to about `max` of the vectors of chunks committed without one (computed
    /// here, or taken from the team cache) and commits them. Returns how many were stored.
    /// The model runs on threads that give way to searches (`background.rs`).
    pub fn fill_pending_vectors(&mut self, max: usize) -> Result<usize, EngineError> {
        let filled = match super::background::pool() {
            Some(pool) => pool.install(|| self.fill_pending_step(max))?,
            None => self.fill_pending_step(max)?,
        };
        Ok(filled.stored())
    }

    /// Embeds every chunk still waiting for its vector, when they are so few that the model
    /// makes them in about [`FEW_PENDING_TIME`] (a note just saved, a small folder's first
    /// index), the model runs on this machine and no team cache is named: a search from
    /// the shell then ranks them by the model's own vectors instead of the quick ones, at
    /// the cost of a moment and never of the network. More are left to `situate index` or a
    /// server. Returns how many were stored.
    pub fn fill_few_pending(&mut self) -> Result<usize, EngineError> {
        let local = matches!(
            self.setup.config.embedding,
            EmbeddingConfig::E5 { .. } | EmbeddingConfig::Transformer { .. }
        );
        if !local || self.setup.config.team.is_some() || self.index.is_read_only() {
            return Ok(0);
        }
        let (waiting, _) = self.view().vectors_pending();
        if waiting == 0 || waiting > few_pending_for(self.index.manifest().fill_rate) {
            return Ok(0);
        }
        self.index.queue_vectorless()?;
        let mut stored = 0;
        while self.index.pending_vector_count() > 0 {
            let filled = self.fill_pending_vectors(waiting)?;
            if filled == 0 {
                break;
            }
            stored += filled;
        }
        Ok(stored)
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
        let timing = VectorTiming::for_embedder(self.setup.embedder.as_ref());
        // Vectors missing since the last run (a model change, a crash) come first in the
        // queue; they are counted as refilled.
        let mut refill = 0;
        if timing == VectorTiming::Later {
            if self.pending_vectors != PendingVectors::Left {
                refill = self.index.queue_vectorless()?;
            }
        } else {
            report.vectors_refilled = self.index.embed_vectorless(self.setup.embedder.as_ref())?;
        }

        self.check_snippets()?;
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "queue checked");

        let walked = workspace::walk(&self.setup.root, &self.setup.config.walk, Some(self.index.dir()));
        report.files_seen = walked.files.len();
        tracing::debug!(
            ms = started.elapsed().as_millis() as u64,
            files = walked.files.len(),
            "workspace walked"
        );
        progress(Progress::Scanned { files: walked.files.len() });
        let mut skipped = walked.skipped;

        let (gone, to_read) =
            self.index.manifest().changes_since(&walked.files, self.setup.config.walk.max_file_bytes);
        let mut changes: Vec<FileChange> = gone.into_iter().map(|path| FileChange::Remove { path }).collect();
        report.files_unchanged = walked.files.len() - to_read.len();
        tracing::debug!(
            ms = started.elapsed().as_millis() as u64,
            changed = to_read.len(),
            "manifest compared"
        );
        report.files_removed = changes.len();
        if !changes.is_empty() {
            self.apply_changes(std::mem::take(&mut changes), timing)?;
        }

        let total = to_read.len();
        let mut checkpoints = Checkpoints::new();
        for (n, batch) in to_read.chunks(READ_BATCH).enumerate() {
            let prepared: Vec<Result<Prepared, Skipped>> =
                batch.par_iter().map(|f| self.prepare(f)).collect();
            for p in prepared {
                stage(p, &self.index, &mut report, &mut changes, &mut skipped);
            }
            let stats = self.apply_changes(std::mem::take(&mut changes), timing)?;
            report.add(stats);
            checkpoints.after(batch.len(), &mut self.index)?;
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
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "changes applied");
        self.index.commit()?;
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "committed");
        if timing == VectorTiming::Later
            && !report.interrupted
            && self.pending_vectors == PendingVectors::FilledNow
        {
            let embedded_before = report.vectors_embedded;
            self.fill_all_pending(&mut report, progress)?;
            let filled = report.vectors_embedded - embedded_before;
            report.vectors_refilled += filled.min(refill);
            report.vectors_embedded -= filled.min(refill);
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Embeds the chunks committed without vectors, committing every few seconds so that
    /// searches see the vectors as they come; stops early when interrupted.
    fn fill_all_pending(
        &mut self,
        report: &mut ReconcileReport,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), EngineError> {
        let total = self.index.pending_vector_count();
        let mut done = 0;
        let mut from_team = 0;
        let mut checkpoints = Checkpoints::new();
        // Steps in a row whose batch other members were computing; once they cover the
        // whole queue, this member waits for their vectors instead of spinning.
        let mut waited = 0;
        while self.index.pending_vector_count() > 0 {
            // Batches shrink towards the end of the queue (to a quarter), so that machines
            // sharing a fill through the team cache finish together rather than one batch
            // apart; alone, the last few batches are merely smaller.
            let batch = (self.index.pending_vector_count() / 8).clamp(FILL_BATCH / 4, FILL_BATCH);
            let filled = self.fill_step(batch)?;
            report.vectors_embedded += filled.computed;
            report.vectors_from_team += filled.from_team;
            from_team += filled.from_team;
            done = (total - self.index.pending_vector_count().min(total)).max(done);
            progress(Progress::Embedding { done, total, from_team });
            waited = if filled.waiting { waited + batch } else { 0 };
            if waited >= self.index.pending_vector_count() {
                std::thread::sleep(std::time::Duration::from_millis(200));
                waited = 0;
            }
            checkpoints.after(0, &mut self.index)?;
            if self.interrupt.swap(false, Ordering::Relaxed) {
                report.interrupted = true;
                break;
            }
        }
        // Vectors computed while the team cache was away, in this run or an earlier one, go
        // to it once it answers.
        while !report.interrupted && self.share_vectors_step()? > 0 {
            report.interrupted = self.interrupt.swap(false, Ordering::Relaxed);
        }
        self.index.commit()?;
        if let Some(team) = &self.setup.team {
            let s = team.status();
            tracing::info!(
                target = %s.target,
                vectors_pulled = s.vectors_pulled,
                pull_seconds = s.pull_seconds,
                vectors_pushed = s.vectors_pushed,
                push_seconds = s.push_seconds,
                "team cache: vectors taken and added"
            );
        }
        Ok(())
    }

    /// Hands files saved here to the process that writes the index, when this one only
    /// reads it: that process indexes them at once ([`Engine::take_handed_over`]).
    pub fn hand_over(&self, paths: &[String]) -> Result<(), EngineError> {
        Ok(self.index.hand_over(paths)?)
    }

    /// Files that processes which only read the index handed over for this one to index.
    pub fn take_handed_over(&self) -> Vec<String> {
        self.index.take_handed_over().unwrap_or_else(|e| {
            tracing::warn!("files handed over by another process not read: {e}");
            Vec::new()
        })
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
            let selected = !self.walk_leaves_out(&rel, index_dir.as_deref())
                && workspace::is_selected(&self.setup.root, &rel, &self.setup.config.walk);
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
            if self.index.manifest().holds_current(&file, self.setup.config.walk.max_file_bytes) {
                report.files_unchanged += 1;
                continue;
            }
            let prepared = self.prepare(&file);
            stage(prepared, &self.index, &mut report, &mut changes, &mut skipped);
        }
        // A save never waits on a slow embedder: its texts are committed first and their
        // vectors follow as pending vectors (the language server fills them between jobs).
        let timing = VectorTiming::for_embedder(self.setup.embedder.as_ref());
        let stats = self.apply_changes(changes, timing)?;
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
        // Without an owner that fills pending vectors between other work, they are filled
        // now, after the texts are committed: a failure leaves the words searchable.
        if timing == VectorTiming::Later && self.pending_vectors == PendingVectors::FilledNow {
            self.fill_all_pending(&mut report, &mut |_| {})?;
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Whether the walk would leave `rel` out for where it lies, whatever its name: in the
    /// index folder (`index_dir`, resolved), or, when links are followed, there through a
    /// link or below a linked folder the last walk passed over (a loop, or a folder indexed
    /// at another place).
    fn walk_leaves_out(&self, rel: &str, index_dir: Option<&Path>) -> bool {
        let abs = self.setup.root.join(rel);
        if !self.setup.config.walk.follow_symlinks {
            return index_dir.is_some_and(|d| abs.starts_with(d));
        }
        let below = |folder: &str| rel.strip_prefix(folder).is_some_and(|r| r.starts_with('/'));
        index_dir.is_some_and(|d| abs.starts_with(d) || abs.canonicalize().is_ok_and(|p| p.starts_with(d)))
            || self.index.manifest().skipped.iter().any(|s| {
                matches!(s.reason, SkipReason::LinkLoop { .. } | SkipReason::AlreadyIndexed { .. })
                    && below(&s.path)
            })
    }

    /// Applies file changes to the index. The snippet jobs out for the chunks they take out
    /// are withdrawn, so that a run in the background does not pay for snippets that nothing
    /// would index.
    fn apply_changes(
        &mut self,
        changes: Vec<FileChange>,
        timing: VectorTiming,
    ) -> Result<ApplyStats, IndexError> {
        let leaving = self.snippets_in_flight.leaving(self.index.manifest(), &changes);
        let stats = self.index.apply(changes, self.setup.embedder.as_ref(), timing)?;
        self.snippets_in_flight.withdraw(leaving);
        Ok(stats)
    }

    /// Reads and chunks one file; each chunk gets its header and, when snippets are on, its
    /// snippet from the cache or a mark that it waits for one.
    fn prepare(&self, file: &SourceFile) -> Result<Prepared, Skipped> {
        let config = &self.setup.config;
        let skip = |reason: SkipReason| Skipped { path: file.rel_path.clone(), reason };
        let read = workspace::read(file, config.walk.max_file_bytes, config.walk.encoding).map_err(skip)?;
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
            // A chunk of nothing but noise (the middle of a pasted image) is not indexed.
            .filter(|c| !context::searchable(&c.text).trim().is_empty())
            .enumerate()
            .map(|(ordinal, mut c)| {
                c.ordinal = ordinal as u32;
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
                        &doc.metadata,
                    ),
                    snippet: self.snippet_slot(&input),
                    chunk: c,
                }
            })
            .collect();
        // Set after the headers are written, so that no embedded text changes with it.
        let mut metadata = doc.metadata;
        if !chunk::front_matter::names_language(&metadata)
            && let Some(language) = analysis::Language::of_document(&read.text)
        {
            chunk::front_matter::supply_language(&mut metadata, language.code());
        }
        Ok(Prepared::Changed(PreparedFile {
            path: file.rel_path.clone(),
            size: file.size,
            mtime_ns: file.mtime_ns,
            content_hash: read.content_hash,
            lossy: read.lossy,
            title: doc.title,
            metadata,
            chunks,
            warnings: doc.warnings,
        }))
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
            report.warnings.extend(file.warnings.iter().map(|w| format!("{}: {w}", file.path)));
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

#[cfg(test)]
mod fill_step_tests {
    use super::*;

    #[test]
    fn a_fill_step_takes_about_as_long_on_a_slow_model_as_on_a_fast_one() {
        // e5 on two cores, a remote model, the static one; no rate yet; a rate gone wrong.
        let quick = Duration::from_millis(5);
        assert_eq!(fill_step_for(Some(20.0), quick), 8);
        assert_eq!(fill_step_for(Some(900.0), quick), FILL_STEP_MAX);
        assert_eq!(fill_step_for(Some(0.3), quick), 1);
        assert_eq!(fill_step_for(None, quick), 4);
        assert_eq!(fill_step_for(Some(f32::NAN), quick), 4);
        // A commit of 80 ms (a million chunks): steps of 0.8 s, the commit a tenth of it.
        assert_eq!(fill_step_for(Some(20.0), Duration::from_millis(80)), 16);
    }

    #[test]
    fn a_search_embeds_what_the_model_makes_in_about_a_second() {
        // e5 on two cores, a slow core, a fast model; no rate yet; a rate gone wrong.
        assert_eq!(few_pending_for(Some(40.0)), 40);
        assert_eq!(few_pending_for(Some(7.5)), 7);
        assert_eq!(few_pending_for(Some(900.0)), FEW_PENDING_MAX);
        assert_eq!(few_pending_for(None), FEW_PENDING_UNMEASURED);
        assert_eq!(few_pending_for(Some(f32::INFINITY)), FEW_PENDING_UNMEASURED);
    }
}
