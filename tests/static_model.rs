//! Tests of the static embedder: the built-in model (alone and through a real index, in
//! English and Chinese), models loaded from a folder (model2vec's format and tables over
//! e5's pieces), and the errors a broken folder gives.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::Fixture;
use situate::providers::e5::E5Model;
use situate::providers::static_model::{BUILTIN_MODEL_NAME, StaticEmbedder};
use situate::providers::{EmbedError, Embedder};
use situate::search::{Expand, SearchMode, SearchRequest};

const ASSET_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/static-model");
const ASSET_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

fn builtin() -> StaticEmbedder {
    StaticEmbedder::builtin().expect("built-in model loads")
}

fn embed_one(embedder: &StaticEmbedder, text: &str) -> Vec<f32> {
    embedder.embed(&[text]).expect("embedding succeeds").remove(0)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A copy of the built-in asset in a fresh temporary folder.
fn asset_copy() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-model");
    fs::create_dir(&dir).unwrap();
    for name in ASSET_FILES {
        fs::copy(Path::new(ASSET_DIR).join(name), dir.join(name)).unwrap();
    }
    (tmp, dir)
}

fn load_error(dir: &Path) -> (String, String) {
    match StaticEmbedder::from_dir(dir) {
        Err(EmbedError::Load { path, reason }) => (path, reason),
        Err(other) => panic!("expected a load error, got {other}"),
        Ok(_) => panic!("loading {} should fail", dir.display()),
    }
}

#[test]
fn builtin_loads_with_its_advertised_identity() {
    let embedder = builtin();
    let identity = embedder.identity();
    assert_eq!(identity.provider, "static");
    assert_eq!(identity.model, format!("builtin:{BUILTIN_MODEL_NAME}"));
    assert_eq!(identity.dimensions, 256);
    let vectors = embedder.embed(&["hello", "world"]).unwrap();
    assert_eq!(vectors.len(), 2);
    assert!(vectors.iter().all(|v| v.len() == 256));
    assert_eq!(StaticEmbedder::builtin().unwrap().identity(), identity);
}

#[test]
fn vectors_are_finite_and_unit_length_for_any_text() {
    let paragraph = "Backups are retained for 30 days; the router matches the Host header. \
                     Ünïcödé, 中文字符, emoji 🦀, tabs\tand\u{0} control characters. ";
    let huge = paragraph.repeat(100 * 1024 / paragraph.len() + 1);
    assert!(huge.len() >= 100 * 1024);
    let texts = ["", "   ", "\n\t\n", "☃☃", "a", "how long are backups kept", &huge];
    let vectors = builtin().embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (text, v) in texts.iter().zip(&vectors) {
        let preview: String = text.chars().take(20).collect();
        assert_eq!(v.len(), 256, "{preview:?}");
        assert!(v.iter().all(|x| x.is_finite()), "{preview:?}");
        let norm = dot(v, v).sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{preview:?} has norm {norm}");
    }
}

#[test]
fn texts_without_known_tokens_share_the_documented_fallback_vector() {
    let embedder = builtin();
    let mut last_axis = vec![0.0; 256];
    last_axis[255] = 1.0;
    for text in ["", "   ", "☃☃"] {
        assert_eq!(embed_one(&embedder, text), last_axis, "{text:?}");
    }
    // The fallback sits far from real text rather than on top of it.
    let real = embed_one(&embedder, "how long are backups kept");
    assert!(dot(&real, &last_axis).abs() < 0.3);
}

