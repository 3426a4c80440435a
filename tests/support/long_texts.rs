//! The long inputs that once made chunking slow, built alike by the tests that check their
//! chunks (`chunk_golden.rs`, `chunk_semantic.rs`) and by the benchmark that times them
//! (`benches/chunk.rs`). Each of them uses a part of it.
#![allow(dead_code)]

/// Words for a giant line: ASCII, accented letters, a number and a dash.
pub const WORDS: &[&str] = &["situate", "chunks", "every", "line", "naïve", "café", "ünïcödé", "42", "—"];

/// Short sentences, each one a breakpoint of the `semantic` strategy at k = 0.
pub const SENTENCES: &[&str] =
    &["Bread rises.", "Packets drop.", "The cat sleeps on the mat.", "Routers queue packets."];

/// `parts` followed by a blank each, in a scrambled order, until the text is `bytes` long.
pub fn scrambled(parts: &[&str], bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 64);
    let mut i = 0usize;
    while text.len() < bytes {
        text.push_str(parts[i % parts.len()]);
        text.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7) % 1009;
    }
    text
}

/// One line of `bytes` without a space: letters, an accented one, an emoji and digits.
pub fn line_without_spaces(bytes: usize) -> String {
    "abcdéf😀0123".repeat(bytes / 16)
}

/// Sentence vectors drawn from each text's length: cheap, and different enough from one
/// sentence to the next that every sentence end is a breakpoint at k = 0.
pub fn vectors_by_length(texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
    Ok(texts.iter().map(|t| vec![(t.len() % 7) as f32 + 1.0, (t.len() % 3) as f32]).collect())
}
