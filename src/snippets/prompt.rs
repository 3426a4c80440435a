//! Snippet prompts for the `section` and `document` modes, and the cleaning of replies.
//!
//! Every request puts what is shared by all chunks of a document into
//! [`ChatRequest::document`] and everything about one chunk into [`ChatRequest::prompt`]:
//! the provider caches the document part, so it must be byte-identical for every chunk of
//! one document. The tests hold both builders to that.

use std::collections::HashSet;
use std::fmt;

use super::estimate::count_tokens;
use crate::providers::chat::ChatRequest;

/// Version of the prompt wording. It is part of the snippet cache key: bump it whenever a
/// prompt below changes, so that snippets written under the old wording are regenerated.
pub const PROMPT_VERSION: u32 = 2;

/// Default upper bound on a reply. One or two sentences take about 60 tokens; the margin lets
/// a wordy reply finish its sentence instead of being cut off.
pub const DEFAULT_MAX_TOKENS: u32 = 150;

/// Default number of tokens of document text sent in [`SnippetMode::Document`].
pub const DEFAULT_DOCUMENT_BUDGET: usize = 6000;

/// How much of the document the model sees when it situates a chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SnippetMode {
    /// The document's title and path, and the chunk's heading path: cheap, and enough for
    /// most well-structured notes.
    #[default]
    Section,
    /// The whole document (or its outline and the chunks around the chunk, when it is longer
    /// than the budget), as in Anthropic's Contextual Retrieval.
    Document,
}

impl fmt::Display for SnippetMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SnippetMode::Section => "section",
            SnippetMode::Document => "document",
        })
    }
}

/// One chunk as the prompts see it.
#[derive(Debug, Clone, Copy)]
pub struct ChunkInput<'a> {
    /// The document's path, relative to the workspace root.
    pub path: &'a str,
    /// The document's title; may be empty.
    pub title: &'a str,
    /// Headings above the chunk, outermost first; empty above the first heading.
    pub heading_path: &'a [String],
    /// The chunk's original text.
    pub text: &'a str,
}

/// Instructions shared by both modes.
const SYSTEM: &str = "You write context notes for a search index over markdown documents. A note \
situates one chunk of a document within that document: which part of the document the chunk \
belongs to and what it is about there, in the document's own terms and in its language, so that \
a search for those terms finds the chunk. You answer with the note alone.";

/// The request of [`SnippetMode::Section`]: the model sees the document's title and path, the
/// chunk's heading path and the chunk.
pub fn section_request(chunk: &ChunkInput, max_tokens: u32) -> ChatRequest {
    let document = format!("The chunk to situate comes from this document.\n{}", document_names(chunk));

    let terms = if !chunk.heading_path.is_empty() {
        "the key terms of its heading"
    } else if !chunk.title.trim().is_empty() {
        "the key terms of the document's title"
    } else {
        "the chunk's own key terms"
    };
    let prompt = format!(
        "{place}\n\n<chunk>\n{text}\n</chunk>\n\nWrite 1–2 complete sentences that situate this chunk \
         within the document, using {terms}, in the language the chunk is written in. Answer with the sentences only: no preamble, no \
         quotes, no markdown.",
        place = section_place(chunk.heading_path),
        text = chunk.text.trim_end(),
    );
    ChatRequest { system: SYSTEM.to_string(), document, prompt, max_tokens }
}

/// The request of [`SnippetMode::Document`] for `chunks[index]`. `chunks` are all chunks of
/// one document, in order.
///
/// A document that fits `budget_tokens` is sent whole. A longer one is sent as its title and
/// heading outline, and the prompt carries the chunks around `chunks[index]` (as many as fit
/// in about half the budget) before the chunk itself. Either way the document part is the
/// same for every chunk of the document.
///
/// Panics if `index` is out of bounds.
pub fn document_request(
    chunks: &[ChunkInput],
    index: usize,
    budget_tokens: usize,
    max_tokens: u32,
) -> ChatRequest {
    let chunk = &chunks[index];
    let names = document_names(chunk);

    let (document, window) = if fits(chunks, budget_tokens) {
        let whole = format!("{names}\n\n<document>\n{}\n</document>", joined_texts(chunks));
        (whole, String::new())
    } else {
        let outline = outline(chunks, budget_tokens / OUTLINE_SHARE);
        let document = format!(
            "{names}\n\nThe document is too long to show whole. The outline of its headings:\n\
             <outline>\n{outline}</outline>"
        );
        (document, window(chunks, index, budget_tokens / WINDOW_SHARE))
    };

    let prompt = format!(
        "{window}Here is the chunk to situate within the whole document, {place}:\n<chunk>\n{text}\n\
         </chunk>\n\nGive a short, succinct context of 1–2 complete sentences that situates this \
         chunk within the overall document, to improve search retrieval of the chunk. Write them in \
         the language the chunk is written in. Answer with the sentences only and nothing else: no preamble, no quotes, no markdown.",
        place = document_place(chunk.heading_path),
        text = chunk.text.trim_end(),
    );
    ChatRequest { system: SYSTEM.to_string(), document, prompt, max_tokens }
}

