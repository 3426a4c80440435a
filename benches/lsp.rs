//! The language server measured end to end, over stdio, as an editor would see it: time
//! from `initialize` to the first search answer on a cold and on a warm index, the time
//! each tier of vectors takes (the static tier with the index, then a slow model's, filled
//! in the background), search latency (median, 95th and 99th percentile) while the slow
//! model's vectors are pending and once they are all in, hover latency, and time from
//! `didSave` to the new text being searchable.
//!
//! `cargo bench --bench lsp [-- DIR [QUERIES.jsonl]] [--transcript]`. Without arguments it
//! uses the Traefik documentation and dev queries from `../shared/data` when present, and
//! skips with a message otherwise. `--transcript` prints the messages of one session,
//! abbreviated.

#[path = "../tests/lsp_client/mod.rs"]
mod lsp_client;

mod corpus;

use std::path::Path;
use std::time::{Duration, Instant};

use lsp_client::{LspClient, file_uri};
use serde_json::{Value, json};

/// Saves measured for the save-to-searchable figure.
const SAVES: usize = 5;

fn main() {
    let transcript = std::env::args().any(|a| a == "--transcript");
    let Some(corpus) = corpus::prepare("lsp") else { return };
    let (root, cache, queries) = (corpus.root.clone(), corpus.cache.clone(), corpus.queries.clone());
    let mut log = Transcript { on: transcript };

    // Cold: no index yet.
    let mut client = LspClient::start(&cache);
    let cold = startup(&mut client, &root, &queries[0], &mut log);
    println!(
        "cold start:  first answer {:>8.1} ms (indexing: {}), index complete {:>8.1} ms, first full answer {:>8.1} ms",
        ms(cold.first_answer),
        cold.first_answer_indexing,
        ms(cold.indexed),
        ms(cold.full_answer)
    );

    // While a slow model's vectors are filled in: each query once.
    let pending = vectors_pending(&mut client);
    if pending > 0 {
        let times: Vec<Duration> = queries.iter().map(|q| timed_search(&mut client, q).0).collect();
        println!(
            "search while {pending} vectors were pending: median {:>6.2} ms, p95 {:>6.2} ms, p99 {:>6.2} ms over {} queries",
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.95)),
            ms(percentile(&times, 0.99)),
            times.len()
        );
        let waited = Instant::now();
        while vectors_pending(&mut client) > 0 {
            std::thread::sleep(Duration::from_millis(200));
        }
        let took = ms(cold.indexed + waited.elapsed()) / 1000.0;
        println!("strong tier: every vector in {took:>8.1} s after initialize ({pending} were pending)");
    }

    // Search latency over the queries, each five times, warm, every vector in.
    let mut search_times = Vec::new();
    let mut hover_targets = Vec::new();
    for round in 0..5 {
        for (n, q) in queries.iter().enumerate() {
            let (took, answer) = timed_search(&mut client, q);
            search_times.push(took);
            if round > 0 {
                continue;
            }
            if n == 0 {
                log.request("situate.search", &json!({ "query": q, "limit": 10 }), &abbreviate_hits(&answer));
            }
            if let Some(hit) = answer["hits"].get(0) {
                hover_targets.push((
                    hit["uri"].as_str().unwrap().to_string(),
                    hit["range"]["start"]["line"].as_u64().unwrap() + 1,
                ));
            }
        }
    }
    let mut hover_times = Vec::new();
    for (n, (uri, line)) in hover_targets.iter().enumerate() {
        let params = json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": 0 } });
        let t = Instant::now();
        let h = client.request("textDocument/hover", params.clone()).expect("hover");
        hover_times.push(t.elapsed());
        if n == 0 {
            log.request(
                "textDocument/hover",
                &params,
                &json!(h["contents"]["value"].as_str().unwrap_or_default()),
            );
        }
    }
    println!(
        "search:      median {:>6.2} ms, p95 {:>6.2} ms, p99 {:>6.2} ms over {} searches",
        ms(percentile(&search_times, 0.5)),
        ms(percentile(&search_times, 0.95)),
        ms(percentile(&search_times, 0.99)),
        search_times.len()
    );
    println!(
        "hover:       median {:>6.2} ms, p95 {:>6.2} ms over {} hovers",
        ms(percentile(&hover_times, 0.5)),
        ms(percentile(&hover_times, 0.95)),
        hover_times.len()
    );

    // Save to searchable: a new paragraph with a word found nowhere else.
    let files = corpus::markdown_files(&root);
    let target = files[files.len() / 2].1.clone();
    let uri = file_uri(&target);
    let mut save_times = Vec::new();
    // Words the tokenizer keeps whole and the corpus does not hold.
    let words = ["quagga", "okapi", "takahe", "kakapo", "dugong", "tuatara", "aardwolf"];
    for (n, word) in words.iter().take(SAVES).enumerate() {
        let mut text = std::fs::read_to_string(&target).expect("read");
        text.push_str(&format!("\n\nThe {word} sentinel guards this paragraph.\n"));
        std::fs::write(&target, text).expect("write");
        let t = Instant::now();
        client.notify("textDocument/didSave", json!({ "textDocument": { "uri": uri } }));
        let query = json!({ "query": word, "limit": 1, "mode": "bm25" });
        loop {
            let answer = client.command("situate.search", query.clone()).expect("search");
            if answer["hits"].get(0).is_some_and(|h| h["uri"] == json!(uri)) {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(60), "{word} never became searchable");
            std::thread::sleep(Duration::from_millis(2));
        }
        save_times.push(t.elapsed());
        if n == 0 {
            log.note(&format!(
                "didSave {} → \"{word}\" searchable after {:.1} ms",
                relative(&root, &target),
                ms(t.elapsed())
            ));
        }
    }
    println!(
        "save→search: median {:>6.1} ms, min {:>6.1} ms over {SAVES} saves (50 ms of it is the save debounce)",
        ms(percentile(&save_times, 0.5)),
        ms(*save_times.iter().min().unwrap())
    );
    let status = client.command("situate.status", Value::Null).expect("status");
    log.request("situate.status", &Value::Null, &abbreviate_status(&status));
    assert!(client.shutdown().success());
    log.note("shutdown → exit: code 0");

    // Warm: the index exists and nothing changed.
    let mut client = LspClient::start(&cache);
    let warm = startup(&mut client, &root, &queries[0], &mut Transcript { on: false });
    println!(
        "warm start:  first answer {:>8.1} ms (indexing: {}), index complete {:>8.1} ms, first full answer {:>8.1} ms",
        ms(warm.first_answer),
        warm.first_answer_indexing,
        ms(warm.indexed),
        ms(warm.full_answer)
    );
    assert!(client.shutdown().success());
}

