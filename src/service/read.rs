//! What the language server reads from its folders, done here so that its handlers only
//! convert: a search across folders ranked as one, the passage at a line with what makes it
//! stale, passages related to it, and each folder's status. Every function here may read
//! the index or the disk; callers run them off the async threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Folder, FolderState};
use crate::engine::{ChunkRecord, EngineError, Freshness, Status, View};
use crate::search::{self, Hit, SearchOptions, SearchRequest};
use crate::workspace;

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

/// The text of the file at `path` as an editor shows it (invalid UTF-8 replaced). A folder,
/// a named pipe or a device is an error, found without waiting on it.
pub fn saved_text(path: &Path) -> std::io::Result<String> {
    let bytes = workspace::read_regular(path)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
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
    /// The chunk holding 1-based `line` of the workspace-relative file `rel` (or, between
    /// chunks, the next one), with its staleness; `None` when the file is not indexed.
    pub fn passage_at(&self, rel: &str, line: u32) -> Option<Passage> {
        let view = self.view()?;
        let chunk = chunk_at(&view, rel, line)?;
        let state = self.state();
        Some(Passage {
            chunks_in_file: view.chunk_count(rel).max(1),
            changed_on_disk: view.freshness(rel) != Freshness::Current,
            pending: state.pending.contains(rel),
            snippets_on: state.snippets.is_some(),
            chunk,
        })
    }

    /// The passages most related to the one at `line` of `rel`. `None` when the file is not
    /// indexed (yet); no hits, with `indexing`, before the index is open.
    pub fn related(
        &self,
        rel: &str,
        line: u32,
        limit: Option<usize>,
    ) -> Result<Option<Related>, EngineError> {
        let indexing = self.state().indexing();
        let Some(view) = self.view() else { return Ok(Some(Related { indexing: true, hits: Vec::new() })) };
        let Some(chunk) = chunk_at(&view, rel, line) else { return Ok(None) };
        let limit = limit.unwrap_or(view.config().search.limit).max(1);
        match view.similar(&chunk, limit) {
            Ok(hits) => Ok(Some(Related { indexing, hits })),
            Err(e) => Err(self.damaged(&e).unwrap_or(e)),
        }
    }

    /// The folder's state, and its index's status with the cost of the snippets still to
    /// write (`None` until the index is open).
    pub fn status(&self) -> (FolderState, Option<Status>) {
        let index = self.view().map(|view| view.status_with_estimate().unwrap_or_else(|_| view.status()));
        (self.state(), index)
    }
}

/// The chunk holding a 1-based line (or the next one after it).
fn chunk_at(view: &View, rel: &str, line: u32) -> Option<ChunkRecord> {
    view.chunks_at(rel, Some(line)).ok()?.into_iter().next()
}
