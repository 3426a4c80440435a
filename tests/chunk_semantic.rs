//! The `semantic` strategy with the built-in static model: it cuts a section where its
//! subject changes, leaves a section about one subject whole, keeps to the token budget, and
//! falls back to cutting by size when the embedder fails.

#[path = "support/long_texts.rs"]
mod long_texts;

use std::path::Path;

use situate::chunk::{ChunkConfig, ChunkStrategy, ChunkedDocument, DocKind, chunk_document_with};
use situate::providers::Embedder;
use situate::providers::static_model::StaticEmbedder;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/chunk").join(name))
        .expect("fixture exists")
}

fn semantic(max_tokens: usize, overlap_tokens: usize) -> ChunkConfig {
    ChunkConfig { strategy: ChunkStrategy::Semantic, max_tokens, overlap_tokens, ..ChunkConfig::default() }
}

fn chunk_with_model(text: &str, config: &ChunkConfig) -> ChunkedDocument {
    let model = StaticEmbedder::builtin().expect("built-in model loads");
    let doc = chunk_document_with("doc.md", text, DocKind::Markdown, config, &|texts: &[&str]| {
        model.embed(texts).map_err(|e| e.to_string())
    });
    for chunk in &doc.chunks {
        assert_eq!(chunk.text, text[chunk.byte_range.clone()]);
    }
    doc
}

#[test]
fn a_change_of_subject_without_a_heading_is_a_chunk_boundary() {
    let text = fixture("topic_change.semantic.md");
    let doc = chunk_with_model(&text, &semantic(400, 40));
    assert!(doc.warnings.is_empty(), "{:?}", doc.warnings);
    let starts: Vec<&str> = doc.chunks.iter().map(|c| c.text.lines().next().unwrap_or("")).collect();
    assert_eq!(
        starts,
        [
            "# Weekend notes",
            "TCP congestion control decides how many packets a sender may have in flight on the network."
        ]
    );
    // The whole section fits the budget: the `section` strategy keeps it as one chunk.
    let section = ChunkConfig { strategy: ChunkStrategy::Section, ..semantic(400, 40) };
    assert_eq!(chunk_with_model(&text, &section).chunks.len(), 1);
}

#[test]
fn a_section_about_one_subject_stays_whole() {
    let text = fixture("one_topic.semantic.md");
    let doc = chunk_with_model(&text, &semantic(400, 40));
    assert_eq!(doc.chunks.len(), 1, "{:#?}", doc.chunks);
}

#[test]
fn the_budget_still_holds_and_the_change_of_subject_is_still_a_boundary() {
    let text = fixture("topic_change.semantic.md");
    let doc = chunk_with_model(&text, &semantic(60, 10));
    assert!(doc.chunks.len() > 2);
    assert!(doc.chunks.iter().all(|c| c.token_count <= 60), "{:#?}", doc.chunks);
    // No chunk holds both bread and TCP: none overlaps the boundary.
    let change = text.find("TCP congestion control").unwrap();
    assert!(doc.chunks.iter().any(|c| c.byte_range.start == change));
    assert!(doc.chunks.iter().all(|c| !(c.byte_range.start < change && change < c.byte_range.end)));
}

#[test]
fn a_failing_embedder_leaves_the_section_cut_by_size_with_a_warning() {
    let text = fixture("topic_change.semantic.md");
    let config = semantic(60, 10);
    let failed = chunk_document_with("doc.md", &text, DocKind::Markdown, &config, &|_: &[&str]| {
        Err("model server went away".to_string())
    });
    let section = ChunkConfig { strategy: ChunkStrategy::Section, ..config.clone() };
    let by_size = chunk_document_with("doc.md", &text, DocKind::Markdown, &section, &|_: &[&str]| {
        Err("never called".to_string())
    });
    assert_eq!(failed.chunks, by_size.chunks);
    assert!(failed.warnings.iter().any(|w| w.contains("model server went away")), "{:?}", failed.warnings);
    // An embedder that miscounts is treated the same way.
    let short =
        chunk_document_with("doc.md", &text, DocKind::Markdown, &config, &|_: &[&str]| Ok(Vec::new()));
    assert_eq!(short.chunks, by_size.chunks);
    assert_eq!(short.warnings.len(), 1);
}

#[test]
fn a_long_section_with_many_breakpoints_is_chunked_within_the_budget() {
    // Two megabytes of short sentences, vectors drawn from their lengths and k = 0: tens of
    // thousands of breakpoints and small pieces to merge (`cargo bench --bench chunk`
    // measures how long they take).
    let text = long_texts::scrambled(long_texts::SENTENCES, 2 << 20);
    let config = ChunkConfig { semantic_threshold: 0.0, ..semantic(400, 40) };
    let doc = chunk_document_with("long.txt", &text, DocKind::Text, &config, &long_texts::vectors_by_length);
    let by_size =
        chunk_document_with("long.txt", &text, DocKind::Text, &semantic(400, 40), &|_: &[&str]| {
            Err("unused".to_string())
        });
    assert!(doc.chunks.len() > by_size.chunks.len(), "{} chunks", doc.chunks.len());
    assert!(doc.chunks.iter().all(|c| c.token_count <= 400));
}
