//! The size of an answer in tokens, estimated from the JSON that carries it, and passages
//! fitted to a token budget: kept in order while they fit, the first that does not fit cut
//! at a line to fill what is left, the rest left out.
//!
//! The estimate is one token per four bytes of JSON. The crate's own cl100k counter lives in
//! the chunker, which this front end may not import, and a client's model counts with its
//! own tokenizer anyway.

use serde::Serialize;

/// Bytes of JSON per token. On the Traefik documentation, the 2,139 chunks hold 4.3 bytes
/// of text per cl100k token; the JSON around a passage (field names, quotes, escaped
/// newlines) takes more tokens per byte than prose, and four bytes a token leaves room for
/// it, so an answer errs on the small side of its budget.
const BYTES_PER_TOKEN: usize = 4;

/// Tokens an answer takes beside its passages: its own field names, counts and a note.
const ENVELOPE_TOKENS: usize = 50;

/// A passage is cut to fit only when at least this many tokens of its text would be left;
/// a shorter stump tells a reader less than the note that more was left out.
const MIN_CUT_TOKENS: usize = 60;

/// Estimated tokens of a text of `bytes` bytes.
pub fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// Estimated tokens of a value's JSON.
pub fn tokens_of(value: &impl Serialize) -> usize {
    tokens(serde_json::to_vec(value).map_or(0, |v| v.len()))
}

/// A passage with a text that may be cut short at a line.
pub trait Cut: Serialize {
    fn text(&self) -> &str;
    fn start_line(&self) -> u32;
    /// Keeps only `text`, the passage's lines up to `end_line`, and marks it cut.
    fn cut(&mut self, text: String, end_line: u32);
}

/// Implements [`Cut`] for structs whose `text`, `start_line`, `end_line` and `truncated`
/// fields hold the passage.
macro_rules! cut_by_fields {
    ($($shape:ty),+ $(,)?) => {$(
        impl $crate::mcp::budget::Cut for $shape {
            fn text(&self) -> &str {
                &self.text
            }
            fn start_line(&self) -> u32 {
                self.start_line
            }
            fn cut(&mut self, text: String, end_line: u32) {
                self.text = text;
                self.end_line = end_line;
                self.truncated = true;
            }
        }
    )+};
}
pub(super) use cut_by_fields;

/// Passages fitted to a budget.
#[derive(Debug)]
pub struct Fitted<T> {
    pub kept: Vec<T>,
    /// Passages left out.
    pub omitted: usize,
    /// The last passage kept was cut short.
    pub cut: bool,
}

impl<T> Fitted<T> {
    /// What to tell the reader about the budget, if it cut anything.
    pub fn note(&self, budget: usize) -> Option<String> {
        if self.omitted == 0 && !self.cut {
            return None;
        }
        let mut parts = Vec::new();
        if self.omitted > 0 {
            parts.push(format!("{} more left out", self.omitted));
        }
        if self.cut {
            parts.push("the last one cut short (`truncated`)".to_string());
        }
        Some(format!(
            "{} to stay within max_tokens = {budget}: raise max_tokens (up to 50000) to see more",
            parts.join(" and ")
        ))
    }
}

/// Keeps `items` in order while their JSON fits in `budget` tokens. The first that does not
/// fit is cut at a line to fill what is left, when enough is left (or when nothing is kept
/// yet, so that an answer never comes back empty for its size alone); it and the rest are
/// left out otherwise.
pub fn fit<T: Cut>(items: Vec<T>, budget: usize) -> Fitted<T> {
    let total = items.len();
    let mut left = budget.saturating_sub(ENVELOPE_TOKENS);
    let mut kept = Vec::with_capacity(total);
    let mut cut = false;
    for mut item in items {
        let cost = tokens_of(&item);
        if cost <= left {
            left -= cost;
            kept.push(item);
            continue;
        }
        // The text's share of the cost, as JSON (quotes and escapes included).
        let text_json = serde_json::to_vec(item.text()).map_or(0, |v| v.len()).max(1);
        let overhead = cost.saturating_sub(tokens(text_json));
        let room = left.saturating_sub(overhead);
        let min = if kept.is_empty() { 1 } else { MIN_CUT_TOKENS };
        if room >= min {
            // Escapes make JSON longer than the text: scale the room back to raw bytes.
            let raw = item.text().len();
            let max_bytes = room * BYTES_PER_TOKEN * raw / text_json;
            if let Some((text, end_line)) = cut_at_line(item.text(), max_bytes, item.start_line()) {
                item.cut(text, end_line);
                kept.push(item);
                cut = true;
            }
        }
        break;
    }
    Fitted { omitted: total - kept.len(), kept, cut }
}

