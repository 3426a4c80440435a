//! Previews that show why a hit matched: the lines of its chunk that hold the most query
//! terms, with those terms marked; when no line holds one (a paraphrase found by the dense
//! arm), the line closest in meaning to the query by a fast embedder.
//!
//! Terms are matched the way BM25 matched them: each line goes through the index's own
//! analyzer, so `expire` marks a query for "expiring" and `entryPoints` a query for
//! "entry point". Marks are byte ranges of the preview's text.
//!
//! A line is shown as the note reads once rendered (`markup`): `[[Note|alias]]` as `alias`,
//! `<span class="caption">…</span>` as its words, a line of `{{#include …}}` not at all.

mod markup;

pub use markup::readable;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use tantivy::tokenizer::{TextAnalyzer, TokenStream};

use crate::analysis;
use crate::index::ChunkRecord;
use crate::providers::Embedder;
use crate::{chunk, context};

/// The most columns one preview line takes on a terminal (a Chinese, Japanese or Korean
/// letter takes two); a longer line is cut around its first mark.
pub const MAX_WIDTH: usize = 160;
/// The fewest columns of a line shown for its meaning, when the chunk has such lines.
const MEANING_WIDTH: usize = 24;
/// Columns kept before the first mark when a long line is cut inside a sentence.
const LEAD_WIDTH: usize = 40;
/// The most columns between the start of a sentence and its first mark for a long line to
/// be shown from the start of that sentence.
const SENTENCE_LEAD_WIDTH: usize = 60;

/// The columns `text` takes on a terminal: two for a wide letter (Chinese, Japanese,
/// Korean, full-width forms), none for a combining mark, one for the others.
pub fn width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
}

/// One line of a preview.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreviewLine {
    /// 1-based line of the document.
    pub line: u32,
    /// The line, trimmed, and cut to [`MAX_WIDTH`] columns (an ellipsis says where).
    pub text: String,
    /// Byte ranges of `text` that match a query term, in order and apart.
    pub marks: Vec<(usize, usize)>,
}

impl PreviewLine {
    /// The text with each mark between `open` and `close` (bold codes for a terminal, `**`
    /// for markdown).
    pub fn marked(&self, open: &str, close: &str) -> String {
        let mut out = String::with_capacity(self.text.len() + (open.len() + close.len()) * self.marks.len());
        let mut at = 0;
        for &(start, end) in &self.marks {
            out.push_str(&self.text[at..start]);
            out.push_str(open);
            out.push_str(&self.text[start..end]);
            out.push_str(close);
            at = end;
        }
        out.push_str(&self.text[at..]);
        out
    }
}

/// Makes the previews of one query's hits.
pub struct Previewer<'a> {
    /// The language whose rules `terms` and `analyzer` follow: the last chunk's.
    language: analysis::Language,
    terms: HashSet<String>,
    /// The terms were given ([`Previewer::of_terms`]) rather than read from the query, and
    /// stay as they are whatever a chunk's language.
    given: bool,
    /// The words of the query's compounds ([`Previewer::with_parts`]), marked too.
    parts: Vec<String>,
    analyzer: TextAnalyzer,
    query: &'a str,
    /// A fast embedder for lines no term matches, with the query's vector once computed.
    embedder: Option<&'a dyn Embedder>,
    query_vector: Option<Option<Vec<f32>>>,
    /// The lines already shown, by file: chunks overlap, and a line shown under one hit is
    /// not shown again under a later hit of the same file.
    shown: HashMap<String, HashSet<u32>>,
}

/// A candidate line of a chunk.
struct Candidate<'t> {
    line: u32,
    /// The line as a reader sees it ([`markup::readable`]).
    text: Cow<'t, str>,
    /// The line as written, trimmed.
    raw: &'t str,
    heading: bool,
    /// The line is not the note's text to a reader: inside a comment or a query block
    /// ([`markup::aside_lines`]), or hidden whole by the rendering (an HTML comment).
    aside: bool,
    marks: Vec<(usize, usize)>,
    matched: HashSet<String>,
    /// The terms matched, and the number of marks, outside addresses (link targets, URLs):
    /// a term in a line's words says more than one in the address it links to.
    in_words: HashSet<String>,
    marks_in_words: usize,
    /// Bytes of the line that are addresses.
    address_bytes: usize,
}

impl<'t> Candidate<'t> {
    fn new(line: u32, text: Cow<'t, str>, raw: &'t str, heading: bool) -> Candidate<'t> {
        Candidate {
            line,
            text,
            raw,
            heading,
            aside: false,
            marks: Vec::new(),
            matched: HashSet::new(),
            in_words: HashSet::new(),
            marks_in_words: 0,
            address_bytes: 0,
        }
    }
}

