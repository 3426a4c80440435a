//! Filling pending vectors with a team cache: take what the team already has, lease what
//! nobody is computing, compute and share it, and leave what others are computing for later.
//!
//! A fill goes in two phases. First a pass over the whole queue asks the cache for every
//! waiting chunk, a batch at a time (a teammate's finished index makes this the whole job).
//! Then each step leases a batch at the head of the queue: what it wins is computed here
//! and pushed; what another member holds is looked up again and, if still missing, moved
//! to the back of the queue. The pass is repeated now and then, for what others pushed
//! meanwhile. Without a reachable cache, a step is a plain local fill.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::unshared::Unshared;
use super::{Engine, EngineError};
use crate::index::{Index, PendingTexts, embed_texts};
use crate::providers::Embedder;
use crate::team::tally::Tally;
use crate::team::{BATCH, ModelKey, Team};

/// How often the whole queue is looked up again while computing (teammates push meanwhile).
const REPASS: Duration = Duration::from_secs(30);

/// What one step of a fill did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filled {
    /// Vectors taken from the team cache.
    pub from_team: usize,
    /// Vectors computed here.
    pub computed: usize,
    /// Waiting chunks whose texts had a vector already (copies of a text), which they took.
    pub reused: usize,
    /// The step's batch was being computed by other members: nothing to do but wait.
    pub waiting: bool,
}

impl Filled {
    pub fn stored(&self) -> usize {
        self.from_team + self.computed + self.reused
    }
}

/// A fill's place in its pass over the queue.
pub(super) struct TeamFill {
    pub(super) team: Arc<Team>,
    model: ModelKey,
    /// Where the lookup pass is in the queue; `None` between passes.
    cursor: Option<usize>,
    /// When the pass under way started.
    pass_started: Option<Instant>,
    /// When the next pass may start: [`REPASS`] after the last one, or ten times its length
    /// if that is longer (a pass over a million waiting chunks takes a while, and finds
    /// nothing when nobody else is filling).
    next_pass: Option<Instant>,
    /// The cache was found unreachable and that was told ([`Engine::team_outage`]).
    outage_told: bool,
    /// Chunks whose vectors were computed here while the cache could not take them, in this
    /// process or an earlier one on the index.
    unshared: Unshared,
}

impl TeamFill {
    pub(super) fn new(team: Arc<Team>, embedder: &dyn Embedder, index_dir: &Path) -> TeamFill {
        let model = model_key(embedder);
        TeamFill {
            team,
            model,
            cursor: None,
            pass_started: None,
            next_pass: None,
            outage_told: false,
            unshared: Unshared::open(index_dir),
        }
    }

    /// Keeps these chunks' vectors, computed while the cache could not take them, to push
    /// later (a member who only reads pushes nothing).
    fn keep_unshared(&mut self, ids: impl IntoIterator<Item = u64>) {
        if self.team.writes() {
            self.unshared.keep(ids);
        }
    }

    /// Whether vectors computed while the cache could not take them wait, and it may be
    /// tried now.
    fn may_share(&self) -> bool {
        self.unshared.len() > 0 && self.team.writes() && self.team.usable()
    }

    /// Pushes a batch of the vectors computed while the cache could not take them; returns
    /// how many went (none when the cache is still away). A batch the index cannot give is
    /// given up, so that a damaged index does not make every step try it again.
    fn share_unshared(&mut self, index: &Index) -> Result<usize, EngineError> {
        let ids = self.unshared.next(BATCH);
        let take = ids.len();
        let items = match stored_texts_and_vectors(index, ids) {
            Ok(items) => items,
            Err(e) => {
                self.unshared.pushed(take);
                return Err(e);
            }
        };
        let items: Vec<(&str, &[f32])> = items.iter().map(|(t, v)| (t.as_str(), v.as_slice())).collect();
        self.team.push_vectors(&self.model, &items);
        if !self.team.usable() {
            return Ok(0);
        }
        self.unshared.pushed(take);
        Ok(take)
    }
}

