//! What each tool does, on an index just brought up to date: its arguments checked (every
//! size bounded), one read of the view, the answer converted to its shape and fitted to the
//! token budget. A mistake in the arguments is a [`ToolError`] whose message tells the model
//! how to put it right.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::RangeInclusive;

use super::budget::{self, Fitted};
use super::folder::Fresh;
use super::shapes::{
    FolderCount, LineRange, MatchedLine, Passage, PassageRef, Pending, SearchArgs, SearchResult, ShowArgs,
    ShowResult, ShownChunk, SimilarArgs, SimilarResult, SkippedFile, StaleFiles, StatusResult,
};
use crate::engine::{ChunkRecord, EngineError, Freshness, LookupError, View};
use crate::search::preview::PreviewLine;
use crate::search::{Hit, SearchOptions, SearchRequest, filter};

/// Passages a search or similar returns at most.
const MAX_K: u32 = 100;
/// The token budget of an answer when the caller gives none, and its bounds.
const DEFAULT_MAX_TOKENS: u32 = 4_000;
const MAX_TOKENS: RangeInclusive<u32> = 100..=50_000;
/// Longest query, in bytes: a paragraph pasted to find its like is welcome, a file is not.
const MAX_QUERY_BYTES: usize = 4_096;
/// Path filters in one search.
const MAX_PATHS: usize = 64;
/// Paths listed per kind of staleness, and folders listed, in a status.
const MAX_LISTED: usize = 25;
const MAX_FOLDERS: usize = 100;

/// A tool call that could not be answered, with a message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub message: String,
    /// The index's files were found damaged: the engine must open it again.
    pub damaged: bool,
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError { message: message.into(), damaged: false }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<EngineError> for ToolError {
    fn from(e: EngineError) -> Self {
        if e.is_damage() {
            return ToolError {
                message: format!(
                    "the index's files were found damaged ({e}); the next call rebuilds the index from the files"
                ),
                damaged: true,
            };
        }
        ToolError::new(e.to_string())
    }
}

fn error<T>(message: impl Into<String>) -> Result<T, ToolError> {
    Err(ToolError::new(message))
}

/// `search`: passages that answer a query.
pub fn search(fresh: &Fresh, args: SearchArgs) -> Result<SearchResult, ToolError> {
    let view = &fresh.view;
    let query = args.query.trim();
    if query.is_empty() {
        return error("`query` is empty: say what to look for, in plain words");
    }
    if query.len() > MAX_QUERY_BYTES {
        return error(format!("`query` is {} bytes long; at most {MAX_QUERY_BYTES} are read", query.len()));
    }
    let k = bounded("k", args.k, 1..=MAX_K, default_k(view))?;
    let max_tokens = bounded("max_tokens", args.max_tokens, MAX_TOKENS, DEFAULT_MAX_TOKENS)?;
    let paths = path_filter(view, args.paths.as_deref().unwrap_or_default())?;
    let filters = filter::parse_all(args.filters.as_deref().unwrap_or_default())
        .or_else(|e| error(format!("`where`: {e}")))?;
    let options = SearchOptions {
        limit: Some(k as usize),
        mode: args.mode.map(Into::into),
        expand: args.expand.map(Into::into),
        paths,
        filters,
    };
    let hits = view.search(&SearchRequest::with_defaults(query, options, &view.config().search))?;
    let mut notes = vec![fresh.notice.clone()];
    if hits.is_empty() {
        notes.push(Some(if view.indexed_paths().next().is_none() {
            "the index holds no files: the workspace has no markdown or text file that its settings select"
                .to_string()
        } else if !args.paths.as_deref().unwrap_or_default().is_empty()
            || !args.filters.as_deref().unwrap_or_default().is_empty()
        {
            "nothing matched within `paths` and `where`: try without them, or with other words".to_string()
        } else {
            "nothing matched: try other words, or mode `vector` to match by meaning alone".to_string()
        }));
    }
    let results = passages(&hits);
    let envelope = budget::tokens_of(&SearchResult {
        results: Vec::new(),
        omitted: results.len(),
        note: join(notes.clone()),
    });
    let fitted = budget::fit(results, max_tokens as usize, envelope);
    notes.push(fitted.note(max_tokens as usize));
    Ok(SearchResult { results: fitted.kept, omitted: fitted.omitted, note: join(notes) })
}

