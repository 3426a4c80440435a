//! A filter that rewrites each term in place, for the project's own rewrites: the cuts of
//! the light stemmers (`light.rs`), letters in their composed form (`compose.rs`), Hebrew
//! without its points (`hebrew.rs`), the Arabic script as readers type it (`arabic.rs`),
//! Traditional Chinese characters in their Simplified forms (`han.rs`) and Japanese kana in
//! full width (`kana.rs`).

use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// How each term is rewritten.
pub(super) trait Rewrite: Clone + Send + Sync + 'static {
    fn rewrite(&self, term: &mut String);
}

/// Two rewrites, one after the other, in one filter.
impl<A: Rewrite, B: Rewrite> Rewrite for (A, B) {
    fn rewrite(&self, term: &mut String) {
        self.0.rewrite(term);
        self.1.rewrite(term);
    }
}

/// A rewrite by a function that changes a term in place.
#[derive(Clone, Copy, Debug)]
pub(super) struct InPlace(pub(super) fn(&mut String));

impl Rewrite for InPlace {
    fn rewrite(&self, term: &mut String) {
        (self.0)(term);
    }
}

/// The filter that rewrites each term by its [`Rewrite`].
#[derive(Clone, Copy, Debug)]
pub(super) struct EachTerm<R>(pub(super) R);

impl<R: Rewrite> TokenFilter for EachTerm<R> {
    type Tokenizer<T: Tokenizer> = EachTermFilter<T, R>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> EachTermFilter<T, R> {
        EachTermFilter { inner: tokenizer, rewrite: self.0 }
    }
}

#[derive(Clone)]
pub(super) struct EachTermFilter<T, R> {
    inner: T,
    rewrite: R,
}

impl<T: Tokenizer, R: Rewrite> Tokenizer for EachTermFilter<T, R> {
    type TokenStream<'a> = EachTermStream<T::TokenStream<'a>, R>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        EachTermStream { tail: self.inner.token_stream(text), rewrite: self.rewrite.clone() }
    }
}

pub(super) struct EachTermStream<T, R> {
    tail: T,
    rewrite: R,
}

impl<T: TokenStream, R: Rewrite> TokenStream for EachTermStream<T, R> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        self.rewrite.rewrite(&mut self.tail.token_mut().text);
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}
