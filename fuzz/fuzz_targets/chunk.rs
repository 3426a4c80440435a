//! Fuzzes the chunker (`chunk_document_with`) in every strategy, for markdown and text, and
//! checks what it promises on any input: chunks are exact, trimmed, non-empty slices of the
//! file with the right lines, token counts and hashes, in order and within the budget;
//! heading-bounded strategies never reach across a top-level heading (but for a note of
//! headings alone, chunked as their text); no non-blank byte of the body is left out (but
//! for an Excalidraw drawing, chunked by its element texts alone, and, in those strategies,
//! a markdown section's body without a letter or digit outside a page's scripts and
//! styles); chunks lie in the body,
//! but for a note of front matter alone that holds a value, chunked as its front matter
//! lines; titles and heading labels are capped. The `semantic` strategy gets a stand-in
//! sentence embedder chosen by the input: hashed vectors (breakpoints anywhere), equal
//! vectors, an error, the wrong number of vectors, or ragged, zero and NaN vectors.

#![no_main]

use std::ops::Range;

use libfuzzer_sys::fuzz_target;
use situate::chunk::front_matter::{Detection, detect};
use situate::chunk::{ChunkConfig, ChunkStrategy, DocKind, MAX_LABEL_CHARS, chunk_document_with};

#[path = "../../tests/support/chunk_oracle.rs"]
mod chunk_oracle;

use chunk_oracle::{
    blob_allowance, fenced_blocks, hashed, in_cjk_blocks, line_of, opens_inside_a_closed_block,
    top_level_headings, wordless_bodies,
};

/// Vectors that no embedder should return, but a broken one might.
fn malformed(texts: &[&str]) -> Vec<Vec<f32>> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| match i % 4 {
            0 => vec![f32::NAN; 3],
            1 => Vec::new(),
            2 => vec![0.0; 4],
            _ => vec![text.len() as f32, f32::INFINITY, -1.0, f32::MAX],
        })
        .collect()
}

fn capped(label: &str) -> bool {
    label.chars().count() <= MAX_LABEL_CHARS + 1
}

