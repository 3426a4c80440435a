//! How a chunk is stored: the record the index holds for it, what a change to the index
//! carries (prepared files and chunks, snippet updates), and the chunk's tantivy document.

use tantivy::TantivyDocument;
use tantivy::schema::Value;

use super::manifest::ChunkRef;
use super::schema::Fields;
use crate::analysis::{self, Language};
use crate::chunk::{Chunk, Metadata, front_matter};
use crate::context;
use crate::snippets::{Snippet, SnippetSlot};

/// A chunk as the index holds it: where it is, its text and its context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRecord {
    pub id: u64,
    pub path: String,
    pub ordinal: u32,
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: u64,
    pub end_byte: u64,
    pub title: String,
    pub heading_path: Vec<String>,
    /// The original text.
    pub text: String,
    /// The header context that was indexed with it.
    pub context: String,
    /// The LLM-written snippet indexed with it, if any (its text is empty when the model's
    /// reply was rejected).
    pub snippet: Option<Snippet>,
    /// The cache key of `snippet` (0 when there is none).
    pub snippet_key: u128,
    pub token_count: u32,
    pub content_hash: u64,
    pub embed_hash: u64,
    /// The front matter fields of its document.
    pub metadata: Metadata,
}

/// The text embedded for a chunk: its header, snippet and text ([`context::embedding_text`])
/// as the embedders read text ([`analysis::embedded_text`]: Chinese in one script, kana in
/// full width). Its hash is the chunk's `embed_hash`, which finds a vector to reuse.
pub fn embedding_text(header: &str, snippet: &str, text: &str) -> String {
    analysis::embedded_text(context::embedding_text(header, snippet, text))
}

impl ChunkRecord {
    /// The snippet's text, empty when there is none.
    pub fn snippet_text(&self) -> &str {
        self.snippet.as_ref().map_or("", |s| s.text.as_str())
    }

    /// Whether the title only names the chunk's file, with or without its extension (as a
    /// note without a title is named): a title the hit's place already gives, which results
    /// need not repeat.
    pub fn title_is_file_name(&self) -> bool {
        let file_name = self.path.rsplit('/').next().unwrap_or(&self.path);
        self.title == file_name || self.title == crate::chunk::note_name(file_name)
    }

    /// The text the embedder saw.
    pub fn embedding_text(&self) -> String {
        embedding_text(&self.context, self.snippet_text(), &self.text)
    }

    /// The language whose rules analyse the chunk: its document's `language` (or `lang`)
    /// front matter field, else the language detected in its text.
    pub fn language(&self) -> Language {
        Language::of_chunk(front_matter::declared_language(&self.metadata), &self.text)
    }
}

impl ChunkRecord {
    /// A record of `text` in `path` from line `start_line`, every other field empty: for
    /// tests and fuzzing of what reads records.
    pub fn sample(path: &str, text: &str, start_line: u32) -> ChunkRecord {
        ChunkRecord {
            id: 0,
            path: path.into(),
            ordinal: 0,
            start_line,
            end_line: start_line + (text.lines().count() as u32).saturating_sub(1),
            start_byte: 0,
            end_byte: text.len() as u64,
            title: String::new(),
            heading_path: Vec::new(),
            text: text.into(),
            context: String::new(),
            snippet: None,
            snippet_key: 0,
            token_count: 0,
            content_hash: 0,
            embed_hash: 0,
            metadata: Metadata::new(),
        }
    }
}

/// A chunk ready to be written: the chunker's output, its header context and its snippet.
#[derive(Debug, Clone)]
pub struct PreparedChunk {
    pub chunk: Chunk,
    pub context: String,
    pub snippet: SnippetSlot,
}

/// A snippet that arrived for a committed chunk.
#[derive(Debug, Clone)]
pub struct SnippetUpdate {
    pub chunk_id: u64,
    pub key: u128,
    pub snippet: Snippet,
}

