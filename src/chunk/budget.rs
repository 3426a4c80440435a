//! What a chunk's budget counts: cl100k tokens, with a Chinese, Japanese or Korean letter
//! counting two thirds of one.
//!
//! cl100k spends about one token on a CJK character (0.97 per character over the Chinese
//! Rust book), where one token of English is about three quarters of a word. So 400 tokens
//! of Chinese hold fewer words than 400 tokens of English, and far less of what the
//! embedding model reads: e5's multilingual vocabulary takes 0.73 of its tokens per Chinese
//! character but 1.3 per cl100k token of English, so such a chunk of Chinese is about 300
//! of e5's tokens where one of English is about 530. Counting each CJK letter as two thirds
//! of a token makes a chunk of Chinese about 600 tokens (some 450 of e5's), which found
//! more answers in the top five on the Chinese dev queries (docs/languages.md), while text
//! without CJK letters is counted exactly as before.
//!
//! A blob (a run of 100 or more base64 characters: a data URI's payload, the state of a
//! playground link, a key) counts a unit for every 16 of its bytes instead of its tokens.
//! Nothing of it is searched or embedded (the searched text leaves it out), yet cl100k
//! spends a token on about every three of its characters: the Vue docs' "try it in the
//! playground" links (`[在演练场中尝试一下](https://play.vuejs.org/#eNp9kU…)`) take about 250
//! tokens each, two to an example, and cut a section of a hundred tokens of prose and code
//! into chunks that each hold a part of it. A unit per 16 bytes still bounds what a chunk
//! holds of a blob: a pasted image is cut into chunks of it alone, which are not indexed.
//!
//! A text stored in decomposed letters is counted as its composed form (Unicode's NFC), which
//! is what the analysis and the embedders read: Korean written in jamo, as a Mac keeps file
//! names and as some PDFs give it, spends three characters and about twice the tokens on a
//! syllable, and was cut into chunks of half the text.
//!
//! The counts stored with a chunk stay cl100k tokens: they estimate what an LLM is billed,
//! and they are what a user reads in `token_count`.

use std::borrow::Cow;
use std::ops::Range;

use unicode_normalization::{UnicodeNormalization, is_nfc};

use super::tokens;

/// A CJK letter is counted as `1 − 1/CJK_DISCOUNT_DIVISOR` of a token: every
/// `CJK_DISCOUNT_DIVISOR` of them take one token off the count. Measured on the Chinese dev
/// queries against 5 (four fifths of a token), 4, 10 and no discount.
const CJK_DISCOUNT_DIVISOR: usize = 3;

/// A text's measure against the budget: its cl100k tokens and its budget units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measure {
    /// cl100k tokens (capped as by [`tokens::count_capped`] for [`measure_capped`]).
    pub tokens: usize,
    /// What the budget counts: `tokens` less the CJK discount.
    pub units: usize,
}

/// How many tokens the CJK letters of `text` take off its count.
pub(crate) fn discount(text: &str) -> usize {
    // Most text has no CJK letter at all: a byte scan settles it without decoding.
    if text.is_ascii() {
        return 0;
    }
    text.chars().filter(|&c| is_cjk_letter(c)).count() / CJK_DISCOUNT_DIVISOR
}

/// The budget units of `text`: its cl100k tokens less the CJK discount.
pub(crate) fn units(text: &str) -> usize {
    measure(text).units
}

/// `text` as its budget counts it: composed, when a letter in it is stored decomposed (see
/// the module's documentation). Almost every text is composed already, and is borrowed.
fn as_counted(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || is_nfc(text) { Cow::Borrowed(text) } else { Cow::Owned(text.nfc().collect()) }
}

/// The exact measure of `text`.
pub(crate) fn measure(text: &str) -> Measure {
    if let Cow::Owned(composed) = as_counted(text) {
        return Measure { tokens: tokens::count(text), units: measure(&composed).units };
    }
    let tokens = tokens::count(text);
    let units = match set_blobs_apart(text) {
        None => tokens.saturating_sub(discount(text)),
        Some((rest, blob_units)) => tokens::count(&rest).saturating_sub(discount(&rest)) + blob_units,
    };
    Measure { tokens, units }
}

