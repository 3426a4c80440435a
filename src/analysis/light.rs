//! Light stemmers of the project's own, for languages that Snowball has no stemmer for:
//! Czech and Ukrainian. Each cuts the endings of cases (and Czech's of possessive
//! adjectives), nothing else, and a stem keeps at least three letters.
//!
//! Both languages inflect every noun, adjective and pronoun through seven cases (Czech
//! `soubor`, `souboru`, `souborem`, `souborech`; Ukrainian `файл`, `файлу`, `файлом`,
//! `файлах`: the file), so a query rarely spells a word as the answer does. Dolamic and
//! Savoy ("Indexing and stemming approaches for the Czech language", 2009) found that
//! cutting the case endings alone (a light stemmer) serves search as well as stemmers that
//! also cut derivational suffixes, with fewer words conflated by mistake.
//!
//! The Czech one follows their light stemmer's endings, with two changes:
//!
//! - It reads words whose accents are already folded (`souborů` as `souboru`), as the rest
//!   of the chain does before its stemmer (see `fold.rs`), so that a word typed without
//!   accents gets the same stem. Endings that differ by an accent alone (`-ém` and `-em`)
//!   are then one ending.
//! - It leaves out their undoing of palatalisation (`ruce` back to `ruk-`), which turns
//!   stems that end in `c` or `z` by nature (`obraz`, picture) into others in some of their
//!   forms only.
//!
//! The Ukrainian one cuts the reflexive ending of a verb (`-ся`, `-сь`), then the endings
//! of the cases of nouns and adjectives and of the forms of verbs, by Ukrainian grammar.
//!
//! Words with anything but the language's letters (numbers, names in other scripts) are
//! left whole.

/// The Czech case endings, longest first: the first that a word ends with is cut.
const CZECH_ENDINGS: [&str; 39] = [
    "atech", // -atech
    "etem", "atum", // -ětem, -atům
    "ech", "ich", "eho", "emi", "emu", "ete", "eti", "iho", "imi", "imu", "ach", "ata", "aty", "ych", "ama",
    "ami", "ove", "ovi",
    "ymi", // -ích, -ého, -ěmi, -ému, -ěte, -ěti, -ího, -ími, -ímu, -ách, -ých, -ové, -ými
    "em", "es", "im", "um", "at", "am", "os", "us", "ym", "mi", "ou", // -ém, -ím, -ům, -ám, -ým
    "e", "i", "u", "y", "a", "o", // -ě, -í, -ů, -á, -é, -ý
];

/// The endings of possessive adjectives (`otcův`, `matčin`), cut after the case ending.
const CZECH_POSSESSIVE_ENDINGS: [&str; 3] = ["ov", "in", "uv"];

/// Letters a stem keeps at the least.
const MIN_STEM: usize = 3;

/// The Ukrainian case endings of nouns and adjectives and the endings of verbs, longest
/// first: the first that a word ends with is cut.
const UKRAINIAN_ENDINGS: [&str; 57] = [
    "ього", "ьому", "ість",
    "ості", // soft adjectives; abstract nouns (`швидкість`, `швидкості`)
    "ого", "ому", "ими", "іми", "ами", "ями", "ові", "еві", "єві", "ють", "уть", "ать", "ять", "ить", "ете",
    "ите", "имо", "емо", "ий", "ій", "им", "ім", "их", "іх", "ою", "ею", "єю", "ом", "ем", "єм", "ів", "їв",
    "ей", "ам", "ям", "ах", "ях", "ти", "ть", "еш", "єш", "иш", "ої", "а", "я", "у", "ю", "і", "и", "ї", "е",
    "є", "о",
];

