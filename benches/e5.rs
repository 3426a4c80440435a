//! Speed of the built-in multilingual-e5-small engine (`providers::e5`), two ways.
//!
//! `real` (the default): the chunks of real corpora (the Traefik and Node.js docs from
//! `../shared/data`, skipped with a message when absent), chunked by the project's chunker
//! and given their context header exactly as the engine embeds them, so each passage has
//! its real token length. Reports the length distribution, then chunks per second for every
//! instruction set the CPU has and every thread count, in calls of 64 texts as the engine
//! makes them. A systematic sample (every k-th chunk) keeps the runs short; set
//! `SITUATE_BENCH_CHUNKS` for more (or `all`).
//!
//! `synthetic`: passages of exactly 256 tokens at batch sizes 1, 8 and 32, on all of
//! rayon's threads and on one; the latency of an 11-token query (median and 99th
//! percentile); load time and peak memory. CPU seconds are printed beside wall seconds,
//! since on a shared machine the wall clock also counts time the process waited for a core.
//!
//! `cargo bench --bench e5 [-- real|synthetic]` (the model is the one the build put in
//! place, see build.rs)

use std::path::Path;
use std::time::{Duration, Instant};

use situate::chunk::{ChunkConfig, chunk_document};
use situate::context::{ContextConfig, embedding_text, render_header, searchable};
use situate::providers::e5::{E5Model, Kind};

/// Passages run per configuration (a multiple of every batch size).
const PASSAGES: usize = 64;
const QUERIES: usize = 200;

/// Texts per `embed` call, as the engine fills pending vectors.
const CALL: usize = 64;

fn main() {
    let Some(bytes) = situate::providers::builtin_model() else {
        println!("skipped: this build has no built-in e5 model (see build.rs)");
        return;
    };
    let mode = std::env::args().skip(1).find(|a| !a.starts_with("--")).unwrap_or_else(|| "real".into());
    match mode.as_str() {
        "synthetic" => synthetic(bytes),
        "real" => real(bytes),
        other => println!("unknown mode {other:?}: real or synthetic"),
    }
}

