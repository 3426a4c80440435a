//! The one task that applies state changes in the order their notifications arrived
//! (buffers, folders, settings, saves, watched files), and the task that passes the folder
//! writers' notices on to the client as `$/progress` and `window/showMessage`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::*;

use super::documents::{Documents, Encoding};
use super::from_proto::named_path;
use super::state::State;
use crate::config::{CONFIG_FILE, Config};
use crate::service::{Embedders, Folder, Job, Notice};

/// The method whose watchers situate registers.
const WATCHED_FILES: &str = "workspace/didChangeWatchedFiles";

/// What `initialize` learned, for the event task.
#[derive(Debug)]
pub struct Setup {
    pub folders: Vec<PathBuf>,
    pub settings: Option<Value>,
    pub encoding: Encoding,
    pub watch_files: bool,
    pub progress: bool,
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

/// The task that applies events in order.
pub struct EventTask {
    client: Client,
    state: Arc<State>,
    setup: Option<Setup>,
    embedders: Arc<Embedders>,
    notices: Option<UnboundedSender<Notice>>,
    /// The file watchers the client has registered, if any.
    watching: Option<Watchers>,
    /// Registrations made so far, which number their ids.
    registrations: u32,
    /// The workspace folders the client has open (canonical paths); those inside another
    /// are served by its index.
    opened: Vec<PathBuf>,
}

/// One registration of file watchers: its id and its glob patterns.
struct Watchers {
    id: String,
    globs: Vec<String>,
}

impl EventTask {
    pub fn new(client: Client, state: Arc<State>) -> EventTask {
        EventTask {
            client,
            state,
            setup: None,
            embedders: Arc::default(),
            notices: None,
            watching: None,
            registrations: 0,
            opened: Vec::new(),
        }
    }

    pub async fn run(mut self, mut events: UnboundedReceiver<Event>) {
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
                if let Ok(named) = named_path(&uri)
                    && let Some((folder, path)) = self.state.folder_of_file(&named)
                {
                    folder.update(vec![path], None);
                }
            }
            Event::Close { uri } => self.documents().close(&uri),
            Event::Watched(changes) => {
                if self.watched(changes) {
                    self.watch_files().await;
                }
            }
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
                self.watch_files().await;
            }
            Event::Folders { added, removed } => {
                let removed: Vec<PathBuf> = removed.into_iter().map(canonical).collect();
                self.opened.retain(|root| !removed.contains(root));
                for root in added.into_iter().map(canonical) {
                    if !self.opened.contains(&root) {
                        self.opened.push(root);
                    }
                }
                self.serve_opened().await;
                self.watch_files().await;
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
        let folders = setup.folders.clone();
        self.notices = Some(tx);
        if folders.is_empty() {
            self.client
                .show_message(
                    MessageType::WARNING,
                    "situate: no local workspace folder is open; nothing to index",
                )
                .await;
        }
        for root in folders.into_iter().map(canonical) {
            if !self.opened.contains(&root) {
                self.opened.push(root);
            }
        }
        self.serve_opened().await;
        self.watch_files().await;
    }

