//! The MCP server measured end to end, over stdio, as an agent's client sees it: time from
//! start to the first `search` answer on a cold index, then the latency of `search` tool
//! calls on a warm one (each call first brings the index up to date, as in real use), and of
//! `status`, with the size of the answers.
//!
//! `cargo bench --bench mcp [-- DIR [QUERIES.jsonl]]`. Without arguments it uses the Traefik
//! documentation and dev queries from `../shared/data` when present, and skips with a
//! message otherwise. The client here speaks newline-delimited JSON-RPC itself, so that
//! nothing but the server is timed.

mod corpus;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Each query is asked this many times; the figures are over all calls.
const ROUNDS: usize = 3;

fn main() {
    let Some(corpus) = corpus::prepare("mcp") else { return };
    let (root, cache, queries) = (corpus.root.clone(), corpus.cache.clone(), corpus.queries.clone());

    let started = Instant::now();
    let mut client = Client::start(&root, &cache);
    client.request(
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "situate-bench", "version": "0" }
        }),
    );
    client.notify("notifications/initialized");
    let handshake = started.elapsed();
    let first = client.call("search", json!({ "query": queries[0], "k": 10 }));
    let cold = started.elapsed();
    println!(
        "cold start: handshake {:.1} ms, first search answer {:.1} ms ({} results)",
        ms(handshake),
        ms(cold),
        first["structuredContent"]["results"].as_array().map_or(0, Vec::len)
    );

    let mut times = Vec::new();
    let mut bytes = Vec::new();
    for _ in 0..ROUNDS {
        for q in &queries {
            let t = Instant::now();
            let answer = client.call("search", json!({ "query": q, "k": 10 }));
            times.push(t.elapsed());
            assert_eq!(answer["isError"], false, "{answer}");
            bytes.push(answer["content"][0]["text"].as_str().map_or(0, str::len));
        }
    }
    let mut status_times = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        client.call("status", json!({}));
        status_times.push(t.elapsed());
    }
    bytes.sort();
    println!(
        "search (k = 10, default budget), {} calls: median {:.1} ms, p95 {:.1} ms; answer median {} bytes",
        times.len(),
        ms(median(&times)),
        ms(p95(&times)),
        bytes[bytes.len() / 2]
    );
    println!("status, {} calls: median {:.1} ms", status_times.len(), ms(median(&status_times)));
    client.stop();
}

/// A server process and newline-delimited JSON-RPC over its stdio.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    fn start(root: &Path, cache: &Path) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_situate"))
            .args(["mcp", "--dir"])
            .arg(root)
            .env("XDG_CACHE_HOME", cache)
            .env_remove("SITUATE_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start situate mcp");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Client { child, stdin, stdout, next_id: 1 }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method }));
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).expect("read") > 0, "the server closed stdout");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC message");
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({ "name": tool, "arguments": arguments }))
    }

    fn stop(mut self) {
        // Closing stdin ends the session.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    s[s.len() / 2]
}

fn p95(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    s[((s.len() as f64 * 0.95).ceil() as usize).saturating_sub(1).min(s.len() - 1)]
}
