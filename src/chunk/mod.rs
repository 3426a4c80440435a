//! Chunking: a document's text in, heading-aware chunks and warnings out.
//!
//! Chunking is pure: no IO, and it never panics on any input. Every chunk keeps the exact
//! byte range and 1-based inclusive line range of its text in the raw file (front matter
//! included), and the heading path above it, so that the context it loses when cut out of
//! its document can be put back at index time.

mod boundaries;
mod budget;
mod fence;
mod fixed;
// Public for the fuzz targets only; the chunker reads front matter itself.
#[doc(hidden)]
pub mod front_matter;
mod lines;
mod markdown;
mod outline;
mod pieces;
mod semantic;
mod split;
mod tags;
mod text;
pub(crate) mod tokens;
mod vault;
mod window;

use std::ops::Range;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

pub use fence::Fence;
use front_matter::Detection;
pub use front_matter::Metadata;
use lines::LineIndex;
pub use markdown::{is_esm, script_or_style_closing_tag};
use split::Splitter;
pub use tags::INLINE_TAGS;
pub use vault::note_name;
use window::RawChunk;

/// Where the sentences of `text` after its first one start (byte offsets), by the rules the
/// chunker cuts prose with: stops in every script, closing quotes kept with their sentence.
pub fn sentence_starts(text: &str) -> Vec<usize> {
    boundaries::sentence_starts(text, 0..text.len())
}

/// How a document is cut into chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkStrategy {
    /// Heading-bounded sections, split at paragraphs then sentences when over budget.
    Section,
    /// Fixed token windows with overlap, blind to structure: the baseline.
    Fixed,
    /// Heading-bounded sections, also cut where the meaning of consecutive sentences jumps
    /// (their embeddings' distance is an outlier in the section), then fitted to the budget
    /// like `Section`.
    Semantic,
}

/// What kind of text a file holds, which decides how it is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocKind {
    /// CommonMark with tables, footnotes and front matter: sections follow its headings.
    Markdown,
    /// MDX: markdown whose top-level `import` and `export` statements are the page's
    /// machinery, never its text.
    Mdx,
    /// Plain text: no headings; paragraphs are separated by blank lines.
    Text,
}

/// Chunking parameters, validated by `config`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkConfig {
    pub strategy: ChunkStrategy,
    /// Budget of one chunk: cl100k tokens, a CJK letter counting two thirds of one and a run
    /// of base64 one for every 16 bytes (`budget.rs`); the `section` and `semantic`
    /// strategies count so, `fixed` counts plain tokens.
    pub max_tokens: usize,
    /// Tokens repeated between consecutive pieces of a split section or fixed windows.
    pub overlap_tokens: usize,
    /// `k` of the `semantic` strategy: a section is cut where the distance between two
    /// consecutive sentences exceeds the mean of its distances by `k` standard deviations.
    pub semantic_threshold: f32,
    /// The language of every document whose front matter names none (`chunk.language`):
    /// it is given to them as their `language` front matter field. `None` lets the language
    /// of each chunk be detected.
    pub language: Option<String>,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        ChunkConfig {
            strategy: ChunkStrategy::Section,
            max_tokens: 400,
            overlap_tokens: 40,
            semantic_threshold: 2.0,
            language: None,
        }
    }
}

/// Embeds sentences for the `semantic` strategy: one vector per text, in order, or why not.
/// Chunking stays pure as long as this function is (a model in memory, a fake in tests).
pub type SentenceEmbedder<'a> = dyn Fn(&[&str]) -> Result<Vec<Vec<f32>>, String> + 'a;

/// One chunk of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Position of the chunk in its file, from 0, in document order.
    pub ordinal: u32,
    /// Byte range of `text` in the raw file.
    pub byte_range: Range<usize>,
    /// First line of the chunk, 1-based, counted on the raw file.
    pub start_line: u32,
    /// Last line of the chunk, 1-based and inclusive.
    pub end_line: u32,
    /// Headings above the chunk, outermost first (H1 … H6 texts, markup stripped).
    pub heading_path: Vec<String>,
    /// The original text, exactly `raw[byte_range]`.
    pub text: String,
    /// cl100k token count of `text` (not the budget's units: a chunk of CJK text may hold
    /// more tokens than the budget's number).
    pub token_count: u32,
    /// xxh3 hash of `text`.
    pub content_hash: u64,
}

