//! Search: BM25 and vector candidates fused by weighted reciprocal rank.

use std::collections::HashMap;

use serde::Serialize;

use crate::config::{SearchConfig, SearchMode};
use crate::expand::{Expand, Expansion};
use crate::index::{ChunkRecord, IndexError, Snapshot, tokenizer};
use crate::providers::Embedder;

/// A query and how to run it.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    pub limit: usize,
    pub mode: SearchMode,
    /// Workspace-relative path prefixes; when non-empty, hits must lie under one of them.
    pub paths: Vec<String>,
    /// How hits are widened with their context before they are returned (see
    /// [`crate::expand`]).
    pub expand: Expand,
}

/// One result.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    #[serde(flatten)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expanded: Option<Expansion>,
}

/// One arm's ranked candidates.
#[derive(Debug, Clone)]
pub struct Ranked {
    pub weight: f32,
    /// Chunk ids with the arm's own score, best first.
    pub ids: Vec<(u64, f32)>,
}

/// A fused candidate: its id, fused score and 1-based rank in each arm.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub id: u64,
    pub score: f32,
    pub ranks: Vec<Option<u32>>,
}

/// Weighted reciprocal-rank fusion: score(d) = Σ weight / (k + rank(d)). Ties keep the
/// order of first appearance (arm order, then rank), so results are deterministic.
pub fn fuse(arms: &[Ranked], k: f32) -> Vec<Fused> {
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    let mut fused: Vec<Fused> = Vec::new();
    for (a, arm) in arms.iter().enumerate() {
        for (r, (id, _)) in arm.ids.iter().enumerate() {
            let rank = r as u32 + 1;
            let i = *by_id.entry(*id).or_insert_with(|| {
                fused.push(Fused { id: *id, score: 0.0, ranks: vec![None; arms.len()] });
                fused.len() - 1
            });
            if fused[i].ranks[a].is_none() {
                fused[i].ranks[a] = Some(rank);
                fused[i].score += arm.weight / (k + rank as f32);
            }
        }
    }
    // A stable sort keeps first-appearance order among equal scores.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

/// Runs a search on one committed snapshot of the index.
pub fn search(
    index: &Snapshot,
    embedder: &dyn Embedder,
    config: &SearchConfig,
    request: &SearchRequest,
) -> Result<Vec<Hit>, SearchError> {
    // With a path filter, take more candidates so that enough survive it.
    let candidates =
        if request.paths.is_empty() { config.candidates } else { config.candidates * 4 }.max(request.limit);
    let use_bm25 = request.mode != SearchMode::Vector;
    let use_vector = request.mode != SearchMode::Bm25;

    // Both arms always take part, in this order; an arm left out is empty and changes
    // nothing in the fusion.
    let mut bm25 = Ranked { weight: config.bm25_weight, ids: Vec::new() };
    let mut vector = Ranked { weight: config.vector_weight, ids: Vec::new() };
    if use_bm25 {
        let terms = tokenizer::query_terms(&request.query);
        bm25.ids = index.bm25(&terms, config.boosts(), candidates)?;
    }
    if use_vector && !request.query.trim().is_empty() {
        let query_vector = embedder
            .embed(&[request.query.as_str()])
            .map_err(|e| SearchError::Index(e.into()))?
            .pop()
            .unwrap_or_default();
        // A query of only unknown tokens embeds to nothing useful: leave the arm out.
        if query_vector.iter().any(|x| *x != 0.0) {
            vector.ids =
                index.nearest(&query_vector, candidates)?.into_iter().map(|(id, d)| (id, 1.0 - d)).collect();
        }
    }
    let keep = |record: &ChunkRecord| {
        request.paths.is_empty() || request.paths.iter().any(|p| under(&record.path, p))
    };
    hits_of(index, [bm25, vector], config.rrf_k, request.limit, keep)
}

/// The chunks most related to `of`: its stored vector and its words as the two arms,
/// without the chunks `exclude` rejects (itself, its neighbours).
pub fn similar(
    index: &Snapshot,
    config: &SearchConfig,
    of: &ChunkRecord,
    limit: usize,
    exclude: impl Fn(&ChunkRecord) -> bool,
) -> Result<Vec<Hit>, SearchError> {
    // Room for the excluded chunks, which rank high by construction.
    let candidates = config.candidates.max(limit) + 8;
    let mut terms = tokenizer::query_terms(&of.embedding_text());
    let mut seen = std::collections::HashSet::new();
    terms.retain(|t| seen.insert(t.clone()));
    let bm25 = Ranked { weight: config.bm25_weight, ids: index.bm25(&terms, config.boosts(), candidates)? };
    let mut vector = Ranked { weight: config.vector_weight, ids: Vec::new() };
    if let Some(v) = index.vector_of(of.id) {
        vector.ids = index.nearest(&v, candidates)?.into_iter().map(|(id, d)| (id, 1.0 - d)).collect();
    }
    hits_of(index, [bm25, vector], config.rrf_k, limit, |r| r.id != of.id && !exclude(r))
}

/// Fuses the BM25 and vector arms and loads the best `limit` chunks that `keep` accepts.
fn hits_of(
    index: &Snapshot,
    arms: [Ranked; 2],
    rrf_k: f32,
    limit: usize,
    keep: impl Fn(&ChunkRecord) -> bool,
) -> Result<Vec<Hit>, SearchError> {
    let fused = fuse(&arms, rrf_k);
    let [bm25_scores, vector_scores] = arms.map(|a| a.ids.into_iter().collect::<HashMap<u64, f32>>());

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
            let hit = Hit {
                chunk: record.clone(),
                score: f.score,
                bm25_rank: f.ranks[0],
                vector_rank: f.ranks[1],
                bm25_score: bm25_scores.get(&f.id).copied(),
                vector_similarity: vector_scores.get(&f.id).copied(),
                expanded: None,
            };
            hits.push(hit);
            if hits.len() == limit {
                return Ok(hits);
            }
        }
    }
    Ok(hits)
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
    let order = fuse(&arms, config.rrf_k);
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

