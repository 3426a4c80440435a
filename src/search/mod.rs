//! Search: BM25 and vector candidates fused by their normalised scores (or by rank), then
//! widened with their context on request.
//!
//! This module owns the ranking settings ([`SearchConfig`]), the fusion ([`fuse`]), the
//! BM25F query ([`bm25`]) and context enrichment ([`expand`]); the index below it only
//! stores chunks and answers term statistics and nearest-neighbour lookups.

mod bm25;
pub mod expand;
pub mod filter;
mod fuse;
pub mod preview;

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::analysis;
use crate::index::{ChunkRecord, IndexError, Scope, Snapshot};
use crate::providers::Embedder;

/// Chunk ids with their scores, best first.
type Scored = Vec<(u64, f32)>;
pub use bm25::{FieldBoosts, bm25, coverage};
pub use expand::{Expand, ExpandSettings, Expansion};
pub use filter::Filter;
pub use fuse::{Fused, Fusion, Ranked, fuse};

/// The most hits one search returns. Callers check their input against it and say so; the
/// search clamps to it as well, so no caller's number is ever trusted as an allocation size.
pub const MAX_LIMIT: usize = 1000;

/// The most candidates an arm takes before fusion.
pub const MAX_CANDIDATES: usize = 10_000;
/// The weight of the quick vectors (the built-in static model's) that stand in for a slow
/// model's pending ones: the static model's own fusion weight, whatever the slow model's.
const QUICK_WEIGHT: f32 = crate::providers::static_model::VECTOR_WEIGHT;

/// Which retrieval arms a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    Hybrid,
    Bm25,
    Vector,
}

impl fmt::Display for SearchMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Bm25 => "bm25",
            SearchMode::Vector => "vector",
        })
    }
}

/// Ranking parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    pub mode: SearchMode,
    /// Hits returned when the caller does not say.
    pub limit: usize,
    /// Candidates taken from each arm before fusion.
    pub candidates: usize,
    /// How the arms' candidates are fused.
    pub fusion: Fusion,
    /// The `k` of reciprocal-rank fusion.
    pub rrf_k: f32,
    pub bm25_weight: f32,
    pub vector_weight: f32,
    /// BM25 boost of the document title field.
    pub title_boost: f32,
    /// BM25 boost of the heading path field.
    pub headings_boost: f32,
    /// BM25 boost of the file path field.
    pub path_boost: f32,
    /// BM25 boost of the snippet field.
    pub snippet_boost: f32,
    /// How hits are widened with their context when the caller does not say.
    pub expand: Expand,
    /// `window` expansion: neighbouring chunks on each side of a hit.
    pub window: usize,
    /// `merge` expansion: the share of a section's chunks that must be hits for the whole
    /// section to replace them.
    pub merge_share: f32,
    /// How far the BM25 arm's weight follows the share of the query its best candidate
    /// holds (that share raised to this power; 0: a fixed weight). See [`Arms::new`].
    pub bm25_coverage: f32,
    /// A search without filters leaves out the hits that hold none of the query's words and
    /// score less than this share of the best hit (0 keeps every hit up to the limit): in a
    /// folder of a few notes, the notes that have nothing to do with the query would
    /// otherwise fill the list. See [`above_floor`].
    pub min_score_share: f32,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            mode: SearchMode::Hybrid,
            limit: 10,
            candidates: 100,
            // Chosen on the dev queries of the Traefik and Node.js docs and the
            // contextual-retrieval set together (README, "How the defaults were chosen"):
            // with the built-in static model, score fusion at a vector weight of 0.2 to 0.4
            // is at least as good as BM25 alone on all three in R@5 and MRR@10, where rank
            // fusion lost R@5 on Traefik. `rrf_k` applies to `fusion = "rrf"` only. A
            // configuration's vector weight defaults to its model's
            // (`EmbeddingConfig::default_vector_weight`); this is the static model's.
            fusion: Fusion::Score,
            rrf_k: 10.0,
            bm25_weight: 1.0,
            vector_weight: crate::providers::static_model::VECTOR_WEIGHT,
            title_boost: 2.0,
            headings_boost: 1.0,
            path_boost: 1.0,
            snippet_boost: 1.0,
            expand: Expand::None,
            window: 1,
            merge_share: 0.5,
            // The static model's, as the vector weight is; e5's is its own.
            bm25_coverage: crate::providers::static_model::BM25_COVERAGE,
            // On the dev sets, the first answer among the first ten hits scored at least
            // 0.32 of the best hit, and the tenth hit 0.30 to 0.42 of it at the median
            // (docs/models-and-quality.md, "A floor under the hits").
            min_score_share: 0.1,
        }
    }
}