/// The Ukrainian stem of `word`, a lowercased word.
pub(super) fn ukrainian(word: &str) -> &str {
    let ukrainian_letter = |c: char| matches!(c, 'а'..='щ' | 'ь' | 'ю' | 'я' | 'і' | 'ї' | 'є' | 'ґ');
    if !word.chars().all(ukrainian_letter) {
        return word;
    }
    let keeps_a_stem = |stem: &str, ending: &str| stem.chars().count() >= ending.chars().count() + MIN_STEM;
    let mut stem = word;
    for reflexive in ["ся", "сь"] {
        if keeps_a_stem(stem, reflexive) && stem.ends_with(reflexive) {
            stem = &stem[..stem.len() - reflexive.len()];
            break;
        }
    }
    if let Some(ending) = UKRAINIAN_ENDINGS.iter().find(|e| keeps_a_stem(stem, e) && stem.ends_with(*e)) {
        stem = &stem[..stem.len() - ending.len()];
    }
    stem
}

/// The Czech stem of `word`, a lowercased word without accents.
pub(super) fn czech(word: &str) -> &str {
    if !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word;
    }
    let mut stem = word;
    if let Some(ending) =
        CZECH_ENDINGS.iter().find(|e| stem.len() >= e.len() + MIN_STEM && stem.ends_with(*e))
    {
        stem = &stem[..stem.len() - ending.len()];
    }
    if let Some(ending) =
        CZECH_POSSESSIVE_ENDINGS.iter().find(|e| stem.len() >= e.len() + MIN_STEM && stem.ends_with(*e))
    {
        stem = &stem[..stem.len() - ending.len()];
    }
    stem
}

/// One of these stemmers, as the rewrite of each term ([`super::rewrite::EachTerm`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct LightStemmer(pub(super) fn(&str) -> &str);

impl super::rewrite::Rewrite for LightStemmer {
    fn rewrite(&self, term: &mut String) {
        // A stem is the word's beginning.
        let kept = (self.0)(term).len();
        term.truncate(kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_of_a_czech_word_meet_at_one_stem() {
        // soubor (file): nominative, genitive, instrumental, locative plural, genitive plural.
        for form in ["soubor", "souboru", "souborem", "souborech", "soubory", "souboru"] {
            assert_eq!(czech(form), "soubor", "{form}");
        }
        // adresář (directory), folded: adresar, adresare, adresari, adresarich.
        for form in ["adresar", "adresare", "adresari", "adresarich", "adresarum"] {
            assert_eq!(czech(form), "adresar", "{form}");
        }
        // A possessive adjective loses its case ending, then its possessive one.
        assert_eq!(czech("otcova"), "otc");
    }

    #[test]
    fn the_forms_of_a_ukrainian_word_meet_at_one_stem() {
        // файл (file): nominative, genitive, instrumental, locative plural, genitive plural.
        for form in ["файл", "файлу", "файлом", "файлах", "файли", "файлів"] {
            assert_eq!(ukrainian(form), "файл", "{form}");
        }
        // резервний (spare): the forms of an adjective.
        for form in ["резервний", "резервного", "резервному", "резервних", "резервна", "резервної"]
        {
            assert_eq!(ukrainian(form), "резервн", "{form}");
        }
        // A reflexive verb loses its `-ся` before its ending.
        assert_eq!(ukrainian("копіюються"), ukrainian("копіюють"));
        assert_eq!(ukrainian("швидкості"), "швидк");
        assert_eq!(ukrainian("швидкість"), "швидк");
    }

    #[test]
    fn short_words_and_other_letters_stay_whole() {
        assert_eq!(czech("kde"), "kde");
        assert_eq!(czech("ls"), "ls");
        assert_eq!(czech("ipv6"), "ipv6");
        assert_eq!(czech("файлы"), "файлы");
        assert_eq!(ukrainian("ls"), "ls");
        assert_eq!(ukrainian("дім"), "дім");
        // Russian letters (`ы`) are no Ukrainian word's.
        assert_eq!(ukrainian("файлы"), "файлы");
        // Three letters are kept at the least.
        assert_eq!(czech("domu"), "dom");
        assert_eq!(czech("doma"), "dom");
    }
}