impl<'a> Previewer<'a> {
    /// `embedder` must be fast (the built-in static model): it embeds the lines of hits that
    /// no query term matches.
    pub fn new(query: &'a str, embedder: Option<&'a dyn Embedder>) -> Previewer<'a> {
        Previewer {
            language: analysis::Language::ENGLISH,
            terms: analysis::query_terms(query).into_iter().collect(),
            given: false,
            parts: Vec::new(),
            analyzer: analysis::text_analyzer(),
            query,
            embedder,
            query_vector: None,
            shown: HashMap::new(),
        }
    }

    /// This previewer, marking the words of the query's compounds too (`verzeichnis` and
    /// `gross` for `Verzeichnisgröße`: [`super::compound_parts`]), since the words' arm
    /// matched them.
    pub fn with_parts(mut self, parts: Vec<String>) -> Previewer<'a> {
        self.terms.extend(parts.iter().cloned());
        self.parts = parts;
        self
    }

    /// A previewer that marks `terms`, analysed by `language`'s rules, and compares lines
    /// that hold none by meaning with `text`: a passage's related chunks are previewed by
    /// the passage's telling words and, when a chunk holds none, by the line closest to the
    /// whole passage.
    pub fn of_terms(
        terms: HashSet<String>,
        language: analysis::Language,
        text: &'a str,
        embedder: Option<&'a dyn Embedder>,
    ) -> Previewer<'a> {
        Previewer {
            language,
            terms,
            given: true,
            analyzer: analysis::analyzer_for(language),
            ..Previewer::new(text, embedder)
        }
    }

    /// The preview of `chunk`: one or two lines, in document order, none of them a line
    /// that an earlier preview of the same file showed. Empty for a chunk without a line
    /// of text, and for one whose every line was shown already.
    pub fn preview(&mut self, chunk: &ChunkRecord) -> Vec<PreviewLine> {
        // A chunk's words were indexed by its language's rules, so they are marked by them.
        let language = chunk.language();
        if language != self.language {
            self.language = language;
            if !self.given {
                self.terms = analysis::query_terms_in(self.query, &[language]).into_iter().collect();
                self.terms.extend(self.parts.iter().cloned());
            }
            self.analyzer = analysis::analyzer_for(language);
        }
        let lines: Vec<&str> = chunk.text.lines().collect();
        let fenced = Fenced::of(&lines);
        let code = &fenced.code;
        let blocked: Vec<bool> = (0..lines.len()).map(|n| fenced.blocked(n)).collect();
        let setext = setext_heading_lines(&lines, &blocked);
        let mdx = crate::workspace::doc_kind(&chunk.path) == chunk::DocKind::Mdx;
        let aside = markup::aside_lines(&lines, &fenced, mdx);
        let mut candidates: Vec<Candidate> = lines
            .iter()
            .enumerate()
            .filter_map(|(n, raw)| {
                let trimmed = raw.trim();
                if fenced.fence[n] {
                    return None;
                }
                // Code reads as written: `[[ -f x ]]`, `a==b` and `Foo<S>` are not markup there.
                // So does what a reader never sees, when it is shown at all.
                let as_written = code[n] || aside[n];
                let mut hidden = aside[n];
                let mut text = if as_written { Cow::Borrowed(trimmed) } else { markup::readable(trimmed) };
                // A line that the rendered note hides whole (an HTML comment, the Node.js
                // docs' `<!--introduced_in=v0.10.0-->`) is searched all the same: it is shown
                // as written, as an Obsidian comment is, when it alone matches.
                if text.is_empty() && !trimmed.is_empty() {
                    text = Cow::Borrowed(trimmed);
                    hidden = true;
                }
                let skip = text.is_empty()
                    || text.chars().all(|c| matches!(c, '-' | '=' | '|' | ':' | ' ' | '+' | '*'))
                    || context::searchable(&text).trim().is_empty();
                (!skip).then(|| {
                    // A shell or YAML comment in a code block (`# rotate the keys`) and a line of
                    // tags (`#ops #release`) are text, not headings.
                    let heading = !hidden && !code[n] && (chunk::is_atx_heading(trimmed) || setext[n]);
                    let mut c = Candidate::new(chunk.start_line + n as u32, text, trimmed, heading);
                    c.aside = hidden;
                    c
                })
            })
            .collect();
        if candidates.is_empty() {
            return Vec::new();
        }
        // Every result already shows its heading path: a heading line is shown only when
        // the chunk has nothing else.
        if candidates.iter().any(|c| !c.heading && !c.aside) {
            candidates.retain(|c| !c.heading);
        }
        // Chunks overlap: a line that a better hit of the file shows is not shown twice.
        let shown = self.shown.entry(chunk.path.clone()).or_default();
        candidates.retain(|c| !shown.contains(&c.line));
        if candidates.is_empty() {
            return Vec::new();
        }
        if !self.terms.is_empty() {
            for c in &mut candidates {
                self.mark(c);
                // A term met only in what the reader's form hides (the target of
                // `[[People/Anna Schmidt|Anni]]`, a comment) is shown where it is.
                if c.matched.is_empty() && c.text != c.raw {
                    let mut raw = Candidate::new(c.line, Cow::Borrowed(c.raw), c.raw, c.heading);
                    self.mark(&mut raw);
                    if !raw.matched.is_empty() {
                        *c = raw;
                    }
                }
            }
        }
        // A comment or a query is shown only when the chunk has no other line, or when only
        // it holds a term of the query: it is why the chunk matched, so it is shown as written.
        let matched_aside = candidates.iter().any(|c| c.aside && !c.matched.is_empty());
        let matched_text = candidates.iter().any(|c| !c.aside && !c.matched.is_empty());
        if candidates.iter().any(|c| !c.aside) && (matched_text || !matched_aside) {
            candidates.retain(|c| !c.aside);
        }
        let mut chosen = self.by_terms(&candidates);
        if chosen.is_empty() {
            chosen = vec![self.by_meaning(&candidates).unwrap_or(0)];
        }
        chosen.sort_unstable();
        let lines: Vec<PreviewLine> = chosen.into_iter().map(|i| cut(&candidates[i])).collect();
        self.shown.entry(chunk.path.clone()).or_default().extend(lines.iter().map(|l| l.line));
        lines
    }

    /// Marks the query terms in a line.
    fn mark(&mut self, c: &mut Candidate) {
        let addresses = merged(addresses(&c.text));
        c.address_bytes = addresses.iter().map(|(start, end)| end - start).sum();
        let mut stream = self.analyzer.token_stream(&c.text);
        while let Some(token) = stream.next() {
            if self.terms.contains(&token.text) {
                let (from, to) = (token.offset_from, token.offset_to);
                if !addresses.iter().any(|&(start, end)| start <= from && to <= end) {
                    c.in_words.insert(token.text.clone());
                    c.marks_in_words += 1;
                }
                c.matched.insert(token.text.clone());
                c.marks.push((from, to));
            }
        }
        c.marks = merged(std::mem::take(&mut c.marks));
    }

    /// The lines that hold query terms: the one with the most distinct terms in its words
    /// (then in all, then the most marks in its words, then the fewest bytes of addresses,
    /// then the most marks, then the earlier), and a second when it adds terms of more than
    /// one letter that the first lacks.
    fn by_terms(&self, candidates: &[Candidate]) -> Vec<usize> {
        let rank = |c: &Candidate| {
            let words = (c.in_words.len(), c.matched.len(), c.marks_in_words);
            (words, std::cmp::Reverse(c.address_bytes), c.marks.len())
        };
        let Some(best) = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.matched.is_empty())
            .max_by(|(i, a), (j, b)| rank(a).cmp(&rank(b)).then(j.cmp(i)))
            .map(|(i, _)| i)
        else {
            return Vec::new();
        };
        let mut chosen = vec![best];
        // A letter alone (the `I` of "how do I", met in `i.e.`) is not worth a line.
        let covered = &candidates[best].matched;
        let extra = |c: &Candidate| c.matched.difference(covered).filter(|t| t.chars().count() > 1).count();
        if let Some((second, _)) = candidates
            .iter()
            .enumerate()
            .filter(|(i, c)| *i != best && extra(c) > 0)
            .max_by(|(i, a), (j, b)| extra(a).cmp(&extra(b)).then(j.cmp(i)))
        {
            chosen.push(second);
        }
        chosen
    }

    /// The line closest in meaning to the query, when there is a fast embedder; both are read
    /// as chunks are embedded ([`analysis::embedded_text`]).
    fn by_meaning(&mut self, candidates: &[Candidate]) -> Option<usize> {
        let embedder = self.embedder?;
        let query = self
            .query_vector
            .get_or_insert_with(|| {
                let query = analysis::embedded_text(self.query.to_string());
                embedder.embed_query(&query).ok().filter(|v| v.iter().any(|x| *x != 0.0))
            })
            .as_ref()?;
        // A scrap of a line (the last word of a wrapped sentence) may sit closest to the
        // query by chance and says nothing: lines of some length are compared when there
        // are any.
        let long = |c: &Candidate| width(&c.text) >= MEANING_WIDTH;
        let any_long = candidates.iter().any(long);
        let texts: Vec<String> =
            candidates.iter().map(|c| analysis::embedded_text(c.text.to_string())).collect();
        let vectors = embedder.embed(&texts.iter().map(String::as_str).collect::<Vec<_>>()).ok()?;
        vectors
            .iter()
            .enumerate()
            .filter(|(i, v)| v.len() == query.len() && (!any_long || long(&candidates[*i])))
            .map(|(i, v)| (i, v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>()))
            .filter(|(_, similarity)| *similarity > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(i, _)| i)
    }
}

