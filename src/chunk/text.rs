//! Plain text: no headings, paragraphs separated by blank lines.

use std::ops::Range;

use super::boundaries::{line_starts, units};
use super::outline::{Block, BlockKind, Outline, Section};

/// Reads `text[body]` as one section whose blocks are its paragraphs. A paragraph starts at
/// the first non-blank character after a blank line (or at the body's first one).
pub(crate) fn parse(text: &str, body: Range<usize>) -> Outline {
    let starts = line_starts(text, body.clone());
    let mut blocks = Vec::new();
    let mut after_blank = true;
    for line in units(body.clone(), &starts) {
        let content = &text[line.clone()];
        let indent = content.len() - content.trim_start().len();
        let blank = indent == content.len();
        if !blank && after_blank {
            blocks.push(Block { start: line.start + indent, kind: BlockKind::Prose });
        }
        after_blank = blank;
    }
    Outline {
        sections: vec![Section { heading_path: Vec::new(), range: body, heading: None, blocks }],
        first_h1: None,
        tags: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraphs_start_after_blank_lines() {
        let text = "one\nstill one\n \t\n  two\r\n\r\nthree\rstill three";
        let outline = parse(text, 0..text.len());
        let starts: Vec<&str> =
            outline.sections[0].blocks.iter().map(|b| &text[b.start..b.start + 3]).collect();
        assert_eq!(starts, vec!["one", "two", "thr"]);
    }

    #[test]
    fn blank_text_has_no_paragraph() {
        assert!(parse(" \n\n", 0..3).sections[0].blocks.is_empty());
    }
}
