//! The size of an answer in tokens, estimated from the JSON that carries it, and passages
//! fitted to a token budget: kept in order while they fit, the first that does not fit cut
//! at a line to fill what is left, the rest left out.
//!
//! The estimate counts a token per four bytes of ASCII and about a token per character
//! beyond (see [`quarters`]). The crate's own cl100k counter lives in the chunker, which this
//! front end may not import, and a client's model counts with its own tokenizer anyway.

use serde::Serialize;

/// Bytes of ASCII JSON per token. On the Traefik documentation, the 2,139 chunks hold 4.3
/// bytes of text per cl100k token; the JSON around a passage (field names, quotes, escaped
/// newlines) takes more tokens per byte than prose, and four bytes a token leaves room for
/// it, so an answer errs on the small side of its budget.
const BYTES_PER_TOKEN: usize = 4;

/// Tokens the budget note takes, when the budget cuts an answer.
const NOTE_TOKENS: usize = 45;

/// A passage is cut to fit only when at least this many tokens of its text would be left;
/// a shorter stump tells a reader less than the note that more was left out. The first
/// passage of an answer is given at least this much, so that no answer comes back empty
/// for its size alone.
const MIN_CUT_TOKENS: usize = 60;

/// What a character of JSON costs, in quarters of a token: a quarter for an ASCII byte, and
/// by its UTF-8 width beyond. A Chinese or Japanese character (three bytes) is about a token
/// in the tokenizers models use (the Rust book in Chinese: 3.05 bytes of text per cl100k
/// token, against 3.84 for the Node.js docs), so it counts a token and a quarter; a
/// two-byte letter (accented Latin, Greek, Cyrillic) half a token; a four-byte one (emoji)
/// two tokens.
fn quarters(c: char) -> usize {
    match c.len_utf8() {
        1 => 1,
        2 => 2,
        3 => 5,
        _ => 8,
    }
}

/// Estimated tokens of a JSON text.
pub fn tokens(json: &str) -> usize {
    // Most answers are ASCII, which the standard library checks fast.
    let quarters: usize = if json.is_ascii() { json.len() } else { json.chars().map(quarters).sum() };
    quarters.div_ceil(BYTES_PER_TOKEN)
}

/// Estimated tokens of a value's JSON.
pub fn tokens_of(value: &impl Serialize) -> usize {
    serde_json::to_string(value).map_or(0, |json| tokens(&json))
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

/// Keeps `items` in order while their JSON fits in `budget` tokens, less `envelope`: what
/// the answer around them takes (its other fields and notes; the budget's own note is
/// counted here). The first that does not fit is cut at a line to fill what is left, when
/// enough is left; it and the rest are left out otherwise. The first item is always kept,
/// cut to [`MIN_CUT_TOKENS`] of text if need be, so that an answer never comes back empty
/// for its size alone.
pub fn fit<T: Cut>(items: Vec<T>, budget: usize, envelope: usize) -> Fitted<T> {
    let total = items.len();
    let mut left = budget.saturating_sub(envelope + NOTE_TOKENS);
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
        let text_cost = serde_json::to_string(item.text()).map_or(0, |json| tokens(&json));
        let overhead = cost.saturating_sub(text_cost);
        let mut room = left.saturating_sub(overhead);
        if kept.is_empty() {
            room = room.max(MIN_CUT_TOKENS);
        }
        if room >= MIN_CUT_TOKENS
            && let Some((text, end_line)) = cut_at_line(item.text(), room, item.start_line())
        {
            item.cut(text, end_line);
            kept.push(item);
            cut = true;
        }
        break;
    }
    Fitted { omitted: total - kept.len(), kept, cut }
}

/// The longest start of `text` whose JSON costs at most `room` tokens and that ends at a
/// line end, and the number of its last line (the text starts at `start_line`); a single
/// line too long for the room is cut at a character instead. `None` when nothing fits.
fn cut_at_line(text: &str, room: usize, start_line: u32) -> Option<(String, u32)> {
    // Two quarters for the quotes around the text.
    let mut left = (room * BYTES_PER_TOKEN).checked_sub(2)?;
    let mut end = 0;
    for (i, c) in text.char_indices() {
        let cost = if c.is_ascii() { json_escaped_len(c) } else { quarters(c) };
        if cost > left {
            break;
        }
        left -= cost;
        end = i + c.len_utf8();
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

/// Bytes an ASCII character takes in a JSON string.
fn json_escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if c < ' ' => 6,
        _ => 1,
    }
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
        let fitted = fit(items, 4000, 10);
        assert_eq!((fitted.kept.len(), fitted.omitted, fitted.cut), (2, 0, false));
        assert_eq!(fitted.note(4000), None);
    }

    #[test]
    fn the_first_passage_that_does_not_fit_is_cut_at_a_line_and_the_rest_left_out() {
        // Each item costs about 20 tokens a line; 100 lines is about 2,000 tokens.
        let items = vec![item(1, 10), item(20, 100), item(200, 10)];
        let fitted = fit(items, 1000, 10);
        assert_eq!(fitted.kept.len(), 2);
        assert_eq!(fitted.omitted, 1);
        assert!(fitted.cut);
        let cut = &fitted.kept[1];
        assert!(cut.truncated);
        let lines = cut.text.lines().count() as u32;
        assert!(lines > 5 && lines < 100, "{lines}");
        assert_eq!(cut.end_line, 20 + lines - 1);
        assert!(cut.text.lines().all(|l| l.len() == 79), "cut inside a line");
        assert!(tokens_of(&fitted.kept) + 10 + NOTE_TOKENS <= 1000, "{}", tokens_of(&fitted.kept));
        let note = fitted.note(1000).unwrap();
        assert!(note.contains("1 more left out") && note.contains("cut short"), "{note}");
    }

    #[test]
    fn a_small_remainder_is_not_worth_a_stump() {
        // The first item leaves less than MIN_CUT_TOKENS of room.
        let items = vec![item(1, 38), item(100, 50)];
        let budget = tokens_of(&items[0]) + 10 + NOTE_TOKENS + MIN_CUT_TOKENS;
        let fitted = fit(items, budget, 10);
        assert_eq!((fitted.kept.len(), fitted.omitted, fitted.cut), (1, 1, false));
    }

    #[test]
    fn a_first_passage_too_large_is_still_returned_cut() {
        // Even when the answer around it takes the whole budget.
        for envelope in [0, 100] {
            let fitted = fit(vec![item(5, 400)], 100, envelope);
            assert_eq!(fitted.kept.len(), 1);
            assert!(fitted.kept[0].truncated);
            assert_eq!(fitted.kept[0].end_line, 6, "{:?}", fitted.kept[0]);
        }
    }

    #[test]
    fn one_long_line_is_cut_at_a_character_boundary() {
        // Half a token a letter, and the quotes.
        let text = "é".repeat(100);
        let (kept, end) = cut_at_line(&text, 26, 7).unwrap();
        assert_eq!(kept.chars().count(), 51);
        assert_eq!(end, 7);
        assert_eq!(cut_at_line("abc", 0, 1), None);
        // A text that fits whole is kept whole, its last line included.
        assert_eq!(cut_at_line("a\nb", 10, 1), Some(("a\nb".to_string(), 2)));
    }

    #[test]
    fn characters_beyond_ascii_cost_more_than_their_bytes_suggest() {
        assert_eq!(tokens("abcdefgh"), 2);
        assert_eq!(tokens("\"héé\""), 2);
        // Three bytes, and about a token each.
        assert_eq!(tokens("所有权规则"), 7);
        assert_eq!(tokens("🦀"), 2);
    }
}