impl SearchConfig {
    /// The BM25 field weights.
    pub fn boosts(&self) -> FieldBoosts {
        FieldBoosts {
            title: self.title_boost,
            headings: self.headings_boost,
            path: self.path_boost,
            snippet: self.snippet_boost,
        }
    }

    /// How a hybrid search weighs its arms, for reports: `score: bm25 1, vector 0.3`,
    /// `score: bm25 1 × coverage^0.5, vector 0.5` or
    /// `rrf k=10: bm25 1, vector 0.5`; `-` for a search with one arm.
    pub fn fusion_label(&self) -> String {
        if self.mode != SearchMode::Hybrid {
            return "-".to_string();
        }
        let method = match self.fusion {
            Fusion::Score => "score".to_string(),
            Fusion::Rrf => format!("rrf k={}", self.rrf_k),
        };
        let coverage = if self.bm25_coverage > 0.0 {
            format!(" × coverage^{}", self.bm25_coverage)
        } else {
            String::new()
        };
        format!("{method}: bm25 {}{coverage}, vector {}", self.bm25_weight, self.vector_weight)
    }

    /// The expansion settings, with `expand` as the kind of expansion.
    pub fn expand_settings(&self, expand: Expand) -> ExpandSettings {
        ExpandSettings { expand, window: self.window, merge_share: self.merge_share }
    }
}

/// A query and how to run it.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    pub limit: usize,
    pub mode: SearchMode,
    /// Workspace-relative path prefixes; when non-empty, hits must lie under one of them.
    pub paths: Vec<String>,
    /// Front matter filters; hits must match all of them.
    pub filters: Vec<Filter>,
    /// How hits are widened with their context before they are returned (see
    /// [`expand`]).
    pub expand: Expand,
}

/// What a caller may say about a search; what it leaves out comes from the settings.
#[derive(Debug, Clone, Default)]
pub struct SearchOptions {
    pub limit: Option<usize>,
    pub mode: Option<SearchMode>,
    pub expand: Option<Expand>,
    /// Workspace-relative path prefixes.
    pub paths: Vec<String>,
    /// Front matter filters, all of which hits must match.
    pub filters: Vec<Filter>,
}

impl SearchRequest {
    /// A request for `query` with `options` laid over the configured defaults.
    pub fn with_defaults(
        query: impl Into<String>,
        options: SearchOptions,
        config: &SearchConfig,
    ) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            limit: options.limit.unwrap_or(config.limit).clamp(1, MAX_LIMIT),
            mode: options.mode.unwrap_or(config.mode),
            paths: options.paths,
            filters: options.filters,
            expand: options.expand.unwrap_or(config.expand),
        }
    }
}

/// One result.
#[derive(Debug, Clone)]
pub struct Hit {
    pub chunk: ChunkRecord,
    /// Fused score (higher is better).
    pub score: f32,
    /// 1-based rank in the BM25 arm, when the chunk was among its candidates.
    pub bm25_rank: Option<u32>,
    /// 1-based rank in the vector arm, when the chunk was among its candidates.
    pub vector_rank: Option<u32>,
    pub bm25_score: Option<f32>,
    /// Cosine similarity to the query.
    pub vector_similarity: Option<f32>,
    /// The run of chunks the hit was widened to, when the search asked for expansion. The
    /// fields above still describe the best-matching chunk, where an editor should jump.
    pub expanded: Option<Expansion>,
    /// The lines of the chunk that show why it matched (see [`preview`]); empty until the
    /// caller asks for them.
    pub preview: Vec<preview::PreviewLine>,
}

