//! Search hits and stored chunks as `situate search --json` and `situate show --json` print
//! them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::ChunkRecord;
use crate::search::preview::PreviewLine;
use crate::search::{Expansion, Hit};
use crate::snippets::Snippet;

/// A stored chunk: where it lies, its text and the context it was indexed with.
#[derive(Debug, Clone, Serialize)]
pub struct ChunkJson {
    pub id: u64,
    pub path: String,
    pub ordinal: u32,
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: u64,
    pub end_byte: u64,
    pub title: String,
    pub heading_path: Vec<String>,
    pub text: String,
    pub context: String,
    pub snippet: Option<SnippetJson>,
    pub token_count: u32,
    pub content_hash: u64,
    pub embed_hash: u64,
    /// The front matter fields of its document, each with its values.
    pub metadata: BTreeMap<String, Vec<String>>,
    /// The code of the language whose rules analysed its words (`en`, `de`).
    pub language: &'static str,
}

/// An LLM-written snippet: its text, the model that wrote it and when (Unix seconds).
#[derive(Debug, Clone, Serialize)]
pub struct SnippetJson {
    pub text: String,
    pub model: String,
    pub created_at: u64,
}

/// One search hit: the chunk, its fused score and each arm's rank and score.
#[derive(Debug, Clone, Serialize)]
pub struct HitJson {
    #[serde(flatten)]
    pub chunk: ChunkJson,
    pub score: f32,
    pub bm25_rank: Option<u32>,
    pub vector_rank: Option<u32>,
    pub bm25_score: Option<f32>,
    pub vector_similarity: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expanded: Option<ExpansionJson>,
    /// The lines that show why the chunk matched.
    pub preview: Vec<PreviewJson>,
}

/// A line that shows why a hit matched: its 1-based line in the file, its text (cut when
/// long), and the matched terms as `[start, end)` offsets in Unicode characters of `text`.
#[derive(Debug, Clone, Serialize)]
pub struct PreviewJson {
    pub line: u32,
    pub text: String,
    pub marks: Vec<[usize; 2]>,
}

impl From<&PreviewLine> for PreviewJson {
    fn from(p: &PreviewLine) -> Self {
        let chars = |byte: usize| p.text[..byte].chars().count();
        PreviewJson {
            line: p.line,
            text: p.text.clone(),
            marks: p.marks.iter().map(|&(s, e)| [chars(s), chars(e)]).collect(),
        }
    }
}

/// The passage a hit was widened to.
#[derive(Debug, Clone, Serialize)]
pub struct ExpansionJson {
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: u64,
    pub end_byte: u64,
    pub heading_path: Vec<String>,
    pub first_ordinal: u32,
    pub last_ordinal: u32,
    pub hit_ordinals: Vec<u32>,
    pub text: String,
}

impl From<&Snippet> for SnippetJson {
    fn from(s: &Snippet) -> Self {
        SnippetJson { text: s.text.clone(), model: s.model.clone(), created_at: s.created_at }
    }
}

impl From<&ChunkRecord> for ChunkJson {
    fn from(c: &ChunkRecord) -> Self {
        ChunkJson {
            id: c.id,
            path: c.path.clone(),
            ordinal: c.ordinal,
            start_line: c.start_line,
            end_line: c.end_line,
            start_byte: c.start_byte,
            end_byte: c.end_byte,
            title: c.title.clone(),
            heading_path: c.heading_path.clone(),
            text: c.text.clone(),
            context: c.context.clone(),
            snippet: c.snippet.as_ref().map(SnippetJson::from),
            token_count: c.token_count,
            content_hash: c.content_hash,
            embed_hash: c.embed_hash,
            metadata: c.metadata.clone(),
            language: c.language().code(),
        }
    }
}

impl From<&Expansion> for ExpansionJson {
    fn from(e: &Expansion) -> Self {
        ExpansionJson {
            start_line: e.start_line,
            end_line: e.end_line,
            start_byte: e.start_byte,
            end_byte: e.end_byte,
            heading_path: e.heading_path.clone(),
            first_ordinal: e.first_ordinal,
            last_ordinal: e.last_ordinal,
            hit_ordinals: e.hit_ordinals.clone(),
            text: e.text.clone(),
        }
    }
}

impl From<&Hit> for HitJson {
    fn from(h: &Hit) -> Self {
        HitJson {
            chunk: ChunkJson::from(&h.chunk),
            score: h.score,
            bm25_rank: h.bm25_rank,
            vector_rank: h.vector_rank,
            bm25_score: h.bm25_score,
            vector_similarity: h.vector_similarity,
            expanded: h.expanded.as_ref().map(ExpansionJson::from),
            preview: h.preview.iter().map(PreviewJson::from).collect(),
        }
    }
}
