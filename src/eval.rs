//! Retrieval evaluation: run queries with known answer locations through the same search
//! path as the CLI and editors, and measure Recall@k and MRR@10.
//!
//! Query file: one JSON object per line, `{"id", "query", "kind"?, "gold": [{"path",
//! "start_line", "end_line"}]}`. A hit counts when its path equals a gold path and its line
//! range overlaps the gold range. With expansion (`window`, `merge`), a hit's range is the
//! expanded one: that is what the reader gets, but it is wider than one chunk, so it
//! overlaps gold more easily and its figures are not comparable one for one with those of
//! single chunks.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::engine::{EngineError, View};
use crate::search::{Expand, Hit, SearchConfig, SearchMode, SearchRequest};

/// The cut-offs reported.
pub const RECALL_AT: [usize; 4] = [1, 5, 10, 20];

/// One query with its answers.
#[derive(Debug, Clone, Deserialize)]
pub struct EvalQuery {
    pub id: String,
    pub query: String,
    #[serde(default)]
    pub kind: Option<String>,
    pub gold: Vec<Gold>,
}

/// Where an answer lies.
#[derive(Debug, Clone, Deserialize)]
pub struct Gold {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
}

/// Recall at each cut-off and MRR@10 over a set of queries.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    pub queries: usize,
    /// Share of queries with a hit in the top k, for k in [`RECALL_AT`].
    pub recall: [f64; 4],
    /// Per query, the share of its gold locations hit in the top k, averaged (the Pass@k
    /// of Anthropic's contextual-retrieval notebook).
    pub pass: [f64; 4],
    pub mrr_at_10: f64,
    /// Lines per result in the top 10, averaged over queries: how much text a reader is
    /// handed, which expansion raises.
    pub lines_at_10: f64,
}

/// How one query went.
#[derive(Debug, Clone)]
pub struct QueryOutcome {
    pub id: String,
    pub kind: String,
    pub query: String,
    /// 1-based rank of the first hit within the top 20.
    pub first_hit: Option<usize>,
    /// For each gold location, the 1-based rank of the first hit on it.
    pub gold_ranks: Vec<Option<usize>>,
    /// Where the hits lay (path and lines, expanded when the search expanded them), for
    /// the run file.
    pub results: Vec<(String, u32, u32)>,
    /// Gold paths that name no indexed file (a typo, or a file the settings leave out):
    /// no hit can ever count for them.
    pub unknown_gold: Vec<String>,
}

/// The evaluation of one configuration.
#[derive(Debug, Clone)]
pub struct EvalReport {
    /// What the settings were, for a table row: the mode, or the settings compared.
    pub label: String,
    pub mode: SearchMode,
    pub expand: Expand,
    /// How the arms were fused (see [`SearchConfig::fusion_label`]).
    pub fusion: String,
    pub overall: Metrics,
    pub by_kind: BTreeMap<String, Metrics>,
    pub queries: Vec<QueryOutcome>,
}

/// An evaluation failure.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{path}: {reason}")]
    Queries { path: String, reason: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Reads a query file.
pub fn load_queries(path: &Path) -> Result<Vec<EvalQuery>, EvalError> {
    let err = |reason: String| EvalError::Queries { path: path.display().to_string(), reason };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let mut queries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let q: EvalQuery = serde_json::from_str(line).map_err(|e| err(format!("line {}: {e}", n + 1)))?;
        queries.push(q);
    }
    if queries.is_empty() {
        return Err(err("no queries".to_string()));
    }
    Ok(queries)
}

