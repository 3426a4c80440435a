//! The `transformer` embedder on a tiny, randomly initialised BERT that the tests write
//! themselves: vectors (shape, norm, determinism, independence from batching, truncation),
//! load errors that name the broken file, and an engine that indexes and searches with it.
#![cfg(feature = "transformer")]

mod common;

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use common::Fixture;
use serde_json::json;
use situate::engine::Engine;
use situate::index::OpenMode;
use situate::providers::transformer::{TransformerEmbedder, TransformerOptions};
use situate::providers::{EmbedError, Embedder};
use situate::search::{SearchMode, SearchRequest};

const HIDDEN: usize = 32;
const LAYERS: usize = 2;
const INTERMEDIATE: usize = 64;
const POSITIONS: usize = 512;
/// The tiny model's `sentence_bert_config.json` limit, below its 512 positions.
const TRAINED_TOKENS: usize = 96;

/// WordPiece vocabulary: the special tokens, then every letter and digit alone and as a
/// word continuation, so that any lowercase word is spelled out and no two texts collide.
fn vocabulary() -> Vec<String> {
    let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].map(String::from).to_vec();
    let symbols: Vec<char> = ('a'..='z').chain('0'..='9').collect();
    vocab.extend(symbols.iter().map(|c| c.to_string()));
    vocab.extend(symbols.iter().map(|c| format!("##{c}")));
    vocab.extend(".,:;!?>-#*()/'\"".chars().map(|c| c.to_string()));
    vocab
}

/// A tokenizer.json as Hugging Face exports them for BERT, fixed 128-token padding and
/// truncation included (the provider must override both).
fn tokenizer_json(vocab: &[String]) -> serde_json::Value {
    let ids: serde_json::Map<String, serde_json::Value> =
        vocab.iter().enumerate().map(|(i, t)| (t.clone(), json!(i))).collect();
    let special = |id: usize| {
        json!({"id": id, "content": vocab[id], "single_word": false, "lstrip": false, "rstrip": false,
               "normalized": false, "special": true})
    };
    json!({
        "version": "1.0",
        "truncation": {"max_length": 128, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": null,
                    "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]"},
        "added_tokens": (0..5).map(special).collect::<Vec<_>>(),
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}
            }
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids}
    })
}

fn config_json(vocab_size: usize) -> serde_json::Value {
    json!({
        "architectures": ["BertModel"], "model_type": "bert",
        "vocab_size": vocab_size, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
        "num_attention_heads": 2, "intermediate_size": INTERMEDIATE, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": POSITIONS, "type_vocab_size": 2, "initializer_range": 0.02,
        "layer_norm_eps": 1e-12, "pad_token_id": 0, "position_embedding_type": "absolute"
    })
}

/// A small xorshift generator: the weights only need to be fixed by the seed.
struct Random(u64);

impl Random {
    fn tensor(&mut self, shape: &[usize], scale: f32) -> Tensor {
        let n = shape.iter().product();
        let values: Vec<f32> = (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                ((self.0 >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
            })
            .collect();
        Tensor::from_vec(values, shape, &Device::Cpu).unwrap()
    }
}

/// BERT weights under the names sentence-transformers checkpoints use.
fn weights(vocab_size: usize, seed: u64) -> HashMap<String, Tensor> {
    let mut random = Random(seed | 1);
    let mut w = HashMap::new();
    let mut put = |name: String, tensor: Tensor| {
        w.insert(name, tensor);
    };
    let ones = || Tensor::ones(HIDDEN, candle_core::DType::F32, &Device::Cpu).unwrap();
    put("embeddings.word_embeddings.weight".into(), random.tensor(&[vocab_size, HIDDEN], 1.0));
    put("embeddings.position_embeddings.weight".into(), random.tensor(&[POSITIONS, HIDDEN], 0.1));
    put("embeddings.token_type_embeddings.weight".into(), random.tensor(&[2, HIDDEN], 0.1));
    put("embeddings.LayerNorm.weight".into(), ones());
    put("embeddings.LayerNorm.bias".into(), random.tensor(&[HIDDEN], 0.1));
    for layer in 0..LAYERS {
        let p = format!("encoder.layer.{layer}");
        for part in
            ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"]
        {
            put(format!("{p}.{part}.weight"), random.tensor(&[HIDDEN, HIDDEN], 0.3));
            put(format!("{p}.{part}.bias"), random.tensor(&[HIDDEN], 0.1));
        }
        put(format!("{p}.intermediate.dense.weight"), random.tensor(&[INTERMEDIATE, HIDDEN], 0.3));
        put(format!("{p}.intermediate.dense.bias"), random.tensor(&[INTERMEDIATE], 0.1));
        put(format!("{p}.output.dense.weight"), random.tensor(&[HIDDEN, INTERMEDIATE], 0.3));
        put(format!("{p}.output.dense.bias"), random.tensor(&[HIDDEN], 0.1));
        for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
            put(format!("{p}.{norm}.weight"), ones());
            put(format!("{p}.{norm}.bias"), random.tensor(&[HIDDEN], 0.1));
        }
    }
    w
}

