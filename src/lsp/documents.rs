//! Open documents: the editor's text of each buffer, kept in step with its edits, and the
//! conversion between LSP positions (UTF-16 or UTF-8 code units) and byte offsets.

use std::collections::HashMap;

use tower_lsp_server::ls_types::{Position, TextDocumentContentChangeEvent, Uri};

/// How the `character` of a position counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

impl Encoding {
    /// Length of `s` in this encoding's code units.
    pub fn len(self, s: &str) -> u32 {
        match self {
            Encoding::Utf8 => s.len() as u32,
            Encoding::Utf16 => s.encode_utf16().count() as u32,
        }
    }
}

/// One open buffer.
#[derive(Debug, Clone)]
pub struct Document {
    pub text: String,
    pub version: i32,
}

/// A position that is not in the document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("position {line}:{character} is past the end of the document ({lines} lines)")]
pub struct PastEnd {
    pub line: u32,
    pub character: u32,
    pub lines: usize,
}

/// Number of lines as LSP counts them: a final line without a newline counts, and so does
/// the empty line after a trailing newline.
pub fn line_count(text: &str) -> usize {
    text.split('\n').count()
}

/// The byte offset of `pos` in `text`. A character past the end of its line means the end
/// of the line (as the protocol says); a line past the last one is an error.
pub fn offset_of(text: &str, pos: Position, encoding: Encoding) -> Result<usize, PastEnd> {
    let mut start = 0;
    for _ in 0..pos.line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => {
                return Err(PastEnd { line: pos.line, character: pos.character, lines: line_count(text) });
            }
        }
    }
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    // The `\r` of a CRLF ending is not a column.
    let line = text[start..line_end].strip_suffix('\r').unwrap_or(&text[start..line_end]);
    let mut units = 0u32;
    for (i, c) in line.char_indices() {
        if units >= pos.character {
            return Ok(start + i);
        }
        units += match encoding {
            Encoding::Utf8 => c.len_utf8() as u32,
            Encoding::Utf16 => c.len_utf16() as u32,
        };
    }
    Ok(start + line.len())
}

/// The open buffers, by URI.
#[derive(Debug, Default)]
pub struct Documents {
    open: HashMap<Uri, Document>,
}

impl Documents {
    pub fn get(&self, uri: &Uri) -> Option<&Document> {
        self.open.get(uri)
    }

    pub fn open(&mut self, uri: Uri, text: String, version: i32) {
        self.open.insert(uri, Document { text, version });
    }

    pub fn close(&mut self, uri: &Uri) {
        self.open.remove(uri);
    }

    pub fn saved(&mut self, uri: &Uri, text: Option<String>) {
        if let Some(doc) = self.open.get_mut(uri)
            && let Some(text) = text
        {
            doc.text = text;
        }
    }

    /// Applies edits in order. An edit whose range lies outside the text is an error, and the
    /// document is left as the edits before it made it.
    pub fn change(
        &mut self,
        uri: &Uri,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
        encoding: Encoding,
    ) -> Result<(), String> {
        let Some(doc) = self.open.get_mut(uri) else {
            return Err(format!("{} is not open", uri.as_str()));
        };
        doc.version = version;
        for change in changes {
            match change.range {
                None => doc.text = change.text,
                Some(range) => {
                    let start = offset_of(&doc.text, range.start, encoding).map_err(|e| e.to_string())?;
                    let end = offset_of(&doc.text, range.end, encoding).map_err(|e| e.to_string())?;
                    if end < start {
                        return Err(format!("edit range ends before it starts: {range:?}"));
                    }
                    doc.text.replace_range(start..end, &change.text);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::ls_types::Range;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn utf16_and_utf8_columns_count_differently() {
        let text = "a😀b\nçd";
        assert_eq!(offset_of(text, pos(0, 3), Encoding::Utf16), Ok(5));
        assert_eq!(offset_of(text, pos(0, 5), Encoding::Utf8), Ok(5));
        assert_eq!(offset_of(text, pos(1, 1), Encoding::Utf16), Ok(text.find('d').unwrap()));
        assert_eq!(offset_of(text, pos(1, 2), Encoding::Utf8), Ok(text.find('d').unwrap()));
        assert_eq!(Encoding::Utf16.len("a😀"), 3);
        assert_eq!(Encoding::Utf8.len("a😀"), 5);
    }

    #[test]
    fn columns_past_the_line_clamp_and_lines_past_the_end_are_errors() {
        let text = "ab\r\ncd\n";
        assert_eq!(offset_of(text, pos(0, 99), Encoding::Utf16), Ok(2), "before the \\r");
        assert_eq!(offset_of(text, pos(2, 0), Encoding::Utf16), Ok(text.len()));
        assert_eq!(line_count(text), 3);
        assert_eq!(
            offset_of(text, pos(3, 0), Encoding::Utf16),
            Err(PastEnd { line: 3, character: 0, lines: 3 })
        );
    }

    #[test]
    fn incremental_edits_apply_in_order() {
        let mut docs = Documents::default();
        let uri: Uri = "file:///w/a.md".parse().unwrap();
        docs.open(uri.clone(), "# Title\r\n\r\nfirst line\r\n".to_string(), 1);
        let edit = |l1, c1, l2, c2, text: &str| TextDocumentContentChangeEvent {
            range: Some(Range { start: pos(l1, c1), end: pos(l2, c2) }),
            range_length: None,
            text: text.to_string(),
        };
        docs.change(&uri, 2, vec![edit(2, 0, 2, 5, "second"), edit(0, 2, 0, 7, "Heading")], Encoding::Utf16)
            .unwrap();
        let doc = docs.get(&uri).unwrap();
        assert_eq!(doc.text, "# Heading\r\n\r\nsecond line\r\n");
        assert_eq!(doc.version, 2);
        assert!(docs.change(&uri, 3, vec![edit(9, 0, 9, 0, "x")], Encoding::Utf16).is_err());
        docs.saved(&uri, Some("saved\n".to_string()));
        assert_eq!(docs.get(&uri).unwrap().text, "saved\n");
    }
}
