//! The protocol handlers. They convert parameters, call the folders' views, and convert the
//! answers back; none of them changes shared state. Notifications become events that one
//! task applies in the order they arrived, and requests that read what notifications write
//! (open buffers) wait for the events before them first.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::documents::{Documents, Encoding, offset_of};
use super::folder::{Embedders, Folder, Job, Notice, Phase};
use super::protocol::{
    self, COMMANDS, FolderStatus, ReindexParams, SearchAnswer, SearchParams, SimilarParams, Staleness,
};
use crate::engine::View;
use crate::search::{Hit, SearchRequest};
use crate::workspace;

/// Hits returned to a workspace-symbol request.
const SYMBOL_LIMIT: usize = 30;

/// What handlers read; only the event task writes it.
#[derive(Default)]
pub struct State {
    encoding: OnceLock<Encoding>,
    documents: RwLock<Documents>,
    folders: RwLock<Vec<Arc<Folder>>>,
    /// `shutdown` was received (so `exit` ends with code 0).
    pub shut_down: AtomicBool,
}

impl State {
    fn encoding(&self) -> Encoding {
        *self.encoding.get().unwrap_or(&Encoding::Utf16)
    }

    fn folders(&self) -> Vec<Arc<Folder>> {
        self.folders.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The innermost folder holding `path`.
    fn folder_of(&self, path: &Path) -> Option<Arc<Folder>> {
        self.folders()
            .into_iter()
            .filter(|f| path.starts_with(&f.root))
            .max_by_key(|f| f.root.as_os_str().len())
    }
}

/// What `initialize` learned, for the event task.
#[derive(Debug)]
pub struct Setup {
    folders: Vec<PathBuf>,
    settings: Option<Value>,
    encoding: Encoding,
    watch_files: bool,
    progress: bool,
}

/// Changes that must be applied in order.
#[derive(Debug)]
pub enum Event {
    Initialize(Setup),
    Start,
    Open {
        uri: Uri,
        text: String,
        version: i32,
    },
    Change {
        uri: Uri,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    },
    Save {
        uri: Uri,
        text: Option<String>,
    },
    Close {
        uri: Uri,
    },
    Watched(Vec<FileEvent>),
    Configure(Value),
    Folders {
        added: Vec<PathBuf>,
        removed: Vec<PathBuf>,
    },
    /// Answered once every event before it has been applied.
    Barrier(oneshot::Sender<()>),
    Shutdown(oneshot::Sender<()>),
}

/// The language server.
pub struct Backend {
    state: Arc<State>,
    events: UnboundedSender<Event>,
}

impl Backend {
    pub fn new(client: Client, state: Arc<State>) -> Backend {
        let (events, rx) = tokio::sync::mpsc::unbounded_channel();
        let task = EventTask::new(client.clone(), Arc::clone(&state));
        tokio::spawn(task.run(rx));
        Backend { state, events }
    }

    /// Queues an event. Called before any `.await` in a handler, so events keep the order
    /// in which their messages arrived.
    fn send(&self, event: Event) {
        if self.events.send(event).is_err() {
            tracing::error!("the event task has stopped");
        }
    }

    /// Waits until every notification received before this point has been applied.
    async fn barrier(&self) {
        let (tx, rx) = oneshot::channel();
        self.send(Event::Barrier(tx));
        let _ = rx.await;
    }

    async fn search(&self, params: SearchParams) -> Result<SearchAnswer> {
        if params.query.trim().is_empty() {
            return Err(Error::invalid_params("`query` is empty"));
        }
        // Folders are set up by `initialized`, which may still be queued.
        self.barrier().await;
        let folders = self.state.folders();
        let encoding = self.state.encoding();
        tokio::task::spawn_blocking(move || {
            let mut indexing = false;
            let mut lists: Vec<Vec<Hit>> = Vec::new();
            let mut roots: Vec<PathBuf> = Vec::new();
            let mut limit = 0;
            let mut search_config = None;
            for folder in &folders {
                indexing |= matches!(folder.live().phase, Phase::Opening | Phase::Indexing);
                let Some(view) = folder.view() else { continue };
                let config = &view.config().search;
                let request = SearchRequest {
                    query: params.query.clone(),
                    limit: params.limit.unwrap_or(config.limit).max(1),
                    mode: params.mode.unwrap_or(config.mode),
                    paths: params.paths.clone(),
                    expand: params.expand.unwrap_or(config.expand),
                };
                limit = limit.max(request.limit);
                search_config.get_or_insert_with(|| config.clone());
                lists.push(view.search(&request).map_err(internal)?);
                roots.push(folder.root.clone());
            }
            let Some(config) = search_config else { return Ok(SearchAnswer { indexing, hits: Vec::new() }) };
            let hits = crate::search::merge(lists, &config, limit)
                .iter()
                .filter_map(|(n, h)| info(h, &roots[*n], encoding))
                .collect();
            Ok(SearchAnswer { indexing, hits })
        })
        .await
        .map_err(internal)?
    }

