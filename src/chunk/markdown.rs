//! Markdown parsing with pulldown-cmark: sections bounded by headings, the blocks inside each
//! section, heading texts with their markup stripped, and the tags written in the text.
//!
//! Only top-level headings bound sections. A heading nested in a block quote or a list item
//! (`> # Quoted`) is part of that container's text, the same way documentation generators
//! leave it out of a page's table of contents.
//!
//! A `<script>` or `<style>` block is the page's machinery, never shown as text: a VitePress
//! page opens with `<script setup>` importing its demos, and may end with their `<style>`.
//! So are an MDX page's `import` and `export` statements. A section whose words all lie in
//! such blocks says nothing a reader could search for, like a section without a word: its
//! chunk would be a few lines of imports or CSS that come close to every query about its
//! page.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::outline::{Block, BlockKind, Outline, Section};
use super::tags;

/// The extensions whose syntax changes block structure or heading text in the documents we
/// index. Smart punctuation stays off because it would change heading texts; metadata blocks
/// stay off because front matter is found before the parser runs.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// Parses the body `text[body.clone()]` into sections. Every offset in the result is an
/// offset into `text`. `mdx`: the text is an MDX page, whose top-level paragraphs that open
/// with `import` or `export` are statements of its script.
pub(crate) fn parse(text: &str, body: Range<usize>, mdx: bool) -> Outline {
    let base = body.start;
    let source = &text[body.clone()];
    let mut outline = Outline::default();
    // Open headings, outermost first: (level, text).
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut current =
        Section { heading_path: Vec::new(), range: body.clone(), heading: None, blocks: Vec::new() };
    let mut depth = 0usize;
    // Inside a top-level list, items are the blocks; inside a top-level heading, text events
    // make up the heading's text.
    let mut in_top_list = false;
    let mut heading: Option<(usize, Range<usize>, String)> = None;
    // Text inside code blocks is code, never tags.
    let mut in_code = false;
    // The top-level `<script>` and `<style>` blocks and MDX statements: they render as no
    // text.
    let mut machinery: Vec<Range<usize>> = Vec::new();

    for (event, range) in Parser::new_ext(source, options()).into_offset_iter() {
        let range = range.start + base..range.end + base;
        if matches!(event, Event::Text(_)) && !in_code {
            tags::scan(text, range.clone(), &mut outline.tags);
        }
        match event {
            Event::Start(tag) => {
                in_code |= matches!(tag, Tag::CodeBlock(_));
                if depth == 0 {
                    match tag {
                        Tag::Heading { level, .. } => {
                            heading = Some((level as usize, range.clone(), String::new()));
                        }
                        Tag::List(_) => in_top_list = true,
                        ref other => {
                            let block = &text[range.clone()];
                            if (matches!(other, Tag::HtmlBlock) && is_machinery(block))
                                || (mdx && matches!(other, Tag::Paragraph) && is_esm(block))
                            {
                                machinery.push(range.clone());
                            }
                            current.blocks.push(Block { start: range.start, kind: block_kind(other) })
                        }
                    }
                } else if depth == 1 && in_top_list && matches!(tag, Tag::Item) {
                    current.blocks.push(Block { start: range.start, kind: BlockKind::ListItem });
                }
                depth += 1;
            }
            Event::End(tag_end) => {
                in_code &= !matches!(tag_end, TagEnd::CodeBlock);
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    match tag_end {
                        TagEnd::Heading(_) => {
                            if let Some((level, range, raw)) = heading.take() {
                                let title = collapse_whitespace(&raw);
                                if level == 1 && outline.first_h1.is_none() && !title.is_empty() {
                                    outline.first_h1 = Some(title.clone());
                                }
                                let next = open_section(&mut stack, level, title, range);
                                let done = std::mem::replace(&mut current, next);
                                finish_section(text, done, current.range.start, &machinery, &mut outline);
                            }
                        }
                        TagEnd::List(_) => in_top_list = false,
                        _ => {}
                    }
                }
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                if let Some((_, _, raw)) = heading.as_mut() {
                    raw.push_str(&t);
                } else if depth == 0 {
                    current.blocks.push(Block { start: range.start, kind: BlockKind::Prose });
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, raw)) = heading.as_mut() {
                    raw.push(' ');
                }
            }
            // Inline HTML (`<a id="x"></a>`) and footnote references are markup, not text.
            Event::InlineHtml(_) | Event::FootnoteReference(_) | Event::TaskListMarker(_) => {}
            Event::Html(_) => {
                if depth == 0 {
                    current.blocks.push(Block { start: range.start, kind: BlockKind::Lines });
                }
            }
            Event::Rule => {
                if depth == 0 {
                    current.blocks.push(Block { start: range.start, kind: BlockKind::Lines });
                }
            }
        }
    }
    // An unterminated heading cannot happen with a well-behaved parser; if it did, its text
    // simply stays part of the current section.
    let end = body.end;
    finish_section(text, current, end, &machinery, &mut outline);
    outline
}

