//! What the language server reads from its folders, done here so that its handlers only
//! convert: a search across folders ranked as one, the passage at a line with what makes it
//! stale, passages related to it, and each folder's status. Every function here may read
//! the index or the disk; callers run them off the async threads.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Folder, FolderState};
use crate::engine::{ChunkRecord, EngineError, Freshness, Status, View};
use crate::search::{self, Hit, SearchOptions, SearchRequest};
use crate::workspace::{self, Legacy};

/// Hits of one search across the folders, best first, each with its folder's root.
#[derive(Debug, Default)]
pub struct FolderHits {
    /// Some folder is still being indexed: its hits come from its last commit.
    pub indexing: bool,
    pub hits: Vec<(PathBuf, Hit)>,
}

/// Runs `query` in every folder that has an index and ranks the hits together.
pub fn search(
    folders: &[Arc<Folder>],
    query: &str,
    options: &SearchOptions,
) -> Result<FolderHits, EngineError> {
    let mut out = FolderHits::default();
    let mut lists: Vec<Vec<Hit>> = Vec::new();
    let mut roots: Vec<PathBuf> = Vec::new();
    let mut limit = 0;
    let mut config = None;
    // A folder whose index is found damaged is rebuilt in the background; the others
    // answer meanwhile, and when none can, the reader hears why.
    let mut rebuilding = None;
    for folder in folders {
        out.indexing |= folder.state().indexing();
        let Some(view) = folder.view() else { continue };
        let request = SearchRequest::with_defaults(query, options.clone(), &view.config().search);
        // Before and after: the fill gives way from the start of a search to a while after.
        folder.note_read();
        let searched = view.search(&request);
        folder.note_read();
        let hits = match searched {
            Ok(hits) => hits,
            Err(e) => match folder.damaged(&e) {
                Some(why) => {
                    out.indexing = true;
                    rebuilding.get_or_insert(why);
                    continue;
                }
                None => return Err(e),
            },
        };
        limit = limit.max(request.limit);
        config.get_or_insert_with(|| view.config().search.clone());
        lists.push(hits);
        roots.push(folder.root.clone());
    }
    let Some(config) = config else { return rebuilding.map_or(Ok(out), Err) };
    out.hits =
        search::merge(lists, &config, limit).into_iter().map(|(n, hit)| (roots[n].clone(), hit)).collect();
    Ok(out)
}