/// Writes the tiny model into `dir`, laid out as sentence-transformers saves one.
fn write_model(dir: &Path, seed: u64) {
    let vocab = vocabulary();
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    std::fs::write(dir.join("tokenizer.json"), tokenizer_json(&vocab).to_string()).unwrap();
    std::fs::write(dir.join("config.json"), config_json(vocab.len()).to_string()).unwrap();
    std::fs::write(
        dir.join("sentence_bert_config.json"),
        json!({"max_seq_length": TRAINED_TOKENS, "do_lower_case": false}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("1_Pooling/config.json"),
        json!({"word_embedding_dimension": HIDDEN, "pooling_mode_cls_token": false,
               "pooling_mode_mean_tokens": true})
        .to_string(),
    )
    .unwrap();
    candle_core::safetensors::save(&weights(vocab.len(), seed), dir.join("model.safetensors")).unwrap();
}

/// A tiny model in a temporary folder named `tiny-bert`.
fn tiny_model() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tiny-bert");
    write_model(&dir, 7);
    (tmp, dir)
}

fn load(dir: &Path) -> TransformerEmbedder {
    TransformerEmbedder::from_dir(dir, TransformerOptions::default()).unwrap()
}

fn max_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn load_error(dir: &Path) -> (String, String) {
    match TransformerEmbedder::from_dir(dir, TransformerOptions::default()) {
        Err(EmbedError::Load { path, reason }) => (path, reason),
        other => panic!("expected a load error, got {other:?}"),
    }
}

/// `n` words of one to three letters, none repeating its neighbour.
fn long_text(n: usize) -> String {
    let words = ["ab", "c", "def", "gh", "i", "jkl", "mn", "o", "pq", "rst", "u", "vw", "xyz"];
    (0..n).map(|i| words[(i * 7 + i / 13) % words.len()]).collect::<Vec<_>>().join(" ")
}

#[test]
fn vectors_have_the_model_width_and_unit_length() {
    let (_tmp, dir) = tiny_model();
    let embedder = load(&dir);
    let identity = embedder.identity();
    assert_eq!(identity.provider, "transformer");
    assert_eq!(identity.dimensions, HIDDEN);
    assert!(identity.model.starts_with("tiny-bert:"), "{}", identity.model);
    let texts = ["a b", "", "   ", "Backups are kept for thirty days.", "日本語 ünïcödé", &long_text(400)];
    let vectors = embedder.embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (text, v) in texts.iter().zip(&vectors) {
        assert_eq!(v.len(), HIDDEN);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{text:?}: norm {norm}");
    }
    assert!(max_difference(&vectors[0], &vectors[3]) > 1e-3, "different texts, same vector");
    assert!(embedder.embed(&[]).unwrap().is_empty());
}

#[test]
fn vectors_are_deterministic_across_calls_and_loads() {
    let (_tmp, dir) = tiny_model();
    let texts = ["Snapshots are kept for thirty days", "rollback to the previous image"];
    let first = load(&dir).embed(&texts).unwrap();
    let embedder = load(&dir);
    assert_eq!(embedder.embed(&texts).unwrap(), first);
    assert_eq!(embedder.embed(&texts).unwrap(), first);
    assert_eq!(embedder.identity(), load(&dir).identity());
}

#[test]
fn padding_does_not_change_a_texts_vector() {
    let (_tmp, dir) = tiny_model();
    let embedder = load(&dir);
    let alone = embedder.embed(&["a b"]).unwrap().remove(0);
    let long = long_text(300);
    // Batched with a text of the full 96 tokens, "a b" (4 tokens) is padded with 92.
    let batched = embedder.embed(&[&long, "a b", "c"]).unwrap();
    assert!(max_difference(&alone, &batched[1]) < 1e-5, "{}", max_difference(&alone, &batched[1]));
    // One text per forward pass gives the same vectors as one pass for all.
    let options = TransformerOptions { batch_size: Some(1), max_tokens: None };
    let one_by_one =
        TransformerEmbedder::from_dir(&dir, options).unwrap().embed(&[&long, "a b", "c"]).unwrap();
    for (a, b) in one_by_one.iter().zip(&batched) {
        assert!(max_difference(a, b) < 1e-5);
    }
}

