//! Expansion tests on a hand-made document (`tests/data/expand/`): exact ranges of windows
//! and merged sections, overlap between split chunks given once, hits joined at the better
//! rank, and the text of every expansion equal to the document slice it names.
//!
//! `guide.md`, chunked with a 40-token budget and 8 tokens of overlap, has seven chunks:
//!
//! | ordinal | lines | bytes    | heading path                 |
//! |---------|-------|----------|------------------------------|
//! | 0       | 1-3   | 0..52    | Guide                        |
//! | 1       | 5-7   | 54..110  | Guide > Install              |
//! | 2       | 9-12  | 112..265 | Guide > Configure            |
//! | 3       | 12-13 | 227..357 | Guide > Configure            |
//! | 4       | 13-14 | 320..467 | Guide > Configure            |
//! | 5       | 16-18 | 469..531 | Guide > Configure > Proxies  |
//! | 6       | 22-24 | 544..595 | Guide > Usage                |
//!
//! Chunks 2, 3 and 4 overlap; between 5 and 6 lies `### Empty`, a heading with no chunk.

mod common;

use std::path::Path;

use common::{Counting, Fixture};
use situate::config::Config;
use situate::engine::{Engine, View};
use situate::index::ChunkRecord;
use situate::search::expand::{self, Expand, ExpandSettings, FileSource};
use situate::search::{Hit, SearchMode, SearchRequest};

fn fixture() -> (Fixture, Engine) {
    let f = Fixture::empty();
    common::copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/expand"), f.root());
    let mut config: Config = f.config();
    config.chunk.max_tokens = 40;
    config.chunk.overlap_tokens = 8;
    let mut engine = f.engine_with(config, Counting::new());
    engine.reconcile(&mut |_| {}).unwrap();
    (f, engine)
}

/// Hits on chunks of `guide.md` (or `notes.md` for ordinal 100), best first.
fn hits(view: &View, ordinals: &[u32]) -> Vec<Hit> {
    let guide = view.chunks_at("guide.md", None).unwrap();
    let notes = view.chunks_at("notes.md", None).unwrap();
    ordinals
        .iter()
        .map(|&o| {
            let chunk: ChunkRecord = if o == 100 { notes[0].clone() } else { guide[o as usize].clone() };
            Hit {
                chunk,
                score: 1.0,
                bm25_rank: None,
                vector_rank: None,
                bm25_score: None,
                vector_similarity: None,
                expanded: None,
                preview: Vec::new(),
            }
        })
        .collect()
}

fn run(view: &View, ordinals: &[u32], limit: usize, expand: Expand, window: usize, share: f32) -> Vec<Hit> {
    let settings = ExpandSettings { expand, window, merge_share: share };
    let mut files = FileSource::new(view.snapshot(), view.root(), view.config().walk.encoding);
    expand::expand(hits(view, ordinals), limit, &settings, &mut files).unwrap()
}

/// (best chunk's ordinal, first and last ordinal, lines, bytes, hit ordinals) of a result,
/// after checking that its text is the document slice it names.
type Shape = (u32, (u32, u32), (u32, u32), (u64, u64), Vec<u32>);

fn shape(f: &Fixture, h: &Hit) -> Shape {
    let e = h.expanded.as_ref().expect("an expansion");
    let file = std::fs::read_to_string(f.root().join(&h.chunk.path)).unwrap();
    assert_eq!(e.text, file[e.start_byte as usize..e.end_byte as usize], "text of {e:?}");
    (
        h.chunk.ordinal,
        (e.first_ordinal, e.last_ordinal),
        (e.start_line, e.end_line),
        (e.start_byte, e.end_byte),
        e.hit_ordinals.clone(),
    )
}

fn shapes(f: &Fixture, hits: &[Hit]) -> Vec<Shape> {
    hits.iter().map(|h| shape(f, h)).collect()
}

#[test]
fn the_fixture_chunks_as_documented() {
    let (_f, engine) = fixture();
    let chunks = engine.view().chunks_at("guide.md", None).unwrap();
    let table: Vec<(u32, u32, u64, u64)> =
        chunks.iter().map(|c| (c.start_line, c.end_line, c.start_byte, c.end_byte)).collect();
    assert_eq!(
        table,
        [
            (1, 3, 0, 52),
            (5, 7, 54, 110),
            (9, 12, 112, 265),
            (12, 13, 227, 357),
            (13, 14, 320, 467),
            (16, 18, 469, 531),
            (22, 24, 544, 595)
        ]
    );
}

#[test]
fn a_window_at_the_file_start_takes_both_neighbours_after() {
    let (f, engine) = fixture();
    let r = run(&engine.view(), &[0], 5, Expand::Window, 1, 0.5);
    assert_eq!(shapes(&f, &r), [(0, (0, 2), (1, 12), (0, 265), vec![0])]);
}

#[test]
fn a_window_at_the_file_end_takes_both_neighbours_before_and_the_heading_between() {
    let (f, engine) = fixture();
    let r = run(&engine.view(), &[6], 5, Expand::Window, 1, 0.5);
    assert_eq!(shapes(&f, &r), [(6, (4, 6), (13, 24), (320, 595), vec![6])]);
    assert!(r[0].expanded.as_ref().unwrap().text.contains("### Empty"));
}

#[test]
fn a_window_prefers_its_own_section() {
    let (f, engine) = fixture();
    // Chunk 2 opens Configure: both neighbours come from after it, not from Install.
    let r = run(&engine.view(), &[2], 5, Expand::Window, 1, 0.5);
    assert_eq!(shapes(&f, &r), [(2, (2, 4), (9, 14), (112, 467), vec![2])]);
    assert_eq!(r[0].expanded.as_ref().unwrap().heading_path, ["Guide", "Configure"]);
}

