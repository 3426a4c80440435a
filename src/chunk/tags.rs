//! A note's inline tags, as notes apps read them: `#project/alpha` anywhere in its text
//! (Obsidian, Foam; in emphasis too), Logseq's `#[[several words]]` and its
//! `tags:: a, [[b]]` property line. A note's tags are those of
//! its front matter and these, as Obsidian's tag pane lists them.
//!
//! The markdown parser hands over the text it found (`scan`), so that code spans, fenced
//! code, HTML and link destinations are never read for tags; what is left to tell apart
//! here is a tag from a heading's `#`, a URL's fragment (`https://x/#anchor`), an issue
//! number (`#123`) and an attribute list (`{: #id }`).

use std::collections::HashSet;
use std::ops::Range;

use super::Metadata;

/// The front matter field whose values inline tags are compared with.
const TAGS: &str = "tags";
/// The field that holds a note's inline tags: `--where tags=…` matches them as it matches
/// the front matter's `tags`, but the header leaves them out, so that a `#include` or
/// `#define` in a manual page does not move the vectors of every chunk of the page. No front
/// matter can name it (`#` opens a comment in YAML and TOML).
pub const INLINE_TAGS: &str = "#tags";
/// Logseq's property line of a block's or a page's tags.
const LOGSEQ_TAGS: &str = "tags::";
/// The most tags one note holds, and the most characters of one tag (a longer run after a
/// `#` is not a tag).
const MAX_TAGS: usize = 64;
const MAX_TAG_CHARS: usize = 256;

/// The marks of emphasis, strikethrough and highlights, which may come between a word's
/// start and its tag.
const EMPHASIS: [char; 4] = ['*', '_', '~', '='];

/// Whether `c` may be part of a tag's name.
fn in_tag(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '/')
}

/// Adds the tags in `source[range]`, a stretch of a markdown document's text outside code
/// and HTML, to `tags`.
pub(crate) fn scan(source: &str, range: Range<usize>, tags: &mut Tags) {
    let stretch = &source[range.clone()];
    if starts_with_ignore_case(stretch, LOGSEQ_TAGS) && opens_line(source, range.start) {
        // The line from its property's name on: the parser hands over `[[b]]` apart.
        let line = source[range.start..].split('\n').next().unwrap_or_default();
        for value in line[LOGSEQ_TAGS.len()..].split(',') {
            let value = value.trim().trim_start_matches('#').trim_start_matches("[[").trim_end_matches("]]");
            push(tags, value.trim());
        }
        return;
    }
    // A kramdown attribute list (`{: #security-note }`) names an element, not a topic.
    if stretch.starts_with("{:") && opens_line(source, range.start) {
        return;
    }
    for (at, _) in stretch.match_indices('#') {
        let at = range.start + at;
        // Emphasis marks (`**#urgent**`, `==#idea==`) are markup: the word starts after them.
        let before = source[..at].trim_end_matches(EMPHASIS);
        if before.chars().next_back().is_some_and(|c| !c.is_whitespace()) {
            continue;
        }
        let name = &source[at + 1..];
        // Logseq's tag of several words: `#[[Home Office]]`.
        if let Some(rest) = name.strip_prefix("[[") {
            let line = rest.split('\n').next().unwrap_or_default();
            if let Some(end) = line.find("]]") {
                push(tags, line[..end].trim());
            }
            continue;
        }
        let end = name.find(|c: char| !in_tag(c)).unwrap_or(name.len());
        // The marks that opened the word close it: `_#later_` is `later`.
        let marks = &source[before.len()..at];
        let name = name[..end].trim_end_matches(|c| marks.contains(c)).trim_end_matches('/');
        // A number (`#123`, an issue) is no tag; Obsidian asks for one character more.
        if name.chars().all(char::is_numeric) || name.starts_with('/') {
            continue;
        }
        push(tags, name);
    }
}

/// Whether only blanks, or a list item's `-`, come before `at` on its line.
fn opens_line(source: &str, at: usize) -> bool {
    source[..at].chars().rev().take_while(|&c| c != '\n').all(|c| c == ' ' || c == '\t' || c == '-')
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len()).is_some_and(|start| start.eq_ignore_ascii_case(prefix))
}

/// The tags found in a note, in the order first written, each once whatever its case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tags {
    names: Vec<String>,
    /// The names lowercased: a note may repeat a tag thousands of times.
    seen: HashSet<String>,
}

