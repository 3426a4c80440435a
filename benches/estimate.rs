//! What a status costs when snippets wait: the first estimate of a commit (every waiting
//! chunk's request built and counted) and the status requests after it on the same commit,
//! each from a new view as a server's polls take them.
//!
//! `cargo bench --bench estimate -- DIR`: DIR is a folder already indexed with a
//! `[snippets]` table in its `situate.toml` (plain `situate index` leaves its chunks
//! waiting). The index is opened read-only; nothing is sent.

use std::path::PathBuf;
use std::time::Instant;

use situate::engine::Engine;
use situate::index::OpenMode;

/// Status requests timed after the first.
const POLLS: usize = 5;

fn main() {
    let Some(dir) = std::env::args().skip(1).find(|a| !a.starts_with("--")).map(PathBuf::from) else {
        eprintln!("usage: cargo bench --bench estimate -- DIR (an indexed folder with snippets configured)");
        return;
    };
    let engine = Engine::open(&dir, None, OpenMode::ReadOnly).expect("open the index");
    let started = Instant::now();
    let plain = engine.view().status();
    let plain_ms = started.elapsed().as_secs_f64() * 1e3;
    let Some(snippets) = plain.snippets else {
        eprintln!("{}: snippets are off in its settings", dir.display());
        return;
    };
    println!("{} chunks, {} waiting for a snippet", plain.chunks, snippets.pending);
    println!("status without the estimate: {plain_ms:.1} ms");
    let started = Instant::now();
    let first = engine.view().status_with_estimate().expect("status");
    println!("first status of the commit: {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
    let mut polls: Vec<f64> = (0..POLLS)
        .map(|_| {
            let started = Instant::now();
            let again = engine.view().status_with_estimate().expect("status");
            assert_eq!(again.snippets.map(|s| s.estimate), first.snippets.as_ref().map(|s| s.estimate));
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    polls.sort_by(f64::total_cmp);
    println!("later status of the same commit: median {:.1} ms of {POLLS}", polls[POLLS / 2]);
    if let Some(estimate) = first.snippets.and_then(|s| s.estimate) {
        println!("estimate: {estimate}");
    }
}