/// The outline gets at most this fraction (1/n) of the budget, so that a document with
/// thousands of headings still leaves room for the window.
const OUTLINE_SHARE: usize = 4;

/// The window of neighbouring chunks gets at most this fraction (1/n) of the budget.
const WINDOW_SHARE: usize = 2;

/// The lines naming a document: its title (when it has one) and its path.
fn document_names(chunk: &ChunkInput) -> String {
    let title = chunk.title.trim();
    if title.is_empty() {
        format!("Path: {}", chunk.path)
    } else {
        format!("Title: {title}\nPath: {}", chunk.path)
    }
}

/// Where a chunk sits, as a sentence of the section prompt.
fn section_place(heading_path: &[String]) -> String {
    if heading_path.is_empty() {
        "The chunk comes before the document's first heading.".to_string()
    } else {
        format!("The chunk sits under the heading \"{}\".", heading_path.join(" > "))
    }
}

/// Where a chunk sits, as a clause of the document prompt.
fn document_place(heading_path: &[String]) -> String {
    if heading_path.is_empty() {
        "from before the document's first heading".to_string()
    } else {
        format!("from the section \"{}\"", heading_path.join(" > "))
    }
}

/// Whether the chunks' texts, joined, fit in `budget` tokens. Counted chunk by chunk and
/// stopped once over, so that a long document costs no more to check than its budget.
fn fits(chunks: &[ChunkInput], budget: usize) -> bool {
    let mut remaining = budget;
    chunks.iter().all(|c| take(c.text, &mut remaining))
}

fn joined_texts(chunks: &[ChunkInput]) -> String {
    let texts: Vec<&str> = chunks.iter().map(|c| c.text.trim_end()).collect();
    texts.join("\n\n")
}

/// The distinct headings of the document in order, one per line, indented two spaces per
/// level, cut short once they pass `budget` tokens. A heading is listed before its first
/// chunk even when no chunk sits directly under it, so the outline keeps its shape.
fn outline(chunks: &[ChunkInput], budget: usize) -> String {
    let mut seen: HashSet<&[String]> = HashSet::new();
    let mut out = String::new();
    let mut used = 0;
    for chunk in chunks {
        for depth in 1..=chunk.heading_path.len() {
            let prefix = &chunk.heading_path[..depth];
            if !seen.insert(prefix) {
                continue;
            }
            let line = format!("{}{}\n", "  ".repeat(depth - 1), prefix[depth - 1].trim());
            used += count_tokens(&line);
            if used > budget {
                out.push_str("…\n");
                return out;
            }
            out.push_str(&line);
        }
    }
    if out.is_empty() {
        out.push_str("(no headings)\n");
    }
    out
}

/// The chunks around `chunks[index]` that fit in `budget` tokens, nearest first, alternating
/// before and after, rendered in document order with the chunk's own place marked. Each side
/// stops at its first chunk that does not fit, so the window has no holes. Empty when not
/// even the nearest neighbour fits.
fn window(chunks: &[ChunkInput], index: usize, budget: usize) -> String {
    let mut remaining = budget;
    // Whether each side can still grow, and how far it reaches.
    let (mut before_open, mut after_open) = (index > 0, index + 1 < chunks.len());
    let (mut first, mut last) = (index, index);
    while before_open || after_open {
        if before_open {
            before_open = take(chunks[first - 1].text, &mut remaining);
            if before_open {
                first -= 1;
                before_open = first > 0;
            }
        }
        if after_open {
            after_open = take(chunks[last + 1].text, &mut remaining);
            if after_open {
                last += 1;
                after_open = last + 1 < chunks.len();
            }
        }
    }
    if first == index && last == index {
        return String::new();
    }

    let mut parts: Vec<&str> = chunks[first..index].iter().map(|c| c.text.trim_end()).collect();
    parts.push(CHUNK_MARK);
    parts.extend(chunks[index + 1..=last].iter().map(|c| c.text.trim_end()));
    format!(
        "The passages around the chunk, in document order, with the chunk's own place marked as {CHUNK_MARK}:\n\
         <passages>\n{}\n</passages>\n\n",
        parts.join("\n\n")
    )
}

