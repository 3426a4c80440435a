//! Code-aware text analysis for BM25.

use tantivy::tokenizer::{Language, LowerCaser, SimpleTokenizer, Stemmer, TextAnalyzer, TokenStream};

/// The analyzer's registered name.
pub const TEXT_ANALYZER: &str = "situate_text";

/// The analyzer.
pub fn text_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default()).filter(LowerCaser).filter(Stemmer::new(Language::English)).build()
}

/// Registers the analyzer with an index.
pub fn register(index: &tantivy::Index) {
    index.tokenizers().register(TEXT_ANALYZER, text_analyzer());
}

/// The analysed, de-duplicated terms of a query.
pub fn query_terms(text: &str) -> Vec<String> {
    let mut analyzer = text_analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out: Vec<String> = Vec::new();
    while let Some(t) = stream.next() {
        if !out.contains(&t.text) {
            out.push(t.text.clone());
        }
    }
    out
}
