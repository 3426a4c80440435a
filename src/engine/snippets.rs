//! LLM snippets in the engine: each chunk's snippet from the cache or marked as waiting,
//! the jobs of waiting chunks handed out (and withdrawn when their chunks leave the index)
//! and their outcomes taken back (cache first, then index), and a whole run for the CLI.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Engine, EngineError, SnippetProgress, SnippetRun, SnippetsApplied};
use crate::index::manifest::Manifest;
use crate::index::{ChunkRecord, FileChange, IndexError, SnippetUpdate, VectorTiming};
use crate::snippets::cache::SnippetCache;
use crate::snippets::generator::{self, Limits, Outcome, RunEnd, SnippetJob, Stops, Totals, Withdrawn};
use crate::snippets::prompt::ChunkInput;
use crate::snippets::{Snippet, SnippetSetup, SnippetSlot, now_secs};
use crate::team::SharedSnippet;
use crate::team::tally::Tally;

/// Snippets that arrived are indexed in batches of this many, or
const SNIPPET_BATCH: usize = 256;

/// after this long, whichever comes first.
const SNIPPET_COMMIT: Duration = Duration::from_secs(1);

/// The chunks handed out by [`Engine::snippet_jobs`] whose outcome has not come back, and
/// those of them that left the index since, which the runs then leave unasked.
#[derive(Default)]
pub(super) struct InFlight {
    ids: HashSet<u64>,
    withdrawn: Withdrawn,
}

impl InFlight {
    /// The chunks out for a snippet that these changes will take out of the index: every
    /// chunk of a file they replace or remove (a file's new chunks get new ids).
    pub(super) fn leaving(&self, manifest: &Manifest, changes: &[FileChange]) -> Vec<u64> {
        if self.ids.is_empty() {
            return Vec::new();
        }
        let paths = changes.iter().filter_map(|change| match change {
            FileChange::Upsert(file) => Some(&file.path),
            FileChange::Remove { path } => Some(path),
            FileChange::Touch { .. } => None,
        });
        paths
            .filter_map(|path| manifest.files.get(path))
            .flat_map(|entry| entry.chunks.iter().map(|c| c.id))
            .filter(|id| self.ids.contains(id))
            .collect()
    }

    /// These chunks left the index: their jobs, if not sent yet, will not be.
    pub(super) fn withdraw(&self, ids: Vec<u64>) {
        if !ids.is_empty() {
            tracing::debug!(chunks = ids.len(), "snippet jobs withdrawn: their chunks left the index");
            self.withdrawn.add(ids);
        }
    }

    /// The outcome of this chunk's job came back.
    fn back(&mut self, id: u64) {
        if self.ids.remove(&id) {
            self.withdrawn.forget(id);
        }
    }
}

