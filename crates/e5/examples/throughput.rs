//! Chunks per CPU second of the e5 engine on texts from a file, for profiling the engine
//! crate on its own (`perf record`, callgrind) without building situate.
//!
//! `cargo run --release -p situate-e5 --example throughput -- MODEL.bin TEXTS [ISA] [COUNT] [MAX_TOKENS]`
//! where TEXTS holds the passages separated by NUL bytes (`cargo bench --bench e5` writes
//! the engine's own texts of a corpus so with `SITUATE_BENCH_DUMP=DIR`); every k-th text
//! is taken to make COUNT (default 64). Run it under `taskset` or in a one-thread rayon
//! pool (`RAYON_NUM_THREADS=1`) for single-core figures.

use std::time::Instant;

use situate_e5::{E5Model, Kind};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model_path, texts_path, rest @ ..] = args.as_slice() else {
        eprintln!("usage: throughput MODEL.bin TEXTS [ISA] [COUNT] [MAX_TOKENS]");
        std::process::exit(2);
    };
    let mut model = E5Model::from_file(model_path).expect("model");
    if let Some(isa) = rest.first() {
        model = model.with_instruction_set(isa).expect("instruction set");
    }
    let count: usize = rest.get(1).and_then(|c| c.parse().ok()).unwrap_or(64);
    if let Some(n) = rest.get(2).and_then(|c| c.parse().ok()) {
        model = model.with_max_tokens(n);
    }
    let all = std::fs::read_to_string(texts_path).expect("texts");
    let texts: Vec<&str> = all.split('\0').collect();
    let step = texts.len().div_ceil(count.min(texts.len())).max(1);
    let picked: Vec<&str> = texts.iter().step_by(step).copied().collect();
    let tokens: usize =
        picked.iter().map(|t| model.token_count(t, Kind::Passage).min(model.max_tokens())).sum();
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    for call in picked.chunks(64) {
        std::hint::black_box(model.embed(call, Kind::Passage));
    }
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    println!(
        "{} {} chunks, {} tokens, {} threads: wall {wall:.2} s, CPU {cpu:.2} s, {:.2} chunks/s, {:.2} chunks per CPU s",
        model.instruction_set(),
        picked.len(),
        tokens,
        rayon::current_num_threads(),
        picked.len() as f64 / wall,
        picked.len() as f64 / cpu
    );
}

/// User and system CPU seconds of this process so far (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}