/// One file's new contents, chunked and contextualised.
#[derive(Debug, Clone)]
pub struct PreparedFile {
    pub path: String,
    pub size: u64,
    pub mtime_ns: u64,
    pub content_hash: u64,
    pub lossy: bool,
    pub title: String,
    pub metadata: Metadata,
    pub chunks: Vec<PreparedChunk>,
    pub warnings: Vec<String>,
}

/// A change to apply to the index.
#[derive(Debug, Clone)]
pub enum FileChange {
    /// New or changed contents.
    Upsert(PreparedFile),
    /// Same contents, new size or mtime: only the manifest changes.
    Touch {
        path: String,
        size: u64,
        mtime_ns: u64,
    },
    Remove {
        path: String,
    },
}

/// When the vectors of new texts are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorTiming {
    /// Before the texts are written.
    Now,
    /// After the texts are committed, from their stored copies (pending vectors): a slow
    /// embedder never holds back what BM25 finds.
    Later,
}

impl VectorTiming {
    /// `Later` for an embedder that does not keep up with reading files.
    pub fn for_embedder(embedder: &dyn crate::providers::Embedder) -> VectorTiming {
        if embedder.embeds_fast() { VectorTiming::Now } else { VectorTiming::Later }
    }
}

/// What one `apply` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApplyStats {
    pub files_written: usize,
    pub files_removed: usize,
    pub chunks_written: usize,
    pub vectors_embedded: usize,
    pub vectors_reused: usize,
}

/// A file's size, mtime and content hash as stored with each of its chunks.
pub(super) type StoredFileMeta = (u64, u64, u64);

/// The record a prepared chunk is stored as.
pub(super) fn prepared_record(file: &PreparedFile, prepared: &PreparedChunk, r: ChunkRef) -> ChunkRecord {
    let c = &prepared.chunk;
    let (snippet, snippet_key) = match &prepared.snippet {
        SnippetSlot::Ready { key, snippet } => (Some(snippet.clone()), *key),
        _ => (None, 0),
    };
    ChunkRecord {
        id: r.id,
        path: file.path.clone(),
        ordinal: c.ordinal,
        start_line: c.start_line,
        end_line: c.end_line,
        start_byte: c.byte_range.start as u64,
        end_byte: c.byte_range.end as u64,
        title: file.title.clone(),
        heading_path: c.heading_path.clone(),
        text: c.text.clone(),
        context: prepared.context.clone(),
        snippet,
        snippet_key,
        token_count: c.token_count,
        content_hash: c.content_hash,
        embed_hash: r.embed_hash,
        metadata: file.metadata.clone(),
    }
}

pub(super) fn record_of(f: &Fields, doc: &TantivyDocument) -> Option<ChunkRecord> {
    let text = |field| doc.get_first(field).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let snippet_key = doc
        .get_first(f.snippet_key)
        .and_then(|v| v.as_str())
        .and_then(|k| u128::from_str_radix(k, 16).ok())
        .unwrap_or(0);
    let snippet = (snippet_key != 0).then(|| Snippet {
        text: text(f.snippet),
        model: text(f.snippet_model),
        created_at: u64_of(doc, f.snippet_at),
    });
    Some(ChunkRecord {
        id: doc.get_first(f.id)?.as_u64()?,
        path: text(f.path),
        ordinal: u64_of(doc, f.ordinal) as u32,
        start_line: u64_of(doc, f.start_line) as u32,
        end_line: u64_of(doc, f.end_line) as u32,
        start_byte: u64_of(doc, f.start_byte),
        end_byte: u64_of(doc, f.end_byte),
        title: text(f.title),
        heading_path: serde_json::from_str(&text(f.heading_path)).unwrap_or_default(),
        text: text(f.stored_text),
        context: text(f.context),
        snippet,
        snippet_key,
        token_count: u64_of(doc, f.token_count) as u32,
        content_hash: u64_of(doc, f.content_hash),
        embed_hash: u64_of(doc, f.embed_hash),
        metadata: serde_json::from_str(&text(f.metadata)).unwrap_or_default(),
    })
}

