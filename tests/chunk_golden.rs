//! Golden tests for the chunker: every `*.md` and `*.txt` file in `tests/data/chunk/` is
//! chunked and compared with the `<file>.expected` next to it.
//!
//! The file name picks the configuration:
//! - `*.small.*`: `section` strategy with a budget of 48 tokens and 12 of overlap, to show
//!   splitting and overlap on short inputs;
//! - `*.fixed.*`: `fixed` strategy with the same small budget;
//! - `*.semantic.*`: `semantic` strategy with the default budget and threshold, sentences
//!   embedded by the built-in static model;
//! - anything else: the default configuration (`section`, 400 tokens, 40 of overlap).
//!
//! In expected files a carriage return is shown as `␍` so that line endings can be reviewed.
//! Regenerate with `UPDATE_GOLDEN=1 cargo test --test chunk_golden` and read the diff.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[path = "support/long_texts.rs"]
mod long_texts;

use situate::chunk::{
    ChunkConfig, ChunkStrategy, ChunkedDocument, DocKind, chunk_document, chunk_document_with,
};
use situate::providers::Embedder;
use situate::providers::static_model::StaticEmbedder;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/chunk")
}

fn config_for(name: &str) -> ChunkConfig {
    let small = ChunkConfig {
        strategy: ChunkStrategy::Section,
        max_tokens: 48,
        overlap_tokens: 12,
        ..Default::default()
    };
    if name.contains(".small.") {
        small
    } else if name.contains(".fixed.") {
        ChunkConfig { strategy: ChunkStrategy::Fixed, ..small }
    } else if name.contains(".semantic.") {
        ChunkConfig { strategy: ChunkStrategy::Semantic, ..ChunkConfig::default() }
    } else {
        ChunkConfig::default()
    }
}

fn render(config: &ChunkConfig, doc: &ChunkedDocument) -> String {
    let visible = |s: &str| s.replace('\r', "␍");
    let mut out = String::new();
    let strategy = match config.strategy {
        ChunkStrategy::Section => "section",
        ChunkStrategy::Fixed => "fixed",
        ChunkStrategy::Semantic => "semantic",
    };
    let _ = write!(
        out,
        "config: {strategy} max_tokens={} overlap_tokens={}",
        config.max_tokens, config.overlap_tokens
    );
    if config.strategy == ChunkStrategy::Semantic {
        let _ = write!(out, " semantic_threshold={}", config.semantic_threshold);
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "title: {}", visible(&doc.title));
    if doc.warnings.is_empty() {
        let _ = writeln!(out, "warnings: none");
    }
    for warning in &doc.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    let _ = writeln!(out, "chunks: {}", doc.chunks.len());
    for chunk in &doc.chunks {
        let path =
            if chunk.heading_path.is_empty() { "(none)".to_string() } else { chunk.heading_path.join(" > ") };
        let _ = writeln!(
            out,
            "\n#{} L{}-{} B{}..{} tokens={} path={}",
            chunk.ordinal,
            chunk.start_line,
            chunk.end_line,
            chunk.byte_range.start,
            chunk.byte_range.end,
            chunk.token_count,
            visible(&path)
        );
        let _ = writeln!(out, "{}", visible(&chunk.text));
    }
    out
}

#[test]
fn chunks_match_the_golden_files() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("tests/data/chunk exists")
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| matches!(path.extension().and_then(|e| e.to_str()), Some("md" | "txt")))
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 15, "golden inputs are missing: {inputs:?}");

    let model = StaticEmbedder::builtin().expect("built-in model loads");
    let sentences = |texts: &[&str]| model.embed(texts).map_err(|e| e.to_string());
    let mut failures = Vec::new();
    for input in &inputs {
        let name = input.file_name().and_then(|n| n.to_str()).expect("utf-8 name");
        let bytes = std::fs::read(input).expect("readable input");
        // The reader decodes invalid UTF-8 lossily before chunking; do the same here.
        let text = String::from_utf8_lossy(&bytes);
        let kind = if name.ends_with(".txt") { DocKind::Text } else { DocKind::Markdown };
        let config = config_for(name);
        let doc = chunk_document_with(name, &text, kind, &config, &sentences);
        for chunk in &doc.chunks {
            assert_eq!(chunk.text, text[chunk.byte_range.clone()], "{name}: chunk text");
        }
        let actual = render(&config, &doc);
        let expected_path = input.with_file_name(format!("{name}.expected"));
        if update {
            std::fs::write(&expected_path, &actual).expect("writable expected file");
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            let line = expected
                .lines()
                .zip(actual.lines())
                .position(|(e, a)| e != a)
                .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
            failures.push(format!(
                "{name}: differs from {name}.expected at line {}\n  expected: {:?}\n  actual:   {:?}",
                line + 1,
                expected.lines().nth(line).unwrap_or("<end>"),
                actual.lines().nth(line).unwrap_or("<end>"),
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden file(s) differ (regenerate with UPDATE_GOLDEN=1 and review the diff):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Checks that the chunks of a document made of one giant line cover every non-blank byte of
/// it, in order (`cargo bench --bench chunk` measures how long such a line takes).
fn assert_giant_line_is_tiled(line: &str, kind: DocKind) {
    let doc = chunk_document("giant", line, kind, &ChunkConfig::default());
    assert!(doc.chunks.len() > 1000, "{} chunks", doc.chunks.len());
    let mut covered_to = 0;
    for chunk in &doc.chunks {
        assert_eq!((chunk.start_line, chunk.end_line), (1, 1));
        assert!(chunk.token_count as usize <= 400, "{} tokens", chunk.token_count);
        let gap = &line[covered_to.min(chunk.byte_range.start)..chunk.byte_range.start];
        assert!(gap.trim().is_empty(), "text before byte {} is in no chunk", chunk.byte_range.start);
        assert!(chunk.byte_range.end > covered_to, "chunks go backwards");
        covered_to = chunk.byte_range.end;
    }
    assert!(line[covered_to..].trim().is_empty(), "the end of the line is in no chunk");
}

#[test]
fn a_five_megabyte_line_of_words_is_chunked_and_tiled() {
    assert_giant_line_is_tiled(&long_texts::scrambled(long_texts::WORDS, 5 << 20), DocKind::Markdown);
}

#[test]
fn a_five_megabyte_line_without_spaces_is_chunked_and_tiled() {
    assert_giant_line_is_tiled(&long_texts::line_without_spaces(5 << 20), DocKind::Text);
}