/// Runs a search on one committed snapshot of the index. `embedder` made the index's
/// vectors; `quick`, when given, made the quick vectors that stand in for pending ones (see
/// [`crate::index`]), searched as an arm of their own while any are left.
pub fn search(
    index: &Snapshot,
    embedder: &dyn Embedder,
    quick: Option<&dyn Embedder>,
    config: &SearchConfig,
    request: &SearchRequest,
) -> Result<Vec<Hit>, SearchError> {
    let limit = request.limit.clamp(1, MAX_LIMIT);
    let candidates = config.candidates.max(limit).min(MAX_CANDIDATES);
    let use_bm25 = request.mode != SearchMode::Vector;
    let use_vector = request.mode != SearchMode::Bm25 && !request.query.trim().is_empty();
    // Front matter and path filters are applied inside each arm: the chunks they allow are
    // looked up first, BM25 scores only those, and only their vectors are compared.
    let metadata: Vec<String> = request.filters.iter().map(Filter::term).collect();
    let scope = Scope { metadata: &metadata, paths: &request.paths };
    let allowed = if scope.is_everything() { None } else { Some(index.ids_in(&scope)?) };
    if allowed.as_ref().is_some_and(|ids| ids.is_empty()) {
        return Ok(Vec::new());
    }

    // All arms always take part; an arm left out is empty and changes nothing in the
    // fusion. The words' arm runs beside the embedding of the query and the vector arms,
    // on the other core: on a large index each is tens of milliseconds.
    let mut arms = Arms::new(config, index);
    // The words' candidates, and the share of the query the best one holds.
    let words = || -> Result<Option<(Scored, Option<f32>)>, SearchError> {
        if !use_bm25 {
            return Ok(None);
        }
        let query = words_of(index, &request.query);
        let languages = languages_held(index);
        let mut terms = analysis::weighted_query_terms_in(&query, &languages);
        terms.extend(compound_parts_in(index, &query, &languages, &terms));
        let ids = bm25(index, &terms, config.boosts(), candidates, &scope)?;
        let share = if use_vector && arms.coverage_power > 0.0 {
            Some(best_coverage(index, &query, config.boosts(), &ids)?)
        } else {
            None
        };
        Ok(Some((ids, share)))
    };
    let vectors = || -> Result<Option<(Scored, Scored)>, SearchError> {
        if !use_vector {
            return Ok(None);
        }
        vector_arms(index, embedder, quick, request, allowed.as_ref(), candidates).map(Some)
    };
    let (words, vectors) = rayon::join(words, vectors);
    if let Some((ids, share)) = words? {
        arms.words.ids = ids;
        if let Some(share) = share {
            arms.words.weight = fuse::bm25_weight(arms.words.weight, share, arms.coverage_power);
        }
    }
    if let Some((own, quick)) = vectors? {
        arms.vector.ids = own;
        arms.quick.ids = quick;
    }
    // Every arm searched within the scope: each candidate is in it.
    // Filters narrow each arm's candidates to a few, whose normalised scores then spread
    // over the whole range: a floor would cut notes the filter asked for.
    let floor =
        if request.paths.is_empty() && request.filters.is_empty() { config.min_score_share } else { 0.0 };
    hits_of(index, arms, config, limit, floor, |_| true)
}