/// Marks the chunk's own place among its neighbours.
const CHUNK_MARK: &str = "[the chunk]";

/// Takes `text` out of `remaining` when it fits (with a blank line to separate it).
fn take(text: &str, remaining: &mut usize) -> bool {
    let cost = count_tokens(text.trim_end()) + 1;
    if cost > *remaining {
        return false;
    }
    *remaining -= cost;
    true
}

/// Why a reply was not kept as a snippet. The messages are shown to users.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("the model's reply was empty")]
    Empty,
    #[error("the model declined to answer")]
    Refusal,
    #[error("the model's reply held no complete sentence")]
    NoSentence,
    #[error("the model's reply was too short to situate the chunk")]
    TooShort,
    #[error("the model's reply was mostly not words")]
    Junk,
    /// The model used up `max_tokens` before it got to the answer (a thinking model, most
    /// often). That says more of the model's settings than of the chunk: it is not kept,
    /// and the chunk waits.
    #[error(
        "the model ran out of tokens before it gave its answer: raise snippets.max_tokens or turn its thinking off"
    )]
    Unfinished,
}

/// The tags in which thinking models (DeepSeek-R1, Qwen3, …) put their reasoning before the
/// answer, when the server does not take it out of the reply.
const REASONING_TAGS: [&str; 2] = ["think", "thinking"];

/// The reply after the reasoning a thinking model may open it with; `Unfinished` when the
/// reasoning never closes.
fn skip_reasoning(raw: &str) -> Result<&str, Rejected> {
    let text = raw.trim_start();
    for tag in REASONING_TAGS {
        if let Some(rest) = strip_prefix_ignore_case(text, &format!("<{tag}>")) {
            let close = format!("</{tag}>");
            let at = rest.to_ascii_lowercase().find(&close).ok_or(Rejected::Unfinished)?;
            return Ok(&rest[at + close.len()..]);
        }
    }
    Ok(raw)
}

/// At most this many sentences of a reply are kept.
const MAX_SENTENCES: usize = 3;

/// Fewer words than this cannot situate a chunk.
const MIN_WORDS: usize = 3;

/// The snippet in a model's reply: a thinking model's reasoning, lead-ins ("Here is the context:"), tags, surrounding
/// quotes and markdown marks stripped, whitespace collapsed to single spaces, and only its
/// complete sentences kept (at most three), so that a reply cut off by the token limit loses
/// its last fragment rather than ending mid-word in the index.
pub fn clean_reply(raw: &str) -> Result<String, Rejected> {
    let text = unwrap_reply(skip_reasoning(raw)?);
    if text.is_empty() {
        return Err(Rejected::Empty);
    }
    if is_refusal(&text) {
        return Err(Rejected::Refusal);
    }
    let sentences = complete_sentences(&text);
    if sentences.is_empty() {
        return Err(Rejected::NoSentence);
    }
    let kept = sentences[..sentences.len().min(MAX_SENTENCES)].join(" ");
    let words = kept.split_whitespace().filter(|w| w.chars().any(char::is_alphabetic)).count();
    if words < MIN_WORDS {
        return Err(Rejected::TooShort);
    }
    let visible = kept.chars().filter(|c| !c.is_whitespace()).count();
    let letters = kept.chars().filter(|c| c.is_alphabetic()).count();
    if letters * 2 < visible {
        return Err(Rejected::Junk);
    }
    Ok(kept)
}

/// The reply without its wrapping, on one line with single spaces.
fn unwrap_reply(raw: &str) -> String {
    let text = peel(raw);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    // A markdown heading above the answer ("## Context") is a title, not part of it.
    let body: Vec<&str> =
        if lines.len() > 1 { lines.iter().copied().filter(|l| !is_heading_line(l)).collect() } else { lines };
    let flat: Vec<String> = body.into_iter().map(|l| strip_emphasis(strip_line_marks(l))).collect();
    let collapsed = flat.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
    // Markdown marks may have hidden a lead-in or quotes ("**Context:** …", "> \"…\"").
    peel(&collapsed).to_string()
}

/// Strips tags, lead-ins and surrounding quotes from both ends until none is left.
fn peel(text: &str) -> &str {
    let mut text = text.trim();
    loop {
        let before = text;
        text = strip_tags(text).trim();
        text = strip_lead_in(text).trim();
        text = strip_quotes(text).trim();
        if text == before {
            return text;
        }
    }
}

