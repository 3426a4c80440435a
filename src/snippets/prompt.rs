//! Snippet prompts for the `section` and `document` modes.
//!
//! Every request puts what is shared by all chunks of a document into
//! [`ChatRequest::document`] and everything about one chunk into [`ChatRequest::prompt`]:
//! the provider caches the document part, so it must be byte-identical for every chunk of
//! one document. The tests hold both builders to that.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashSet;
use std::fmt;
use std::sync::OnceLock;

use super::estimate::{Priced, count_tokens};
use crate::analysis::Language;
use crate::providers::chat::ChatRequest;

/// Version of the prompt wording. It is part of the snippet cache key: bump it whenever a
/// prompt below changes, so that snippets written under the old wording are regenerated.
pub const PROMPT_VERSION: u32 = 1;

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
belongs to and what it is about there, in the document's own terms, so that a search for those \
terms finds the chunk. You answer with the note alone.";

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
         within the document, using {terms}.{language} Answer with the sentences only: no preamble, no \
         quotes, no markdown.",
        place = section_place(chunk.heading_path),
        text = chunk.text.trim_end(),
        language = in_its_language(chunk.text),
    );
    ChatRequest { system: SYSTEM.to_string(), document, prompt, max_tokens }
}

/// The requests of one document's chunks under a mode, with what they share worked out once.
pub enum Prompts<'a> {
    Section { chunks: &'a [ChunkInput<'a>], max_tokens: u32 },
    Document(DocumentPrompts<'a>),
}

impl<'a> Prompts<'a> {
    /// The requests of `chunks`: all chunks of one document, in order (so they share its path
    /// and title). Panics if `chunks` is empty.
    pub fn new(
        mode: SnippetMode,
        chunks: &'a [ChunkInput<'a>],
        budget_tokens: usize,
        max_tokens: u32,
    ) -> Self {
        match mode {
            SnippetMode::Section => Prompts::Section { chunks, max_tokens },
            SnippetMode::Document => {
                Prompts::Document(DocumentPrompts::new(chunks, budget_tokens, max_tokens))
            }
        }
    }

    /// The request for `chunks[index]`. Panics if `index` is out of bounds.
    pub fn request(&self, index: usize) -> ChatRequest {
        match self {
            Prompts::Section { chunks, max_tokens } => section_request(&chunks[index], *max_tokens),
            Prompts::Document(prompts) => prompts.request(index),
        }
    }

    /// The request for `chunks[index]` as the estimate takes it: a section prompt counted
    /// exactly, a document prompt as [`DocumentPrompts::prompt_tokens`] counts it.
    pub fn priced(&self, index: usize) -> Priced<'_> {
        match self {
            Prompts::Section { .. } => {
                let request = self.request(index);
                Priced {
                    system: SYSTEM,
                    prompt_tokens: count_tokens(&request.prompt) as u64,
                    document: Cow::Owned(request.document),
                    max_tokens: request.max_tokens,
                }
            }
            Prompts::Document(prompts) => Priced {
                system: SYSTEM,
                document: Cow::Borrowed(prompts.document()),
                prompt_tokens: prompts.prompt_tokens(index),
                max_tokens: prompts.max_tokens,
            },
        }
    }
}

/// The request of [`SnippetMode::Document`] for `chunks[index]`. `chunks` are all chunks of
/// one document, in order. [`DocumentPrompts`] builds the requests of several chunks of one
/// document without counting the same text again for each.
///
/// Panics if `index` is out of bounds.
pub fn document_request(
    chunks: &[ChunkInput],
    index: usize,
    budget_tokens: usize,
    max_tokens: u32,
) -> ChatRequest {
    DocumentPrompts::new(chunks, budget_tokens, max_tokens).request(index)
}

/// The requests of [`SnippetMode::Document`] for the chunks of one document (all its chunks,
/// in order), with what they share worked out once.
///
/// A document that fits `budget_tokens` is sent whole. A longer one is sent as its title and
/// heading outline, and the prompt carries the chunks around the chunk (as many as fit in
/// about half the budget) before the chunk itself. Either way the document part is the
/// same for every chunk of the document.
///
/// Each chunk's tokens are counted once, when a window or the budget first needs them, so
/// the requests of all chunks of a long document cost about one count of its text, not one
/// count of a window per chunk.
pub struct DocumentPrompts<'a> {
    chunks: &'a [ChunkInput<'a>],
    max_tokens: u32,
    /// The document part of every request.
    document: String,
    /// The budget of the window of neighbouring chunks; `None` when the document is sent whole.
    window_budget: Option<usize>,
    /// Each chunk's cost in a budget, as [`cost`] counts it, once asked for.
    costs: Vec<OnceCell<usize>>,
}

