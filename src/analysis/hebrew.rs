//! Words in the Hebrew script without their points, as readers type them.
//!
//! Hebrew is written and typed without its vowels, but a text may give them: the niqqud
//! (vowel points, the dagesh, the dots of shin and sin) in poetry, prayer books, children's
//! books, dictionaries and the texts studied from them, and the cantillation marks of
//! Scripture besides; Yiddish writes some of its vowels with them (`אַ`, `פֿ`). No keyboard
//! a reader searches from gives them, so `בְּרֵאשִׁית` was a term that `בראשית` never met, and a
//! cantillation mark, which is no letter, cut a word in two. Every language's chain drops
//! them, as Arabic's short vowels ([`super::arabic`]), and they continue a word rather than
//! end it (`code.rs`). The letters, and the marks that are punctuation (maqaf, sof pasuq),
//! are kept.

/// Whether `c` is a point or cantillation mark of the Hebrew block.
pub(super) fn is_point(c: char) -> bool {
    matches!(
        c,
        '\u{0591}'..='\u{05BD}' | '\u{05BF}' | '\u{05C1}' | '\u{05C2}' | '\u{05C4}' | '\u{05C5}' | '\u{05C7}'
    )
}

/// `word` without its Hebrew points, in place.
pub(super) fn unpointed(word: &mut String) {
    if !word.is_ascii() && word.chars().any(is_point) {
        word.retain(|c| !is_point(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(word: &str) -> String {
        let mut word = word.to_string();
        unpointed(&mut word);
        word
    }

    #[test]
    fn points_and_cantillation_marks_go() {
        assert_eq!(read("בְּרֵאשִׁית"), "בראשית");
        assert_eq!(read("הַשָּׁמַיִם"), "השמים");
        // Cantillation: a word of Genesis 1:1 as Scripture gives it.
        assert_eq!(read("בָּרָ֣א"), "ברא");
        // Yiddish's pointed alef.
        assert_eq!(read("מאַמע"), "מאמע");
    }

    #[test]
    fn letters_punctuation_and_other_scripts_stay() {
        for word in ["בראשית", "־", "׃", "backup", "يوماً", "café"] {
            assert_eq!(read(word), word);
        }
    }
}