/// The two vector arms: the chunks nearest to the query by the index's own model and, among
/// those whose vectors are pending, by the quick model. The query is embedded as chunks are
/// ([`analysis::embedded_text`]): a query typed in either Chinese script, or with kana of
/// either width, meets notes written either way.
fn vector_arms(
    index: &Snapshot,
    embedder: &dyn Embedder,
    quick: Option<&dyn Embedder>,
    request: &SearchRequest,
    allowed: Option<&HashSet<u64>>,
    candidates: usize,
) -> Result<(Scored, Scored), SearchError> {
    let text = analysis::embedded_text(request.query.clone());
    // A query of only unknown tokens embeds to nothing useful: leave the arm out.
    let own = match embed_query(embedder, &text) {
        Ok(v) => v,
        // A model server that is down must not take search with it: the words (and the
        // quick vectors) still answer. Only a search by meaning alone fails.
        Err(e) if request.mode == SearchMode::Hybrid => {
            tracing::warn!("the query could not be embedded, so this search matches words only: {e}");
            None
        }
        Err(e) => return Err(e),
    };
    let quick = match quick.filter(|_| index.quick_count() > 0) {
        Some(quick) => embed_query(quick, &text)?,
        None => None,
    };
    if let Some(allowed) = allowed {
        return Ok(index.nearest_among(
            own.as_deref().unwrap_or_default(),
            quick.as_deref(),
            allowed,
            candidates,
        )?);
    }
    let own_ids = match &own {
        Some(v) => index.nearest(v, candidates)?,
        None => Vec::new(),
    };
    let quick_ids = match &quick {
        Some(v) => index.nearest_quick(v, candidates)?,
        None => Vec::new(),
    };
    Ok((own_ids, quick_ids))
}

/// The share of the query (by IDF) that BM25's best candidate holds, the query analysed by
/// the rules of the candidate's language: the terms other languages' rules give it are not
/// words the candidate could hold.
fn best_coverage(
    index: &Snapshot,
    query: &str,
    boosts: FieldBoosts,
    ids: &[(u64, f32)],
) -> Result<f32, SearchError> {
    let Some(&(best, _)) = ids.first() else { return Ok(1.0) };
    let Some(record) = index.records(&[best])?.remove(&best) else { return Ok(1.0) };
    let language = record.language();
    let held = analysis::document_terms_in(&record.embedding_text(), language);
    Ok(coverage(index, &analysis::weighted_query_terms_in(query, &[language]), boosts, &held))
}

/// The query as the words' arm reads it: without the grammar of an English question
/// ([`analysis::without_question_grammar`]) when the query has no CJK letter and most chunks
/// of `index` are written in Chinese, Japanese or Korean ([`analysis::mostly_cjk`]).
fn words_of<'q>(index: &Snapshot, query: &'q str) -> std::borrow::Cow<'q, str> {
    let doc_freq = |term: &str| index.doc_freq(crate::index::TextField::Text, term);
    if query.is_empty() || analysis::has_cjk(query) || !analysis::mostly_cjk(doc_freq, index.num_docs()) {
        return std::borrow::Cow::Borrowed(query);
    }
    analysis::without_question_grammar(query)
}

/// The words that the compounds of `query` are made of, by the rules of each compounding
/// language `index` holds, where `index` holds them ([`analysis::compound_parts`]), with
/// their weights; those among `terms` are left out.
pub fn compound_parts(index: &Snapshot, query: &str, terms: &[(String, f32)]) -> Vec<(String, f32)> {
    compound_parts_in(index, query, &languages_held(index), terms)
}

/// [`compound_parts`] by the rules of `languages`, the languages `index` holds.
fn compound_parts_in(
    index: &Snapshot,
    query: &str,
    languages: &[analysis::Language],
    terms: &[(String, f32)],
) -> Vec<(String, f32)> {
    let doc_freq = |term: &str| index.doc_freq(crate::index::TextField::Text, term);
    analysis::compound_parts(query, languages, terms, doc_freq)
}

/// The languages whose rules analysed some chunk of `index`: a query is analysed by each.
fn languages_held(index: &Snapshot) -> Vec<analysis::Language> {
    analysis::languages_held(|marker| index.doc_freq(crate::index::TextField::Text, marker))
}