fuzz_target!(|data: &[u8]| {
    // Four bytes of settings, then the document.
    let Some((settings, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let text = text.as_ref();
    // Markdown, and MDX when the semantic threshold's byte has its top bit set.
    let kind = match (settings[0] & 1, settings[3] >> 7) {
        (1, _) => DocKind::Text,
        (_, 0) => DocKind::Markdown,
        _ => DocKind::Mdx,
    };
    let strategy = match (settings[0] >> 1) % 3 {
        0 => ChunkStrategy::Section,
        1 => ChunkStrategy::Fixed,
        _ => ChunkStrategy::Semantic,
    };
    // Tiny budgets cut hardest; 400 is the default.
    let max_tokens = match settings[1] {
        0..=239 => usize::from(settings[1] % 64),
        240..=251 => 400,
        _ => usize::from(settings[1]) * 8,
    };
    let overlap_tokens = usize::from(settings[2] % 64);
    let semantic_threshold = match settings[3] % 8 {
        0 => f32::NAN,
        1 => -1.0,
        2 => f32::INFINITY,
        k => (k - 3) as f32 * 0.75,
    };
    // A declared language for notes without one, or detection per chunk.
    let language = match settings[2] >> 6 {
        0 => None,
        1 => Some("de".to_string()),
        2 => Some("ru".to_string()),
        _ => Some("xx-unknown".to_string()),
    };
    let config = ChunkConfig { strategy, max_tokens, overlap_tokens, semantic_threshold, language };
    let embedder = settings[0] >> 4;
    let embed = |texts: &[&str]| -> Result<Vec<Vec<f32>>, String> {
        match embedder {
            0..=9 => Ok(hashed(texts)),
            10 => Ok(vec![vec![1.0, 0.0]; texts.len()]),
            11 => Err("the stand-in embedder fails".to_string()),
            12 => Ok(hashed(&texts[1..])),
            13 => Ok(hashed(texts).into_iter().chain([vec![1.0]]).collect()),
            _ => Ok(malformed(texts)),
        }
    };
    let doc = chunk_document_with("doc.md", text, kind, &config, &embed);

    assert!(!doc.title.is_empty(), "a document always has a title");
    assert!(capped(&doc.title), "the title is capped: {} chars", doc.title.chars().count());
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let mut previous: Option<Range<usize>> = None;
    let fenced = fenced_blocks(text);
    for (i, chunk) in doc.chunks.iter().enumerate() {
        let range = chunk.byte_range.clone();
        assert_eq!(chunk.ordinal as usize, i);
        assert!(range.start < range.end && range.end <= text.len(), "{range:?} in {} bytes", text.len());
        assert_eq!(chunk.text, text[range.clone()], "the chunk's text is the file's bytes");
        assert_eq!(chunk.text.trim(), chunk.text, "chunk text is trimmed");
        assert_eq!(chunk.start_line, line_of(text, range.start));
        assert_eq!(chunk.end_line, line_of(text, range.end - 1));
        assert!(chunk.start_line <= chunk.end_line);
        let exact = bpe.encode_ordinary(&chunk.text).len();
        if has_long_run(&chunk.text) {
            // A run the pre-split never cuts is merged a kilobyte at a time: close, not exact.
            assert!((chunk.token_count as usize).abs_diff(exact) * 100 <= exact + 100, "{exact}");
        } else {
            assert_eq!(chunk.token_count as usize, exact);
        }
        assert!(chunk.token_count > 0);
        // The budget counts a CJK letter as two thirds of a token; every character of the
        // CJK blocks is taken for one here, which can only make the bound looser.
        let cjk_discount = chunk.text.chars().filter(|&c| in_cjk_blocks(c)).count() / 3;
        let blobs = blob_allowance(&chunk.text, |blob| bpe.encode_ordinary(blob).len());
        assert!(
            (chunk.token_count as usize).saturating_sub(cjk_discount + blobs) <= max_tokens.max(1)
                || chunk.text.chars().count() == 1,
            "{} tokens over a budget of {max_tokens}",
            chunk.token_count
        );
        assert_eq!(chunk.content_hash, xxhash_rust::xxh3::xxh3_64(chunk.text.as_bytes()));
        assert!(chunk.heading_path.iter().all(|h| capped(h)), "heading labels are capped");
        if let Some(previous) = &previous {
            assert!(range.start > previous.start && range.end > previous.end, "chunks move forward");
            // The overlap never repeats the end of a code block that the chunk before closed.
            assert!(
                strategy != ChunkStrategy::Section || !opens_inside_a_closed_block(&fenced, previous, &range),
                "{range:?} starts inside a code block that {previous:?} closed"
            );
        }
        previous = Some(range);
    }

    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let (body_start, front_matter_has_values) = match (kind, detect(text)) {
        (DocKind::Markdown | DocKind::Mdx, Detection::Found(front_matter)) => {
            (front_matter.body_start, front_matter.fields.values().any(|values| !values.is_empty()))
        }
        _ => (bom, false),
    };
    let headings = match kind {
        DocKind::Markdown | DocKind::Mdx => top_level_headings(text, body_start),
        DocKind::Text => Vec::new(),
    };
    let heading_bounded = matches!(strategy, ChunkStrategy::Section | ChunkStrategy::Semantic);
    // A note of headings alone is chunked as its headings' text, across them.
    // A body that holds no letter or digit makes no chunk of its own (a markdown note's).
    let wordless = match kind {
        DocKind::Markdown | DocKind::Mdx => {
            wordless_bodies(text, body_start, &headings, kind == DocKind::Mdx)
        }
        DocKind::Text => Vec::new(),
    };
    let left_out = |offset: usize| {
        headings.iter().any(|h| h.contains(&offset)) || wordless.iter().any(|w| w.contains(&offset))
    };
    // A note of headings alone (or of headings over wordless bodies) is chunked as its
    // headings' text, across them.
    let headings_alone = text[body_start..]
        .char_indices()
        .all(|(offset, c)| c.is_whitespace() || left_out(offset + body_start));
    // An Excalidraw drawing is chunked by its element texts alone, not its drawing data.
    let drawing =
        kind != DocKind::Text && doc.metadata.keys().any(|k| k.eq_ignore_ascii_case("excalidraw-plugin"));
    if heading_bounded && !headings_alone {
        for heading in &headings {
            for chunk in &doc.chunks {
                let range = &chunk.byte_range;
                assert!(
                    !(range.start < heading.start && heading.start < range.end),
                    "chunk {range:?} reaches across the heading at {heading:?}"
                );
            }
        }
    }
    // A note of front matter alone that holds a value is chunked as its front matter, every
    // line of it; any other note's chunks lie in its body.
    // Its body says nothing: no letter or digit, or, where headings bound chunks, none
    // outside a page's scripts and styles.
    let wordless_body = headings.is_empty()
        && (!text[body_start..].chars().any(char::is_alphanumeric)
            || (heading_bounded && wordless.iter().any(|w| w.start == body_start && w.end == text.len())));
    if front_matter_has_values && !drawing && wordless_body {
        assert!(!doc.chunks.is_empty(), "a note of front matter alone has a chunk");
        for (offset, c) in text[bom..body_start].char_indices() {
            let offset = offset + bom;
            assert!(
                c.is_whitespace() || doc.chunks.iter().any(|chunk| chunk.byte_range.contains(&offset)),
                "{c:?} at byte {offset} of the front matter is in no chunk"
            );
        }
        for chunk in &doc.chunks {
            assert!(
                chunk.byte_range.end <= body_start,
                "{:?} reaches past the front matter",
                chunk.byte_range
            );
        }
        return;
    }
    for chunk in &doc.chunks {
        assert!(chunk.byte_range.start >= body_start, "{:?} reaches into the front matter", chunk.byte_range);
    }
    if drawing {
        return;
    }
    // Chunks are sorted and move forward, so one pass over the body checks coverage.
    let mut next_chunk = 0;
    for (offset, c) in text[body_start..].char_indices() {
        let offset = offset + body_start;
        if c.is_whitespace() || (heading_bounded && left_out(offset)) {
            continue;
        }
        while doc.chunks.get(next_chunk).is_some_and(|chunk| chunk.byte_range.end <= offset) {
            next_chunk += 1;
        }
        let covered = doc.chunks[next_chunk..]
            .iter()
            .take_while(|chunk| chunk.byte_range.start <= offset)
            .any(|chunk| chunk.byte_range.contains(&offset));
        assert!(covered, "{c:?} at byte {offset} is in no chunk");
    }
});

/// Whether `text` holds a run of a kilobyte or more without a blank, which the tokenizer's
/// pre-split may leave whole and the count then merges a kilobyte at a time.
fn has_long_run(text: &str) -> bool {
    text.split(char::is_whitespace).any(|run| run.len() >= 1024)
}
