//! The request handlers. Each converts its parameters, makes one call into the service on the
//! blocking pool (through [`blocking`]: reads touch the index and the disk), and converts the
//! answer back. None changes shared state; those that read what notifications write (open
//! buffers, folders) first wait for the events queued before them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use tokio::sync::oneshot;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;

use super::documents::{Encoding, offset_of};
use super::ext::{
    FolderReport, ReindexAnswer, ReindexParams, SearchAnswer, SearchParams, SimilarParams, StatusAnswer,
};
use super::from_proto::named_path;
use super::server::Backend;
use super::to_proto::{self, HitStarts, Staleness, internal, invalid_request};
use crate::search::{Expand, Hit, MAX_LIMIT, SearchOptions, filter};
use crate::service::{self, Folder, Job, LineReader};
use crate::wire::ReportJson;

/// Hits returned to a workspace-symbol request.
const SYMBOL_LIMIT: usize = 30;

/// Runs a read off the async threads, so that index and disk work never holds up the
/// protocol.
pub async fn blocking<T: Send + 'static>(read: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(read).await.map_err(internal)?
}

impl Backend {
    pub(super) async fn handle_search(&self, params: SearchParams) -> Result<SearchAnswer> {
        if params.query.trim().is_empty() {
            return Err(Error::invalid_params("`query` is empty"));
        }
        check_limit(params.limit)?;
        let filters =
            filter::parse_all(&params.filters).map_err(|e| Error::invalid_params(format!("`where`: {e}")))?;
        // Folders are set up by `initialized`, which may still be queued.
        self.barrier().await;
        let (folders, encoding) = (self.state.folders(), self.state.encoding());
        let options = SearchOptions {
            limit: params.limit,
            mode: params.mode,
            expand: params.expand,
            paths: params.paths,
            filters,
        };
        let (found, starts) = blocking(move || {
            let found = service::search(&folders, &params.query, &options).map_err(internal)?;
            let mut lines = LineReader::default();
            let starts = found
                .hits
                .iter()
                .map(|(root, hit)| {
                    let folder = folders.iter().find(|f| f.root == *root);
                    folder.map(|f| starts_of(hit, f, &mut lines)).unwrap_or_default()
                })
                .collect::<Vec<_>>();
            Ok((found, starts))
        })
        .await?;
        let hits = found
            .hits
            .iter()
            .zip(&starts)
            .filter_map(|((root, hit), at)| hit_info(hit, root, at, encoding))
            .collect();
        Ok(SearchAnswer { indexing: found.indexing, hits })
    }

    pub(super) async fn handle_similar(&self, params: SimilarParams) -> Result<SearchAnswer> {
        check_limit(params.limit)?;
        self.barrier().await;
        let (folder, path) = self.file_in_workspace(&params.uri)?;
        let text = self.document_text(&params.uri, &path, &folder).await?.map_err(Error::invalid_params)?;
        let byte = check_position(&text, params.position, self.state.encoding())?;
        let rel = folder.relative(&path).unwrap_or_default();
        let (line, encoding, root) = (params.position.line + 1, self.state.encoding(), folder.root.clone());
        let (related, starts) = blocking(move || {
            let related = folder.related(&rel, line, byte, params.limit).map_err(internal)?;
            let mut lines = LineReader::default();
            let starts = related
                .iter()
                .flat_map(|r| &r.hits)
                .map(|hit| starts_of(hit, &folder, &mut lines))
                .collect::<Vec<_>>();
            Ok((related, starts))
        })
        .await?;
        let related = related
            .ok_or_else(|| Error::invalid_params(format!("{} is not indexed (yet)", path.display())))?;
        let hits: Vec<_> =
            related.hits.iter().zip(&starts).filter_map(|(h, at)| hit_info(h, &root, at, encoding)).collect();
        Ok(SearchAnswer { indexing: related.indexing, hits })
    }

    pub(super) async fn handle_reindex(&self, params: ReindexParams) -> Result<ReindexAnswer> {
        self.barrier().await;
        if let Some(uri) = params.uri {
            let (folder, path) = self.file_in_workspace(&uri)?;
            let (tx, rx) = oneshot::channel();
            folder.update(vec![path.clone()], Some(tx));
            let report = rx.await.map_err(internal)?.map_err(invalid_request)?;
            return Ok(ReindexAnswer::File {
                path: folder.relative(&path),
                report: ReportJson::from(&report),
            });
        }
        let mut folders = Vec::new();
        for folder in self.state.folders() {
            let (tx, rx) = oneshot::channel();
            // A full reindex also starts a new snippet budget period.
            folder.send(Job::NewSnippetPeriod);
            folder.send(Job::Reconcile { reply: Some(tx) });
            let report = rx.await.map_err(internal)?.map_err(invalid_request)?;
            folders.push(FolderReport { root: folder.root.display().to_string(), report: (&report).into() });
        }
        Ok(ReindexAnswer::Folders { folders })
    }

    pub(super) async fn handle_status(&self) -> Result<StatusAnswer> {
        self.barrier().await;
        let folders = self.state.folders();
        let folders = blocking(move || {
            let status = |f: &Arc<Folder>| {
                let (state, index) = f.status();
                to_proto::folder_status(f.root.display().to_string(), state, index.as_ref())
            };
            Ok(folders.iter().map(status).collect())
        })
        .await?;
        Ok(StatusAnswer { folders })
    }