/// Pops the headings at `level` and below, pushes the new one, and opens its section.
fn open_section(
    stack: &mut Vec<(usize, String)>,
    level: usize,
    title: String,
    range: Range<usize>,
) -> Section {
    while stack.last().is_some_and(|(open, _)| *open >= level) {
        stack.pop();
    }
    stack.push((level, title));
    Section {
        // Empty headings (`#` alone) still bound sections, but add nothing to a path.
        heading_path: stack.iter().filter(|(_, t)| !t.is_empty()).map(|(_, t)| t.clone()).collect(),
        range: range.start..range.start,
        heading: Some(range),
        blocks: Vec::new(),
    }
}

/// Closes `section` at `end` and keeps it; `machinery` are the `<script>` and `<style>`
/// blocks (and an MDX page's statements) found so far.
fn finish_section(
    text: &str,
    mut section: Section,
    end: usize,
    machinery: &[Range<usize>],
    outline: &mut Outline,
) {
    section.range.end = end.max(section.range.start);
    let body_start = section.heading.as_ref().map_or(section.range.start, |h| h.end.min(section.range.end));
    section.blocks.retain(|b| b.start >= body_start && b.start < section.range.end);
    // Blocks tile the section from their starts, so the starts must strictly increase; the
    // parser emits them in order, and sorting makes that a guarantee rather than a hope.
    section.blocks.sort_by_key(|b| b.start);
    section.blocks.dedup_by_key(|b| b.start);
    let body = &text[body_start..section.range.end];
    let says_something = body
        .char_indices()
        .any(|(at, c)| c.is_alphanumeric() && !machinery.iter().any(|m| m.contains(&(body_start + at))));
    if !says_something {
        // A body without a letter or a digit (a template's empty `- [ ]`, a lone `-` or
        // `---`), or with its words in a page's scripts and styles alone, says nothing a
        // search could ask for: the section is its heading alone, and its chunk would only
        // be a near-empty vector that comes close to every query.
        section.blocks.clear();
    } else if section.blocks.is_empty() {
        // Text that produces no block event (link reference definitions) is still content
        // and must not vanish from the index.
        if let Some(offset) = body.find(|c: char| !c.is_whitespace()) {
            section.blocks.push(Block { start: body_start + offset, kind: BlockKind::Lines });
        }
    }
    // The preamble before the first heading is kept even when empty so that sections start
    // at the body's start; it simply yields no chunk.
    outline.sections.push(section);
}

/// Whether an HTML block is a `<script>` or a `<style>` (CommonMark's first kind of HTML
/// block but for `<pre>` and `<textarea>`, whose text is shown).
fn is_machinery(block: &str) -> bool {
    block.lines().next().and_then(script_or_style_closing_tag).is_some()
}

/// Whether an MDX paragraph is a block of ECMAScript module statements: MDX reads a
/// top-level paragraph that opens with `import` or `export` and a blank as one. Whether the
/// text opens a top-level paragraph is the caller's to tell.
pub fn is_esm(paragraph: &str) -> bool {
    ["import", "export"].iter().any(|word| {
        paragraph.strip_prefix(word).and_then(|rest| rest.chars().next()).is_some_and(char::is_whitespace)
    })
}

/// The closing tag of the `<script>` or `<style>` block that `line` opens, by CommonMark's
/// rule: at most three blanks, the tag's name in any case, then a blank, `>` or the line's
/// end. The block runs to the line that holds the closing tag (in any case), that line
/// included. Whether the line lies in a code block, where a tag is code, is the caller's
/// to tell.
pub fn script_or_style_closing_tag(line: &str) -> Option<&'static str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let line = &line[indent..];
    if indent > 3 {
        return None;
    }
    [("<script", "</script>"), ("<style", "</style>")].into_iter().find_map(|(open, close)| {
        let opens = line.get(..open.len()).is_some_and(|head| head.eq_ignore_ascii_case(open))
            && line[open.len()..].chars().next().is_none_or(|c| c == '>' || c.is_whitespace());
        opens.then_some(close)
    })
}

fn block_kind(tag: &Tag<'_>) -> BlockKind {
    match tag {
        Tag::Paragraph | Tag::BlockQuote(_) | Tag::FootnoteDefinition(_) | Tag::DefinitionList => {
            BlockKind::Prose
        }
        Tag::Item => BlockKind::ListItem,
        _ => BlockKind::Lines,
    }
}