/// Like [`measure`], but stops counting once the units exceed `cap`: exact when the units
/// are at most `cap`, some number above `cap` otherwise.
pub(crate) fn measure_capped(text: &str, cap: usize) -> Measure {
    if let Cow::Owned(composed) = as_counted(text) {
        let units = measure_capped(&composed, cap).units;
        return Measure { tokens: if units <= cap { tokens::count(text) } else { units }, units };
    }
    let Some((rest, blob_units)) = set_blobs_apart(text) else {
        let discount = discount(text);
        let tokens = tokens::count_capped(text, cap.saturating_add(discount));
        return Measure { tokens, units: tokens.saturating_sub(discount) };
    };
    let discount = discount(&rest);
    let rest_cap = cap.saturating_sub(blob_units).saturating_add(discount);
    let units = tokens::count_capped(&rest, rest_cap).saturating_sub(discount) + blob_units;
    // Within the cap, the text is a chunk or a part of one, whose tokens are what it stores;
    // past it, a blob's bytes may be a megabyte of an image, not worth its tokens.
    let tokens = if units <= cap { tokens::count(text) } else { units };
    Measure { tokens, units }
}

/// Each blob counts a unit for this many of its bytes.
const BLOB_BYTES_PER_UNIT: usize = 16;

/// The fewest base64 characters in a row that make a blob, as the searched text reads them.
const MIN_BLOB_BYTES: usize = 100;

/// `text` with each blob replaced by a blank, and the units its blobs count; `None` when it
/// has no blob, as almost every text has none.
fn set_blobs_apart(text: &str) -> Option<(String, usize)> {
    if text.len() < MIN_BLOB_BYTES {
        return None;
    }
    let blobs = blobs(text);
    if blobs.is_empty() {
        return None;
    }
    let mut rest = String::with_capacity(text.len());
    let (mut at, mut units) = (0, 0);
    for blob in blobs {
        rest.push_str(&text[at..blob.start]);
        rest.push(' ');
        units += blob.len().div_ceil(BLOB_BYTES_PER_UNIT);
        at = blob.end;
    }
    rest.push_str(&text[at..]);
    Some((rest, units))
}

/// The byte ranges of `text`'s blobs: runs of [`MIN_BLOB_BYTES`] or more base64 characters
/// (letters and digits of ASCII, `+` and `/`), with the `=` that pads their end (two at most).
fn blobs(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut start = None;
    for at in 0..=bytes.len() {
        let base64 = bytes.get(at).is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
        match (base64, start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                if at - from >= MIN_BLOB_BYTES {
                    let padding = bytes[at..].iter().take(2).take_while(|&&b| b == b'=').count();
                    found.push(from..at + padding);
                }
                start = None;
            }
            _ => {}
        }
    }
    found
}

/// The budget units of `text`, counted no further than just past `cap` (see
/// [`measure_capped`]).
pub(crate) fn units_capped(text: &str, cap: usize) -> usize {
    measure_capped(text, cap).units
}