#[test]
fn related_texts_are_closer_than_unrelated_ones() {
    // (query, related, unrelated): the related text shares meaning, mostly not words.
    let triples = [
        (
            "how long are backups kept",
            "Backups are retained for 30 days",
            "the router matches the Host header",
        ),
        (
            "how do I restart the server",
            "To reboot the machine, run systemctl restart",
            "Chocolate cake needs flour, eggs and sugar",
        ),
        (
            "what is the capital of France",
            "Paris is the largest city in France",
            "The function returns a list of integers",
        ),
        ("dog", "puppy", "spreadsheet"),
        (
            "error when connecting to the database",
            "database connection failed: timeout",
            "the weather is sunny today",
        ),
    ];
    let embedder = builtin();
    for (query, related, unrelated) in triples {
        let v = embedder.embed(&[query, related, unrelated]).unwrap();
        let (near, far) = (dot(&v[0], &v[1]), dot(&v[0], &v[2]));
        assert!(near > far + 0.2, "{query:?}: related {near:.3} should clearly beat unrelated {far:.3}");
    }
}

#[test]
fn batches_match_single_texts_and_keep_order() {
    let embedder = builtin();
    let texts = ["first text", "", "second, longer text about TLS certificates"];
    let batch = embedder.embed(&texts).unwrap();
    for (text, v) in texts.iter().zip(&batch) {
        assert_eq!(&embed_one(&embedder, text), v);
    }
    assert!(embedder.embed(&[]).unwrap().is_empty());
}

#[test]
fn only_the_first_tokens_of_a_long_text_count() {
    let embedder = builtin();
    let long = "backup retention policy ".repeat(1000);
    let with_tail = format!("{long} the router matches the Host header");
    assert_eq!(embed_one(&embedder, &long), embed_one(&embedder, &with_tail));
    // A short text still sees its tail.
    assert_ne!(
        embed_one(&embedder, "backup retention policy"),
        embed_one(&embedder, "backup retention policy router")
    );
}

#[test]
fn from_dir_on_a_copy_of_the_asset_matches_builtin() {
    let (_tmp, dir) = asset_copy();
    let from_dir = StaticEmbedder::from_dir(&dir).unwrap();
    let builtin = builtin();
    let identity = from_dir.identity();
    assert_eq!(identity.provider, "static");
    assert_eq!(identity.dimensions, 256);
    assert!(identity.model.starts_with("dir:my-model:"), "{}", identity.model);
    assert_ne!(identity, builtin.identity());

    let texts = ["how long are backups kept", "", "Backups are retained for 30 days"];
    assert_eq!(from_dir.embed(&texts).unwrap(), builtin.embed(&texts).unwrap());
}

#[test]
fn from_dir_identity_is_stable_and_follows_the_files() {
    let (_tmp, dir) = asset_copy();
    let first = StaticEmbedder::from_dir(&dir).unwrap().identity();
    assert_eq!(StaticEmbedder::from_dir(&dir).unwrap().identity(), first);

    let config = dir.join("config.json");
    let mut text = fs::read_to_string(&config).unwrap();
    text.push('\n');
    fs::write(&config, text).unwrap();
    let changed = StaticEmbedder::from_dir(&dir).unwrap().identity();
    assert_ne!(changed.model, first.model);
    assert!(changed.model.starts_with("dir:my-model:"));
}

#[test]
fn from_dir_on_a_missing_folder_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-model");
    let (path, reason) = load_error(&missing);
    assert!(path.contains("no-such-model"), "{path}");
    assert!(!reason.is_empty());
}

#[test]
fn from_dir_with_a_missing_file_names_the_file() {
    let (_tmp, dir) = asset_copy();
    fs::remove_file(dir.join("tokenizer.json")).unwrap();
    let (path, reason) = load_error(&dir);
    assert_eq!(path, dir.join("tokenizer.json").display().to_string());
    assert!(reason.contains("missing"), "{reason}");
}

#[test]
fn from_dir_with_a_corrupt_safetensors_names_the_file() {
    let (_tmp, dir) = asset_copy();
    let model = dir.join("model.safetensors");
    for bytes in [
        b"".to_vec(),
        b"this is not a safetensors file at all".to_vec(),
        fs::read(&model).unwrap()[..4096].to_vec(),
    ] {
        fs::write(&model, &bytes).unwrap();
        let (path, reason) = load_error(&dir);
        assert_eq!(path, model.display().to_string(), "{reason}");
    }
}