    async fn similar(&self, params: SimilarParams) -> Result<SearchAnswer> {
        self.barrier().await;
        let (folder, path) = self.file_in_workspace(&params.uri)?;
        let encoding = self.state.encoding();
        self.check_position(&params.uri, &path, params.position)?;
        let Some(view) = folder.view() else {
            return Ok(SearchAnswer { indexing: true, hits: Vec::new() });
        };
        let indexing = matches!(folder.live().phase, Phase::Opening | Phase::Indexing);
        let line = params.position.line + 1;
        let path_str = path.to_string_lossy().into_owned();
        let limit = params.limit.unwrap_or(view.config().search.limit).max(1);
        let root = folder.root.clone();
        tokio::task::spawn_blocking(move || {
            let Some(chunk) = chunk_at(&view, &path_str, line) else {
                return Err(Error::invalid_params(format!("{path_str} is not indexed (yet)")));
            };
            let hits = view.similar(&chunk, limit).map_err(internal)?;
            let hits = hits.iter().filter_map(|h| info(h, &root, encoding)).collect();
            Ok(SearchAnswer { indexing, hits })
        })
        .await
        .map_err(internal)?
    }

    async fn reindex(&self, params: ReindexParams) -> Result<Value> {
        self.barrier().await;
        match params.uri {
            Some(uri) => {
                let (folder, path) = self.file_in_workspace(&uri)?;
                let (tx, rx) = oneshot::channel();
                folder.update(vec![path.clone()], Some(tx));
                let report = rx.await.map_err(internal)?.map_err(invalid_request)?;
                Ok(serde_json::json!({ "path": folder.relative(&path), "report": report }))
            }
            None => {
                let mut out = Vec::new();
                for folder in self.state.folders() {
                    let (tx, rx) = oneshot::channel();
                    // A full reindex also starts a new snippet budget period.
                    folder.send(Job::ResetSnippetBudget);
                    folder.send(Job::Reconcile { reply: Some(tx) });
                    let report = rx.await.map_err(internal)?.map_err(invalid_request)?;
                    out.push(serde_json::json!({ "root": folder.root, "report": report }));
                }
                Ok(serde_json::json!({ "folders": out }))
            }
        }
    }

    fn status(&self) -> Value {
        let folders: Vec<FolderStatus> = self
            .state
            .folders()
            .iter()
            .map(|f| {
                let view = f.view();
                let mut status = view.as_ref().map(View::status);
                // The estimate counts the tokens of every request still to send: only asked
                // for when some are.
                if let (Some(view), Some(snippets)) =
                    (&view, status.as_mut().and_then(|s| s.snippets.as_mut()))
                    && snippets.pending > 0
                {
                    snippets.estimate = view.snippet_estimate().ok();
                }
                FolderStatus::new(f.root.display().to_string(), f.live(), status)
            })
            .collect();
        serde_json::json!({ "folders": folders })
    }

    /// The workspace folder and path of a `file:` URI inside the workspace.
    fn file_in_workspace(&self, uri: &Uri) -> Result<(Arc<Folder>, PathBuf)> {
        let path = file_path(uri)?;
        let folder = self.state.folder_of(&path).ok_or_else(|| {
            Error::invalid_params(format!("{} is outside the workspace folders", uri.as_str()))
        })?;
        Ok((folder, path))
    }

