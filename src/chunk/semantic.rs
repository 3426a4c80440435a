//! The `semantic` strategy: inside each heading-bounded section, cut where the meaning of
//! consecutive sentences jumps, then fit each piece to the token budget the way the `section`
//! strategy fits a section.
//!
//! A section is cut into units: the sentences of its paragraphs, each list item, and each
//! code block, table or HTML block joined to the unit before it (an example stays with the
//! sentence that introduces it, and so does the first item of a list). The heading belongs
//! to the first unit. Each unit is embedded once; the cosine distance between consecutive
//! units is a candidate breakpoint, taken when it exceeds `mean + k·std` of the distances
//! in that section (Kamradt's "semantic chunking", with a per-section threshold). A piece
//! between breakpoints smaller than an eighth of the budget is merged across the weaker of
//! its two breakpoints, so that one odd sentence does not become a chunk of its own. Each
//! piece then goes through the `section` packer, which keeps it whole when it fits and cuts
//! it (with overlap) at blocks, then sentences, when it does not. Pieces never overlap
//! across a breakpoint: the point of a breakpoint is that the text changes subject there.

use std::ops::Range;

use super::boundaries::{capitalised_sentence_starts, units};
use super::lines::LineIndex;
use super::outline::{Block, BlockKind, Outline, Section};
use super::split::Splitter;
use super::window::{RawChunk, trim};
use super::{ChunkConfig, SentenceEmbedder, budget};

/// A piece between breakpoints is merged into a neighbour when it holds fewer tokens than
/// this share of the budget.
const MIN_PIECE_SHARE: usize = 8;

/// The `semantic` strategy over a whole document: every section's units are embedded in one
/// call, so that an HTTP embedder sees one request per file.
pub(crate) fn semantic_chunks(
    text: &str,
    lines: &LineIndex,
    outline: &Outline,
    config: &ChunkConfig,
    embed: &SentenceEmbedder<'_>,
    warnings: &mut Vec<String>,
) -> Vec<(RawChunk, Vec<String>)> {
    let section_units: Vec<Vec<Range<usize>>> =
        outline.sections.iter().map(|section| section_units(text, section)).collect();
    // Sections of one unit have no breakpoint to find and need no vector.
    let texts: Vec<&str> = section_units
        .iter()
        .filter(|units| units.len() > 1)
        .flatten()
        .map(|unit| text[unit.clone()].trim())
        .collect();
    let mut vectors = if texts.is_empty() {
        Vec::new()
    } else {
        match embed(&texts) {
            Ok(vectors) if vectors.len() == texts.len() => vectors,
            Ok(vectors) => {
                warnings.push(format!(
                    "the sentence embedder returned {} vectors for {} sentences; sections are cut by size only",
                    vectors.len(),
                    texts.len()
                ));
                Vec::new()
            }
            Err(reason) => {
                warnings.push(format!("sentences could not be embedded ({reason}); sections are cut by size only"));
                Vec::new()
            }
        }
    }
    .into_iter();
    let have_vectors = vectors.len() == texts.len();

    let min_piece = config.max_tokens / MIN_PIECE_SHARE;
    let mut splitter = Splitter::new(text, lines, config.max_tokens, config.overlap_tokens, warnings);
    let mut chunks = Vec::new();
    for (section, units) in outline.sections.iter().zip(section_units) {
        let cuts = if units.len() > 1 && have_vectors {
            let section_vectors: Vec<Vec<f32>> = vectors.by_ref().take(units.len()).collect();
            let distances = consecutive_distances(&section_vectors);
            let cuts = breakpoints(&distances, config.semantic_threshold);
            merge_small_pieces(text, &units, &distances, cuts, min_piece)
        } else {
            Vec::new()
        };
        for piece in sub_sections(section, &units, &cuts) {
            chunks.extend(
                splitter.split_section(&piece).into_iter().map(|chunk| (chunk, section.heading_path.clone())),
            );
        }
    }
    chunks
}