#[test]
fn from_dir_with_broken_json_names_the_file() {
    for name in ["tokenizer.json", "config.json"] {
        let (_tmp, dir) = asset_copy();
        fs::write(dir.join(name), "{ not json").unwrap();
        let (path, reason) = load_error(&dir);
        assert_eq!(path, dir.join(name).display().to_string(), "{reason}");
    }
}

#[test]
fn from_dir_rejects_a_table_too_small_for_its_tokenizer() {
    // A valid safetensors file whose 10-row table cannot hold the asset tokenizer's ids:
    // without the check, embedding a word with a high token id would index past the table.
    let (_tmp, dir) = asset_copy();
    let header = br#"{"embeddings":{"dtype":"F32","shape":[10,4],"data_offsets":[0,160]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend(std::iter::repeat_n(0u8, 160));
    fs::write(dir.join("model.safetensors"), bytes).unwrap();
    let (path, reason) = load_error(&dir);
    assert!(path.ends_with("model.safetensors"), "{path}");
    assert!(reason.contains("10 rows"), "{reason}");
}

#[test]
fn debug_output_stays_short() {
    let text = format!("{:?}", builtin());
    assert!(text.contains(BUILTIN_MODEL_NAME), "{text}");
    assert!(text.len() < 300, "{} bytes", text.len());
}

/// The paths of the best hits of a vector search, best first.
fn vector_search(engine: &situate::engine::Engine, query: &str) -> Vec<String> {
    let request = SearchRequest {
        query: query.to_string(),
        limit: 3,
        mode: SearchMode::Vector,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    };
    engine.search(&request).unwrap().into_iter().map(|hit| hit.chunk.path).collect()
}

#[test]
fn the_builtin_model_finds_english_neighbours_through_a_real_index() {
    let f = Fixture::empty();
    let pages = [
        (
            "ops/backups.md",
            "# Backups\n\nNightly snapshots of the database are copied to object storage and kept for thirty days.\n",
        ),
        (
            "net/certificates.md",
            "# Certificates\n\nThe proxy renews its TLS certificates from Let's Encrypt before they expire.\n",
        ),
        (
            "kitchen/cake.md",
            "# Baking\n\nChocolate cake needs flour, eggs, butter and sugar; bake it for forty minutes.\n",
        ),
        // Chinese pages share the index: English queries must not land on them. (Chinese
        // queries are not held to it: with its English vocabulary the built-in model ranks
        // two of three such queries wrong here; see docs/models-and-quality.md.)
        ("zh/所有权.md", "# 所有权\n\n每个值都有一个所有者；当所有者离开作用域时，这个值将被丢弃。\n"),
        ("zh/并发.md", "# 并发\n\n使用线程可以同时运行多段代码，通道用于在线程之间发送消息。\n"),
    ];
    for (path, text) in pages {
        f.write(path, text);
    }
    let mut engine = f.engine(Arc::new(builtin()));
    engine.reconcile(&mut |_| {}).unwrap();
    // Vector search only: the ranking is the static model's alone.
    let cases = [
        ("how long are database snapshots retained", "ops/backups.md"),
        ("renew an expiring TLS certificate", "net/certificates.md"),
        ("chocolate dessert with eggs and sugar", "kitchen/cake.md"),
    ];
    for (query, expected) in cases {
        let hits = vector_search(&engine, query);
        assert_eq!(hits.first().map(String::as_str), Some(expected), "{query:?} ranked {hits:?}");
    }
}

