//! Evaluation reports as `situate eval --json` prints them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::eval::{EvalReport, Metrics, QueryOutcome};

/// The evaluation of one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReportJson {
    pub label: String,
    pub mode: String,
    pub expand: String,
    /// How a hybrid search fused its arms (`score: bm25 1, vector 0.3`), `-` otherwise.
    pub fusion: String,
    pub overall: MetricsJson,
    pub by_kind: BTreeMap<String, MetricsJson>,
    pub queries: Vec<QueryJson>,
}

/// Recall and Pass at 1, 5, 10 and 20, MRR@10 and lines per result.
#[derive(Debug, Clone, Serialize)]
pub struct MetricsJson {
    pub queries: usize,
    pub recall: [f64; 4],
    pub pass: [f64; 4],
    pub mrr_at_10: f64,
    pub lines_at_10: f64,
}

/// How one query went.
#[derive(Debug, Clone, Serialize)]
pub struct QueryJson {
    pub id: String,
    pub kind: String,
    pub query: String,
    pub first_hit: Option<usize>,
    pub gold_ranks: Vec<Option<usize>>,
    pub results: Vec<(String, u32, u32)>,
    /// Gold paths that name no indexed file (left out when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_gold: Vec<String>,
}

impl From<&Metrics> for MetricsJson {
    fn from(m: &Metrics) -> Self {
        MetricsJson {
            queries: m.queries,
            recall: m.recall,
            pass: m.pass,
            mrr_at_10: m.mrr_at_10,
            lines_at_10: m.lines_at_10,
        }
    }
}

impl From<&QueryOutcome> for QueryJson {
    fn from(q: &QueryOutcome) -> Self {
        QueryJson {
            id: q.id.clone(),
            kind: q.kind.clone(),
            query: q.query.clone(),
            first_hit: q.first_hit,
            gold_ranks: q.gold_ranks.clone(),
            results: q.results.clone(),
            unknown_gold: q.unknown_gold.clone(),
        }
    }
}

impl From<&EvalReport> for EvalReportJson {
    fn from(r: &EvalReport) -> Self {
        EvalReportJson {
            label: r.label.clone(),
            mode: r.mode.to_string(),
            expand: r.expand.to_string(),
            fusion: r.fusion.clone(),
            overall: MetricsJson::from(&r.overall),
            by_kind: r.by_kind.iter().map(|(k, m)| (k.clone(), MetricsJson::from(m))).collect(),
            queries: r.queries.iter().map(QueryJson::from).collect(),
        }
    }
}
