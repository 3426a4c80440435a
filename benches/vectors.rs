//! Vector search at scale, on a real index: the search of a vector file (sign bits, then
//! the candidates' rows compared; the quick tier's and the model's alike) against its exact
//! scan, and the usearch HNSW graph that earlier versions kept, filled with the same
//! vectors, against an exact search of them.
//!
//! `cargo bench --bench vectors -- DIR [QUERIES.jsonl ...] [--rows N] [--quick-only | --graph-only]`, with
//! `XDG_CACHE_HOME` naming the cache that holds DIR's index as `situate index --quick` left
//! it (the default model's vectors pending, so that `quick.vec` holds every chunk). The
//! queries are those of the files given (the `query` of each line) and, besides, the first
//! words of 200 chunks spread over the index.
//!
//! The vector index at that size is simulated: each quick vector (the built-in static
//! model's, 256 dimensions) is padded with zeros to 384 dimensions, the default
//! transformer's, which keeps every cosine, and added under its chunk's id. Its size, build time,
//! memory and speed are those of 384 dimensions; its recall is that of the static model's
//! vectors. Opening the saved index is measured in a child process each way (mapped, and
//! read into memory), so that each peak memory is its own. It is a benchmark, not a test.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use situate::engine::Engine;
use situate::index::{OpenMode, VectorIndex, VectorSearch};
use situate::providers::{EmbeddingConfig, build as embedder_for};

const GRAPH_DIMS: usize = 384;
/// Chunk ids with their similarities, best first.
type Hits = Vec<(u64, f32)>;
const LIMIT: usize = 100;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("--open") {
        return open_child(Path::new(&args[1]), args[2] == "load", Path::new(&args[3]));
    }
    let mut rows_limit = usize::MAX;
    let mut quick_only = false;
    let mut graph_only = false;
    let mut positional = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rows" => rows_limit = it.next().and_then(|n| n.parse().ok()).expect("--rows N"),
            "--quick-only" => quick_only = true,
            "--graph-only" => graph_only = true,
            _ => positional.push(a),
        }
    }
    let Some(dir) = positional.first().map(PathBuf::from) else {
        println!("skipped: give the folder of an indexed corpus (see the file's doc comment)");
        return;
    };
    let t = Instant::now();
    let engine = Engine::open(&dir, None, OpenMode::ReadOnly).expect("open the index");
    let open_time = t.elapsed();
    let snapshot = engine.view().snapshot().clone();
    let quick = embedder_for(&EmbeddingConfig::Static { model_path: None }).expect("built-in model");
    let mut queries: Vec<String> = Vec::new();
    for file in &positional[1..] {
        let text = std::fs::read_to_string(file).expect("queries file");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            queries.extend(v["query"].as_str().map(str::to_string));
        }
    }
    let asked = queries.len();
    let mut ids = snapshot.manifest().chunk_ids().collect::<Vec<_>>();
    ids.sort_unstable();
    let spread: Vec<u64> = (0..200).map(|n| ids[n * ids.len() / 200]).collect();
    let records = snapshot.records(&spread).expect("records");
    for id in &spread {
        if let Some(r) = records.get(id) {
            let words: Vec<&str> = r.text.split_whitespace().take(8).collect();
            queries.push(words.join(" "));
        }
    }
    let vectors: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| quick.embed_query(q).expect("embed"))
        .filter(|v| v.iter().any(|x| *x != 0.0))
        .collect();
    println!(
        "index: {} chunks, {} quick vectors; read-only open {:.2} s, quick tier {:.1} MiB in memory, RSS {:.0} MiB",
        snapshot.num_docs(),
        snapshot.quick_count(),
        open_time.as_secs_f64(),
        snapshot.quick_memory_bytes() as f64 / 1048576.0,
        rss_mib("VmRSS")
    );
    println!("queries: {} ({} from the files, the rest chunks' first words)\n", vectors.len(), asked);

    if !graph_only {
        // An index whose model's vectors are all there (a static model in the index's own
        // tier, padded to e5's dimensions as `scripts/scale --model-tier` sets up) is
        // measured through the model's file; one whose vectors are pending, through the
        // quick file.
        if snapshot.vector_count() > snapshot.quick_count() {
            let dims = engine.index().embedder().dimensions;
            let padded: Vec<Vec<f32>> = vectors
                .iter()
                .map(|v| {
                    let mut v = v.clone();
                    v.resize(dims, 0.0);
                    v
                })
                .collect();
            println!("model tier: {} vectors of {dims} dimensions\n", snapshot.vector_count());
            vector_file(
                "model tier",
                &padded,
                &|v, how| snapshot.nearest_with(v, LIMIT, how),
                snapshot.vector_count(),
            );
        } else {
            vector_file(
                "quick tier",
                &vectors,
                &|v, how| snapshot.nearest_quick_with(v, LIMIT, how),
                snapshot.quick_count(),
            );
        }
    }
    if quick_only {
        return;
    }
    let quick_file = engine.index().dir().join("quick.vec");
    drop(engine);
    drop(snapshot);
    graph(&quick_file, &vectors, rows_limit);
}