    /// An error when `position` is past the end of the document (the open buffer, or the
    /// file on disk).
    fn check_position(&self, uri: &Uri, path: &Path, position: Position) -> Result<()> {
        let docs = self.state.documents.read().unwrap_or_else(PoisonError::into_inner);
        let text = match docs.get(uri) {
            Some(doc) => doc.text.clone(),
            None => match std::fs::read(path) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => return Err(Error::invalid_params(format!("cannot read {}: {e}", path.display()))),
            },
        };
        offset_of(&text, position, self.state.encoding())
            .map(|_| ())
            .map_err(|e| Error::invalid_params(e.to_string()))
    }
}

fn internal(e: impl std::fmt::Display) -> Error {
    Error {
        code: tower_lsp_server::jsonrpc::ErrorCode::InternalError,
        message: e.to_string().into(),
        data: None,
    }
}

/// A request that cannot be carried out in the server's state (a read-only index).
fn invalid_request(message: String) -> Error {
    Error { code: tower_lsp_server::jsonrpc::ErrorCode::InvalidRequest, message: message.into(), data: None }
}

/// The path of a `file:` URI; anything else is an error.
fn file_path(uri: &Uri) -> Result<PathBuf> {
    let is_file = uri.scheme().as_str().eq_ignore_ascii_case("file");
    match uri.to_file_path() {
        Some(p) if is_file && p.is_absolute() => {
            // Symlinked workspaces: compare canonical paths, as the folders are.
            Ok(p.canonicalize().unwrap_or_else(|_| p.into_owned()))
        }
        _ => Err(Error::invalid_params(format!("{} is not a file: URI", uri.as_str()))),
    }
}

fn info(hit: &Hit, root: &Path, encoding: Encoding) -> Option<protocol::HitInfo> {
    let uri = Uri::from_file_path(root.join(&hit.chunk.path))?;
    Some(protocol::hit_info(hit, uri, encoding))
}

/// The chunk holding a 1-based line (or the next one after it).
fn chunk_at(view: &View, path: &str, line: u32) -> Option<crate::index::ChunkRecord> {
    view.chunks_at(path, Some(line)).ok()?.into_iter().next()
}

/// The command's single object argument (none at all reads as `{}`).
fn argument<T: DeserializeOwned>(command: &str, arguments: Vec<Value>) -> Result<T> {
    let value = match arguments.len() {
        0 => Value::Object(Default::default()),
        1 => arguments.into_iter().next().unwrap_or_default(),
        n => return Err(Error::invalid_params(format!("{command} takes one object argument, got {n}"))),
    };
    serde_json::from_value(value).map_err(|e| Error::invalid_params(format!("{command}: {e}")))
}

fn negotiate_encoding(caps: &ClientCapabilities) -> Encoding {
    let offered = caps.general.as_ref().and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(kinds) if kinds.contains(&PositionEncodingKind::UTF8) => Encoding::Utf8,
        _ => Encoding::Utf16,
    }
}

