//! Engine tests on temporary workspaces: indexing, incremental updates, persistence,
//! repair after damage, and search that finds paragraphs through their context.

mod common;

use std::sync::Arc;

use common::{Counting, Failing, Fixture};
use situate::analysis;
use situate::config::Config;
use situate::engine::{Engine, PendingVectors};
use situate::index::OpenMode;
use situate::search::{Expand, Hit, SearchMode, SearchRequest, coverage};

fn request(query: &str, mode: SearchMode) -> SearchRequest {
    SearchRequest {
        query: query.to_string(),
        limit: 5,
        mode,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    }
}

fn top_paths(hits: &[Hit]) -> Vec<String> {
    hits.iter().map(|h| format!("{}:{}", h.chunk.path, h.chunk.start_line)).collect()
}

/// Indexes the fixture with a fresh engine and closes it; returns the chunk count.
fn index_and_close(f: &Fixture) -> usize {
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    engine.index().manifest().chunk_count()
}

/// An engine opened again on `f`'s index, which must come back whole: without a note, with
/// a vector for each of its `chunks`, and with nothing refilled or embedded by its first run.
fn reopened_whole(f: &Fixture, chunks: usize) -> Engine {
    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    assert!(engine.index().notes().is_empty(), "{:?}", engine.index().notes());
    assert_eq!(engine.index().vector_count(), chunks);
    assert_eq!(reconcile(&mut engine).vectors_refilled, 0);
    assert_eq!(embedder.count(), 0);
    engine
}

fn reconcile(engine: &mut Engine) -> situate::engine::ReconcileReport {
    engine.reconcile(&mut |_| {}).unwrap()
}

#[test]
fn a_paragraph_that_never_names_its_topic_is_found_through_its_header() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    // "Snapshots are kept for thirty days" never says "backup": only its title and the
    // heading above its section do.
    let is_retention = |h: &Hit| h.chunk.path == "ops/backup.md" && h.chunk.text.contains("thirty days");
    for mode in [SearchMode::Bm25, SearchMode::Hybrid] {
        let hits = engine.search(&request("backup retention", mode)).unwrap();
        assert!(is_retention(&hits[0]), "{mode}: {:?}", top_paths(&hits));
        let top = &hits[0].chunk;
        assert_eq!((top.start_line, top.end_line), (10, 13));
        assert_eq!(top.context, "Document: Backup policy > Backups > Retention");
        assert_eq!(top.heading_path, ["Backups", "Retention"]);
        let hits = engine.search(&request("backup", mode)).unwrap();
        assert!(hits.iter().any(is_retention), "{mode}: {:?}", top_paths(&hits));
    }
    // Without the title and heading fields, BM25 cannot see the topic at all.
    let mut config = f.config();
    config.search.title_boost = 0.0;
    config.search.headings_boost = 0.0;
    config.search.path_boost = 0.0;
    drop(engine);
    let engine = f.engine_with(config, Counting::new());
    let hits = engine.search(&request("backup", SearchMode::Bm25)).unwrap();
    assert!(!hits.is_empty() && !hits.iter().any(is_retention), "{:?}", top_paths(&hits));
}

#[test]
fn the_vector_arm_finds_a_paraphrase() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let hits = engine.search(&request("bread dough folding and shaping", SearchMode::Vector)).unwrap();
    assert_eq!(hits[0].chunk.path, "kitchen/bread.md", "{:?}", top_paths(&hits));
    assert!(hits[0].vector_rank == Some(1) && hits[0].bm25_rank.is_none());
}

#[test]
fn hits_carry_ranges_context_and_ranks() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let hits = engine.search(&request("traffic back to the previous image", SearchMode::Hybrid)).unwrap();
    let h = &hits[0];
    assert_eq!(h.chunk.path, "ops/deploy.md");
    assert_eq!(h.chunk.heading_path, ["Deployment", "Rollback"]);
    assert_eq!((h.chunk.start_line, h.chunk.end_line), (6, 9));
    let raw = std::fs::read_to_string(f.root().join("ops/deploy.md")).unwrap();
    assert_eq!(&raw[h.chunk.start_byte as usize..h.chunk.end_byte as usize], h.chunk.text);
    assert!(h.bm25_rank.is_some() && h.vector_rank.is_some());
    assert!(h.score > 0.0);
}

#[test]
fn path_filters_restrict_hits() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let mut req = request("the", SearchMode::Hybrid);
    req.query = "evening morning kitchen traffic".into();
    req.paths = vec!["kitchen".into()];
    let hits = engine.search(&req).unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.chunk.path.starts_with("kitchen/")), "{:?}", top_paths(&hits));
}

#[test]
fn a_path_filter_finds_matches_that_many_better_ones_elsewhere_would_push_out() {
    // Far more chunks than a search's candidates match the query better outside the folder:
    // a filter applied after the arms had picked their candidates would find nothing.
    let f = Fixture::empty();
    for n in 0..400 {
        f.write(&format!("notes/n{n}.md"), format!("# Meeting {n}\n\nThe budget meeting {n} went well.\n"));
    }
    f.write("garden/tomatoes.md", "# Tomatoes\n\nWater the tomatoes before the budget meeting.\n");
    f.write("garden/deep/beans.md", "# Beans\n\nThe beans need a meeting with the budget.\n");
    f.write("gardening.md", "# Gardening\n\nA budget meeting about the garden.\n");
    let mut config = f.config();
    config.search.candidates = 50;
    let mut engine = f.engine_with(config, Counting::new());
    reconcile(&mut engine);
    for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Hybrid] {
        let mut req = request("budget meeting", mode);
        req.paths = vec!["garden".into()];
        let mut found = top_paths(&engine.search(&req).unwrap());
        found.sort();
        assert_eq!(found, ["garden/deep/beans.md:1", "garden/tomatoes.md:1"], "{mode}");
        // Files, and a folder with its slash.
        req.paths = vec!["garden/tomatoes.md".into(), "gardening.md".into()];
        let mut found = top_paths(&engine.search(&req).unwrap());
        found.sort();
        assert_eq!(found, ["garden/tomatoes.md:1", "gardening.md:1"], "{mode}");
        req.paths = vec!["garden/deep/".into()];
        assert_eq!(top_paths(&engine.search(&req).unwrap()), ["garden/deep/beans.md:1"], "{mode}");
        // The whole workspace.
        req.paths = vec![String::new()];
        assert_eq!(engine.search(&req).unwrap().len(), 5, "{mode}");
    }
}

#[test]
fn a_changed_file_is_rechunked_alone_and_unchanged_vectors_are_reused() {
    let f = Fixture::standard();
    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    let first = reconcile(&mut engine);
    assert_eq!(first.files_indexed, 4);
    let before = engine.index().manifest().clone();

    // Change one paragraph of one file.
    let path = f.root().join("ops/backup.md");
    let text = std::fs::read_to_string(&path).unwrap().replace("thirty days", "ninety days");
    std::fs::write(&path, text).unwrap();
    let embedded_before = embedder.count();
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.files_unchanged, report.files_removed), (1, 3, 0));
    assert_eq!(report.vectors_embedded, 1, "only the changed chunk is embedded: {report:?}");
    assert_eq!(report.vectors_reused, before.files["ops/backup.md"].chunks.len() - 1);
    assert_eq!(embedder.count() - embedded_before, 1);
    let after = engine.index().manifest();
    for other in ["ops/deploy.md", "kitchen/bread.md", "journal/2026-03-02.txt"] {
        assert_eq!(before.files[other], after.files[other], "{other} was touched");
    }
    let hits = engine.search(&request("ninety days", SearchMode::Bm25)).unwrap();
    assert_eq!(hits[0].chunk.path, "ops/backup.md");
    assert!(engine.search(&request("thirty", SearchMode::Bm25)).unwrap().is_empty());
}

#[test]
fn a_noop_reconcile_reads_nothing_and_a_touched_file_is_not_rechunked() {
    let f = Fixture::standard();
    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    reconcile(&mut engine);
    let n = embedder.count();
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.files_unchanged, report.chunks_written), (0, 4, 0));
    // Same contents, new mtime: only the manifest changes.
    let p = f.root().join("kitchen/bread.md");
    let contents = std::fs::read(&p).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&p, &contents).unwrap();
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.files_touched), (0, 1), "{report:?}");
    assert_eq!(embedder.count(), n);
}

#[test]
fn a_deleted_file_leaves_both_indexes() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let ids: Vec<u64> =
        engine.index().manifest().files["kitchen/bread.md"].chunks.iter().map(|c| c.id).collect();
    assert!(ids.iter().all(|id| engine.index().has_vector(*id)));
    std::fs::remove_file(f.root().join("kitchen/bread.md")).unwrap();
    let report = reconcile(&mut engine);
    assert_eq!(report.files_removed, 1);
    assert!(!engine.index().manifest().files.contains_key("kitchen/bread.md"));
    assert!(ids.iter().all(|id| !engine.index().has_vector(*id)));
    assert_eq!(engine.index().vector_count(), engine.index().manifest().chunk_count());
    for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Hybrid] {
        let hits = engine.search(&request("sourdough starter dough", mode)).unwrap();
        assert!(hits.iter().all(|h| h.chunk.path != "kitchen/bread.md"), "{mode}");
    }
}

