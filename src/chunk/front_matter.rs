//! Front matter at the start of a markdown file: YAML between `---` lines, TOML between
//! `+++` lines, its top-level fields, and the `title` it may give the document.
//!
//! There is no YAML or TOML parser here on purpose: the chunker needs to know where the
//! front matter ends and the values of its top-level keys (scalars and lists of scalars, as
//! Obsidian, MkDocs, Hugo and Jekyll write them), and a line-level reading of those never
//! fails on the malformed front matter that real notes are full of. What it cannot read
//! (nested tables, a line that is not `key: value`) is left out, with a warning for a line
//! it does not understand.

use std::collections::BTreeMap;

/// Top-level front matter fields: each key as written, with its value (one item) or the
/// items of its list, as text. Nested maps are left out.
pub type Metadata = BTreeMap<String, Vec<String>>;

/// The fields that name a note's language, the first one read first.
const LANGUAGE_FIELDS: [&str; 2] = ["language", "lang"];

/// The language a note's front matter names: the first value of its `language` field, else
/// of its `lang` field.
pub fn declared_language(metadata: &Metadata) -> Option<&str> {
    LANGUAGE_FIELDS.iter().find_map(|key| metadata.get(*key)?.first()).map(String::as_str)
}

/// Whether the front matter has a field for the note's language.
pub fn names_language(metadata: &Metadata) -> bool {
    LANGUAGE_FIELDS.iter().any(|key| metadata.contains_key(*key))
}

/// Records `language` as the note's `language` field when its front matter has none: a
/// setting, or the language detected in the note, stands for the missing field.
pub fn supply_language(metadata: &mut Metadata, language: &str) {
    if !names_language(metadata) {
        metadata.insert(LANGUAGE_FIELDS[0].to_string(), vec![language.to_string()]);
    }
}

/// The most fields kept from one front matter, and the most items of one list.
const MAX_FIELDS: usize = 64;
const MAX_ITEMS: usize = 64;
/// The most characters of one value; a longer one is cut.
const MAX_VALUE_CHARS: usize = 256;

/// Front matter found at the start of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    /// Byte offset at which the document body starts (just after the closing fence line).
    pub body_start: usize,
    /// The `title` value, when present and not empty.
    pub title: Option<String>,
    /// Every top-level field with a scalar or list value (`title` included).
    pub fields: Metadata,
    /// Lines that could not be read, as warnings ("line 4: …"); the rest is kept.
    pub problems: Vec<String>,
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
            let mut reader = Reader::default();
            match syntax {
                Syntax::Yaml => reader.yaml(content),
                Syntax::Toml => reader.toml(content),
            }
            let title = reader
                .fields
                .get("title")
                .and_then(|v| v.first())
                .map(|t| collapse(t))
                .filter(|t| !t.is_empty());
            return Detection::Found(FrontMatter {
                body_start: lines.pos,
                title,
                fields: reader.fields,
                problems: reader.problems,
            });
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

/// Reads the top-level fields of front matter line by line; the first line of the front
/// matter is line 2 of the file.
#[derive(Default)]
struct Reader {
    fields: Metadata,
    problems: Vec<String>,
}