struct Startup {
    /// `initialize` sent → first `situate.search` answered.
    first_answer: Duration,
    first_answer_indexing: bool,
    /// `initialize` sent → the indexing run's `$/progress` end.
    indexed: Duration,
    /// `initialize` sent → a search answered from the complete index.
    full_answer: Duration,
}

fn startup(client: &mut LspClient, root: &Path, query: &str, log: &mut Transcript) -> Startup {
    let t = Instant::now();
    let init = client.initialize(root, json!({}), json!({}));
    log.request(
        "initialize",
        &json!({ "rootUri": file_uri(root), "capabilities": { "window": { "workDoneProgress": true } } }),
        &json!({ "capabilities": init["capabilities"], "serverInfo": init["serverInfo"] }),
    );
    let first = client.command("situate.search", json!({ "query": query, "limit": 3 })).expect("search");
    let first_answer = t.elapsed();
    let end = client.wait_indexed();
    let indexed = t.elapsed();
    let full = client.command("situate.search", json!({ "query": query, "limit": 3 })).expect("search");
    let full_answer = t.elapsed();
    for m in client.received.iter().filter(|m| m["method"] == "$/progress") {
        let v = &m["params"]["value"];
        if v["kind"] != "report" || v["percentage"] == 100 {
            log.notification("$/progress", v);
        }
    }
    log.note(&format!(
        "first search during indexing → indexing: {}, {} hits",
        first["indexing"],
        first["hits"].as_array().map_or(0, Vec::len)
    ));
    let _ = (end, full);
    Startup { first_answer, first_answer_indexing: first["indexing"] == true, indexed, full_answer }
}

/// Prints the messages of a session, abbreviated, when asked to.
struct Transcript {
    on: bool,
}

impl Transcript {
    fn request(&mut self, method: &str, params: &Value, result: &Value) {
        if self.on {
            println!("→ {method} {}", short(params, 200));
            println!("← {}", short(result, 600));
        }
    }
    fn notification(&mut self, method: &str, params: &Value) {
        if self.on {
            println!("← {method} {}", short(params, 200));
        }
    }
    fn note(&mut self, text: &str) {
        if self.on {
            println!("· {text}");
        }
    }
}

fn short(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.chars().count() <= max { s } else { format!("{}…", s.chars().take(max).collect::<String>()) }
}

fn abbreviate_hits(answer: &Value) -> Value {
    let hits: Vec<Value> = answer["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .take(3)
        .map(|h| json!({ "path": h["path"], "line": h["range"]["start"]["line"], "heading_path": h["heading_path"], "score": h["score"] }))
        .collect();
    json!({ "indexing": answer["indexing"], "hits (first 3)": hits })
}

fn abbreviate_status(status: &Value) -> Value {
    let f = &status["folders"][0];
    json!({ "phase": f["phase"], "pending": f["pending"], "errors": f["errors"], "files": f["index"]["files"],
        "chunks": f["index"]["chunks"], "generation": f["index"]["generation"], "embedder": f["index"]["embedder"]["model"] })
}

fn relative(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `q` quantile (0.5 is the median), nearest rank.
fn percentile(v: &[Duration], q: f64) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    s[((s.len() as f64 * q).ceil() as usize).saturating_sub(1).min(s.len() - 1)]
}

fn timed_search(client: &mut LspClient, query: &str) -> (Duration, Value) {
    let t = Instant::now();
    let answer = client.command("situate.search", json!({ "query": query, "limit": 10 })).expect("search");
    (t.elapsed(), answer)
}

/// Chunks whose vectors of the index's model are still to be computed.
fn vectors_pending(client: &mut LspClient) -> u64 {
    let status = client.command("situate.status", Value::Null).expect("status");
    status["folders"][0]["vectors_pending"].as_u64().unwrap_or(0)
}
