//! What is left out of the text that is searched: blobs and markup that carry no words a
//! reader would search for. A data-URI image pasted into a note, a long base64 run, a
//! `<script>` or `<style>` block and layout tags (`<div align="center">`, `<a id="x"></a>`,
//! `<br/>`) are elided from what is embedded and given to BM25; the stored text keeps them,
//! so line ranges, previews and hover stay exact. HTML comments stay searchable: docs keep
//! real content in them (the Node.js docs, each API's version history).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// Blocks whose whole content is noise: scripts and styles.
static BLOCKS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)<script\b[^>]*>.*?</script\s*>|<style\b[^>]*>.*?</style\s*>").expect("valid pattern")
});

/// Blobs: a data URI's payload, or any long run of base64 characters.
static BLOBS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"data:[\w/+.-]*(?:;[\w=.-]+)*;base64,[A-Za-z0-9+/=]*|[A-Za-z0-9+/]{100,}={0,2}")
        .expect("valid pattern")
});

/// HTML tags used for layout; the text between them stays.
static TAGS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)</?(?:a|abbr|article|aside|b|blockquote|br|caption|center|col|colgroup|dd|details|div|dl|dt|em|figcaption|figure|font|footer|h[1-6]|header|hr|i|iframe|img|kbd|li|main|nav|ol|p|picture|section|small|source|span|strong|sub|summary|sup|table|tbody|td|tfoot|th|thead|tr|u|ul|video)\b[^<>]{0,2000}?/?>",
    )
    .expect("valid pattern")
});

/// `text` without its noise, each elided stretch replaced by one space (a line break when it
/// spanned lines, so that the words around it stay apart). Borrowed when nothing is elided.
pub fn searchable(text: &str) -> Cow<'_, str> {
    // Cheap checks first: most chunks have no markup and no long runs.
    let may_have_markup = text.contains('<');
    let may_have_blob = text.contains("base64,") || has_long_run(text);
    if !may_have_markup && !may_have_blob {
        return Cow::Borrowed(text);
    }
    let mut out = Cow::Borrowed(text);
    if may_have_markup {
        out = replace(out, &BLOCKS);
    }
    if may_have_blob {
        out = replace(out, &BLOBS);
    }
    if may_have_markup {
        out = replace(out, &TAGS);
    }
    out
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
            "See <https://example.com/docs> for more.",
            "sha256: 1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        ] {
            assert!(matches!(searchable(text), Cow::Borrowed(_)) || searchable(text) == text, "{text}");
        }
        // An inline `<div>` in backticks is markup too, and goes; the words stay.
        assert_eq!(searchable("a <div> b"), "a   b");
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
    fn scripts_and_layout_tags_are_elided_but_their_text_and_comments_stay() {
        let text = "<!-- YAML\nadded: v0.1.90\n-->\n<a id=\"fs_read\"></a>\n<div align=\"center\"><img src=\"x.png\" alt=\"Logo\"/><br>Fast <b>and</b> small</div>\n<script>track();</script>";
        let kept = searchable(text);
        assert!(!kept.contains("fs_read") && !kept.contains("track") && !kept.contains("align"), "{kept}");
        assert!(kept.starts_with("<!-- YAML\nadded: v0.1.90\n-->"), "{kept}");
        assert!(kept.contains("Fast") && kept.contains("and") && kept.contains("small"), "{kept}");
    }

    #[test]
    fn unclosed_markup_is_kept() {
        // The patterns are automata (no backtracking), and a tag's attributes are bounded.
        let text = "<div ".repeat(100_000) + &"<!-- ".repeat(10_000);
        assert_eq!(searchable(&text), text);
    }
}