    pub(super) async fn handle_hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.barrier().await;
        let p = params.text_document_position_params;
        // Hovering anywhere outside indexed files is normal: no answer, no error.
        let Ok((folder, path)) = self.file_in_workspace(&p.text_document.uri) else { return Ok(None) };
        let buffer = self.buffer(&p.text_document.uri);
        let saved = self.saved_file(&path, &folder).await?;
        // A file that is gone, unreadable or not a file at all has nothing indexed to show.
        let text = match (&buffer, &saved) {
            (Some(text), _) | (None, Ok(text)) => text,
            (None, Err(e)) => {
                tracing::debug!("hover: {e}");
                return Ok(None);
            }
        };
        let byte = check_position(text, p.position, self.state.encoding())?;
        // Edits undone back to the saved text leave nothing unsaved.
        let unsaved = buffer.as_ref().is_some_and(|b| saved.as_ref() != Ok(b));
        let Some(rel) = folder.relative(&path) else { return Ok(None) };
        let line = p.position.line + 1;
        let Some((passage, before)) = blocking(move || {
            Ok(folder.passage_at(&rel, line, byte).map(|p| {
                let before = service::line_before(
                    &folder.root,
                    &rel,
                    p.chunk.start_byte,
                    &p.chunk.text,
                    folder.encoding(),
                );
                (p, before.unwrap_or_default())
            }))
        })
        .await?
        else {
            return Ok(None);
        };
        let stale = Staleness::of(&passage, unsaved);
        let markdown = to_proto::hover_markdown(&passage.chunk, passage.chunks_in_file, stale);
        Ok(Some(Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: markdown }),
            range: Some(to_proto::chunk_range(&passage.chunk, &before, self.state.encoding())),
        }))
    }

    pub(super) async fn handle_symbol(
        &self,
        params: WorkspaceSymbolParams,
    ) -> Result<Option<WorkspaceSymbolResponse>> {
        if params.query.trim().is_empty() {
            return Ok(Some(WorkspaceSymbolResponse::Nested(Vec::new())));
        }
        let search = SearchParams {
            query: params.query,
            limit: Some(SYMBOL_LIMIT),
            mode: None,
            expand: Some(Expand::None),
            paths: Vec::new(),
            filters: Vec::new(),
        };
        let hits = self.handle_search(search).await?.hits;
        Ok(Some(WorkspaceSymbolResponse::Nested(hits.into_iter().map(to_proto::workspace_symbol).collect())))
    }

    /// The workspace folder and path of a `file:` URI inside the workspace.
    fn file_in_workspace(&self, uri: &Uri) -> Result<(Arc<Folder>, PathBuf)> {
        let named = named_path(uri)?;
        self.state.folder_of_file(&named).ok_or_else(|| {
            Error::invalid_params(format!("{} is outside the workspace folders", uri.as_str()))
        })
    }

    /// The text of `uri` as the user sees it: its open buffer, else the file on disk; the
    /// inner error says why the file cannot be read.
    async fn document_text(
        &self,
        uri: &Uri,
        path: &Path,
        folder: &Folder,
    ) -> Result<std::result::Result<String, String>> {
        match self.buffer(uri) {
            Some(text) => Ok(Ok(text)),
            None => self.saved_file(path, folder).await,
        }
    }

    /// The text of the open buffer of `uri`.
    fn buffer(&self, uri: &Uri) -> Option<String> {
        let docs = self.state.documents.read().unwrap_or_else(PoisonError::into_inner);
        docs.get(uri).map(|doc| doc.text.clone())
    }

    /// The text of the file at `path` of `folder` on disk, decoded as the folder's index
    /// decodes it; the inner error says why it cannot be read.
    async fn saved_file(&self, path: &Path, folder: &Folder) -> Result<std::result::Result<String, String>> {
        let (path, encoding) = (path.to_path_buf(), folder.encoding());
        blocking(move || {
            Ok(service::saved_text(&path, encoding)
                .map_err(|e| format!("cannot read {}: {e}", path.display())))
        })
        .await
    }
}

/// The byte offset of `position` in `text`; an error when it is past the end.
fn check_position(text: &str, position: Position, encoding: Encoding) -> Result<u64> {
    offset_of(text, position, encoding).map(|o| o as u64).map_err(|e| Error::invalid_params(e.to_string()))
}

/// A `limit` of hits within the bounds of one search.
fn check_limit(limit: Option<usize>) -> Result<()> {
    match limit {
        Some(n) if !(1..=MAX_LIMIT).contains(&n) => {
            Err(Error::invalid_params(format!("`limit` must be between 1 and {MAX_LIMIT}, got {n}")))
        }
        _ => Ok(()),
    }
}

fn hit_info(hit: &Hit, root: &Path, starts: &HitStarts, encoding: Encoding) -> Option<super::ext::HitInfo> {
    let uri = Uri::from_file_path(root.join(&hit.chunk.path))?;
    Some(to_proto::hit_info(hit, uri, starts, encoding))
}

/// Where a hit and its expansion start on their lines, read from the hit's file in
/// `folder` (decoded as its index decodes it) through the request's `lines`.
fn starts_of(hit: &Hit, folder: &Folder, lines: &mut LineReader) -> HitStarts {
    let (c, encoding) = (&hit.chunk, folder.encoding());
    let mut before = |start_byte, text| {
        lines.line_before(&folder.root, &c.path, start_byte, text, encoding).unwrap_or_default()
    };
    HitStarts {
        chunk: before(c.start_byte, &c.text),
        expanded: hit.expanded.as_ref().map(|e| before(e.start_byte, &e.text)).unwrap_or_default(),
    }
}