impl Reader {
    fn yaml(&mut self, content: &str) {
        let lines: Vec<&str> = content.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let number = i + 2;
            i += 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if line.starts_with([' ', '\t', '-']) {
                // A list item or nested key with no top-level key above it.
                self.problem(number, "an indented line or list item outside any key; it is ignored");
                continue;
            }
            let Some((key, rest)) = yaml_key(line) else {
                self.problem(number, "not a `key: value` line; it is ignored");
                continue;
            };
            // The indented lines below the key belong to it: list items, a nested map, or
            // the rest of a block or multi-line scalar.
            let start = i;
            while i < lines.len()
                && (lines[i].starts_with([' ', '\t'])
                    || lines[i].trim().is_empty()
                    || lines[i].starts_with("- ")
                    || lines[i].trim() == "-")
            {
                i += 1;
            }
            let below: Vec<&str> = lines[start..i]
                .iter()
                .map(|l| l.trim())
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect();
            let value = rest.trim();
            let values = if let Some(flow) = value.strip_prefix('[') {
                // Up to the closing bracket; a comment may follow it.
                let inner = match flow.rfind(']') {
                    Some(end) => &flow[..end],
                    None => {
                        let what =
                            format!("the list of `{key}` is not closed; it is read to the end of the line");
                        self.problem(number, &what);
                        flow
                    }
                };
                split_flow_list(inner)
            } else if value.starts_with('{') {
                continue;
            } else if value.starts_with('"') || value.starts_with('\'') {
                vec![yaml_scalar(value)]
            } else {
                let plain = strip_yaml_comment(value);
                let block = plain.starts_with(['|', '>']);
                if !plain.is_empty() && !block {
                    // A plain scalar may go on over indented lines.
                    vec![std::iter::once(plain).chain(below.iter().copied()).collect::<Vec<_>>().join(" ")]
                } else if block {
                    vec![below.join(" ")]
                } else if below.first().is_some_and(|l| l.starts_with('-')) {
                    below.iter().map(|l| yaml_scalar(l.trim_start_matches('-').trim())).collect()
                } else if below.iter().any(|l| yaml_key(l).is_some()) {
                    // A nested map: neither a scalar nor a list.
                    continue;
                } else {
                    vec![below.join(" ")]
                }
            };
            self.insert(key, values);
        }
    }

    fn toml(&mut self, content: &str) {
        let mut lines = content.lines().enumerate();
        while let Some((n, line)) = lines.next() {
            let number = n + 2;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if trimmed.starts_with('[') {
                // Keys after a table header belong to that table, not to the document.
                return;
            }
            let Some((key, value)) = trimmed.split_once('=') else {
                self.problem(number, "not a `key = value` line; it is ignored");
                continue;
            };
            let key = key.trim().trim_matches('"');
            let value = value.trim();
            let values = if let Some(list) = value.strip_prefix('[') {
                // An array may go on over several lines, up to its `]`.
                let mut whole = list.to_string();
                while !whole.trim_end().ends_with(']') {
                    match lines.next() {
                        Some((_, more)) => {
                            whole.push(' ');
                            whole.push_str(more.trim());
                        }
                        None => {
                            self.problem(number, &format!("the array of `{key}` is not closed"));
                            break;
                        }
                    }
                }
                split_flow_list(whole.trim_end().trim_end_matches(']'))
            } else if value.starts_with('{') {
                continue;
            } else if value.starts_with("\"\"\"") || value.starts_with("'''") {
                // Multi-line strings: their first line is enough for a field.
                vec![value[3..].split(&value[..3]).next().unwrap_or("").to_string()]
            } else if let Some(quoted) = value.strip_prefix('"') {
                vec![unescape_double_quoted(quoted)]
            } else if let Some(literal) = value.strip_prefix('\'') {
                vec![literal.split('\'').next().unwrap_or("").to_string()]
            } else {
                vec![value.split(" #").next().unwrap_or(value).trim().to_string()]
            };
            self.insert(key, values);
        }
    }

    fn insert(&mut self, key: &str, values: Vec<String>) {
        let key = key.trim();
        if key.is_empty() || (self.fields.len() >= MAX_FIELDS && !self.fields.contains_key(key)) {
            return;
        }
        let values: Vec<String> = values
            .iter()
            .map(|v| collapse(v))
            .filter(|v| !v.is_empty())
            .take(MAX_ITEMS)
            .map(|v| {
                if v.chars().count() > MAX_VALUE_CHARS {
                    v.chars().take(MAX_VALUE_CHARS).collect()
                } else {
                    v
                }
            })
            .collect();
        self.fields.insert(collapse(key), values);
    }

    fn problem(&mut self, line: usize, what: &str) {
        if self.problems.len() < 8 {
            self.problems.push(format!("line {line}: front matter: {what}"));
        }
    }
}

/// A top-level YAML `key: rest` line (the key may be quoted), or `None`.
fn yaml_key(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = if let Some(quoted) = line.strip_prefix('"') {
        let end = quoted.find('"')?;
        (&quoted[..end], quoted[end + 1..].strip_prefix(':')?)
    } else {
        let colon = line
            .match_indices(':')
            .map(|(i, _)| i)
            .find(|&i| line[i + 1..].is_empty() || line[i + 1..].starts_with([' ', '\t']))?;
        (&line[..colon], &line[colon + 1..])
    };
    let key = key.trim();
    (!key.is_empty() && !key.contains(['#', '[', '{'])).then_some((key, rest))
}

