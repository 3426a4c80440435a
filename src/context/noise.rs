//! How the text that is searched differs from the text that is stored: blobs that carry no
//! words a reader would search for are left out, and lines of Chinese or Japanese wrapped
//! in the middle of a word are joined again.
//!
//! A data-URI image pasted into a note and a long base64 run (a certificate or key in a
//! config example) are elided from what is embedded and given to BM25; the stored text keeps
//! them, so line ranges, previews and hover stay exact. HTML comments and tags stay
//! searchable: docs keep real content in them (the Node.js docs' version history in
//! comments, Traefik's option names in `<a id="opt-…">` anchors), and eliding them lowered
//! the dev-set figures.
//!
//! Chinese and Japanese put no spaces between words, so an editor that fills a paragraph
//! to a width breaks its lines anywhere, often inside a word (`所\n有权`). A reader's eye
//! (and a browser, by CSS's rule for segment breaks) joins such a line to the next without a
//! space; so does the searched text, or the word would be lost to both arms: its pair of
//! letters to BM25, and its token to the embedding model, whose tokenizer reads the break
//! as a space.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// Blobs: a data URI's payload, or any long run of base64 characters.
static BLOBS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"data:[\w/+.-]*(?:;[\w=.-]+)*;base64,[A-Za-z0-9+/=]*|[A-Za-z0-9+/]{100,}={0,2}")
        .expect("valid pattern")
});

/// `text` without its noise, each elided stretch replaced by one space (a line break when it
/// spanned lines, so that the words around it stay apart), and with lines of Chinese or
/// Japanese broken inside a paragraph joined again (see the module's notes). Borrowed when
/// nothing changes.
pub fn searchable(text: &str) -> Cow<'_, str> {
    // A cheap check first: most chunks have no long run.
    let text = if !text.contains("base64,") && !has_long_run(text) {
        Cow::Borrowed(text)
    } else {
        replace(Cow::Borrowed(text), &BLOBS)
    };
    if text.is_ascii() {
        return text;
    }
    match join_wide_lines(&text) {
        Some(joined) => Cow::Owned(joined),
        None => text,
    }
}

/// `text` with every line break that falls between two letters written without spaces
/// (Han, kana, and their full-width punctuation) removed with the blanks around it, or
/// `None` when there is none. Korean is left alone: it spaces its words, so a break there
/// stands for a space. A break after a heading or before a line that does not open with
/// such a letter (a list item, a quote, a table row, code) is a boundary of its own.
fn join_wide_lines(text: &str) -> Option<String> {
    let mut joined: Option<String> = None;
    let mut rest = text;
    let mut line_start = 0;
    while let Some(at) = rest.find('\n') {
        let line = &rest[..at];
        let next = &rest[at + 1..];
        let before = line.trim_end_matches([' ', '\t', '\r']);
        let after = next.trim_start_matches([' ', '\t']);
        let joins = before.chars().next_back().is_some_and(is_wide)
            && after.chars().next().is_some_and(is_wide)
            && !before.trim_start().starts_with('#');
        if joins {
            let out = joined.get_or_insert_with(|| String::with_capacity(text.len()));
            if out.is_empty() {
                out.push_str(&text[..line_start]);
            }
            out.push_str(before);
        } else if let Some(out) = joined.as_mut() {
            out.push_str(line);
            out.push('\n');
        }
        // The blanks that open the next line go with the break when it is joined.
        let skipped = if joins { next.len() - after.len() } else { 0 };
        line_start += at + 1 + skipped;
        rest = &next[skipped..];
    }
    let mut out = joined?;
    out.push_str(rest);
    Some(out)
}

/// Han ideographs, kana, and the CJK and full-width punctuation between them (Hangul not).
fn is_wide(c: char) -> bool {
    matches!(c,
        '\u{3000}'..='\u{30FF}'   // CJK punctuation, hiragana, katakana
        | '\u{3400}'..='\u{4DBF}' // Han extension A
        | '\u{4E00}'..='\u{9FFF}' // Han
        | '\u{F900}'..='\u{FAFF}' // Han compatibility
        | '\u{FF01}'..='\u{FF60}' // full-width forms
        | '\u{20000}'..='\u{3FFFF}') // Han extensions B and later
        && !c.is_whitespace()
}

fn replace<'a>(text: Cow<'a, str>, pattern: &Regex) -> Cow<'a, str> {
    if !pattern.is_match(&text) {
        return text;
    }
    let replaced =
        pattern.replace_all(&text, |m: &regex::Captures<'_>| if m[0].contains('\n') { "\n" } else { " " });
    Cow::Owned(replaced.into_owned())
}

/// Whether `text` holds a run of at least 100 base64 characters.
fn has_long_run(text: &str) -> bool {
    let mut run = 0;
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b == b'+' || b == b'/' {
            run += 1;
            if run >= 100 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_and_code_are_left_alone() {
        for text in [
            "Snapshots are kept for thirty days.",
            "let v: Vec<String> = map.get::<T>(k); if a < b && c > d {}",
            "See <https://example.com/docs> for more, or <div align=\"center\">this</div>.",
            "sha256: 1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        ] {
            assert!(matches!(searchable(text), Cow::Borrowed(_)) || searchable(text) == text, "{text}");
        }
    }

    #[test]
    fn data_uris_and_base64_runs_are_elided() {
        let payload = "iVBORw0KGgoAAAANSUhEUgAA".repeat(20_000);
        let text = format!("A chart of latency:\n![chart](data:image/png;base64,{payload})\nAfter.");
        let kept = searchable(&text);
        assert_eq!(kept, "A chart of latency:\n![chart]( )\nAfter.");
        let run = "QUJD".repeat(40);
        assert_eq!(searchable(&format!("key {run}== end")), "key   end");
    }

    #[test]
    fn comments_tags_and_scripts_stay() {
        let text = "<!-- YAML\nadded: v0.1.90\n-->\n<a id=\"fs_read\"></a>\n<div align=\"center\">Fast</div>\nRun all `<script>` tags, then </script>.";
        assert_eq!(searchable(text), text);
    }

    #[test]
    fn chinese_and_japanese_lines_broken_inside_a_word_are_joined() {
        assert_eq!(searchable("数据的所\n有权归属于"), "数据的所有权归属于");
        // The blanks around the break go with it; a full-width stop joins too.
        assert_eq!(searchable("第一句。  \n  第二句"), "第一句。第二句");
        assert_eq!(searchable("ファイルシス\nテムの概要"), "ファイルシステムの概要");
        let text = "开头\n中\n间\n结尾";
        assert_eq!(searchable(text), "开头中间结尾");
    }

    #[test]
    fn breaks_that_are_boundaries_stay() {
        for text in [
            // Korean spaces its words: its break is a space.
            "한국어\n문장",
            // Latin text on either side, a heading, a list item, a blank line.
            "使用 Rust\n编写",
            "编写\nRust 程序",
            "## 标题\n正文",
            "第一项\n- 第二项",
            "第一段\n\n第二段",
            "Backups are kept\nfor thirty days.",
        ] {
            assert_eq!(searchable(text), text, "{text}");
        }
        assert!(matches!(searchable("所有权\n- 借用"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_long_run_of_other_characters_is_kept() {
        let path = "a-b_c.d".repeat(40);
        assert_eq!(searchable(&path), path);
    }
}