/// The units of a section, tiling it: sentences of prose, whole list items, whole code
/// blocks, tables and HTML joined to the unit before them, the heading joined to the first.
/// A section without blocks has no units.
fn section_units(text: &str, section: &Section) -> Vec<Range<usize>> {
    let blocks = section.block_ranges();
    let mut starts = Vec::new();
    for (i, (range, kind)) in blocks.iter().enumerate() {
        match kind {
            BlockKind::Prose => {
                if i > 0 {
                    starts.push(range.start);
                }
                // The first block starts at the heading; its sentences start after it.
                let from =
                    if i == 0 { section.blocks[0].start.clamp(range.start, range.end) } else { range.start };
                starts.extend(capitalised_sentence_starts(text, from..range.end));
            }
            // A list item opens a unit unless it is the first of a list after prose, which
            // introduces it.
            BlockKind::ListItem => {
                if i > 0 && blocks[i - 1].1 == BlockKind::ListItem {
                    starts.push(range.start);
                }
            }
            BlockKind::Lines => {}
        }
    }
    if blocks.is_empty() {
        return Vec::new();
    }
    // Units made of blanks alone (a sentence start that trimming leaves empty cannot happen,
    // but a block of blank lines can) would embed nothing: they join the unit before them.
    let mut out: Vec<Range<usize>> = Vec::new();
    for unit in units(section.range.clone(), &starts) {
        match out.last_mut() {
            Some(last) if trim(text, unit.clone()).is_none() => last.end = unit.end,
            _ => out.push(unit),
        }
    }
    out
}

/// `1 - cos` between each unit's vector and the next one's. A zero or malformed vector is
/// no evidence of a change: its distances are 0.
fn consecutive_distances(vectors: &[Vec<f32>]) -> Vec<f32> {
    vectors.windows(2).map(|pair| cosine_distance(&pair[0], &pair[1])).collect()
}

fn cosine_distance(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norms = a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt();
    let distance = 1.0 - dot / norms;
    if norms > 0.0 && distance.is_finite() { distance.max(0.0) } else { 0.0 }
}

/// Indices `i` of the distances (between unit `i` and unit `i + 1`) above `mean + k·std` of
/// all the distances. Equal distances have no outlier, whatever `k`.
fn breakpoints(distances: &[f32], k: f32) -> Vec<usize> {
    if distances.len() < 2 {
        // One distance is its own mean: nothing stands out.
        return Vec::new();
    }
    let n = distances.len() as f32;
    let mean = distances.iter().sum::<f32>() / n;
    let std = (distances.iter().map(|d| (d - mean) * (d - mean)).sum::<f32>() / n).sqrt();
    // The margin keeps rounding noise over identical distances from reading as a jump.
    let threshold = mean + k * std + 1e-6;
    distances.iter().enumerate().filter(|&(_, &d)| d > threshold).map(|(i, _)| i).collect()
}

/// Removes breakpoints so that no piece between them holds fewer than `min_tokens` tokens
/// (unless the section itself is that small): a small piece joins the neighbour on the side
/// of its weaker breakpoint. One pass from the start, so a section of any length costs time
/// in proportion to it.
fn merge_small_pieces(
    text: &str,
    units: &[Range<usize>],
    distances: &[f32],
    cuts: Vec<usize>,
    min_tokens: usize,
) -> Vec<usize> {
    if cuts.is_empty() || min_tokens == 0 {
        return cuts;
    }
    // Pieces as (first unit, last unit, tokens); counts stop at `min_tokens`, which is all
    // the comparison needs, and the count of two pieces joined is taken as their sum.
    let count = |first: usize, last: usize| {
        budget::units_capped(&text[units[first].start..units[last].end], min_tokens)
    };
    let mut kept: Vec<(usize, usize, usize)> = Vec::with_capacity(cuts.len() + 1);
    // A small piece waiting to join the piece after it.
    let mut carried: Option<(usize, usize, usize)> = None;
    let mut first = 0;
    for (p, last) in cuts.iter().copied().chain(std::iter::once(units.len() - 1)).enumerate() {
        let own = count(first, last);
        let piece = match carried.take() {
            Some((from, _, tokens)) => (from, last, tokens.saturating_add(own)),
            None => (first, last, own),
        };
        first = last + 1;
        if piece.2 >= min_tokens {
            kept.push(piece);
            continue;
        }
        // The breakpoints on either side: the one before the piece, the one after it.
        let before = piece.0.checked_sub(1).map(|i| distances[i]);
        let after = cuts.get(p).map(|&i| distances[i]);
        match (kept.last_mut(), before, after) {
            (Some(previous), Some(before), after) if after.is_none_or(|after| before <= after) => {
                previous.1 = piece.1;
                previous.2 = previous.2.saturating_add(piece.2);
            }
            (_, _, Some(_)) => carried = Some(piece),
            _ => kept.push(piece),
        }
    }
    kept.iter().take(kept.len().saturating_sub(1)).map(|&(_, last, _)| last).collect()
}