impl<'a> DocumentPrompts<'a> {
    /// The document part of `chunks`' requests, worked out once. Panics if `chunks` is empty.
    pub fn new(chunks: &'a [ChunkInput<'a>], budget_tokens: usize, max_tokens: u32) -> DocumentPrompts<'a> {
        let names = document_names(&chunks[0]);
        let mut prompts = DocumentPrompts {
            chunks,
            max_tokens,
            document: String::new(),
            window_budget: None,
            costs: chunks.iter().map(|_| OnceCell::new()).collect(),
        };
        // Whether the chunks' texts, joined, fit in the budget: counted chunk by chunk and
        // stopped once over, so that a long document costs no more to check than its budget.
        let mut remaining = budget_tokens;
        if (0..chunks.len()).all(|i| prompts.take(i, &mut remaining)) {
            prompts.document = format!("{names}\n\n<document>\n{}\n</document>", joined_texts(chunks));
        } else {
            let outline = outline(chunks, budget_tokens / OUTLINE_SHARE);
            prompts.document = format!(
                "{names}\n\nThe document is too long to show whole. The outline of its headings:\n\
                 <outline>\n{outline}</outline>"
            );
            prompts.window_budget = Some(budget_tokens / WINDOW_SHARE);
        }
        prompts
    }

    /// The document part, the same in every request.
    pub fn document(&self) -> &str {
        &self.document
    }

    /// The request for `chunks[index]`. Panics if `index` is out of bounds.
    pub fn request(&self, index: usize) -> ChatRequest {
        let window = self.window(index).map_or_else(String::new, |w| w.render(self.chunks, index));
        ChatRequest {
            system: SYSTEM.to_string(),
            document: self.document.clone(),
            prompt: format!("{window}{}", self.chunk_part(index)),
            max_tokens: self.max_tokens,
        }
    }

    /// The tokens of [`Self::request`]`(index).prompt`, counted in parts: the part about the
    /// chunk itself exactly, the window as the sum of its passages' counts and of its frame.
    /// Joined, a passage ending in punctuation may share a token with the blank line after
    /// it, so the sum can run a token or so per passage above the exact count.
    pub fn prompt_tokens(&self, index: usize) -> u64 {
        let window = self.window(index).map_or(0, |w| {
            let passages: usize = (w.first..=w.last).filter(|&i| i != index).map(|i| self.cost(i)).sum();
            passages + window_frame_tokens()
        });
        (window + count_tokens(&self.chunk_part(index))) as u64
    }

    /// The prompt after the window: where the chunk sits, the chunk and the instructions.
    fn chunk_part(&self, index: usize) -> String {
        let chunk = &self.chunks[index];
        format!(
            "Here is the chunk to situate within the whole document, {place}:\n<chunk>\n{text}\n\
             </chunk>\n\nGive a short, succinct context of 1–2 complete sentences that situates this \
             chunk within the overall document, to improve search retrieval of the chunk.{language} Answer with \
             the sentences only and nothing else: no preamble, no quotes, no markdown.",
            place = document_place(chunk.heading_path),
            text = chunk.text.trim_end(),
            language = in_its_language(chunk.text),
        )
    }

    /// The chunks around `chunks[index]` that fit in the window's budget, nearest first,
    /// alternating before and after. Each side stops at its first chunk that does not fit, so
    /// the window has no holes. `None` when the document is sent whole, or when not even the
    /// nearest neighbour fits.
    fn window(&self, index: usize) -> Option<Window> {
        let mut remaining = self.window_budget?;
        let len = self.chunks.len();
        // Whether each side can still grow, and how far it reaches.
        let (mut before_open, mut after_open) = (index > 0, index + 1 < len);
        let (mut first, mut last) = (index, index);
        while before_open || after_open {
            if before_open {
                before_open = self.take(first - 1, &mut remaining);
                if before_open {
                    first -= 1;
                    before_open = first > 0;
                }
            }
            if after_open {
                after_open = self.take(last + 1, &mut remaining);
                if after_open {
                    last += 1;
                    after_open = last + 1 < len;
                }
            }
        }
        (first < index || last > index).then_some(Window { first, last })
    }

    /// Takes chunk `i` out of `remaining` when it fits.
    fn take(&self, i: usize, remaining: &mut usize) -> bool {
        let cost = self.cost(i);
        if cost > *remaining {
            return false;
        }
        *remaining -= cost;
        true
    }

    /// Chunk `i`'s cost, counted the first time it is asked for.
    fn cost(&self, i: usize) -> usize {
        *self.costs[i].get_or_init(|| cost(self.chunks[i].text))
    }
}

