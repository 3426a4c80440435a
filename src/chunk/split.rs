//! The `section` strategy's packing: a section that fits the token budget is one chunk; a
//! longer one is cut at block boundaries, an oversized block at sentences or lines, an
//! oversized sentence or line between tokens, and the pieces are packed greedily into chunks
//! that overlap by about `overlap_tokens`. The budget and the overlap are counted in
//! [`budget`] units (cl100k tokens, a CJK letter two thirds of one); the chunks carry
//! their cl100k counts.

use std::ops::Range;

use super::boundaries::{content_line_starts, sentence_starts, units};
use super::budget::{self, Measure};
use super::fence::Fence;
use super::lines::LineIndex;
use super::outline::{BlockKind, Section};
use super::tokens::{self, ceil_char_boundary};
use super::window::{Counting, RawChunk, token_windows, trim};

/// The smallest thing the packer moves around: a whole block, or a unit of an oversized one.
#[derive(Debug, Clone)]
struct Piece {
    /// The piece with its trailing whitespace; consecutive pieces tile the section.
    range: Range<usize>,
    /// Budget units of `text[range]`, at most the budget. Exact, except for the fragments of
    /// a giant run, which are counted in place (in cl100k tokens, never fewer than its
    /// units) and may be off by a token at their edges.
    tokens: usize,
    grain: Grain,
    /// The first line of an oversized code block, table or HTML block: it opens a new chunk
    /// rather than fill the end of the previous one with a lone opening fence or header row.
    starts_chunk: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grain {
    /// A whole block, which the overlap may still cut into sentences or lines.
    Block(BlockKind),
    /// A sentence of prose.
    Sentence,
    /// A piece of a sentence too long for the budget, cut between tokens.
    Fragment,
    /// A line (or a sentence of a line) of code, a table, HTML or a list item, or a heading:
    /// text where a cut in mid-line would read badly, so the overlap never starts inside one.
    Line,
}

/// Tokens kept free next to a heading when the first unit after it is measured, because
/// joining two texts can shift a token or two across the seam.
const SEAM_TOKENS: usize = 2;

/// More bytes per cl100k token than text of any kind averages over a whole section, bar
/// padded tables and runs of blanks (English prose averages about four).
const LIKELY_BYTES_PER_TOKEN: usize = 10;

/// Cuts sections into chunks within one document.
pub(crate) struct Splitter<'a> {
    text: &'a str,
    lines: &'a LineIndex,
    max_tokens: usize,
    overlap_tokens: usize,
    warnings: &'a mut Vec<String>,
    /// The document's fenced code blocks and comments over several lines, each from the line
    /// that opens it to the end of the line that closes it ([`fences_and_comments`]), in order.
    blocks: Vec<Range<usize>>,
}