#[test]
fn a_file_that_comes_back_takes_its_vectors_again_instead_of_being_embedded() {
    // A file deleted (a branch switched, a folder moved out, a file briefly unreadable)
    // and back later, in another process: its chunks take the vectors they had.
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let query = request("sourdough starter dough", SearchMode::Vector);
    let score_of = |hits: &[situate::search::Hit]| {
        hits.iter().find(|h| h.chunk.path == "kitchen/bread.md").map(|h| h.score)
    };
    let before = score_of(&engine.search(&query).unwrap()).unwrap();
    let path = f.root().join("kitchen/bread.md");
    let bread = std::fs::read(&path).unwrap();
    let chunks = engine.index().manifest().files["kitchen/bread.md"].chunks.len();
    std::fs::remove_file(&path).unwrap();
    reconcile(&mut engine);
    // Gone from every search, and the vector count is that of the chunks left.
    assert_eq!(score_of(&engine.search(&query).unwrap()), None);
    assert_eq!(engine.index().vector_count(), engine.index().manifest().chunk_count());
    drop(engine);

    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    std::fs::write(&path, &bread).unwrap();
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.vectors_embedded, report.vectors_reused), (1, 0, chunks));
    assert_eq!(embedder.count(), 0);
    assert_eq!(score_of(&engine.search(&query).unwrap()), Some(before));

    // An edit undone: the paragraph's earlier text takes its vector back.
    let text = String::from_utf8(bread.clone()).unwrap();
    std::fs::write(&path, text.replacen("starter", "levain", 1)).unwrap();
    assert_eq!(reconcile(&mut engine).vectors_embedded, 1);
    std::fs::write(&path, &bread).unwrap();
    let asked = embedder.count();
    let report = reconcile(&mut engine);
    assert_eq!((report.vectors_embedded, embedder.count() - asked), (0, 0), "{report:?}");
    assert_eq!(score_of(&engine.search(&query).unwrap()), Some(before));
}

#[test]
fn a_restart_reopens_the_index_without_embedding_again() {
    let f = Fixture::standard();
    let chunks = index_and_close(&f);

    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    assert!(engine.index().notes().is_empty(), "{:?}", engine.index().notes());
    assert_eq!(engine.index().vector_count(), chunks);
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.vectors_embedded, report.vectors_refilled), (0, 0, 0));
    assert_eq!(embedder.count(), 0);
    let hits = engine.search(&request("herons canal", SearchMode::Hybrid)).unwrap();
    assert_eq!(hits[0].chunk.path, "journal/2026-03-02.txt");
}

#[test]
fn zeroed_bytes_inside_the_vector_file_are_found_and_only_those_vectors_rebuilt() {
    let f = Fixture::standard();
    let chunks = index_and_close(&f);
    // Damage that keeps the file's size and header: two rows that read back wrong.
    let path = f.index_dir().join("vectors.vec");
    let mut bytes = std::fs::read(&path).unwrap();
    let row = (bytes.len() - 16) / chunks;
    let middle = 16 + row * (chunks / 2);
    bytes[middle + row / 2..middle + row + row / 2].fill(0);
    std::fs::write(&path, bytes).unwrap();

    let mut engine = f.engine(Counting::new());
    let notes = engine.index().notes().to_vec();
    assert!(
        notes.iter().any(|n| n.contains("2 rows do not match") && n.contains("re-embedded")),
        "{notes:?}"
    );
    let report = reconcile(&mut engine);
    assert_eq!(report.vectors_refilled, 2);
    let hits = engine.search(&request("herons canal", SearchMode::Vector)).unwrap();
    assert_eq!(hits[0].chunk.path, "journal/2026-03-02.txt");
}

#[test]
fn a_corrupt_vector_file_is_rebuilt_from_stored_texts() {
    let f = Fixture::standard();
    let chunks = index_and_close(&f);
    std::fs::write(f.index_dir().join("vectors.vec"), b"not a vector file").unwrap();

    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    assert!(engine.index().notes().iter().any(|n| n.contains("re-embedded")), "{:?}", engine.index().notes());
    let report = reconcile(&mut engine);
    assert_eq!(report.vectors_refilled, chunks);
    assert_eq!(report.files_indexed, 0, "re-chunking is not needed");
    assert_eq!(engine.index().vector_count(), chunks);
    let hits = engine.search(&request("herons canal", SearchMode::Vector)).unwrap();
    assert_eq!(hits[0].chunk.path, "journal/2026-03-02.txt");
}

#[test]
fn an_index_with_the_vector_file_of_earlier_versions_is_converted_without_re_embedding() {
    use situate::index::VectorIndex;
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let chunks = engine.index().manifest().chunk_count();
    let by_meaning = request("herons canal", SearchMode::Vector);
    let expected = top_paths(&engine.search(&by_meaning).unwrap());
    // The vectors as earlier versions kept them: a usearch file, and a record of its
    // checksum and no rows.
    let view = engine.view();
    let snapshot = view.snapshot();
    let mut legacy = VectorIndex::create(engine.index().embedder().dimensions).unwrap();
    for id in engine.index().chunk_ids() {
        legacy.add(id, &snapshot.vector_of(id).unwrap().unwrap()).unwrap();
    }
    drop((view, engine));
    let dir = f.index_dir();
    legacy.save(&dir.join("vectors.usearch")).unwrap();
    let checksum = xxhash_rust::xxh3::xxh3_64(&std::fs::read(dir.join("vectors.usearch")).unwrap());
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("vectors.json")).unwrap()).unwrap();
    record.as_object_mut().unwrap().remove("rows");
    record["checksum"] = serde_json::json!(checksum);
    std::fs::write(dir.join("vectors.json"), serde_json::to_vec(&record).unwrap()).unwrap();
    for name in ["vectors.vec", "vectors.sig", "vectors.checked"] {
        std::fs::remove_file(dir.join(name)).unwrap();
    }

    // A reader reads such an index as it is.
    let reader = {
        let _lock = situate::index::lock::WriterLock::try_acquire(&dir.join("writer.lock")).unwrap().unwrap();
        f.engine(Counting::new())
    };
    assert!(reader.is_read_only() && reader.notes().is_empty(), "{:?}", reader.notes());
    assert_eq!(top_paths(&reader.search(&by_meaning).unwrap()), expected);
    drop(reader);
    // A writer converts it: nothing is embedded again, and the earlier file goes.
    let engine = reopened_whole(&f, chunks);
    assert_eq!(top_paths(&engine.search(&by_meaning).unwrap()), expected);
    assert!(!dir.join("vectors.usearch").exists() && dir.join("vectors.vec").exists());
    drop(engine);
    let engine = f.engine(Counting::new());
    assert!(engine.index().notes().is_empty(), "{:?}", engine.index().notes());
    assert_eq!(engine.index().vector_count(), chunks);
}

#[test]
fn a_corrupt_manifest_is_rebuilt_from_the_chunk_store() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let files = engine.index().manifest().files.clone();
    drop(engine);
    let manifest = f.index_dir().join("manifest.bin");
    let mut bytes = std::fs::read(&manifest).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&manifest, bytes).unwrap();

    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    assert!(engine.index().notes().iter().any(|n| n.contains("manifest")), "{:?}", engine.index().notes());
    assert_eq!(engine.index().manifest().files.len(), files.len());
    for (path, entry) in &files {
        assert_eq!(engine.index().manifest().files[path].chunks, entry.chunks, "{path}");
    }
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.vectors_embedded), (0, 0));
}

#[test]
fn a_small_commit_appends_to_the_manifests_journal_and_a_cut_journal_is_repaired() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let (binary, log) = (f.index_dir().join("manifest.bin"), f.index_dir().join("manifest.log"));
    let written_whole = std::fs::read(&binary).unwrap();
    let log_before = std::fs::metadata(&log).unwrap().len();
    f.write("ops/new.md", "# Incidents\n\nPage the on-call engineer through the pager rotation.\n");
    std::fs::remove_file(f.root().join("journal/2026-03-02.txt")).unwrap();
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.files_removed), (1, 1));
    // The commit wrote its files to the journal, not the manifest whole.
    assert_eq!(std::fs::read(&binary).unwrap(), written_whole);
    let log_after = std::fs::metadata(&log).unwrap().len();
    assert!(log_after > log_before);
    let manifest = engine.index().manifest().clone();
    drop(engine);

    // Every process reads the manifest and its journal as the writer left them.
    let engine = f.engine(Counting::new());
    assert!(engine.index().notes().is_empty(), "{:?}", engine.index().notes());
    assert_eq!(engine.index().manifest(), &manifest);
    drop(engine);

    // A run killed while it appended leaves the journal cut short: the manifest is of the
    // commit before, so it is rebuilt from the chunk store, and nothing is indexed again.
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 5]).unwrap();
    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    assert!(engine.index().notes().iter().any(|n| n.contains("manifest")), "{:?}", engine.index().notes());
    assert_eq!(
        engine.index().manifest().files.keys().collect::<Vec<_>>(),
        manifest.files.keys().collect::<Vec<_>>()
    );
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.files_removed, embedder.count()), (0, 0, 0));
    let hits = engine.search(&request("pager rotation on-call", SearchMode::Hybrid)).unwrap();
    assert_eq!(hits[0].chunk.path, "ops/new.md");
    drop(engine);
    let engine = f.engine(Counting::new());
    assert!(engine.index().notes().is_empty(), "{:?}", engine.index().notes());
}

