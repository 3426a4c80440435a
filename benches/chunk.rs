//! What chunking costs on the inputs that once made it slow: one line of five megabytes,
//! of words and of a run without spaces (the section strategy, as a pasted log or a
//! minified file), and two megabytes of short sentences cut by the semantic strategy with a
//! breakpoint at every sentence. A step quadratic in the input's length takes minutes on
//! any of them; the tests check what the chunks hold, this measures how long they take.
//!
//! `cargo bench --bench chunk [-- RUNS]`: each input is chunked RUNS times (default 3), and
//! the median is shown with the number of chunks.

use std::time::Instant;

use situate::chunk::{ChunkConfig, ChunkStrategy, DocKind, chunk_document, chunk_document_with};

#[path = "../tests/support/long_texts.rs"]
mod long_texts;

fn main() {
    let runs = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(3)
        .max(1);
    let words = long_texts::scrambled(long_texts::WORDS, 5 << 20);
    let run = long_texts::line_without_spaces(5 << 20);
    let sentences = long_texts::scrambled(long_texts::SENTENCES, 2 << 20);
    let section = ChunkConfig::default();
    let semantic = ChunkConfig {
        strategy: ChunkStrategy::Semantic,
        semantic_threshold: 0.0,
        max_tokens: 400,
        overlap_tokens: 40,
        ..ChunkConfig::default()
    };
    println!("{:<46} {:>8} {:>10}", "input", "chunks", "median");
    time(runs, "one 5 MB line of words (section)", || {
        chunk_document("words.md", &words, DocKind::Markdown, &section).chunks.len()
    });
    time(runs, "one 5 MB line without spaces (section)", || {
        chunk_document("run.txt", &run, DocKind::Text, &section).chunks.len()
    });
    time(runs, "2 MB of short sentences (semantic, k = 0)", || {
        chunk_document_with("long.txt", &sentences, DocKind::Text, &semantic, &long_texts::vectors_by_length)
            .chunks
            .len()
    });
}

/// Runs `chunk` `runs` times and prints the median time and the chunks it made.
fn time(runs: usize, name: &str, chunk: impl Fn() -> usize) {
    let mut chunks = 0;
    let mut seconds: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            chunks = chunk();
            started.elapsed().as_secs_f64()
        })
        .collect();
    seconds.sort_by(f64::total_cmp);
    println!("{name:<46} {chunks:>8} {:>9.2}s", seconds[runs / 2]);
}