/// Searches a vector file as told.
type SearchAs<'a> = dyn Fn(&[f32], VectorSearch) -> Result<Hits, situate::index::IndexError> + 'a;

/// A vector file: each candidate count against the exact scan.
fn vector_file(name: &str, vectors: &[Vec<f32>], search: &SearchAs, rows: usize) {
    let exact: Vec<(Vec<(u64, f32)>, f64)> = vectors
        .iter()
        .map(|v| {
            let t = Instant::now();
            let hits = search(v, VectorSearch::Exact).expect("exact");
            (hits, t.elapsed().as_secs_f64())
        })
        .collect();
    println!(
        "| {name}, {LIMIT} asked | recall@10 | recall@100 | worst recall@10 | top 10 within 0.01 | within 0.02 | p50 | p90 | p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let times: Vec<f64> = exact.iter().map(|e| e.1).collect();
    println!("| exact scan | 1 | 1 | 1 | 1 | 1 | {} |", latencies(&times));
    for count in [500, 1_000, 2_000, 4_000, 8_000] {
        let mut times = Vec::new();
        let mut r10 = Vec::new();
        let mut r100 = Vec::new();
        let mut near1 = Vec::new();
        let mut near2 = Vec::new();
        for (v, (truth, _)) in vectors.iter().zip(&exact) {
            let t = Instant::now();
            let hits = search(v, VectorSearch::Preselect(count)).expect("preselect");
            times.push(t.elapsed().as_secs_f64());
            r10.push(recall(&hits, truth, 10));
            r100.push(recall(&hits, truth, LIMIT));
            near1.push(near_recall(&hits, truth, 10, 0.01));
            near2.push(near_recall(&hits, truth, 10, 0.02));
        }
        let worst = r10.iter().copied().fold(1.0f64, f64::min);
        println!(
            "| {count} candidates | {:.3} | {:.3} | {worst:.1} | {:.3} | {:.3} | {} |",
            mean(&r10),
            mean(&r100),
            mean(&near1),
            mean(&near2),
            latencies(&times)
        );
    }
    let times: Vec<f64> = vectors
        .iter()
        .map(|v| {
            let t = Instant::now();
            search(v, VectorSearch::for_size(rows, LIMIT)).expect("default");
            t.elapsed().as_secs_f64()
        })
        .collect();
    println!("| default ({:?}) | | | | | | {} |", VectorSearch::for_size(rows, LIMIT), latencies(&times));
}

/// The vector index at the same size, from the quick vectors.
fn graph(quick_file: &Path, vectors: &[Vec<f32>], rows_limit: usize) {
    let (rows, dims) = read_quick_rows(quick_file, rows_limit);
    // Zeros after the static model's components: every cosine is kept, and usearch stores
    // and compares all 384 components as it would the transformer's.
    let lifted = |v: &[f32]| -> Vec<f32> {
        let mut out = v.to_vec();
        out.resize(GRAPH_DIMS.max(dims), 0.0);
        out
    };
    println!(
        "\nvector index: {} vectors of {GRAPH_DIMS} dimensions (static vectors carried over)",
        rows.len()
    );
    let before = rss_mib("VmRSS");
    let t = Instant::now();
    let mut index = VectorIndex::create(GRAPH_DIMS).expect("create");
    for (n, (id, v)) in rows.iter().enumerate() {
        index.add(*id, &lifted(v)).expect("add");
        if n % 100_000 == 99_999 {
            eprintln!("  {} added, {:.0} s", n + 1, t.elapsed().as_secs_f64());
        }
    }
    let build = t.elapsed().as_secs_f64();
    println!(
        "build: {build:.0} s ({:.0} vectors/s), RSS {:.0} → {:.0} MiB, peak {:.0} MiB",
        rows.len() as f64 / build,
        before,
        rss_mib("VmRSS"),
        rss_mib("VmHWM")
    );
    let truth: Vec<Vec<(u64, f32)>> = vectors.iter().map(|q| exact_top(&rows, q, LIMIT)).collect();
    let lifted_queries: Vec<Vec<f32>> = vectors.iter().map(|q| lifted(q)).collect();
    let (r10, r100, times) = graph_figures(&index, &lifted_queries, &truth);
    println!(
        "graph search in the writer: recall@10 {:.3}, recall@100 {:.3}, {}",
        mean(&r10),
        mean(&r100),
        latencies(&times)
    );
    for expansion in [400, 1_600] {
        let mut near = Vec::new();
        let mut r10 = Vec::new();
        let mut times = Vec::new();
        for (q, t) in lifted_queries.iter().zip(&truth) {
            let start = Instant::now();
            let hits: Vec<(u64, f32)> = index
                .search_with_expansion(q, LIMIT, expansion)
                .expect("search")
                .into_iter()
                .map(|(id, d)| (id, 1.0 - d))
                .collect();
            times.push(start.elapsed().as_secs_f64());
            r10.push(recall(&hits, t, 10));
            near.push(near_recall(&hits, t, 10, 0.01));
        }
        println!(
            "graph search, expansion {expansion}: recall@10 {:.3}, top 10 within 0.01 {:.3}, {}",
            mean(&r10),
            mean(&near),
            latencies(&times)
        );
    }
    let work = tempfile::tempdir().expect("temp dir");
    let saved = work.path().join("vectors.usearch");
    let t = Instant::now();
    index.save(&saved).expect("save");
    println!(
        "save: {:.1} s, {:.0} MiB on disk",
        t.elapsed().as_secs_f64(),
        std::fs::metadata(&saved).map(|m| m.len()).unwrap_or(0) as f64 / 1048576.0
    );
    drop(index);
    let queries_file = work.path().join("queries.json");
    std::fs::write(&queries_file, serde_json::to_string(&(lifted_queries, truth)).expect("json"))
        .expect("write");
    for how in ["view", "load"] {
        let out = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args(["--open", &saved.display().to_string(), how, &queries_file.display().to_string()])
            .output()
            .expect("child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
}

/// Opens a saved index in this process alone (mapped, or read into memory) and searches it.
fn open_child(path: &Path, load: bool, queries: &Path) {
    let (queries, truth): (Vec<Vec<f32>>, Vec<Hits>) =
        serde_json::from_str(&std::fs::read_to_string(queries).expect("queries")).expect("json");
    let before = rss_mib("VmRSS");
    let t = Instant::now();
    let index = VectorIndex::open(path, GRAPH_DIMS, load).expect("open");
    let open = t.elapsed().as_secs_f64();
    let (r10, r100, times) = graph_figures(&index, &queries, &truth);
    println!(
        "open {}: {open:.2} s, RSS {before:.0} → {:.0} MiB (peak {:.0}); recall@10 {:.3}, recall@100 {:.3}, {}",
        if load { "read into memory" } else { "mapped" },
        rss_mib("VmRSS"),
        rss_mib("VmHWM"),
        mean(&r10),
        mean(&r100),
        latencies(&times)
    );
}

fn graph_figures(
    index: &VectorIndex,
    queries: &[Vec<f32>],
    truth: &[Vec<(u64, f32)>],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut r10 = Vec::new();
    let mut r100 = Vec::new();
    let mut times = Vec::new();
    for (q, t) in queries.iter().zip(truth) {
        let start = Instant::now();
        let hits: Vec<(u64, f32)> =
            index.search(q, LIMIT).expect("search").into_iter().map(|(id, d)| (id, 1.0 - d)).collect();
        times.push(start.elapsed().as_secs_f64());
        r10.push(recall(&hits, t, 10));
        r100.push(recall(&hits, t, LIMIT));
    }
    (r10, r100, times)
}

/// The share of the first `k` hits that score within `margin` of the exact `k`th.
fn near_recall(hits: &[(u64, f32)], truth: &[(u64, f32)], k: usize, margin: f32) -> f64 {
    let k = k.min(truth.len());
    if k == 0 {
        return 1.0;
    }
    let floor = truth[k - 1].1 - margin;
    hits.iter().take(k).filter(|h| h.1 >= floor).count() as f64 / k as f64
}

/// The share of the exact top `k` found among the first `k` hits. The corpus holds
/// near-copies whose vectors tie, so a hit counts when it scores at least the exact `k`th
/// (less a rounding margin): another copy of an equal vector is as right as the one the
/// exact scan listed first.
fn recall(hits: &[(u64, f32)], truth: &[(u64, f32)], k: usize) -> f64 {
    let k = k.min(truth.len());
    if k == 0 {
        return 1.0;
    }
    let floor = truth[k - 1].1 - 1e-3;
    let exact: std::collections::HashSet<u64> = truth[..k].iter().map(|h| h.0).collect();
    let found = hits.iter().take(k).filter(|h| exact.contains(&h.0) || h.1 >= floor).count();
    found as f64 / k as f64
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

fn latencies(seconds: &[f64]) -> String {
    let mut s = seconds.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |p: f64| {
        s.get(((s.len() as f64 * p).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0) * 1000.0
    };
    format!("{:.1} ms | {:.1} ms | {:.1} ms", at(0.5), at(0.9), at(0.99))
}

fn rss_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The quick file's rows as f32 vectors, the last row of each id (at most `limit`).
fn read_quick_rows(path: &Path, limit: usize) -> (Vec<(u64, Vec<f32>)>, usize) {
    let bytes = std::fs::read(path).expect("quick.vec");
    let dims = u32::from_le_bytes(bytes[8..12].try_into().expect("header")) as usize;
    let len = 12 + dims;
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    let mut rows = Vec::new();
    for row in bytes[16..].chunks_exact(len).take(limit) {
        let id = u64::from_le_bytes(row[..8].try_into().expect("id"));
        let scale = f32::from_le_bytes(row[8..12].try_into().expect("scale"));
        let mut v: Vec<f32> = row[12..].iter().map(|b| f32::from(*b as i8) * scale).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
        v.iter_mut().for_each(|x| *x /= norm);
        match by_id.get(&id) {
            Some(&at) => rows[at] = (id, v),
            None => {
                by_id.insert(id, rows.len());
                rows.push((id, v));
            }
        }
    }
    (rows, dims)
}

/// The exact `k` nearest rows to `query` by cosine, best first, ties to the smaller id.
fn exact_top(rows: &[(u64, Vec<f32>)], query: &[f32], k: usize) -> Vec<(u64, f32)> {
    let mut all: Vec<(u64, f32)> =
        rows.iter().map(|(id, v)| (*id, v.iter().zip(query).map(|(a, b)| a * b).sum())).collect();
    let k = k.min(all.len());
    if k == 0 {
        return Vec::new();
    }
    let better = |a: &(u64, f32), b: &(u64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    all.select_nth_unstable_by(k - 1, better);
    all.truncate(k);
    all.sort_by(better);
    all
}