/// The byte ranges of `line` that are addresses rather than words: link targets
/// (`[text](target)`, `[label]: target`) and URLs (`https://…`, up to a blank or a closing
/// bracket or quote).
fn addresses(line: &str) -> Vec<(usize, usize)> {
    let end_of = |from: usize, stops: &[char]| {
        line[from..].find(|c: char| c.is_whitespace() || stops.contains(&c)).map_or(line.len(), |i| from + i)
    };
    let mut spans = Vec::new();
    for (at, _) in line.match_indices("](") {
        spans.push((at + 2, end_of(at + 2, &[')'])));
    }
    if line.starts_with('[')
        && let Some(at) = line.find("]:")
    {
        let start = at + 2 + (line[at + 2..].len() - line[at + 2..].trim_start().len());
        spans.push((start, end_of(start, &[])));
    }
    for (at, _) in line.match_indices("://") {
        let scheme = line[..at].char_indices().rev().find(|(_, c)| !c.is_ascii_alphanumeric());
        let start = scheme.map_or(0, |(i, c)| i + c.len_utf8());
        spans.push((start, end_of(at, &[')', '>', ']', '"', '\''])));
    }
    spans
}

/// Overlapping or touching ranges merged, in order.
fn merged(mut ranges: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    ranges.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// The line as a preview: whole when short, else [`MAX_WIDTH`] columns from the start of
/// the sentence with the most marks (or from a little before its first mark, when that
/// sentence is long), with an ellipsis at each cut end.
///
/// A paragraph of Chinese or Japanese is often a single line of several sentences: the one
/// shown is the one that holds the query's words. Its letters take two columns each, so
/// it is cut after half as many letters as a line in a Latin script.
fn cut(c: &Candidate) -> PreviewLine {
    let text = c.text.as_ref();
    if width(text) <= MAX_WIDTH {
        return PreviewLine { line: c.line, text: text.to_string(), marks: c.marks.clone() };
    }
    let (sentence, first_mark) = best_sentence(text, &c.marks);
    let mut start = sentence;
    if width(&text[sentence..first_mark]) > SENTENCE_LEAD_WIDTH {
        // Start LEAD_WIDTH columns before the mark, at the start of a word.
        let mut lead = 0;
        start = first_mark;
        for (i, ch) in text[..first_mark].char_indices().rev() {
            lead += char_width(ch);
            if lead > LEAD_WIDTH {
                break;
            }
            start = i;
        }
        // A blank can be wider than a byte (a no-break space, an ideographic space).
        if let Some((at, blank)) = text[start..first_mark].char_indices().find(|(_, c)| c.is_whitespace()) {
            start += at + blank.len_utf8();
        }
    }
    // Room for the text between the ellipses, each one column wide.
    let budget = MAX_WIDTH - usize::from(start > 0) - 1;
    let mut end = text.len();
    let mut used = 0;
    for (i, ch) in text[start..].char_indices() {
        used += char_width(ch);
        if used > budget {
            end = start + i;
            break;
        }
    }
    let lead = if start > 0 { "…" } else { "" };
    let tail = if end < text.len() { "…" } else { "" };
    let shift = lead.len();
    let marks = c
        .marks
        .iter()
        .filter(|m| m.0 >= start && m.1 <= end)
        .map(|m| (m.0 - start + shift, m.1 - start + shift))
        .collect();
    PreviewLine { line: c.line, text: format!("{lead}{}{tail}", &text[start..end]), marks }
}

/// The start of the sentence of `text` that holds the most marks (the earliest of equals),
/// and the start of its first mark; the start of the text twice when there is no mark.
fn best_sentence(text: &str, marks: &[(usize, usize)]) -> (usize, usize) {
    let mut starts = vec![0];
    starts.extend(chunk::sentence_starts(text));
    let mut best: Option<(usize, usize, usize)> = None;
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(text.len());
        let inside: Vec<usize> = marks.iter().map(|m| m.0).filter(|&m| m >= start && m < end).collect();
        if let Some(&first) = inside.first()
            && best.is_none_or(|(count, ..)| inside.len() > count)
        {
            best = Some((inside.len(), start, first));
        }
    }
    best.map_or((0, 0), |(_, start, first)| (start, first))
}