#[test]
fn overlapping_chunks_give_their_shared_text_once() {
    let (f, engine) = fixture();
    let view = engine.view();
    let r = run(&view, &[3], 5, Expand::Window, 1, 0.5);
    assert_eq!(shapes(&f, &r), [(3, (2, 4), (9, 14), (112, 467), vec![3])]);
    let chunks = view.chunks_at("guide.md", None).unwrap();
    let concatenated: usize = chunks[2..=4].iter().map(|c| c.text.len()).sum();
    assert!(concatenated > r[0].expanded.as_ref().unwrap().text.len(), "the fixture has overlap");
    // With no neighbours, two overlapping hits still become one result.
    let r = run(&view, &[3, 2], 5, Expand::Window, 0, 0.5);
    assert_eq!(shapes(&f, &r), [(3, (2, 3), (9, 13), (112, 357), vec![3, 2])]);
}

#[test]
fn hits_whose_windows_overlap_merge_at_the_better_rank() {
    let (f, engine) = fixture();
    let view = engine.view();
    // Windows 2..4 (hit 4, its own section first) and 0..2 (hit 1) share chunk 2.
    let r = run(&view, &[4, 1, 100], 2, Expand::Window, 1, 0.5);
    assert_eq!(
        shapes(&f, &r),
        [(4, (0, 4), (1, 14), (0, 467), vec![4, 1]), (0, (0, 0), (1, 3), (0, 41), vec![0])],
        "the next hit fills the place the merge freed"
    );
    // Windows 0..2 and 4..6 are apart until hit 4's window 2..4 joins them.
    let r = run(&view, &[1, 6, 4], 5, Expand::Window, 1, 0.5);
    assert_eq!(shapes(&f, &r), [(1, (0, 6), (1, 24), (0, 595), vec![1, 6, 4])]);
}

#[test]
fn a_section_replaces_its_hits_when_enough_of_it_matched() {
    let (f, engine) = fixture();
    let view = engine.view();
    // Three of Configure's four chunks (Proxies included): the section, not the file (4 of 7).
    let r = run(&view, &[3, 2, 4, 100], 5, Expand::Merge, 1, 0.75);
    assert_eq!(
        shapes(&f, &r),
        [(3, (2, 5), (9, 18), (112, 531), vec![3, 2, 4]), (0, (0, 0), (1, 3), (0, 41), vec![0])]
    );
    assert_eq!(r[0].expanded.as_ref().unwrap().heading_path, ["Guide", "Configure"]);
}

#[test]
fn a_section_below_the_share_stays_in_pieces() {
    let (f, engine) = fixture();
    let r = run(&engine.view(), &[4, 2], 5, Expand::Merge, 1, 0.75);
    assert_eq!(
        shapes(&f, &r),
        [(4, (4, 4), (13, 14), (320, 467), vec![4]), (2, (2, 2), (9, 12), (112, 265), vec![2])]
    );
}

#[test]
fn merging_climbs_to_the_parent_section() {
    let (f, engine) = fixture();
    let view = engine.view();
    // Two hits of seven do not reach half of Guide, but with Configure merged (2 of 4)
    // four of its seven chunks are covered, so Guide is returned whole.
    let r = run(&view, &[4, 3], 5, Expand::Merge, 1, 0.5);
    assert_eq!(shapes(&f, &r), [(4, (0, 6), (1, 24), (0, 595), vec![4, 3])]);
    assert_eq!(r[0].expanded.as_ref().unwrap().heading_path, ["Guide"]);
    // A lone hit in a one-chunk section merges nothing.
    let r = run(&view, &[5], 5, Expand::Merge, 1, 0.5);
    assert_eq!(shapes(&f, &r), [(5, (5, 5), (16, 18), (469, 531), vec![5])]);
}

#[test]
fn search_returns_expanded_hits_without_repeating_text() {
    let (f, engine) = fixture();
    for expand in [Expand::Window, Expand::Merge] {
        let request = SearchRequest {
            query: "proxy address network".to_string(),
            limit: 3,
            mode: SearchMode::Bm25,
            paths: Vec::new(),
            filters: Vec::new(),
            expand,
        };
        let hits = engine.search(&request).unwrap();
        assert_eq!(hits[0].chunk.ordinal, 5, "{expand}");
        let all = shapes(&f, &hits);
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                let ((_, _, _, a, _), (_, _, _, b, _)) = (&all[i], &all[j]);
                let apart = hits[i].chunk.path != hits[j].chunk.path || a.1 <= b.0 || b.1 <= a.0;
                assert!(apart, "{expand}: results {i} and {j} overlap: {all:?}");
            }
        }
    }
    let plain = SearchRequest {
        query: "proxy address network".to_string(),
        limit: 3,
        mode: SearchMode::Bm25,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    };
    assert!(engine.search(&plain).unwrap().iter().all(|h| h.expanded.is_none()));
}

#[test]
fn a_file_changed_since_indexing_keeps_its_line_count_between_chunks() {
    let (f, engine) = fixture();
    let view = engine.view();
    f.write("guide.md", std::fs::read_to_string(f.root().join("guide.md")).unwrap() + "\nMore.\n");
    let r = run(&view, &[6], 5, Expand::Window, 1, 0.5);
    let e = r[0].expanded.as_ref().unwrap();
    assert_eq!((e.start_line, e.end_line, e.start_byte, e.end_byte), (13, 24, 320, 595));
    assert!(!e.text.contains("### Empty"));
    assert_eq!(e.text.lines().count(), 24 - 13 + 1);
}