fn real(bytes: &'static [u8]) {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    // The provider's default unless told otherwise: the figures of a default index.
    let max_tokens = std::env::var("SITUATE_BENCH_MAX_TOKENS")
        .ok()
        .and_then(|v| v.parse().ok())
        .or(Some(situate::providers::e5_model::DEFAULT_MAX_TOKENS));
    let sample = match std::env::var("SITUATE_BENCH_CHUNKS").as_deref() {
        Ok("all") => usize::MAX,
        Ok(n) => n.parse().unwrap_or(256),
        Err(_) => 256,
    };
    let threads = rayon::current_num_threads();
    let mut counts = vec![1];
    if threads > 1 {
        counts.push(threads);
    }
    for corpus in ["traefik-docs", "nodejs-docs"] {
        let dir = shared.join(corpus);
        if !dir.is_dir() {
            println!("skipped {corpus}: not at {}", dir.display());
            continue;
        }
        let texts = engine_texts(&dir);
        // The texts themselves, NUL-separated, for profiling the engine crate on its own.
        if let Ok(dump) = std::env::var("SITUATE_BENCH_DUMP") {
            std::fs::write(format!("{dump}/{corpus}.txt"), texts.join("\0")).expect("dump");
        }
        let base = E5Model::from_bytes(bytes).expect("loading the model");
        let base = match max_tokens {
            Some(n) => base.with_max_tokens(n),
            None => base,
        };
        let mut lengths: Vec<usize> =
            texts.iter().map(|t| base.token_count(t, Kind::Passage).min(base.max_tokens())).collect();
        let total: usize = lengths.iter().sum();
        let at_cap = lengths.iter().filter(|&&n| n == base.max_tokens()).count();
        lengths.sort_unstable();
        let pct = |q: f64| lengths[((lengths.len() - 1) as f64 * q) as usize];
        println!(
            "\n{corpus}: {} chunks; e5 tokens per chunk (cut at {}): mean {:.0}, p10 {}, p50 {}, p90 {}, {:.0}% at the cap",
            texts.len(),
            base.max_tokens(),
            total as f64 / texts.len() as f64,
            pct(0.1),
            pct(0.5),
            pct(0.9),
            100.0 * at_cap as f64 / texts.len() as f64
        );
        let step = texts.len().div_ceil(sample.min(texts.len())).max(1);
        let picked: Vec<&str> = texts.iter().step_by(step).map(String::as_str).collect();
        println!("\n| instruction set | threads | chunks | chunks/s | chunks per CPU s | wall s | CPU s |");
        println!("|---|---:|---:|---:|---:|---:|---:|");
        let only = std::env::var("SITUATE_BENCH_ISA").ok();
        for name in
            E5Model::instruction_sets().into_iter().filter(|n| only.as_deref().is_none_or(|o| o == *n))
        {
            let model = match max_tokens {
                Some(n) => E5Model::from_bytes(bytes).unwrap().with_max_tokens(n),
                None => E5Model::from_bytes(bytes).unwrap(),
            };
            let model = model.with_instruction_set(name).unwrap();
            // The portable path is an order of magnitude slower: a smaller sample.
            let run = if name == "portable" { &picked[..picked.len().min(32)] } else { &picked[..] };
            for &n in &counts {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("thread pool");
                pool.install(|| model.embed(&run[..1], Kind::Passage));
                let (cpu0, t0) = (cpu_seconds(), Instant::now());
                pool.install(|| run.chunks(CALL).for_each(|call| drop(model.embed(call, Kind::Passage))));
                let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
                let count = run.len() as f64;
                println!(
                    "| {name} | {n} | {} | {:.1} | {:.1} | {wall:.1} | {cpu:.1} |",
                    run.len(),
                    count / wall,
                    count / cpu.max(1e-9)
                );
            }
        }
    }
}

/// What the engine embeds for every chunk of the markdown files under `dir`: the context
/// header and the chunk's searchable text, with the default chunk and context settings.
fn engine_texts(dir: &Path) -> Vec<String> {
    // The files the engine would index, found as the engine finds them.
    let walked = situate::workspace::walk(dir, &situate::workspace::WalkConfig::default(), None);
    let (chunking, context) = (ChunkConfig::default(), ContextConfig::default());
    let mut texts = Vec::new();
    for file in walked.files {
        let Ok(raw) = std::fs::read_to_string(&file.abs_path) else { continue };
        let rel = file.rel_path;
        let name = file.abs_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let doc = chunk_document(&name, &raw, situate::workspace::doc_kind(&rel), &chunking);
        for chunk in doc.chunks.iter().filter(|c| !searchable(&c.text).trim().is_empty()) {
            let header = render_header(&context, &rel, &doc.title, &chunk.heading_path, &doc.metadata);
            texts.push(embedding_text(&header, "", &chunk.text));
        }
    }
    texts
}