/// Which of a chunk's lines are the fences of fenced code blocks, and which lie inside one,
/// read as the chunker reads fences ([`chunk::Fence`]): a line of three backticks inside a
/// block that four opened is code.
struct Fenced {
    fence: Vec<bool>,
    code: Vec<bool>,
}

impl Fenced {
    fn of(lines: &[&str]) -> Fenced {
        let mut fenced = Fenced { fence: vec![false; lines.len()], code: vec![false; lines.len()] };
        let mut open: Option<chunk::Fence> = None;
        for (n, line) in lines.iter().enumerate() {
            match open {
                Some(fence) if fence.closed_by(line) => {
                    fenced.fence[n] = true;
                    open = None;
                }
                Some(_) => fenced.code[n] = true,
                None => {
                    open = chunk::Fence::opened_by(line);
                    fenced.fence[n] = open.is_some();
                }
            }
        }
        fenced
    }

    /// Whether line `n` is a fence or code: never a paragraph's text.
    fn blocked(&self, n: usize) -> bool {
        self.fence[n] || self.code[n]
    }
}

/// Which of `lines` are the text of a setext heading: the lines of a paragraph that a line
/// of only `=` or only `-` underlines (CommonMark's rule, without the cases of lazy
/// continuation lines inside lists and quotes, which cannot be underlined).
/// `blocked` marks the fences of fenced blocks and the lines inside them ([`Fenced`]).
fn setext_heading_lines(lines: &[&str], blocked: &[bool]) -> Vec<bool> {
    let mut heading = vec![false; lines.len()];
    // The first line of the paragraph running at the current line, if any.
    let mut paragraph: Option<usize> = None;
    // Inside a list item or a quote (until a blank line), a line is never underlined.
    let mut in_block = false;
    for (n, raw) in lines.iter().enumerate() {
        let text = raw.trim();
        // A fence ends the paragraph before it; code inside is never a heading.
        if blocked[n] {
            paragraph = None;
            continue;
        }
        if let Some(start) = paragraph
            && is_setext_underline(raw)
        {
            heading[start..n].fill(true);
            paragraph = None;
            continue;
        }
        let indent = raw.len() - raw.trim_start().len();
        if text.is_empty() || is_thematic_break(text) {
            paragraph = None;
            in_block = false;
        } else if opens_block(text) {
            paragraph = None;
            in_block = !chunk::is_atx_heading(text) && !text.starts_with('|');
        } else if paragraph.is_none() && !in_block && indent < 4 {
            paragraph = Some(n);
        }
    }
    heading
}