/// A table over e5's pieces in the layout `crates/e5/examples/distill_static.rs` writes:
/// `rows` int8 rows of `dims` values, a weight per piece and, when given, a mapping.
fn piece_table(rows: &[Vec<i8>], weights: &[f32], mapping: Option<&[i32]>) -> Vec<u8> {
    let dims = rows.first().map_or(0, Vec::len);
    let mut tensors: Vec<(&str, &str, Vec<usize>, Vec<u8>)> = vec![
        ("embeddings", "I8", vec![rows.len(), dims], rows.iter().flatten().map(|&q| q as u8).collect()),
        ("weights", "F32", vec![weights.len()], weights.iter().flat_map(|w| w.to_le_bytes()).collect()),
    ];
    if let Some(mapping) = mapping {
        tensors.push((
            "mapping",
            "I32",
            vec![mapping.len()],
            mapping.iter().flat_map(|m| m.to_le_bytes()).collect(),
        ));
    }
    let mut header = serde_json::Map::new();
    let mut offset = 0;
    for (name, dtype, shape, data) in &tensors {
        header.insert(
            name.to_string(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + data.len()]}),
        );
        offset += data.len();
    }
    let header = serde_json::Value::Object(header).to_string();
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    for (_, _, _, data) in tensors {
        bytes.extend(data);
    }
    bytes
}

fn piece_folder(table: Vec<u8>) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pieces");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("model.safetensors"), table).unwrap();
    fs::write(
        dir.join("config.json"),
        r#"{"model_type": "situate-static", "tokenizer": "multilingual-e5-small"}"#,
    )
    .unwrap();
    (tmp, dir)
}

