//! What a status costs when snippets wait: the first estimate of a commit (every waiting
//! chunk's request built and counted, unless the folder keeps the estimates of an earlier
//! count) and the status requests after it on the same commit, each from a new view as a
//! server's polls take them; then the first status of a new engine on the same folder, as
//! a new process takes it, with the estimates the first one kept.
//!
//! `cargo bench --bench estimate -- DIR [--exact]`: DIR is a folder already indexed with a
//! `[snippets]` table in its `situate.toml` (plain `situate index` leaves its chunks
//! waiting). The index is opened read-only; nothing is sent, and nothing is written but the
//! estimates the index folder keeps (`snippet-estimates.bin`) when a file was counted:
//! remove that file first for a first status that counts every file. With `--exact`, every
//! waiting chunk's request is also built and its prompt tokenized whole, and the difference
//! from the estimate (which adds up the passages of a document-mode window) is shown.

use std::path::{Path, PathBuf};
use std::time::Instant;

use situate::engine::Engine;
use situate::index::OpenMode;
use situate::snippets::estimate::{self, Estimate};
use situate::snippets::prompt::ChunkInput;

/// Status requests timed after the first.
const POLLS: usize = 5;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.iter().find(|a| !a.starts_with("--")).map(PathBuf::from) else {
        eprintln!(
            "usage: cargo bench --bench estimate -- DIR [--exact] (an indexed folder with snippets configured)"
        );
        return;
    };
    let dir = dir.canonicalize().expect("the folder");
    let engine = Engine::open(&dir, None, OpenMode::ReadOnly).expect("open the index");
    let started = Instant::now();
    let plain = engine.view().status();
    let plain_ms = started.elapsed().as_secs_f64() * 1e3;
    let Some(snippets) = plain.snippets else {
        eprintln!("{}: snippets are off in its settings", dir.display());
        return;
    };
    println!("{} chunks, {} waiting for a snippet ({} mode)", plain.chunks, snippets.pending, snippets.mode);
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
    let started = Instant::now();
    let next = Engine::open(&dir, None, OpenMode::ReadOnly).expect("open the index again");
    let opened_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    let again = next.view().status_with_estimate().expect("status");
    println!(
        "first status of a new engine: {:.1} ms (and {opened_ms:.0} ms to open it)",
        started.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(again.snippets.map(|s| s.estimate), first.snippets.as_ref().map(|s| s.estimate));
    let Some(estimate) = first.snippets.and_then(|s| s.estimate) else { return };
    println!("estimate: {estimate}");
    println!(
        "  {} calls, {} input tokens ({} cached), {} output tokens",
        estimate.calls, estimate.input_tokens, estimate.cached_input_tokens, estimate.output_tokens
    );
    if args.iter().any(|a| a == "--exact") {
        let started = Instant::now();
        let exact = exact_estimate(&engine, &dir);
        println!("every prompt tokenized whole: {:.1} s", started.elapsed().as_secs_f64());
        println!(
            "  {} calls, {} input tokens ({} cached), {} output tokens",
            exact.calls, exact.input_tokens, exact.cached_input_tokens, exact.output_tokens
        );
        let difference = estimate.input_tokens as f64 - exact.input_tokens as f64;
        println!(
            "  the estimate differs by {difference:+} input tokens ({:+.3}%)",
            100.0 * difference / exact.input_tokens.max(1) as f64
        );
    }
}

/// The estimate of every chunk without a snippet, each request built on its own and
/// counted whole, file by file.
fn exact_estimate(engine: &Engine, dir: &Path) -> Estimate {
    let setup = engine.snippet_setup().expect("snippets are on");
    let view = engine.view();
    let mut total = Estimate::default();
    for path in view.indexed_paths() {
        let records = view.chunks_at(&dir.join(path).to_string_lossy(), None).expect("the file's chunks");
        let inputs: Vec<ChunkInput> = records
            .iter()
            .map(|r| ChunkInput {
                path: &r.path,
                title: &r.title,
                heading_path: &r.heading_path,
                text: &r.text,
            })
            .collect();
        let requests: Vec<_> = (0..inputs.len())
            .filter(|&i| records[i].snippet.is_none())
            .map(|i| setup.request(&inputs, i))
            .collect();
        total += estimate::estimate(&requests);
    }
    total
}
