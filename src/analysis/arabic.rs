//! Words in the Arabic script, spelt as a reader types them.
//!
//! Arabic and Persian write some letters more than one way, and a reader rarely types the
//! way the text does. The short vowels and doubling marks that a text writes here and there
//! (`يوماً`, `مُستخدم`) are never typed, nor the tatweel that stretches a word. Persian
//! keyboards give `ی` and `ک` where Arabic ones give `ي` and `ك`, and texts mix them. A
//! Persian word shaped by a zero-width non-joiner (`می‌شود`) is often typed joined
//! (`میشود`). Digits in the Arabic script (`٣`, `۳`) are ASCII ones to a reader typing `3`.
//! These are folded before the stemmer sees the word, so that it reads Persian letters as
//! the Arabic ones it knows, and every way of typing such a word reaches the same stem.
//!
//! Three more are folded after the stemmer: the hamza on or under an alef (`أ`, `إ`, `آ`),
//! which readers often leave out, the closing `ة`, often typed `ه`, and `ى`, typed `ي`.
//! Snowball's Arabic stemmer tells these letters apart (it cuts a closing `ة`, the
//! feminine ending, where a closing `ه` may be a pronoun), so folding them first cost the
//! Arabic Handbook's queries a tenth of BM25's MRR@10; folded after, they join the stems
//! that differ by them alone. Lucene's Arabic and Persian normalizers fold the same letters.

/// Which letters a filter folds: those the stemmer must not see ([`Stage::BeforeStemming`]),
/// or those it must ([`Stage::AfterStemming`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    BeforeStemming,
    AfterStemming,
}

/// Whether `c` may be changed at some stage: a letter, mark or digit of the Arabic block, or
/// a zero-width joiner or non-joiner.
fn is_arabic_or_joiner(c: char) -> bool {
    matches!(c, '\u{0600}'..='\u{06FF}' | '\u{200C}' | '\u{200D}')
}

/// The letter `c` is typed as at `stage`, or `None` when it is not typed at all.
fn typed(c: char, stage: Stage) -> Option<char> {
    Some(match (stage, c) {
        // The short vowels, tanween, shadda, sukun, the hamza and other marks written above
        // or below a letter, the superscript alef, the tatweel, the zero-width joiners.
        (
            Stage::BeforeStemming,
            '\u{064B}'..='\u{065F}' | '\u{0670}' | '\u{0640}' | '\u{200C}' | '\u{200D}',
        ) => {
            return None;
        }
        // Persian yeh and yeh barree; heh with yeh above and heh goal; keheh, the Persian kaf.
        (Stage::BeforeStemming, '\u{06CC}' | '\u{06D2}') => '\u{064A}',
        (Stage::BeforeStemming, '\u{06C0}' | '\u{06C1}') => '\u{0647}',
        (Stage::BeforeStemming, '\u{06A9}') => '\u{0643}',
        // Arabic-Indic and Persian digits.
        (Stage::BeforeStemming, '\u{0660}'..='\u{0669}') => char::from(b'0' + (c as u32 - 0x0660) as u8),
        (Stage::BeforeStemming, '\u{06F0}'..='\u{06F9}') => char::from(b'0' + (c as u32 - 0x06F0) as u8),
        // Alef with madda, hamza above, hamza below, wasla; alef maksura; teh marbuta.
        (Stage::AfterStemming, '\u{0622}' | '\u{0623}' | '\u{0625}' | '\u{0671}') => '\u{0627}',
        (Stage::AfterStemming, '\u{0649}') => '\u{064A}',
        (Stage::AfterStemming, '\u{0629}') => '\u{0647}',
        (_, other) => other,
    })
}

/// `word` as it is typed at `stage` ([`typed`] for each letter); borrowed when nothing
/// changes.
pub(super) fn as_typed(word: &str, stage: Stage) -> std::borrow::Cow<'_, str> {
    if word.is_ascii() || !word.chars().any(|c| is_arabic_or_joiner(c) && typed(c, stage) != Some(c)) {
        return std::borrow::Cow::Borrowed(word);
    }
    std::borrow::Cow::Owned(word.chars().filter_map(|c| typed(c, stage)).collect())
}

/// The spelling of each term in the Arabic script as [`as_typed`] at its stage, as the
/// rewrite of each term ([`super::rewrite::EachTerm`]). A term left without letters (a lone
/// mark) is emptied, for the chain's last filter to drop.
#[derive(Clone, Copy, Debug)]
pub(super) struct AsTyped(pub(super) Stage);

impl super::rewrite::Rewrite for AsTyped {
    fn rewrite(&self, term: &mut String) {
        if let std::borrow::Cow::Owned(typed) = as_typed(term, self.0) {
            *term = typed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `word` folded at both stages, with no stemmer between them.
    fn typed_word(word: &str) -> String {
        as_typed(&as_typed(word, Stage::BeforeStemming), Stage::AfterStemming).into_owned()
    }

    #[test]
    fn marks_that_readers_do_not_type_go_before_the_stemmer() {
        assert_eq!(as_typed("يوماً", Stage::BeforeStemming), "يوما");
        assert_eq!(as_typed("مُستَخدِم", Stage::BeforeStemming), "مستخدم");
        assert_eq!(as_typed("الـشبكة", Stage::BeforeStemming), "الشبكة");
        // The letters the stemmer tells apart are left to it.
        assert_eq!(as_typed("إعدادات", Stage::BeforeStemming), "إعدادات");
        assert_eq!(as_typed("الشبكة", Stage::BeforeStemming), "الشبكة");
    }

    #[test]
    fn each_way_of_typing_an_arabic_word_is_one_spelling_once_stemmed() {
        assert_eq!(typed_word("إعدادات"), "اعدادات");
        assert_eq!(typed_word("أداة"), typed_word("اداه"));
        assert_eq!(typed_word("الشبكة"), typed_word("الشبكه"));
        assert_eq!(typed_word("مستوى"), typed_word("مستوي"));
        // Only after stemming.
        assert_eq!(as_typed("أداة", Stage::AfterStemming), "اداه");
    }

    #[test]
    fn persian_letters_meet_their_arabic_twins_before_the_stemmer() {
        assert_eq!(as_typed("کاربری", Stage::BeforeStemming), as_typed("كاربري", Stage::BeforeStemming));
        // A word shaped by a zero-width non-joiner is the word typed joined.
        assert_eq!(
            as_typed("می\u{200C}شود", Stage::BeforeStemming),
            as_typed("میشود", Stage::BeforeStemming)
        );
        // Arabic-Indic and Persian digits are ASCII digits.
        assert_eq!(as_typed("٣٠", Stage::BeforeStemming), "30");
        assert_eq!(as_typed("۳۰", Stage::BeforeStemming), "30");
    }

    #[test]
    fn other_scripts_are_left_as_they_are() {
        for word in ["backup", "sauvegardé", "резервная", "备份", "גיבוי"] {
            for stage in [Stage::BeforeStemming, Stage::AfterStemming] {
                assert!(matches!(as_typed(word, stage), std::borrow::Cow::Borrowed(_)), "{word}");
            }
        }
    }
}
