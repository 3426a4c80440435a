//! Comparing settings on a tiny workspace with known answers (`tests/data/eval/`): exact
//! metric values per variant, a variant without the header evaluated on its own index, and
//! the workspace's index left as it was.
//!
//! With BM25: "zebra" finds its answer first; "apple banana" second (the chunk above it
//! has both words), first once a window joins the two chunks; "backups" is found only
//! through the header (the answer's text never says it); "leopard" finds one of its two
//! answers first and never the other.

mod common;

use std::path::Path;

use common::{Counting, Fixture};
use situate::compare::{self, Axis};
use situate::eval::{self, Metrics};

fn workspace() -> Fixture {
    let f = Fixture::empty();
    common::copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/eval"), f.root());
    f
}

fn assert_metrics(label: &str, m: &Metrics, recall: [f64; 4], pass: [f64; 4], mrr: f64) {
    let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
    assert!(close(&m.recall, &recall), "{label}: recall {:?}, expected {recall:?}", m.recall);
    assert!(close(&m.pass, &pass), "{label}: pass {:?}, expected {pass:?}", m.pass);
    assert!((m.mrr_at_10 - mrr).abs() < 1e-9, "{label}: MRR@10 {}, expected {mrr}", m.mrr_at_10);
}

#[test]
fn compared_variants_have_their_exact_metrics() {
    let f = workspace();
    let mut engine = f.engine(Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    let queries = eval::load_queries(&f.root().join("queries.jsonl")).unwrap();
    let axes: Vec<Axis> = ["mode=bm25", "header=on,off", "expand=none,window"]
        .iter()
        .map(|a| compare::parse_axis(a).unwrap())
        .collect();
    let variants = compare::variants(&axes);
    let reports = compare::compare(&engine, "", &variants, &queries).unwrap();

    let labels: Vec<&str> = reports.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "mode=bm25 header=on expand=none",
            "mode=bm25 header=on expand=window",
            "mode=bm25 header=off expand=none",
            "mode=bm25 header=off expand=window"
        ]
    );
    let first_hits = |i: usize| reports[i].queries.iter().map(|q| q.first_hit).collect::<Vec<_>>();
    assert_eq!(first_hits(0), [Some(1), Some(2), Some(1), Some(1)]);
    assert_eq!(first_hits(1), [Some(1), Some(1), Some(1), Some(1)]);
    assert_eq!(first_hits(2), [Some(1), Some(2), None, Some(1)]);
    assert_eq!(first_hits(3), [Some(1), Some(1), None, Some(1)]);

    // Pass@k: "leopard" finds one of its two answers, so it counts one half.
    assert_metrics(
        labels[0],
        &reports[0].overall,
        [0.75, 1.0, 1.0, 1.0],
        [0.625, 0.875, 0.875, 0.875],
        0.875,
    );
    assert_metrics(labels[1], &reports[1].overall, [1.0, 1.0, 1.0, 1.0], [0.875, 0.875, 0.875, 0.875], 1.0);
    assert_metrics(
        labels[2],
        &reports[2].overall,
        [0.5, 0.75, 0.75, 0.75],
        [0.375, 0.625, 0.625, 0.625],
        0.625,
    );
    assert_metrics(
        labels[3],
        &reports[3].overall,
        [0.75, 0.75, 0.75, 0.75],
        [0.625, 0.625, 0.625, 0.625],
        0.75,
    );

    // The breakdown by kind is kept.
    let context = &reports[2].by_kind["context-dependent"];
    assert_metrics("header off, context-dependent", context, [0.0; 4], [0.0; 4], 0.0);
    assert_eq!(reports[2].by_kind["keyword"].queries, 3);

    // The variant without the header had an index of its own: the workspace's still holds
    // chunks with their header.
    let view = engine.view();
    let chunk = &view.chunks_at("b.md", None).unwrap()[0];
    assert_eq!(chunk.context, "Document: Backups > Retention");
    assert_eq!(view.status().chunks, 5);
}

#[test]
fn a_variant_that_changes_chunking_gets_its_own_index() {
    let f = workspace();
    let mut engine = f.engine(Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    let queries = eval::load_queries(&f.root().join("queries.jsonl")).unwrap();
    let bundle: Axis = vec![
        compare::parse_variant("mode=bm25").unwrap(),
        compare::parse_variant("mode=bm25 chunk.strategy=fixed").unwrap(),
    ];
    let reports = compare::compare(&engine, "", &compare::variants(&[bundle]), &queries).unwrap();
    // Fixed windows of 400 tokens hold each file whole: every first answer is at rank 1, and
    // "backups" is found in the text of b.md's only window.
    assert_eq!(
        reports[0].queries.iter().map(|q| q.first_hit).collect::<Vec<_>>(),
        [Some(1), Some(2), Some(1), Some(1)]
    );
    assert_eq!(
        reports[1].queries.iter().map(|q| q.first_hit).collect::<Vec<_>>(),
        [Some(1), Some(1), Some(1), Some(1)]
    );
    assert_eq!(engine.view().status().chunks, 5);
}