impl Engine {
    /// A chunk's snippet: off, in the cache, or still to be written.
    pub(super) fn snippet_slot(&self, input: &ChunkInput) -> SnippetSlot {
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
    pub(super) fn check_snippets(&mut self) -> Result<(), EngineError> {
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
            VectorTiming::for_embedder(self.setup.embedder.as_ref()),
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
        self.index
            .manifest()
            .snippets_pending()
            .filter(|id| !self.snippets_in_flight.ids.contains(id))
            .count()
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
                .filter(|c| c.snippet_pending && !self.snippets_in_flight.ids.contains(&c.id))
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
            if inputs.is_empty() {
                continue;
            }
            // The file's requests share their document's budget check and outline.
            let prompts = setup.prompts(&inputs);
            for (i, record) in records.iter().enumerate() {
                if !ids.contains(&record.id) {
                    continue;
                }
                let key = setup.key(&inputs[i]);
                match cache.get(key) {
                    Some(snippet) => cached.push(SnippetUpdate { chunk_id: record.id, key, snippet }),
                    None => {
                        self.snippets_in_flight.ids.insert(record.id);
                        jobs.push(SnippetJob {
                            chunk_id: record.id,
                            key,
                            path: path.clone(),
                            request: prompts.request(i),
                        });
                    }
                }
            }
        }
        self.take_team_snippets(&setup, &mut jobs, &mut cached)?;
        if !cached.is_empty() {
            self.index.set_snippets(
                &cached,
                self.setup.embedder.as_ref(),
                VectorTiming::for_embedder(self.setup.embedder.as_ref()),
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
        let mut written = Vec::new();
        for outcome in outcomes {
            self.snippets_in_flight.back(outcome.chunk_id());
            match outcome {
                Outcome::Written { chunk_id, key, snippet, usage } => {
                    if !snippet.text.is_empty() {
                        let tokens = (
                            usage.input_tokens.min(u32::MAX as u64),
                            usage.output_tokens.min(u32::MAX as u64),
                        );
                        let shared = SharedSnippet {
                            text: snippet.text.clone(),
                            input_tokens: tokens.0 as u32,
                            output_tokens: tokens.1 as u32,
                        };
                        written.push((key, shared));
                    }
                    if let Some(cache) = &self.snippet_cache {
                        cache.put(key, &snippet).map_err(|e| IndexError::Io {
                            path: cache.path().display().to_string(),
                            source: e,
                        })?;
                    }
                    updates.push(SnippetUpdate { chunk_id, key, snippet });
                }
                Outcome::Failed { .. } | Outcome::NotRun { .. } => applied.returned += 1,
                // The chunk is gone; its file's new chunks have jobs of their own.
                Outcome::Withdrawn { .. } => {}
            }
        }
        if let (Some(team), Some(setup)) = (&self.setup.team, &self.setup.snippets)
            && !written.is_empty()
        {
            team.push_snippets(&setup.wording(), &written);
            self.tally(Tally { snippets_written: written.len() as u64, ..Tally::default() });
        }
        if updates.is_empty() {
            return Ok(applied);
        }
        if let Some(cache) = &self.snippet_cache {
            cache
                .sync()
                .map_err(|e| IndexError::Io { path: cache.path().display().to_string(), source: e })?;
        }
        let timing = VectorTiming::for_embedder(self.setup.embedder.as_ref());
        // A snippet asked for under other settings (a run that outlived a change of them)
        // goes to the cache, but not into the index.
        let setup = self.setup.snippets.as_ref();
        let wanted = |r: &ChunkRecord, key: u128| setup.is_some_and(|s| s.key(&chunk_input(r)) == key);
        applied.indexed = self.index.set_snippets(&updates, self.setup.embedder.as_ref(), timing, &wanted)?;
        self.index.commit()?;
        Ok(applied)
    }

    /// Takes from the team cache the snippets of these jobs that a teammate wrote: into
    /// the local cache (made durable first) and `cached`, and off the list of jobs.
    fn take_team_snippets(
        &mut self,
        setup: &SnippetSetup,
        jobs: &mut Vec<SnippetJob>,
        cached: &mut Vec<SnippetUpdate>,
    ) -> Result<(), EngineError> {
        let (Some(team), Some(cache)) = (self.setup.team.clone(), self.snippet_cache.clone()) else {
            return Ok(());
        };
        if jobs.is_empty() || !team.usable() {
            return Ok(());
        }
        let keys: Vec<u128> = jobs.iter().map(|j| j.key).collect();
        let found = team.pull_snippets(&setup.wording(), &keys);
        let mut taken = 0;
        let mut left = Vec::with_capacity(jobs.len());
        for (job, shared) in jobs.drain(..).zip(found) {
            let Some(shared) = shared else {
                left.push(job);
                continue;
            };
            let snippet =
                Snippet { text: shared.text, model: setup.model_label.clone(), created_at: now_secs() };
            let io = |e| IndexError::Io { path: cache.path().display().to_string(), source: e };
            cache.put(job.key, &snippet).map_err(io)?;
            self.snippets_in_flight.back(job.chunk_id);
            cached.push(SnippetUpdate { chunk_id: job.chunk_id, key: job.key, snippet });
            taken += 1;
        }
        *jobs = left;
        if taken > 0 {
            cache
                .sync()
                .map_err(|e| IndexError::Io { path: cache.path().display().to_string(), source: e })?;
            self.tally(Tally { snippets_from_team: taken, ..Tally::default() });
        }
        Ok(())
    }

    /// Adds to the index's team tally (best effort: it is only a count).
    pub(super) fn tally(&self, mut more: Tally) {
        more.model = super::team::model_key(self.setup.embedder.as_ref()).identity;
        if let Err(e) = Tally::add(self.index.dir(), &more) {
            tracing::debug!("cannot update the team tally: {e}");
        }
    }

    /// The run that writes the snippets of every chunk waiting for one and not handed out
    /// yet, within the configured budget with `spent` already used from it; `None` when
    /// snippets are off or nothing waits. Chunks whose snippet is in the cache by now are
    /// indexed at once instead. Every job's outcome must come back through
    /// [`Engine::apply_snippets`].
    pub fn snippet_runner(&mut self, spent: Totals) -> Result<Option<SnippetRunner>, EngineError> {
        let Some(setup) = self.setup.snippets.clone() else { return Ok(None) };
        let jobs = self.snippet_jobs(usize::MAX)?;
        if jobs.is_empty() {
            return Ok(None);
        }
        let limits = setup.limits();
        let cache = self.snippet_cache.clone();
        let withdrawn = self.snippets_in_flight.withdrawn.clone();
        Ok(Some(SnippetRunner { setup, jobs, limits, spent, cache, withdrawn }))
    }

    /// Writes the snippets of every chunk waiting for one, within the configured budget
    /// (with `spent` already used from it), committing every second or so as they arrive.
    /// Stops early when the interrupt flag is set or the model keeps failing; what arrived
    /// is kept.
    pub fn write_snippets(
        &mut self,
        spent: Totals,
        progress: &mut dyn FnMut(&SnippetProgress),
    ) -> Result<SnippetRun, EngineError> {
        let Some(runner) = self.snippet_runner(spent)? else {
            let waiting = self.snippets_waiting();
            return Ok(SnippetRun { totals: spent, end: RunEnd::Finished, indexed: 0, waiting });
        };
        let mut state = SnippetProgress { done: 0, total: runner.len(), totals: spent };
        progress(&state);
        let interrupt = Arc::clone(&self.interrupt);
        let mut buffer = Vec::new();
        let mut last_apply = Instant::now();
        let mut indexed = 0;
        let mut failure: Option<EngineError> = None;
        let end = runner.run(&interrupt, &mut |outcome| {
            state.record(&outcome);
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
}

/// One run of the snippet model over the chunks that waited when it was made: the same run
/// for the CLI (on the caller's thread, applying as it goes) and the language server (on a
/// thread of its own, sending outcomes back to the folder's writer).
pub struct SnippetRunner {
    setup: SnippetSetup,
    jobs: Vec<SnippetJob>,
    limits: Limits,
    spent: Totals,
    /// Where each answer goes as soon as it arrives.
    cache: Option<Arc<SnippetCache>>,
    /// The engine's: chunks that left the index since the run was made.
    withdrawn: Withdrawn,
}

impl SnippetRunner {
    /// Chunks the run asks about.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether the run has nothing to ask (never the case for a runner the engine made).
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Sends the requests, handing each job's outcome to `sink` on this thread, until all
    /// are answered, the budget is spent, the model keeps failing or `stop` is set. A job
    /// whose chunk left the index meanwhile (a save, as the engine applies it) is not sent.
    ///
    /// Each snippet is added to the cache as soon as it arrives, on the thread that asked for
    /// it: the index takes snippets in batches, after the embedder, and a process killed
    /// meanwhile must not pay for the same snippets again. (It is made durable with the
    /// batch that indexes it.)
    pub fn run(self, stop: &AtomicBool, sink: &mut dyn FnMut(Outcome)) -> RunEnd {
        let cache = self.cache;
        let keep = |outcome: &Outcome| {
            if let (Some(cache), Outcome::Written { key, snippet, .. }) = (&cache, outcome)
                && let Err(e) = cache.put(*key, snippet)
            {
                tracing::warn!(cache = %cache.path().display(), "cannot add a snippet to the cache: {e}");
            }
        };
        let stops = Stops { run: stop, withdrawn: &self.withdrawn };
        generator::run(&self.setup, self.jobs, self.limits, self.spent, stops, &keep, sink)
    }
}

/// The context inputs of a stored chunk.
pub(super) fn chunk_input(r: &ChunkRecord) -> ChunkInput<'_> {
    ChunkInput { path: &r.path, title: &r.title, heading_path: &r.heading_path, text: &r.text }
}