#[test]
fn a_manifest_in_the_older_json_form_is_read_and_replaced() {
    // An index written before the manifest was kept in binary form opens without a
    // rebuild or a note, and its writer replaces the JSON file at its next commit.
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let manifest = engine.index().manifest().clone();
    drop(engine);
    let (binary, json) = (f.index_dir().join("manifest.bin"), f.index_dir().join("manifest.json"));
    std::fs::write(&json, serde_json::to_vec(&manifest).unwrap()).unwrap();
    std::fs::remove_file(&binary).unwrap();

    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    // A reader beside the writer reads the JSON form too.
    let reader = f.engine(Counting::new());
    assert!(reader.index().is_read_only());
    assert_eq!(reader.index().manifest(), &manifest);
    drop(reader);
    assert!(engine.index().notes().is_empty(), "{:?}", engine.index().notes());
    assert_eq!(engine.index().manifest(), &manifest);
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.vectors_embedded, embedder.count()), (0, 0, 0));
    assert!(binary.exists() && !json.exists(), "the JSON manifest is replaced by the binary one");
    drop(engine);
    let engine = f.engine(Counting::new());
    assert!(engine.index().notes().is_empty(), "{:?}", engine.index().notes());
    assert_eq!(engine.index().manifest().files, manifest.files);
}

#[test]
fn a_corrupt_chunk_store_leads_to_a_full_rebuild() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    drop(engine);
    std::fs::write(f.index_dir().join("tantivy/meta.json"), b"garbage").unwrap();

    let mut engine = f.engine(Counting::new());
    assert!(engine.index().notes().iter().any(|n| n.contains("rebuilt")), "{:?}", engine.index().notes());
    let report = reconcile(&mut engine);
    assert_eq!(report.files_indexed, 4);
    let hits = engine.search(&request("herons canal", SearchMode::Hybrid)).unwrap();
    assert_eq!(hits[0].chunk.path, "journal/2026-03-02.txt");
}

#[test]
fn a_crash_between_commit_and_manifest_is_repaired() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    // The vector file and its sidecar are appended to, and their record names how much of
    // them was committed.
    let written_after_commit = ["manifest.bin", "manifest.log", "vectors.json"];
    let old: Vec<Vec<u8>> =
        written_after_commit.iter().map(|n| std::fs::read(f.index_dir().join(n)).unwrap()).collect();
    f.write("ops/new.md", "# Incidents\n\nPage the on-call engineer through the pager rotation.\n");
    reconcile(&mut engine);
    drop(engine);
    // Put back the files written after the chunk store commit, as a crash would have
    // left them.
    for (name, bytes) in written_after_commit.iter().zip(old) {
        std::fs::write(f.index_dir().join(name), bytes).unwrap();
    }

    let mut engine = f.engine(Counting::new());
    assert!(!engine.index().notes().is_empty());
    assert!(engine.index().manifest().files.contains_key("ops/new.md"));
    let report = reconcile(&mut engine);
    assert_eq!(report.vectors_refilled, 1, "{report:?}");
    assert_eq!(engine.index().vector_count(), engine.index().manifest().chunk_count());
    let hits = engine.search(&request("pager rotation on-call", SearchMode::Vector)).unwrap();
    assert_eq!(hits[0].chunk.path, "ops/new.md");
}

#[test]
fn a_model_change_rebuilds_vectors_without_rechunking() {
    let f = Fixture::standard();
    let chunks = index_and_close(&f);

    let other = Counting::renamed("another-model");
    let mut engine = f.engine(other.clone());
    assert!(engine.index().notes().iter().any(|n| n.contains("embedding model changed")));
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.vectors_refilled), (0, chunks));
    assert_eq!(other.count(), chunks);
    drop(engine);
    // And the new identity sticks.
    let mut engine = f.engine(Counting::renamed("another-model"));
    assert!(engine.index().notes().is_empty(), "{:?}", engine.index().notes());
    assert_eq!(reconcile(&mut engine).vectors_refilled, 0);
}

#[test]
fn a_settings_change_rechunks_every_file() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    drop(engine);
    let mut config = f.config();
    config.context.header_template = "{path} > {headings}".into();
    let mut engine = f.engine_with(config, Counting::new());
    let report = reconcile(&mut engine);
    assert_eq!(report.files_indexed, 4);
    let hits = engine.search(&request("backup retention", SearchMode::Bm25)).unwrap();
    assert_eq!(hits[0].chunk.context, "ops/backup.md > Backups > Retention");
}

#[test]
fn bad_files_are_skipped_with_reasons_and_the_rest_is_indexed() {
    let f = Fixture::standard();
    f.write("bin.md", b"PK\x03\x04\0\0binary");
    // UTF-8 and Latin-1 pasted together read whole; UTF-8 with a bad byte is decoded with a
    // replacement character for it, and reported.
    f.write("mixed.txt", b"Cr\xc3\xa8me br\xfbl\xe9e needs a blowtorch.\n");
    f.write(
        "damaged.txt",
        b"Cr\xc3\xa8me br\xc3\xbbl\xc3\xa9e \xc3\xa0 la fran\xc3\xa7aise \xff needs a torch.\n",
    );
    f.write("huge.md", vec![b'a'; 2048]);
    f.write("broken.md", "# Title\n\n```rust\nfn unterminated() {\n\n| a | b\n|--\n<div>\n");
    let mut config = f.config();
    config.walk.max_file_bytes = 1024;
    let mut engine = f.engine_with(config, Counting::new());
    let report = reconcile(&mut engine);
    let reasons: Vec<String> = report.skipped.iter().map(|s| format!("{}: {}", s.path, s.reason)).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[0].starts_with("bin.md: binary"), "{reasons:?}");
    assert!(reasons[1].starts_with("huge.md: too large"), "{reasons:?}");
    assert_eq!(report.lossy, ["damaged.txt"]);
    assert_eq!(report.files_indexed, 7);
    let hits = engine.search(&request("blowtorch", SearchMode::Bm25)).unwrap();
    assert_eq!(hits[0].chunk.path, "mixed.txt");
    assert_eq!(hits[0].chunk.text, "Crème brûlée needs a blowtorch.");
    let hits = engine.search(&request("torch", SearchMode::Bm25)).unwrap();
    assert_eq!(hits[0].chunk.text, "Crème brûlée à la française \u{FFFD} needs a torch.");
    assert_eq!(engine.status().skipped.len(), 2);
}

/// Indexes a file of 1,909 bytes, lowers `max_file_bytes` below it, runs `again` with the
/// file's size and time unchanged, and checks that the file went out, skipped as too large.
fn a_lower_size_limit_takes_out(again: impl FnOnce(&mut Engine) -> situate::engine::ReconcileReport) {
    let f = Fixture::standard();
    f.write("huge.md", format!("# Huge\n\n{}\n", "lighthouse keepers ".repeat(100)));
    // Older than the commit, so that its size and time prove it unchanged on the next run.
    common::age(&f.root().join("huge.md"));
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    assert_eq!(engine.search(&request("lighthouse", SearchMode::Bm25)).unwrap()[0].chunk.path, "huge.md");
    drop(engine);
    let mut config = f.config();
    config.walk.max_file_bytes = 1024;
    let mut engine = f.engine_with(config, Counting::new());
    let report = again(&mut engine);
    assert_eq!(report.files_removed, 1, "{report:?}");
    let reasons: Vec<String> = report.skipped.iter().map(|s| format!("{}: {}", s.path, s.reason)).collect();
    assert!(reasons.len() == 1 && reasons[0].starts_with("huge.md: too large"), "{reasons:?}");
    let hits = engine.search(&request("lighthouse", SearchMode::Bm25)).unwrap();
    assert!(hits.iter().all(|h| h.chunk.path != "huge.md"), "{:?}", top_paths(&hits));
    assert_eq!(engine.status().skipped.len(), 1);
}

#[test]
fn a_lower_size_limit_takes_out_the_files_it_now_leaves_out() {
    a_lower_size_limit_takes_out(reconcile);
}

#[test]
fn a_lower_size_limit_takes_out_a_file_reindexed_alone() {
    // A reindex of that file alone, or its save with the same size and time.
    a_lower_size_limit_takes_out(|engine| engine.update(&["huge.md".to_string()]).unwrap());
}

#[test]
fn a_file_that_turns_binary_loses_its_chunks() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    f.write("kitchen/bread.md", b"\0\0\0");
    let report = reconcile(&mut engine);
    assert_eq!(report.files_removed, 1);
    assert!(!engine.index().manifest().files.contains_key("kitchen/bread.md"));
}

#[test]
fn a_failed_embedding_batch_writes_nothing() {
    let f = Fixture::standard();
    let mut engine = f.engine(Arc::new(Failing));
    assert!(engine.reconcile(&mut |_| {}).is_err());
    drop(engine);
    let mut engine = f.engine(Counting::new());
    assert_eq!(engine.index().manifest().files.len(), 0);
    assert_eq!(reconcile(&mut engine).files_indexed, 4);
}

