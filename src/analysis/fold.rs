//! Latin letters without their accents, so that a word typed without them meets the word
//! written with them.
//!
//! French, Spanish, Portuguese, Italian or Vietnamese readers often type a query without
//! its accents (`informacion`, `resume`, `cafe`): on a phone, on a keyboard of another
//! layout, or from habit. Snowball's stemmers keep accents, so `información` and
//! `informacion` were different terms, and the query missed the note that answers it.
//!
//! Documents and queries both lose the accents of their Latin letters before stemming, as
//! Lucene's Spanish, Portuguese and Italian light stemmers do: precomposed letters by
//! tantivy's ASCII folding (`é` → `e`, `ß` → `ss`, `æ` → `ae`, `ł` → `l`), and combining
//! marks written after a Latin letter (`e` + U+0301, as macOS file names and some editors
//! store text) are dropped here first. The stemmer then sees the same letters whichever way
//! the word was typed, except in Hungarian, Romanian and Turkish, whose stemmers need the
//! accents of their endings and so come first ([`super::Language::stems_accented_letters`]).
//! Other scripts keep their marks: a Cyrillic `й` is not an `и`.

use std::cell::RefCell;
use std::mem;

use tantivy::tokenizer::{
    AsciiFoldingFilter, RawTokenizer, StopWordFilter, TextAnalyzer, Token, TokenFilter, TokenStream,
    Tokenizer,
};

use super::Language;

/// Drops the combining diacritical marks (U+0300 to U+036F) that follow a Latin letter.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct DropLatinMarks;

impl TokenFilter for DropLatinMarks {
    type Tokenizer<T: Tokenizer> = DropLatinMarksFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> DropLatinMarksFilter<T> {
        DropLatinMarksFilter { inner: tokenizer, buffer: String::new() }
    }
}

#[derive(Clone)]
pub(super) struct DropLatinMarksFilter<T> {
    inner: T,
    buffer: String,
}

impl<T: Tokenizer> Tokenizer for DropLatinMarksFilter<T> {
    type TokenStream<'a> = DropLatinMarksStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        DropLatinMarksStream { tail: self.inner.token_stream(text), buffer: &mut self.buffer }
    }
}

pub(super) struct DropLatinMarksStream<'a, T> {
    tail: T,
    buffer: &'a mut String,
}

impl<T: TokenStream> TokenStream for DropLatinMarksStream<'_, T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let text = &self.tail.token().text;
        if !text.is_ascii() && has_latin_marks(text) {
            without_latin_marks(text, self.buffer);
            mem::swap(&mut self.tail.token_mut().text, self.buffer);
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

/// Whether a query word's accents hid a stop word of some language (`qué` is `que`, `está`
/// is `esta`, `à` is `a`): once folded, it would match that word wherever the rules of a
/// chunk keep it (a note in English quoting Spanish holds `que`), which the word as typed
/// never did, so queries drop it ([`super::drop::DropWhere`]).
///
/// Documents are left to their own language's list, which the analyzer applies again after
/// folding: a Spanish note's `qué` goes as `que`, and a document's words never depend on
/// the lists of other languages.
///
/// That is, whether `word` (lowercased) loses letters' accents when folded and is then a stop word
/// that one of the analyzers drops (tantivy's lists; the Romanian and Turkish ones of
/// [`super::stop_words`] tell prose only, and drop nothing).
pub(super) fn hides_a_stop_word(word: &str) -> bool {
    // Chinese, Japanese and Korean letters have nothing to fold: their pairs, the most of a
    // query that is not ASCII, skip the analyzers.
    if word.chars().all(|c| c.is_ascii() || super::cjk::is_cjk(c)) {
        return false;
    }
    thread_local! {
        /// The analyzer's folding alone, and each language's stop words: a folded word
        /// that one of the lists drops is a stop word of that language.
        static ANALYZERS: RefCell<(TextAnalyzer, Vec<TextAnalyzer>)> = RefCell::new((
            TextAnalyzer::builder(RawTokenizer::default()).filter(DropLatinMarks).filter(AsciiFoldingFilter).build(),
            Language::all()
                .filter(|l| l.has_own_rules())
                .filter_map(|l| l.stemming().and_then(StopWordFilter::new))
                .map(|list| TextAnalyzer::builder(RawTokenizer::default()).filter(list).build())
                .collect(),
        ));
    }
    ANALYZERS.with_borrow_mut(|(fold, lists)| {
        let Some(folded) = fold.token_stream(word).next().map(|t| t.text.clone()).filter(|f| f != word)
        else {
            return false;
        };
        lists.iter_mut().any(|list| list.token_stream(&folded).next().is_none())
    })
}

/// For Hungarian, Romanian and Turkish chunks: each word stemmed with its accents and then
/// folded (as a query typed with them is analysed), and also folded first and then stemmed
/// (as a query typed without them is), both at the word's position when they differ.
///
/// These stemmers find an ending only as it is spelt (`ablakból`, from the window, is
/// `ablak` by `-ból`), so a query typed without accents (`ablakbol`) is stemmed to
/// something else; the second term is what that query gives, and it meets the chunk all
/// the same. Queries are analysed one way only ([`super::Language::stems_accented_letters`]).
#[derive(Clone)]
pub(super) struct StemmedBothWays {
    /// The stemmer, then the folding.
    pub(super) stem_first: TextAnalyzer,
    /// The folding, then the stemmer.
    pub(super) fold_first: TextAnalyzer,
}

impl TokenFilter for StemmedBothWays {
    type Tokenizer<T: Tokenizer> = StemmedBothWaysFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> StemmedBothWaysFilter<T> {
        StemmedBothWaysFilter { inner: tokenizer, ways: self }
    }
}

#[derive(Clone)]
pub(super) struct StemmedBothWaysFilter<T> {
    inner: T,
    ways: StemmedBothWays,
}

impl<T: Tokenizer> Tokenizer for StemmedBothWaysFilter<T> {
    type TokenStream<'a> = StemmedBothWaysStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        StemmedBothWaysStream {
            tail: self.inner.token_stream(text),
            ways: &mut self.ways,
            token: Token::default(),
            second: None,
        }
    }
}

