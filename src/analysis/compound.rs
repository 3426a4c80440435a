//! Compound words of the languages that write them closed (German, Dutch, Swedish, Danish,
//! Norwegian, Finnish): a query's long word that the notes spell as two words is split
//! into them, where the index holds both.
//!
//! `Verzeichnisgröße` and `die Größe des Verzeichnisses` share no term: the stemmer leaves a
//! compound whole. A query's word of eight letters or more is tried at each place that
//! leaves two parts of four letters or more, the first part also without a linking
//! element (`Arbeits|speicher`: `arbeit`), each part analysed as a word of the language.
//! The split whose parts' document frequencies have the largest geometric mean is taken
//! when that mean is above the whole word's own frequency (a word the notes use as it is
//! stays whole), and the parts join the query at half a word's weight each. Only the
//! query is split: the notes are indexed as they were, and the index's own vocabulary
//! says which parts are words, so no dictionary is needed.

use super::Language;

/// The languages whose compounds are tried.
const COMPOUNDING: [&str; 6] = ["de", "nl", "sv", "da", "no", "fi"];

/// The fewest letters of a word that is tried.
const MIN_WORD: usize = 8;

/// The fewest letters of each part.
const MIN_PART: usize = 4;

/// What joins the parts of a compound: `Arbeit·s·speicher`, `Sonne·n·schein`,
/// `Hund·e·hütte`, Dutch `boek·en·kast`, Swedish `dag·s·ljus`.
const LINKS: [&str; 5] = ["s", "es", "n", "en", "e"];

/// The weight of each part beside the words of the query (1).
pub const PART_WEIGHT: f32 = 0.5;

/// Whether `language` writes its compounds closed.
pub fn compounding(language: Language) -> bool {
    COMPOUNDING.contains(&language.code())
}

/// The analysed terms of the two words the compound `word` is made of, by `language`'s
/// rules (`analyse` gives the one term of a word, if it has one), when the index holds both
/// (`doc_freq` of a term) more often than the word itself; `None` otherwise.
pub fn split(
    word: &str,
    analyse: impl Fn(&str) -> Option<String>,
    doc_freq: impl Fn(&str) -> u64,
) -> Option<(String, String)> {
    let lower = word.to_lowercase();
    let letters: Vec<(usize, char)> = lower.char_indices().collect();
    if letters.len() < MIN_WORD || !letters.iter().all(|(_, c)| c.is_alphabetic()) {
        return None;
    }
    let whole = analyse(&lower).map_or(0, |t| doc_freq(&t));
    let mut best: Option<(f64, String, String)> = None;
    for &(at, _) in &letters[MIN_PART..=letters.len() - MIN_PART] {
        let (first, second) = lower.split_at(at);
        let Some(second) = analyse(second).filter(|t| !t.is_empty()) else { continue };
        let second_freq = doc_freq(&second);
        if second_freq == 0 {
            continue;
        }
        let shorter = LINKS.iter().filter_map(|link| first.strip_suffix(link));
        for first in std::iter::once(first).chain(shorter).filter(|f| f.chars().count() >= MIN_PART) {
            let Some(first) = analyse(first).filter(|t| !t.is_empty()) else { continue };
            let first_freq = doc_freq(&first);
            if first_freq == 0 {
                continue;
            }
            let mean = (first_freq as f64 * second_freq as f64).sqrt();
            if mean > whole as f64 && best.as_ref().is_none_or(|b| mean > b.0) {
                best = Some((mean, first, second.clone()));
            }
        }
    }
    best.map(|(_, first, second)| (first, second))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Analyses a word as the German rules would, closely enough here: umlauts and ß
    /// folded, a final `e` off.
    fn german(word: &str) -> Option<String> {
        let folded = word.replace('ä', "a").replace('ö', "o").replace('ü', "u").replace('ß', "ss");
        Some(folded.strip_suffix('e').unwrap_or(&folded).to_string())
    }

    fn frequencies(terms: &[(&str, u64)]) -> impl Fn(&str) -> u64 {
        let terms: HashMap<String, u64> = terms.iter().map(|(t, n)| (t.to_string(), *n)).collect();
        move |t| terms.get(t).copied().unwrap_or(0)
    }

    #[test]
    fn a_compound_splits_into_the_words_the_notes_hold() {
        let held = frequencies(&[("verzeichnis", 12), ("gross", 30), ("datei", 90)]);
        assert_eq!(split("Verzeichnisgröße", german, &held), Some(("verzeichnis".into(), "gross".into())));
        assert_eq!(split("Dateigröße", german, &held), Some(("datei".into(), "gross".into())));
    }

    #[test]
    fn a_linking_element_is_taken_off_the_first_part() {
        let held = frequencies(&[("arbeit", 25), ("arbeits", 2), ("speicher", 8)]);
        assert_eq!(split("Arbeitsspeicher", german, &held), Some(("arbeit".into(), "speicher".into())));
    }

    #[test]
    fn a_word_the_notes_use_whole_or_lack_a_part_of_stays_whole() {
        // The notes say `Dateisystem` more often than `Datei` and `System` together.
        let held = frequencies(&[("dateisystem", 500), ("datei", 90), ("system", 40)]);
        assert_eq!(split("Dateisystem", german, &held), None);
        // Only one part is a word of the notes.
        let held = frequencies(&[("datei", 90)]);
        assert_eq!(split("Dateigröße", german, &held), None);
    }

    #[test]
    fn short_words_parts_and_identifiers_are_not_split() {
        let held =
            frequencies(&[("haus", 10), ("tur", 10), ("han", 5), ("dtur", 5), ("hand", 5), ("tuch", 5)]);
        // Seven letters: too short to try.
        assert_eq!(split("Haustür", german, &held), None);
        // A part of three letters is never taken (`Han|dtuch` would be).
        assert_eq!(split("Handtuch", german, &held), Some(("hand".into(), "tuch".into())));
        assert_eq!(split("log_level2", german, &held), None);
    }

    #[test]
    fn only_languages_that_write_compounds_closed_are_tried() {
        let code = |c: &str| Language::named(c).unwrap();
        for c in ["de", "nl", "sv", "da", "no", "fi"] {
            assert!(compounding(code(c)), "{c}");
        }
        for c in ["en", "fr", "ru", "cs"] {
            assert!(!compounding(code(c)), "{c}");
        }
    }
}