/// Strips an opening tag at the start (`<context>`) and a closing tag at the end.
fn strip_tags(text: &str) -> &str {
    let mut text = text;
    if let Some(rest) = text.strip_prefix('<')
        && let Some((name, after)) = rest.split_once('>')
        && is_tag_name(name)
    {
        text = after;
    }
    if let Some(rest) = text.strip_suffix('>')
        && let Some(open) = rest.rfind("</")
        && is_tag_name(&rest[open + 2..])
    {
        text = &rest[..open];
    }
    text
}

fn is_tag_name(name: &str) -> bool {
    name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Words a model opens with before it gets to the answer ("Sure, …"). Longer forms come
/// before their prefixes.
const INTERJECTIONS: [&str; 8] =
    ["certainly", "absolutely", "of course", "alright", "okay", "great", "sure", "ok"];

/// Labels a model puts before the answer ("Context: …").
const LABELS: [&str; 9] = [
    "context",
    "situating context",
    "succinct context",
    "short context",
    "context note",
    "note",
    "snippet",
    "answer",
    "summary",
];

/// How lead-in sentences start ("Here is the context for this chunk:").
const LEAD_INS: [&str; 5] = ["here is", "here's", "here\u{2019}s", "here are", "below is"];

/// A lead-in line says at most this many words.
const LEAD_IN_WORDS: usize = 12;

/// Strips one lead-in: an interjection, a line introducing the answer, or a label.
fn strip_lead_in(text: &str) -> &str {
    for word in INTERJECTIONS {
        if let Some(rest) = strip_prefix_ignore_case(text, word)
            && let Some(rest) = rest.strip_prefix([',', '!', '.', ':', ';'])
        {
            return rest;
        }
    }
    let is_lead_in = |head: &str| {
        let head = head.trim();
        head.split_whitespace().count() <= LEAD_IN_WORDS
            && (LEAD_INS.iter().any(|p| strip_prefix_ignore_case(head, p).is_some())
                || LABELS.iter().any(|l| head.eq_ignore_ascii_case(l)))
    };
    // A line of its own: "Here is the context:" or "Here's a short context for the chunk."
    if let Some((first, rest)) = text.split_once('\n')
        && !rest.trim().is_empty()
        && (is_lead_in(first)
            || (first.trim_end().ends_with(':') && first.split_whitespace().count() <= LEAD_IN_WORDS))
    {
        return rest;
    }
    // The same on the answer's own line: "Context: This chunk …".
    if let Some((head, rest)) = text.split_once(':')
        && !head.contains('\n')
        && is_lead_in(head)
    {
        return rest;
    }
    text
}

fn strip_prefix_ignore_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// Quote pairs a reply may be wrapped in.
const QUOTES: [(char, char); 6] = [
    ('"', '"'),
    ('\u{201c}', '\u{201d}'),
    ('\'', '\''),
    ('\u{2018}', '\u{2019}'),
    ('\u{ab}', '\u{bb}'),
    ('`', '`'),
];

/// Strips quotes around the whole text, or an opening quote whose closing one was cut off.
/// Quotes around a term inside the text ("\"Retention\" covers …") stay.
fn strip_quotes(text: &str) -> &str {
    for (open, close) in QUOTES {
        let Some(inner) = text.strip_prefix(open) else { continue };
        if let Some(inner) = inner.strip_suffix(close)
            && !inner.contains([open, close])
        {
            return inner;
        }
        if !inner.contains(close) {
            return inner;
        }
        return text;
    }
    text
}

fn is_heading_line(line: &str) -> bool {
    let rest = line.trim_start().trim_start_matches('#');
    rest.len() < line.trim_start().len() && (rest.is_empty() || rest.starts_with(' '))
}

/// Strips the marks that open a markdown line: headings, block quotes, bullets, numbers.
fn strip_line_marks(line: &str) -> &str {
    let mut line = line.trim();
    loop {
        let before = line;
        if is_heading_line(line) {
            line = line.trim_start_matches('#');
        }
        if let Some(rest) = line.strip_prefix('>') {
            line = rest;
        }
        for bullet in ["- ", "* ", "+ ", "\u{2022} "] {
            if let Some(rest) = line.strip_prefix(bullet) {
                line = rest;
            }
        }
        let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if (1..=2).contains(&digits)
            && let Some(rest) =
                line[digits..].strip_prefix(". ").or_else(|| line[digits..].strip_prefix(") "))
        {
            line = rest;
        }
        line = line.trim_start();
        if line == before {
            return line;
        }
    }
}

/// Drops markdown emphasis and code marks. An underscore inside a word (`max_tokens`) stays.
fn strip_emphasis(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let is_word = |i: Option<usize>| i.and_then(|i| chars.get(i)).is_some_and(|c| c.is_alphanumeric());
    let mut out = String::with_capacity(line.len());
    for (i, &c) in chars.iter().enumerate() {
        let drop = match c {
            '*' | '`' => true,
            '~' => chars.get(i + 1) == Some(&'~') || i > 0 && chars[i - 1] == '~',
            '_' => !(is_word(i.checked_sub(1)) && is_word(Some(i + 1))),
            _ => false,
        };
        if !drop {
            out.push(c);
        }
    }
    out
}

/// How a refusal or an apology opens, lowercased.
const REFUSAL_OPENINGS: [&str; 17] = [
    "i'm sorry",
    "i am sorry",
    "sorry",
    "i apologi",
    "i cannot",
    "i can't",
    "i can not",
    "i'm unable",
    "i am unable",
    "i'm not able",
    "i am not able",
    "i don't have",
    "i do not have",
    "i won't",
    "unfortunately, i",
    "as an ai",
    "as a language model",
];

/// Phrases that mark a refusal wherever they stand, lowercased. A snippet speaks about the
/// document in the third person, so none of them belongs in one.
const REFUSAL_PHRASES: [&str; 6] =
    ["as an ai", "as a language model", "i'm sorry", "i am sorry", "i apologize", "i apologise"];

fn is_refusal(text: &str) -> bool {
    let lower = text.to_lowercase().replace('\u{2019}', "'");
    REFUSAL_OPENINGS.iter().any(|p| lower.starts_with(p)) || REFUSAL_PHRASES.iter().any(|p| lower.contains(p))
}

/// Words that end in a period without ending a sentence, lowercased, without that period.
const ABBREVIATIONS: [&str; 13] =
    ["e.g", "i.e", "cf", "vs", "approx", "incl", "esp", "fig", "mr", "mrs", "ms", "dr", "st"];

/// Marks that may follow a sentence's final punctuation and still belong to it.
fn is_closer(c: char) -> bool {
    matches!(c, '"' | '\'' | '\u{201d}' | '\u{2019}' | ')' | ']' | '\u{bb}')
}

/// The complete sentences of `text` (single-spaced), in order. A sentence ends at `.`, `!` or
/// `?` (possibly followed by closing quotes or brackets) before a space or the end of the
/// text, except for an ellipsis, a known abbreviation, and a period followed by a lowercase
/// letter or a digit ("e.g. the", "see fig. 3"). Punctuation inside a token ("v2.1") ends
/// nothing. Whatever follows the last sentence end is a fragment, and dropped.
fn complete_sentences(text: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let is_terminator = |c: char| matches!(c, '.' | '!' | '?');
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        if !is_terminator(chars[i].1) {
            i += 1;
            continue;
        }
        let run_start = i;
        while i < chars.len() && is_terminator(chars[i].1) {
            i += 1;
        }
        let run = &chars[run_start..i];
        let only_periods = run.iter().all(|&(_, c)| c == '.');
        while i < chars.len() && is_closer(chars[i].1) {
            i += 1;
        }
        let end = chars.get(i).map_or(text.len(), |&(b, _)| b);
        let next = match chars.get(i) {
            None => None,
            Some(&(_, ' ')) => chars.get(i + 1).map(|&(_, c)| c),
            // Punctuation inside a token ("v2.1", "example.com").
            Some(_) => continue,
        };
        let ellipsis = only_periods && run.len() > 1;
        let continues = only_periods
            && (next.is_some_and(|c| c.is_lowercase() || c.is_ascii_digit())
                || is_abbreviation(text, chars[run_start].0));
        if ellipsis || continues {
            continue;
        }
        let sentence = text[start..end].trim();
        if sentence.chars().any(char::is_alphabetic) {
            sentences.push(sentence);
        }
        start = end;
    }
    sentences
}