#[test]
fn a_second_writer_gets_a_read_only_engine_that_still_searches() {
    let f = Fixture::standard();
    let mut first = f.engine(Counting::new());
    reconcile(&mut first);
    let mut second = f.engine(Counting::new());
    assert!(second.is_read_only());
    assert!(second.reconcile(&mut |_| {}).is_err());
    let hits = second.search(&request("herons canal", SearchMode::Hybrid)).unwrap();
    assert_eq!(hits[0].chunk.path, "journal/2026-03-02.txt");
    assert!(second.status().read_only && second.status().other_writer);
    drop(first);
    let third = f.engine(Counting::new());
    assert!(!third.is_read_only());
}

#[test]
fn a_reader_opening_during_another_process_commit_reads_that_commit_whole() {
    // The writer has committed the chunk store and not yet its manifest: a reader opening
    // then reads both again, rather than taking the manifest for damaged and rebuilding it.
    let f = Fixture::standard();
    let mut writer = f.engine(Counting::new());
    reconcile(&mut writer);
    let dir = f.index_dir();
    let manifest_files = ["manifest.bin", "manifest.log"];
    let read = |names: &[&str]| names.iter().map(|n| std::fs::read(dir.join(n)).ok()).collect::<Vec<_>>();
    let put = |contents: &[Option<Vec<u8>>]| {
        for (name, bytes) in manifest_files.iter().zip(contents) {
            match bytes {
                Some(bytes) => std::fs::write(dir.join(name), bytes).unwrap(),
                None => drop(std::fs::remove_file(dir.join(name))),
            }
        }
    };
    let before = read(&manifest_files);
    f.write("ops/pager.md", "# Pager\n\nThe narwhal rota changes every Tuesday.\n");
    reconcile(&mut writer);
    let after = read(&manifest_files);
    put(&before);
    // The commit ends while the reader opens.
    let opening = std::thread::scope(|scope| {
        let reader = scope.spawn(|| f.engine(Counting::new()));
        std::thread::sleep(std::time::Duration::from_millis(30));
        put(&after);
        reader.join().unwrap()
    });
    assert!(opening.is_read_only());
    assert!(opening.notes().is_empty(), "{:?}", opening.notes());
    assert_eq!(opening.index().manifest().files.len(), 5);
}

#[test]
fn bad_config_values_are_reported_by_key_and_defaults_used() {
    let f = Fixture::standard();
    f.write(
        "situate.toml",
        format!(
            "index_dir = {:?}\n[chunk]\nmax_tokens = \"lots\"\n[search]\nmode = \"psychic\"\nlimit = 3\n",
            f.index_dir()
        ),
    );
    let engine = Engine::open(f.root(), None, OpenMode::Write).unwrap();
    let keys: Vec<&str> = engine.config_problems().iter().map(|p| p.key.as_str()).collect();
    assert_eq!(keys, ["chunk.max_tokens", "search.mode"]);
    assert_eq!(engine.config().search.limit, 3);
    assert_eq!(engine.config().chunk.max_tokens, Config::default().chunk.max_tokens);
    assert_eq!(engine.status().config_problems.len(), 2);
}

#[test]
fn show_finds_the_chunk_at_a_line() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let at = engine.chunks_at("ops/backup.md", Some(12)).unwrap();
    assert_eq!(at.len(), 1);
    assert_eq!(at[0].heading_path, ["Backups", "Retention"]);
    let abs = f.root().join("ops/backup.md");
    let all = engine.chunks_at(abs.to_str().unwrap(), None).unwrap();
    assert_eq!(all.len(), 3);
    assert!(all.windows(2).all(|w| w[0].ordinal < w[1].ordinal));
    assert!(engine.chunks_at("nope.md", None).is_err());
    assert!(engine.chunks_at("../outside.md", None).is_err());
}

#[test]
fn odd_queries_are_never_errors() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    for q in ["", "   ", "\"unbalanced", "title:", "(((", "AND OR NOT", "*", "🦀", "a:b:c \\"] {
        for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Hybrid] {
            engine.search(&request(q, mode)).unwrap_or_else(|e| panic!("{q:?} {mode}: {e}"));
        }
    }
}

#[test]
fn a_rewrite_within_the_same_clock_tick_is_not_missed() {
    let f = Fixture::standard();
    f.write("fresh.md", "# Fresh\n\nThe kettle whistles at dawn.\n");
    let path = f.root().join("fresh.md");
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    // Same size, same mtime, other words: only the recency of the mtime gives it away.
    f.write("fresh.md", "# Fresh\n\nThe rooster crowing at dawn.\n");
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
    let report = reconcile(&mut engine);
    assert_eq!(report.files_indexed, 1, "{report:?}");
    let hits = engine.search(&request("rooster", SearchMode::Bm25)).unwrap();
    assert_eq!(hits[0].chunk.path, "fresh.md");
}

#[test]
fn vector_changes_are_appended_and_survive_a_restart() {
    use std::os::unix::fs::MetadataExt;
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let vector_file = f.index_dir().join("vectors.vec");
    let before = std::fs::metadata(&vector_file).unwrap();

    f.write("ops/new.md", "# Incidents\n\nPage the on-call engineer through the pager rotation.\n");
    std::fs::remove_file(f.root().join("kitchen/bread.md")).unwrap();
    reconcile(&mut engine);
    // The vector file was not rewritten: the new chunk's row was appended to it.
    let after = std::fs::metadata(&vector_file).unwrap();
    assert_eq!(after.ino(), before.ino());
    assert!(after.len() > before.len());
    let chunks = engine.index().manifest().chunk_count();
    drop(engine);

    let engine = reopened_whole(&f, chunks);
    let hits = engine.search(&request("pager rotation on-call", SearchMode::Vector)).unwrap();
    assert_eq!(hits[0].chunk.path, "ops/new.md");
    assert!(hits.iter().all(|h| h.chunk.path != "kitchen/bread.md"));
}

#[test]
fn a_damaged_row_costs_only_its_re_embedding() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    f.write("ops/new.md", "# Incidents\n\nPage the on-call engineer through the pager rotation.\n");
    reconcile(&mut engine);
    drop(engine);
    // The last row, the new chunk's, scribbled over.
    let path = f.index_dir().join("vectors.vec");
    let mut bytes = std::fs::read(&path).unwrap();
    let len = bytes.len();
    bytes[len - 8..].copy_from_slice(b"scribble");
    std::fs::write(&path, bytes).unwrap();

    let mut engine = f.engine(Counting::new());
    assert!(
        engine.index().notes().iter().any(|n| n.contains("1 row does not match")),
        "{:?}",
        engine.index().notes()
    );
    let report = reconcile(&mut engine);
    assert_eq!(report.vectors_refilled, 1, "{report:?}");
    assert_eq!(engine.index().vector_count(), engine.index().manifest().chunk_count());
}

#[test]
fn a_model_folder_named_in_the_config_is_used() {
    let f = Fixture::standard();
    let model = f.index.path().join("my-model");
    std::fs::create_dir_all(&model).unwrap();
    let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/static-model");
    for name in ["model.safetensors", "tokenizer.json", "config.json"] {
        std::fs::copy(assets.join(name), model.join(name)).unwrap();
    }
    f.write(
        "situate.toml",
        format!(
            "index_dir = {:?}\n[embedding]\nprovider = \"static\"\nmodel_path = {:?}\n",
            f.index_dir(),
            model
        ),
    );
    let mut engine = Engine::open(f.root(), None, OpenMode::Write).unwrap();
    assert!(engine.config_problems().is_empty(), "{:?}", engine.config_problems());
    let identity = engine.status().embedder;
    assert!(identity.model.starts_with("dir:"), "{identity:?}");
    reconcile(&mut engine);
    let hits = engine.search(&request("herons canal", SearchMode::Vector)).unwrap();
    assert_eq!(hits[0].chunk.path, "journal/2026-03-02.txt");

    // A folder that is not a model is a clear error naming it.
    f.write(
        "situate.toml",
        format!("index_dir = {:?}\n[embedding]\nmodel_path = \"/no/such/model\"\n", f.index_dir()),
    );
    let err = Engine::open(f.root(), None, OpenMode::Write).unwrap_err().to_string();
    assert!(err.contains("/no/such/model"), "{err}");
}

#[test]
fn a_word_common_in_text_earns_no_bonus_from_one_page_title() {
    let f = Fixture::empty();
    // "request" is everywhere in the text of these docs, but only one page has it in its
    // title, headings and path.
    f.write(
        "contributing/pull-requests.md",
        "# Pull Requests\n\n## Reviewing a Pull Request\n\nA request for review is answered within a week. \
         Each request is labelled.\n",
    );
    f.write(
        "middlewares/ratelimit.md",
        "# Throttling\n\n## Average\n\nThe number of requests allowed per second. Extra requests wait.\n",
    );
    for (i, topic) in ["headers", "retry", "compress", "redirect", "auth", "buffering"].iter().enumerate() {
        f.write(
            &format!("middlewares/{topic}.md"),
            format!("# {topic}\n\n## Behaviour {i}\n\nEvery request passes through the {topic} middleware before the service sees the request.\n"),
        );
    }
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let hits = engine.search(&request("requests per second", SearchMode::Bm25)).unwrap();
    assert_eq!(hits[0].chunk.path, "middlewares/ratelimit.md", "{:?}", top_paths(&hits));
}

