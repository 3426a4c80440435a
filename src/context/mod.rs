//! Contextualisation: the text that puts a chunk back into its document.
//!
//! The header ("Document: Backups > Retention") is always on and costs nothing; an
//! LLM-written snippet (see `snippets`) may add to it. Both are kept apart from the chunk's
//! original text: the index embeds `header + snippet + text`, gives BM25 the title, the
//! headings and the snippet as fields of their own, and shows the original text. Noise in
//! the text (`noise`: blobs, comments, layout tags) is left out of what is searched.

mod noise;

pub use noise::searchable;

/// The default header: "Document: Title > H1 > H2".
pub const DEFAULT_HEADER_TEMPLATE: &str = "Document: {title} > {headings}";

/// How the context that a chunk loses when cut out of its document is put back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextConfig {
    /// The header prefix; `{title}`, `{path}` and `{headings}` are filled in. Segments between
    /// ` > ` separators that end up empty are dropped.
    pub header_template: String,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig { header_template: DEFAULT_HEADER_TEMPLATE.to_string() }
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

/// Renders the header of one chunk from the template.
pub fn render_header(config: &ContextConfig, path: &str, title: &str, heading_path: &[String]) -> String {
    let headings = context_headings(title, heading_path).join(" > ");
    let filled = config
        .header_template
        .replace("{title}", title.trim())
        .replace("{path}", path)
        .replace("{headings}", &headings);
    // Drop separators around parts that came out empty ("Document: X > " for a chunk above
    // the first heading).
    let parts: Vec<&str> = filled.split(" > ").map(str::trim_end).filter(|p| !p.trim().is_empty()).collect();
    let joined = parts.join(" > ");
    joined.trim_end_matches(['>', ' ']).trim_end().to_string()
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
        ContextConfig { header_template: template.to_string() }
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
    fn embedding_text_puts_the_header_first() {
        assert_eq!(embedding_text("Document: A", "", "body"), "Document: A\n\nbody");
        assert_eq!(embedding_text("", "", "body"), "body");
        assert_eq!(
            embedding_text("Document: A", "It situates.", "body"),
            "Document: A\n\nIt situates.\n\nbody"
        );
    }
}
