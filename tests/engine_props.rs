//! Random sequences of file changes, reconciles, single-file updates and restarts: after
//! every sync the index holds exactly the files on disk, every chunk has its vector, and
//! every file is found by its own words and by no one else's.

mod common;

use std::collections::BTreeMap;

use common::{Counting, Fixture};
use proptest::prelude::*;
use situate::config::Config;
use situate::engine::Engine;
use situate::search::{Expand, SearchMode, SearchRequest};

const FILES: [&str; 3] = ["a.md", "notes/deep/b.txt", "c.markdown"];

#[derive(Debug, Clone)]
enum Op {
    /// Write a version of a file: its marker word and how many paragraphs.
    Write {
        file: usize,
        version: u32,
        paragraphs: usize,
    },
    Delete {
        file: usize,
    },
    /// Write the same bytes again (new mtime, same contents).
    Rewrite {
        file: usize,
    },
    Reconcile,
    Update {
        file: usize,
    },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..FILES.len(), 0u32..1000, 1usize..6)
            .prop_map(|(file, version, paragraphs)| Op::Write { file, version, paragraphs }),
        2 => (0..FILES.len()).prop_map(|file| Op::Delete { file }),
        1 => (0..FILES.len()).prop_map(|file| Op::Rewrite { file }),
        2 => Just(Op::Reconcile),
        3 => (0..FILES.len()).prop_map(|file| Op::Update { file }),
        1 => Just(Op::Reopen),
    ]
}

/// A word only this version of this file contains: consonants only, so the analyzer
/// neither splits it (no letter/digit boundary) nor stems it (no vowel).
fn marker(file: usize, version: u32) -> String {
    const LETTERS: &[u8] = b"bcdfghjklm";
    let digits = format!("{file}{version:03}");
    let word: String = digits.bytes().map(|d| LETTERS[(d - b'0') as usize] as char).collect();
    format!("zq{word}")
}

fn contents(file: usize, version: u32, paragraphs: usize) -> String {
    let mut s = String::from("# Notes\n\n");
    for p in 0..paragraphs {
        // Long enough paragraphs that several chunks are cut at the small budget.
        s.push_str(&format!(
            "Paragraph {p} carries the word {} among ordinary words about rivers, maps and \
             lanterns, so that every chunk has plenty of text to hold.\n\n",
            marker(file, version)
        ));
    }
    s
}

fn engine(f: &Fixture, embedder: std::sync::Arc<Counting>) -> Engine {
    let mut config: Config = f.config();
    config.chunk.max_tokens = 48;
    config.chunk.overlap_tokens = 8;
    f.engine_with(config, embedder)
}

/// The index agrees with `disk` (file → marker word).
fn check(engine: &Engine, disk: &BTreeMap<&str, String>) {
    let manifest = engine.index().manifest();
    let indexed: Vec<&str> = manifest.files.keys().map(String::as_str).collect();
    let on_disk: Vec<&str> = disk.keys().copied().collect();
    assert_eq!(indexed, on_disk);
    for id in engine.index().chunk_ids() {
        assert!(engine.index().has_vector(id), "chunk {id} has no vector");
    }
    assert_eq!(engine.index().vector_count(), manifest.chunk_count());
    for (path, marker) in disk {
        let hits = engine.search(&bm25(marker)).unwrap();
        assert!(!hits.is_empty(), "{marker} not found");
        assert!(hits.iter().all(|h| h.chunk.path == *path), "{marker} found outside {path}");
        let chunks = engine.chunks_at(path, None).unwrap();
        assert_eq!(chunks.len(), manifest.files[*path].chunks.len());
    }
}

/// A BM25 search for a marker word, wide enough to see every file that holds it.
fn bm25(marker: &str) -> SearchRequest {
    SearchRequest {
        query: marker.to_string(),
        limit: 50,
        mode: SearchMode::Bm25,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    }
}

/// What an update of one file must leave: that file indexed as on disk, or gone with its
/// words — whatever else is still pending.
fn check_updated(engine: &Engine, path: &str, on_disk: Option<&String>, last_marker: Option<&String>) {
    let indexed = engine.index().manifest().files.contains_key(path);
    assert_eq!(indexed, on_disk.is_some(), "{path} indexed: {indexed}");
    if let Some(marker) = on_disk.or(last_marker) {
        let hits = engine.search(&bm25(marker)).unwrap();
        assert_eq!(!hits.is_empty(), on_disk.is_some(), "{marker} after updating {path}");
        assert!(hits.iter().all(|h| h.chunk.path == path));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_index_always_matches_the_disk(ops in proptest::collection::vec(op(), 1..30)) {
        let f = Fixture::empty();
        let mut engine = engine(&f, Counting::new());
        let mut disk: BTreeMap<&str, String> = BTreeMap::new();
        // Updates name files explicitly; a reconcile catches up with everything.
        let mut pending_since_sync: Vec<usize> = Vec::new();
        let mut last_marker: BTreeMap<usize, String> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Write { file, version, paragraphs } => {
                    f.write(FILES[file], contents(file, version, paragraphs));
                    disk.insert(FILES[file], marker(file, version));
                    last_marker.insert(file, marker(file, version));
                    pending_since_sync.push(file);
                }
                Op::Delete { file } => {
                    let _ = std::fs::remove_file(f.root().join(FILES[file]));
                    disk.remove(FILES[file]);
                    pending_since_sync.push(file);
                }
                Op::Rewrite { file } => {
                    if let Ok(bytes) = std::fs::read(f.root().join(FILES[file])) {
                        f.write(FILES[file], bytes);
                    }
                }
                Op::Reconcile => {
                    engine.reconcile(&mut |_| {}).unwrap();
                    pending_since_sync.clear();
                    check(&engine, &disk);
                }
                Op::Update { file } => {
                    engine.update(&[FILES[file].to_string()]).unwrap();
                    check_updated(&engine, FILES[file], disk.get(FILES[file]), last_marker.get(&file));
                    pending_since_sync.retain(|f| *f != file);
                    if pending_since_sync.is_empty() {
                        check(&engine, &disk);
                    }
                }
                Op::Reopen => {
                    drop(engine);
                    engine = self::engine(&f, Counting::new());
                }
            }
        }
        engine.reconcile(&mut |_| {}).unwrap();
        check(&engine, &disk);
    }
}
