//! Contextualisation: the text that puts a chunk back into its document.
//!
//! The header ("Document: Backups > Retention") is always on and costs nothing; an
//! LLM-written snippet (see `snippets`) may add to it. Both are kept apart from the chunk's
//! original text: the index embeds `header + snippet + text`, gives BM25 the title, the
//! headings and the snippet as fields of their own, and shows the original text. Noise in
//! the text (`noise`: blobs, comments, layout tags) is left out of what is searched.

mod noise;

pub use noise::searchable;

use std::collections::BTreeMap;

/// Front matter fields, each with its values (what the chunker reads as `Metadata`).
pub type Metadata = BTreeMap<String, Vec<String>>;

/// The default header: "Document: Title > H1 > H2".
pub const DEFAULT_HEADER_TEMPLATE: &str = "Document: {title} > {headings}";

/// The front matter fields that go into the header by default: what Obsidian, MkDocs,
/// Hugo and Jekyll users classify their notes by, and a note's other names.
pub const DEFAULT_HEADER_FIELDS: [&str; 3] = ["tags", "category", "aliases"];

/// The most characters of front matter values one header carries.
const MAX_FIELD_CHARS: usize = 400;

/// How the context that a chunk loses when cut out of its document is put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextConfig {
    /// The header prefix; `{title}`, `{path}` and `{headings}` are filled in. Segments between
    /// ` > ` separators that end up empty are dropped.
    pub header_template: String,
    /// Front matter fields whose values follow the header's first line, one line each
    /// ("Tags: backup, ops"), and are searched as words of their own.
    pub header_fields: Vec<String>,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            header_template: DEFAULT_HEADER_TEMPLATE.to_string(),
            header_fields: DEFAULT_HEADER_FIELDS.iter().map(|f| f.to_string()).collect(),
        }
    }
}

/// The heading path as it appears in a header: the first heading is dropped when it only
/// repeats the document title (a page whose H1 is its title).
pub fn context_headings<'a>(title: &str, heading_path: &'a [String]) -> &'a [String] {
    match heading_path.split_first() {
        Some((first, rest)) if same_words(first, title) => rest,
        _ => heading_path,
    }
}

/// Renders the header of one chunk: the template on one line, then a line for each of
/// the configured front matter fields the document has ("Tags: backup, ops").
pub fn render_header(
    config: &ContextConfig,
    path: &str,
    title: &str,
    heading_path: &[String],
    metadata: &Metadata,
) -> String {
    let headings = context_headings(title, heading_path).join(" > ");
    let filled = config
        .header_template
        .replace("{title}", title.trim())
        .replace("{path}", path)
        .replace("{headings}", &headings);
    // One line: the field lines below it are told apart by their place.
    let filled = filled.split_whitespace().collect::<Vec<_>>().join(" ");
    // Drop separators around parts that came out empty ("Document: X > " for a chunk above
    // the first heading).
    let parts: Vec<&str> = filled.split(" > ").map(str::trim_end).filter(|p| !p.trim().is_empty()).collect();
    let joined = parts.join(" > ");
    let mut header = joined.trim_end_matches(['>', ' ']).trim_end().to_string();
    let mut budget = MAX_FIELD_CHARS;
    for name in &config.header_fields {
        let Some(values) = field(metadata, name).filter(|v| !v.is_empty()) else {
            continue;
        };
        let line: String = values.join(", ").chars().take(budget).collect();
        if line.is_empty() {
            break;
        }
        budget -= line.chars().count();
        header.push('\n');
        header.push_str(&capitalised(name));
        header.push_str(": ");
        header.push_str(&line);
    }
    header
}

/// The values of a front matter field, its name matched without regard to case.
pub fn field<'m>(metadata: &'m Metadata, name: &str) -> Option<&'m Vec<String>> {
    metadata.get(name).or_else(|| metadata.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
}

