//! The tantivy schema of the chunk store: one document per chunk, holding its text, its
//! context, where it lies in its file, and what the manifest needs to be rebuilt.

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};

use super::TextField;
use crate::analysis::TEXT_ANALYZER;

/// Handles of the schema's fields.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// Chunk id (u64), the key shared with the vector index.
    pub id: Field,
    /// Workspace-relative path, untokenised: deletes and filters go by it.
    pub path: Field,
    /// The path as words, for BM25.
    pub path_text: Field,
    pub ordinal: Field,
    pub start_line: Field,
    pub end_line: Field,
    pub start_byte: Field,
    pub end_byte: Field,
    /// Document title: searched and stored.
    pub title: Field,
    /// Heading path joined with " > ": searched.
    pub headings: Field,
    /// Heading path as a JSON array: stored.
    pub heading_path: Field,
    /// The text as searched: the original without its noise (`context::searchable`).
    pub text: Field,
    /// The original text, stored, byte for byte.
    pub stored_text: Field,
    /// The header context: stored (its words are searched through `title` and `headings`).
    pub context: Field,
    /// The LLM-written snippet: searched and stored (empty when the chunk has none).
    pub snippet: Field,
    /// Every front matter field of the chunk's document, as a JSON object: stored.
    pub metadata: Field,
    /// One untokenised `key=value` term per front matter value (see [`super::metadata`]):
    /// what `--where` filters match.
    pub metadata_terms: Field,
    /// The values of the front matter fields in the header: searched.
    pub metadata_text: Field,
    /// The snippet's cache key (32 hex digits), its model and when it was written: stored.
    pub snippet_key: Field,
    pub snippet_model: Field,
    pub snippet_at: Field,
    pub token_count: Field,
    pub content_hash: Field,
    pub embed_hash: Field,
    pub file_size: Field,
    pub file_mtime: Field,
    pub file_hash: Field,
}

impl Fields {
    /// The handle of a field BM25 searches.
    pub fn searched(&self, field: TextField) -> Field {
        match field {
            TextField::Text => self.text,
            TextField::Title => self.title,
            TextField::Headings => self.headings,
            TextField::Path => self.path_text,
            TextField::Snippet => self.snippet,
            TextField::Metadata => self.metadata_text,
        }
    }
}

/// Builds the schema and its field handles.
pub fn build() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let searched = |stored: bool| {
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(TEXT_ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions);
        let options = TextOptions::default().set_indexing_options(indexing);
        if stored { options.set_stored() } else { options }
    };
    let fields = Fields {
        id: b.add_u64_field("id", INDEXED | STORED | FAST),
        path: b.add_text_field("path", STRING | STORED),
        path_text: b.add_text_field("path_text", searched(false)),
        ordinal: b.add_u64_field("ordinal", STORED),
        start_line: b.add_u64_field("start_line", STORED),
        end_line: b.add_u64_field("end_line", STORED),
        start_byte: b.add_u64_field("start_byte", STORED),
        end_byte: b.add_u64_field("end_byte", STORED),
        title: b.add_text_field("title", searched(true)),
        headings: b.add_text_field("headings", searched(false)),
        heading_path: b.add_text_field("heading_path", STORED),
        text: b.add_text_field("text", searched(false)),
        stored_text: b.add_text_field("stored_text", STORED),
        context: b.add_text_field("context", STORED),
        snippet: b.add_text_field("snippet", searched(true)),
        metadata: b.add_text_field("metadata", STORED),
        metadata_terms: b.add_text_field("metadata_terms", STRING),
        metadata_text: b.add_text_field("metadata_text", searched(false)),
        snippet_key: b.add_text_field("snippet_key", STORED),
        snippet_model: b.add_text_field("snippet_model", STORED),
        snippet_at: b.add_u64_field("snippet_at", STORED),
        token_count: b.add_u64_field("token_count", STORED),
        content_hash: b.add_u64_field("content_hash", STORED),
        embed_hash: b.add_u64_field("embed_hash", STORED),
        file_size: b.add_u64_field("file_size", STORED),
        file_mtime: b.add_u64_field("file_mtime", STORED),
        file_hash: b.add_u64_field("file_hash", STORED),
    };
    (b.build(), fields)
}
