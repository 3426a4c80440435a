//! Fuzzes the code-aware BM25 analyzer (`analysis::text_analyzer`) and
//! `query_terms`. Every token must be a non-empty term of at most 255 bytes whose offsets
//! lie on character boundaries of the text and frame a run that starts with a letter or
//! digit and holds no whitespace; no byte range comes twice; positions never go back; and
//! the query terms are the analyzer's terms, de-duplicated in order of first appearance
//! (for text with CJK letters, whose single characters only documents have, a subset; for
//! other text that is not ASCII, a subset too, since a query leaves out a word whose
//! accents hid a stop word). Under each language's rules too, the query terms of a text are
//! among its document terms.

#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use situate::analysis::{
    Language, document_terms, document_terms_in, query_terms, query_terms_in, text_analyzer,
};
use tantivy::tokenizer::TokenStream;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    let mut analyzer = text_analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut ranges = HashSet::new();
    let mut last_position = 0;
    let mut terms = Vec::new();
    let mut seen = HashSet::new();
    while let Some(token) = stream.next() {
        let (from, to) = (token.offset_from, token.offset_to);
        assert!(from < to && to <= text.len(), "{from}..{to} in {} bytes", text.len());
        assert!(text.is_char_boundary(from) && text.is_char_boundary(to));
        let run = &text[from..to];
        assert!(run.chars().next().is_some_and(char::is_alphanumeric), "{run:?} starts a run");
        assert!(!run.chars().any(char::is_whitespace), "{run:?} holds no blank");
        assert!(ranges.insert((from, to)), "{from}..{to} comes twice");
        assert!(!token.text.is_empty(), "an empty term from {run:?}");
        assert!(token.text.len() <= 255, "a term of {} bytes", token.text.len());
        assert!(token.position >= last_position, "positions go back");
        last_position = token.position;
        if seen.insert(token.text.clone()) {
            terms.push(token.text.clone());
        }
    }
    let query = query_terms(text);
    if text.chars().any(|c| c.is_alphanumeric() && !c.is_ascii() && c as u32 >= 0x1100) {
        let held = document_terms(text);
        assert!(query.iter().all(|term| held.contains(term)), "a query term no document holds");
    } else if text.is_ascii() {
        assert_eq!(query, terms);
    } else {
        // A query leaves out a word whose accents hid a stop word (`qué`, or `İst` folded to
        // German's `ist`); the same term may still come later from another word, so only
        // membership holds, not the order of first appearance.
        let held: HashSet<&String> = terms.iter().collect();
        assert!(query.iter().all(|term| held.contains(term)), "{query:?} is not drawn from {terms:?}");
    }
    // Under every language's rules (its stop words, stemmer and order of folding), a query
    // typed as the text is finds it: its terms are among the text's, each non-empty and
    // within the length cap.
    for language in Language::all() {
        let held = document_terms_in(text, language);
        assert!(held.iter().all(|t| !t.is_empty() && t.len() <= 255), "{}: {held:?}", language.code());
        let query = query_terms_in(text, &[language]);
        assert!(query.iter().all(|t| held.contains(t)), "{}: {query:?} not in {held:?}", language.code());
    }
});
