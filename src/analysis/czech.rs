//! A light stemmer for Czech, which Snowball has none for: the endings of its cases and of
//! its possessive adjectives are cut, nothing else.
//!
//! Czech inflects every noun, adjective and pronoun through seven cases (`soubor`,
//! `souboru`, `souborem`, `souborech`: the file), so a query rarely spells a word as the
//! answer does. Dolamic and Savoy ("Indexing and stemming approaches for the Czech
//! language", 2009) found that cutting the case endings alone (a light stemmer) serves
//! search as well as stemmers that also cut derivational suffixes, with fewer words
//! conflated by mistake. This one follows their light stemmer's endings, with two changes:
//!
//! - It reads words whose accents are already folded (`souborů` as `souboru`), as the rest
//!   of the chain does before its stemmer (see `fold.rs`), so that a word typed without
//!   accents gets the same stem. Endings that differ by an accent alone (`-ém` and `-em`)
//!   are then one ending.
//! - It leaves out their undoing of palatalisation (`ruce` back to `ruk-`), which turns
//!   stems that end in `c` or `z` by nature (`obraz`, picture) into others in some of their
//!   forms only.
//!
//! A word keeps at least three letters, and words with anything but the letters `a` to `z`
//! (numbers, names in other scripts) are left whole.

use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// The case endings, longest first: the first that a word ends with is cut.
const CASE_ENDINGS: [&str; 39] = [
    "atech", // -atech
    "etem", "atum", // -ětem, -atům
    "ech", "ich", "eho", "emi", "emu", "ete", "eti", "iho", "imi", "imu", "ach", "ata", "aty", "ych", "ama",
    "ami", "ove", "ovi",
    "ymi", // -ích, -ého, -ěmi, -ému, -ěte, -ěti, -ího, -ími, -ímu, -ách, -ých, -ové, -ými
    "em", "es", "im", "um", "at", "am", "os", "us", "ym", "mi", "ou", // -ém, -ím, -ům, -ám, -ým
    "e", "i", "u", "y", "a", "o", // -ě, -í, -ů, -á, -é, -ý
];

/// The endings of possessive adjectives (`otcův`, `matčin`), cut after the case ending.
const POSSESSIVE_ENDINGS: [&str; 3] = ["ov", "in", "uv"];

/// Letters a stem keeps at the least.
const MIN_STEM: usize = 3;

/// The stem of `word`, a lowercased word without accents.
pub(super) fn stem(word: &str) -> &str {
    if !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word;
    }
    let mut stem = word;
    if let Some(ending) = CASE_ENDINGS.iter().find(|e| stem.len() >= e.len() + MIN_STEM && stem.ends_with(*e))
    {
        stem = &stem[..stem.len() - ending.len()];
    }
    if let Some(ending) =
        POSSESSIVE_ENDINGS.iter().find(|e| stem.len() >= e.len() + MIN_STEM && stem.ends_with(*e))
    {
        stem = &stem[..stem.len() - ending.len()];
    }
    stem
}

/// The filter that stems each term of a Czech chunk or query.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct CzechStemmer;

impl TokenFilter for CzechStemmer {
    type Tokenizer<T: Tokenizer> = CzechStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> CzechStemmerFilter<T> {
        CzechStemmerFilter { inner: tokenizer }
    }
}

#[derive(Clone)]
pub(super) struct CzechStemmerFilter<T> {
    inner: T,
}

impl<T: Tokenizer> Tokenizer for CzechStemmerFilter<T> {
    type TokenStream<'a> = CzechStemmerStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        CzechStemmerStream { tail: self.inner.token_stream(text) }
    }
}

pub(super) struct CzechStemmerStream<T> {
    tail: T,
}

impl<T: TokenStream> TokenStream for CzechStemmerStream<T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let text = &mut self.tail.token_mut().text;
        let kept = stem(text).len();
        text.truncate(kept);
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_of_a_word_meet_at_one_stem() {
        // soubor (file): nominative, genitive, instrumental, locative plural, genitive plural.
        for form in ["soubor", "souboru", "souborem", "souborech", "soubory", "souboru"] {
            assert_eq!(stem(form), "soubor", "{form}");
        }
        // adresář (directory), folded: adresar, adresare, adresari, adresarich.
        for form in ["adresar", "adresare", "adresari", "adresarich", "adresarum"] {
            assert_eq!(stem(form), "adresar", "{form}");
        }
        // A possessive adjective loses its case ending, then its possessive one.
        assert_eq!(stem("otcova"), "otc");
    }

    #[test]
    fn short_words_and_other_letters_stay_whole() {
        assert_eq!(stem("kde"), "kde");
        assert_eq!(stem("ls"), "ls");
        assert_eq!(stem("ipv6"), "ipv6");
        assert_eq!(stem("файлы"), "файлы");
        // Three letters are kept at the least.
        assert_eq!(stem("domu"), "dom");
        assert_eq!(stem("doma"), "dom");
    }
}