/// The pieces of `section` between the breakpoints, as sections of their own for the packer:
/// the first keeps the heading, each later one opens with a block of the kind it starts in.
fn sub_sections(section: &Section, units: &[Range<usize>], cuts: &[usize]) -> Vec<Section> {
    if cuts.is_empty() {
        return vec![section.clone()];
    }
    let mut bounds: Vec<usize> = cuts.iter().map(|&i| units[i + 1].start).collect();
    bounds.push(section.range.end);
    let mut pieces = Vec::with_capacity(bounds.len());
    let mut start = section.range.start;
    // Blocks are sorted by start: the blocks of each piece follow those of the one before.
    let mut next_block = 0;
    for end in bounds {
        let from = next_block;
        next_block += section.blocks[from..].partition_point(|b| b.start < end);
        let mut blocks = section.blocks[from..next_block].to_vec();
        let first = pieces.is_empty();
        if !first && blocks.first().is_none_or(|b| b.start > start) {
            // The piece starts inside a block (a sentence of a paragraph): that block goes on.
            let kind = from.checked_sub(1).map_or(BlockKind::Prose, |i| section.blocks[i].kind);
            blocks.insert(0, Block { start, kind });
        }
        pieces.push(Section {
            heading_path: section.heading_path.clone(),
            range: start..end,
            heading: if first { section.heading.clone() } else { None },
            blocks,
        });
        start = end;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_outlying_distances_are_breakpoints() {
        assert_eq!(breakpoints(&[0.1, 0.12, 0.09, 0.11, 0.1, 0.9, 0.1, 0.12], 2.0), vec![5]);
        assert!(breakpoints(&[0.3; 10], 0.0).is_empty());
        assert!(breakpoints(&[0.9], 0.0).is_empty());
        // With k = 0, anything above the mean is a breakpoint.
        assert_eq!(breakpoints(&[0.1, 0.3], 0.0), vec![1]);
    }

    #[test]
    fn cosine_distance_ignores_zero_and_mismatched_vectors() {
        assert!((cosine_distance(&[1.0, 0.0], &[0.0, 2.0]) - 1.0).abs() < 1e-6);
        assert!(cosine_distance(&[1.0, 1.0], &[2.0, 2.0]).abs() < 1e-6);
        assert_eq!(cosine_distance(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine_distance(&[1.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn a_small_piece_merges_across_its_weaker_breakpoint() {
        let text = "Long first piece with many words in it. Tiny. Long last piece with many words too.";
        let units = vec![0..40, 40..46, 46..text.len()];
        // Breakpoints on both sides of the tiny middle piece; the one after it is weaker.
        let cuts = merge_small_pieces(text, &units, &[0.9, 0.5], vec![0, 1], 5);
        assert_eq!(cuts, vec![0]);
        // Nothing is merged when every piece is big enough.
        assert_eq!(merge_small_pieces(text, &units, &[0.9, 0.5], vec![0, 1], 2), vec![0, 1]);
        // A small first piece can only join the one after it, whatever the distances.
        let cuts =
            merge_small_pieces("Tiny. Long enough second piece here.", &[0..6, 6..36], &[0.9], vec![0], 5);
        assert!(cuts.is_empty());
        // A small piece whose weaker breakpoint comes after it joins the next piece.
        let cuts = merge_small_pieces(text, &units, &[0.5, 0.9], vec![0, 1], 5);
        assert_eq!(cuts, vec![1]);
    }

    #[test]
    fn units_keep_examples_and_list_openings_with_their_sentence() {
        let text = "# H\n\nFirst one. Second one:\n\n```\ncode\n```\n\nIntro:\n\n- a\n- b\n";
        let outline = super::super::markdown::parse(text, 0..text.len(), false);
        let section = &outline.sections[1];
        let units: Vec<&str> = section_units(text, section).into_iter().map(|r| &text[r]).collect();
        assert_eq!(
            units,
            vec!["# H\n\nFirst one. ", "Second one:\n\n```\ncode\n```\n\n", "Intro:\n\n- a\n", "- b\n"]
        );
    }
}