/// The result of chunking one document.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChunkedDocument {
    /// Front matter `title:`, else the first H1, else the file name without its extension.
    pub title: String,
    /// The front matter's top-level fields, with the tags written in a markdown note's text
    /// added to its `tags` (empty without either).
    pub metadata: Metadata,
    /// The chunks, in document order.
    pub chunks: Vec<Chunk>,
    /// Problems noticed on the way (broken front matter, an oversized block split hard, …).
    pub warnings: Vec<String>,
}

/// Cuts `text` into chunks. `file_name` without its extension is the fallback title.
///
/// Never fails and never panics: problems (unclosed front matter, text cut between tokens)
/// come back as warnings next to the chunks. With no sentence embedder, the `semantic`
/// strategy cuts by size only, like `section`, and says so in a warning; use
/// [`chunk_document_with`] to give it one.
pub fn chunk_document(file_name: &str, text: &str, kind: DocKind, config: &ChunkConfig) -> ChunkedDocument {
    chunk_document_with(file_name, text, kind, config, &|_| Err("no sentence embedder was given".to_string()))
}

/// [`chunk_document`] with the embedder that the `semantic` strategy cuts by; the other
/// strategies never call it. An embedder that fails leaves the document cut by size only,
/// with a warning.
pub fn chunk_document_with(
    file_name: &str,
    text: &str,
    kind: DocKind,
    config: &ChunkConfig,
    embed: &SentenceEmbedder<'_>,
) -> ChunkedDocument {
    let mut warnings = Vec::new();
    let lines = LineIndex::new(text);
    // A byte order mark is an encoding artefact, not content: it would hide a heading on the
    // first line from the parser.
    let bom = if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
    let (body_start, front_title, mut metadata) = match kind {
        DocKind::Text => (bom, None, Metadata::new()),
        DocKind::Markdown | DocKind::Mdx => match front_matter::detect(text) {
            Detection::Absent => (bom, None, Metadata::new()),
            Detection::Unclosed => {
                warnings.push(
                    "line 1: front matter is opened but never closed; it is read as markdown".to_string(),
                );
                (bom, None, Metadata::new())
            }
            Detection::Found(front_matter) => {
                warnings.extend(front_matter.problems);
                (front_matter.body_start, front_matter.title, front_matter.fields)
            }
        },
    };
    // Read before a setting supplies a language: what the note itself says.
    let front_matter_has_values = metadata.values().any(|values| !values.is_empty());
    if let Some(language) = &config.language {
        front_matter::supply_language(&mut metadata, language);
    }
    let mut body = body_start..text.len();
    let mut outline = match kind {
        DocKind::Markdown => markdown::parse(text, body.clone(), false),
        DocKind::Mdx => markdown::parse(text, body.clone(), true),
        DocKind::Text => text::parse(text, body.clone()),
    };
    // A tag written anywhere in a note is the note's tag, as in Obsidian's tag pane.
    tags::add_to(&mut metadata, std::mem::take(&mut outline.tags));
    let drawing = vault::is_drawing(&metadata);
    if drawing {
        outline = vault::text_elements(outline);
        body = match (outline.sections.first(), outline.sections.last()) {
            (Some(first), Some(last)) => first.range.start..last.range.end,
            _ => body.end..body.end,
        };
    }
    let title = label(
        &front_title
            .or_else(|| outline.first_h1.clone().filter(|h| !vault::is_placeholder(h)))
            .unwrap_or_else(|| vault::note_name(file_name).to_string()),
    );

    let mut raw_chunks: Vec<(RawChunk, Vec<String>)> = match config.strategy {
        ChunkStrategy::Section => {
            let mut splitter =
                Splitter::new(text, &lines, config.max_tokens, config.overlap_tokens, &mut warnings);
            outline
                .sections
                .iter()
                .flat_map(|section| {
                    splitter
                        .split_section(section)
                        .into_iter()
                        .map(|chunk| (chunk, section.heading_path.clone()))
                        .collect::<Vec<_>>()
                })
                .collect()
        }
        ChunkStrategy::Fixed => {
            fixed::fixed_chunks(text, body.clone(), &outline, config.max_tokens, config.overlap_tokens)
        }
        ChunkStrategy::Semantic => {
            semantic::semantic_chunks(text, &lines, &outline, config, embed, &mut warnings)
        }
    };

    // A body without a letter or digit and without a heading (a rule, a row of dashes) says
    // nothing a search could find: the `section` strategy makes no chunk of it.
    let has_headings = outline.sections.iter().any(|s| s.heading.is_some());
    let body_says_nothing = !has_headings && !text[body.clone()].chars().any(char::is_alphanumeric);

    // A section of a heading alone gives no chunk: its heading is in the path of the chunks
    // below it. A note of headings alone (a title with nothing under it yet) has no chunks
    // below them, and would be found by no search: its headings are its text.
    if raw_chunks.is_empty() && has_headings {
        // A drawing's sections are those of its element texts, which need not follow one
        // another: each is chunked by itself, never the drawing's other sections between them.
        let ranges =
            if drawing { outline.sections.iter().map(|s| s.range.clone()).collect() } else { vec![body] };
        raw_chunks = ranges
            .into_iter()
            .flat_map(|range| {
                fixed::fixed_chunks(text, range, &outline, config.max_tokens, config.overlap_tokens)
            })
            .collect();
    }
    // A note of front matter alone (a person's note of aliases and tags) would be found by
    // no search either, though its names are what it is searched by: its front matter is its
    // text, and its header carries its title and fields as every chunk's does. So is a note
    // whose body says nothing, whatever the strategy.
    if (raw_chunks.is_empty() || body_says_nothing) && front_matter_has_values && !drawing {
        let front_matter = bom..body_start;
        raw_chunks =
            fixed::fixed_chunks(text, front_matter, &outline, config.max_tokens, config.overlap_tokens);
    }

    let chunks = raw_chunks
        .into_iter()
        .enumerate()
        .map(|(ordinal, (raw, heading_path))| {
            let chunk_text = &text[raw.range.clone()];
            Chunk {
                ordinal: u32::try_from(ordinal).unwrap_or(u32::MAX),
                start_line: lines.line_of(raw.range.start),
                // Ranges are trimmed, so never empty: the last byte is `end - 1`.
                end_line: lines.line_of(raw.range.end.saturating_sub(1)),
                byte_range: raw.range,
                heading_path,
                text: chunk_text.to_string(),
                token_count: u32::try_from(raw.tokens).unwrap_or(u32::MAX),
                content_hash: xxh3_64(chunk_text.as_bytes()),
            }
        })
        .collect();

    ChunkedDocument { title, metadata, chunks, warnings }
}