pub(super) fn u64_of(doc: &TantivyDocument, field: tantivy::schema::Field) -> u64 {
    doc.get_first(field).and_then(|v| v.as_u64()).unwrap_or(0)
}

/// The words of a path, for BM25: `ops/backup-policy.md` → `ops backup-policy`.
pub(super) fn path_words(path: &str) -> String {
    let without_ext = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    without_ext.replace('/', " ")
}

/// The tantivy document a chunk is stored as, with its file's size, mtime and hash.
pub(super) fn document(f: &Fields, r: &ChunkRecord, file: StoredFileMeta) -> TantivyDocument {
    let mut doc = TantivyDocument::default();
    doc.add_u64(f.id, r.id);
    doc.add_text(f.path, &r.path);
    doc.add_u64(f.ordinal, u64::from(r.ordinal));
    doc.add_u64(f.start_line, r.start_line as u64);
    doc.add_u64(f.end_line, r.end_line as u64);
    doc.add_u64(f.start_byte, r.start_byte);
    doc.add_u64(f.end_byte, r.end_byte);
    // A chunk in English, or in a language without rules of its own, is analysed by the
    // field's registered analyzer, and so is one in a language analysed as English (Chinese,
    // Polish, Hebrew...), whose marker goes with the filter terms, where no search scores
    // it; one in another language is analysed here by its language's rules, and its text
    // carries the language's marker, by which a query knows to be analysed by those rules
    // too. Every searched field follows the chunk's language, the title and the snippet too:
    // a query is analysed by the rules of every language the index holds, so it meets each
    // field with the terms the field was indexed with.
    let language = r.language();
    if !language.has_own_rules() {
        doc.add_text(f.metadata_terms, language.marker());
    }
    let add_searched = |doc: &mut TantivyDocument, field, text: String, marked: bool| {
        if language.analysed_as_english() {
            doc.add_text(field, text);
        } else {
            doc.add_pre_tokenized_text(field, analysis::pre_tokenized(&text, language, marked));
        }
    };
    add_searched(&mut doc, f.path_text, path_words(&r.path), false);
    add_searched(&mut doc, f.title, r.title.clone(), false);
    add_searched(
        &mut doc,
        f.headings,
        context::context_headings(&r.title, &r.heading_path).join(" > "),
        false,
    );
    doc.add_text(f.heading_path, serde_json::to_string(&r.heading_path).unwrap_or_default());
    add_searched(&mut doc, f.text, context::searchable(&r.text).into_owned(), true);
    doc.add_text(f.stored_text, &r.text);
    doc.add_text(f.context, &r.context);
    if !r.metadata.is_empty() {
        doc.add_text(f.metadata, serde_json::to_string(&r.metadata).unwrap_or_default());
        for term in super::metadata::terms(&r.metadata) {
            doc.add_text(f.metadata_terms, term);
        }
        add_searched(&mut doc, f.metadata_text, context::header_field_values(&r.context), false);
    }
    if let Some(snippet) = &r.snippet {
        // A snippet is analysed by its chunk's language, not by one detected in it: the
        // model is asked to situate the chunk in the document's own terms, which are words
        // of the chunk's language, and the English words it may add still meet a query
        // analysed by that language's rules. Coverage and previews read the snippet by the
        // chunk's language too.
        add_searched(&mut doc, f.snippet, snippet.text.clone(), false);
        doc.add_text(f.snippet_key, format!("{:032x}", r.snippet_key));
        doc.add_text(f.snippet_model, &snippet.model);
        doc.add_u64(f.snippet_at, snippet.created_at);
    }
    doc.add_u64(f.token_count, r.token_count as u64);
    doc.add_u64(f.content_hash, r.content_hash);
    doc.add_u64(f.embed_hash, r.embed_hash);
    doc.add_u64(f.file_size, file.0);
    doc.add_u64(f.file_mtime, file.1);
    doc.add_u64(f.file_hash, file.2);
    doc
}