#[test]
fn update_reindexes_only_the_files_named() {
    let f = Fixture::standard();
    let embedder = Counting::new();
    let mut engine = f.engine(embedder.clone());
    reconcile(&mut engine);
    let before = engine.index().manifest().clone();

    // A save: one changed file, by absolute path.
    let path = f.root().join("ops/deploy.md");
    let text = std::fs::read_to_string(&path).unwrap().replace("Tuesdays", "Wednesdays");
    std::fs::write(&path, text).unwrap();
    // Another file changed too, but nobody said so: it waits for the next reconcile.
    f.write("kitchen/bread.md", "# Rye\n\nRye needs no kneading at all.\n");
    let n = embedder.count();
    let report = engine.update(&[path.display().to_string()]).unwrap();
    assert_eq!((report.files_seen, report.files_indexed, report.vectors_embedded), (1, 1, 1), "{report:?}");
    assert_eq!(embedder.count() - n, 1);
    assert_eq!(engine.index().manifest().files["kitchen/bread.md"], before.files["kitchen/bread.md"]);
    let hits = engine.search(&request("wednesdays", SearchMode::Bm25)).unwrap();
    assert_eq!(hits[0].chunk.path, "ops/deploy.md");
    assert!(engine.search(&request("rye kneading", SearchMode::Bm25)).unwrap().is_empty());

    // Saving it again unchanged reads nothing new.
    let report = engine.update(&["ops/deploy.md".to_string()]).unwrap();
    assert_eq!(report.files_indexed, 0);
}

#[test]
fn update_adds_new_files_drops_deleted_ones_and_respects_ignore_rules() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    f.write(".gitignore", "scratch/\n");
    f.write("ops/oncall.md", "# On-call\n\nThe pager rotation changes every Monday.\n");
    f.write("scratch/todo.md", "# Todo\n\nBuy a pager.\n");
    f.write("ops/script.sh", "echo pager\n");
    std::fs::remove_file(f.root().join("journal/2026-03-02.txt")).unwrap();
    let names: Vec<String> =
        ["ops/oncall.md", "scratch/todo.md", "ops/script.sh", "journal/2026-03-02.txt", "/etc/hosts"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let report = engine.update(&names).unwrap();
    assert_eq!((report.files_indexed, report.files_removed), (1, 1), "{report:?}");
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert_eq!(report.skipped[0].path, "/etc/hosts");
    let files = &engine.index().manifest().files;
    assert!(files.contains_key("ops/oncall.md"));
    assert!(!files.contains_key("scratch/todo.md") && !files.contains_key("ops/script.sh"));
    assert!(!files.contains_key("journal/2026-03-02.txt"));
    let hits = engine.search(&request("pager", SearchMode::Bm25)).unwrap();
    assert_eq!(top_paths(&hits), ["ops/oncall.md:1"]);
    // A full reconcile afterwards agrees and has nothing to do.
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.files_removed), (0, 0), "{report:?}");
}

#[test]
fn update_drops_a_file_that_became_unreadable_and_lists_it() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    f.write("kitchen/bread.md", b"\0\0binary now");
    let report = engine.update(&["kitchen/bread.md".to_string()]).unwrap();
    assert_eq!(report.files_removed, 1);
    assert_eq!(engine.status().skipped.len(), 1);
    assert_eq!(engine.status().skipped[0].path, "kitchen/bread.md");
    // Fixed again: it comes back and leaves the skip list.
    f.write("kitchen/bread.md", "# Bread\n\nBack to text.\n");
    let report = engine.update(&["kitchen/bread.md".to_string()]).unwrap();
    assert_eq!(report.files_indexed, 1);
    assert!(engine.status().skipped.is_empty());
}

#[test]
fn chunks_whose_vectors_never_came_leave_the_vector_file_alone_when_they_go() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::slow());
    engine.set_pending_vectors(PendingVectors::Left);
    reconcile(&mut engine);
    assert_eq!(engine.index().vector_count(), 0);
    // The next process that leaves them to a later one does not list them at all, while
    // status still counts them; one that fills between other work queues them all.
    drop(engine);
    let chunks = {
        let mut engine = f.engine(Counting::slow());
        engine.set_pending_vectors(PendingVectors::Left);
        reconcile(&mut engine);
        assert_eq!(engine.pending_vectors(), 0);
        assert_eq!(engine.status().vectors_pending, engine.index().manifest().chunk_count());
        engine.index().manifest().chunk_count()
    };
    let mut engine = f.engine(Counting::slow());
    engine.set_pending_vectors(PendingVectors::Queued);
    reconcile(&mut engine);
    assert_eq!(engine.pending_vectors(), chunks);
    engine.set_pending_vectors(PendingVectors::Left);
    let (vectors, record) = (f.index_dir().join("vectors.vec"), f.index_dir().join("vectors.json"));
    let before = (std::fs::read(&vectors).unwrap(), std::fs::metadata(&record).unwrap().modified().unwrap());
    // Every file rewritten and one removed: their old chunks go, none of which had a vector
    // of the model's, so neither the vector file nor its record is written.
    for path in ["ops/backup.md", "ops/deploy.md", "kitchen/bread.md"] {
        let text = std::fs::read_to_string(f.root().join(path)).unwrap();
        f.write(path, format!("{text}\nOne more line.\n"));
    }
    std::fs::remove_file(f.root().join("journal/2026-03-02.txt")).unwrap();
    let report = reconcile(&mut engine);
    assert!(report.files_indexed >= 3 && report.files_removed == 1, "{report:?}");
    let after = (std::fs::read(&vectors).unwrap(), std::fs::metadata(&record).unwrap().modified().unwrap());
    assert_eq!(after, before);
}

#[test]
fn a_view_keeps_its_commit_while_the_engine_writes_and_searches_from_another_thread() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let before = engine.view();

    f.write("ops/pager.md", "# Pager\n\nThe zebra rota changes every Tuesday.\n");
    std::fs::remove_file(f.root().join("kitchen/bread.md")).unwrap();
    engine.update(&["ops/pager.md".to_string(), "kitchen/bread.md".to_string()]).unwrap();
    let after = engine.view();

    // The old view still answers from its own commit, on another thread, after the write.
    let old = std::thread::spawn(move || {
        let zebra = before.search(&request("zebra rota", SearchMode::Hybrid)).unwrap();
        let bread = before.search(&request("sourdough starter", SearchMode::Hybrid)).unwrap();
        let status = before.status();
        (zebra, bread, status.files)
    })
    .join()
    .unwrap();
    assert!(!old.0.iter().any(|h| h.chunk.path == "ops/pager.md"), "{:?}", top_paths(&old.0));
    assert_eq!(old.1[0].chunk.path, "kitchen/bread.md");
    assert_eq!(old.2, 4);

    let zebra = after.search(&request("zebra rota", SearchMode::Hybrid)).unwrap();
    assert_eq!(zebra[0].chunk.path, "ops/pager.md");
    let bread = after.search(&request("sourdough starter", SearchMode::Hybrid)).unwrap();
    assert!(!bread.iter().any(|h| h.chunk.path == "kitchen/bread.md"));
    assert_eq!(after.status().files, 4);
    assert!(after.chunks_at("kitchen/bread.md", None).is_err());
}

#[test]
fn updating_a_deleted_folder_removes_the_files_it_held() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    std::fs::remove_dir_all(f.root().join("ops")).unwrap();
    let report = engine.update(&["ops".to_string()]).unwrap();
    assert_eq!(report.files_removed, 2);
    let files: Vec<&String> = engine.index().manifest().files.keys().collect();
    assert_eq!(files, ["journal/2026-03-02.txt", "kitchen/bread.md"]);
    // A path that never existed changes nothing.
    assert_eq!(engine.update(&["nowhere".to_string()]).unwrap().files_removed, 0);
}

#[test]
fn the_semantic_strategy_cuts_at_a_topic_change_and_its_settings_rechunk() {
    let f = Fixture::empty();
    let notes = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/chunk/topic_change.semantic.md"),
    )
    .unwrap();
    f.write("notes.md", &notes);
    common::age(&f.root().join("notes.md"));
    let mut config = f.config();
    config.chunk.strategy = situate::chunk::ChunkStrategy::Semantic;
    let counting = Counting::new();
    let mut engine = f.engine_with(config.clone(), counting.clone());
    reconcile(&mut engine);
    let chunks = engine.chunks_at("notes.md", None).unwrap();
    assert_eq!(chunks.len(), 2, "{chunks:#?}");
    assert!(chunks[1].text.starts_with("TCP congestion control"), "{}", chunks[1].text);
    // The sentences were embedded to find the cut, besides the chunks themselves.
    assert!(counting.count() > chunks.len(), "{} texts embedded", counting.count());
    drop(engine);

    // A new threshold, or a new model, cuts differently: every file is chunked again.
    config.chunk.semantic_threshold = 3.0;
    let mut engine = f.engine_with(config.clone(), Counting::new());
    assert_eq!(reconcile(&mut engine).files_indexed, 1);
    drop(engine);
    let mut engine = f.engine_with(config, Counting::renamed("another-model"));
    assert_eq!(reconcile(&mut engine).files_indexed, 1);
}