/// `show`: the chunks of a file, those over a range of its lines, or the one at a line.
pub fn show(fresh: &Fresh, args: ShowArgs) -> Result<ShowResult, ToolError> {
    let view = &fresh.view;
    let max_tokens = bounded("max_tokens", args.max_tokens, MAX_TOKENS, DEFAULT_MAX_TOKENS)?;
    let (rel, line) = target(view, &args.path, args.line)?;
    let records = match args.end_line {
        None => records_at(view, &rel, line)?,
        Some(end_line) => records_over(view, &rel, line.unwrap_or(1), end_line)?,
    };
    let title = records.first().map(|r| r.title.clone()).unwrap_or_default();
    let last_line = view.passages(&rel, None)?.last().map_or(0, |r| r.end_line);
    let chunks: Vec<ShownChunk> = records.iter().map(shown_chunk).collect();
    let freshness = view.freshness(&rel);
    let mut shown = ShowResult {
        passages_in_file: view.chunk_count(&rel),
        changed_on_disk: freshness == Freshness::Changed || freshness == Freshness::Removed,
        path: rel,
        title,
        // The longest note the answer may get, for the budget to count.
        note: join(vec![fresh.notice.clone(), Some(read_on(last_line, last_line))]),
        omitted: chunks.len(),
        chunks: Vec::new(),
    };
    let fitted = budget::fit(chunks, max_tokens as usize, budget::tokens_of(&shown));
    let next_line = match fitted.kept.last() {
        Some(last) if fitted.cut => Some(last.end_line + 1),
        _ => records.get(fitted.kept.len()).map(|r| r.start_line),
    };
    shown.note = join(vec![
        fresh.notice.clone(),
        fitted.note(max_tokens as usize),
        next_line.map(|next| read_on(next, last_line)),
    ]);
    shown.omitted = fitted.omitted;
    shown.chunks = fitted.kept;
    Ok(shown)
}

/// How to read on, from `next` to the file's `last_line`.
fn read_on(next: u32, last_line: u32) -> String {
    format!("the file goes on: read on with show, `line` {next} and `end_line` {last_line}")
}

/// `similar`: the passages most related to the one at a line.
pub fn similar(fresh: &Fresh, args: SimilarArgs) -> Result<SimilarResult, ToolError> {
    let view = &fresh.view;
    let k = bounded("k", args.k, 1..=MAX_K, default_k(view))?;
    let max_tokens = bounded("max_tokens", args.max_tokens, MAX_TOKENS, DEFAULT_MAX_TOKENS)?;
    let (rel, line) = target(view, &args.path, args.line)?;
    let Some(of) = records_at(view, &rel, Some(line.unwrap_or(1)))?.into_iter().next() else {
        return error(format!("`{rel}` has no passages: it is empty"));
    };
    let hits = view.similar(&of, k as usize)?;
    let results = passages(&hits);
    let mut similar = SimilarResult {
        of: PassageRef {
            path: of.path.clone(),
            start_line: of.start_line,
            end_line: of.end_line,
            heading_path: of.heading_path.clone(),
        },
        note: fresh.notice.clone(),
        omitted: results.len(),
        results: Vec::new(),
    };
    let fitted: Fitted<Passage> = budget::fit(results, max_tokens as usize, budget::tokens_of(&similar));
    similar.note = join(vec![fresh.notice.clone(), fitted.note(max_tokens as usize)]);
    similar.omitted = fitted.omitted;
    similar.results = fitted.kept;
    Ok(similar)
}

/// `status`: what the index holds, what is stale and what is pending.
pub fn status(fresh: &Fresh) -> StatusResult {
    let view = &fresh.view;
    let status = view.status();
    let stale = view.stale_files();
    let pending = Pending {
        vectors: status.chunks.saturating_sub(status.vectors),
        snippets: status.snippets.as_ref().map(|s| s.pending),
    };
    let mut folders: BTreeMap<&str, usize> = BTreeMap::new();
    for path in view.indexed_paths() {
        *folders.entry(path.split_once('/').map_or(".", |(top, _)| top)).or_default() += 1;
    }
    let listed = |paths: &[String]| paths.iter().take(MAX_LISTED).cloned().collect::<Vec<_>>();
    StatusResult {
        workspace: status.workspace.clone(),
        writer: fresh.writer,
        fresh: stale.is_empty() && pending.vectors == 0,
        files: status.files,
        chunks: status.chunks,
        folders: folders
            .into_iter()
            .take(MAX_FOLDERS)
            .map(|(path, files)| FolderCount { path: path.to_string(), files })
            .collect(),
        last_commit: status.last_commit,
        stale: StaleFiles {
            count: stale.changed.len() + stale.unindexed.len() + stale.removed.len(),
            changed: listed(&stale.changed),
            unindexed: listed(&stale.unindexed),
            removed: listed(&stale.removed),
        },
        pending,
        skipped: status
            .skipped
            .iter()
            .map(|s| SkippedFile { path: s.path.clone(), reason: s.reason.to_string() })
            .collect(),
        model: format!("{}/{}", status.embedder.provider, status.embedder.model),
        index_dir: status.index_dir.clone(),
        problems: status.config_problems.iter().chain(&status.notes).cloned().collect(),
        note: fresh.notice.clone(),
    }
}