/// The longest start of `text` within `max_bytes` that ends at a line end, and the number of
/// its last line (the text starts at `start_line`); a single line too long for the room is
/// cut at a character instead. `None` when nothing fits.
fn cut_at_line(text: &str, max_bytes: usize, start_line: u32) -> Option<(String, u32)> {
    if max_bytes == 0 {
        return None;
    }
    let mut end = max_bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    let kept = match head.rfind('\n') {
        // Blank lines at the cut would only stretch the line range.
        Some(i) if i > 0 && end < text.len() => head[..i].trim_end_matches(['\r', '\n']),
        _ => head,
    };
    if kept.is_empty() {
        return None;
    }
    let lines = u32::try_from(kept.matches('\n').count()).unwrap_or(u32::MAX);
    Some((kept.to_string(), start_line.saturating_add(lines)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Serialize)]
    struct Item {
        start_line: u32,
        end_line: u32,
        text: String,
        truncated: bool,
    }

    cut_by_fields!(Item);

    /// A passage of `lines` lines of 79 letters each (80 bytes with the newline).
    fn item(start_line: u32, lines: u32) -> Item {
        let text = (0..lines).map(|_| "a".repeat(79)).collect::<Vec<_>>().join("\n");
        Item { start_line, end_line: start_line + lines - 1, text, truncated: false }
    }

    #[test]
    fn everything_is_kept_when_it_fits() {
        let items = vec![item(1, 2), item(10, 3)];
        let fitted = fit(items, 4000);
        assert_eq!((fitted.kept.len(), fitted.omitted, fitted.cut), (2, 0, false));
        assert_eq!(fitted.note(4000), None);
    }

    #[test]
    fn the_first_passage_that_does_not_fit_is_cut_at_a_line_and_the_rest_left_out() {
        // Each item costs about 20 tokens a line; 100 lines is about 2,000 tokens.
        let items = vec![item(1, 10), item(20, 100), item(200, 10)];
        let fitted = fit(items, 1000);
        assert_eq!(fitted.kept.len(), 2);
        assert_eq!(fitted.omitted, 1);
        assert!(fitted.cut);
        let cut = &fitted.kept[1];
        assert!(cut.truncated);
        let lines = cut.text.lines().count() as u32;
        assert!(lines > 5 && lines < 100, "{lines}");
        assert_eq!(cut.end_line, 20 + lines - 1);
        assert!(cut.text.lines().all(|l| l.len() == 79), "cut inside a line");
        assert!(tokens_of(&fitted.kept) + ENVELOPE_TOKENS <= 1000, "{}", tokens_of(&fitted.kept));
        let note = fitted.note(1000).unwrap();
        assert!(note.contains("1 more left out") && note.contains("cut short"), "{note}");
    }

    #[test]
    fn a_small_remainder_is_not_worth_a_stump() {
        // The first item leaves less than MIN_CUT_TOKENS of room.
        let items = vec![item(1, 38), item(100, 50)];
        let fitted = fit(items, 900);
        assert_eq!((fitted.kept.len(), fitted.omitted, fitted.cut), (1, 1, false));
    }

    #[test]
    fn a_first_passage_too_large_is_still_returned_cut() {
        let fitted = fit(vec![item(5, 400)], 100);
        assert_eq!(fitted.kept.len(), 1);
        assert!(fitted.kept[0].truncated);
        assert!(fitted.kept[0].end_line >= 5);
    }

    #[test]
    fn one_long_line_is_cut_at_a_character_boundary() {
        let text = "é".repeat(100);
        let (kept, end) = cut_at_line(&text, 51, 7).unwrap();
        assert_eq!(kept.len(), 50);
        assert_eq!(end, 7);
        assert_eq!(cut_at_line("abc", 0, 1), None);
        // A text that fits whole is kept whole, its last line included.
        assert_eq!(cut_at_line("a\nb", 10, 1), Some(("a\nb".to_string(), 2)));
    }
}
