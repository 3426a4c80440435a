//! Token windows and raw chunks: the pieces both packers share. The `fixed` strategy tiles a
//! body with windows; the `section` packer uses them for a sentence or line that alone
//! exceeds the budget.

use std::ops::Range;

use super::tokens::{self, ceil_char_boundary, floor_char_boundary};

/// A chunk before it becomes a [`super::Chunk`]: its trimmed range and exact token count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawChunk {
    pub range: Range<usize>,
    pub tokens: usize,
}

/// One window of [`token_windows`]: its range relative to the windowed text and its token
/// count.
pub(crate) struct Window {
    pub range: Range<usize>,
    pub tokens: usize,
}

/// How [`token_windows`] counts the tokens of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counting {
    /// Tokenize each window's trimmed text on its own: exact, and a second pass over the text.
    Exact,
    /// Count the tokens the window took from the whole text's tokenization: free, and off by
    /// a token or two at the edges, for callers that measure the final chunk anyway.
    InPlace,
}

/// Cuts `text` into windows of at most `first_budget` (the first) and `budget` (the others)
/// tokens, each starting about `overlap` tokens before the previous one ends.
///
/// Windows end at a token boundary, moved back to the end of a word when one lies in the
/// window's second half, and snapped to a character boundary (cl100k splits some characters
/// across tokens). With no overlap the windows tile `text`.
pub(crate) fn token_windows(
    text: &str,
    first_budget: usize,
    budget: usize,
    overlap: usize,
    counting: Counting,
) -> Vec<Window> {
    // Tokenizing the whole text once keeps this linear; each window then takes the next
    // `budget` tokens by offset.
    let ends = tokens::token_ends(text);
    let mut windows: Vec<Window> = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let budget = if windows.is_empty() { first_budget } else { budget }.max(1);
        // Tokens that end after `pos`; the one straddling `pos`, if any, counts whole.
        let from = ends.partition_point(|&end| end <= pos);
        let mut take = budget;
        let mut cut = window_end(text, &ends, pos, from, take);
        let count = loop {
            let count = match counting {
                Counting::Exact => tokens::count(text[pos..cut].trim()),
                Counting::InPlace => ends.partition_point(|&end| end < cut) + 1 - from,
            };
            if count <= budget || counting == Counting::InPlace {
                break count;
            }
            // Tokens counted in place can differ from the same text counted alone (a trimmed
            // leading space, a character split across tokens): give back the excess and
            // measure again, down to a single token, then character by character.
            if take > 1 {
                take = take.saturating_sub(count - budget).max(1);
                cut = window_end(text, &ends, pos, from, take);
                continue;
            }
            let shorter = floor_char_boundary(text, cut - 1);
            if shorter <= pos || text[pos..shorter].trim().is_empty() {
                // One character that alone has more tokens than the budget.
                break count;
            }
            cut = shorter;
        };
        windows.push(Window { range: pos..cut, tokens: count });
        // Trailing blanks would only make a window of nothing: they join this one.
        if text[cut..].trim_start().is_empty() {
            if let Some(last) = windows.last_mut() {
                last.range.end = text.len();
            }
            break;
        }
        pos = if overlap == 0 {
            cut
        } else {
            // The next window must start after this one's first non-blank byte, or both would
            // start at the same text once trimmed.
            let window = &text[pos..cut];
            let content_start = pos + (window.len() - window.trim_start().len());
            overlap_start(text, &ends, content_start, cut, overlap)
        };
    }
    windows
}

/// Where a window starting at `pos` (inside token `from`) ends after `take` tokens: at the
/// end of the last word that ends in the window's second half, else right after its last
/// token, on a character boundary and never before `pos`.
fn window_end(text: &str, ends: &[usize], pos: usize, from: usize, take: usize) -> usize {
    if ends.len() - from <= take {
        return text.len();
    }
    let bytes = text.as_bytes();
    let last = from + take - 1;
    let word_end = (from + take.div_ceil(2)..=last).rev().map(|k| ends[k]).find(|&end| {
        end > 0
            && bytes.get(end).is_some_and(u8::is_ascii_whitespace)
            && !bytes[end - 1].is_ascii_whitespace()
    });
    let cut = floor_char_boundary(text, word_end.unwrap_or(ends[last]));
    if cut <= pos { ceil_char_boundary(text, pos + 1) } else { cut }
}

/// Where the window after `window_start..cut` starts: `overlap` tokens before `cut`, moved
/// forward to the start of a word when one comes before `cut`.
fn overlap_start(text: &str, ends: &[usize], window_start: usize, cut: usize, overlap: usize) -> usize {
    let bytes = text.as_bytes();
    let after_window = ends.partition_point(|&end| end <= cut);
    let first_inside = ends.partition_point(|&end| end <= window_start);
    let start_token = after_window.saturating_sub(overlap).max(first_inside + 1);
    let candidate = if start_token == 0 { 0 } else { ends[start_token - 1] };
    let word = (candidate.max(1)..cut)
        .find(|&p| bytes[p - 1].is_ascii_whitespace() && !bytes[p].is_ascii_whitespace());
    let start = ceil_char_boundary(text, word.unwrap_or(candidate));
    // Every window must move forward, however the snapping went.
    if start <= window_start || start >= cut { cut } else { start }
}

/// `range` without the whitespace at either end, or `None` when nothing else is left.
pub(crate) fn trim(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let slice = &text[range.clone()];
    let start = range.start + (slice.len() - slice.trim_start().len());
    let end = range.start + slice.trim_end().len();
    (start < end).then_some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_drops_blank_ends() {
        assert_eq!(trim(" \n ab c\r\n", 0..9), Some(3..7));
        assert_eq!(trim("  \r\n", 0..4), None);
    }
}