/// A setext heading's underline: up to three spaces, then a run of `=` or of `-` alone.
fn is_setext_underline(raw: &str) -> bool {
    let indent = raw.len() - raw.trim_start().len();
    let text = raw.trim();
    indent < 4 && !text.is_empty() && (text.bytes().all(|b| b == b'=') || text.bytes().all(|b| b == b'-'))
}

/// A thematic break: three or more of one of `-`, `*`, `_`, spaces between them allowed.
fn is_thematic_break(text: &str) -> bool {
    let marks: Vec<char> = text.chars().filter(|c| *c != ' ' && *c != '\t').collect();
    marks.len() >= 3 && ['-', '*', '_'].iter().any(|m| marks.iter().all(|c| c == m))
}

/// A line that starts a block other than a paragraph: an ATX heading, a list item, a
/// quote or a table row.
fn opens_block(text: &str) -> bool {
    let ordered = text.split_once(['.', ')']).is_some_and(|(n, rest)| {
        !n.is_empty()
            && n.len() <= 9
            && n.bytes().all(|b| b.is_ascii_digit())
            && (rest.is_empty() || rest.starts_with(' '))
    });
    chunk::is_atx_heading(text)
        || text.starts_with('>')
        || text.starts_with('|')
        || ["- ", "* ", "+ "].iter().any(|m| text.starts_with(m))
        || ["-", "*", "+"].contains(&text)
        || ordered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str, start_line: u32) -> ChunkRecord {
        ChunkRecord::sample("a.md", text, start_line)
    }

    fn marked(line: &PreviewLine) -> String {
        line.marked("[", "]")
    }

    #[test]
    fn the_line_with_the_term_is_shown_even_when_it_is_the_last() {
        let body = "## Retention\n\nSnapshots are kept.\nThey rotate daily.\n\nOld ones are pruned by the janitor.\n";
        let lines = Previewer::new("janitor", None).preview(&chunk(body, 10));
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].line, 15);
        assert_eq!(marked(&lines[0]), "Old ones are pruned by the [janitor].");
    }

    #[test]
    fn a_line_of_code_is_shown_as_written() {
        let body = "Check the file first:\n\n```sh\nif [[ -f /etc/backup.conf ]] && [ $a==$b ]; then\n```\n";
        let lines = Previewer::new("backup conf", None).preview(&chunk(body, 1));
        assert_eq!(marked(&lines[0]), "if [[ -f /etc/[backup].[conf] ]] && [ $a==$b ]; then");
    }

    #[test]
    fn terms_are_matched_as_the_index_matches_them() {
        let body = "Set entryPoints.web.address to the port.\nThe retained copies expire.";
        let lines = Previewer::new("entry point expiring", None).preview(&chunk(body, 1));
        let shown: Vec<String> = lines.iter().map(marked).collect();
        assert_eq!(shown, ["Set [entryPoints].web.address to the port.", "The retained copies [expire]."]);
    }

    #[test]
    fn headings_are_shown_only_in_a_chunk_of_headings() {
        let lines = Previewer::new("retention", None).preview(&chunk("## Retention\n\nKept a month.\n", 1));
        assert_eq!((lines[0].line, lines[0].text.as_str()), (3, "Kept a month."));
        let lines = Previewer::new("retention", None).preview(&chunk("## Retention\n### Rules\n", 1));
        assert_eq!(marked(&lines[0]), "## [Retention]");
    }

    /// The lines shown of `record` for `query`, their terms marked.
    fn shown(record: &ChunkRecord, query: &str) -> Vec<String> {
        Previewer::new(query, None).preview(record).iter().map(marked).collect()
    }

    /// The lines shown of a chunk of `body` for `query`, their terms marked.
    fn shown_of(body: &str, query: &str) -> Vec<String> {
        shown(&chunk(body, 1), query)
    }

    /// [`shown_of`] a chunk of an MDX page.
    fn shown_in_mdx(body: &str, query: &str) -> Vec<String> {
        shown(&ChunkRecord::sample("docs/install.mdx", body, 1), query)
    }

    #[test]
    fn a_markdown_sample_holding_a_fence_is_code_to_its_closing_fence() {
        let body = "Write the sample as the reader types it:\n\n````markdown\n```js\n[[not a link]] and ==kept==\n\
                    ```\n````\n\nThe [[Style guide]] has ==more==.\n";
        let shown = |query: &str| shown_of(body, query);
        // Inside the block, code as written; after its closing fence, text as rendered.
        assert_eq!(shown("link kept"), ["[[not a [link]]] and ==[kept]=="]);
        assert_eq!(shown("style guide more"), ["The [Style] [guide] has [more]."]);
        let fenced = Fenced::of(&body.lines().collect::<Vec<_>>());
        assert_eq!(fenced.fence, [false, false, true, false, false, false, true, false, false]);
        assert_eq!(fenced.code, [false, false, false, true, true, true, false, false, false]);
    }

    #[test]
    fn a_comment_in_code_and_a_line_of_tags_are_no_headings() {
        let body = "# Deploying\n\nRun the steps below on the build host.\n\n```sh\n./configure\n\
                    # rotate the signing keys before each release\nmake release\n```\n\n#ops #security\n";
        let shown = |query: &str| shown_of(body, query);
        assert_eq!(shown("rotate the signing keys"), ["# [rotate] the [signing] [keys] before each release"]);
        assert_eq!(shown("security"), ["#ops #[security]"]);
        // A line of tags starts a paragraph, which a rule below it underlines.
        assert_eq!(setext_heading_lines(&["#ops", "---"], &[false; 2]), [true, false]);
    }

    #[test]
    fn a_comment_or_a_query_is_shown_only_when_it_alone_matches() {
        let body = "The deadline for the tax declaration is July.\n\n%%\nTODO: check the tax deadline\n%%\n\n\
                    ```dataview\nTABLE file.mtime FROM #tax\nWHERE deadline\n```\n";
        let shown = |query: &str| shown_of(body, query);
        assert_eq!(shown("tax deadline"), ["The [deadline] for the [tax] declaration is July."]);
        assert_eq!(shown("check deadline"), ["The [deadline] for the tax declaration is July."]);
        assert_eq!(shown("TODO check"), ["[TODO]: [check] the tax deadline"]);
        assert_eq!(shown("file mtime"), ["TABLE [file].[mtime] FROM #tax"]);
        // Without a match, the note's words rather than its comments or queries.
        assert_eq!(shown("sunshine"), ["The deadline for the tax declaration is July."]);
        // An HTML comment that hides its whole line likewise.
        let body = "<!--introduced_in=v0.10.0-->\nThe module is stable.\n";
        let shown = |query: &str| shown_of(body, query);
        assert_eq!(shown("introduced v0.10.0"), ["<!--[introduced]_in=[v0.10.0]-->"]);
        assert_eq!(shown("stable module"), ["The [module] is [stable]."]);
        assert_eq!(shown("sunshine"), ["The module is stable."]);
        // A page's script and style, likewise; in a code block they are code, and shown.
        let body = "The fade transition eases in.\n\n<style scoped>\n.fade-enter-active { transition: opacity 0.5s ease }\n</style>\n\n\
                    <SCRIPT setup>\nimport Fade from './Fade.vue'\n</SCRIPT>\n\n```vue\n<style>\n.list-move { transition: transform 1s }\n</style>\n```\n";
        let shown = |query: &str| shown_of(body, query);
        assert_eq!(shown("fade transition opacity"), ["The [fade] [transition] eases in."]);
        assert_eq!(shown("opacity"), [".fade-enter-active { transition: [opacity] 0.5s ease }"]);
        assert_eq!(shown("import vue"), ["[import] Fade from './Fade.[vue]'"]);
        assert_eq!(shown("transform"), [".list-move { transition: [transform] 1s }"]);
        assert_eq!(shown("sunshine"), ["The fade transition eases in."]);
        // An MDX page's statements and comments, likewise; in a markdown note they are text.
        let body = "import Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\n\n\
                    {/* The tabs follow the install page's. */}\nUse the tabs to pick a package manager.\n";
        let mdx = |query: &str| shown_in_mdx(body, query);
        assert_eq!(mdx("tabs install page"), ["Use the [tabs] to pick a package manager."]);
        assert_eq!(mdx("theme"), ["import Tabs from '@[theme]/Tabs';"]);
        assert_eq!(
            shown_of(body, "tabs install page"),
            ["{/* The [tabs] follow the [install] [page's]. */}"]
        );
        // A comment over several lines, and one that words follow on its closing line.
        let body = "{/*\n  The tabs follow the install page's.\n*/}\nUse the tabs to pick a package manager.\n\n\
                    {/* Keep this list short:\n  three managers at most. */} Yarn is the third.\n";
        let mdx = |query: &str| shown_in_mdx(body, query);
        assert_eq!(mdx("tabs install page"), ["Use the [tabs] to pick a package manager."]);
        assert_eq!(mdx("yarn"), ["three managers at most. */} [Yarn] is the third."]);
        assert_eq!(mdx("install page"), ["The tabs follow the [install] [page's]."]);
        let only = "## Queries\n\n```query\ntag:#tax\n```\n";
        let lines = Previewer::new("sunshine", None).preview(&chunk(only, 1));
        assert_eq!(marked(&lines[0]), "## Queries");
    }

    #[test]
    fn setext_headings_are_headings_too() {
        let body = "Sourdough\n=========\n\nThe starter is fed twice a day.\n\nFeeding\nand care\n-------\n\nFlour and water.\n";
        let lines = Previewer::new("sourdough", None).preview(&chunk(body, 1));
        assert_eq!(
            lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
            ["The starter is fed twice a day."]
        );
        let lines = Previewer::new("feeding care", None).preview(&chunk(body, 1));
        assert!(lines.iter().all(|l| !l.text.contains("Feeding") && !l.text.contains("care")), "{lines:?}");
        // A rule after a list item, or after a blank line, underlines nothing.
        let setext = setext_heading_lines(
            &["- item", "lazy", "---", "", "text", "", "---", "    code", "==="],
            &[false; 9],
        );
        assert_eq!(setext, [false; 9]);
        assert_eq!(
            setext_heading_lines(&["a", "b", "  ===  ", "c"], &[false; 4]),
            [true, true, false, false]
        );
    }

    #[test]
    fn a_second_line_only_when_it_adds_terms() {
        let body = "backup restore\nbackup again\nrestore again";
        let lines = Previewer::new("backup restore", None).preview(&chunk(body, 1));
        assert_eq!(lines.iter().map(|l| l.line).collect::<Vec<_>>(), [1]);
        // Nor for a letter alone.
        let body = "Redirects the request to https.\nThe last hop (i.e. the proxy) must be trusted.";
        let lines = Previewer::new("how do I redirect to https", None).preview(&chunk(body, 1));
        assert_eq!(lines.iter().map(|l| l.line).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn a_line_whose_words_hold_the_term_beats_one_whose_link_does() {
        let body = "[ch04-01-what-is-ownership.md](https://github.com/rust-lang/book/blob/main/src/ch04-01-what-is-ownership.md)\n\n**所有权**（*ownership*）是 Rust 用于如何管理内存的一组规则。\n\n[ownership]: ch04-00-understanding-ownership.html\n";
        let lines = Previewer::new("how does ownership work", None).preview(&chunk(body, 1));
        assert_eq!(lines.iter().map(|l| l.line).collect::<Vec<_>>(), [3], "{lines:?}");
        assert_eq!(
            addresses("See [the guide](../guide.md#setup) or <https://example.com/a_b>."),
            [(16, 33), (39, 62)]
        );
        assert_eq!(addresses("[ownership]: ch04.html#rules"), [(13, 28)]);
        assert_eq!(addresses("voir«https://a.fr»"), [(6, 20)]);
    }

    #[test]
    fn a_line_shown_under_one_hit_is_not_shown_again_under_a_later_one_of_its_file() {
        // Two chunks that overlap on line 3, which holds the query's words.
        let first = chunk("Mutable by choice.\nAnother line.\nVariables are immutable by default.\n", 1);
        let second = chunk(
            "Variables are immutable by default.\nShadowing differs from mut.\nA variable shadowed.\n",
            3,
        );
        let mut previewer = Previewer::new("immutable variables", None);
        assert_eq!(previewer.preview(&first).iter().map(|l| l.line).collect::<Vec<_>>(), [3]);
        let lines = previewer.preview(&second);
        assert_eq!(
            lines.iter().map(|l| (l.line, marked(l))).collect::<Vec<_>>(),
            [(5, "A [variable] shadowed.".to_string())]
        );
        // Another file's line 3 is its own.
        let other = ChunkRecord::sample("b.md", "Variables are immutable by default.\n", 3);
        assert_eq!(previewer.preview(&other)[0].line, 3);
        // A chunk whose every line was shown has nothing left to show.
        assert!(previewer.preview(&chunk("Variables are immutable by default.\n", 3)).is_empty());
    }

    #[test]
    fn without_a_matching_term_the_first_prose_line_is_shown() {
        let body = "# Title\n\n```sh\nls\n```\nProse here.\n";
        let lines = Previewer::new("zebra", None).preview(&chunk(body, 1));
        assert_eq!(lines[0].text, "ls");
        let lines = Previewer::new("zebra", None).preview(&chunk("# Title\n\nProse here.\n", 1));
        assert_eq!(
            (lines[0].line, lines[0].text.as_str(), lines[0].marks.is_empty()),
            (3, "Prose here.", true)
        );
    }

    /// A fast embedder that reads letters: a text's vector counts its letters, so two texts
    /// are alike as far as they share letters.
    struct Letters;

    impl Embedder for Letters {
        fn identity(&self) -> crate::providers::EmbedderIdentity {
            crate::providers::EmbedderIdentity {
                provider: "letters".into(),
                model: "letters".into(),
                dimensions: 64,
            }
        }

        fn embeds_fast(&self) -> bool {
            true
        }

        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, crate::providers::EmbedError> {
            let vector = |text: &str| {
                let mut v = vec![0.0f32; 64];
                text.chars().filter(|c| !c.is_ascii()).for_each(|c| v[c as usize % 64] += 1.0);
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1.0);
                v.iter().map(|x| x / norm).collect()
            };
            Ok(texts.iter().map(|t| vector(t)).collect())
        }
    }

    #[test]
    fn without_a_matching_term_the_line_closest_in_meaning_is_shown() {
        let body = "完全无关的一行。\n先验与体温。\n";
        // No term of the query is in the chunk; the second line shares its letters.
        let lines = Previewer::new("体验", Some(&Letters)).preview(&chunk(body, 1));
        assert_eq!((lines[0].line, lines[0].marks.is_empty()), (2, true));
        // The query and the lines are read as chunks are embedded, in one script: the same
        // letters in Traditional characters find the same line.
        let lines = Previewer::new("體驗", Some(&Letters)).preview(&chunk(body, 1));
        assert_eq!((lines[0].line, lines[0].marks.is_empty()), (2, true));
        // And in Japanese, half-width katakana as their full-width letters.
        let body = "関係のない行。\nクスデの話。\n";
        let lines = Previewer::new("ﾃﾞｽｸ", Some(&Letters)).preview(&chunk(body, 1));
        assert_eq!((lines[0].line, lines[0].marks.is_empty()), (2, true));
    }

    #[test]
    fn a_scrap_of_a_line_is_not_shown_for_its_meaning() {
        // The second line is the end of the first one's sentence, and shares more letters
        // with the query.
        let body = "完全无关的一行，讲的是别的事情。先验\n验体。\n";
        let lines = Previewer::new("体验", Some(&Letters)).preview(&chunk(body, 1));
        assert_eq!(lines[0].line, 1, "{lines:?}");
    }

    #[test]
    fn long_lines_are_cut_around_the_first_mark() {
        let line = format!("{} the needle is here {}", "word ".repeat(100), "tail ".repeat(100));
        let lines = Previewer::new("needle", None).preview(&chunk(&line, 1));
        let shown = marked(&lines[0]);
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert!(shown.contains("[needle]"), "{shown}");
        assert!(width(&lines[0].text) <= MAX_WIDTH, "{}", width(&lines[0].text));
    }

    #[test]
    fn a_chinese_hit_shows_the_sentence_that_matched() {
        let line = format!(
            "{}所有权是 Rust 最为与众不同的特性，它让 Rust 无需垃圾回收即可保障内存安全。{}",
            "这是一段没有关系的文字，讲的是别的事情。".repeat(6),
            "后面还有很多别的内容，也和问题无关。".repeat(6)
        );
        let lines = Previewer::new("垃圾回收", None).preview(&chunk(&line, 1));
        let shown = marked(&lines[0]);
        assert!(shown.starts_with("…所有权是 Rust"), "{shown}");
        assert!(shown.contains("无需[垃圾回收]即可"), "{shown}");
        // Each letter takes two columns of a terminal: a line of them is cut after half as
        // many letters as a line of Latin ones, and fills its columns.
        let columns = width(&lines[0].text);
        assert!((MAX_WIDTH - 2..=MAX_WIDTH).contains(&columns), "{columns} columns: {shown}");
        assert!(shown.ends_with('…'), "{shown}");
        // Two words of a query, apart in the sentence, are both marked.
        let lines = Previewer::new("内存安全 所有权", None).preview(&chunk(&line, 1));
        let shown = marked(&lines[0]);
        assert!(shown.starts_with("…[所有权]是 Rust") && shown.contains("保障[内存安全]。"), "{shown}");
    }

    #[test]
    fn a_line_cut_after_a_wide_blank_stays_on_a_character_boundary() {
        // The cut starts after the first blank of the forty characters before the mark;
        // these blanks are two and three bytes long (a no-break space, as typographers put
        // before `«`, an ideographic space and a thin space).
        for blank in ['\u{a0}', '\u{3000}', '\u{2009}'] {
            let line = format!(
                "{}abc{blank}{} «needle» e il resto {}",
                "x".repeat(300),
                "y".repeat(30),
                "z ".repeat(100)
            );
            let lines = Previewer::new("needle", None).preview(&chunk(&line, 1));
            let shown = marked(&lines[0]);
            assert!(shown.contains("[needle]"), "{blank:?}: {shown}");
        }
    }

    #[test]
    fn widths_count_terminal_columns() {
        assert_eq!(width("abc"), 3);
        assert_eq!(width("变量"), 4);
        assert_eq!(width("ｶﾞ"), 2);
        assert_eq!(width("e\u{301}"), 1);
    }

    #[test]
    fn marks_stay_on_character_boundaries() {
        let line = format!("{}ünïcödé needle ✓ {}", "é".repeat(300), "ß".repeat(300));
        let lines = Previewer::new("needle", None).preview(&chunk(&line, 1));
        let l = &lines[0];
        for &(s, e) in &l.marks {
            assert_eq!(&l.text[s..e], "needle");
        }
    }
}
