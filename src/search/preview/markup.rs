//! A preview line as a reader of the note sees it: the syntax that Obsidian, Logseq,
//! Foam, GitHub and mdBook render away (wikilinks, highlights, comment markers, callout
//! markers, block ids, inline HTML tags, `{{#include …}}` lines) is taken out of what a
//! preview shows. Only the shown line changes: what is indexed and searched stays the file's
//! own text.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::Fenced;
use crate::chunk;

/// `[[target]]`, `[[target|alias]]`, and the same with `!` (an embed).
static WIKILINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"!?\[\[([^\[\]|]*)(?:\|([^\[\]]*))?\]\]").expect("valid pattern"));

/// `==highlighted==`, the marks against the words they wrap, as Obsidian reads them.
static HIGHLIGHT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"==([^\s=](?:[^=]*[^\s=])?)==").expect("valid pattern"));

/// The opening line of a callout (`> [!note] Title`, `> [!TIP]`, `> [!faq]- Folded`).
static CALLOUT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^((?:>\s*)+)\[!([A-Za-z][\w-]*)\][+-]?\s*(.*)$").expect("valid pattern"));

/// Inline HTML that a renderer turns into layout: the tags of the elements notes and books
/// use around words, in lower case as they write them, and comments on one line. Angle
/// brackets around anything else (`Vec<T>`, `Foo<S>`, `<https://…>`, `a < b`) are left alone.
static HTML: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"<!--.*?-->|</?(?:a|abbr|b|big|br|center|cite|del|details|div|em|figcaption|figure|font|hr|i|img|ins|kbd|mark|p|picture|s|small|source|span|strong|sub|summary|sup|u|video)(?:\s[^<>]*)?/?>",
    )
    .expect("valid pattern")
});

/// A block id at the end of a line (`Tomatoes ^xY7zK1mN`), which Obsidian hides.
static BLOCK_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\s\^[A-Za-z0-9-]+$").expect("valid pattern"));