/// The text of the file at `path` as it was indexed and as an editor shows it: decoded from
/// its encoding (a binary file's bytes read as UTF-8, invalid ones replaced). A folder, a
/// named pipe or a device is an error, found without waiting on it.
pub fn saved_text(path: &Path, legacy: Legacy) -> std::io::Result<String> {
    let bytes = workspace::read_regular(path)?;
    Ok(match workspace::decode(&bytes, legacy) {
        Ok(read) => read.text,
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// How far back from a span's start its line's start is looked for.
const LINE_LOOK_BACK: u64 = 16 * 1024;

/// The text before a span on its first line (empty when it starts its line), read from the
/// file `rel` under `root`: a chunk cut inside a long line (a paragraph of Chinese, a
/// minified file) starts there, not at the line's start. `None` when the file no longer
/// holds the span's text at `start_byte`, cannot be read, or has more than 16 KB of that
/// line before it. For one span; [`LineReader`] reads those of many hits.
pub fn line_before(root: &Path, rel: &str, start_byte: u64, text: &str, legacy: Legacy) -> Option<String> {
    LineReader::default().line_before(root, rel, start_byte, text, legacy)
}

/// Reads where the spans of one request's hits start on their lines ([`line_before`]): a
/// file that is not plain UTF-8 is read whole and decoded once, however many of its hits
/// ask.
#[derive(Debug, Default)]
pub struct LineReader {
    /// The files read whole, by path: their text as decoded (`None`: unreadable).
    decoded: HashMap<PathBuf, Option<String>>,
}

impl LineReader {
    /// [`line_before`], through the files this reader decoded already.
    pub fn line_before(
        &mut self,
        root: &Path,
        rel: &str,
        start_byte: u64,
        text: &str,
        legacy: Legacy,
    ) -> Option<String> {
        let path = root.join(rel);
        if start_byte == 0 {
            return Some(String::new());
        }
        if let Some(decoded) = self.decoded.get(&path) {
            return decoded.as_deref().and_then(|decoded| line_in(decoded, start_byte, text));
        }
        // Most spans start their line: the byte before them says so.
        let around = workspace::read_span(&path, start_byte - 1, 1 + text.len()).ok()?;
        if around.split_first() == Some((&b'\n', text.as_bytes())) {
            return Some(String::new());
        }
        let from = start_byte.saturating_sub(LINE_LOOK_BACK);
        let back = (start_byte - from) as usize;
        let bytes = workspace::read_span(&path, from, back + text.len()).ok()?;
        let Some((before, _)) = bytes.split_at_checked(back).filter(|(_, span)| *span == text.as_bytes())
        else {
            // Offsets count the decoded text's bytes: a file in another encoding than UTF-8,
            // or with a byte-order mark, is read whole and decoded, as it was indexed. A file
            // in UTF-8 that no longer holds the span there has changed: it tells nothing.
            if plain_utf8(&path, &bytes) {
                return None;
            }
            let decoded = workspace::read_regular(&path)
                .ok()
                .and_then(|bytes| workspace::decode(&bytes, legacy).ok())
                .map(|read| read.text);
            let line = decoded.as_deref().and_then(|decoded| line_in(decoded, start_byte, text));
            self.decoded.insert(path, decoded);
            return line;
        };
        let line = match before.iter().rposition(|&b| b == b'\n') {
            Some(newline) => &before[newline + 1..],
            None if from == 0 => before.strip_prefix("\u{feff}".as_bytes()).unwrap_or(before),
            None => return None,
        };
        String::from_utf8(line.to_vec()).ok()
    }
}

/// Whether the file at `path` starts without a byte-order mark and `window`, a span read
/// from it, is UTF-8 (but for a letter cut at either end).
fn plain_utf8(path: &Path, window: &[u8]) -> bool {
    let head = workspace::read_span(path, 0, 3).unwrap_or_default();
    if [&b"\xEF\xBB\xBF"[..], b"\xFF\xFE", b"\xFE\xFF"].iter().any(|mark| head.starts_with(mark)) {
        return false;
    }
    let mut at = 0;
    window.utf8_chunks().all(|chunk| {
        at += chunk.valid().len();
        let bad = chunk.invalid().len();
        let cut = at < 4 || at + bad == window.len();
        at += bad;
        bad == 0 || cut
    })
}

/// [`line_before`] in `decoded`, the whole text of a file as it was indexed.
fn line_in(decoded: &str, start_byte: u64, text: &str) -> Option<String> {
    let start = usize::try_from(start_byte).ok()?;
    let (before, after) = decoded.split_at_checked(start)?;
    if !after.starts_with(text) {
        return None;
    }
    let line = &before[before.rfind('\n').map_or(0, |newline| newline + 1)..];
    (line.len() as u64 <= LINE_LOOK_BACK).then(|| line.to_string())
}

/// The passage at a line and what may make it differ from what the user sees.
#[derive(Debug, Clone)]
pub struct Passage {
    pub chunk: ChunkRecord,
    pub chunks_in_file: usize,
    /// The file on disk differs from what was indexed.
    pub changed_on_disk: bool,
    /// A reindex of the file is queued.
    pub pending: bool,
    /// Snippets are on for the folder (a chunk without one waits for it).
    pub snippets_on: bool,
}

/// Passages related to another, from one folder.
#[derive(Debug, Default)]
pub struct Related {
    pub indexing: bool,
    pub hits: Vec<Hit>,
}

impl Folder {
    /// The chunk holding 1-based `line` of the workspace-relative file `rel` at `byte` of
    /// the file (or, between chunks, the next one), with its staleness; `None` when the file
    /// is not indexed.
    pub fn passage_at(&self, rel: &str, line: u32, byte: u64) -> Option<Passage> {
        let view = self.view()?;
        let chunk = chunk_at(&view, rel, line, byte)?;
        let state = self.state();
        Some(Passage {
            chunks_in_file: view.chunk_count(rel).max(1),
            changed_on_disk: view.freshness(rel) != Freshness::Current,
            pending: state.pending.contains(rel),
            snippets_on: state.snippets.is_some(),
            chunk,
        })
    }

    /// The passages most related to the one at `line` and `byte` of `rel`. `None` when the
    /// file is not indexed (yet); no hits, with `indexing`, before the index is open.
    pub fn related(
        &self,
        rel: &str,
        line: u32,
        byte: u64,
        limit: Option<usize>,
    ) -> Result<Option<Related>, EngineError> {
        let indexing = self.state().indexing();
        let Some(view) = self.view() else { return Ok(Some(Related { indexing: true, hits: Vec::new() })) };
        let Some(chunk) = chunk_at(&view, rel, line, byte) else { return Ok(None) };
        let limit = limit.unwrap_or(view.config().search.limit).max(1);
        match view.similar(&chunk, limit) {
            Ok(hits) => Ok(Some(Related { indexing, hits })),
            Err(e) => Err(self.damaged(&e).unwrap_or(e)),
        }
    }

    /// The folder's state, and its index's status with the cost of the snippets still to
    /// write (`None` until the index is open).
    pub fn status(&self) -> (FolderState, Option<Status>) {
        let (state, view) = self.state_and_view();
        let index = view.map(|view| view.status_with_estimate().unwrap_or_else(|_| view.status()));
        (state, index)
    }
}

/// The chunk holding a 1-based line (or the next one after it); of the chunks a long line
/// was cut into, the last that starts at or before `byte`.
fn chunk_at(view: &View, rel: &str, line: u32, byte: u64) -> Option<ChunkRecord> {
    let chunks = view.chunks_at(rel, Some(line)).ok()?;
    let at = chunks.iter().rposition(|c| c.start_byte <= byte).unwrap_or(0);
    chunks.into_iter().nth(at)
}

#[cfg(test)]
mod tests {
    use super::line_before;
    use crate::workspace::Legacy;

    #[test]
    fn the_text_before_a_span_on_its_line_is_read_only_while_the_file_still_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "\u{feff}Lead. 第一句。Tail.\nNext line.\n").unwrap();
        let at = |span: &str| "\u{feff}Lead. 第一句。Tail.\nNext line.\n".find(span).unwrap() as u64;
        let before = |span: &str| line_before(dir.path(), "a.md", at(span), span, Legacy::Guessed);
        assert_eq!(before("Tail.").as_deref(), Some("Lead. 第一句。"));
        assert_eq!(before("Next line.").as_deref(), Some(""));
        // The byte-order mark is no column.
        assert_eq!(before("Lead.").as_deref(), Some(""));
        // A file that no longer holds the span there, or no file, tells nothing.
        assert_eq!(line_before(dir.path(), "a.md", at("Tail."), "Other", Legacy::Guessed), None);
        assert_eq!(line_before(dir.path(), "gone.md", 3, "x", Legacy::Guessed), None);
    }

    /// Offsets count the bytes of the text as it was decoded; a file in UTF-16 or GBK holds
    /// other bytes there.
    #[test]
    fn the_text_before_a_span_is_read_from_a_file_in_another_encoding_as_it_was_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let text = "第一行。\n开头。中间。结尾。\n下一行。\n";
        let mut utf16 = vec![0xFF, 0xFE];
        utf16.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        let (gbk, _, _) = encoding_rs::GBK.encode(text);
        for (name, bytes) in [("utf16.txt", utf16), ("gbk.txt", gbk.into_owned())] {
            std::fs::write(dir.path().join(name), bytes).unwrap();
            let before = |span: &str| {
                line_before(dir.path(), name, text.find(span).unwrap() as u64, span, Legacy::Guessed)
            };
            assert_eq!(before("结尾。").as_deref(), Some("开头。中间。"), "{name}");
            assert_eq!(before("下一行。").as_deref(), Some(""), "{name}");
            assert_eq!(
                line_before(dir.path(), name, text.find("结尾").unwrap() as u64, "别的", Legacy::Guessed),
                None
            );
        }
        // A file in UTF-8 whose text moved tells nothing, and is not read whole.
        let cut = "第一行。\n开头。中间。结尾。";
        std::fs::write(dir.path().join("moved.md"), format!("新的一行。\n{cut}")).unwrap();
        assert!(super::plain_utf8(&dir.path().join("moved.md"), &"。中间".as_bytes()[1..]));
        let moved =
            line_before(dir.path(), "moved.md", cut.find("结尾").unwrap() as u64, "结尾。", Legacy::Guessed);
        assert_eq!(moved, None);
        std::fs::write(dir.path().join("marked.md"), format!("\u{feff}{cut}")).unwrap();
        assert!(!super::plain_utf8(&dir.path().join("marked.md"), b"x"));
        let gbk = encoding_rs::GBK.encode(cut).0;
        assert!(!super::plain_utf8(&dir.path().join("moved.md"), &gbk));
    }

    #[test]
    fn a_reader_decodes_each_file_once_for_all_its_spans() {
        let dir = tempfile::tempdir().unwrap();
        let text = "开头。中间。结尾。\n";
        std::fs::write(dir.path().join("gbk.txt"), encoding_rs::GBK.encode(text).0).unwrap();
        let mut lines = super::LineReader::default();
        let mut before = |span: &str| {
            lines.line_before(dir.path(), "gbk.txt", text.find(span).unwrap() as u64, span, Legacy::Guessed)
        };
        assert_eq!(before("结尾。").as_deref(), Some("开头。中间。"));
        // Gone from the disk since: the text read for the first span answers for the next.
        std::fs::remove_file(dir.path().join("gbk.txt")).unwrap();
        assert_eq!(before("中间。").as_deref(), Some("开头。"));
    }
}