pub(super) struct StemmedBothWaysStream<'a, T> {
    tail: T,
    ways: &'a mut StemmedBothWays,
    token: Token,
    /// The folded-first term of the last word, when it differs: given next.
    second: Option<String>,
}

/// The one term `analyzer` makes of `word` (the word itself if it makes none).
fn one_term(analyzer: &mut TextAnalyzer, word: &str) -> String {
    analyzer.token_stream(word).next().map_or_else(|| word.to_string(), |t| t.text.clone())
}

impl<T: TokenStream> TokenStream for StemmedBothWaysStream<'_, T> {
    fn advance(&mut self) -> bool {
        if let Some(second) = self.second.take() {
            self.token.text = second;
            return true;
        }
        if !self.tail.advance() {
            return false;
        }
        self.token.clone_from(self.tail.token());
        let word = mem::take(&mut self.token.text);
        let stemmed = one_term(&mut self.ways.stem_first, &word);
        if word.is_ascii() {
            // Nothing to fold: both ways are the stemmer alone.
            self.token.text = stemmed;
            return true;
        }
        let folded = one_term(&mut self.ways.fold_first, &word);
        if folded != stemmed {
            self.second = Some(folded);
        }
        self.token.text = stemmed;
        true
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

fn is_combining_mark(c: char) -> bool {
    ('\u{0300}'..='\u{036F}').contains(&c)
}

/// Whether `c` is a letter of the Latin script: ASCII, Latin-1, the Latin Extended blocks
/// and Latin Extended Additional (Vietnamese).
fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic()
        || matches!(c, '\u{00C0}'..='\u{024F}' | '\u{1E00}'..='\u{1EFF}' | '\u{2C60}'..='\u{2C7F}' | '\u{A720}'..='\u{A7FF}')
            && c.is_alphabetic()
}

fn has_latin_marks(text: &str) -> bool {
    let mut previous = None;
    for c in text.chars() {
        if is_combining_mark(c) && previous.is_some_and(is_latin) {
            return true;
        }
        if !is_combining_mark(c) {
            previous = Some(c);
        }
    }
    false
}

/// `text` into `out` without the combining marks that follow a Latin letter (a letter's
/// several marks all go).
fn without_latin_marks(text: &str, out: &mut String) {
    out.clear();
    let mut base: Option<char> = None;
    for c in text.chars() {
        if is_combining_mark(c) {
            if base.is_some_and(is_latin) {
                continue;
            }
        } else {
            base = Some(c);
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stripped(text: &str) -> String {
        let mut out = String::new();
        without_latin_marks(text, &mut out);
        out
    }

    #[test]
    fn marks_after_latin_letters_go_and_others_stay() {
        assert_eq!(stripped("cafe\u{301}"), "cafe");
        // Vietnamese stacks two marks on one letter.
        assert_eq!(stripped("vie\u{302}\u{323}t"), "viet");
        assert!(has_latin_marks("cafe\u{301}"));
        // A Cyrillic и with a breve is the letter й.
        assert_eq!(stripped("и\u{306}"), "и\u{306}");
        assert!(!has_latin_marks("и\u{306}"));
        assert!(!has_latin_marks("café"));
        // A mark with no letter before it is left alone.
        assert_eq!(stripped("\u{301}a"), "\u{301}a");
    }
}
