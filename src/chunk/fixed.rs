//! The `fixed` strategy: token windows with overlap over the whole body, blind to structure.

use std::ops::Range;

use super::outline::Outline;
use super::window::{Counting, RawChunk, token_windows, trim};

/// The `fixed` strategy: windows of `max_tokens` with `overlap_tokens` overlap over the body,
/// each with the heading path in effect where it starts.
pub(crate) fn fixed_chunks(
    text: &str,
    body: Range<usize>,
    outline: &Outline,
    max_tokens: usize,
    overlap_tokens: usize,
) -> Vec<(RawChunk, Vec<String>)> {
    let max_tokens = max_tokens.max(1);
    let overlap_tokens = overlap_tokens.min(max_tokens / 2);
    let base = body.start;
    let mut last_end = 0;
    token_windows(&text[body], max_tokens, max_tokens, overlap_tokens, Counting::Exact)
        .into_iter()
        .filter_map(|window| {
            let range = trim(text, base + window.range.start..base + window.range.end)?;
            // A window shrunk to fit its budget can end inside the previous one; it would
            // repeat text and add nothing.
            if range.end <= last_end {
                return None;
            }
            last_end = range.end;
            let section = outline.sections.partition_point(|s| s.range.start <= range.start).checked_sub(1);
            let path = section.map(|i| outline.sections[i].heading_path.clone()).unwrap_or_default();
            Some((RawChunk { range, tokens: window.tokens }, path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_without_overlap_tile_the_text() {
        let text = "alpha beta gamma delta ".repeat(100);
        let windows = token_windows(&text, 10, 25, 0, Counting::Exact);
        assert!(windows[0].tokens <= 10);
        assert!(windows.iter().all(|w| w.tokens <= 25));
        assert!(windows.windows(2).all(|w| w[0].range.end == w[1].range.start));
        assert_eq!(windows.last().map(|w| w.range.end), Some(text.len()));
        // Cuts fall at the end of a word.
        assert!(windows.iter().all(|w| text[w.range.clone()].trim_end().ends_with('a')));
    }

    #[test]
    fn windows_with_overlap_move_forward_and_overlap() {
        let text = "one two three four five six seven eight nine ten ".repeat(30);
        let windows = token_windows(&text, 40, 40, 8, Counting::Exact);
        for pair in windows.windows(2) {
            assert!(pair[1].range.start > pair[0].range.start);
            assert!(pair[1].range.start < pair[0].range.end);
        }
    }

    #[test]
    fn windows_cut_inside_a_word_when_there_is_no_space() {
        let text = "日本語のテキスト".repeat(50);
        let windows = token_windows(&text, 20, 20, 0, Counting::Exact);
        assert!(windows.len() > 1);
        assert!(windows.iter().all(|w| w.tokens <= 20 && !w.range.is_empty()));
    }
}