fn workspace_roots(params: &InitializeParams) -> Vec<PathBuf> {
    let mut uris: Vec<Uri> = params.workspace_folders.iter().flatten().map(|f| f.uri.clone()).collect();
    #[allow(deprecated)]
    if uris.is_empty()
        && let Some(root) = &params.root_uri
    {
        uris.push(root.clone());
    }
    uris.iter()
        .filter_map(|u| match file_path(u) {
            Ok(p) if p.is_dir() => Some(p),
            _ => {
                tracing::warn!("workspace folder {} is not a local folder; left out", u.as_str());
                None
            }
        })
        .collect()
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let encoding = negotiate_encoding(&params.capabilities);
        let workspace = params.capabilities.workspace.as_ref();
        let watch_files = workspace
            .and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|w| w.dynamic_registration)
            .unwrap_or(false);
        let progress =
            params.capabilities.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false);
        self.send(Event::Initialize(Setup {
            folders: workspace_roots(&params),
            settings: params.initialization_options.clone(),
            encoding,
            watch_files,
            progress,
        }));
        let encoding_kind = match encoding {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        };
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                position_encoding: Some(encoding_kind),
                text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::INCREMENTAL),
                    save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                        include_text: Some(false),
                    })),
                    ..Default::default()
                })),
                hover_provider: Some(HoverProviderCapability::Simple(true)),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: COMMANDS.iter().map(ToString::to_string).collect(),
                    ..Default::default()
                }),
                workspace: Some(WorkspaceServerCapabilities {
                    workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                        supported: Some(true),
                        change_notifications: Some(OneOf::Left(true)),
                    }),
                    file_operations: None,
                }),
                ..Default::default()
            },
            server_info: Some(ServerInfo {
                name: "situate".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        self.send(Event::Start);
    }

    async fn shutdown(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.send(Event::Shutdown(tx));
        let _ = rx.await;
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let d = params.text_document;
        self.send(Event::Open { uri: d.uri, text: d.text, version: d.version });
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let d = params.text_document;
        self.send(Event::Change { uri: d.uri, version: d.version, changes: params.content_changes });
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        self.send(Event::Save { uri: params.text_document.uri, text: params.text });
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        self.send(Event::Close { uri: params.text_document.uri });
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        self.send(Event::Configure(params.settings));
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        self.send(Event::Watched(params.changes));
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        let paths = |folders: Vec<WorkspaceFolder>| -> Vec<PathBuf> {
            folders.iter().filter_map(|f| file_path(&f.uri).ok()).collect()
        };
        self.send(Event::Folders { added: paths(params.event.added), removed: paths(params.event.removed) });
    }

    async fn symbol(&self, params: WorkspaceSymbolParams) -> Result<Option<WorkspaceSymbolResponse>> {
        if params.query.trim().is_empty() {
            return Ok(Some(WorkspaceSymbolResponse::Nested(Vec::new())));
        }
        let answer = self
            .search(SearchParams {
                query: params.query,
                limit: Some(SYMBOL_LIMIT),
                mode: None,
                expand: Some(crate::search::Expand::None),
                paths: Vec::new(),
            })
            .await?;
        let symbols = answer
            .hits
            .into_iter()
            .map(|h| WorkspaceSymbol {
                name: match h.heading_path.last() {
                    Some(heading) => format!("{heading} — {}", h.preview),
                    None => format!("{} — {}", h.title, h.preview),
                },
                kind: SymbolKind::STRING,
                tags: None,
                container_name: Some(format!("{} · {}", h.path, h.heading_path.join(" › "))),
                location: OneOf::Left(Location { uri: h.uri, range: h.range }),
                data: None,
            })
            .collect();
        Ok(Some(WorkspaceSymbolResponse::Nested(symbols)))
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.barrier().await;
        let p = params.text_document_position_params;
        let uri = p.text_document.uri;
        // Hovering anywhere outside indexed files is normal: no answer, no error.
        let Ok(path) = file_path(&uri) else { return Ok(None) };
        let Some(folder) = self.state.folder_of(&path) else { return Ok(None) };
        self.check_position(&uri, &path, p.position)?;
        let Some(view) = folder.view() else { return Ok(None) };
        let Some(rel) = folder.relative(&path) else { return Ok(None) };
        let Some(chunk) = chunk_at(&view, &rel, p.position.line + 1) else { return Ok(None) };
        let manifest = view.snapshot().manifest();
        let entry = manifest.files.get(&rel);
        let unsaved = {
            let docs = self.state.documents.read().unwrap_or_else(PoisonError::into_inner);
            docs.get(&uri).is_some_and(|d| d.dirty)
        };
        let changed_on_disk = match (entry, workspace::stat(&folder.root, &rel)) {
            (Some(e), Ok(f)) => e.size != f.size || e.mtime_ns != f.mtime_ns,
            _ => true,
        };
        let live = folder.live();
        let stale = Staleness {
            unsaved,
            changed_on_disk,
            pending: live.pending.contains(&rel),
            snippets_on: live.snippets.is_some(),
        };
        let chunks_in_file = entry.map_or(1, |e| e.chunks.len());
        let markdown = protocol::hover_markdown(&chunk, chunks_in_file, stale);
        Ok(Some(Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value: markdown }),
            range: Some(protocol::chunk_range(&chunk, self.state.encoding())),
        }))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let command = params.command.as_str();
        let args = params.arguments;
        let value = match command {
            "situate.search" => to_value(self.search(argument(command, args)?).await?)?,
            "situate.similar" => to_value(self.similar(argument(command, args)?).await?)?,
            "situate.reindex" => self.reindex(argument(command, args)?).await?,
            "situate.status" => {
                let _: serde::de::IgnoredAny = argument(command, args)?;
                self.barrier().await;
                self.status()
            }
            other => {
                return Err(Error::invalid_params(format!(
                    "unknown command `{other}`; situate knows {}",
                    COMMANDS.join(", ")
                )));
            }
        };
        Ok(Some(value))
    }
}