/// The neighbours a window shows: `chunks[first..=last]` without the chunk itself.
struct Window {
    first: usize,
    last: usize,
}

impl Window {
    /// The window as the prompt shows it, in document order with the chunk's own place marked.
    fn render(&self, chunks: &[ChunkInput], index: usize) -> String {
        let mut parts: Vec<&str> = chunks[self.first..index].iter().map(|c| c.text.trim_end()).collect();
        parts.push(CHUNK_MARK);
        parts.extend(chunks[index + 1..=self.last].iter().map(|c| c.text.trim_end()));
        format!("{WINDOW_HEAD}{}{WINDOW_TAIL}", parts.join("\n\n"))
    }
}

/// What a window's passages come between.
const WINDOW_HEAD: &str = concat!(
    "The passages around the chunk, in document order, with the chunk's own place marked as ",
    "[the chunk]:\n<passages>\n"
);
const WINDOW_TAIL: &str = "\n</passages>\n\n";

/// The tokens of a window beyond its passages and the blank lines between them (which
/// [`cost`] counts): its head, its tail and the chunk's mark.
fn window_frame_tokens() -> usize {
    static FRAME: OnceLock<usize> = OnceLock::new();
    *FRAME.get_or_init(|| count_tokens(WINDOW_HEAD) + count_tokens(CHUNK_MARK) + count_tokens(WINDOW_TAIL))
}

/// The language a chunk's snippet is asked in, when the chunk is not in English: a note in
/// English beside a chunk in Chinese would not match a search in Chinese. A chunk in English
/// is asked for as it always was, so that its snippets stay valid.
pub fn snippet_language(text: &str) -> Option<String> {
    Language::name_of_prose(text)
}