/// Whether `path` lies under the prefix `prefix` (a folder or a file).
fn under(path: &str, prefix: &str) -> bool {
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

    fn arm(weight: f32, ids: &[u64]) -> Ranked {
        Ranked { weight, ids: ids.iter().map(|&i| (i, 0.0)).collect() }
    }

    #[test]
    fn fusion_rewards_agreement_between_arms() {
        let fused = fuse(&[arm(1.0, &[1, 2, 3]), arm(1.0, &[3, 4, 1])], 60.0);
        let order: Vec<u64> = fused.iter().map(|f| f.id).collect();
        assert_eq!(order, [1, 3, 2, 4]);
        assert_eq!(fused[0].ranks, [Some(1), Some(3)]);
        assert_eq!(fused[2].ranks, [Some(2), None]);
        let expected = 1.0 / 61.0 + 1.0 / 63.0;
        assert!((fused[0].score - expected).abs() < 1e-7);
    }

    #[test]
    fn weights_tip_the_balance() {
        let fused = fuse(&[arm(3.0, &[1, 2]), arm(1.0, &[2, 1])], 60.0);
        assert_eq!(fused[0].id, 1);
        let fused = fuse(&[arm(1.0, &[1, 2]), arm(3.0, &[2, 1])], 60.0);
        assert_eq!(fused[0].id, 2);
    }

    #[test]
    fn small_k_favours_top_ranks() {
        // With k = 0 the first of one arm beats the second of both.
        let fused = fuse(&[arm(1.0, &[1, 2]), arm(1.0, &[3, 2])], 0.0);
        assert_eq!(fused[0].id, 1);
        let fused = fuse(&[arm(1.0, &[1, 2]), arm(1.0, &[3, 2])], 60.0);
        assert_eq!(fused[0].id, 2);
    }

    #[test]
    fn an_empty_arm_changes_nothing() {
        let fused = fuse(&[arm(1.0, &[]), arm(1.0, &[5, 6])], 60.0);
        assert_eq!(fused.iter().map(|f| f.id).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(fused[0].ranks, [None, Some(1)]);
    }

    fn hit(path: &str, bm25: Option<f32>, similarity: Option<f32>) -> Hit {
        let chunk = ChunkRecord {
            id: 0,
            path: path.into(),
            ordinal: 0,
            start_line: 1,
            end_line: 1,
            start_byte: 0,
            end_byte: 0,
            title: String::new(),
            heading_path: Vec::new(),
            text: String::new(),
            context: String::new(),
            snippet: None,
            snippet_key: 0,
            token_count: 0,
            content_hash: 0,
            embed_hash: 0,
        };
        Hit {
            chunk,
            score: 0.1,
            bm25_rank: None,
            vector_rank: None,
            bm25_score: bm25,
            vector_similarity: similarity,
            expanded: None,
        }
    }

    #[test]
    fn hits_of_several_indexes_are_ranked_on_their_scores_not_their_local_ranks() {
        let config = crate::config::Config::default().search;
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
    fn path_prefixes_match_whole_segments() {
        assert!(under("docs/a.md", "docs"));
        assert!(under("docs/a.md", "docs/"));
        assert!(under("docs/a.md", "docs/a.md"));
        assert!(!under("docsx/a.md", "docs"));
        assert!(under("x.md", ""));
    }
}