/// The embedded text and stored vector of each of these chunks; a chunk removed meanwhile
/// is passed over.
fn stored_texts_and_vectors(index: &Index, ids: &[u64]) -> Result<Vec<(String, Vec<f32>)>, EngineError> {
    let records = index.snapshot().records(ids)?;
    let mut items = Vec::with_capacity(ids.len());
    for id in ids {
        if let (Some(record), Some(vector)) = (records.get(id), index.stored_vector(*id)?) {
            items.push((record.embedding_text(), vector));
        }
    }
    Ok(items)
}

/// How the team cache names a model: `provider/model`, whose `model` part carries what
/// changes its vectors (quantisation, tokens kept).
pub(super) fn model_key(embedder: &dyn Embedder) -> ModelKey {
    let identity = embedder.identity();
    ModelKey {
        identity: format!("{}/{}", identity.provider, identity.model),
        dimensions: identity.dimensions,
    }
}

impl Engine {
    /// How many vectors computed while the team cache could not take them wait to be
    /// pushed, when it may be tried now (0 otherwise, without a cache, and in a process that
    /// only reads the index: the list is the writer's).
    pub fn vectors_to_share(&self) -> usize {
        let fill = self.team_fill.as_ref().filter(|f| !self.index.is_read_only() && f.may_share());
        fill.map_or(0, |f| f.unshared.len())
    }

    /// Pushes a batch of the vectors computed while the team cache could not take them, in
    /// this process or an earlier one; returns how many went.
    pub fn share_vectors_step(&mut self) -> Result<usize, EngineError> {
        if self.vectors_to_share() == 0 {
            return Ok(0);
        }
        match self.team_fill.as_mut() {
            Some(fill) => fill.share_unshared(&self.index),
            None => Ok(0),
        }
    }

    /// Once per outage, that the team cache a fill asks has become unreachable, and why: a
    /// server tells its user, since the fill goes on computing every vector here meanwhile.
    pub fn team_outage(&mut self) -> Option<String> {
        let fill = self.team_fill.as_mut()?;
        match fill.team.unreachable() {
            Some(why) if !fill.outage_told => {
                fill.outage_told = true;
                Some(format!(
                    "the team cache at {} is unreachable ({why}): vectors are computed here \
                     meanwhile, and the cache is tried again now and then",
                    fill.team.shown()
                ))
            }
            Some(_) => None,
            None => {
                fill.outage_told = false;
                None
            }
        }
    }

    /// Stores up to about `max` pending vectors (more when they come from the team cache)
    /// and commits them.
    pub fn fill_pending_step(&mut self, max: usize) -> Result<Filled, EngineError> {
        let filled = self.fill_step(max)?;
        let started = Instant::now();
        self.index.commit()?;
        self.fill_commit_cost = started.elapsed();
        Ok(filled)
    }

    /// One step of a fill, uncommitted; with a team cache, its counts are added to the
    /// index's tally.
    pub(super) fn fill_step(&mut self, max: usize) -> Result<Filled, EngineError> {
        let filled = self.fill_step_uncounted(max)?;
        if self.team_fill.is_some() && filled.stored() > 0 {
            self.tally(Tally {
                vectors_from_team: filled.from_team as u64,
                vectors_computed: filled.computed as u64,
                ..Tally::default()
            });
        }
        Ok(filled)
    }