fn to_value(v: impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(v).map_err(internal)
}

/// The task that applies events in order.
struct EventTask {
    client: Client,
    state: Arc<State>,
    setup: Option<Setup>,
    embedders: Arc<Embedders>,
    notices: Option<UnboundedSender<Notice>>,
}

impl EventTask {
    fn new(client: Client, state: Arc<State>) -> EventTask {
        EventTask { client, state, setup: None, embedders: Arc::default(), notices: None }
    }

    async fn run(mut self, mut events: UnboundedReceiver<Event>) {
        while let Some(event) = events.recv().await {
            self.apply(event).await;
        }
    }

    async fn apply(&mut self, event: Event) {
        match event {
            Event::Initialize(setup) => {
                let _ = self.state.encoding.set(setup.encoding);
                self.setup = Some(setup);
            }
            Event::Start => self.start().await,
            Event::Open { uri, text, version } => self.documents().open(uri, text, version),
            Event::Change { uri, version, changes } => {
                let encoding = self.state.encoding();
                if let Err(e) = self.documents().change(&uri, version, changes, encoding) {
                    tracing::warn!("didChange of {}: {e}", uri.as_str());
                }
            }
            Event::Save { uri, text } => {
                self.documents().saved(&uri, text);
                if let Ok(path) = file_path(&uri)
                    && let Some(folder) = self.state.folder_of(&path)
                {
                    folder.update(vec![path], None);
                }
            }
            Event::Close { uri } => self.documents().close(&uri),
            Event::Watched(changes) => self.watched(changes),
            Event::Configure(settings) => {
                // Clients send either the section itself or an object holding it.
                let settings = match settings {
                    Value::Object(mut map) if map.contains_key("situate") => map.remove("situate"),
                    Value::Null => None,
                    other => Some(other),
                };
                if let Some(setup) = self.setup.as_mut() {
                    setup.settings = settings.clone();
                }
                for folder in self.state.folders() {
                    folder.send(Job::Configure { settings: settings.clone() });
                }
            }
            Event::Folders { added, removed } => {
                let gone: Vec<Arc<Folder>> =
                    self.state.folders().into_iter().filter(|f| removed.contains(&f.root)).collect();
                self.state
                    .folders
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .retain(|f| !removed.contains(&f.root));
                stop_all(gone).await;
                for root in added {
                    self.add_folder(root);
                }
            }
            Event::Barrier(done) => {
                let _ = done.send(());
            }
            Event::Shutdown(done) => {
                self.state.shut_down.store(true, Ordering::Relaxed);
                let folders =
                    std::mem::take(&mut *self.state.folders.write().unwrap_or_else(PoisonError::into_inner));
                stop_all(folders).await;
                let _ = done.send(());
            }
        }
    }