/// Runs every query with the ranking settings `search` (its `mode` and `expand` included)
/// over one view of an index, and scores the hits.
pub fn evaluate(view: &View, search: &SearchConfig, queries: &[EvalQuery]) -> Result<EvalReport, EvalError> {
    let depth = *RECALL_AT.last().unwrap_or(&20);
    let mut outcomes = Vec::with_capacity(queries.len());
    for q in queries {
        let request = SearchRequest {
            query: q.query.clone(),
            limit: depth,
            mode: search.mode,
            paths: Vec::new(),
            filters: Vec::new(),
            expand: search.expand,
        };
        let hits = view.search_with(search, &request)?;
        outcomes.push(QueryOutcome {
            id: q.id.clone(),
            kind: q.kind.clone().unwrap_or_else(|| "all".to_string()),
            query: q.query.clone(),
            first_hit: first_hit(&hits, &q.gold),
            gold_ranks: q.gold.iter().map(|g| first_hit(&hits, std::slice::from_ref(g))).collect(),
            results: hits
                .iter()
                .map(|h| {
                    let (start, end) = lines(h);
                    (h.chunk.path.clone(), start, end)
                })
                .collect(),
            unknown_gold: unknown_gold(view, q),
        });
    }
    let overall = metrics(outcomes.iter());
    let mut kinds: Vec<&str> = outcomes.iter().map(|o| o.kind.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    let by_kind =
        kinds.iter().map(|k| (k.to_string(), metrics(outcomes.iter().filter(|o| o.kind == *k)))).collect();
    Ok(EvalReport {
        label: search.mode.to_string(),
        mode: search.mode,
        expand: search.expand,
        fusion: search.fusion_label(),
        overall,
        by_kind,
        queries: outcomes,
    })
}

/// The gold paths of `query` that name no indexed file of `view`, each once.
pub fn unknown_gold(view: &View, query: &EvalQuery) -> Vec<String> {
    let mut unknown: Vec<String> = Vec::new();
    for g in &query.gold {
        if !view.indexed_paths().any(|p| p == g.path) && !unknown.contains(&g.path) {
            unknown.push(g.path.clone());
        }
    }
    unknown
}

/// 1-based rank of the first hit that overlaps a gold location.
pub fn first_hit(hits: &[Hit], gold: &[Gold]) -> Option<usize> {
    hits.iter()
        .position(|h| {
            let (start, end) = lines(h);
            gold.iter().any(|g| overlaps(&h.chunk.path, start, end, g))
        })
        .map(|i| i + 1)
}

/// The lines a hit gives the reader: its expansion when it has one, else its chunk.
fn lines(h: &Hit) -> (u32, u32) {
    match &h.expanded {
        Some(e) => (e.start_line, e.end_line),
        None => (h.chunk.start_line, h.chunk.end_line),
    }
}

fn overlaps(path: &str, start: u32, end: u32, gold: &Gold) -> bool {
    path == gold.path && start <= gold.end_line && gold.start_line <= end
}

/// Recall@k and MRR@10 from first-hit ranks.
pub fn metrics<'a>(outcomes: impl Iterator<Item = &'a QueryOutcome>) -> Metrics {
    let outcomes: Vec<&QueryOutcome> = outcomes.collect();
    let n = outcomes.len();
    if n == 0 {
        return Metrics::default();
    }
    let within = |r: &Option<usize>, k: usize| r.is_some_and(|r| r <= k);
    let recall = |k: usize| outcomes.iter().filter(|o| within(&o.first_hit, k)).count() as f64 / n as f64;
    let pass = |k: usize| {
        outcomes
            .iter()
            .map(|o| {
                let found = o.gold_ranks.iter().filter(|r| within(r, k)).count();
                found as f64 / o.gold_ranks.len().max(1) as f64
            })
            .sum::<f64>()
            / n as f64
    };
    let mrr = outcomes
        .iter()
        .map(|o| o.first_hit.filter(|r| *r <= 10).map_or(0.0, |r| 1.0 / r as f64))
        .sum::<f64>()
        / n as f64;
    let lines = outcomes
        .iter()
        .map(|o| {
            let top = &o.results[..o.results.len().min(10)];
            let total: u32 = top.iter().map(|(_, start, end)| end.saturating_sub(*start) + 1).sum();
            if top.is_empty() { 0.0 } else { f64::from(total) / top.len() as f64 }
        })
        .sum::<f64>()
        / n as f64;
    Metrics {
        queries: n,
        recall: RECALL_AT.map(recall),
        pass: RECALL_AT.map(pass),
        mrr_at_10: mrr,
        lines_at_10: lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(first_hit: Option<usize>) -> QueryOutcome {
        QueryOutcome {
            id: String::new(),
            kind: "k".into(),
            query: String::new(),
            first_hit,
            gold_ranks: vec![first_hit],
            results: Vec::new(),
            unknown_gold: Vec::new(),
        }
    }

    #[test]
    fn metrics_follow_their_definitions() {
        let o = [outcome(Some(1)), outcome(Some(3)), outcome(Some(12)), outcome(None)];
        let m = metrics(o.iter());
        assert_eq!(m.queries, 4);
        assert_eq!(m.recall, [0.25, 0.5, 0.5, 0.75]);
        assert!((m.mrr_at_10 - (1.0 + 1.0 / 3.0) / 4.0).abs() < 1e-12);
        assert_eq!(m.lines_at_10, 0.0);
    }

    #[test]
    fn lines_average_the_top_ten_per_query() {
        let mut wide = outcome(Some(1));
        wide.results = (0..12).map(|i| ("a.md".to_string(), 1, if i < 10 { 4 } else { 100 })).collect();
        let mut narrow = outcome(Some(1));
        narrow.results = vec![("a.md".to_string(), 7, 7), ("a.md".to_string(), 9, 11)];
        assert_eq!(metrics([wide, narrow].iter()).lines_at_10, (4.0 + 2.0) / 2.0);
    }

    #[test]
    fn pass_counts_the_share_of_gold_found() {
        let mut two_gold = outcome(Some(2));
        two_gold.gold_ranks = vec![Some(2), Some(7)];
        let m = metrics([two_gold, outcome(None)].iter());
        assert_eq!(m.recall, [0.0, 0.5, 0.5, 0.5]);
        assert_eq!(m.pass, [0.0, 0.25, 0.5, 0.5]);
    }

    #[test]
    fn overlap_needs_the_same_path_and_touching_lines() {
        let g = Gold { path: "a.md".into(), start_line: 10, end_line: 20 };
        assert!(overlaps("a.md", 20, 30, &g));
        assert!(overlaps("a.md", 1, 10, &g));
        assert!(!overlaps("a.md", 21, 30, &g));
        assert!(!overlaps("b.md", 10, 20, &g));
    }
}