/// The configured number of hits, within the bounds of `k`.
fn default_k(view: &View) -> u32 {
    u32::try_from(view.config().search.limit).unwrap_or(MAX_K)
}

/// A size-like argument within its bounds, or its default.
fn bounded(
    name: &str,
    value: Option<u32>,
    range: RangeInclusive<u32>,
    default: u32,
) -> Result<u32, ToolError> {
    match value {
        None => Ok(default.clamp(*range.start(), *range.end())),
        Some(v) if range.contains(&v) => Ok(v),
        Some(v) => error(format!("`{name}` must be between {} and {} (got {v})", range.start(), range.end())),
    }
}

/// The path filter of a search, workspace-relative; each prefix must hold an indexed file, so
/// that a misspelt folder is an error rather than an empty answer.
fn path_filter(view: &View, paths: &[String]) -> Result<Vec<String>, ToolError> {
    if paths.len() > MAX_PATHS {
        return error(format!("`paths` holds {} entries; at most {MAX_PATHS} are read", paths.len()));
    }
    paths.iter().map(|path| view.indexed_prefix(path).or_else(|e| error(format!("`paths`: {e}")))).collect()
}

/// A file argument (with an optional `:LINE` suffix when `line` is not given), checked to be
/// an indexed file: the workspace-relative path and the line.
fn target(view: &View, path: &str, line: Option<u32>) -> Result<(String, Option<u32>), ToolError> {
    let path = path.trim();
    let (file, line) = match (line, path.rsplit_once(':')) {
        (None, Some((file, n))) if !file.is_empty() && n.parse::<u32>().is_ok() => (file, n.parse().ok()),
        _ => (path, line),
    };
    if line == Some(0) {
        return error(LookupError::LineZero.to_string());
    }
    if file.is_empty() {
        return error("`path` is empty: name a file, e.g. one from a search result");
    }
    Ok((view.indexed_file(file).map_err(|e| ToolError::new(e.to_string()))?, line))
}

/// The chunks of an indexed file, or the one holding `line`.
fn records_at(view: &View, rel: &str, line: Option<u32>) -> Result<Vec<ChunkRecord>, ToolError> {
    Ok(view.passages(rel, line)?)
}

/// The chunks of an indexed file that hold any of the lines `line` to `end_line`; the one
/// after them when the lines fall between two chunks.
fn records_over(view: &View, rel: &str, line: u32, end_line: u32) -> Result<Vec<ChunkRecord>, ToolError> {
    if end_line < line {
        return error(format!("`end_line` {end_line} comes before `line` {line}"));
    }
    let first = records_at(view, rel, Some(line))?;
    let over: Vec<ChunkRecord> = records_at(view, rel, None)?
        .into_iter()
        .filter(|r| r.end_line >= line && r.start_line <= end_line)
        .collect();
    Ok(if over.is_empty() { first } else { over })
}

/// Notes joined into one, or none.
fn join(notes: Vec<Option<String>>) -> Option<String> {
    let notes: Vec<String> = notes.into_iter().flatten().collect();
    (!notes.is_empty()).then(|| notes.join(". "))
}