    /// Serves each open folder that no other open folder holds, and stops serving the rest:
    /// a nested folder's files are in the outer folder's index, so that each file is
    /// searched and updated once. A nested folder gets its own index when the outer closes.
    async fn serve_opened(&mut self) {
        let served = outermost(&self.opened);
        for root in self.opened.iter().filter(|r| !served.contains(r)) {
            tracing::info!("{} is inside another workspace folder, whose index serves it", root.display());
        }
        let gone: Vec<Arc<Folder>> =
            self.state.folders().into_iter().filter(|f| !served.contains(&f.root)).collect();
        self.state
            .folders
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|f| served.contains(&f.root));
        stop_all(gone).await;
        for root in served {
            self.add_folder(root);
        }
    }

    fn add_folder(&mut self, root: PathBuf) {
        let (Some(setup), Some(notices)) = (&self.setup, &self.notices) else { return };
        if self.state.folders().iter().any(|f| f.root == root) {
            return;
        }
        let config_file = self.state.config_file.clone();
        let folder = Folder::start(
            root,
            config_file,
            setup.settings.clone(),
            Arc::clone(&self.embedders),
            notices.clone(),
        );
        self.state.folders.write().unwrap_or_else(PoisonError::into_inner).push(folder);
    }

    /// Asks the client to report changes to the files situate indexes, and to its
    /// settings file, when it can register watchers. When the extensions change with the
    /// settings, the new watchers are registered under a new id and the old ones dropped.
    async fn watch_files(&mut self) {
        // Watchers are registered once the client is initialized, and only when it can.
        if self.notices.is_none() || !self.setup.as_ref().is_some_and(|s| s.watch_files) {
            return;
        }
        let globs = self.watched_globs();
        if self.watching.as_ref().is_some_and(|w| w.globs == globs) {
            return;
        }
        let watchers = globs
            .iter()
            .map(|glob| FileSystemWatcher { glob_pattern: GlobPattern::String(glob.clone()), kind: None })
            .collect();
        let options = DidChangeWatchedFilesRegistrationOptions { watchers };
        self.registrations += 1;
        let registration = Registration {
            id: format!("situate-watched-files-{}", self.registrations),
            method: WATCHED_FILES.to_string(),
            register_options: serde_json::to_value(options).ok(),
        };
        let id = registration.id.clone();
        if let Err(e) = self.client.register_capability(vec![registration]).await {
            tracing::warn!("the client refused file watching: {e}");
            return;
        }
        if let Some(old) = self.watching.replace(Watchers { id, globs }) {
            let unregistration = Unregistration { id: old.id, method: WATCHED_FILES.to_string() };
            if let Err(e) = self.client.unregister_capability(vec![unregistration]).await {
                tracing::warn!("the client kept the old file watchers: {e}");
            }
        }
    }

    /// The glob patterns of the files the folders index, and of the settings file.
    fn watched_globs(&self) -> Vec<String> {
        let mut extensions: Vec<String> = Vec::new();
        for folder in self.state.folders() {
            let config = Config::load_layered(
                &folder.root,
                folder.config_file.as_deref(),
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
            extensions = Config::default().walk.extensions;
        }
        let mut globs = vec![format!("**/*.{{{}}}", extensions.join(",")), format!("**/{CONFIG_FILE}")];
        // The `--config` file, wherever it lies.
        if let Some(file) = &self.state.config_file {
            globs.push(file.display().to_string());
        }
        globs
    }

    /// Files changed outside the editor: one batch per folder. A changed settings file
    /// reopens its folder with the new settings; then `true`.
    fn watched(&self, changes: Vec<FileEvent>) -> bool {
        let mut batches: Vec<(Arc<Folder>, Vec<PathBuf>)> = Vec::new();
        let mut reconfigure: Vec<Arc<Folder>> = Vec::new();
        for change in changes {
            let Ok(named) = named_path(&change.uri) else { continue };
            let path = canonical(named.clone());
            // The `--config` file, wherever it lies, is every folder's settings file.
            if self.state.config_file.as_ref() == Some(&path) {
                for folder in self.state.folders() {
                    if !reconfigure.iter().any(|f| Arc::ptr_eq(f, &folder)) {
                        reconfigure.push(folder);
                    }
                }
                continue;
            }
            let Some((folder, path)) = self.state.folder_of_file(&named) else { continue };
            if path == folder.settings_file() {
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
        let reconfigured = !reconfigure.is_empty();
        for folder in reconfigure {
            folder.send(Job::Configure { settings: settings.clone() });
        }
        reconfigured
    }
}

fn canonical(path: PathBuf) -> PathBuf {
    path.canonicalize().unwrap_or(path)
}

/// The folders of `roots` that no other of them holds.
fn outermost(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots.iter().filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o))).cloned().collect()
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
///
/// Each run's progress goes through a task of its own, since its token must be accepted
/// by the client first (`window/workDoneProgress/create`): an editor busy starting up may
/// take seconds to answer, and a problem is not held back meanwhile.
async fn report(client: Client, mut notices: UnboundedReceiver<Notice>, progress: bool) {
    let mut shown: HashSet<String> = HashSet::new();
    let mut runs: HashMap<String, UnboundedSender<RunStep>> = HashMap::new();
    while let Some(notice) = notices.recv().await {
        match notice {
            Notice::ProgressBegin { token, title } if progress => {
                let (steps, taken) = tokio::sync::mpsc::unbounded_channel();
                runs.insert(token.clone(), steps);
                tokio::spawn(report_run(client.clone(), token, title, taken));
            }
            Notice::ProgressReport { token, message, percentage } => {
                if let Some(steps) = runs.get(&token) {
                    let _ = steps.send(RunStep::Report { message, percentage });
                }
            }
            Notice::ProgressEnd { token, message } => {
                if let Some(steps) = runs.remove(&token) {
                    let _ = steps.send(RunStep::End { message });
                }
            }
            Notice::Problem(message) => {
                if shown.insert(message.clone()) {
                    client.show_message(MessageType::WARNING, format!("situate: {message}")).await;
                }
            }
            Notice::Failure(message) => {
                if shown.insert(message.clone()) {
                    client.show_message(MessageType::ERROR, format!("situate: {message}")).await;
                }
            }
            Notice::ProgressBegin { .. } => {}
        }
    }
}

/// What a run reports after its begin.
enum RunStep {
    Report { message: String, percentage: u32 },
    End { message: String },
}

/// One run's `$/progress`: its token, once the client accepts it, then its begin, reports
/// and end. Of the steps that came while the client was answering, only the latest is sent
/// (a run that ended meanwhile sends its end alone).
async fn report_run(client: Client, token: String, title: String, mut steps: UnboundedReceiver<RunStep>) {
    let token = ProgressToken::String(token);
    if client.create_work_done_progress(token.clone()).await.is_err() {
        return;
    }
    let run = client.progress(token, title).with_percentage(0).begin().await;
    while let Some(mut step) = steps.recv().await {
        while let Ok(next) = steps.try_recv() {
            step = next;
        }
        match step {
            RunStep::Report { message, percentage } => run.report_with_message(message, percentage).await,
            RunStep::End { message } => {
                run.finish_with_message(message).await;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_inside_another_is_served_by_the_outer_one() {
        let roots: Vec<PathBuf> =
            ["/w/notes/ops", "/w/notes", "/w/notes-old", "/w/book"].map(PathBuf::from).into();
        assert_eq!(outermost(&roots), ["/w/notes", "/w/notes-old", "/w/book"].map(PathBuf::from));
    }
}