    fn documents(&self) -> std::sync::RwLockWriteGuard<'_, Documents> {
        self.state.documents.write().unwrap_or_else(PoisonError::into_inner)
    }

    async fn start(&mut self) {
        let Some(setup) = self.setup.as_ref() else { return };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(report(self.client.clone(), rx, setup.progress));
        let (folders, watch_files) = (setup.folders.clone(), setup.watch_files);
        self.notices = Some(tx);
        if folders.is_empty() {
            self.client
                .show_message(
                    MessageType::WARNING,
                    "situate: no local workspace folder is open; nothing to index",
                )
                .await;
        }
        for root in folders {
            self.add_folder(root);
        }
        if watch_files {
            self.watch_files().await;
        }
    }

    fn add_folder(&mut self, root: PathBuf) {
        let (Some(setup), Some(notices)) = (&self.setup, &self.notices) else { return };
        let root = root.canonicalize().unwrap_or(root);
        if self.state.folders().iter().any(|f| f.root == root) {
            return;
        }
        let folder =
            Folder::start(root, setup.settings.clone(), Arc::clone(&self.embedders), notices.clone());
        self.state.folders.write().unwrap_or_else(PoisonError::into_inner).push(folder);
    }

    /// Asks the client to report changes to the files situate indexes, and to its
    /// settings file.
    async fn watch_files(&self) {
        let mut extensions: Vec<String> = Vec::new();
        for folder in self.state.folders() {
            let config = crate::config::Config::load_layered(
                &folder.root,
                None,
                self.setup.as_ref().and_then(|s| s.settings.as_ref()),
            )
            .config;
            for e in config.walk.extensions {
                if !extensions.contains(&e) {
                    extensions.push(e);
                }
            }
        }
        if extensions.is_empty() {
            extensions = crate::config::Config::default().walk.extensions;
        }
        let mut watchers = vec![FileSystemWatcher {
            glob_pattern: GlobPattern::String(format!("**/*.{{{}}}", extensions.join(","))),
            kind: None,
        }];
        watchers.push(FileSystemWatcher {
            glob_pattern: GlobPattern::String(format!("**/{}", crate::config::CONFIG_FILE)),
            kind: None,
        });
        let options = DidChangeWatchedFilesRegistrationOptions { watchers };
        let registration = Registration {
            id: "situate-watched-files".to_string(),
            method: "workspace/didChangeWatchedFiles".to_string(),
            register_options: serde_json::to_value(options).ok(),
        };
        if let Err(e) = self.client.register_capability(vec![registration]).await {
            tracing::warn!("the client refused file watching: {e}");
        }
    }

    /// Files changed outside the editor: one batch per folder. A changed settings file
    /// reopens its folder with the new settings.
    fn watched(&self, changes: Vec<FileEvent>) {
        let mut batches: Vec<(Arc<Folder>, Vec<PathBuf>)> = Vec::new();
        let mut reconfigure: Vec<Arc<Folder>> = Vec::new();
        for change in changes {
            let Ok(path) = file_path(&change.uri) else { continue };
            let Some(folder) = self.state.folder_of(&path) else { continue };
            if path == folder.root.join(crate::config::CONFIG_FILE) {
                if !reconfigure.iter().any(|f| Arc::ptr_eq(f, &folder)) {
                    reconfigure.push(folder);
                }
                continue;
            }
            match batches.iter_mut().find(|(f, _)| Arc::ptr_eq(f, &folder)) {
                Some((_, paths)) => paths.push(path),
                None => batches.push((folder, vec![path])),
            }
        }
        for (folder, paths) in batches {
            folder.update(paths, None);
        }
        let settings = self.setup.as_ref().and_then(|s| s.settings.clone());
        for folder in reconfigure {
            folder.send(Job::Configure { settings: settings.clone() });
        }
    }
}

async fn stop_all(folders: Vec<Arc<Folder>>) {
    if folders.is_empty() {
        return;
    }
    let _ = tokio::task::spawn_blocking(move || {
        for folder in folders {
            folder.stop();
        }
    })
    .await;
}

/// Sends the writers' notices to the client: progress as `$/progress` (when the client
/// supports it) and problems as one `window/showMessage` each.
async fn report(client: Client, mut notices: UnboundedReceiver<Notice>, progress: bool) {
    let mut shown: HashSet<String> = HashSet::new();
    let mut ongoing = std::collections::HashMap::new();
    while let Some(notice) = notices.recv().await {
        match notice {
            Notice::ProgressBegin { token, title } if progress => {
                let t = ProgressToken::String(token.clone());
                if client.create_work_done_progress(t.clone()).await.is_ok() {
                    let p = client.progress(t, title).with_percentage(0).begin().await;
                    ongoing.insert(token, p);
                }
            }
            Notice::ProgressReport { token, message, percentage } => {
                if let Some(p) = ongoing.get(&token) {
                    p.report_with_message(message, percentage).await;
                }
            }
            Notice::ProgressEnd { token, message } => {
                if let Some(p) = ongoing.remove(&token) {
                    p.finish_with_message(message).await;
                }
            }
            Notice::Problem(message) => {
                if shown.insert(message.clone()) {
                    client.show_message(MessageType::WARNING, format!("situate: {message}")).await;
                }
            }
            Notice::ProgressBegin { .. } => {}
        }
    }
}
