//! cl100k token counting that never feeds the tokenizer more than a bounded piece at once.
//!
//! The byte-pair merge of a piece without whitespace costs time quadratic in its length,
//! which a megabyte-long run would make minutes. Every call here therefore cuts its input
//! into segments of at most [`SEGMENT_BYTES`], preferring cut points where the tokenizer's
//! own pre-split would cut anyway, so that counts stay exact for ordinary text and merely
//! close for degenerate runs.

use super::pieces;

/// Longest piece of text handed to the tokenizer in one call.
const SEGMENT_BYTES: usize = 8 * 1024;

/// Exact cl100k token count of `text` (close rather than exact for runs longer than a
/// segment that contain no whitespace).
pub(crate) fn count(text: &str) -> usize {
    segments(text).map(pieces::count).sum()
}

/// Like [`count`], but stops once the count exceeds `cap`: the answer is exact when it is
/// at most `cap`, and some number above `cap` otherwise. Lets the splitter ask "does this
/// fit?" about a megabyte-long block without tokenizing all of it.
pub(crate) fn count_capped(text: &str, cap: usize) -> usize {
    // Most oversized texts show it within their first few `cap` tokens' worth of bytes; only
    // the others pay for a full segment.
    let probe = cap.saturating_mul(6).clamp(256, SEGMENT_BYTES);
    if text.len() > probe {
        let head = &text[..segment_end(text, probe)];
        let head_count = pieces::count(head);
        if head_count > cap {
            return head_count;
        }
    }
    let mut total = 0;
    for segment in segments(text) {
        total += pieces::count(segment);
        if total > cap {
            break;
        }
    }
    total
}

/// Byte offsets, relative to `text`, at which each token of `text` ends, in order.
///
/// A token may end inside a multi-byte character (cl100k splits some characters across
/// tokens), so callers must snap these offsets to character boundaries before slicing.
pub(crate) fn token_ends(text: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut base = 0;
    for segment in segments(text) {
        pieces::push_token_ends(segment, base, &mut ends);
        base += segment.len();
    }
    ends
}

/// Cuts `text` into consecutive segments of at most [`SEGMENT_BYTES`] (a segment is only
/// longer when a single character is, which cannot happen for UTF-8).
fn segments(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = segment_end(rest, SEGMENT_BYTES);
        let (segment, tail) = rest.split_at(cut);
        rest = tail;
        Some(segment)
    })
}

/// Where the first segment of `text` ends, for segments of at most `size` bytes.
fn segment_end(text: &str, size: usize) -> usize {
    if text.len() <= size {
        return text.len();
    }
    let bytes = text.as_bytes();
    let limit = floor_char_boundary(text, size);
    // The tokenizer's pre-split never joins a word with the space before it to the text
    // before that space, nor a line break to the word after it, so cutting right before
    // " word" or right after "\n" reproduces its pieces exactly.
    let floor = size / 2;
    for p in (floor..limit).rev() {
        let prev = bytes[p - 1];
        let here = bytes[p];
        let next = bytes.get(p + 1).copied().unwrap_or(b' ');
        let space_before_word = here == b' ' && !prev.is_ascii_whitespace() && !next.is_ascii_whitespace();
        let after_line_break = prev == b'\n' && !here.is_ascii_whitespace();
        if (space_before_word || after_line_break) && text.is_char_boundary(p) {
            return p;
        }
    }
    if limit == 0 {
        // Unreachable for UTF-8 (a character is at most four bytes), but a segment must
        // never be empty or the iterator would not advance.
        return ceil_char_boundary(text, 1);
    }
    limit
}

/// The largest character boundary of `text` at or below `index`.
pub(crate) fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest character boundary of `text` at or above `index`.
pub(crate) fn ceil_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(text: &str) -> usize {
        tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
    }

    #[test]
    fn count_is_exact_for_text_longer_than_a_segment() {
        let text = "The quick brown fox, jumps over the lazy dog.\n".repeat(600);
        assert!(text.len() > 2 * SEGMENT_BYTES);
        assert_eq!(count(&text), exact(&text));
    }

    #[test]
    fn capped_count_is_exact_under_the_cap_and_above_it_otherwise() {
        let text = "word ".repeat(5000);
        assert_eq!(count_capped("a few words", 100), exact("a few words"));
        assert!(count_capped(&text, 100) > 100);
        assert!(count_capped(&text, 100) < exact(&text));
    }

    #[test]
    fn segments_tile_the_text_on_char_boundaries() {
        let text = "é".repeat(3 * SEGMENT_BYTES);
        let joined: String = segments(&text).collect();
        assert_eq!(joined, text);
        assert!(segments(&text).all(|s| s.len() <= SEGMENT_BYTES));
    }

    #[test]
    fn token_ends_tile_the_text() {
        let text = "naïve café 🙂 x\n".repeat(1000);
        let ends = token_ends(&text);
        assert_eq!(ends.len(), exact(&text));
        assert_eq!(ends.last().copied(), Some(text.len()));
        assert!(ends.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn char_boundaries_snap_in_the_right_direction() {
        let text = "aé";
        assert_eq!(floor_char_boundary(text, 2), 1);
        assert_eq!(ceil_char_boundary(text, 2), 3);
        assert_eq!(floor_char_boundary(text, 99), 3);
    }
}
