//! Retrieval quality floor on real data: the Traefik and Node.js documentation with their dev
//! queries from `../shared/data`, when present (a user's checkout does not have them; the
//! test then says so and passes). The floors sit well below the measured figures in the
//! README, so only a real regression trips them; the fusion rule — hybrid never worse than
//! its better arm — is checked as it is.

mod common;

use std::path::Path;

use common::{Counting, Fixture};
use situate::eval::{self, Metrics};
use situate::search::{SearchConfig, SearchMode};

/// Hybrid, BM25 and vector figures of the default settings on one corpus, or `None` when
/// the data is not there.
fn measure(corpus: &str, queries: &str, files: usize) -> Option<[Metrics; 3]> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let (docs, queries) = (data.join(corpus), data.join(queries));
    if !docs.is_dir() || !queries.is_file() {
        eprintln!("skipped: no evaluation data at {}", data.display());
        return None;
    }
    let f = Fixture::empty();
    common::copy_dir(&docs, f.root());
    let mut engine = f.engine(Counting::new());
    let report = engine.reconcile(&mut |_| {}).unwrap();
    assert_eq!(report.files_seen, files);
    let queries = eval::load_queries(&queries).unwrap();
    let view = engine.view();
    let run = |mode| {
        let search = SearchConfig { mode, ..engine.config().search.clone() };
        eval::evaluate(&view, &search, &queries).unwrap().overall
    };
    Some([run(SearchMode::Hybrid), run(SearchMode::Bm25), run(SearchMode::Vector)])
}

/// Hybrid is at least as good as the better of its arms in Recall@5 and MRR@10.
fn assert_fusion_never_loses(corpus: &str, [hybrid, bm25, vector]: &[Metrics; 3]) {
    let best_r5 = bm25.recall[1].max(vector.recall[1]);
    let best_mrr = bm25.mrr_at_10.max(vector.mrr_at_10);
    assert!(
        hybrid.recall[1] >= best_r5 - 1e-9,
        "{corpus}: hybrid R@5 {:.3} < {best_r5:.3}",
        hybrid.recall[1]
    );
    assert!(
        hybrid.mrr_at_10 >= best_mrr - 1e-9,
        "{corpus}: hybrid MRR@10 {:.3} < {best_mrr:.3}",
        hybrid.mrr_at_10
    );
}

#[test]
fn hybrid_search_keeps_its_quality_on_the_traefik_docs() {
    let Some(m) = measure("traefik-docs", "traefik-dev-queries.jsonl", 171) else { return };
    let [hybrid, bm25, _] = &m;
    // Measured: hybrid R@5 0.923, MRR@10 0.794; bm25 R@5 0.923, MRR@10 0.769.
    assert!(hybrid.recall[1] >= 0.87, "hybrid Recall@5 {:.3}", hybrid.recall[1]);
    assert!(hybrid.mrr_at_10 >= 0.74, "hybrid MRR@10 {:.3}", hybrid.mrr_at_10);
    assert!(bm25.recall[1] >= 0.85, "bm25 Recall@5 {:.3}", bm25.recall[1]);
    assert_fusion_never_loses("traefik", &m);
}

#[test]
fn hybrid_search_keeps_its_quality_on_the_nodejs_docs() {
    let Some(m) = measure("nodejs-docs", "nodejs-dev-queries.jsonl", 64) else { return };
    let [hybrid, bm25, _] = &m;
    // Measured: hybrid R@5 0.967, MRR@10 0.813; bm25 R@5 0.867, MRR@10 0.734.
    assert!(hybrid.recall[1] >= 0.90, "hybrid Recall@5 {:.3}", hybrid.recall[1]);
    assert!(hybrid.mrr_at_10 >= 0.76, "hybrid MRR@10 {:.3}", hybrid.mrr_at_10);
    assert!(bm25.recall[1] >= 0.80, "bm25 Recall@5 {:.3}", bm25.recall[1]);
    assert_fusion_never_loses("nodejs", &m);
}