    fn fill_step_uncounted(&mut self, max: usize) -> Result<Filled, EngineError> {
        let embedder = Arc::clone(&self.setup.embedder);
        let Some(fill) = self.team_fill.as_mut().filter(|f| f.team.usable()) else {
            let ids = self.index.pending_vector_ids(0, max);
            let pending = self.index.pending_texts(&ids)?;
            let made: Vec<u64> = pending.texts.iter().map(|(id, _)| *id).collect();
            let computed = compute_texts(&mut self.index, embedder.as_ref(), pending.texts, None)?;
            if let Some(fill) = self.team_fill.as_mut() {
                fill.keep_unshared(made);
            }
            return Ok(Filled { computed, reused: pending.reused, ..Filled::default() });
        };
        if fill.may_share() {
            fill.share_unshared(&self.index)?;
        }
        if fill.cursor.is_none() && fill.next_pass.is_none_or(|at| Instant::now() >= at) {
            fill.cursor = Some(0);
            fill.pass_started = Some(Instant::now());
        }
        if let Some(cursor) = fill.cursor {
            let ids = self.index.pending_vector_ids(cursor, BATCH);
            if !ids.is_empty() {
                let waiting = self.index.pending_vector_count();
                let PendingTexts { texts, reused } = self.index.pending_texts(&ids)?;
                let refs: Vec<&str> = texts.iter().map(|(_, t)| t.as_str()).collect();
                let found = fill.team.pull_vectors(&fill.model, &refs);
                let vectors: Vec<(u64, Vec<f32>)> =
                    texts.iter().zip(found).filter_map(|((id, _), v)| v.map(|v| (*id, v))).collect();
                let from_team = self.index.put_pending_vectors(vectors)?;
                // The batch's chunks still waiting are passed over: the pass goes on after them.
                let left = ids.len().saturating_sub(waiting - self.index.pending_vector_count());
                fill.cursor = Some(cursor + left);
                if from_team + reused > 0 || fill.team.usable() {
                    return Ok(Filled { from_team, reused, ..Filled::default() });
                }
            }
            fill.cursor = None;
            let took = fill.pass_started.map_or(Duration::ZERO, |at| at.elapsed());
            fill.next_pass = Some(Instant::now() + REPASS.max(took * 10));
        }
        let ids = self.index.pending_vector_ids(0, max);
        let PendingTexts { texts, reused } = self.index.pending_texts(&ids)?;
        if texts.is_empty() {
            return Ok(Filled { reused, ..Filled::default() });
        }
        let refs: Vec<&str> = texts.iter().map(|(_, t)| t.as_str()).collect();
        let Some(won) = fill.team.claim_vectors(&fill.model, &refs) else {
            // Not sharing work (this member only reads, or the cache just went away).
            let computed = compute_texts(&mut self.index, embedder.as_ref(), texts, Some(fill))?;
            return Ok(Filled { computed, ..Filled::default() });
        };
        let (mine, others): (Vec<_>, Vec<_>) = texts.into_iter().zip(won).partition(|(_, won)| *won);
        let mine: Vec<(u64, String)> = mine.into_iter().map(|(t, _)| t).collect();
        let others: Vec<(u64, String)> = others.into_iter().map(|(t, _)| t).collect();
        // What others hold may be done by now; the rest waits at the back of the queue.
        let refs: Vec<&str> = others.iter().map(|(_, t)| t.as_str()).collect();
        let found = if others.is_empty() { Vec::new() } else { fill.team.pull_vectors(&fill.model, &refs) };
        let mut vectors = Vec::new();
        let mut held = Vec::new();
        for ((id, _), v) in others.iter().zip(found.into_iter().chain(std::iter::repeat(None))) {
            match v {
                Some(v) => vectors.push((*id, v)),
                None => held.push(*id),
            }
        }
        let from_team = self.index.put_pending_vectors(vectors)?;
        self.index.defer_pending_vectors(&held);
        let waiting = mine.is_empty() && from_team == 0 && reused == 0;
        let computed = compute_texts(&mut self.index, embedder.as_ref(), mine, Some(fill))?;
        Ok(Filled { from_team, computed, reused, waiting })
    }
}

/// Embeds these waiting texts here, stores them, notes the rate, and shares them (or keeps
/// them to share, when the cache goes away meanwhile).
fn compute_texts(
    index: &mut Index,
    embedder: &dyn Embedder,
    texts: Vec<(u64, String)>,
    team: Option<&mut TeamFill>,
) -> Result<usize, EngineError> {
    if texts.is_empty() {
        return Ok(0);
    }
    let started = Instant::now();
    let vectors = embed_texts(embedder, &texts)?;
    index.note_fill_rate(texts.len(), started.elapsed().as_secs_f64());
    if let Some(fill) = team {
        let items: Vec<(&str, &[f32])> =
            texts.iter().zip(&vectors).map(|((_, text), (_, v))| (text.as_str(), v.as_slice())).collect();
        fill.team.push_vectors(&fill.model, &items);
        if !fill.team.usable() {
            fill.keep_unshared(texts.iter().map(|(id, _)| *id));
        }
    }
    Ok(index.put_pending_vectors(vectors)?)
}