impl<'a> Splitter<'a> {
    /// `max_tokens` is raised to 1 and `overlap_tokens` capped at half the budget, so that
    /// every chunk holds text and consecutive chunks always move forward.
    pub(crate) fn new(
        text: &'a str,
        lines: &'a LineIndex,
        max_tokens: usize,
        overlap_tokens: usize,
        warnings: &'a mut Vec<String>,
    ) -> Splitter<'a> {
        let max_tokens = max_tokens.max(1);
        Splitter {
            text,
            lines,
            max_tokens,
            overlap_tokens: overlap_tokens.min(max_tokens / 2),
            warnings,
            blocks: fences_and_comments(text),
        }
    }

    /// The chunks of one section, in order. A section without body blocks yields none.
    pub(crate) fn split_section(&mut self, section: &Section) -> Vec<RawChunk> {
        let blocks = section.block_ranges();
        if blocks.is_empty() {
            return Vec::new();
        }
        // Most sections fit the budget: then they are one chunk, and counting the section
        // once is all the tokenizing they need. A section with more bytes than tokens ever
        // average out to skips the try, which would only tokenize its first segment in vain
        // (and if it fits after all, the packer still makes it one chunk).
        let Some(whole) = trim(self.text, section.range.clone()) else {
            return Vec::new();
        };
        if whole.len() <= self.max_tokens.saturating_mul(LIKELY_BYTES_PER_TOKEN) {
            let count = budget::measure_capped(&self.text[whole.clone()], self.max_tokens);
            if count.units <= self.max_tokens {
                return vec![RawChunk { range: whole, tokens: count.tokens }];
            }
        }
        let counts: Vec<usize> = blocks
            .iter()
            .map(|(range, _)| budget::units_capped(&self.text[range.clone()], self.max_tokens))
            .collect();
        let mut pieces = Vec::new();
        for (i, ((range, kind), count)) in blocks.into_iter().zip(counts).enumerate() {
            if count <= self.max_tokens {
                pieces.push(Piece { range, tokens: count, grain: Grain::Block(kind), starts_chunk: false });
            } else if i == 0 && section.heading.is_some() {
                self.split_heading_block(range, kind, section.blocks[0].start, &mut pieces);
            } else {
                let fresh = kind == BlockKind::Lines;
                self.split_block(range, kind, self.max_tokens, fresh, &mut pieces);
            }
        }
        self.pack(&pieces)
    }

    /// Splits the first block of a section, which starts with the section's heading: the
    /// heading becomes a unit of its own, and the unit after it is measured against what the
    /// heading leaves of the budget so that the two always fit in one chunk.
    fn split_heading_block(
        &mut self,
        range: Range<usize>,
        kind: BlockKind,
        body_start: usize,
        pieces: &mut Vec<Piece>,
    ) {
        let body_start = body_start.clamp(range.start, range.end);
        let heading = range.start..body_start;
        let heading_tokens = budget::units_capped(&self.text[heading.clone()], self.max_tokens);
        let first_budget = if heading_tokens + SEAM_TOKENS < self.max_tokens {
            self.max_tokens - heading_tokens - SEAM_TOKENS
        } else {
            self.max_tokens
        };
        if heading_tokens <= self.max_tokens {
            pieces.push(Piece {
                range: heading,
                tokens: heading_tokens,
                grain: Grain::Line,
                starts_chunk: false,
            });
        } else {
            self.hard_split(heading, self.max_tokens, Grain::Line, pieces);
        }
        // The heading already opens a chunk; its first block must stay with it.
        self.split_block(body_start..range.end, kind, first_budget, false, pieces);
    }

    /// Cuts an oversized block into units (sentences for prose and list items, lines
    /// otherwise), cutting any unit still over budget between tokens. `first_budget` applies
    /// to the first unit only; `fresh` makes that unit open a new chunk.
    fn split_block(
        &mut self,
        range: Range<usize>,
        kind: BlockKind,
        first_budget: usize,
        fresh: bool,
        pieces: &mut Vec<Piece>,
    ) {
        let first_piece = pieces.len();
        let grain = match kind {
            BlockKind::Prose => Grain::Sentence,
            BlockKind::ListItem | BlockKind::Lines => Grain::Line,
        };
        // Where the first unit that had to be cut between tokens starts, for the warning.
        let mut cut_hard: Option<usize> = None;
        for unit in units_of(self.text, range.clone(), kind) {
            let budget = if pieces.len() == first_piece { first_budget } else { self.max_tokens };
            let count = budget::units_capped(&self.text[unit.clone()], self.max_tokens);
            if count <= budget {
                pieces.push(Piece { range: unit, tokens: count, grain, starts_chunk: false });
            } else {
                // A unit that only misses the room a heading leaves is no surprise; one over
                // the whole budget is worth a warning.
                if count > self.max_tokens && cut_hard.is_none() {
                    cut_hard = Some(unit.start);
                }
                let fragment = if grain == Grain::Sentence { Grain::Fragment } else { grain };
                self.hard_split(unit, budget, fragment, pieces);
            }
        }
        if let Some(first) = pieces.get_mut(first_piece) {
            first.starts_chunk = fresh;
        }
        if let Some(start) = cut_hard {
            let line = self.lines.line_of(start);
            self.warnings.push(format!(
                "line {line}: text with no sentence or line break within {} tokens was cut between tokens",
                self.max_tokens
            ));
        }
    }

    /// Cuts `range` into pieces of at most `first_budget` (the first) and `max_tokens` (the
    /// rest) tokens, between tokens, preferring the end of a word.
    ///
    /// Pieces of prose leave room for the overlap, which the packer can then put in front of
    /// each of them. Their counts are taken in place from one tokenization of the whole run
    /// (the packer measures each chunk anyway), so a megabyte-long run costs two passes of
    /// the tokenizer, not three. The windows are cut by cl100k tokens, which are never fewer
    /// than the units they hold: a run of CJK letters is cut a little shorter than its
    /// budget allows, never longer.
    fn hard_split(
        &mut self,
        range: Range<usize>,
        first_budget: usize,
        grain: Grain,
        pieces: &mut Vec<Piece>,
    ) {
        let budget =
            if grain == Grain::Fragment { self.max_tokens - self.overlap_tokens } else { self.max_tokens };
        let slice = &self.text[range.clone()];
        let windows = token_windows(slice, first_budget.min(budget), budget, 0, Counting::InPlace);
        for window in windows {
            pieces.push(Piece {
                range: range.start + window.range.start..range.start + window.range.end,
                tokens: window.tokens,
                grain,
                starts_chunk: false,
            });
        }
    }

    /// Packs pieces greedily into chunks of at most `max_tokens`, each chunk after the first
    /// starting with the tail of the previous one as overlap when it fits.
    fn pack(&mut self, pieces: &[Piece]) -> Vec<RawChunk> {
        let mut chunks = Vec::new();
        let mut i = 0;
        // Where the next chunk starts when it repeats the end of the previous one, and how
        // many tokens that repeated text holds.
        let mut overlap: Option<(usize, usize)> = None;
        while i < pieces.len() {
            let (mut start, mut used) = match overlap.take() {
                Some((start, tokens)) if tokens + pieces[i].tokens <= self.max_tokens => (start, tokens),
                _ => (pieces[i].range.start, 0),
            };
            used += pieces[i].tokens;
            let mut j = i;
            while j + 1 < pieces.len()
                && !pieces[j + 1].starts_chunk
                && used + pieces[j + 1].tokens <= self.max_tokens
            {
                j += 1;
                used += pieces[j].tokens;
            }
            // Sums of piece counts are close to the count of the joined text, not equal to it:
            // measure the real chunk and shed overlap, then pieces, until it fits.
            let made = loop {
                let range = trim(self.text, start..pieces[j].range.end);
                let Measure { tokens, units: count } = range
                    .as_ref()
                    .map_or(Measure { tokens: 0, units: 0 }, |r| budget::measure(&self.text[r.clone()]));
                if count <= self.max_tokens {
                    break Vec::from_iter(range.map(|range| RawChunk { range, tokens }));
                }
                if start < pieces[i].range.start {
                    start = pieces[i].range.start;
                } else if j > i {
                    // Shed at least as many tokens as the chunk is over, so that a long run of
                    // small pieces does not cost one recount per piece.
                    let mut shed = 0;
                    while j > i && shed < count - self.max_tokens {
                        shed += pieces[j].tokens.max(1);
                        j -= 1;
                    }
                } else {
                    // A piece measured with its surrounding blanks, or in place inside a giant
                    // run, can count more on its own; cut it between tokens rather than exceed
                    // the budget.
                    let piece = &pieces[i];
                    let slice = &self.text[piece.range.clone()];
                    let (max, base) = (self.max_tokens, piece.range.start);
                    break token_windows(slice, max, max, 0, Counting::Exact)
                        .into_iter()
                        .filter_map(|window| {
                            let range = trim(self.text, base + window.range.start..base + window.range.end)?;
                            Some(RawChunk { range, tokens: window.tokens })
                        })
                        .collect();
                }
            };
            let first = i;
            i = j + 1;
            // The overlap must start after the chunk's first non-blank byte, or the next chunk
            // would start where this one does.
            let content_start = made.last().map_or(start, |chunk| chunk.range.start);
            for chunk in made {
                // A chunk that ends where the previous one did holds nothing new (only blanks
                // after the overlap); drop it.
                if chunks.last().is_none_or(|last: &RawChunk| chunk.range.end > last.range.end) {
                    chunks.push(chunk);
                }
            }
            if i < pieces.len() && self.overlap_tokens > 0 {
                let end = pieces[i - 1].range.end;
                overlap = self
                    .overlap_start(&pieces[first..i], content_start)
                    .and_then(|(start, tokens)| self.outside_closed_blocks(start, tokens, end));
            }
        }
        chunks
    }

    /// The start (and token count) of the overlap to repeat from a chunk made of `pieces`
    /// whose text starts at `chunk_start`: the longest run of whole trailing sentences or lines
    /// within `overlap_tokens`. When even the last sentence or line is longer, it is taken
    /// whole if it is at most half as long again, else the last words of a prose sentence
    /// are taken (a cut line of code, a table row or a list line would only confuse).
    fn overlap_start(&self, pieces: &[Piece], chunk_start: usize) -> Option<(usize, usize)> {
        let tolerance = self.overlap_tokens + self.overlap_tokens / 2;
        let mut start = None;
        let mut total = 0;
        for piece in pieces.iter().rev() {
            let tail_units = match piece.grain {
                Grain::Block(kind) => units_of(self.text, piece.range.clone(), kind),
                Grain::Sentence | Grain::Line => vec![piece.range.clone()],
                // A piece of a cut sentence is no whole unit: only its last words can repeat.
                Grain::Fragment if start.is_none() => {
                    return self.words_tail(piece.range.clone(), chunk_start);
                }
                Grain::Fragment => break,
            };
            let prose = matches!(piece.grain, Grain::Sentence | Grain::Block(BlockKind::Prose));
            for unit in tail_units.into_iter().rev() {
                // Repeating the whole chunk would make no progress.
                let inside = unit.start > chunk_start;
                // A piece that is a single unit is already measured (in place, for pieces of
                // a giant run, whose recount would be a whole extra tokenizer pass).
                let count = if unit == piece.range {
                    piece.tokens
                } else {
                    budget::units_capped(&self.text[unit.clone()], tolerance)
                };
                if inside && total + count <= self.overlap_tokens {
                    total += count;
                    start = Some(unit.start);
                    continue;
                }
                if start.is_some() {
                    return start.map(|s| (s, total));
                }
                if inside && count <= tolerance {
                    return Some((unit.start, count));
                }
                return if prose { self.words_tail(unit, chunk_start) } else { None };
            }
        }
        start.map(|s| (s, total))
    }

    /// The overlap starting at `start` (of `tokens` tokens, up to `end`), moved past the end
    /// of a fenced code block or a `%%` comment that it would start inside and that closes
    /// before `end`: a chunk that opens with the last lines of a code block and its closing
    /// fence reads as one whose prose is code, to the previews that show it and to the
    /// detection of its language, and one that opens inside a comment as one whose comment
    /// is text and whose text is hidden. `None` when only blanks would be left. The overlap of
    /// a chunk that ends inside a block too long for one chunk stays as it was: the next
    /// chunk starts inside the block whatever its overlap.
    fn outside_closed_blocks(&self, start: usize, tokens: usize, end: usize) -> Option<(usize, usize)> {
        let at = self.blocks.partition_point(|block| block.end <= start);
        // A chunk closes a block when it holds the closing line's content: it may end right
        // after the fence, before the line break.
        let closed = |block: &&Range<usize>| {
            block.start < start && block.start + self.text[(*block).clone()].trim_end().len() <= end
        };
        let Some(block) = self.blocks.get(at).filter(closed) else {
            return Some((start, tokens));
        };
        if block.end >= end || self.text[block.end..end].trim().is_empty() {
            return None;
        }
        Some((block.end, budget::units_capped(&self.text[block.end..end], tokens)))
    }

    /// About `overlap_tokens` tokens from the end of `unit`, starting at a word after
    /// `chunk_start`.
    fn words_tail(&self, unit: Range<usize>, chunk_start: usize) -> Option<(usize, usize)> {
        let content = self.text[unit.clone()].trim_end();
        // Only the end of the unit matters: tokenize a stretch of it long enough to hold the
        // overlap unless its tokens are unusually long, never the whole of a giant run.
        let reach = self.overlap_tokens.saturating_mul(32).saturating_add(64);
        let tail_start = ceil_char_boundary(content, content.len().saturating_sub(reach));
        let tail = &content[tail_start..];
        let ends = tokens::token_ends(tail);
        let from =
            if ends.len() > self.overlap_tokens { ends[ends.len() - self.overlap_tokens - 1] } else { 0 };
        let bytes = tail.as_bytes();
        // The first word that starts after `from`: a non-blank byte right after a blank one.
        let word = (from.max(1)..tail.len())
            .find(|&p| bytes[p - 1].is_ascii_whitespace() && !bytes[p].is_ascii_whitespace())?;
        let start = unit.start + tail_start + word;
        if start <= chunk_start {
            return None;
        }
        let count = budget::units(&self.text[start..unit.end]);
        Some((start, count))
    }
}

