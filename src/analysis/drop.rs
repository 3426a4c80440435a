//! A filter that drops the terms a test picks out: those a stemmer left empty, in every
//! chain, and in queries those whose accents hid a stop word (see `fold.rs`).
//!
//! Snowball's stemmers can take a whole word for an ending: Greek's turns `ετε` into
//! nothing. An empty term is no word, and every chunk and query that held such a word
//! would share it, so it is dropped from documents and queries alike.

use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// Drops each term for which its test is true.
#[derive(Clone, Copy, Debug)]
pub(super) struct DropWhere(pub(super) fn(&str) -> bool);

/// The test of the filter that goes last in every chain.
pub(super) fn is_empty(term: &str) -> bool {
    term.is_empty()
}

/// The test that drops nothing.
pub(super) fn never(_: &str) -> bool {
    false
}

impl TokenFilter for DropWhere {
    type Tokenizer<T: Tokenizer> = DropWhereFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> DropWhereFilter<T> {
        DropWhereFilter { inner: tokenizer, drops: self.0 }
    }
}

#[derive(Clone)]
pub(super) struct DropWhereFilter<T> {
    inner: T,
    drops: fn(&str) -> bool,
}

impl<T: Tokenizer> Tokenizer for DropWhereFilter<T> {
    type TokenStream<'a> = DropWhereStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        DropWhereStream { tail: self.inner.token_stream(text), drops: self.drops }
    }
}

pub(super) struct DropWhereStream<T> {
    tail: T,
    drops: fn(&str) -> bool,
}

impl<T: TokenStream> TokenStream for DropWhereStream<T> {
    fn advance(&mut self) -> bool {
        while self.tail.advance() {
            if !(self.drops)(&self.tail.token().text) {
                return true;
            }
        }
        false
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}
