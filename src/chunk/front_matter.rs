//! Front matter at the start of a markdown file: YAML between `---` lines, TOML between
//! `+++` lines, and the `title` it may give the document.
//!
//! There is no YAML or TOML parser here on purpose: the chunker only needs to know where the
//! front matter ends and the value of one top-level key, and a line-level reading of that
//! key never fails on the malformed front matter that real notes are full of.

/// Front matter found at the start of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    /// Byte offset at which the document body starts (just after the closing fence line).
    pub body_start: usize,
    /// The `title` value, when present and not empty.
    pub title: Option<String>,
}

/// What the start of a file says about front matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detection {
    /// No front matter: the whole file is body.
    Absent,
    /// An opening fence with no closing fence: the file is read as body, with a warning.
    Unclosed,
    Found(FrontMatter),
}

#[derive(Clone, Copy)]
enum Syntax {
    Yaml,
    Toml,
}

/// Looks for front matter at the very start of `text` (after an optional byte order mark).
pub fn detect(text: &str) -> Detection {
    let start = if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
    let mut lines = Lines { text, pos: start };
    let Some((_, first)) = lines.next() else {
        return Detection::Absent;
    };
    let syntax = match fence(first) {
        "---" => Syntax::Yaml,
        "+++" => Syntax::Toml,
        _ => return Detection::Absent,
    };
    let content_start = lines.pos;
    // Like pulldown-cmark, front matter never starts with a blank line: `---` followed by a
    // blank line is a thematic break, and reading it as an opener would hide all the text
    // up to the next `---` from the index.
    let first_content = text[content_start..].lines().next().unwrap_or("");
    if first_content.trim().is_empty() {
        return Detection::Absent;
    }
    for (line_start, line) in lines.by_ref() {
        let closes = match syntax {
            Syntax::Yaml => matches!(fence(line), "---" | "..."),
            Syntax::Toml => fence(line) == "+++",
        };
        if closes {
            let content = &text[content_start..line_start];
            let title = match syntax {
                Syntax::Yaml => yaml_title(content),
                Syntax::Toml => toml_title(content),
            }
            .filter(|t| !t.is_empty());
            return Detection::Found(FrontMatter { body_start: lines.pos, title });
        }
    }
    Detection::Unclosed
}

/// A line with its line break and trailing blanks removed, for comparing with a fence.
fn fence(line: &str) -> &str {
    line.trim_end_matches(['\n', '\r', ' ', '\t'])
}

/// Lines of `text` from `pos` on, each with its start offset and its line break.
struct Lines<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let rest = &self.text[self.pos..];
        if rest.is_empty() {
            return None;
        }
        let len = rest.find('\n').map_or(rest.len(), |i| i + 1);
        let start = self.pos;
        self.pos += len;
        Some((start, &rest[..len]))
    }
}

/// The top-level `title:` of YAML front matter: quoted, plain, or a block scalar.
fn yaml_title(content: &str) -> Option<String> {
    let mut lines = content.lines();
    while let Some(line) = lines.next() {
        let Some(value) = line.strip_prefix("title:") else {
            continue;
        };
        let value = value.trim();
        if let Some(quoted) = value.strip_prefix('"') {
            return Some(collapse(&unescape_double_quoted(quoted)));
        }
        if let Some(quoted) = value.strip_prefix('\'') {
            return Some(collapse(&unescape_single_quoted(quoted)));
        }
        let value = strip_yaml_comment(value);
        // A block scalar (`|`, `>-`, …) or an empty value continues on the indented lines
        // that follow; a title is one line, so they are joined with spaces.
        let is_block = value.is_empty() || value.starts_with('|') || value.starts_with('>');
        if !is_block {
            return Some(collapse(value));
        }
        let continuation: Vec<&str> =
            lines.take_while(|l| l.starts_with([' ', '\t']) || l.trim().is_empty()).map(str::trim).collect();
        return Some(collapse(&continuation.join(" ")));
    }
    None
}

/// A plain YAML scalar ends where a comment (` #`) starts.
fn strip_yaml_comment(value: &str) -> &str {
    match value.find(" #").or_else(|| value.find("\t#")) {
        Some(i) => value[..i].trim_end(),
        None if value.starts_with('#') => "",
        None => value,
    }
}