/// The fenced code blocks of `text` and its Obsidian comments over several lines, each from
/// the start of the line that opens it to the end of the line that closes it. A block's
/// fences are read as CommonMark reads them ([`Fence`]); a comment opens on a line with an
/// odd number of `%%` outside inline code and closes on the next such line (a comment hides
/// the fences inside it). A block left open runs to the end. Previews tell code by the same
/// fences, and comments by lines of the same kind.
fn fences_and_comments(text: &str) -> Vec<Range<usize>> {
    enum Open {
        Fence(usize, Fence),
        Comment(usize),
    }
    let mut blocks = Vec::new();
    let mut open: Option<Open> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let end = offset + line.len();
        // A `%%` between backticks is code (`` `%%` ``), as previews read it.
        let toggles_comment = || {
            line.split('`').step_by(2).map(|outside| outside.matches("%%").count()).sum::<usize>() % 2 == 1
        };
        match open {
            Some(Open::Fence(start, fence)) if fence.closed_by(line) => {
                blocks.push(start..end);
                open = None;
            }
            Some(Open::Comment(start)) if toggles_comment() => {
                blocks.push(start..end);
                open = None;
            }
            Some(_) => {}
            None if let Some(fence) = Fence::opened_by(line) => open = Some(Open::Fence(offset, fence)),
            None if toggles_comment() => open = Some(Open::Comment(offset)),
            None => {}
        }
        offset = end;
    }
    if let Some(Open::Fence(start, _) | Open::Comment(start)) = open {
        blocks.push(start..text.len());
    }
    blocks
}