/// Keeps `tag` unless it is empty, too long, already held or one too many.
fn push(tags: &mut Tags, tag: &str) {
    if tag.is_empty() || tags.names.len() >= MAX_TAGS || tag.chars().nth(MAX_TAG_CHARS).is_some() {
        return;
    }
    if tags.seen.insert(tag.to_lowercase()) {
        tags.names.push(tag.to_string());
    }
}

/// Whether two tags are one: case is ignored, and so is a leading `#`.
fn same_tag(a: &str, b: &str) -> bool {
    a.trim_start_matches('#').to_lowercase() == b.trim_start_matches('#').to_lowercase()
}

/// Keeps a note's inline `tags` that its front matter's `tags` field (named in any case)
/// does not hold, as the [`INLINE_TAGS`] field.
pub(crate) fn add_to(metadata: &mut Metadata, tags: Tags) {
    let front: Vec<String> = metadata
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(TAGS))
        .flat_map(|(_, v)| v.iter().cloned())
        .collect();
    let inline: Vec<String> =
        tags.names.into_iter().filter(|tag| !front.iter().any(|held| same_tag(held, tag))).collect();
    if !inline.is_empty() {
        metadata.insert(INLINE_TAGS.to_string(), inline);
    }
}

#[cfg(test)]
mod tests {
    use super::super::markdown;

    fn tags(text: &str) -> Vec<String> {
        markdown::parse(text, 0..text.len(), false).tags.names
    }

    fn found(names: &[&str]) -> super::Tags {
        let mut tags = super::Tags::default();
        for name in names {
            super::push(&mut tags, name);
        }
        tags
    }

    #[test]
    fn a_hash_at_a_word_start_before_a_name_is_a_tag() {
        assert_eq!(
            tags("Slept well #journal/mood/good and #Project_X-2.\n\n- [ ] call #Anna\n| #in-table |\n"),
            ["journal/mood/good", "Project_X-2", "Anna", "in-table"]
        );
        assert_eq!(tags("#todo at the start\n\n# Heading #in-heading\n"), ["todo", "in-heading"]);
        assert_eq!(tags("#日记 and #Straße/ü"), ["日记", "Straße/ü"]);
        assert_eq!(tags("#a #A #a/ #a/b"), ["a", "a/b"]);
    }

    #[test]
    fn a_tag_in_emphasis_or_of_several_words_is_a_tag() {
        assert_eq!(
            tags("Due **#urgent** and _#later_, ~~#dropped~~, ==#idea== and #[[Home Office]].\n"),
            ["urgent", "later", "dropped", "idea", "Home Office"]
        );
        assert_eq!(tags("a**#not** b_#not x=#not [[#Heading]] #[[unclosed\n]]"), Vec::<String>::new());
    }

    #[test]
    fn headings_numbers_urls_code_and_anchors_are_not_tags() {
        let text = "# Heading\n\n## Sub\n\nSee #123 and #1984 and #١٢٣ and https://x.org/#anchor and C#.\n\n\
                    `#in-code` and [link](#anchor) and [[Note#Heading]] and [[#Heading]] and \\#escaped.\n\n\
                    ```\n#fenced\n```\n\n    #indented-code\n\n<div id=\"#html\">#html-block</div>\n\n\
                    [ref]: #reference\n\n{: #attribute-list }\n\n&#35;entity and &#x27;s and #/slash and #\n";
        assert_eq!(tags(text), Vec::<String>::new());
    }

    #[test]
    fn a_logseq_tags_property_names_tags() {
        assert_eq!(
            tags("tags:: [[Project Alpha]], #reading, book\n- a block\n"),
            ["Project Alpha", "reading", "book"]
        );
        assert_eq!(tags("- A block\n  tags:: chores, #[[Home Office]]\n"), ["chores", "Home Office"]);
        assert_eq!(tags("The tags:: of a sentence"), Vec::<String>::new());
    }

    #[test]
    fn inline_tags_are_kept_beside_the_front_matter_tags() {
        let mut metadata = super::Metadata::new();
        super::add_to(&mut metadata, found(&["a"]));
        assert_eq!(metadata[super::INLINE_TAGS], ["a"]);
        let mut metadata = super::Metadata::new();
        metadata.insert("Tags".into(), vec!["#ops".into(), "home".into()]);
        super::add_to(&mut metadata, found(&["OPS", "garden"]));
        assert_eq!(metadata["Tags"], ["#ops", "home"]);
        assert_eq!(metadata[super::INLINE_TAGS], ["garden"]);
        let mut metadata = super::Metadata::new();
        super::add_to(&mut metadata, found(&[]));
        assert!(metadata.is_empty());
    }
}
