//! Fuzzes the previews of search hits (`search::preview::Previewer`): a query and a
//! chunk's text, of a markdown note or an MDX page, the chunk in one of several languages
//! (which decides the rules its words are marked by). Every preview line must be a line of
//! the chunk, as written or as the rendered note reads it (`markup::readable`), trimmed and
//! cut to at most `MAX_WIDTH` terminal columns with an ellipsis at a cut end; its marks
//! must be in order, apart, non-empty and on character boundaries of the shown text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use situate::index::ChunkRecord;
use situate::search::preview::{MAX_WIDTH, Previewer, readable, width};

/// The languages a chunk may be in, by its front matter: English rules, a Latin language
/// folded before its stemmer, one stemmed before folding, Cyrillic, Chinese pairs and Thai
/// words.
const LANGUAGES: [&str; 7] = ["en", "fr", "hu", "tr", "ru", "zh", "th"];

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let input = String::from_utf8_lossy(rest);
    let (query, text) = input.split_once('\n').unwrap_or((input.as_ref(), ""));
    let start_line = 1 + u32::from(first >> 3);
    // An MDX page when the input's length is odd, whose statements and comments are aside.
    let path = if data.len() % 2 == 1 { "page.mdx" } else { "note.md" };
    let mut chunk = ChunkRecord::sample(path, text, start_line);
    let language = LANGUAGES[usize::from(first) % LANGUAGES.len()];
    chunk.metadata.insert("language".to_string(), vec![language.to_string()]);
    let lines: Vec<&str> = text.lines().collect();
    for shown in Previewer::new(query, None).preview(&chunk) {
        let n = shown.line.checked_sub(start_line).expect("a line before the chunk") as usize;
        let line = lines.get(n).expect("a line after the chunk");
        // A line is shown as written or as the rendered note reads it (a wikilink's alias,
        // no comment or highlight marks).
        let sources = [line.trim().to_string(), readable(line).into_owned()];
        assert!(width(&shown.text) <= MAX_WIDTH, "{} columns", width(&shown.text));
        // The shown text is a piece of the line, with an ellipsis at each end that was cut
        // (the line may hold ellipses of its own).
        let text = shown.text.as_str();
        let lead = text.strip_prefix('…');
        let pieces = [Some(text), lead, text.strip_suffix('…'), lead.and_then(|t| t.strip_suffix('…'))];
        assert!(
            pieces.into_iter().flatten().any(|piece| sources.iter().any(|source| source.contains(piece))),
            "{text:?} is not part of line {} as written or read: {sources:?}",
            shown.line
        );
        let mut end = 0;
        for &(from, to) in &shown.marks {
            assert!(end <= from && from < to && to <= shown.text.len(), "mark {from}..{to} after {end}");
            assert!(shown.text.is_char_boundary(from) && shown.text.is_char_boundary(to), "{from}..{to}");
            end = to;
        }
    }
});
