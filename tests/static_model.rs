//! Tests of the static embedder: the built-in model, models loaded from a folder, and the
//! errors a broken folder gives.

use std::fs;
use std::path::{Path, PathBuf};

use situate::providers::static_model::{BUILTIN_MODEL_NAME, StaticEmbedder};
use situate::providers::{EmbedError, Embedder};

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
