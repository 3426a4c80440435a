//! What notes apps (Obsidian, Logseq, Foam) write into a vault that is not a note's own
//! words: a note is named by its file, a template's heading is a placeholder, and of an
//! Excalidraw drawing kept as a note (`*.excalidraw.md`, front matter `excalidraw-plugin:`)
//! only the words written in the drawing are text. The plugin's banner, its list of
//! embedded files and its drawing data (a block of compressed JSON often larger than the
//! rest of the vault's notes together) are left out.

use super::Metadata;
use super::outline::Outline;

/// The front matter field the Excalidraw plugin writes into every drawing it saves.
const MARKER: &str = "excalidraw-plugin";

/// The heading under which the plugin lists the texts of a drawing's elements.
const TEXT_ELEMENTS: &str = "Text Elements";

/// Whether a note with this front matter is an Excalidraw drawing.
pub(crate) fn is_drawing(metadata: &Metadata) -> bool {
    metadata.keys().any(|k| k.eq_ignore_ascii_case(MARKER))
}

/// The outline of a drawing with only its sections of element texts.
pub(crate) fn text_elements(outline: Outline) -> Outline {
    let sections = outline
        .sections
        .into_iter()
        .filter(|s| s.heading_path.last().is_some_and(|h| h.trim().eq_ignore_ascii_case(TEXT_ELEMENTS)))
        .collect();
    Outline { sections, first_h1: None, tags: Default::default() }
}

/// A note's name as a title: its file name without the extension, and without
/// `.excalidraw` for a drawing (`Garden layout.excalidraw.md` is "Garden layout", as
/// Obsidian names it).
pub fn note_name(file_name: &str) -> &str {
    let stem = match file_name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() && !ext.contains(' ') => stem,
        _ => file_name,
    };
    match stem.len().checked_sub(".excalidraw".len()) {
        Some(at) if at > 0 && stem.is_char_boundary(at) && stem[at..].eq_ignore_ascii_case(".excalidraw") => {
            &stem[..at]
        }
        _ => stem,
    }
}

/// Whether a heading is a template's placeholder alone (`{{date:YYYY-MM-DD}}`, Templater's
/// `<% tp.file.title %>`): the note made from the template gets a title there, the template
/// has none.
pub(crate) fn is_placeholder(heading: &str) -> bool {
    let heading = heading.trim();
    (heading.starts_with("{{") && heading.ends_with("}}"))
        || (heading.starts_with("<%") && heading.ends_with("%>"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_named_without_its_extension() {
        assert_eq!(note_name("2026-11-27.md"), "2026-11-27");
        assert_eq!(note_name("v1.2 release notes.md"), "v1.2 release notes");
        assert_eq!(note_name("Garden layout.excalidraw.md"), "Garden layout");
        assert_eq!(note_name("読書メモ.txt"), "読書メモ");
        for kept in ["README", ".md", "notes.", "Dr. Okafor visit"] {
            assert_eq!(note_name(kept), kept);
        }
    }

    #[test]
    fn a_template_placeholder_is_no_title() {
        assert!(is_placeholder("{{date:YYYY-MM-DD}}"));
        assert!(is_placeholder("<% tp.file.title %>"));
        assert!(!is_placeholder("Meeting: {{title}}"));
        assert!(!is_placeholder("Templates"));
    }
}