/// Trims and collapses runs of whitespace into single spaces.
fn collapse_whitespace(text: &str) -> String {
    super::label(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline(text: &str) -> Outline {
        parse(text, 0..text.len(), false)
    }

    fn paths(text: &str) -> Vec<Vec<String>> {
        outline(text).sections.into_iter().map(|s| s.heading_path).collect()
    }

    #[test]
    fn heading_paths_pop_at_the_same_or_a_higher_level() {
        let text = "# A\n## B\n### C\n## D\n#### E\n# F\n";
        assert_eq!(
            paths(text),
            vec![
                vec![],
                vec!["A"],
                vec!["A", "B"],
                vec!["A", "B", "C"],
                vec!["A", "D"],
                vec!["A", "D", "E"],
                vec!["F"],
            ]
        );
    }

    #[test]
    fn heading_text_loses_its_markup() {
        let text = "# The `x` <a id=\"y\"></a>[link](http://z) *em*  {#anchor}\n";
        let o = outline(text);
        assert_eq!(o.first_h1.as_deref(), Some("The x link em"));
    }

    #[test]
    fn setext_headings_and_fenced_hashes() {
        let text = "Title\n=====\n\n```\n# not a heading\n```\n\nSub\n---\n~~~\n## nor this\n~~~\n";
        assert_eq!(paths(text), vec![vec![], vec!["Title"], vec!["Title", "Sub"]]);
    }

    #[test]
    fn sections_tile_the_body() {
        let text = "intro\n\n# A\n\npara\n\n- one\n- two\n\n## B\n";
        let o = outline(text);
        let ranges: Vec<_> = o.sections.iter().map(|s| s.range.clone()).collect();
        assert_eq!(ranges.first().map(|r| r.start), Some(0));
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(ranges.last().map(|r| r.end), Some(text.len()));
        // The list contributes one block per item.
        assert_eq!(o.sections[1].blocks.len(), 3);
        assert!(o.sections[2].blocks.is_empty());
    }

    #[test]
    fn a_body_without_a_letter_or_digit_is_no_block() {
        let o = outline("# Day\n\n## Tasks\n- [ ] \n\n## Meetings\n- \n\n---\n\n## Notes\n- 3 eggs\n");
        assert!(o.sections[2].blocks.is_empty(), "an empty task");
        assert!(o.sections[3].blocks.is_empty(), "an empty item and a rule");
        assert_eq!(o.sections[4].blocks.len(), 1, "a digit is content");
        let o = outline("# 日记\n\n今天\n");
        assert_eq!(o.sections[1].blocks.len(), 1, "so is a letter of any script");
    }

    #[test]
    fn link_definitions_alone_still_form_a_block() {
        let o = outline("# A\n\n[x]: http://example.com\n");
        assert_eq!(o.sections[1].blocks.len(), 1);
    }

    #[test]
    fn a_body_of_scripts_and_styles_alone_is_no_block() {
        let page = "<script setup>\nimport Demo from './Demo.vue'\nconst msg = ref('')\n</script>\n\n\
                    # 表单 {#forms}\n\n正文\n\n## Demo\n\n<STYLE scoped>\n.demo { width: 10px }\n</STYLE>\n";
        let o = outline(page);
        assert!(o.sections[0].blocks.is_empty(), "the page's script before its title");
        assert_eq!(o.sections[1].blocks.len(), 1);
        assert!(o.sections[2].blocks.is_empty(), "a style under a heading");
        // A script among words stays with them, and so does any other HTML.
        let o = outline("# A\n\nText.\n\n<script>\nrun()\n</script>\n");
        assert_eq!(o.sections[1].blocks.len(), 2);
        for shown in [
            "<pre>\nfree text\n</pre>\n",
            "<div class=\"demo\">\n  <p>hi</p>\n</div>\n",
            "<scripts>\nx\n</scripts>\n",
        ] {
            let o = outline(&format!("# A\n\n{shown}"));
            assert_eq!(o.sections[1].blocks.len(), 1, "{shown}");
        }
        // In a code block or inline, a script is text.
        let o = outline("# A\n\n```vue\n<script setup>\nimport x\n</script>\n```\n");
        assert_eq!(o.sections[1].blocks.len(), 1);
        let o = outline("# A\n\nRun `<script>` tags.\n");
        assert_eq!(o.sections[1].blocks.len(), 1);
    }

    #[test]
    fn an_mdx_pages_imports_and_exports_are_no_block() {
        let page = "import Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\n\n\
                    export const meta = { draft: true }\n\n# Install\n\nImport the key first.\n\n\
                    <Tabs>\n<TabItem value=\"npm\">\n\nRun `npm i`.\n\n</TabItem>\n</Tabs>\n\n## Notes\n\nexport PATH=$HOME/bin\n";
        let o = parse(page, 0..page.len(), true);
        assert!(o.sections[0].blocks.is_empty(), "the statements before the title");
        assert_eq!(o.sections[1].blocks.len(), 4, "a sentence, the tabs and their markdown");
        assert!(o.sections[2].blocks.is_empty(), "an export statement is one in MDX");
        // In markdown every paragraph is text.
        let o = parse(page, 0..page.len(), false);
        assert_eq!(o.sections[0].blocks.len(), 2);
        assert_eq!(o.sections[2].blocks.len(), 1);
        // So is a word that only starts like one, and an import in a list or a quote.
        for text in ["important: read this\n", "exports rose\n", "- import x from 'y'\n", "> export A\n"] {
            assert_eq!(parse(text, 0..text.len(), true).sections[0].blocks.len(), 1, "{text}");
        }
    }
}
