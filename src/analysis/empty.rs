//! Drops the terms that a stemmer left empty.
//!
//! Snowball's stemmers can take a whole word for an ending: Greek's turns `ετε` into
//! nothing. An empty term is no word, and every chunk and query that held such a word
//! would share it, so it is dropped from documents and queries alike.

use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// The filter; it goes last in every chain.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct DropEmpty;

impl TokenFilter for DropEmpty {
    type Tokenizer<T: Tokenizer> = DropEmptyFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> DropEmptyFilter<T> {
        DropEmptyFilter { inner: tokenizer }
    }
}

#[derive(Clone)]
pub(super) struct DropEmptyFilter<T> {
    inner: T,
}

impl<T: Tokenizer> Tokenizer for DropEmptyFilter<T> {
    type TokenStream<'a> = DropEmptyStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        DropEmptyStream { tail: self.inner.token_stream(text) }
    }
}

pub(super) struct DropEmptyStream<T> {
    tail: T,
}

impl<T: TokenStream> TokenStream for DropEmptyStream<T> {
    fn advance(&mut self) -> bool {
        while self.tail.advance() {
            if !self.tail.token().text.is_empty() {
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
