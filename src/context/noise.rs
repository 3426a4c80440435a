//! What is left out of the text that is searched: blobs that carry no words a reader would
//! search for. A data-URI image pasted into a note and a long base64 run (a certificate or
//! key in a config example) are elided from what is embedded and given to BM25; the stored
//! text keeps them, so line ranges, previews and hover stay exact. HTML comments and tags
//! stay searchable: docs keep real content in them (the Node.js docs' version history in
//! comments, Traefik's option names in `<a id="opt-…">` anchors), and eliding them lowered
//! the dev-set figures.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// Blobs: a data URI's payload, or any long run of base64 characters.
static BLOBS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"data:[\w/+.-]*(?:;[\w=.-]+)*;base64,[A-Za-z0-9+/=]*|[A-Za-z0-9+/]{100,}={0,2}")
        .expect("valid pattern")
});

/// `text` without its noise, each elided stretch replaced by one space (a line break when it
/// spanned lines, so that the words around it stay apart). Borrowed when nothing is elided.
pub fn searchable(text: &str) -> Cow<'_, str> {
    // A cheap check first: most chunks have no long run.
    if !text.contains("base64,") && !has_long_run(text) {
        return Cow::Borrowed(text);
    }
    replace(Cow::Borrowed(text), &BLOBS)
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
    fn a_long_run_of_other_characters_is_kept() {
        let path = "a-b_c.d".repeat(40);
        assert_eq!(searchable(&path), path);
    }
}
