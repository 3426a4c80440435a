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
//! The counts stored with a chunk stay cl100k tokens: they estimate what an LLM is billed,
//! and they are what a user reads in `token_count`.

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

/// The exact measure of `text`.
pub(crate) fn measure(text: &str) -> Measure {
    let tokens = tokens::count(text);
    Measure { tokens, units: tokens.saturating_sub(discount(text)) }
}

/// Like [`measure`], but stops counting once the units exceed `cap`: exact when the units
/// are at most `cap`, some number above `cap` otherwise.
pub(crate) fn measure_capped(text: &str, cap: usize) -> Measure {
    let discount = discount(text);
    let tokens = tokens::count_capped(text, cap.saturating_add(discount));
    Measure { tokens, units: tokens.saturating_sub(discount) }
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
    fn a_capped_measure_is_exact_under_the_cap_and_above_it_otherwise() {
        let text = "所有权系统保障内存安全。".repeat(100);
        let exact = measure(&text);
        assert_eq!(measure_capped(&text, exact.units), exact);
        assert!(measure_capped(&text, 50).units > 50);
    }
}