/// Hits as passages, best first, without repeats. Split sections overlap by a few tokens,
/// so two chunks of a file may share lines: a passage leaves out the text of better ones of
/// its file, and one that holds nothing else is left out. A document's front matter comes
/// with its first passage only, and without the title the passage gives already.
fn passages(hits: &[Hit]) -> Vec<Passage> {
    let mut given: Vec<(&str, u64, u64)> = Vec::new();
    let mut out = Vec::with_capacity(hits.len());
    for hit in hits {
        let mut p = passage(hit);
        let c = &hit.chunk;
        // Widened passages never overlap: the search joins them.
        if hit.expanded.is_none() {
            let earlier: Vec<(u64, u64)> =
                given.iter().filter(|(path, ..)| *path == c.path).map(|&(_, a, b)| (a, b)).collect();
            if !without_repeats(&mut p, c.start_byte, c.end_byte, &earlier) {
                continue;
            }
        }
        if given.iter().any(|(path, ..)| *path == c.path) {
            p.metadata.clear();
        } else if p.metadata.get("title").is_some_and(|t| *t == [p.title.as_str()]) {
            p.metadata.remove("title");
        }
        given.push((&c.path, c.start_byte, c.end_byte));
        out.push(p);
    }
    out
}

/// Leaves out of `p` (the file's bytes `start..end`) the bytes it shares with the `earlier`
/// ranges at its start or its end, with the lines they cover; false when nothing is left.
fn without_repeats(p: &mut Passage, mut start: u64, mut end: u64, earlier: &[(u64, u64)]) -> bool {
    for &(a, b) in earlier {
        if a >= end || b <= start {
            continue;
        }
        if a <= start && b >= end {
            return false;
        }
        if a <= start {
            // Its head is repeated: it starts after the earlier passage's end.
            let mut cut = ((b - start) as usize).min(p.text.len());
            while !p.text.is_char_boundary(cut) {
                cut += 1;
            }
            let rest = p.text[cut..].trim_start_matches(['\r', '\n']);
            let dropped = p.text.len() - rest.len();
            p.start_line += u32::try_from(p.text[..dropped].matches('\n').count()).unwrap_or(0);
            start += dropped as u64;
            p.text = rest.to_string();
        } else if b >= end {
            // Its tail is repeated: it ends where the earlier passage starts.
            let mut cut = ((a - start) as usize).min(p.text.len());
            while !p.text.is_char_boundary(cut) {
                cut -= 1;
            }
            let kept = p.text[..cut].trim_end();
            p.end_line = p.start_line + u32::try_from(kept.matches('\n').count()).unwrap_or(0);
            end = start + kept.len() as u64;
            p.text = kept.to_string();
        }
    }
    let (first, last) = (p.start_line, p.end_line);
    p.matched_lines.retain(|m| (first..=last).contains(&m.line));
    !p.text.trim().is_empty()
}

/// A hit as a passage: the widened passage when the search expanded it.
fn passage(hit: &Hit) -> Passage {
    let c = &hit.chunk;
    let snippet = c.snippet.as_ref().map(|s| s.text.clone()).filter(|t| !t.is_empty());
    // Three decimals tell passages apart; more would only cost tokens.
    let score = (f64::from(hit.score) * 1000.0).round() / 1000.0;
    let matched_lines = hit.preview.iter().map(matched_line).collect();
    match &hit.expanded {
        Some(e) => Passage {
            path: c.path.clone(),
            start_line: e.start_line,
            end_line: e.end_line,
            title: c.title.clone(),
            heading_path: e.heading_path.clone(),
            score,
            text: e.text.clone(),
            truncated: false,
            best_match: Some(LineRange { start_line: c.start_line, end_line: c.end_line }),
            snippet,
            matched_lines,
            metadata: c.metadata.clone(),
        },
        None => Passage {
            path: c.path.clone(),
            start_line: c.start_line,
            end_line: c.end_line,
            title: c.title.clone(),
            heading_path: c.heading_path.clone(),
            score,
            text: c.text.clone(),
            truncated: false,
            best_match: None,
            snippet,
            matched_lines,
            metadata: c.metadata.clone(),
        },
    }
}

/// A preview line with its marks in markdown bold, which models read as emphasis.
fn matched_line(p: &PreviewLine) -> MatchedLine {
    MatchedLine { line: p.line, text: p.marked("**", "**") }
}

fn shown_chunk(c: &ChunkRecord) -> ShownChunk {
    ShownChunk {
        start_line: c.start_line,
        end_line: c.end_line,
        heading_path: c.heading_path.clone(),
        context: c.context.clone(),
        snippet: c.snippet.as_ref().map(|s| s.text.clone()).filter(|t| !t.is_empty()),
        token_count: c.token_count,
        text: c.text.clone(),
        truncated: false,
    }
}

budget::cut_by_fields!(Passage, ShownChunk);
