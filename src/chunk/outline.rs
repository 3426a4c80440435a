//! The structure that the parsers hand to the splitters: sections bounded by headings, each
//! a run of blocks.

use std::ops::Range;

use super::tags::Tags;

/// A stretch of the document under one heading (or before the first heading).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    /// Headings in effect, outermost first, including this section's own heading.
    pub heading_path: Vec<String>,
    /// From the heading's first byte (or the body's start) to the next heading's first byte
    /// (or the end of the document).
    pub range: Range<usize>,
    /// The heading that opens this section, if any.
    pub heading: Option<Range<usize>>,
    /// The blocks after the heading, in order. Only their start and kind are kept: a block
    /// extends to the start of the next one, so that the blocks tile the section and text the
    /// parser emits no block for (link reference definitions, stray blank lines) is never
    /// lost.
    pub blocks: Vec<Block>,
}

/// One block of a section body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    pub start: usize,
    pub kind: BlockKind,
}

/// How an oversized block is cut into smaller units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// Running text (paragraphs, block quotes, footnotes): cut at sentences.
    Prose,
    /// List items: cut at lines and at sentences.
    ListItem,
    /// Line-oriented text (code, tables, HTML, the heading itself): cut at lines.
    Lines,
}

/// A parsed document: its sections in order, the first H1 as a title candidate, and the
/// tags written in its text (`tags.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outline {
    pub sections: Vec<Section>,
    pub first_h1: Option<String>,
    pub tags: Tags,
}

impl Section {
    /// The byte ranges of the section's blocks, tiling the section. The heading, when there
    /// is one, is merged into the first block so that a chunk never holds a heading alone.
    pub(crate) fn block_ranges(&self) -> Vec<(Range<usize>, BlockKind)> {
        let mut ranges = Vec::with_capacity(self.blocks.len());
        for (i, block) in self.blocks.iter().enumerate() {
            let start = if i == 0 { self.range.start } else { block.start };
            let end = self.blocks.get(i + 1).map_or(self.range.end, |next| next.start);
            ranges.push((start..end, block.kind));
        }
        ranges
    }
}
