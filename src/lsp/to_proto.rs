//! Conversions from engine and service results to protocol values: ranges in the client's
//! position encoding, hits as editors show them, hover text, and folder status.

use tower_lsp_server::jsonrpc::{Error, ErrorCode};
use tower_lsp_server::ls_types::{Location, OneOf, Position, Range, SymbolKind, Uri, WorkspaceSymbol};

use super::documents::Encoding;
use super::ext::{self, ExpandedInfo, FolderStatus, HitInfo, IndexingProgress};
use crate::engine::{ChunkRecord, Status};
use crate::search::preview::PreviewLine;
use crate::search::{Expansion, Hit};
use crate::service::{self, FolderState, Passage, SnippetLive};
use crate::wire::{StatusJson, TotalsJson};

/// The range a chunk covers: from its start, `before` its first line's start (the text on
/// that line before it), to the end of its last line.
pub fn chunk_range(chunk: &ChunkRecord, before: &str, encoding: Encoding) -> Range {
    lines_range(&chunk.text, chunk.start_line, chunk.end_line, before, encoding)
}

/// The range of a passage of `text` on 1-based lines `start..=end`, preceded on its first
/// line by `before`.
fn lines_range(text: &str, start: u32, end: u32, before: &str, encoding: Encoding) -> Range {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let last = text.rsplit('\n').next().unwrap_or(text);
    let last = last.strip_suffix('\r').unwrap_or(last);
    let column = encoding.len(before);
    let end_column = if text.contains('\n') { encoding.len(last) } else { column + encoding.len(last) };
    Range {
        start: Position { line: start.saturating_sub(1), character: column },
        end: Position { line: end.saturating_sub(1), character: end_column },
    }
}

/// Where a hit and its expansion start on their first lines: the text before each there
/// (empty for one that starts its line, or whose file could not tell).
#[derive(Debug, Default, Clone)]
pub struct HitStarts {
    pub chunk: String,
    pub expanded: String,
}

fn expanded_info(e: &Expansion, before: &str, encoding: Encoding) -> ExpandedInfo {
    ExpandedInfo {
        range: lines_range(&e.text, e.start_line, e.end_line, before, encoding),
        heading_path: e.heading_path.clone(),
        text: e.text.clone(),
    }
}

/// The separator between the lines of a one-line preview.
const PREVIEW_JOIN: &str = " … ";

/// A hit's preview lines as one line, with the marks' offsets in `encoding`. A line cut
/// short already ends (or the next starts) with an ellipsis, which then separates them.
pub fn preview(lines: &[PreviewLine], encoding: Encoding) -> (String, Vec<[u32; 2]>) {
    let mut text = String::new();
    let mut marks = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            let cut = text.ends_with('…') || line.text.starts_with('…');
            text.push_str(if cut { " " } else { PREVIEW_JOIN });
        }
        let base = encoding.len(&text);
        for &(start, end) in &line.marks {
            marks.push([base + encoding.len(&line.text[..start]), base + encoding.len(&line.text[..end])]);
        }
        text.push_str(&line.text);
    }
    (text, marks)
}

/// A hit as editors show it, at `uri`.
pub fn hit_info(hit: &Hit, uri: Uri, starts: &HitStarts, encoding: Encoding) -> HitInfo {
    let c = &hit.chunk;
    let (preview, preview_marks) = preview(&hit.preview, encoding);
    HitInfo {
        uri,
        range: chunk_range(c, &starts.chunk, encoding),
        path: c.path.clone(),
        title: c.title.clone(),
        heading_path: c.heading_path.clone(),
        context: c.context.clone(),
        score: hit.score,
        preview,
        preview_marks,
        preview_line: hit.preview.first().map_or(c.start_line, |l| l.line).saturating_sub(1),
        metadata: c.metadata.clone(),
        expanded: hit.expanded.as_ref().map(|e| expanded_info(e, &starts.expanded, encoding)),
    }
}

/// Why a hover's chunk may not match what the user sees.
#[derive(Debug, Default, Clone, Copy)]
pub struct Staleness {
    /// The buffer has edits not yet saved.
    pub unsaved: bool,
    /// The file on disk differs from what was indexed.
    pub changed_on_disk: bool,
    /// A reindex of the file is queued.
    pub pending: bool,
    /// Snippets are on for the folder (a chunk without one waits for it).
    pub snippets_on: bool,
}

