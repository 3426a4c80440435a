//! The Model Context Protocol server (`situate mcp`): the tools `search`, `show`, `similar`
//! and `status` over one workspace, on stdin/stdout, for AI agents and their clients.
//!
//! It runs on the same engine and index as the command line and the language server: the
//! index of the workspace is opened under the writer lock when it is free, read-only when
//! another process writes it, and brought up to date before each tool call ([`folder`]).
//! [`server`] speaks the protocol through the official SDK (`rmcp`); [`tools`] does the
//! work on the blocking pool and fits answers to a token budget ([`budget`]); [`shapes`]
//! holds the arguments and results with their JSON schemas; [`transport`] answers malformed
//! messages before the SDK sees them. Logs go to stderr (or
//! `SITUATE_LOG_FILE`): stdout carries protocol messages only.

mod budget;
mod folder;
mod server;
mod shapes;
mod tools;
mod transport;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;

/// How long a stopping server waits for a reconcile under way to commit what it has done.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// How long a closing server waits for its last answers to be written.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);
/// How long the background fill rests when there is nothing to fill, and after a failure.
const FILL_IDLE: Duration = Duration::from_millis(500);
const FILL_BACKOFF: Duration = Duration::from_secs(30);

/// A failure that keeps the server from serving.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("{path} is not a folder")]
    NotAFolder { path: String },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("the client did not complete the handshake: {0}")]
    Handshake(String),
}

/// Serves the workspace at `dir` (with `config` instead of its `situate.toml`, if given) on
/// stdin/stdout until the client closes the stream. The index is brought up to date in the
/// background from the start, so that the first tool call finds it ready. After `idle`
/// without a call, with no vectors left to fill, the server lets go of the index's writer
/// lock ([`folder::Folder::let_go_if_idle`]).
pub fn serve_stdio(dir: &Path, config: Option<&Path>, idle: Duration) -> Result<(), McpError> {
    if !dir.is_dir() {
        return Err(McpError::NotAFolder { path: dir.display().to_string() });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let folder = Arc::new(folder::Folder::new(dir, config, idle));
    let filler = Arc::clone(&folder);
    std::thread::spawn(move || fill_in_background(&filler));
    let result = runtime.block_on(async {
        let warm = Arc::clone(&folder);
        tokio::task::spawn_blocking(move || {
            if let Err(e) = warm.fresh() {
                tracing::warn!("{e}");
            }
        });
        let (input, output, written) = transport::guard(tokio::io::stdin(), tokio::io::stdout());
        let running = server::Server::new(Arc::clone(&folder))
            .serve((input, output))
            .await
            .map_err(|e| McpError::Handshake(e.to_string()))?;
        let reason = running.waiting().await;
        tracing::debug!(?reason, "the client closed the connection");
        // The last answers are written out before the process ends.
        let _ = tokio::time::timeout(OUTPUT_GRACE, written).await;
        Ok(())
    });
    // A reconcile under way commits and returns; the stdin reader may be blocked in a read
    // that never returns, so nothing else is waited for.
    folder.stop();
    runtime.shutdown_timeout(STOP_GRACE);
    result
}

/// Fills in a slow model's vectors a few at a time while the server runs, leaving the
/// index to tool calls in between.
fn fill_in_background(folder: &folder::Folder) {
    let mut failing = false;
    while !folder.is_stopping() {
        match folder.fill_some() {
            // The lock is not fair: a pause lets a waiting tool call take it.
            Ok(left) if left > 0 => std::thread::sleep(Duration::from_millis(2)),
            Ok(_) => {
                folder.let_go_if_idle();
                std::thread::sleep(FILL_IDLE);
            }
            Err(e) => {
                if !failing {
                    tracing::warn!("{e}; trying again in {} s", FILL_BACKOFF.as_secs());
                }
                failing = true;
                std::thread::sleep(FILL_BACKOFF);
                continue;
            }
        }
        failing = false;
    }
}