#[test]
fn a_slow_embedder_gets_the_texts_committed_first_and_its_vectors_filled_in_after() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::slow());
    engine.set_pending_vectors(PendingVectors::Queued);
    reconcile(&mut engine);
    let chunks = engine.index().manifest().chunk_count();
    assert_eq!(engine.pending_vectors(), chunks);
    // The words are searchable already, and the vector arm through the quick vectors that
    // stand in for the pending ones.
    let view = engine.view();
    assert_eq!(
        view.search(&request("backup retention", SearchMode::Bm25)).unwrap()[0].chunk.path,
        "ops/backup.md"
    );
    assert_eq!(view.snapshot().quick_count(), chunks);
    assert_eq!(
        view.search(&request("backup retention", SearchMode::Vector)).unwrap()[0].chunk.path,
        "ops/backup.md"
    );

    // Part of the vectors, then a restart: the rest are found missing and filled in.
    assert_eq!(engine.fill_pending_vectors(3).unwrap(), 3);
    assert_eq!(engine.index().vector_count(), 3);
    drop(engine);
    let slow = Counting::slow();
    let mut engine = f.engine(slow.clone());
    let report = reconcile(&mut engine);
    // Vectors missing since the last run count as refilled, not as new texts embedded.
    assert_eq!((report.vectors_refilled, report.vectors_embedded), (chunks - 3, 0), "{report:?}");
    assert_eq!(slow.count(), chunks - 3);
    assert_eq!(engine.pending_vectors(), 0);
    assert_eq!(engine.index().vector_count(), chunks);
    let hits = engine.search(&request("sourdough starter dough", SearchMode::Vector)).unwrap();
    assert_eq!(hits[0].chunk.path, "kitchen/bread.md");
    // Reopened once more, nothing is missing.
    drop(engine);
    let slow = Counting::slow();
    let mut engine = f.engine(slow.clone());
    let report = reconcile(&mut engine);
    assert_eq!((report.vectors_refilled, report.vectors_embedded), (0, 0), "{report:?}");
    assert_eq!(slow.count(), 0);
}

#[test]
fn a_text_held_by_many_chunks_is_embedded_once_by_the_fill() {
    // Copies of a note (a versioned docs folder, a note copied into a project) wait for
    // the slow model together: their text is embedded once, in one step or across steps.
    let f = Fixture::empty();
    let note =
        "# Okapi care\n\nOkapis eat leaves from the canopy.\n\n## Shelter\n\nThey need shade at noon.\n";
    for folder in ["v1", "v2", "v3", "v4"] {
        f.write(&format!("{folder}/okapi.md"), note);
    }
    f.write("other.md", "# Zebras\n\nZebras graze the short grass.\n");
    let slow = Counting::slow();
    let mut engine = f.engine(slow.clone());
    engine.set_pending_vectors(situate::engine::PendingVectors::Queued);
    reconcile(&mut engine);
    let chunks = engine.index().manifest().chunk_count();
    assert_eq!(engine.pending_vectors(), chunks);
    let asked = slow.count();
    // One step takes in two copies' chunks; the next ones find the texts embedded.
    let mut stored = 0;
    while engine.pending_vectors() > 0 {
        stored += engine.fill_pending_vectors(3).unwrap();
    }
    assert_eq!(stored, chunks, "every waiting chunk is counted as filled");
    assert_eq!(slow.count() - asked, 3, "two texts of the copies and the other note's one");
    assert_eq!(engine.index().vector_count(), chunks);
    let hits = engine.search(&request("what okapis eat", SearchMode::Vector)).unwrap();
    let copies: Vec<_> = hits.iter().filter(|h| h.chunk.text.contains("canopy")).collect();
    assert_eq!(copies.len(), 4, "{hits:?}");
    assert!(copies.iter().all(|h| h.vector_similarity == copies[0].vector_similarity), "one vector");
}

#[test]
fn a_saved_file_is_embedded_at_once_even_with_a_slow_embedder() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::slow());
    reconcile(&mut engine);
    assert_eq!(engine.pending_vectors(), 0, "a plain reconcile fills the vectors before returning");
    f.write("ops/pager.md", "# Pager\n\nThe zebra rota changes every Tuesday.\n");
    engine.update(&["ops/pager.md".to_string()]).unwrap();
    assert_eq!(engine.pending_vectors(), 0);
    let hits = engine.search(&request("zebra rota", SearchMode::Vector)).unwrap();
    assert_eq!(hits[0].chunk.path, "ops/pager.md");
}

#[test]
fn an_interrupted_reconcile_commits_what_it_did_and_the_next_one_finishes() {
    let f = Fixture::empty();
    for i in 0..300 {
        f.write(&format!("notes/n{i:03}.md"), format!("# Note {i}\n\nThe okapi ledger line {i}.\n"));
    }
    let mut engine = f.engine(Counting::new());
    engine.interrupt_flag().store(true, std::sync::atomic::Ordering::Relaxed);
    let first = reconcile(&mut engine);
    assert!(first.interrupted, "{first:?}");
    let done = engine.index().manifest().files.len();
    assert!(0 < done && done < 300, "{done} files after the first batch");
    assert_eq!(engine.status().files, done, "what was done is committed");
    let second = reconcile(&mut engine);
    assert!(!second.interrupted);
    assert_eq!((second.files_indexed, engine.index().manifest().files.len()), (300 - done, 300));
}

#[test]
fn a_huge_limit_is_clamped_never_allocated() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    let chunks = {
        reconcile(&mut engine);
        engine.index().manifest().chunk_count()
    };
    for expand in [Expand::None, Expand::Window, Expand::Merge] {
        for mode in [SearchMode::Hybrid, SearchMode::Bm25, SearchMode::Vector] {
            let request = SearchRequest { limit: usize::MAX, expand, ..request("backups", mode) };
            let hits = engine.search(&request).unwrap();
            assert!(!hits.is_empty() && hits.len() <= chunks, "{mode} {expand:?}: {}", hits.len());
        }
    }
    let of = engine.chunks_at("ops/backup.md", Some(10)).unwrap().remove(0);
    let similar = engine.view().similar(&of, usize::MAX).unwrap();
    assert!(similar.len() < chunks);
}

#[test]
fn quick_vectors_cover_every_pending_chunk_through_fills_restarts_and_readers() {
    let f = Fixture::standard();
    let slow = Counting::slow();
    let mut engine = f.engine(slow.clone());
    engine.set_pending_vectors(PendingVectors::Queued);
    reconcile(&mut engine);
    let chunks = engine.index().manifest().chunk_count();
    assert_eq!(slow.count(), 0, "the slow model has embedded nothing yet");
    // The paths of the vector arm's top 5.
    let found = |engine: &Engine| {
        let hits = engine.search(&request("sourdough starter dough", SearchMode::Vector)).unwrap();
        assert_eq!(hits.len(), 5, "{:?}", top_paths(&hits));
        hits.iter().map(|h| h.chunk.path.clone()).collect::<Vec<_>>()
    };
    assert_eq!(found(&engine)[0], "kitchen/bread.md");

    // Half filled: each chunk has its own vector or a quick one, never both, never none.
    let half = chunks / 2;
    assert_eq!(engine.fill_pending_vectors(half).unwrap(), half);
    let snapshot = engine.view().snapshot().clone();
    assert_eq!(snapshot.quick_count(), chunks - half);
    let covered = engine
        .index()
        .chunk_ids()
        .into_iter()
        .filter(|id| engine.index().has_vector(*id) != snapshot.quick_vector_of(*id).unwrap().is_some())
        .count();
    assert_eq!(covered, chunks);
    // Two models' similarities are not comparable, so the order may move while half the
    // vectors are in; the answer stays among the first.
    assert!(found(&engine).contains(&"kitchen/bread.md".to_string()));

    // A second process reads the same index: its searches cover the pending chunks too.
    let reader = f.engine(Counting::slow());
    assert!(reader.is_read_only());
    assert_eq!(reader.view().snapshot().quick_count(), chunks - half);
    assert_eq!(found(&reader), found(&engine));
    drop(reader);

    // A restart reads them from the index folder: nothing is embedded again, so the quick
    // vector file does not grow.
    let quick_file = f.index_dir().join("quick.vec");
    let size = std::fs::metadata(&quick_file).unwrap().len();
    drop(engine);
    let mut engine = f.engine(Counting::slow());
    engine.set_pending_vectors(PendingVectors::Queued);
    assert_eq!(engine.view().snapshot().quick_count(), chunks - half);
    reconcile(&mut engine);
    assert_eq!(engine.pending_vectors(), chunks - half);
    assert_eq!(std::fs::metadata(&quick_file).unwrap().len(), size);
    assert!(engine.notes().is_empty(), "{:?}", engine.notes());
    while engine.pending_vectors() > 0 {
        engine.fill_pending_vectors(4).unwrap();
    }
    assert_eq!(engine.view().snapshot().quick_count(), 0);
    assert_eq!(found(&engine)[0], "kitchen/bread.md");

    // A deleted file takes its quick vectors with it.
    f.write("ops/pager.md", "# Pager\n\nThe zebra rota changes every Tuesday.\n");
    engine.update(&["ops/pager.md".to_string()]).unwrap();
    assert_eq!(engine.view().snapshot().quick_count(), 1);
    std::fs::remove_file(f.root().join("ops/pager.md")).unwrap();
    engine.update(&["ops/pager.md".to_string()]).unwrap();
    assert_eq!(engine.view().snapshot().quick_count(), 0);
}