impl Staleness {
    /// What the service knows about a passage, and whether its buffer has unsaved edits.
    pub fn of(passage: &Passage, unsaved: bool) -> Staleness {
        Staleness {
            unsaved,
            changed_on_disk: passage.changed_on_disk,
            pending: passage.pending,
            snippets_on: passage.snippets_on,
        }
    }
}

/// A Unix time as a UTC date and time ("2026-11-21 14:05 UTC").
fn date(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let (hour, minute) = ((unix_secs % 86_400) / 3600, (unix_secs % 3600) / 60);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

/// The hover text for a chunk: where it sits, the context it was indexed with, and
/// whether it is current.
pub fn hover_markdown(chunk: &ChunkRecord, chunks_in_file: usize, stale: Staleness) -> String {
    let mut out = String::new();
    // A document whose first heading is its title does not name it twice.
    let headings = match chunk.heading_path.split_first() {
        Some((first, rest)) if first.trim() == chunk.title.trim() => rest,
        _ => &chunk.heading_path[..],
    };
    // A title that is only the file's name is given by the path below.
    let place = match (headings.is_empty(), chunk.title_is_file_name()) {
        (true, _) => format!("**{}**", chunk.title),
        (false, true) => format!("**{}**", headings.join(" › ")),
        (false, false) => format!("**{}** · {}", headings.join(" › "), chunk.title),
    };
    out.push_str(&place);
    out.push_str(&format!(
        "\n\n`{}` lines {}–{} · chunk {} of {} · {} tokens\n",
        chunk.path,
        chunk.start_line,
        chunk.end_line,
        chunk.ordinal + 1,
        chunks_in_file,
        chunk.token_count
    ));
    if !chunk.context.is_empty() {
        out.push_str("\nIndexed with the context:\n\n");
        // The lines of a quote run together into one paragraph unless each ends in a hard
        // break: the header's title line and its `Tags:` line stay apart.
        let lines: Vec<&str> = chunk.context.lines().collect();
        out.push_str(&format!("> {}\n", lines.join("  \n> ")));
    }
    match &chunk.snippet {
        Some(s) if !s.text.is_empty() => {
            // A paragraph of its own in the quote.
            if !chunk.context.is_empty() {
                out.push_str(">\n");
            }
            out.push_str(&format!("> {}\n\n_Snippet by {} · {}_\n", s.text, s.model, date(s.created_at)));
        }
        Some(s) => out.push_str(&format!("\nHeader context only: {} gave no usable snippet.\n", s.model)),
        None if stale.snippets_on => out.push_str("\nHeader context only for now: its snippet is queued.\n"),
        None => {}
    }
    if stale.unsaved {
        out.push_str("\n⚠ Stale: the buffer has unsaved changes since this chunk was indexed.\n");
    }
    if stale.changed_on_disk {
        out.push_str("\n⚠ Stale: the file changed on disk since it was indexed.\n");
    }
    if stale.pending {
        out.push_str("\n⏳ A reindex of this file is pending.\n");
    }
    out
}

/// A hit as a workspace symbol: "<heading> — <preview>" in "<path> · <headings above>", as
/// a symbol of code sits in its container; the heading alone when the preview is empty (its
/// lines were shown under a better hit).
pub fn workspace_symbol(h: HitInfo) -> WorkspaceSymbol {
    let (heading, above) = match h.heading_path.split_last() {
        Some((heading, above)) => (heading.clone(), above),
        None => (h.title.clone(), &[][..]),
    };
    WorkspaceSymbol {
        name: match h.preview.is_empty() {
            true => heading,
            false => format!("{heading} — {}", h.preview),
        },
        kind: SymbolKind::STRING,
        tags: None,
        container_name: Some(match above.is_empty() {
            true => h.path,
            false => format!("{} · {}", h.path, above.join(" › ")),
        }),
        location: OneOf::Left(Location { uri: h.uri, range: h.range }),
        data: None,
    }
}

/// One folder's status on the wire.
pub fn folder_status(root: String, state: FolderState, index: Option<&Status>) -> FolderStatus {
    FolderStatus {
        root,
        phase: phase(state.phase),
        indexing: state.progress.map(|(done, total)| IndexingProgress { done, total }),
        pending: state.pending.into_iter().collect(),
        vectors_pending: state.vectors_pending,
        errors: state.errors,
        snippets: state.snippets.as_ref().map(snippet_queue),
        index: index.map(StatusJson::from),
    }
}

fn phase(phase: service::Phase) -> ext::Phase {
    match phase {
        service::Phase::Opening => ext::Phase::Opening,
        service::Phase::Indexing => ext::Phase::Indexing,
        service::Phase::Ready => ext::Phase::Ready,
        service::Phase::ReadOnly => ext::Phase::ReadOnly,
        service::Phase::Failed => ext::Phase::Failed,
    }
}

fn snippet_queue(live: &SnippetLive) -> ext::SnippetQueue {
    let state = match live.state {
        service::SnippetState::Idle => ext::SnippetState::Idle,
        service::SnippetState::Running => ext::SnippetState::Running,
        service::SnippetState::Paused => ext::SnippetState::Paused,
        service::SnippetState::Stopped => ext::SnippetState::Stopped,
    };
    ext::SnippetQueue {
        state,
        reason: live.reason.clone(),
        done: live.done,
        total: live.total,
        totals: TotalsJson::from(&live.totals),
        retry_at: live.retry_at,
    }
}

/// An error of ours, not the client's.
pub fn internal(e: impl std::fmt::Display) -> Error {
    Error { code: ErrorCode::InternalError, message: e.to_string().into(), data: None }
}

/// A request that cannot be carried out in the server's state (a read-only index).
pub fn invalid_request(message: String) -> Error {
    Error { code: ErrorCode::InvalidRequest, message: message.into(), data: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str, start: u32, end: u32) -> ChunkRecord {
        ChunkRecord {
            id: 1,
            path: "ops/backup.md".into(),
            ordinal: 2,
            start_line: start,
            end_line: end,
            start_byte: 0,
            end_byte: text.len() as u64,
            title: "Backup policy".into(),
            heading_path: vec!["Backups".into(), "Retention".into()],
            text: text.into(),
            context: "Document: Backup policy > Backups > Retention".into(),
            snippet: None,
            snippet_key: 0,
            token_count: 12,
            content_hash: 0,
            embed_hash: 0,
            metadata: Default::default(),
        }
    }

    #[test]
    fn a_chunk_range_ends_at_its_last_line_in_the_client_encoding() {
        let r = record("## Retention\r\n\r\nKept for thirty days — 😀.\r\n", 10, 12);
        let range = chunk_range(&r, "", Encoding::Utf16);
        assert_eq!(range.start, Position { line: 9, character: 0 });
        assert_eq!(range.end, Position { line: 11, character: 26 });
        assert_eq!(chunk_range(&r, "", Encoding::Utf8).end.character, 30);
    }

    #[test]
    fn a_chunk_cut_inside_a_line_starts_where_it_was_cut() {
        // One line, cut after its first sentence: the chunk is the second one.
        let r = record("第二句。", 4, 4);
        let range = chunk_range(&r, "第一句。", Encoding::Utf16);
        assert_eq!(range.start, Position { line: 3, character: 4 });
        assert_eq!(range.end, Position { line: 3, character: 8 });
        let range = chunk_range(&r, "第一句。", Encoding::Utf8);
        assert_eq!((range.start.character, range.end.character), (12, 24));
        // Over several lines, only the first line's start moves.
        let r = record("tail of a line.\nnext line", 4, 5);
        let range = chunk_range(&r, "Head. ", Encoding::Utf16);
        assert_eq!(range.start, Position { line: 3, character: 6 });
        assert_eq!(range.end, Position { line: 4, character: 9 });
    }

    #[test]
    fn preview_lines_join_with_their_marks_in_the_client_encoding() {
        let lines = [
            PreviewLine { line: 3, text: "😀 kept daily".into(), marks: vec![(5, 9)] },
            PreviewLine { line: 7, text: "pruned".into(), marks: vec![(0, 6)] },
        ];
        let (text, marks) = preview(&lines, Encoding::Utf16);
        assert_eq!(text, "😀 kept daily … pruned");
        assert_eq!(marks, [[3, 7], [16, 22]]);
        let (_, marks) = preview(&lines, Encoding::Utf8);
        assert_eq!(marks, [[5, 9], [20, 26]]);
        // Lines cut short carry their own ellipses: no third one between them.
        let cut = [
            PreviewLine { line: 3, text: "kept daily, and…".into(), marks: vec![(0, 4)] },
            PreviewLine { line: 7, text: "…pruned".into(), marks: vec![(3, 9)] },
        ];
        let (text, marks) = preview(&cut, Encoding::Utf16);
        assert_eq!(text, "kept daily, and… …pruned");
        assert_eq!(marks, [[0, 4], [18, 24]]);
        let (text, _) = preview(&cut[1..], Encoding::Utf16);
        assert_eq!(
            preview(&[cut[1].clone(), lines[1].clone()], Encoding::Utf16).0,
            format!("{text} … pruned")
        );
    }

    #[test]
    fn a_symbol_is_named_by_its_heading_and_preview_or_its_heading_alone() {
        let r = record("## Retention\n\nSnapshots are kept.\n", 10, 12);
        let uri: Uri = "file:///w/ops/backup.md".parse().unwrap();
        let mut hit = Hit {
            chunk: r,
            score: 0.5,
            bm25_rank: None,
            vector_rank: None,
            bm25_score: None,
            vector_similarity: None,
            expanded: None,
            preview: vec![PreviewLine { line: 12, text: "Snapshots are kept.".into(), marks: vec![] }],
        };
        let symbol = workspace_symbol(hit_info(&hit, uri.clone(), &HitStarts::default(), Encoding::Utf16));
        assert_eq!(symbol.name, "Retention — Snapshots are kept.");
        assert_eq!(symbol.container_name.as_deref(), Some("ops/backup.md · Backups"));
        // Its lines were shown under a better hit of the file.
        hit.preview.clear();
        assert_eq!(
            workspace_symbol(hit_info(&hit, uri, &HitStarts::default(), Encoding::Utf16)).name,
            "Retention"
        );
    }

    #[test]
    fn hover_names_the_place_the_context_and_staleness() {
        let r = record("## Retention\n\nSnapshots.\n", 10, 12);
        let md = hover_markdown(&r, 4, Staleness { unsaved: true, pending: true, ..Staleness::default() });
        assert!(md.starts_with("**Backups › Retention** · Backup policy"), "{md}");
        assert!(md.contains("chunk 3 of 4 · 12 tokens"), "{md}");
        assert!(md.contains("> Document: Backup policy > Backups > Retention"), "{md}");
        assert!(md.contains("unsaved changes") && md.contains("pending"), "{md}");
        assert!(!md.contains("changed on disk"), "{md}");
    }

    #[test]
    fn hover_keeps_each_line_of_the_context_and_the_snippet_apart() {
        let mut r = record("## Retention\n\nSnapshots.\n", 10, 12);
        r.context = "Document: Backup policy > Backups > Retention\nTags: backup, ops".into();
        // The snippet as the index stores it.
        r.snippet = serde_json::from_str(
            r#"{"text": "How long snapshots are kept.", "model": "openai/small@127.0.0.1", "created_at": 0}"#,
        )
        .ok();
        assert!(r.snippet.is_some());
        let md = hover_markdown(&r, 4, Staleness::default());
        let quote = "> Document: Backup policy > Backups > Retention  \n> Tags: backup, ops\n>\n> How long snapshots are kept.\n\n";
        assert!(md.contains(quote), "{md}");
    }

    #[test]
    fn hover_does_not_repeat_a_title_that_is_the_first_heading() {
        let mut r = record("# Readline\n\nLines.\n", 1, 3);
        r.title = "Readline".into();
        r.heading_path = vec!["Readline".into()];
        assert!(hover_markdown(&r, 1, Staleness::default()).starts_with("**Readline**\n"));
        r.heading_path.push("Class: Interface".into());
        assert!(hover_markdown(&r, 1, Staleness::default()).starts_with("**Class: Interface** · Readline\n"));
        // Nor one that is only the file's name, which the next line gives.
        r.title = "backup.md".into();
        let md = hover_markdown(&r, 1, Staleness::default());
        assert!(md.starts_with("**Readline › Class: Interface**\n\n`ops/backup.md` lines"), "{md}");
        // Nor the file's name without its extension, as a note without a title is named.
        r.title = "backup".into();
        let md = hover_markdown(&r, 1, Staleness::default());
        assert!(md.starts_with("**Readline › Class: Interface**\n\n`ops/backup.md` lines"), "{md}");
        r.heading_path.clear();
        assert!(hover_markdown(&r, 1, Staleness::default()).starts_with("**backup**\n"));
    }
}