#[test]
fn a_table_over_e5_pieces_embeds_texts_as_e5s_tokenizer_cuts_them() {
    let Some(bytes) = situate::providers::builtin_model() else {
        eprintln!("skipped: this build has no built-in e5 model, whose tokenizer such a table needs");
        return;
    };
    let e5 = E5Model::from_bytes(bytes).unwrap();
    let pieces = e5.piece_count();
    // Eight dimensions; a piece's row is one axis, chosen by its id, so that a text's vector
    // counts its pieces by axis. Rare pieces share the rows of the first hundred; markers
    // weigh nothing.
    const DIMS: usize = 8;
    let rows: Vec<Vec<i8>> =
        (0..100).map(|r| (0..DIMS).map(|d| if d == r % DIMS { 100 } else { 0 }).collect()).collect();
    let mapping: Vec<i32> = (0..pieces as i32).map(|id| id % 100).collect();
    let [bos, eos, unk] = e5.special_ids();
    let weights: Vec<f32> =
        (0..pieces as u32).map(|id| if [bos, eos, unk].contains(&id) { 0.0 } else { 0.01 }).collect();
    let (_tmp, dir) = piece_folder(piece_table(&rows, &weights, Some(&mapping)));
    let embedder = StaticEmbedder::from_dir(&dir).unwrap();
    let identity = embedder.identity();
    assert_eq!((identity.provider.as_str(), identity.dimensions), ("static", DIMS));
    assert!(identity.model.starts_with("dir:pieces:"), "{}", identity.model);

    let expected = |text: &str| -> Vec<f32> {
        let mut v = [0.0f32; DIMS];
        for id in e5.tokenize(text).into_iter().take(512) {
            if ![bos, eos, unk].contains(&id) {
                v[(id as usize % 100) % DIMS] += 1.0;
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    };
    let long = "Nightly snapshots are kept for thirty days. 每个值都有一个所有者。".repeat(40);
    for text in ["how long are backups kept", "每个值都有一个所有者", "Ünïcödé 🦀", long.as_str()]
    {
        let got = embed_one(&embedder, text);
        for (g, e) in got.iter().zip(expected(text)) {
            assert!((g - e).abs() < 1e-5, "{text:?}: {got:?}");
        }
    }
    // Whitespace has no direction (though the tokenizer gives it a piece): the fallback axis.
    for text in ["", "  \n\t"] {
        assert_eq!(embed_one(&embedder, text), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], "{text:?}");
    }
}

#[test]
fn a_table_over_e5_pieces_that_does_not_fit_the_tokenizer_is_refused() {
    let Some(bytes) = situate::providers::builtin_model() else {
        eprintln!("skipped: this build has no built-in e5 model, whose tokenizer such a table needs");
        return;
    };
    let pieces = E5Model::from_bytes(bytes).unwrap().piece_count();
    let rows = vec![vec![1i8; 4]; 10];
    // (weights, mapping, what the error says)
    type Case = (Vec<f32>, Option<Vec<i32>>, &'static str);
    let cases: [Case; 3] = [
        (vec![1.0; 1000], Some(vec![0; 1000]), "1000 weights"),
        (vec![1.0; pieces], None, "no `mapping`"),
        (vec![1.0; pieces], Some(vec![10; pieces]), "row 10"),
    ];
    for (weights, mapping, says) in cases {
        let (_tmp, dir) = piece_folder(piece_table(&rows, &weights, mapping.as_deref()));
        let (path, reason) = load_error(&dir);
        assert_eq!(path, dir.join("model.safetensors").display().to_string(), "{reason}");
        assert!(reason.contains(says), "{reason}");
    }
}

#[test]
fn a_joined_model_puts_its_parts_vectors_side_by_side() {
    let Some(bytes) = situate::providers::builtin_model() else {
        eprintln!("skipped: this build has no built-in e5 model, whose tokenizer a piece table needs");
        return;
    };
    let pieces = E5Model::from_bytes(bytes).unwrap().piece_count();
    let (tmp, minilm) = asset_copy();
    let rows: Vec<Vec<i8>> = (0..4).map(|r| (0..4).map(|d| if d == r { 100 } else { 0 }).collect()).collect();
    let mapping: Vec<i32> = (0..pieces as i32).map(|id| id % 4).collect();
    let table = piece_table(&rows, &vec![0.01; pieces], Some(&mapping));
    let (_pieces_tmp, e5_table) = piece_folder(table);
    let joined = tmp.path().join("joined");
    fs::create_dir(&joined).unwrap();
    let config = serde_json::json!({"model_type": "situate-static-joined", "parts": [minilm, e5_table]});
    fs::write(joined.join("config.json"), config.to_string()).unwrap();

    let embedder = StaticEmbedder::from_dir(&joined).unwrap();
    assert_eq!(embedder.identity().dimensions, 256 + 4);
    assert!(embedder.identity().model.starts_with("dir:joined:"), "{}", embedder.identity().model);
    let (first, second) =
        (StaticEmbedder::from_dir(&minilm).unwrap(), StaticEmbedder::from_dir(&e5_table).unwrap());
    for text in ["how long are backups kept", "每个值都有一个所有者", ""] {
        let whole = embed_one(&embedder, text);
        let halves: Vec<f32> = [embed_one(&first, text), embed_one(&second, text)].concat();
        for (w, h) in whole.iter().zip(&halves) {
            assert!((w - h / 2f32.sqrt()).abs() < 1e-6, "{text:?}");
        }
        assert!((dot(&whole, &whole) - 1.0).abs() < 1e-4);
    }
    // The identity follows the parts: another table gives another one.
    let identity = embedder.identity();
    fs::write(e5_table.join("config.json"), r#"{"tokenizer": "multilingual-e5-small", "note": "changed"}"#)
        .unwrap();
    assert_ne!(StaticEmbedder::from_dir(&joined).unwrap().identity(), identity);

    // A part that is joined itself (here, the folder itself), no parts, or a missing part:
    // each a load error.
    for parts in [serde_json::json!(["."]), serde_json::json!([]), serde_json::json!(["no-such-part"])] {
        fs::write(joined.join("config.json"), serde_json::json!({"parts": parts}).to_string()).unwrap();
        let (path, reason) = load_error(&joined);
        assert!(path.contains("joined") || path.contains("no-such-part"), "{path}: {reason}");
    }
}
