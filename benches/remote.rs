//! Embedding throughput through an OpenAI-compatible server on 127.0.0.1 that adds a fixed
//! latency to every answer (the test server of `tests/http_server/`), at several batch
//! sizes: what batching buys against a remote model.
//!
//! `cargo bench --bench remote [-- LATENCY_MS]` (default 20 ms).

#[path = "../tests/http_server/mod.rs"]
mod http_server;

use std::time::{Duration, Instant};

use http_server::TestServer;
use situate::providers::Embedder;
use situate::providers::http::{Auth, HttpClient, HttpSettings};
use situate::providers::openai::OpenAiEmbedder;

const TEXTS: usize = 2_048;

fn main() {
    let latency_ms: u64 =
        std::env::args().skip(1).find(|a| !a.starts_with("--")).and_then(|a| a.parse().ok()).unwrap_or(20);
    let server = TestServer::start();
    server.set_latency(Duration::from_millis(latency_ms));
    let texts: Vec<String> = (0..TEXTS)
        .map(|i| {
            format!("Chunk {i}: the retention policy keeps nightly snapshots for thirty days, section {i}.")
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!("{TEXTS} texts, {latency_ms} ms server latency");
    println!("| batch | requests | seconds | texts/s |");
    println!("|---:|---:|---:|---:|");
    for batch in [1, 16, 64, 256] {
        let http =
            HttpClient::new(&server.openai_url(), Auth::None, HttpSettings::default()).expect("client");
        let embedder = OpenAiEmbedder::connect(http, "bench", Some(256), batch).expect("embedder");
        let texts = if batch == 1 { &refs[..256] } else { &refs[..] };
        server.clear_requests();
        let started = Instant::now();
        let vectors = embedder.embed(texts).expect("embedding");
        let seconds = started.elapsed().as_secs_f64();
        assert_eq!(vectors.len(), texts.len());
        println!(
            "| {batch} | {} | {seconds:.2} | {:.0} |",
            server.requests().len(),
            texts.len() as f64 / seconds
        );
    }
}