/// Whether a chunk's text is headings and nothing else that holds a word (a list mark, an
/// empty checkbox): the one chunk of a note of headings alone, such as a daily note left as
/// its template made it, or the template itself. Its text says nothing its headings do not,
/// and its vector, of a header and a few headings, lies near every query.
pub fn holds_headings_alone(text: &str) -> bool {
    let mut headings = 0;
    for line in text.lines() {
        if is_atx_heading(line) {
            headings += 1;
        } else if line.chars().any(char::is_alphanumeric) {
            return false;
        }
    }
    headings > 0
}

/// Whether `line` is an ATX heading: one to six `#` (after blanks), then a blank or the
/// line's end. A tag (`#ops`) or seven marks make none. Whether the line lies inside a
/// fenced code block, where `#` opens a comment, is the caller's to tell.
pub fn is_atx_heading(line: &str) -> bool {
    let line = line.trim_start();
    let marks = line.len() - line.trim_start_matches('#').len();
    (1..=6).contains(&marks) && line[marks..].chars().next().is_none_or(char::is_whitespace)
}

/// The most characters a title or a heading carries into a chunk's header. Every chunk of a
/// section repeats its heading path, so an unbounded heading (a 1 MB line after a `#`) would
/// cost its length once per chunk: quadratic in the file's size. A real heading is far
/// shorter.
pub const MAX_LABEL_CHARS: usize = 200;

/// `text` cut to [`MAX_LABEL_CHARS`] characters, with `…` where it was cut.
pub fn label(text: &str) -> String {
    match text.char_indices().nth(MAX_LABEL_CHARS) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::holds_headings_alone;

    #[test]
    fn a_chunk_of_headings_and_wordless_lines_holds_headings_alone() {
        assert!(holds_headings_alone("# 2026-12-01\n\n## Tasks\n- [ ] \n\n## Journal\n\n## Meetings\n- \n"));
        assert!(holds_headings_alone("# {{date}}"));
        assert!(holds_headings_alone("### Ferry timetable\n---\n"));
        // A word anywhere but a heading, a tag, a setext heading's text or a code comment.
        assert!(!holds_headings_alone("# 2026-12-01\n\n## Journal\nMended the fence.\n"));
        assert!(!holds_headings_alone("# Garden\n#todo\n"));
        assert!(!holds_headings_alone("Garden\n======\n"));
        assert!(!holds_headings_alone("```sh\n# install\n```\n"));
        assert!(!holds_headings_alone("####### seven marks is no heading"));
        assert!(!holds_headings_alone(""));
        assert!(!holds_headings_alone("- [ ]\n"));
    }
}