/// Cuts a block into its natural units: sentences for prose, lines for code, tables and
/// HTML, and both for list items (whose lines are often items of a nested list).
fn units_of(text: &str, range: Range<usize>, kind: BlockKind) -> Vec<Range<usize>> {
    let starts = match kind {
        BlockKind::Prose => sentence_starts(text, range.clone()),
        BlockKind::Lines => content_line_starts(text, range.clone()),
        BlockKind::ListItem => {
            let mut starts = content_line_starts(text, range.clone());
            starts.extend(sentence_starts(text, range.clone()));
            starts.sort_unstable();
            starts.dedup();
            starts
        }
    };
    units(range, &starts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::outline::Block;

    fn section(text: &str, kind: BlockKind) -> Section {
        Section {
            heading_path: Vec::new(),
            range: 0..text.len(),
            heading: None,
            blocks: vec![Block { start: 0, kind }],
        }
    }

    fn split(text: &str, kind: BlockKind, max: usize, overlap: usize) -> Vec<RawChunk> {
        let lines = LineIndex::new(text);
        let mut warnings = Vec::new();
        Splitter::new(text, &lines, max, overlap, &mut warnings).split_section(&section(text, kind))
    }

    #[test]
    fn a_long_paragraph_is_cut_at_sentences_with_overlap() {
        let text = "This is sentence number one. ".repeat(20);
        let chunks = split(&text, BlockKind::Prose, 30, 8);
        assert!(chunks.len() > 1);
        for pair in chunks.windows(2) {
            // Each chunk starts at a sentence, inside the previous chunk.
            assert!(text[pair[1].range.clone()].starts_with("This is"));
            assert!(pair[1].range.start < pair[0].range.end);
        }
        assert!(chunks.iter().all(|c| c.tokens <= 30));
    }

    #[test]
    fn a_run_without_breaks_is_cut_between_tokens_and_tiles() {
        let text = "abcdefghij".repeat(200);
        let chunks = split(&text, BlockKind::Prose, 50, 0);
        assert!(chunks.iter().all(|c| c.tokens <= 50));
        assert!(chunks.windows(2).all(|w| w[0].range.end == w[1].range.start));
        assert_eq!(chunks.last().map(|c| c.range.end), Some(text.len()));
    }

    #[test]
    fn a_budget_holds_more_chinese_tokens_than_english_ones() {
        // More than 400 cl100k tokens of Chinese prose, which its letters bring under a
        // budget of 400 units; English prose of as many tokens is cut.
        let chinese = "所有权让Rust无需垃圾回收即可保障内存安全，因此理解它的工作方式很重要。".repeat(12);
        let tokens = tokens::count(&chinese);
        assert!(tokens > 400 && budget::units(&chinese) <= 400, "{tokens}");
        let chunks = split(&chinese, BlockKind::Prose, 400, 40);
        assert_eq!(chunks.len(), 1);
        // The chunk still reports its cl100k tokens, past the budget's number.
        assert_eq!(chunks[0].tokens, tokens);

        let english = "Ownership lets Rust keep memory safe without a garbage collector. ".repeat(40);
        assert!(tokens::count(&english) > 400);
        let chunks = split(&english, BlockKind::Prose, 400, 40);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| c.tokens <= 400));

        // Cut pieces of a longer Chinese section stay within the budget's units.
        let longer = chinese.repeat(3);
        let chunks = split(&longer, BlockKind::Prose, 400, 40);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| budget::units(&longer[c.range.clone()]) <= 400));
        let last = chunks.len() - 1;
        assert!(
            chunks[..last].iter().all(|c| c.tokens > 400),
            "a chunk of Chinese fills the room of its units"
        );
    }

    #[test]
    fn overlap_falls_back_to_the_last_words_of_a_long_sentence() {
        let text = format!("{} end. {}", "word ".repeat(60), "more ".repeat(40));
        let chunks = split(&text, BlockKind::Prose, 70, 10);
        assert!(chunks.len() > 1);
        assert!(chunks[1].range.start < chunks[0].range.end);
    }
}