/// A line that is only an mdBook directive (`{{#include …}}`, `{{#rustdoc_include …}}`):
/// the book shows the file it names, not the line.
static DIRECTIVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\{\{#\w+[^{}]*\}\}$").expect("valid pattern"));

/// The languages of a fenced block that is a query run by the notes app, not text: a
/// Dataview query (`dataview`, `dataviewjs`) or an Obsidian search embed (`query`).
const QUERY_LANGUAGES: [&str; 3] = ["dataview", "dataviewjs", "query"];

/// Which of `lines` a reader of the rendered note never sees as its text: the lines wholly
/// inside an Obsidian comment (`%%` on one line or over many, its marks included), the
/// lines of a query block, fences included, and those of a page's `<script>` or `<style>`
/// block, its tags included; in an MDX page (`mdx`), also its `import` and `export`
/// statements and its comments (`{/* … */}`) on lines of their own, over one line or many.
/// `fenced` tells the fences of fenced blocks and the lines inside them, where `%%` and tags
/// are code; a comment hides a fence like anything else.
pub(super) fn aside_lines(lines: &[&str], fenced: &Fenced, mdx: bool) -> Vec<bool> {
    let code = &fenced.code;
    let mut aside = vec![false; lines.len()];
    let mut in_comment = false;
    let mut n = 0;
    while n < lines.len() {
        let line = lines[n].trim();
        let paragraph_start = n == 0 || lines[n - 1].trim().is_empty();
        if mdx && !in_comment && !code[n] && !fenced.fence[n] && paragraph_start && chunk::is_esm(lines[n]) {
            // The statements run to the paragraph's end.
            let end = (n..lines.len()).find(|&m| lines[m].trim().is_empty()).unwrap_or(lines.len());
            aside[n..end].fill(true);
            n = end;
            continue;
        }
        if mdx && !in_comment && !code[n] && line.starts_with("{/*") {
            // The comment runs to the line that closes it. Its lines are set aside, and the
            // closing line too unless words follow the comment there, as they may on its
            // opening line.
            let Some(close) = (n..lines.len()).find(|&m| lines[m].contains("*/}")) else {
                aside[n..].fill(true);
                break;
            };
            aside[n..close].fill(true);
            aside[close] = lines[close].trim_end().ends_with("*/}");
            n = close + 1;
            continue;
        }
        if !in_comment
            && !code[n]
            && !fenced.fence[n]
            && let Some(close) = chunk::script_or_style_closing_tag(lines[n])
        {
            // The block runs to the line that holds its closing tag, that line included.
            let end = (n..lines.len())
                .find(|&m| lines[m].to_ascii_lowercase().contains(close))
                .map_or(lines.len(), |m| m + 1);
            aside[n..end].fill(true);
            n = end;
            continue;
        }
        if !in_comment && fenced.fence[n] && is_query_fence(line) {
            // The block runs over the code lines below it, then its closing fence.
            let end = (n + 1..lines.len()).find(|&m| !code[m]).unwrap_or(lines.len());
            let end = if end < lines.len() && fenced.fence[end] { end + 1 } else { end };
            aside[n..end].fill(true);
            n = end;
            continue;
        }
        if in_comment || !code[n] {
            let (visible, still_in_comment) = outside_comments(line, in_comment);
            aside[n] = !visible && !line.is_empty();
            in_comment = still_in_comment;
        }
        n += 1;
    }
    aside
}

/// Whether anything of `line` shows outside `%%` comments (inline code does), and whether a
/// comment is still open at its end; `in_comment` says whether one was open at its start.
fn outside_comments(line: &str, mut in_comment: bool) -> (bool, bool) {
    let mut visible = false;
    let mut in_code = false;
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if !in_code && rest.starts_with("%%") {
            in_comment = !in_comment;
            rest = &rest[2..];
            continue;
        }
        if !in_comment {
            in_code ^= c == '`';
            visible |= !c.is_whitespace();
        }
        rest = &rest[c.len_utf8()..];
    }
    (visible, in_comment)
}

/// Whether a trimmed line opens a fenced block of a query language.
fn is_query_fence(line: &str) -> bool {
    let Some(info) = line.strip_prefix("```").or_else(|| line.strip_prefix("~~~")) else {
        return false;
    };
    let language = info.trim_start_matches(['`', '~']).split_whitespace().next().unwrap_or("");
    QUERY_LANGUAGES.iter().any(|q| language.eq_ignore_ascii_case(q))
}

/// `line` (trimmed) as the note reads once rendered; empty when nothing of it shows.
/// Borrowed when nothing changes. Inline code (`` `…` ``) is shown as written.
pub fn readable(line: &str) -> Cow<'_, str> {
    let line = line.trim();
    if !might_have_markup(line) {
        return Cow::Borrowed(line);
    }
    if DIRECTIVE.is_match(line) {
        return Cow::Borrowed("");
    }
    let line = match CALLOUT.captures(line) {
        Some(c) => {
            let title = if c[3].trim().is_empty() { capitalised(&c[2]) } else { c[3].trim().to_string() };
            Cow::Owned(format!("{} {title}", c[1].trim_end()))
        }
        None => Cow::Borrowed(line),
    };
    let mut out = String::with_capacity(line.len());
    // Odd pieces between backticks are inline code, kept as written.
    for (n, piece) in line.split('`').enumerate() {
        if n > 0 {
            out.push('`');
        }
        if n % 2 == 1 {
            out.push_str(piece);
        } else {
            out.push_str(&rendered(piece));
        }
    }
    let out = BLOCK_ID.replace(&out, "");
    Cow::Owned(out.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A quick look for any of the characters the markup starts with.
fn might_have_markup(line: &str) -> bool {
    line.contains("[[")
        || line.contains("==")
        || line.contains("%%")
        || line.contains("[!")
        || line.contains('<')
        || line.contains(" ^")
        || line.starts_with("{{#")
}

/// Text outside inline code with its markup rendered away.
fn rendered(text: &str) -> String {
    let text = WIKILINK.replace_all(text, |c: &Captures<'_>| match c.get(2) {
        Some(alias) if !alias.as_str().trim().is_empty() => alias.as_str().trim().to_string(),
        _ => link_target(&c[1]),
    });
    let text = HIGHLIGHT.replace_all(&text, "$1");
    let text = text.replace("%%", " ");
    HTML.replace_all(&text, " ").into_owned()
}

/// How Obsidian shows a link without an alias: the note's name, then the heading it points
/// to (`Borg backup > Prune`); a block reference (`#^id`) shows the name alone.
fn link_target(target: &str) -> String {
    let mut parts = target.split('#').map(str::trim).filter(|p| !p.is_empty() && !p.starts_with('^'));
    let Some(name) = parts.next() else { return String::new() };
    std::iter::once(name).chain(parts).collect::<Vec<_>>().join(" > ")
}

fn capitalised(word: &str) -> String {
    let lower = word.to_lowercase();
    let mut chars = lower.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wikilinks_read_as_their_alias_or_their_target() {
        assert_eq!(readable("Worked on [[Tax return 2025|my taxes]] today."), "Worked on my taxes today.");
        assert_eq!(readable("See [[Garden]] and ![[Diagram.png]]."), "See Garden and Diagram.png.");
        assert_eq!(readable("See [[Borg backup#Prune]]."), "See Borg backup > Prune.");
        assert_eq!(readable("See [[Borg backup#^a1b2]]."), "See Borg backup.");
    }

    #[test]
    fn highlights_comments_and_block_ids_lose_their_marks() {
        assert_eq!(readable("The case ==has six bays== now."), "The case has six bays now.");
        assert_eq!(readable("Plan. %%check again%%"), "Plan. check again");
        assert_eq!(readable("%%"), "");
        assert_eq!(readable("Tomatoes ^xY7zK1mN"), "Tomatoes");
        // Not highlights: comparisons in prose and in code.
        assert_eq!(readable("if a == b then"), "if a == b then");
        assert_eq!(readable("use `x==y==z` here"), "use `x==y==z` here");
    }

    #[test]
    fn callouts_show_their_title() {
        assert_eq!(readable("> [!note] Remember this"), "> Remember this");
        assert_eq!(readable("> [!TIP]"), "> Tip");
        assert_eq!(readable("> [!warning]- Power draw"), "> Power draw");
        assert_eq!(readable("> > [!quote]"), "> > Quote");
    }

    #[test]
    fn layout_tags_go_and_their_words_stay() {
        assert_eq!(
            readable("<span class=\"caption\">示例 12-4：读取文件内容</span>"),
            "示例 12-4：读取文件内容"
        );
        assert_eq!(
            readable("<figure><img src=\"a.png\"><figcaption>Figure 2: the pipeline</figcaption></figure>"),
            "Figure 2: the pipeline"
        );
        assert_eq!(readable("<a id=\"opt-x\"></a>"), "");
        assert_eq!(readable("Before <!-- hidden --> after"), "Before after");
        for kept in [
            "let v: Vec<String> = f();",
            "impl<S> Service for Stack<S> and Box<B>",
            "See <https://example.com>.",
            "a < b and c > d",
            "Use `<span>` tags",
        ] {
            assert_eq!(readable(kept), kept);
        }
    }

    fn aside(text: &str) -> Vec<usize> {
        let lines: Vec<&str> = text.lines().collect();
        aside_lines(&lines, &Fenced::of(&lines), false)
            .iter()
            .enumerate()
            .filter(|(_, a)| **a)
            .map(|(n, _)| n + 1)
            .collect()
    }

    #[test]
    fn comments_over_lines_and_query_blocks_are_aside() {
        let text = "Plan.\n%%\nTODO: compare\nwith the N2\n%%\nShown. %%hidden%%\n%%whole line%%\n\
                    Opens %%here\nhidden\nand closes%% there\n";
        assert_eq!(aside(text), [2, 3, 4, 5, 7, 9]);
        let text = "Text\n```dataview\nTABLE file.mtime\nFROM #finance\n```\nAfter\n~~~query\ntag:#x\n~~~\n\
                    ```rust\nlet a = \"%%\";\n```\nStill text\n```dataviewjs\ndv.list()\n";
        assert_eq!(aside(text), [2, 3, 4, 5, 7, 8, 9, 14, 15]);
        // `%%` in inline code is code; a comment hides the fences inside it.
        assert_eq!(aside("Use `%%` here\nand here\n"), Vec::<usize>::new());
        assert_eq!(aside("%%\n```\ndata\n```\n%%\nText\n"), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn mdbook_directive_lines_show_nothing() {
        assert_eq!(readable("{{#rustdoc_include ../listings/ch12/src/main.rs:here}}"), "");
        assert_eq!(readable("{{#include ../snippets/build.sh}}"), "");
        assert_eq!(readable("Text with {{#include x}} inside"), "Text with {{#include x}} inside");
    }
}
