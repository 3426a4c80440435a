//! Thai, Lao, Khmer and Myanmar text cut into words by the dictionaries of ICU.
//!
//! These scripts, like Chinese and Japanese, write the words of a phrase without spaces
//! between them: a space ends a phrase or a sentence. A run of their letters is therefore a
//! phrase, which no query repeats whole, and a query's word inside it would match nothing.
//! Unlike Han letters, their letters spell sounds, so pairs of them (the CJK approach, see
//! [`super::cjk`]) are as vague as pairs of Latin letters would be. Each run is cut at the
//! word boundaries that ICU's dictionary for its script finds instead (`การสำรองข้อมูล` →
//! `การ`, `สำรอง`, `ข้อมูล`), the way Lucene's Thai tokenizer and Elasticsearch's ICU
//! tokenizer read these languages, and a query is cut the same way.
//!
//! Only these four scripts' dictionaries are built into the binary (about 1 MB); Chinese and
//! Japanese have their pairs, and ICU's dictionary for them (2 MB more) is left out.

use std::sync::LazyLock;

use icu_provider::prelude::{DataError, DataErrorKind, DataMarker, DataProvider, DataRequest, DataResponse};
use icu_segmenter::WordSegmenter;
use icu_segmenter::options::WordBreakOptions;
use icu_segmenter::provider::{
    Baked, SegmenterBreakGraphemeClusterV1, SegmenterBreakWordOverrideV1, SegmenterBreakWordV1,
    SegmenterDictionaryAutoV2, SegmenterDictionaryExtendedV2,
};

/// Whether `c` belongs to a run of Thai, Lao, Khmer or Myanmar text: a letter, digit, vowel
/// sign or other mark of these scripts, but not their punctuation, which ends a run.
pub(super) fn is_unspaced(c: char) -> bool {
    let in_block = matches!(c,
        '\u{0E01}'..='\u{0E7F}'       // Thai
        | '\u{0E80}'..='\u{0EFF}'     // Lao
        | '\u{1000}'..='\u{109F}'     // Myanmar
        | '\u{1780}'..='\u{17FF}'     // Khmer
        | '\u{19E0}'..='\u{19FF}'     // Khmer symbols
        | '\u{A9E0}'..='\u{A9FF}'     // Myanmar extended B
        | '\u{AA60}'..='\u{AA7F}'); // Myanmar extended A
    in_block
        && !matches!(c,
            '\u{0E3F}'                    // Thai baht sign
            | '\u{0E4F}' | '\u{0E5A}' | '\u{0E5B}' // Thai fongman, angkhankhu, khomut
            | '\u{104A}'..='\u{104F}'     // Myanmar little section, section and symbols
            | '\u{17D4}'..='\u{17D6}'     // Khmer khan, bariyoosan, camnuc pii kuuh
            | '\u{17D8}'..='\u{17DB}') // Khmer beyyal, phnaek muan, koomuut, riel sign
}

/// The words of `text[start..end]`, a run of [`is_unspaced`] characters, as byte ranges of
/// `text`, in order. What the dictionary does not know is cut into the pieces ICU's rules
/// give it, so no letter of the run is lost. A word starts with a letter or digit, as every
/// term does: a mark that ICU left at the start of a piece (a stray tone mark) is not part
/// of it.
pub(super) fn words(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let run = &text[start..end];
    let mut breaks = SEGMENTER.as_borrowed().segment_str(run);
    let mut from = breaks.next().unwrap_or(0);
    breaks
        .filter_map(|to| {
            let piece = &run[from..to];
            let word = piece.find(char::is_alphanumeric).map(|first| (start + from + first, start + to));
            from = to;
            word
        })
        .collect()
}

/// ICU's word segmenter with the dictionaries of the four scripts.
static SEGMENTER: LazyLock<WordSegmenter> = LazyLock::new(|| {
    WordSegmenter::try_new_dictionary_unstable(&FourScripts, WordBreakOptions::default())
        .expect("the built-in word break data loads")
});

/// ICU's built-in data, less the Chinese and Japanese dictionary: asked for it, it answers
/// that it has none, which ICU accepts, and the linker then leaves that dictionary out.
struct FourScripts;

macro_rules! built_in {
    ($($marker:ty),*) => {$(
        impl DataProvider<$marker> for FourScripts {
            fn load(&self, request: DataRequest) -> Result<DataResponse<$marker>, DataError> {
                Baked.load(request)
            }
        }
    )*};
}

built_in!(
    SegmenterBreakWordV1,
    SegmenterBreakWordOverrideV1,
    SegmenterDictionaryExtendedV2,
    SegmenterBreakGraphemeClusterV1
);

impl DataProvider<SegmenterDictionaryAutoV2> for FourScripts {
    fn load(&self, request: DataRequest) -> Result<DataResponse<SegmenterDictionaryAutoV2>, DataError> {
        Err(DataErrorKind::IdentifierNotFound.with_req(SegmenterDictionaryAutoV2::INFO, request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> Vec<&str> {
        words(text, 0, text.len()).into_iter().map(|(from, to)| &text[from..to]).collect()
    }

    #[test]
    fn a_thai_phrase_is_cut_into_its_words() {
        assert_eq!(cut("การสำรองข้อมูล"), ["การ", "สำรอง", "ข้อมูล"]);
        assert_eq!(cut("ผู้ดูแลระบบ"), ["ผู้", "ดูแล", "ระบบ"]);
        // A query's words are cut as they are in a longer phrase.
        assert_eq!(cut("สำรองข้อมูล"), ["สำรอง", "ข้อมูล"]);
    }

    #[test]
    fn lao_khmer_and_myanmar_phrases_are_cut_into_words() {
        assert_eq!(cut("ພາສາລາວ"), ["ພາສາ", "ລາວ"]);
        assert_eq!(cut("မြန်မာစာမြန်မာစာ"), ["မြန်မာ", "စာ", "မြန်မာ", "စာ"]);
        // Khmer writes a subscript consonant after the coeng sign: it stays in its word.
        assert_eq!(cut("ភាសាខ្មែរគឺជា"), ["ភាសាខ្មែរ", "គឺជា"]);
    }

    #[test]
    fn ranges_are_offsets_into_the_whole_text() {
        let text = "ดู ระบบงาน";
        let start = text.find('ร').unwrap();
        let ranges = words(text, start, text.len());
        assert_eq!(ranges.iter().map(|&(a, b)| &text[a..b]).collect::<Vec<_>>(), ["ระบบ", "งาน"]);
        assert_eq!(ranges[0].0, start);
    }

    #[test]
    fn letters_and_marks_continue_a_run_and_punctuation_ends_it() {
        assert!("ข้อมูล".chars().all(is_unspaced));
        assert!("ភាសាខ្មែរ".chars().all(is_unspaced));
        assert!("မြန်မာ".chars().all(is_unspaced));
        for stop in ['\u{0E5A}', '\u{104B}', '\u{17D4}', ' ', 'a', '的'] {
            assert!(!is_unspaced(stop), "{stop:?}");
        }
    }
}