/// The query's vector, or `None` when it embeds to nothing (only unknown tokens).
fn embed_query(embedder: &dyn Embedder, query: &str) -> Result<Option<Vec<f32>>, SearchError> {
    let v = embedder.embed_query(query).map_err(|e| SearchError::Index(e.into()))?;
    Ok(v.iter().any(|x| *x != 0.0).then_some(v))
}

/// The chunks most related to `of`: its stored vector (or the quick vector standing in for
/// it) and its words as the arms, without the chunks `exclude` rejects (itself, its
/// neighbours).
pub fn similar(
    index: &Snapshot,
    config: &SearchConfig,
    of: &ChunkRecord,
    limit: usize,
    exclude: impl Fn(&ChunkRecord) -> bool,
) -> Result<Vec<Hit>, SearchError> {
    let limit = limit.clamp(1, MAX_LIMIT);
    // Room for the excluded chunks, which rank high by construction.
    let candidates = config.candidates.max(limit).min(MAX_CANDIDATES) + 8;
    let terms = analysis::weighted_query_terms_in(&of.embedding_text(), &languages_held(index));
    let mut arms = Arms::new(config, index);
    arms.words.ids = bm25(index, &terms, config.boosts(), candidates, &Scope::default())?;
    if let Some(v) = index.vector_of(of.id)? {
        arms.vector.ids = index.nearest(&v, candidates)?;
    } else if let Some(v) = index.quick_vector_of(of.id)? {
        arms.quick.ids = index.nearest_quick(&v, candidates)?;
    }
    hits_of(index, arms, config, limit, 0.0, |r| r.id != of.id && !exclude(r))
}

/// The arms of one search: BM25, the index's vectors, and the quick vectors standing in
/// for pending ones.
struct Arms {
    words: Ranked,
    vector: Ranked,
    quick: Ranked,
    /// The power of BM25's coverage that scales its weight in this search.
    coverage_power: f32,
}

impl Arms {
    /// Each vector arm has its model's weight scaled by the share of chunks it covers. The
    /// similarities of two models are not comparable, and each arm's best candidate scores
    /// its arm's full weight: scaled this way, the few chunks of a file saved a moment ago
    /// cannot outrank the best match among thousands of vectors, while on a first index,
    /// before any vector of the slow model exists, the quick arm has the whole weight.
    ///
    /// BM25's weight follows how much of the query its best candidate holds (to the power
    /// `bm25_coverage`): min-max normalisation gives an arm's best candidate full marks even
    /// when it matched only the query's common words, as for a paraphrase, and the vector
    /// arm then needs a larger lead to win. A keyword query's best hit holds all of it and
    /// keeps BM25's whole weight. The power is the model's own and fades with the quick
    /// arm's share: the static model's vectors are too weak to lean on.
    fn new(config: &SearchConfig, index: &Snapshot) -> Arms {
        let quick_share = match index.num_docs() {
            0 => 0.0,
            n => (index.quick_count() as f32 / n as f32).min(1.0),
        };
        Arms {
            words: Ranked { weight: config.bm25_weight, ids: Vec::new() },
            vector: Ranked { weight: config.vector_weight * (1.0 - quick_share), ids: Vec::new() },
            quick: Ranked { weight: QUICK_WEIGHT * quick_share, ids: Vec::new() },
            coverage_power: config.bm25_coverage * (1.0 - quick_share),
        }
    }
}

