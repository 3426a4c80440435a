//! What the chunker's property tests (`tests/chunk_props.rs`) and its fuzz target
//! (`fuzz/fuzz_targets/chunk.rs`) check chunks against, written once for both: the lines of
//! an offset, the top-level headings of a markdown body by pulldown-cmark and the bodies
//! between them that hold no word (or words in a page's scripts and styles alone), the blocks of
//! CJK characters whose budget is discounted, the blobs that count less than their tokens,
//! and a stand-in sentence embedder.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag};

/// The 1-based line of the byte at `offset`.
pub fn line_of(text: &str, offset: usize) -> u32 {
    1 + text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() as u32
}

/// Byte ranges of the top-level headings of a markdown body, as offsets into `text`.
pub fn top_level_headings(text: &str, body_start: usize) -> Vec<Range<usize>> {
    top_level_blocks(text, body_start, false).0
}

/// The top-level headings of a markdown body, and its top-level HTML blocks that open with a
/// `<script>` or `<style>` tag (any case, then a blank, `>` or the line's end) and, in an
/// MDX page, its top-level paragraphs that open with `import` or `export` and a blank, as
/// offsets into `text`.
fn top_level_blocks(text: &str, body_start: usize, mdx: bool) -> (Vec<Range<usize>>, Vec<Range<usize>>) {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES;
    let mut depth = 0usize;
    let (mut headings, mut scripts) = (Vec::new(), Vec::new());
    for (event, range) in Parser::new_ext(&text[body_start..], options).into_offset_iter() {
        let range = range.start + body_start..range.end + body_start;
        match event {
            Event::Start(tag) => {
                if depth == 0 && matches!(tag, Tag::Heading { .. }) {
                    headings.push(range.clone());
                }
                let statement = |word: &str| {
                    text[range.clone()]
                        .strip_prefix(word)
                        .is_some_and(|rest| rest.starts_with(char::is_whitespace))
                };
                if depth == 0
                    && mdx
                    && matches!(tag, Tag::Paragraph)
                    && (statement("import") || statement("export"))
                {
                    scripts.push(range.clone());
                }
                if depth == 0 && matches!(tag, Tag::HtmlBlock) {
                    let first = text[range.clone()].trim_start_matches([' ', '\t']).to_lowercase();
                    let first = first.lines().next().unwrap_or("");
                    let tag_name: String =
                        first.chars().skip(1).take_while(|c| c.is_ascii_alphanumeric()).collect();
                    if first.starts_with('<') && (tag_name == "script" || tag_name == "style") {
                        scripts.push(range);
                    }
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    (headings, scripts)
}

/// The bodies between top-level headings (and before the first) that hold no letter or
/// digit outside a page's `<script>` and `<style>` blocks (and, in an MDX page, its
/// `import` and `export` statements): such a section is its heading alone, and gives no
/// chunk of its own.
pub fn wordless_bodies(
    text: &str,
    body_start: usize,
    headings: &[Range<usize>],
    mdx: bool,
) -> Vec<Range<usize>> {
    let scripts = top_level_blocks(text, body_start, mdx).1;
    let starts = std::iter::once(body_start).chain(headings.iter().map(|h| h.end));
    let ends = headings.iter().map(|h| h.start).chain(std::iter::once(text.len()));
    starts
        .zip(ends)
        .filter(|(start, end)| {
            start < end
                && !text[*start..*end]
                    .char_indices()
                    .any(|(at, c)| c.is_alphanumeric() && !scripts.iter().any(|s| s.contains(&(start + at))))
        })
        .map(|(start, end)| start..end)
        .collect()
}

/// Whether `c` lies in a block of Chinese, Japanese or Korean characters (letters,
/// punctuation and symbols alike).
pub fn in_cjk_blocks(c: char) -> bool {
    matches!(c,
        '\u{1100}'..='\u{11FF}'
        | '\u{3000}'..='\u{9FFF}'
        | '\u{A960}'..='\u{A97F}'
        | '\u{AC00}'..='\u{D7FF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{FF00}'..='\u{FFEF}'
        | '\u{1B000}'..='\u{1B16F}'
        | '\u{20000}'..='\u{323AF}')
}

/// The blobs of `text`, by this oracle's own reading of the budget's rule: runs of 100 or
/// more base64 characters (ASCII letters and digits, `+`, `/`) with the `=` after them, two
/// at most.
pub fn blob_runs(text: &str) -> Vec<&str> {
    let is_base64 = |c: char| c.is_ascii_alphanumeric() || c == '+' || c == '/';
    let mut runs = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(is_base64) {
        let run = &rest[start..];
        let len = run.find(|c: char| !is_base64(c)).unwrap_or(run.len());
        let padded = len + run[len..].chars().take(2).take_while(|&c| c == '=').count();
        if len >= 100 {
            runs.push(&run[..padded]);
        }
        rest = &run[len..];
    }
    runs
}

/// How far a chunk's tokens may run past its budget for the blobs it holds: a blob counts a
/// unit for every 16 of its bytes instead of its tokens (`count` counts them), give or take
/// two tokens where it meets the text around it.
pub fn blob_allowance(text: &str, count: impl Fn(&str) -> usize) -> usize {
    blob_runs(text).iter().map(|blob| (count(blob) + 2).saturating_sub(blob.len().div_ceil(16))).sum()
}

/// Vectors of four numbers drawn from each text's hash: deterministic, and as far apart as
/// chance makes them.
pub fn hashed(texts: &[&str]) -> Vec<Vec<f32>> {
    texts
        .iter()
        .map(|text| {
            let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
            (0..4).map(|i| ((hash >> (i * 16)) & 0xffff) as f32 - 32768.0).collect()
        })
        .collect()
}

/// The fenced code blocks and the `%%` comments over several lines of `text`, by its lines:
/// where the line opening each starts, where the line closing it starts, and where that
/// line's content ends (before its line break). A fence line is a run of three or more backticks or tildes after blanks (of
/// backticks, with no backtick in the rest of the line); its block closes at a line of
/// nothing but the same mark, at least as many; a comment opens and closes on lines holding
/// an odd number of `%%` outside inline code, and hides the fences inside it. A block left
/// open closes at the end.
pub fn fenced_blocks(text: &str) -> Vec<(usize, usize, usize)> {
    let mut blocks = Vec::new();
    // Where the open block starts, and its fence (empty for a comment).
    let mut open: Option<(usize, String)> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let run: String = trimmed.chars().take_while(|&c| trimmed.starts_with(c)).collect();
        let fence = (run.len() >= 3
            && (run.starts_with('~') || (run.starts_with('`') && !trimmed[run.len()..].contains('`'))))
        .then_some(run);
        let odd_marks =
            line.split('`').step_by(2).map(|outside| outside.matches("%%").count()).sum::<usize>() % 2 == 1;
        match &open {
            Some((start, opener)) if opener.is_empty() && odd_marks => {
                blocks.push((*start, at, at + line.trim_end().len()));
                open = None;
            }
            Some((start, opener))
                if !opener.is_empty()
                    && line.trim().len() >= opener.len()
                    && line.trim().chars().all(|c| opener.starts_with(c)) =>
            {
                blocks.push((*start, at, at + line.trim_end().len()));
                open = None;
            }
            Some(_) => {}
            None => {
                if let Some(opener) = fence {
                    open = Some((at, opener));
                } else if odd_marks {
                    open = Some((at, String::new()));
                }
            }
        }
        at += line.len();
    }
    if let Some((start, _)) = open {
        blocks.push((start, text.len(), text.len()));
    }
    blocks
}

/// Whether a chunk at `chunk` starts inside a block of `blocks` ([`fenced_blocks`]), after its
/// opening line and no later than its closing one, while the chunk before it (at `previous`)
/// holds that closing line to its end: a chunk that repeats a closed block's last lines,
/// which would read all that follows them as code, or as a comment. A chunk may start
/// inside the closing line itself, and at its start when the chunk before holds only a part
/// of it: a line too long for the budget is cut between its tokens.
pub fn opens_inside_a_closed_block(
    blocks: &[(usize, usize, usize)],
    previous: &Range<usize>,
    chunk: &Range<usize>,
) -> bool {
    blocks.iter().any(|&(open, close, close_end)| {
        open < chunk.start && chunk.start <= close && previous.end >= close_end
    })
}