fn synthetic(bytes: &'static [u8]) {
    let started = Instant::now();
    // Passages are written a little longer than 256 tokens and cut to exactly 256.
    let model = E5Model::from_bytes(bytes).expect("loading the model").with_max_tokens(256);
    let load = started.elapsed();
    let threads = rayon::current_num_threads();
    println!(
        "model {} ({}), loaded in {:.0} ms; {threads} threads available",
        model.fingerprint(),
        model.instruction_set(),
        load.as_secs_f64() * 1e3
    );

    let passages: Vec<String> = (0..PASSAGES).map(|i| passage(&model, i, 256)).collect();
    let texts: Vec<&str> = passages.iter().map(String::as_str).collect();
    let tokens: usize =
        texts.iter().map(|t| model.token_count(t, Kind::Passage).min(model.max_tokens())).sum();
    println!("\n{PASSAGES} passages of {} tokens each\n", tokens / PASSAGES);
    println!("| threads | batch | passages/s | tokens/s | wall s | CPU s | passages per CPU s |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut counts = vec![threads];
    if threads > 1 {
        counts.push(1);
    }
    for &n in &counts {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("thread pool");
        pool.install(|| {
            model.embed(&texts[..1], Kind::Passage);
            for batch in [1, 8, 32] {
                let (cpu0, t0) = (cpu_seconds(), Instant::now());
                for chunk in texts.chunks(batch) {
                    let vectors = model.embed(chunk, Kind::Passage);
                    assert_eq!(vectors.len(), chunk.len());
                }
                let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
                println!(
                    "| {n} | {batch} | {:.1} | {:.0} | {wall:.2} | {cpu:.2} | {:.1} |",
                    PASSAGES as f64 / wall,
                    tokens as f64 / wall,
                    PASSAGES as f64 / cpu.max(1e-9),
                );
            }
        });
    }

    let query = "how long are backups kept";
    println!("\nquery {query:?}: {} tokens\n", model.token_count(query, Kind::Query));
    println!("| threads | p50 ms | p99 ms |");
    println!("|---:|---:|---:|");
    for &n in &counts {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("thread pool");
        let mut times: Vec<Duration> = pool.install(|| {
            model.embed(&[query], Kind::Query);
            (0..QUERIES)
                .map(|_| {
                    let t0 = Instant::now();
                    model.embed(&[query], Kind::Query);
                    t0.elapsed()
                })
                .collect()
        });
        times.sort();
        let ms = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
        println!("| {n} | {:.2} | {:.2} |", ms(0.5), ms(0.99));
    }
    if let Some(peak) = peak_rss_mb() {
        println!("\npeak RSS {peak:.0} MB with one model loaded (its file read into memory: 72 MB)");
    }

    // Every instruction set this CPU has, for machines with less (AVX2 only, or neither).
    println!("\n| instruction set | threads | batch | passages/s | passages per CPU s |");
    println!("|---|---:|---:|---:|---:|");
    for name in E5Model::instruction_sets() {
        let model =
            E5Model::from_bytes(bytes).unwrap().with_max_tokens(256).with_instruction_set(name).unwrap();
        let texts = if name == "portable" { &texts[..8] } else { &texts[..] };
        for &n in &counts {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("thread pool");
            let (cpu0, t0) = (cpu_seconds(), Instant::now());
            pool.install(|| texts.chunks(32).for_each(|chunk| drop(model.embed(chunk, Kind::Passage))));
            let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
            let count = texts.len() as f64;
            println!("| {name} | {n} | 32 | {:.1} | {:.1} |", count / wall, count / cpu.max(1e-9));
        }
    }
}

/// A passage of about `tokens` tokens, varied by `seed` so that no two are alike.
fn passage(model: &E5Model, seed: usize, tokens: usize) -> String {
    let sentences = [
        "The retention policy keeps nightly snapshots for {} days and weekly snapshots for a year.",
        "Restores are tested every quarter by rebuilding a staging cluster from snapshot {}.",
        "When a restore fails, the on-call engineer opens incident {} and pages the storage team.",
        "Le cluster de préproduction est reconstruit chaque trimestre à partir de la sauvegarde {}.",
        "Die Wiederherstellung dauerte {} Minuten und wurde im Betriebsprotokoll festgehalten.",
    ];
    let mut text = String::new();
    let mut i = seed;
    while model.token_count(&text, Kind::Passage) < tokens {
        text.push_str(&sentences[i % sentences.len()].replace("{}", &(seed * 7 + i).to_string()));
        text.push(' ');
        i += 1;
    }
    text
}

/// User and system CPU seconds of this process so far (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which may hold spaces) start at the last ')'.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime, fields 14 and 15 of the line (11 and 12 counting from 0 after the
    // name), in the 1/100 s ticks that Linux reports.
    (ticks(11) + ticks(12)) / 100.0
}

/// The peak resident memory of this process in MB (Linux; `None` elsewhere).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