/// Whether the word before the period at byte `period` is a known abbreviation.
fn is_abbreviation(text: &str, period: usize) -> bool {
    let word = text[..period].rsplit(' ').next().unwrap_or("");
    let word = word.trim_start_matches(|c: char| !c.is_alphanumeric());
    ABBREVIATIONS.iter().any(|a| word.eq_ignore_ascii_case(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document's chunks, owned, so that tests can borrow [`ChunkInput`]s from it.
    struct Doc {
        path: String,
        title: String,
        headings: Vec<Vec<String>>,
        texts: Vec<String>,
    }

    impl Doc {
        fn chunks(&self) -> Vec<ChunkInput<'_>> {
            self.headings
                .iter()
                .zip(&self.texts)
                .map(|(h, t)| ChunkInput { path: &self.path, title: &self.title, heading_path: h, text: t })
                .collect()
        }
    }

    fn path(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    fn small_doc() -> Doc {
        Doc {
            path: "ops/backup.md".into(),
            title: "Operations".into(),
            headings: vec![path(&[]), path(&["Backups"]), path(&["Backups", "Retention"])],
            texts: vec![
                "This page collects the runbooks of the platform team.".into(),
                "Backups run nightly at 02:00 UTC and are written to the cold bucket.".into(),
                "Daily backups are kept for 30 days, monthly ones for a year.".into(),
            ],
        }
    }

    /// Forty paragraphs of about seventy tokens each, under eight sections of five, every
    /// paragraph tagged with its number ("Paragraph 07").
    fn long_doc() -> Doc {
        let filler = "The retention job compares each snapshot against the policy, keeps the newest \
                      copies, moves older ones to the archive tier and records every decision in the \
                      audit log so that operators can review what was deleted and why it was deleted. Restores read the \
                      archive tier first and fall back to the cold bucket when a copy is missing there.";
        Doc {
            path: "ops/long.md".into(),
            title: "Storage handbook".into(),
            headings: (0..40).map(|i| path(&["Storage", &format!("Section {}", i / 5)])).collect(),
            texts: (0..40).map(|i| format!("Paragraph {i:02}. {filler}")).collect(),
        }
    }

    #[test]
    fn section_document_block_is_the_same_for_every_chunk() {
        let doc = small_doc();
        let chunks = doc.chunks();
        let requests: Vec<ChatRequest> = chunks.iter().map(|c| section_request(c, 150)).collect();
        assert!(
            requests.iter().all(|r| r.document == requests[0].document && r.system == requests[0].system)
        );
        assert!(
            requests[0].document.contains("Operations") && requests[0].document.contains("ops/backup.md")
        );
        assert!(!requests[0].document.contains("nightly"), "chunk text leaked into the document block");
    }

    #[test]
    fn section_prompt_holds_heading_path_and_chunk() {
        let doc = small_doc();
        let request = section_request(&doc.chunks()[2], 99);
        assert!(request.prompt.contains("\"Backups > Retention\""));
        assert!(request.prompt.contains("<chunk>\nDaily backups are kept for 30 days"));
        assert!(request.prompt.contains("1–2 complete sentences"));
        assert_eq!(request.max_tokens, 99);
    }

    #[test]
    fn section_prompt_handles_no_heading_and_no_title() {
        let headings = Vec::new();
        let chunk = ChunkInput { path: "notes.md", title: "", heading_path: &headings, text: "Loose notes." };
        let request = section_request(&chunk, 150);
        assert!(request.prompt.contains("before the document's first heading"));
        assert!(!request.prompt.contains("\"\""), "an empty heading path rendered as quotes");
        assert!(!request.document.contains("Title:"));
        assert!(request.document.contains("Path: notes.md"));
    }

    #[test]
    fn both_prompts_ask_for_the_snippet_in_the_chunks_language() {
        let headings = vec!["所有权规则".to_string()];
        let chunk = ChunkInput {
            path: "ch04.md",
            title: "什么是所有权？",
            heading_path: &headings,
            text: "首先，让我们看一下所有权的规则。",
        };
        for request in [section_request(&chunk, 150), document_request(&[chunk], 0, 6000, 150)] {
            assert!(request.prompt.contains("in the language the chunk is written in"), "{}", request.prompt);
            assert!(request.system.contains("in its language"), "{}", request.system);
        }
    }

    #[test]
    fn a_small_document_is_sent_whole_to_every_chunk() {
        let doc = small_doc();
        let chunks = doc.chunks();
        let requests: Vec<ChatRequest> =
            (0..chunks.len()).map(|i| document_request(&chunks, i, DEFAULT_DOCUMENT_BUDGET, 150)).collect();
        assert!(requests.iter().all(|r| r.document == requests[0].document));
        let document = &requests[0].document;
        assert!(document.starts_with("Title: Operations\nPath: ops/backup.md"));
        for text in &doc.texts {
            assert!(document.contains(text.as_str()), "missing {text:?}");
        }
        assert!(document.contains("<document>") && document.ends_with("</document>"));
        assert!(!requests[1].prompt.contains("<passages>"), "a whole document needs no window");
        assert!(requests[1].prompt.contains("<chunk>\nBackups run nightly"));
        assert!(requests[1].prompt.contains("\"Backups\""));
    }

    #[test]
    fn a_long_document_is_sent_as_an_outline_with_a_window() {
        let doc = long_doc();
        let chunks = doc.chunks();
        let budget = 2000;
        let requests: Vec<ChatRequest> =
            (0..chunks.len()).map(|i| document_request(&chunks, i, budget, 150)).collect();
        assert!(requests.iter().all(|r| r.document == requests[0].document));

        let document = &requests[0].document;
        assert!(document.contains("<outline>\nStorage\n  Section 0\n  Section 1\n"), "{document}");
        assert!(document.contains("  Section 7\n</outline>"));
        assert!(!document.contains("Paragraph"), "chunk text leaked into the outline");

        let prompt = &requests[20].prompt;
        let window = &prompt[..prompt.find("<chunk>").unwrap()];
        assert!(window.contains("Paragraph 19") && window.contains("Paragraph 21"), "{window}");
        assert!(!window.contains("Paragraph 00") && !window.contains("Paragraph 39"));
        assert!(!window.contains("Paragraph 20"), "the chunk is given after its window, not in it");
        let (p19, mark, p21) = (
            window.find("Paragraph 19").unwrap(),
            window.find(&format!("{CHUNK_MARK}\n")).unwrap(),
            window.find("Paragraph 21").unwrap(),
        );
        assert!(p19 < mark && mark < p21, "the window is not in document order");
        assert!(prompt.contains("<chunk>\nParagraph 20."));

        // The budget covers the document text; the instructions and the chunk come on top.
        let sent = count_tokens(document) + count_tokens(prompt);
        assert!(sent <= budget + count_tokens(&doc.texts[20]) + 200, "{sent} tokens sent");
        assert!(sent >= budget / 2, "the window did not use its share: {sent} tokens sent");
    }

    #[test]
    fn the_window_at_the_document_edge_grows_to_one_side() {
        let doc = long_doc();
        let chunks = doc.chunks();
        let prompt = document_request(&chunks, 0, 2000, 150).prompt;
        let window = &prompt[..prompt.find("<chunk>").unwrap()];
        assert!(window.contains("Paragraph 01") && window.contains("Paragraph 05"), "{window}");
        assert!(window.find(CHUNK_MARK).unwrap() < window.find("Paragraph 01").unwrap());
    }

    #[test]
    fn the_outline_is_cut_short_past_its_share_of_the_budget() {
        let headings: Vec<Vec<String>> = (0..500).map(|i| path(&[&format!("Heading number {i}")])).collect();
        let texts: Vec<String> = (0..500).map(|i| format!("Body {i}.")).collect();
        let doc = Doc { path: "many.md".into(), title: String::new(), headings, texts };
        let request = document_request(&doc.chunks(), 3, 400, 150);
        assert!(request.document.contains("Heading number 0\n"));
        assert!(request.document.contains("…\n</outline>"));
        assert!(count_tokens(&request.document) <= 400 / OUTLINE_SHARE + 60);
    }

    #[test]
    fn mode_names_round_trip() {
        assert_eq!(SnippetMode::default(), SnippetMode::Section);
        assert_eq!(SnippetMode::Document.to_string(), "document");
        let parsed: SnippetMode = serde_json::from_str("\"section\"").unwrap();
        assert_eq!(parsed, SnippetMode::Section);
    }

    #[test]
    fn clean_reply_keeps_whole_sentences() {
        let reply = "This chunk gives the retention periods of the nightly backups. It belongs to the \
                     Backups section of the operations runbook.";
        assert_eq!(clean_reply(reply).unwrap(), reply.split_whitespace().collect::<Vec<_>>().join(" "));
        assert_eq!(
            clean_reply("  This chunk covers\n  retention   of backups.\n").unwrap(),
            "This chunk covers retention of backups."
        );
    }

    #[test]
    fn clean_reply_drops_a_fragment_cut_off_by_the_token_limit() {
        let reply = "This chunk lists how long backups are kept. It also notes that monthly copies";
        assert_eq!(clean_reply(reply).unwrap(), "This chunk lists how long backups are kept.");
        let reply = "This chunk lists how long backups are kept. It also covers...";
        assert_eq!(clean_reply(reply).unwrap(), "This chunk lists how long backups are kept.");
    }

    #[test]
    fn clean_reply_keeps_at_most_three_sentences() {
        let reply = "One sentence is here. Two sentences are here! Three sentences, right? Four is too many.";
        assert_eq!(
            clean_reply(reply).unwrap(),
            "One sentence is here. Two sentences are here! Three sentences, right?"
        );
    }

    #[test]
    fn clean_reply_strips_lead_ins_quotes_tags_and_markdown() {
        let want = "This chunk sets the backup retention periods.";
        for reply in [
            "Here is the context:\n\"This chunk sets the backup retention periods.\"",
            "Here's a succinct context for the chunk:\n\nThis chunk sets the backup retention periods.",
            "Sure! Here is the context: This chunk sets the backup retention periods.",
            "Certainly! This chunk sets the backup retention periods.",
            "Context: This chunk sets the backup retention periods.",
            "**Context:** \u{201c}This chunk sets the backup retention periods.\u{201d}",
            "<context>\nThis chunk sets the backup retention periods.\n</context>",
            "\"<context>This chunk sets the backup retention periods.</context>\"",
            "## Context\n\nThis chunk sets the *backup* retention periods.",
            "- This chunk sets the **backup** retention periods.",
            "> This chunk sets the _backup_ retention periods.",
        ] {
            assert_eq!(clean_reply(reply).as_deref(), Ok(want), "for {reply:?}");
        }
        // An interjection is stripped only when punctuation closes it.
        assert_eq!(clean_reply("Okay, backups run nightly.").as_deref(), Ok("backups run nightly."));
        let reply = "Surely the nightly backups matter most.";
        assert_eq!(clean_reply(reply).as_deref(), Ok(reply));
    }

    #[test]
    fn clean_reply_drops_a_thinking_models_reasoning() {
        let want = "This chunk sets the backup retention periods.";
        for reply in [
            "<think>\nThe user wants a note. I should mention retention.\n</think>\n\nThis chunk sets the backup retention periods.",
            "<thinking>Mention retention.</thinking> This chunk sets the backup retention periods.",
            "<think></think>\nThis chunk sets the backup retention periods.",
        ] {
            assert_eq!(clean_reply(reply).as_deref(), Ok(want), "for {reply:?}");
        }
        // Cut off by the token limit while it was still thinking: no answer at all.
        let cut = "<think>\nThe user wants a note about the chunk. It is about retention. Let me";
        assert_eq!(clean_reply(cut), Err(Rejected::Unfinished));
    }

    #[test]
    fn clean_reply_leaves_quotes_and_underscores_inside_the_text() {
        let reply = "The \"Retention\" section sets max_age for each backup tier.";
        assert_eq!(clean_reply(reply).unwrap(), reply);
    }

    #[test]
    fn clean_reply_does_not_end_sentences_at_abbreviations_or_versions() {
        let reply = "This chunk lists backup tools, e.g. restic and borg, and their flags. Since v2.1 \
                     the default is 30 days, i.e. the team's choice, see fig. 3 of the runbook. A third \
                     sentence ends here. And a fourth";
        assert_eq!(
            clean_reply(reply).unwrap(),
            "This chunk lists backup tools, e.g. restic and borg, and their flags. Since v2.1 the default \
             is 30 days, i.e. the team's choice, see fig. 3 of the runbook. A third sentence ends here."
        );
    }

    #[test]
    fn clean_reply_rejects_what_is_no_snippet() {
        for (reply, why) in [
            ("", Rejected::Empty),
            ("  \n ", Rejected::Empty),
            ("<context></context>", Rejected::Empty),
            ("Here is the context:", Rejected::Empty),
            ("I'm sorry, but I can't help with that request.", Rejected::Refusal),
            ("I cannot situate this chunk without more of the document.", Rejected::Refusal),
            ("As an AI language model, I have no access to the document.", Rejected::Refusal),
            ("Unfortunately, I don\u{2019}t see the document.", Rejected::Refusal),
            ("...", Rejected::NoSentence),
            ("Backups retention policy for the platform team", Rejected::NoSentence),
            ("Retention.", Rejected::TooShort),
            ("x1 = 2340 + 5678; y2 = 91011 - 1213; z = 141516.", Rejected::Junk),
        ] {
            assert_eq!(clean_reply(reply), Err(why), "for {reply:?}");
        }
    }

    #[test]
    fn rejection_messages_read_as_messages() {
        assert_eq!(Rejected::Empty.to_string(), "the model's reply was empty");
        assert_eq!(Rejected::NoSentence.to_string(), "the model's reply held no complete sentence");
    }
}