/// Fuses the arms and loads the best `limit` chunks that `keep` accepts.
fn hits_of(
    index: &Snapshot,
    arms: Arms,
    config: &SearchConfig,
    limit: usize,
    floor: f32,
    keep: impl Fn(&ChunkRecord) -> bool,
) -> Result<Vec<Hit>, SearchError> {
    let arms = [arms.words, arms.vector, arms.quick];
    let mut fused = fuse(&arms, config.fusion, config.rrf_k);
    order_ties(index, &mut fused, limit)?;
    let [bm25_scores, vector_scores, quick_scores] =
        arms.map(|a| a.ids.into_iter().collect::<HashMap<u64, f32>>());

    // Load records best-first until enough pass the filter.
    let mut hits = Vec::with_capacity(limit);
    for window in fused.chunks(limit.max(16)) {
        let ids: Vec<u64> = window.iter().map(|f| f.id).collect();
        let records = index.records(&ids)?;
        for f in window {
            // A vector may outlive its chunk for a moment (or after a crash); skip it.
            let Some(record) = records.get(&f.id) else { continue };
            if !keep(record) {
                continue;
            }
            // Under the same floor, a note of headings alone comes by its words only.
            if floor > 0.0 && f.ranks[0].is_none() && crate::chunk::holds_headings_alone(&record.text) {
                continue;
            }
            let hit = Hit {
                chunk: record.clone(),
                score: f.score,
                bm25_rank: f.ranks[0],
                // A chunk has its own vector or a quick one standing in, never both.
                vector_rank: f.ranks[1].or(f.ranks[2]),
                bm25_score: bm25_scores.get(&f.id).copied(),
                vector_similarity: vector_scores.get(&f.id).or(quick_scores.get(&f.id)).copied(),
                expanded: None,
                preview: Vec::new(),
            };
            hits.push(hit);
            if hits.len() == limit {
                return Ok(above_floor(hits, floor));
            }
        }
    }
    Ok(above_floor(hits, floor))
}

/// `hits` (best first) without those that the words' arm did not find and that score less
/// than `share` of the first. A hit that holds the query's words stays whatever its score:
/// each arm's scores are normalised between its best and worst candidates, so in a small
/// folder the note with the fewest of them scores near nothing, as the worst of few.
fn above_floor(mut hits: Vec<Hit>, share: f32) -> Vec<Hit> {
    if let Some(best) = hits.first().map(|h| h.score).filter(|&s| s > 0.0) {
        hits.retain(|h| h.bm25_rank.is_some() || h.score >= share * best);
    }
    hits
}

/// Puts candidates with equal fused scores (duplicated passages, which score alike) in the
/// order of their place in the workspace, path then line. Without it their order would
/// follow the index's segments and chunk ids, so the same files could answer differently
/// after an incremental update than after indexing from scratch. Only the runs of ties
/// that can reach the answer are looked at.
fn order_ties(index: &Snapshot, fused: &mut [Fused], limit: usize) -> Result<(), SearchError> {
    // Filters (paths, expansion neighbours) may pass over some candidates: look further.
    let reach = fused.len().min(limit.saturating_mul(4).saturating_add(16));
    let mut start = 0;
    while start < reach {
        let score = fused[start].score;
        let end = start + fused[start..].iter().take_while(|f| f.score == score).count();
        if end - start > 1 {
            let ids: Vec<u64> = fused[start..end].iter().map(|f| f.id).collect();
            let records = index.records(&ids)?;
            let place = |f: &Fused| records.get(&f.id).map(|r| (r.path.clone(), r.start_line));
            fused[start..end].sort_by_cached_key(|f| (place(f).is_none(), place(f), f.id));
        }
        start = end;
    }
    Ok(())
}

/// Merges the hits of several indexes (a multi-folder workspace) into one ranking: fused
/// scores of different indexes are not comparable (each index's best hit scores alike), so
/// the hits are ranked again by their BM25 scores and vector similarities across all
/// lists, and fused. One list is returned as it is. Items carry their list's number.
pub fn merge(lists: Vec<Vec<Hit>>, config: &SearchConfig, limit: usize) -> Vec<(usize, Hit)> {
    let mut all: Vec<(usize, Hit)> =
        lists.into_iter().enumerate().flat_map(|(n, hits)| hits.into_iter().map(move |h| (n, h))).collect();
    if all.iter().all(|(n, _)| *n == 0) {
        all.truncate(limit);
        return all;
    }
    let arm = |weight: f32, score: fn(&Hit) -> Option<f32>| {
        let mut ids: Vec<(u64, f32)> =
            all.iter().enumerate().filter_map(|(i, (_, h))| Some((i as u64, score(h)?))).collect();
        ids.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ranked { weight, ids }
    };
    let arms =
        [arm(config.bm25_weight, |h| h.bm25_score), arm(config.vector_weight, |h| h.vector_similarity)];
    let order = fuse(&arms, config.fusion, config.rrf_k);
    let mut slots: Vec<Option<(usize, Hit)>> = all.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|f| {
            let (n, mut hit) = slots.get_mut(f.id as usize)?.take()?;
            hit.score = f.score;
            Some((n, hit))
        })
        .take(limit)
        .collect()
}