/// A YAML scalar as text: quoted (unescaped) or plain (without its comment).
fn yaml_scalar(value: &str) -> String {
    if let Some(quoted) = value.strip_prefix('"') {
        unescape_double_quoted(quoted)
    } else if let Some(quoted) = value.strip_prefix('\'') {
        unescape_single_quoted(quoted)
    } else {
        strip_yaml_comment(value).to_string()
    }
}

/// The items of a flow list (`a, "b, c", 'd'`) without its brackets.
fn split_flow_list(inner: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in inner.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ',') => items.push(std::mem::take(&mut current)),
            (_, c) => current.push(c),
        }
    }
    items.push(current);
    items.into_iter().map(|i| i.trim().to_string()).filter(|i| !i.is_empty()).collect()
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

    fn fields(text: &str) -> Vec<(String, Vec<String>)> {
        found(text).fields.into_iter().collect()
    }

    fn field(key: &str, values: &[&str]) -> (String, Vec<String>) {
        (key.to_string(), values.iter().map(|v| v.to_string()).collect())
    }

    #[test]
    fn obsidian_yaml_lists_scalars_and_aliases() {
        let text = "---\ntags:\n  - backup\n  - ops/storage\naliases: [Backups, \"Snapshots, daily\"]\n\
                    category: ops # team\ncreated: 2024-03-01\ndraft: false\ncssclasses:\n---\nbody";
        assert_eq!(
            fields(text),
            [
                field("aliases", &["Backups", "Snapshots, daily"]),
                field("category", &["ops"]),
                field("created", &["2024-03-01"]),
                field("cssclasses", &[]),
                field("draft", &["false"]),
                field("tags", &["backup", "ops/storage"]),
            ]
        );
    }

    #[test]
    fn mkdocs_lists_at_the_key_indentation_and_nested_maps_left_out() {
        let text = "---\ntitle: Retention\ntags:\n- backup\n- 'retention'\nsearch:\n  boost: 2\nhide: {toc: true}\n---\n";
        assert_eq!(fields(text), [field("tags", &["backup", "retention"]), field("title", &["Retention"])]);
    }

    #[test]
    fn hugo_toml_fields_before_the_first_table() {
        let text = "+++\ntitle = \"Backups\"\ndate = 2024-03-01T10:00:00Z\ntags = [\"backup\",\n  \"ops\"]\ndraft = true\n[params]\nauthor = \"x\"\n+++\n";
        assert_eq!(
            fields(text),
            [
                field("date", &["2024-03-01T10:00:00Z"]),
                field("draft", &["true"]),
                field("tags", &["backup", "ops"]),
                field("title", &["Backups"]),
            ]
        );
    }

    #[test]
    fn unreadable_lines_are_warnings_and_the_rest_is_kept() {
        let fm = found("---\ntags: [a, b\njust words\n  - stray\ncategory: ops\n---\n");
        assert_eq!(fm.fields.get("category").unwrap(), &["ops"]);
        assert_eq!(fm.fields.get("tags").unwrap(), &["a", "b"]);
        assert_eq!(fm.problems.len(), 3, "{:?}", fm.problems);
        assert!(
            fm.problems[0].starts_with("line 2: front matter: the list of `tags` is not closed"),
            "{:?}",
            fm.problems
        );
        assert!(
            fm.problems[1].starts_with("line 3: front matter: not a `key: value` line"),
            "{:?}",
            fm.problems
        );
        // The stray item belongs to the line above it, read as a multi-line scalar.
        assert_eq!(found("---\nnote: first\n  second\n---\n").fields.get("note").unwrap(), &["first second"]);
    }

    #[test]
    fn fields_and_values_are_bounded() {
        let many: String = (0..100).map(|i| format!("k{i}: v\n")).collect();
        assert_eq!(found(&format!("---\n{many}---\n")).fields.len(), MAX_FIELDS);
        let long = format!("---\nk: {}\n---\n", "x".repeat(10_000));
        assert_eq!(found(&long).fields["k"][0].chars().count(), MAX_VALUE_CHARS);
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
