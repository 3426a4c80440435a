//! Indexing and search benchmark on a real corpus: cold index, no-op reconcile, one-file
//! reindex, search latency, index size and peak memory.
//!
//! `cargo bench --bench workspace [-- DIR [QUERIES.jsonl]]`. Without arguments it uses the
//! Traefik documentation and dev queries from `../shared/data` when present, and skips
//! with a message otherwise. The corpus is copied to a temporary folder first, so the
//! source is never modified.

mod corpus;

use std::path::{Path, PathBuf};
use std::time::Instant;

use corpus::{append_paragraph, copy_dir, markdown_files};

use situate::config::Config;
use situate::engine::Engine;
use situate::eval;
use situate::index::OpenMode;
use situate::providers::build as embedder_for;
use situate::search::{Expand, SearchMode, SearchRequest};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let dir = args.first().map(PathBuf::from).unwrap_or_else(|| shared.join("traefik-docs"));
    let queries = args.get(1).map(PathBuf::from).unwrap_or_else(|| shared.join("traefik-dev-queries.jsonl"));
    if !dir.is_dir() {
        println!(
            "skipped: no corpus at {} (pass a folder: cargo bench --bench workspace -- DIR)",
            dir.display()
        );
        return;
    }
    let work = tempfile::tempdir().expect("temp dir");
    let root = work.path().join("corpus");
    copy_dir(&dir, &root);
    // The first tier, the one every search has at once: the static model. (e5's vectors
    // follow in the background; `benches/e5.rs` and `benches/lsp.rs` measure them.)
    let mut config = Config { index_dir: Some(work.path().join("index")), ..Config::default() };
    config.set_embedding(situate::providers::EmbeddingConfig::Static { model_path: None });

    let t = Instant::now();
    let embedder = embedder_for(&config.embedding).expect("built-in model");
    let model_load = t.elapsed();

    let t = Instant::now();
    let mut engine = Engine::open_with(&root, config.clone(), Vec::new(), embedder.clone(), OpenMode::Write)
        .expect("open");
    let cold = engine.reconcile(&mut |_| {}).expect("cold index");
    let cold_time = t.elapsed();

    let t = Instant::now();
    let noop = engine.reconcile(&mut |_| {}).expect("no-op reconcile");
    let noop_time = t.elapsed();

    // Append a paragraph to a file of median size, as a save would.
    let files = markdown_files(&root);
    let median = files[files.len() / 2].1.clone();
    append_paragraph(&median);
    let t = Instant::now();
    let typical = engine.reconcile(&mut |_| {}).expect("one-file reindex");
    let typical_time = t.elapsed();

    // And to the largest one.
    let target = files.last().map(|f| f.1.clone()).unwrap_or(median.clone());
    append_paragraph(&target);
    let t = Instant::now();
    let one = engine.reconcile(&mut |_| {}).expect("one-file reindex");
    let one_time = t.elapsed();
    // A save: the same file again, through `update` (no walk of the workspace).
    append_paragraph(&median);
    let t = Instant::now();
    let saved = engine.update(&[median.display().to_string()]).expect("update");
    let save_time = t.elapsed();
    let edited = std::fs::read_to_string(&target).unwrap_or_default();
    let t = Instant::now();
    let chunked = situate::chunk::chunk_document(
        "f.md",
        &edited,
        situate::chunk::DocKind::Markdown,
        &Config::default().chunk,
    );
    let chunk_time = t.elapsed();

    drop(engine);
    let t = Instant::now();
    let engine = Engine::open_with(&root, config, Vec::new(), embedder, OpenMode::Write).expect("reopen");
    let reopen_time = t.elapsed();

    println!("corpus:            {} ({} files)", dir.display(), cold.files_seen);
    println!("model load:        {:.1} ms", ms(model_load));
    println!(
        "cold index:        {:.2} s  ({} chunks, {} skipped)",
        cold_time.as_secs_f64(),
        cold.chunks_written,
        cold.skipped.len()
    );
    println!("no-op reconcile:   {:.1} ms  ({} files unchanged)", ms(noop_time), noop.files_unchanged);
    println!(
        "one-file reindex:  {:.1} ms for a median file ({} KiB, {} chunks written, {} embedded, {} reused)",
        ms(typical_time),
        std::fs::metadata(&median).map_or(0, |m| m.len() / 1024),
        typical.chunks_written,
        typical.vectors_embedded,
        typical.vectors_reused
    );
    println!(
        "                   {:.1} ms for the largest ({} chunks written, {} embedded, {} reused)",
        ms(one_time),
        one.chunks_written,
        one.vectors_embedded,
        one.vectors_reused
    );
    println!(
        "save (update one median file, no walk): {:.1} ms ({} chunks written)",
        ms(save_time),
        saved.chunks_written
    );
    println!(
        "  of which chunking {:.1} ms ({} KiB, {} chunks)",
        ms(chunk_time),
        edited.len() / 1024,
        chunked.chunks.len()
    );
    println!("reopen:            {:.1} ms", ms(reopen_time));
    println!("index on disk:     {:.2} MiB", engine.index().disk_bytes() as f64 / 1048576.0);

    if let Ok(queries) = eval::load_queries(&queries) {
        for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Hybrid] {
            let mut times: Vec<f64> = Vec::new();
            for q in &queries {
                let request = SearchRequest {
                    query: q.query.clone(),
                    limit: 10,
                    mode,
                    paths: Vec::new(),
                    filters: Vec::new(),
                    expand: Expand::None,
                };
                let t = Instant::now();
                engine.search(&request).expect("search");
                times.push(ms(t.elapsed()));
            }
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let p95 = times[(times.len() * 95 / 100).min(times.len() - 1)];
            println!(
                "search {mode:<7}     median {median:.2} ms, p95 {p95:.2} ms over {} queries",
                times.len()
            );
        }
    }
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS:          {:.0} MiB", kib as f64 / 1024.0);
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Peak resident memory of this process (Linux), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