/// The front matter values a header carries (its lines after the first, without their
/// field names): what BM25 searches as the metadata field.
pub fn header_field_values(header: &str) -> String {
    header
        .lines()
        .skip(1)
        .map(|line| line.split_once(": ").map_or(line, |(_, values)| values))
        .collect::<Vec<_>>()
        .join("\n")
}

fn capitalised(name: &str) -> String {
    let mut chars = name.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// The text given to the embedder for a chunk: its header, its snippet (when it has one)
/// and its text, each part left out when empty.
pub fn embedding_text(header: &str, snippet: &str, text: &str) -> String {
    let text = searchable(text);
    [header, snippet, text.as_ref()]
        .iter()
        .filter(|part| !part.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn same_words(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>();
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(template: &str) -> ContextConfig {
        ContextConfig { header_template: template.to_string(), ..ContextConfig::default() }
    }

    fn render_header(config: &ContextConfig, path: &str, title: &str, heading_path: &[String]) -> String {
        super::render_header(config, path, title, heading_path, &Metadata::new())
    }

    fn path(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn default_header_names_title_and_headings() {
        let c = cfg(DEFAULT_HEADER_TEMPLATE);
        assert_eq!(
            render_header(&c, "ops/backup.md", "Operations", &path(&["Backups", "Retention"])),
            "Document: Operations > Backups > Retention"
        );
    }

    #[test]
    fn a_heading_that_repeats_the_title_is_not_repeated() {
        let c = cfg(DEFAULT_HEADER_TEMPLATE);
        assert_eq!(
            render_header(&c, "b.md", "Backups", &path(&["Backups", "Retention"])),
            "Document: Backups > Retention"
        );
    }

    #[test]
    fn empty_parts_leave_no_dangling_separator() {
        let c = cfg(DEFAULT_HEADER_TEMPLATE);
        assert_eq!(render_header(&c, "b.md", "Backups", &[]), "Document: Backups");
        assert_eq!(render_header(&c, "b.md", "Backups", &path(&["Backups"])), "Document: Backups");
    }

    #[test]
    fn path_placeholder_is_filled() {
        let c = cfg("{path} | {title} > {headings}");
        assert_eq!(render_header(&c, "ops/b.md", "Ops", &path(&["A"])), "ops/b.md | Ops > A");
    }

    #[test]
    fn configured_front_matter_fields_follow_the_first_line() {
        let mut metadata = Metadata::new();
        metadata.insert("Tags".into(), vec!["backup".into(), "ops/storage".into()]);
        metadata.insert("aliases".into(), vec![]);
        metadata.insert("author".into(), vec!["Ann".into()]);
        let c = cfg(DEFAULT_HEADER_TEMPLATE);
        let header = super::render_header(&c, "b.md", "Backups", &path(&["Retention"]), &metadata);
        assert_eq!(header, "Document: Backups > Retention\nTags: backup, ops/storage");
        assert_eq!(header_field_values(&header), "backup, ops/storage");
        assert_eq!(header_field_values("Document: Backups"), "");
        let c = ContextConfig { header_fields: vec!["author".into()], ..cfg("{title}\n{headings}") };
        let header = super::render_header(&c, "b.md", "Backups", &path(&["Retention"]), &metadata);
        assert_eq!(header, "Backups Retention\nAuthor: Ann");
    }

    #[test]
    fn front_matter_in_a_header_is_bounded() {
        let mut metadata = Metadata::new();
        metadata.insert("tags".into(), (0..500).map(|i| format!("tag{i}")).collect());
        let header = super::render_header(&ContextConfig::default(), "b.md", "B", &[], &metadata);
        assert!(header.chars().count() <= "Document: B\nTags: ".len() + MAX_FIELD_CHARS, "{}", header.len());
    }

    #[test]
    fn embedding_text_puts_the_header_first() {
        assert_eq!(embedding_text("Document: A", "", "body"), "Document: A\n\nbody");
        assert_eq!(embedding_text("", "", "body"), "body");
        assert_eq!(
            embedding_text("Document: A", "It situates.", "body"),
            "Document: A\n\nIt situates.\n\nbody"
        );
    }
}