/// The content of a double-quoted YAML or TOML string whose opening quote is already
/// stripped, up to its closing quote (or the end of the line when it has none).
fn unescape_double_quoted(rest: &str) -> String {
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') | Some('t') => out.push(' '),
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    out
}

/// The content of a single-quoted YAML string, where `''` stands for one quote.
fn unescape_single_quoted(rest: &str) -> String {
    let mut out = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            break;
        }
        out.push(c);
    }
    out
}

/// The top-level `title = "…"` of TOML front matter (before any `[table]` header).
fn toml_title(content: &str) -> Option<String> {
    for line in content.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            // Keys after a table header belong to that table, not to the document.
            return None;
        }
        let Some(rest) = line.strip_prefix("title") else {
            continue;
        };
        let Some(value) = rest.trim_start().strip_prefix('=') else {
            continue;
        };
        let value = value.trim();
        if value.starts_with("\"\"\"") || value.starts_with("'''") {
            // Multi-line strings are rare for a title; reading only their first line is
            // enough and keeps this a line-level reader.
            let inner = value[3..].split(&value[..3]).next().unwrap_or("");
            return Some(collapse(inner));
        }
        if let Some(quoted) = value.strip_prefix('"') {
            return Some(collapse(&unescape_double_quoted(quoted)));
        }
        if let Some(literal) = value.strip_prefix('\'') {
            return Some(collapse(literal.split('\'').next().unwrap_or("")));
        }
        return None;
    }
    None
}

/// Trims and collapses runs of whitespace into single spaces.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> FrontMatter {
        match detect(text) {
            Detection::Found(front_matter) => front_matter,
            other => panic!("expected front matter, got {other:?}"),
        }
    }

    #[test]
    fn yaml_titles_lose_their_quotes() {
        assert_eq!(found("---\ntitle: \"A \\\"b\\\"\"\n---\n").title.as_deref(), Some("A \"b\""));
        assert_eq!(found("---\ntitle: 'it''s'\n---\n").title.as_deref(), Some("it's"));
        assert_eq!(found("---\ntitle: Plain  text # note\n---\n").title.as_deref(), Some("Plain text"));
    }

    #[test]
    fn yaml_block_scalar_titles_are_joined() {
        let fm = found("---\ntitle: >-\n  Folded\n  title\nother: x\n---\nbody");
        assert_eq!(fm.title.as_deref(), Some("Folded title"));
    }

    #[test]
    fn nested_title_keys_are_not_the_document_title() {
        let fm = found("---\nseo:\n  title: Nested\n---\n");
        assert_eq!(fm.title, None);
    }

    #[test]
    fn toml_title_before_any_table() {
        assert_eq!(found("+++\ntitle = \"Hugo page\"\n+++\n").title.as_deref(), Some("Hugo page"));
        assert_eq!(found("+++\n[params]\ntitle = \"x\"\n+++\n").title, None);
        assert_eq!(found("+++\ntitle = 'lit'\n+++\n").title.as_deref(), Some("lit"));
    }

    #[test]
    fn body_starts_after_the_closing_fence() {
        let text = "---\r\ntitle: x\r\n---\r\n# Body";
        assert_eq!(&text[found(text).body_start..], "# Body");
        let text = "\u{feff}---\ntitle: y\n...\nrest";
        assert_eq!(&text[found(text).body_start..], "rest");
        assert_eq!(found("---\n---").body_start, 7);
    }

    #[test]
    fn unclosed_and_absent_front_matter() {
        assert_eq!(detect("---\ntitle: x\n"), Detection::Unclosed);
        assert_eq!(detect("--- \nno\n"), Detection::Unclosed);
        assert_eq!(detect("# Title\n---\n"), Detection::Absent);
        assert_eq!(detect(""), Detection::Absent);
        assert_eq!(detect("----\n----\n"), Detection::Absent);
        assert_eq!(detect("---\n\ntext\n\n---\nmore"), Detection::Absent);
        assert_eq!(detect("---"), Detection::Absent);
    }
}