/// The prompt's sentence asking for the snippet in the chunk's language, or nothing.
fn in_its_language(text: &str) -> String {
    snippet_language(text)
        .map_or_else(String::new, |name| format!(" Write them in {name}, the chunk's language."))
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

/// Marks the chunk's own place among its neighbours.
const CHUNK_MARK: &str = "[the chunk]";

/// A chunk's cost in a budget: its tokens, and one for the blank line that separates it from
/// the next.
fn cost(text: &str) -> usize {
    count_tokens(text.trim_end()) + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snippets::estimate::counted_bytes;

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
            assert!(
                request.prompt.contains("Write them in Chinese, the chunk's language."),
                "{}",
                request.prompt
            );
        }
        // A chunk in English is asked for as before (its snippets stay valid).
        let english = ChunkInput {
            path: "notes.md",
            title: "Backups",
            heading_path: &[],
            text: "Backups are kept for thirty days.",
        };
        for request in [section_request(&english, 150), document_request(&[english], 0, 6000, 150)] {
            assert!(!request.prompt.contains("Write them in"), "{}", request.prompt);
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

    /// The construction of document requests before [`DocumentPrompts`]: every request
    /// counted the document against the budget and each neighbour of its window again.
    mod earlier {
        use super::super::*;

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
                 chunk within the overall document, to improve search retrieval of the chunk.{language} Answer with \
                 the sentences only and nothing else: no preamble, no quotes, no markdown.",
                place = document_place(chunk.heading_path),
                text = chunk.text.trim_end(),
                language = in_its_language(chunk.text),
            );
            ChatRequest { system: SYSTEM.to_string(), document, prompt, max_tokens }
        }

        fn fits(chunks: &[ChunkInput], budget: usize) -> bool {
            let mut remaining = budget;
            chunks.iter().all(|c| take(c.text, &mut remaining))
        }

        fn window(chunks: &[ChunkInput], index: usize, budget: usize) -> String {
            let mut remaining = budget;
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

        fn take(text: &str, remaining: &mut usize) -> bool {
            let cost = count_tokens(text.trim_end()) + 1;
            if cost > *remaining {
                return false;
            }
            *remaining -= cost;
            true
        }
    }

    /// Chunks of uneven length (a word to a few hundred), some with trailing blank lines or
    /// in Chinese, under headings that come and go: windows that stop on either side.
    fn uneven_doc() -> Doc {
        let words = ["retention", "snapshot", "archive,", "restore.", "tier", "policy;", "(cold)", "`dump`"];
        let headings = (0..60)
            .map(|i| match i % 7 {
                0 => path(&[]),
                1 | 2 => path(&["Backups"]),
                3 => path(&["Backups", &format!("Case {i}")]),
                _ => path(&["Restore"]),
            })
            .collect();
        let texts = (0..60)
            .map(|i: usize| {
                let n = (i * 37) % 230 + 1;
                let mut text: String =
                    (0..n).map(|w| words[(w * 5 + i) % words.len()]).collect::<Vec<_>>().join(" ");
                if i % 9 == 4 {
                    text = format!("恢复时先读取归档层，缺少副本时再读取冷存储。{text}");
                }
                if i % 4 == 1 {
                    text.push_str("\n\n  ");
                }
                text
            })
            .collect();
        Doc { path: "ops/uneven.md".into(), title: "Storage".into(), headings, texts }
    }

    #[test]
    fn document_requests_are_byte_for_byte_those_of_the_earlier_construction() {
        let docs = [small_doc(), long_doc(), uneven_doc()];
        let mut windows = 0;
        for doc in &docs {
            let chunks = doc.chunks();
            for budget in [0, 40, 400, 2000, DEFAULT_DOCUMENT_BUDGET, 100_000] {
                let prompts = DocumentPrompts::new(&chunks, budget, 150);
                for i in 0..chunks.len() {
                    let request = prompts.request(i);
                    assert_eq!(request, earlier::document_request(&chunks, i, budget, 150), "{budget}, {i}");
                    assert_eq!(request, document_request(&chunks, i, budget, 150));
                    windows += usize::from(request.prompt.contains("<passages>"));
                }
            }
        }
        assert!(windows > 100, "too few windows to compare: {windows}");
    }

    #[test]
    fn a_documents_prompts_count_each_chunk_about_once() {
        let doc = uneven_doc();
        let chunks = doc.chunks();
        let text: usize = doc.texts.iter().map(String::len).sum();
        for budget in [400, 2000, DEFAULT_DOCUMENT_BUDGET] {
            let before = counted_bytes();
            let prompts = DocumentPrompts::new(&chunks, budget, 150);
            let counted: u64 = (0..chunks.len()).map(|i| prompts.prompt_tokens(i)).sum();
            // Each chunk for its cost and once more in its own prompt, with the instructions.
            let tokenized = counted_bytes() - before;
            assert!(tokenized < 2 * text + chunks.len() * 1000, "{budget}: {tokenized} bytes for {text}");
            assert!(counted > 0);
        }
    }

    #[test]
    fn a_prompts_tokens_counted_in_parts_are_close_to_its_exact_count() {
        for doc in [long_doc(), uneven_doc()] {
            let chunks = doc.chunks();
            let prompts = DocumentPrompts::new(&chunks, 2000, 150);
            for i in 0..chunks.len() {
                let prompt = prompts.request(i).prompt;
                let (parts, exact) = (prompts.prompt_tokens(i), count_tokens(&prompt) as u64);
                let passages = prompt.matches("\n\n").count() as u64;
                assert!(parts.abs_diff(exact) <= passages, "{i}: {parts} counted in parts, {exact} exactly");
            }
        }
        // A document sent whole leaves nothing to add up: its prompts are counted exactly.
        let doc = small_doc();
        let chunks = doc.chunks();
        let prompts = DocumentPrompts::new(&chunks, DEFAULT_DOCUMENT_BUDGET, 150);
        for i in 0..chunks.len() {
            assert_eq!(prompts.prompt_tokens(i), count_tokens(&prompts.request(i).prompt) as u64);
        }
    }

    #[test]
    fn mode_names_round_trip() {
        assert_eq!(SnippetMode::default(), SnippetMode::Section);
        assert_eq!(SnippetMode::Document.to_string(), "document");
        let parsed: SnippetMode = serde_json::from_str("\"section\"").unwrap();
        assert_eq!(parsed, SnippetMode::Section);
    }
}