#[test]
fn long_texts_are_cut_at_the_models_length() {
    let (_tmp, dir) = tiny_model();
    let embedder = load(&dir);
    // sentence_bert_config.json says 96; the tokenizer file's own 128 is ignored.
    assert_eq!(embedder.max_tokens(), TRAINED_TOKENS);
    let text = long_text(200);
    let longer = format!("{text} {}", long_text(5000).replace('a', "e"));
    let v = embedder.embed(&[&text, &longer]).unwrap();
    assert!(max_difference(&v[0], &v[1]) < 1e-5, "words past the limit changed the vector");
    // A short text does change when a word is added.
    let v = embedder.embed(&["ab c", "ab c def"]).unwrap();
    assert!(max_difference(&v[0], &v[1]) > 1e-3);

    // A configured limit wins, and is part of the identity; the position table caps it.
    let short = TransformerOptions { batch_size: None, max_tokens: Some(16) };
    let cut = TransformerEmbedder::from_dir(&dir, short).unwrap();
    assert_eq!(cut.max_tokens(), 16);
    assert_ne!(cut.identity(), embedder.identity());
    let v = cut.embed(&[&long_text(14), &long_text(40)]).unwrap();
    assert!(max_difference(&v[0], &v[1]) < 1e-5);
    let huge = TransformerOptions { batch_size: None, max_tokens: Some(4096) };
    assert_eq!(TransformerEmbedder::from_dir(&dir, huge).unwrap().max_tokens(), POSITIONS);
}

#[test]
fn a_changed_model_gets_a_new_identity() {
    let (_tmp, dir) = tiny_model();
    let before = load(&dir).identity();
    write_model(&dir, 8);
    let after = load(&dir).identity();
    assert_eq!(before.provider, after.provider);
    assert_ne!(before.model, after.model);
}

#[test]
fn load_errors_name_the_folder_or_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, reason) = load_error(&tmp.path().join("nowhere"));
    assert!(path.ends_with("nowhere") && reason.contains("no such folder"), "{path}: {reason}");

    let (_model, dir) = tiny_model();
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    let (path, reason) = load_error(&dir);
    assert!(path.ends_with("model.safetensors") && reason.contains("missing"), "{path}: {reason}");

    let broken: [(&str, &[u8]); 4] = [
        ("model.safetensors", b"\x10\0\0\0\0\0\0\0{not json at all"),
        ("model.safetensors", b""),
        ("tokenizer.json", b"{\"model\": 3}"),
        ("config.json", b"{\"hidden_size\": \"wide\"}"),
    ];
    for (file, bytes) in broken {
        let (_model, dir) = tiny_model();
        std::fs::write(dir.join(file), bytes).unwrap();
        let (path, reason) = load_error(&dir);
        assert!(path.ends_with(file), "{file}: {path}: {reason}");
        assert!(!reason.is_empty());
    }

    // Weights of another shape than config.json describes.
    let (_model, dir) = tiny_model();
    let mut config = config_json(vocabulary().len());
    config["num_hidden_layers"] = json!(3);
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let (path, reason) = load_error(&dir);
    assert!(path.ends_with("model.safetensors") && reason.contains("config.json"), "{path}: {reason}");

    // A model pooled by its first token would give vectors unlike the reference ones.
    let (_model, dir) = tiny_model();
    std::fs::write(dir.join("1_Pooling/config.json"), r#"{"pooling_mode_mean_tokens": false}"#).unwrap();
    let (path, reason) = load_error(&dir);
    assert!(path.ends_with("config.json") && reason.contains("mean pooling"), "{path}: {reason}");
}

#[test]
fn an_engine_indexes_and_searches_with_the_transformer() {
    let (_model, dir) = tiny_model();
    let f = Fixture::standard();
    let settings = f.index.path().join("settings.toml");
    // Every chunk is listed, however far from the query (no floor under the hits).
    std::fs::write(
        &settings,
        format!(
            "index_dir = {:?}\n[embedding]\nprovider = \"transformer\"\nmodel_path = {:?}\nbatch_size = 4\n\
             [search]\nmin_score_share = 0\n",
            f.index_dir(),
            dir
        ),
    )
    .unwrap();
    let mut engine = Engine::open(f.root(), Some(&settings), OpenMode::Write).unwrap();
    assert!(engine.config_problems().is_empty(), "{:?}", engine.config_problems());
    engine.reconcile(&mut |_| {}).unwrap();
    let status = engine.status();
    assert_eq!(status.embedder.provider, "transformer");
    assert_eq!(status.embedder.dimensions, HIDDEN);
    let chunks = engine.index().manifest().chunk_count();
    assert!(chunks > 3);

    // A random model ranks nothing well, but a chunk's own embedded text is its nearest
    // neighbour.
    let target = engine.chunks_at("ops/backup.md", Some(11)).unwrap().remove(0);
    let request = SearchRequest {
        query: target.embedding_text(),
        limit: chunks,
        mode: SearchMode::Vector,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: situate::search::Expand::None,
    };
    let hits = engine.search(&request).unwrap();
    assert_eq!(hits.len(), chunks, "every chunk has a vector");
    assert_eq!((hits[0].chunk.path.as_str(), hits[0].chunk.start_line), ("ops/backup.md", target.start_line));
    assert_eq!(hits[0].vector_rank, Some(1));
    assert!(hits.iter().all(|h| h.vector_rank.is_some() && h.bm25_rank.is_none()));
}