#[test]
fn a_damaged_quick_vector_file_is_read_around_and_made_again() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::slow());
    engine.set_pending_vectors(PendingVectors::Queued);
    reconcile(&mut engine);
    let chunks = engine.index().manifest().chunk_count();
    let expected = engine.search(&request("sourdough starter dough", SearchMode::Vector)).unwrap();
    drop(engine);
    let quick_file = f.index_dir().join("quick.vec");
    for how in 0..5 {
        damage(&quick_file, how);
        // A reader cannot repair: it says so and makes them in memory for itself.
        let reader = {
            // Another process writes (holds the lock) but has not opened the index yet.
            let _lock = situate::index::lock::WriterLock::try_acquire(&f.index_dir().join("writer.lock"))
                .unwrap()
                .unwrap();
            let reader = f.engine(Counting::slow());
            assert!(reader.is_read_only());
            reader
        };
        // A changed byte costs only its row, which the reader makes for itself silently;
        // a file it cannot read at all, it says so.
        let noted = reader.notes().iter().any(|n| n.contains("quick"));
        assert!(noted == (how != 4), "{how}: {:?}", reader.notes());
        assert_eq!(reader.view().snapshot().quick_count(), chunks, "{how}");
        drop(reader);
        // A writer makes them again, once, and they are found as before.
        let engine = f.engine(Counting::slow());
        assert!(engine.notes().iter().any(|n| n.contains("quick")), "{how}: {:?}", engine.notes());
        assert_eq!(engine.view().snapshot().quick_count(), chunks, "{how}");
        let hits = engine.search(&request("sourdough starter dough", SearchMode::Vector)).unwrap();
        assert_eq!(top_paths(&hits), top_paths(&expected), "{how}");
        drop(engine);
        assert!(f.engine(Counting::slow()).notes().is_empty(), "{how}: repaired for good");
    }
    // The sidecar of ids and signs that an open reads instead of the rows: damaged, the
    // rows are read through instead, nothing is made again, and a writer rewrites it.
    let sidecar = f.index_dir().join("quick.sig");
    let good = std::fs::read(&sidecar).unwrap();
    for how in 0..5 {
        damage(&sidecar, how);
        let reader = {
            let _lock = situate::index::lock::WriterLock::try_acquire(&f.index_dir().join("writer.lock"))
                .unwrap()
                .unwrap();
            f.engine(Counting::slow())
        };
        assert!(reader.notes().is_empty(), "{how}: {:?}", reader.notes());
        let hits = reader.search(&request("sourdough starter dough", SearchMode::Vector)).unwrap();
        assert_eq!(top_paths(&hits), top_paths(&expected), "{how}");
        drop(reader);
        drop(f.engine(Counting::slow()));
        assert_eq!(std::fs::read(&sidecar).unwrap(), good, "{how}: rewritten as it was");
    }
}

#[test]
fn a_quick_vector_file_changed_under_running_engines_is_an_error_and_they_serve_on() {
    use std::os::unix::fs::FileExt;
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::slow());
    engine.set_pending_vectors(PendingVectors::Queued);
    reconcile(&mut engine);
    // A second process reads the same index, as a second editor's server would.
    let reader = f.engine(Counting::slow());
    assert!(reader.is_read_only());
    let by_meaning = request("sourdough starter dough", SearchMode::Vector);
    let expected = top_paths(&engine.search(&by_meaning).unwrap());
    assert_eq!(top_paths(&reader.search(&by_meaning).unwrap()), expected);
    let quick_file = f.index_dir().join("quick.vec");
    let good = std::fs::read(&quick_file).unwrap();
    for how in ["cut short", "rewritten in place"] {
        let file = std::fs::OpenOptions::new().write(true).open(&quick_file).unwrap();
        if how == "cut short" {
            // Mapped, the next search would end the process with SIGBUS.
            file.set_len(20).unwrap();
        } else {
            let mut other = good.clone();
            other[16..].iter_mut().for_each(|b| *b = b.wrapping_neg());
            file.write_all_at(&other, 0).unwrap();
        }
        for (who, e) in [("writer", &engine), ("reader", &reader)] {
            for mode in [SearchMode::Vector, SearchMode::Hybrid] {
                let err = e.search(&request("sourdough starter dough", mode)).unwrap_err().to_string();
                assert!(
                    err.contains("quick.vec") && err.contains("changed under the index"),
                    "{who} {how}: {err}"
                );
            }
            // Words are still searched.
            let words = e.search(&request("sourdough", SearchMode::Bm25)).unwrap();
            assert_eq!(words[0].chunk.path, "kitchen/bread.md", "{who} {how}");
        }
        // Once the file is whole again, both answer as before.
        std::fs::write(&quick_file, &good).unwrap();
        assert_eq!(top_paths(&engine.search(&by_meaning).unwrap()), expected, "{how}");
        assert_eq!(top_paths(&reader.search(&by_meaning).unwrap()), expected, "{how}");
    }
}

/// Every way a chunk-store file can be damaged: cut in half, zeroed, emptied, removed, or
/// one byte changed in the middle.
fn damage(path: &std::path::Path, how: usize) {
    let bytes = std::fs::read(path).unwrap();
    match how {
        0 => std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap(),
        1 => std::fs::write(path, vec![0u8; bytes.len()]).unwrap(),
        2 => std::fs::write(path, b"").unwrap(),
        3 => std::fs::remove_file(path).unwrap(),
        _ => {
            let mut bytes = bytes;
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x5a;
            std::fs::write(path, bytes).unwrap();
        }
    }
}

#[test]
fn any_damaged_chunk_store_file_is_set_aside_and_rebuilt_keeping_the_snippet_cache() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    // An edit leaves deleted documents behind, so the segments have a `.del` file too.
    f.write("ops/backup.md", "# Backups\n\nSnapshots are kept for ninety days.\n");
    reconcile(&mut engine);
    let chunks = engine.index().manifest().chunk_count();
    drop(engine);
    let cache = f.index_dir().join("snippets.jsonl");
    std::fs::write(&cache, "{\"written\": \"by an earlier run\"}\n").unwrap();
    let pristine = tempfile::tempdir().unwrap();
    common::copy_dir(&f.index_dir(), pristine.path());

    let mut kinds: Vec<String> = std::fs::read_dir(f.index_dir().join("tantivy"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.path().extension().map(|x| x.to_string_lossy().into_owned()))
        .filter(|x| x != "json" && x != "lock")
        .collect();
    kinds.sort();
    kinds.dedup();
    for kind in ["idx", "term", "store", "fast", "fieldnorm", "del", "pos"] {
        assert!(kinds.contains(&kind.to_string()), "no .{kind} file among {kinds:?}");
    }
    // The commit's own records, whose loss tantivy itself notices, recover as well.
    kinds.extend(["meta.json".to_string(), ".managed.json".to_string()]);
    for kind in &kinds {
        for how in 0..5 {
            // Back to the undamaged index, then damage every file of this kind.
            std::fs::remove_dir_all(f.index_dir()).unwrap();
            common::copy_dir(pristine.path(), &f.index_dir());
            for entry in std::fs::read_dir(f.index_dir().join("tantivy")).unwrap().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name == *kind || entry.path().extension().is_some_and(|x| x == kind.as_str()) {
                    damage(&entry.path(), how);
                }
            }
            let record = kind.ends_with(".json");
            // A reader cannot repair: it says the index is damaged (or not there at all).
            let opened =
                Engine::open_with(f.root(), f.config(), Vec::new(), Counting::new(), OpenMode::ReadOnly);
            if let Err(e) = opened {
                let err = e.to_string();
                assert!(
                    err.contains("chunk store") || err.contains("no index"),
                    "{kind} damaged {how}: {err}"
                );
            } else {
                assert!(record, "{kind} damaged {how}: a reader opened a damaged store");
            }

            let mut engine = f.engine(Counting::new());
            let notes = engine.index().notes().to_vec();
            // A lost `.managed.json` costs nothing: tantivy only uses it to collect garbage.
            assert!(
                notes.iter().any(|n| n.contains("rebuilt")) || kind == ".managed.json",
                "{kind} damaged {how}: {notes:?}"
            );
            let report = reconcile(&mut engine);
            if !record {
                assert_eq!(report.files_indexed, 4, ".{kind} damaged {how}");
            }
            assert_eq!(engine.index().manifest().chunk_count(), chunks, "{kind} damaged {how}");
            assert_eq!(engine.index().vector_count(), chunks, "{kind} damaged {how}: {notes:?}");
            let hits = engine.search(&request("ninety days", SearchMode::Hybrid)).unwrap();
            assert_eq!(hits[0].chunk.path, "ops/backup.md", ".{kind} damaged {how}");
            drop(engine);
            assert_eq!(
                std::fs::read_to_string(&cache).unwrap(),
                "{\"written\": \"by an earlier run\"}\n",
                "the snippet cache survives"
            );
            assert!(record || f.index_dir().join("tantivy.damaged").is_dir());
        }
    }
}

#[test]
fn a_store_file_damaged_after_it_was_found_intact_is_still_found() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    drop(engine);
    // This open checks every file and records them as intact; the next one reads none.
    drop(f.engine(Counting::new()));
    assert!(f.index_dir().join("store-checked.json").is_file());
    let idx = std::fs::read_dir(f.index_dir().join("tantivy"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "idx"))
        .unwrap();
    // File times tick coarsely: a rewrite in the same tick as the last one could look
    // unchanged, which a moment's pause rules out here.
    std::thread::sleep(std::time::Duration::from_millis(50));
    // One byte changed in place, the size kept: the file's change time moves.
    damage(&idx, 4);
    let engine = f.engine(Counting::new());
    assert!(engine.index().notes().iter().any(|n| n.contains("rebuilt")), "{:?}", engine.index().notes());
}

