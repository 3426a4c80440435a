//! LLM snippets on a real corpus against a chat server on 127.0.0.1 (the test server of
//! `tests/http_server/`): the calls a cold index, a no-op reindex and a one-paragraph edit
//! make; snippet throughput at several concurrencies against a server with a fixed
//! latency; the cost of the estimate; and what a run does when the server is down.
//!
//! `cargo bench --bench snippets [-- DIR] [--latency MS]` (default: the Traefik
//! documentation from `../shared/data`, 200 ms). Skips with a message when the folder is
//! missing.

#[path = "../tests/http_server/mod.rs"]
mod http_server;

mod corpus;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_server::{TestServer, dead_port_url};
use situate::config::Config;
use situate::engine::{Engine, SnippetRun};
use situate::index::OpenMode;
use situate::providers::static_model::StaticEmbedder;
use situate::snippets::generator::Totals;
use situate::snippets::{ChatProvider, SnippetConfig};

/// Calls measured per concurrency in the throughput runs.
const THROUGHPUT_CALLS: u64 = 96;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let latency_ms: u64 = args
        .iter()
        .position(|a| a == "--latency")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/traefik-docs");
    let dir = args
        .iter()
        .find(|a| !a.starts_with("--") && Path::new(a).is_dir())
        .map(PathBuf::from)
        .unwrap_or(shared);
    if !dir.is_dir() {
        println!(
            "skipped: no corpus at {} (pass a folder: cargo bench --bench snippets -- DIR)",
            dir.display()
        );
        return;
    }
    let server = TestServer::start();
    server.set_reply(|request: &str| {
        let words = request.len() % 7 + 3;
        format!("This chunk sets out one part of the document in about {words} plain words.")
    });
    let work = tempfile::tempdir().expect("temp dir");
    let root = work.path().join("corpus");
    corpus::copy_dir(&dir, &root);

    // Calls for a cold index, a no-op reindex and an edit, with no latency.
    let snippets = SnippetConfig {
        base_url: server.openai_url(),
        concurrency: 8,
        max_calls: None,
        ..SnippetConfig::new(ChatProvider::OpenAi, "bench-chat")
    };
    let index = work.path().join("index");
    let mut engine = open(&root, &index, snippets.clone());
    let started = Instant::now();
    let report = engine.reconcile(&mut |_| {}).expect("index");
    let estimate_started = Instant::now();
    let estimate = engine.snippet_estimate().expect("estimate");
    let estimate_ms = estimate_started.elapsed().as_secs_f64() * 1e3;
    println!(
        "corpus: {} ({} files, {} chunks); header-only index in {:.2} s",
        dir.display(),
        report.files_seen,
        engine.status().chunks,
        started.elapsed().as_secs_f64()
    );
    println!("estimate before the cold run ({estimate_ms:.0} ms to count): {estimate}");
    let cold = write(&mut engine);
    println!("| run | LLM calls | chunks indexed with a new snippet | seconds |");
    println!("|---|---:|---:|---:|");
    row("cold index", &cold.0, cold.1);
    drop(engine);
    let mut engine = open(&root, &index, snippets.clone());
    engine.reconcile(&mut |_| {}).expect("reindex");
    let noop = write(&mut engine);
    row("no-op reindex (reopened)", &noop.0, noop.1);
    let edited = edit_one_paragraph(&root);
    engine.update(std::slice::from_ref(&edited)).expect("update");
    let edit = write(&mut engine);
    row(&format!("one-paragraph edit ({edited})"), &edit.0, edit.1);
    println!(
        "cache: {} snippets; cold run used {} input tokens ({} cached), {} output tokens",
        cold.0.totals.calls,
        cold.0.totals.input_tokens,
        cold.0.totals.cache_read_tokens,
        cold.0.totals.output_tokens
    );

    // Throughput against a server that takes `latency_ms` per answer.
    server.set_latency(Duration::from_millis(latency_ms));
    println!("\nthroughput, {latency_ms} ms per answer, {THROUGHPUT_CALLS} calls each:");
    println!("| concurrency | calls | seconds | snippets/s |");
    println!("|---:|---:|---:|---:|");
    for concurrency in [1, 4, 8] {
        let fresh = work.path().join(format!("index-c{concurrency}"));
        let config = SnippetConfig { concurrency, max_calls: Some(THROUGHPUT_CALLS), ..snippets.clone() };
        let mut engine = open(&root, &fresh, config);
        engine.reconcile(&mut |_| {}).expect("index");
        let (run, seconds) = write(&mut engine);
        println!(
            "| {concurrency} | {} | {seconds:.2} | {:.1} |",
            run.totals.calls,
            run.totals.calls as f64 / seconds
        );
    }

    // The server is down.
    let down = SnippetConfig { base_url: dead_port_url(), max_retries: 1, ..snippets };
    let fresh = work.path().join("index-down");
    let mut engine = open(&root, &fresh, down);
    engine.reconcile(&mut |_| {}).expect("index");
    let (run, seconds) = write(&mut engine);
    println!(
        "\nserver down: the run ended after {seconds:.2} s with {:?}; {} calls, {} chunks wait with their header context; search still answers: {}",
        run.end,
        run.totals.calls,
        run.waiting,
        !engine
            .search(&situate::search::SearchRequest {
                query: "rate limit middleware".to_string(),
                limit: 1,
                mode: situate::search::SearchMode::Hybrid,
                paths: Vec::new(),
                filters: Vec::new(),
                expand: situate::search::Expand::None,
            })
            .expect("search")
            .is_empty()
    );
}

fn open(root: &Path, index: &Path, snippets: SnippetConfig) -> Engine {
    let config =
        Config { index_dir: Some(index.to_path_buf()), snippets: Some(snippets), ..Config::default() };
    let embedder = Arc::new(StaticEmbedder::builtin().expect("model"));
    Engine::open_with(root, config, Vec::new(), embedder, OpenMode::Write).expect("engine")
}

fn write(engine: &mut Engine) -> (SnippetRun, f64) {
    let started = Instant::now();
    let run = engine.write_snippets(Totals::default(), &mut |_| {}).expect("snippets");
    (run, started.elapsed().as_secs_f64())
}

fn row(what: &str, run: &SnippetRun, seconds: f64) {
    println!("| {what} | {} | {} | {seconds:.2} |", run.totals.calls, run.indexed);
}

/// Adds a sentence to one paragraph of the largest file that has a plain paragraph (not a
/// heading, list, table or code); returns its workspace-relative path.
fn edit_one_paragraph(root: &Path) -> String {
    for (_, path) in corpus::markdown_files(root).iter().rev() {
        let text = std::fs::read_to_string(path).expect("read");
        let mut out = String::new();
        let mut done = false;
        let mut in_code = false;
        // Front matter is not chunk text: skip it.
        let mut in_front_matter = text.starts_with("---");
        for (n, line) in text.lines().enumerate() {
            if in_front_matter {
                in_front_matter = n == 0 || line.trim_end() != "---";
                out.push_str(line);
                out.push('\n');
                continue;
            }
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
            }
            out.push_str(line);
            if !done && !in_code && line.len() > 60 && line.chars().next().is_some_and(char::is_alphabetic) {
                out.push_str(" This sentence was added by the benchmark.");
                done = true;
            }
            out.push('\n');
        }
        if done {
            std::fs::write(path, out).expect("write");
            return path.strip_prefix(root).expect("under root").to_string_lossy().replace('\\', "/");
        }
    }
    panic!("no file with a plain paragraph under {}", root.display());
}
