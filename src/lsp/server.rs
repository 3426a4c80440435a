//! The `LanguageServer` implementation: notifications become events for the one task that
//! applies them in order (sent before any `.await`, so that they keep the order in which
//! they arrived); requests go to their handlers.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::capabilities::{initialize_result, negotiate_encoding, workspace_roots};
use super::events::{Event, EventTask, Setup};
use super::ext::{COMMANDS, StatusParams};
use super::from_proto::{argument, file_path};
use super::state::State;
use super::to_proto::internal;

/// The language server.
pub struct Backend {
    pub(super) state: Arc<State>,
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
    pub(super) async fn barrier(&self) {
        let (tx, rx) = oneshot::channel();
        self.send(Event::Barrier(tx));
        let _ = rx.await;
    }
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
        Ok(initialize_result(encoding))
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
        self.handle_symbol(params).await
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.handle_hover(params).await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        let (command, args) = (params.command.as_str(), params.arguments);
        let value = match command {
            "situate.search" => to_value(self.handle_search(argument(command, args)?).await?),
            "situate.similar" => to_value(self.handle_similar(argument(command, args)?).await?),
            "situate.reindex" => to_value(self.handle_reindex(argument(command, args)?).await?),
            "situate.status" => {
                let _: Option<StatusParams> = argument(command, args)?;
                to_value(self.handle_status().await?)
            }
            other => {
                return Err(Error::invalid_params(format!(
                    "unknown command `{other}`; situate knows {}",
                    COMMANDS.join(", ")
                )));
            }
        };
        Ok(Some(value?))
    }
}

fn to_value(v: impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(v).map_err(internal)
}