#[test]
fn a_damaged_vector_file_never_leaves_stale_or_missing_vectors() {
    let f = Fixture::standard();
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    // Several commits of additions and removals, each appended to the vector file.
    for round in 0..4 {
        f.write("ops/backup.md", format!("# Backups\n\nSnapshots are kept for {round} weeks.\n"));
        f.write(&format!("ops/extra{round}.md"), format!("# Extra {round}\n\nA note about round {round}.\n"));
        if round > 0 {
            std::fs::remove_file(f.root().join(format!("ops/extra{}.md", round - 1))).unwrap();
        }
        reconcile(&mut engine);
    }
    let chunks = engine.index().manifest().chunk_count();
    drop(engine);
    let journal = f.index_dir().join("vectors.vec");
    let pristine = std::fs::read(&journal).unwrap();
    assert!(pristine.len() > 64, "the file holds the changes");
    let backup = tempfile::tempdir().unwrap();
    common::copy_dir(&f.index_dir(), backup.path());

    let cuts = [1, 8, 20, pristine.len() / 3, pristine.len() / 2, pristine.len() - 5, pristine.len() - 1];
    for (trial, &at) in cuts.iter().enumerate() {
        for how in 0..4 {
            std::fs::remove_dir_all(f.index_dir()).unwrap();
            common::copy_dir(backup.path(), &f.index_dir());
            let mut bytes = pristine.clone();
            match how {
                0 => bytes.truncate(at),
                1 => bytes[at..].iter_mut().for_each(|b| *b = 0),
                2 => bytes[at] ^= 0xff,
                _ => drop(bytes.splice(at..at, *b"garbage")),
            };
            std::fs::write(&journal, &bytes).unwrap();
            let mut engine = f.engine(Counting::new());
            reconcile(&mut engine);
            let index = engine.index();
            assert_eq!(index.vector_count(), chunks, "trial {trial}/{how}: {:?}", index.notes());
            assert!(index.chunk_ids().iter().all(|id| index.has_vector(*id)), "trial {trial}/{how}");
            drop(engine);
            // And the repaired state is durable: a second open finds nothing to repair.
            let engine = f.engine(Counting::new());
            assert_eq!(engine.index().vector_count(), chunks, "trial {trial}/{how}, reopened");
        }
    }
}

#[test]
fn the_same_files_give_the_same_answers_whatever_the_index_history() {
    let words = [
        "retry",
        "timeout",
        "backup",
        "snapshot",
        "proxy",
        "router",
        "certificate",
        "cache",
        "limit",
        "header",
    ];
    let note = |i: usize, round: usize| {
        let w = |k: usize| words[(i * 7 + k * 3 + round) % words.len()];
        format!(
            "# Note {i}\n\n## {} and {}\n\nThe {} of the {} keeps the {} when the {} fails.\n\n## More\n\n{} {} {}\n",
            w(0),
            w(1),
            w(2),
            w(3),
            w(4),
            w(5),
            w(6),
            w(7),
            w(8)
        )
    };
    // History A: an index built, then edited three times over (deleted documents stay in
    // their segments until a merge).
    let a = Fixture::empty();
    for i in 0..60 {
        a.write(&format!("notes/n{i:02}.md"), note(i, 0));
    }
    let mut engine_a = a.engine(Counting::new());
    reconcile(&mut engine_a);
    for round in 1..4 {
        for i in (round..60).step_by(5) {
            a.write(&format!("notes/n{i:02}.md"), note(i, round));
        }
        reconcile(&mut engine_a);
    }
    // History B: the same final files, indexed once.
    let b = Fixture::empty();
    common::copy_dir(a.root(), b.root());
    let mut engine_b = b.engine(Counting::new());
    reconcile(&mut engine_b);

    for query in
        ["retry timeout", "backup snapshot keeps", "proxy certificate", "cache limit header", "router"]
    {
        for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Hybrid] {
            let request = SearchRequest { limit: 10, ..request(query, mode) };
            let (ha, hb) = (engine_a.search(&request).unwrap(), engine_b.search(&request).unwrap());
            let key = |hits: &[Hit]| {
                hits.iter().map(|h| (h.chunk.path.clone(), h.chunk.start_line)).collect::<Vec<_>>()
            };
            assert_eq!(key(&ha), key(&hb), "{mode} {query:?}");
            for (x, y) in ha.iter().zip(&hb) {
                assert!((x.score - y.score).abs() < 1e-5, "{mode} {query:?}: {} vs {}", x.score, y.score);
            }
        }
    }
}

#[test]
fn a_pasted_image_and_html_noise_are_kept_in_the_text_but_not_searched() {
    let f = Fixture::empty();
    let payload = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk".repeat(7_000);
    let note = format!(
        "# Latency\n\n<!-- draft: revisit the quarterly figures -->\n<div align=\"center\">The p99 latency chart of the gateway:</div>\n\n\
         ![chart](data:image/png;base64,{payload})\n\nThe chart shows a spike every night at two.\n"
    );
    f.write("notes/latency.md", &note);
    let mut engine = f.engine(Counting::new());
    let report = reconcile(&mut engine);
    // 420 KB of base64 would be hundreds of chunks; only the ones with words are kept.
    assert!(report.chunks_written <= 3, "{} chunks", report.chunks_written);
    let bm25 = |q: &str| engine.search(&request(q, SearchMode::Bm25)).unwrap();
    assert!(bm25("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk").is_empty());
    assert_eq!(bm25("quarterly draft")[0].chunk.path, "notes/latency.md", "HTML comments are searched");
    let hits = bm25("gateway latency chart");
    assert_eq!(hits[0].chunk.path, "notes/latency.md");
    // The stored text is the file's, byte for byte, so ranges and hover stay exact.
    let raw = std::fs::read_to_string(f.root().join("notes/latency.md")).unwrap();
    for hit in &hits {
        let c = &hit.chunk;
        assert_eq!(&raw[c.start_byte as usize..c.end_byte as usize], c.text);
    }
    assert!(hits.iter().any(|h| h.chunk.text.contains("<!-- draft")), "comments stay in the stored text");
    let ordinals: Vec<u32> = hits.iter().map(|h| h.chunk.ordinal).collect();
    assert!(ordinals.iter().all(|&o| (o as usize) < report.chunks_written), "{ordinals:?}");
}

#[test]
fn bm25_weighs_as_much_of_the_query_as_its_best_hit_holds() {
    let f = Fixture::empty();
    f.write(
        "team/roadmap.md",
        "# Roadmap\n\n## Planning\n\nShaping the roadmap is a shared job of the team.\n",
    );
    f.write(
        "kitchen/bread.md",
        "# Sourdough\n\n## Method\n\nKnead it, let it rise overnight, then bake a round loaf.\n",
    );
    f.write("ops/backup.md", "# Backups\n\n## Retention\n\nSnapshots are kept for thirty days.\n");
    let mut engine = f.engine(Counting::new());
    reconcile(&mut engine);
    let snapshot = engine.index().snapshot();
    let held = |text: &str| analysis::document_terms(text);
    let query = analysis::weighted_query_terms("shaping a sourdough boule");
    let boosts = f.config().search.boosts();
    let roadmap = coverage(&snapshot, &query, boosts, &held("Roadmap Planning Shaping the roadmap"));
    let bread = coverage(&snapshot, &query, boosts, &held("Sourdough shaping"));
    // "boule" is in no chunk, so it counts against every one, as the rarest word would:
    // the bread note holds both other words of the query, but not all of it.
    assert!(bread > 0.0 && bread < 1.0, "{bread}");
    let known = analysis::weighted_query_terms("shaping a sourdough");
    assert_eq!(coverage(&snapshot, &known, boosts, &held("Sourdough shaping")), 1.0);
    assert!(roadmap > 0.0 && roadmap < bread, "{roadmap} {bread}");
    assert_eq!(coverage(&snapshot, &query, boosts, &held("Snapshots are kept")), 0.0);

    // BM25's best hit holds only part of the query, and its share of the fused score
    // shrinks by exactly as much; the vector arm's share stays.
    let best_with = |power: f32| {
        let mut config = f.config();
        config.search.bm25_coverage = power;
        let engine = f.engine_with(config, Counting::new());
        let hits = engine.search(&request("shaping a sourdough boule", SearchMode::Hybrid)).unwrap();
        hits.into_iter().find(|h| h.bm25_rank == Some(1)).expect("BM25's best hit")
    };
    drop(engine);
    let (fixed, scaled) = (best_with(0.0), best_with(1.0));
    assert_eq!(fixed.chunk.id, scaled.chunk.id);
    let share = coverage(&snapshot, &query, boosts, &held(&fixed.chunk.embedding_text()));
    assert!(share > 0.0 && share < 1.0, "{share}");
    assert!(
        (fixed.score - scaled.score - (1.0 - share)).abs() < 1e-4,
        "{} {} {share}",
        fixed.score,
        scaled.score
    );
}