/// Whether `c` is a letter of Chinese, Japanese or Korean: Han ideographs, kana and Hangul
/// (their punctuation is not: it carries no words).
fn is_cjk_letter(c: char) -> bool {
    matches!(c,
        '\u{3005}'..='\u{3007}'           // 々 〆 〇
        | '\u{3040}'..='\u{30FF}'         // hiragana, katakana
        | '\u{3131}'..='\u{318E}'         // Hangul compatibility jamo
        | '\u{3400}'..='\u{4DBF}'         // Han extension A
        | '\u{4E00}'..='\u{9FFF}'         // Han
        | '\u{AC00}'..='\u{D7AF}'         // Hangul syllables
        | '\u{1100}'..='\u{11FF}'         // Hangul jamo
        | '\u{F900}'..='\u{FAFF}'         // Han compatibility
        | '\u{FF66}'..='\u{FF9F}'         // half-width katakana
        | '\u{20000}'..='\u{323AF}') // Han extensions B to H
        && c.is_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_cjk_letters_is_counted_in_plain_tokens() {
        for text in ["The quick brown fox jumps over the lazy dog.", "naïve café — Größe", "Москва", ""]
        {
            assert_eq!(measure(text), Measure { tokens: tokens::count(text), units: tokens::count(text) });
        }
    }

    #[test]
    fn every_three_cjk_letters_take_a_token_off() {
        let text = "所有权是Rust最独特的功能，它让Rust无需垃圾回收即可保障内存安全。";
        let letters = text.chars().filter(|&c| is_cjk_letter(c)).count();
        assert_eq!(letters, 26, "punctuation and Latin letters are not CJK letters");
        let m = measure(text);
        assert_eq!(m.tokens, tokens::count(text));
        assert_eq!(m.units, m.tokens - 8);
    }

    #[test]
    fn letters_stored_decomposed_count_as_the_composed_ones() {
        use unicode_normalization::UnicodeNormalization;
        let composed = "백업은 매일 밤 자동으로 실행되며 삼십 일 동안 보관됩니다. ".repeat(20);
        let decomposed: String = composed.nfd().collect();
        assert_ne!(decomposed, composed);
        let (m, nfc) = (measure(&decomposed), measure(&composed));
        assert_eq!(m.units, nfc.units);
        assert_eq!(m.tokens, tokens::count(&decomposed), "what a chunk stores is its tokens");
        assert!(m.tokens > nfc.tokens, "{m:?} {nfc:?}");
        assert_eq!(measure_capped(&decomposed, nfc.units), m);
        assert!(measure_capped(&decomposed, 10).units > 10);
        // Composed text of which Unicode's quick check is unsure (a mark that joins nothing,
        // syllables that a final jamo could still join) is counted as it is.
        for text in ["a list: \u{0301} and \u{3099}", "\u{1161}\u{1162}", "नमस्ते", "한국어"] {
            let tokens = tokens::count(text);
            assert_eq!(measure(text), Measure { tokens, units: tokens - discount(text) });
            assert_eq!(measure_capped(text, 100), measure(text));
        }
    }

    #[test]
    fn a_capped_measure_is_exact_under_the_cap_and_above_it_otherwise() {
        let text = "所有权系统保障内存安全。".repeat(100);
        let exact = measure(&text);
        assert_eq!(measure_capped(&text, exact.units), exact);
        assert!(measure_capped(&text, 50).units > 50);
    }

    #[test]
    fn a_blob_counts_a_unit_for_every_sixteen_bytes() {
        let state = "eyJBcHAudnVlIjoiPHNjcmlwdCBzZXR1cD5cbmltcG9ydCB7IHJlZiB9IGZyb20gJ3Z1ZSc".repeat(6);
        let link = format!("[在演练场中尝试一下](https://play.vuejs.org/#{state}==)");
        let m = measure(&link);
        assert_eq!(m.tokens, tokens::count(&link), "what a chunk stores is its tokens");
        let rest = "[在演练场中尝试一下](https://play.vuejs.org/# )";
        let blob_units = (state.len() + 2).div_ceil(16);
        assert_eq!(m.units, measure(rest).units + blob_units);
        assert!(m.units * 4 < m.tokens, "{m:?}");
        for cap in [m.units, m.units + 10] {
            assert_eq!(measure_capped(&link, cap), m);
        }
        assert!(measure_capped(&link, m.units - 1).units > m.units - 1);
        // A megabyte of an image is not tokenized to learn that it does not fit.
        let image = format!("![](data:image/png;base64,{})", "iVBORw0KGgo".repeat(100_000));
        let over = measure_capped(&image, 400);
        assert!(over.units > 400 && over.tokens == over.units, "{over:?}");
        // A run of 99 is no blob, nor are words, however long a line of them.
        let short = "A".repeat(99);
        assert_eq!(measure(&short).units, tokens::count(&short));
        let words = "a b ".repeat(100);
        assert_eq!(measure(&words).units, tokens::count(&words));
        assert_eq!(blobs(&format!("x {} y", "Q".repeat(100))), vec![Range { start: 2, end: 102 }]);
        assert_eq!(blobs(&format!("{}=== y", "Q".repeat(100))), vec![Range { start: 0, end: 102 }]);
    }
}
