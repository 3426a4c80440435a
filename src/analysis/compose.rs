//! Text written in decomposed letters read as the composed letters a reader sees.
//!
//! Unicode spells many letters two ways: one character (`é`, `й`, `한`), or a base followed by
//! what it is made of (`e` + U+0301, `и` + U+0306, the jamo `ᄒ` `ᅡ` `ᆫ`). A reader cannot
//! tell them apart, but a search term can: the Korean of a note written on a Mac, pasted from
//! a file name (macOS keeps names decomposed) or taken from a PDF was pairs of jamo that no
//! query typed in syllables meets, and e5 reads it as other words. Each term, and the text
//! the embedders read, is put in its composed form (Unicode's canonical composition, NFC:
//! the two spellings are the same text by the standard's own rule), in documents and queries
//! alike. Text already composed, almost all of it, is checked and left as it is.

use unicode_normalization::{UnicodeNormalization, is_nfc};

/// Whether `c` continues the Hangul syllable before it when the syllable is written in
/// conjoining jamo: a vowel or a final consonant (a syllable is an initial consonant, its
/// vowels and its final consonants).
pub(super) fn continues_syllable(c: char) -> bool {
    matches!(c, '\u{1160}'..='\u{11FF}' | '\u{D7B0}'..='\u{D7FF}')
}

/// Puts `text` in its canonically composed form (NFC), in place.
pub(super) fn composed(text: &mut String) {
    if text.is_ascii() || is_nfc(text) {
        return;
    }
    *text = text.nfc().collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compose(text: &str) -> String {
        let mut text = text.to_string();
        composed(&mut text);
        text
    }

    #[test]
    fn hangul_in_jamo_becomes_syllables() {
        assert_eq!(compose("\u{1112}\u{1161}\u{11AB}\u{1100}\u{116E}\u{11A8}"), "한국");
        // A syllable of initial and vowel, then a final consonant written apart.
        assert_eq!(compose("\u{D558}\u{11AB}"), "한");
    }

    #[test]
    fn letters_with_their_marks_apart_become_one_letter() {
        assert_eq!(compose("cafe\u{0301}"), "café");
        assert_eq!(compose("\u{0438}\u{0306}"), "й");
        assert_eq!(compose("\u{304B}\u{3099}"), "が");
    }

    #[test]
    fn composed_text_is_left_as_it_is() {
        // A mark with no letter to join, and a Hangul vowel alone, are composed already.
        for text in ["backup", "한국어", "café", "所有权", "ﬁle", "x²", "ｶﾞ", " \u{0301}", "\u{1161}"]
        {
            assert_eq!(compose(text), text);
        }
    }

    #[test]
    fn the_jamo_that_continue_a_syllable_are_told() {
        assert!(continues_syllable('\u{1161}') && continues_syllable('\u{11AB}'));
        assert!(!continues_syllable('\u{1112}') && !continues_syllable('한'));
    }
}