/// Whether `path` lies under the prefix `prefix` (a folder or a file), as the path filter of a
/// [`SearchRequest`] reads it.
pub fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty() || path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

/// A search failure.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Index(#[from] IndexError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(path: &str, bm25: Option<f32>, similarity: Option<f32>) -> Hit {
        let chunk = ChunkRecord::sample(path, "", 1);
        Hit {
            chunk,
            score: 0.1,
            bm25_rank: None,
            vector_rank: None,
            bm25_score: bm25,
            vector_similarity: similarity,
            expanded: None,
            preview: Vec::new(),
        }
    }

    #[test]
    fn hits_of_several_indexes_are_ranked_on_their_scores_not_their_local_ranks() {
        let config = SearchConfig::default();
        // Each list's first hit has the same fused score; the second list's is better on both arms.
        let a = vec![hit("a1", Some(2.0), Some(0.3)), hit("a2", Some(1.0), Some(0.2))];
        let b = vec![hit("b1", Some(5.0), Some(0.6))];
        let merged = merge(vec![a.clone(), b], &config, 2);
        let order: Vec<(usize, &str)> = merged.iter().map(|(n, h)| (*n, h.chunk.path.as_str())).collect();
        assert_eq!(order, [(1, "b1"), (0, "a1")]);
        // One list stays as it was.
        let single = merge(vec![a], &config, 5);
        assert_eq!(single.iter().map(|(_, h)| h.chunk.path.as_str()).collect::<Vec<_>>(), ["a1", "a2"]);
        assert_eq!(single[0].1.score, 0.1);
    }

    #[test]
    fn hits_far_below_the_best_are_left_out_unless_they_hold_the_query_words() {
        let mut words = hit("words", Some(1.0), None);
        words.bm25_rank = Some(3);
        let mut hits = vec![hit("best", None, Some(0.9)), hit("near", None, Some(0.5)), words];
        for (h, score) in hits.iter_mut().zip([1.0, 0.1, 0.01]) {
            h.score = score;
        }
        hits.push(Hit { score: 0.09, ..hit("far", None, Some(0.1)) });
        let kept =
            |share| above_floor(hits.clone(), share).into_iter().map(|h| h.chunk.path).collect::<Vec<_>>();
        assert_eq!(kept(0.1), ["best", "near", "words"]);
        assert_eq!(kept(0.0), ["best", "near", "words", "far"]);
        assert!(above_floor(Vec::new(), 0.1).is_empty());
    }

    #[test]
    fn path_prefixes_match_whole_segments() {
        assert!(under("docs/a.md", "docs"));
        assert!(under("docs/a.md", "docs/"));
        assert!(under("docs/a.md", "docs/a.md"));
        assert!(!under("docsx/a.md", "docs"));
        assert!(under("x.md", ""));
    }

    #[test]
    fn the_fusion_label_names_the_coverage_power_when_there_is_one() {
        let config = SearchConfig::default();
        assert_eq!(config.fusion_label(), "score: bm25 1, vector 0.3");
        let config = SearchConfig { bm25_coverage: 0.5, vector_weight: 0.5, ..config };
        assert_eq!(config.fusion_label(), "score: bm25 1 × coverage^0.5, vector 0.5");
        let config = SearchConfig { mode: SearchMode::Bm25, ..config };
        assert_eq!(config.fusion_label(), "-");
    }
}
