//! The language server (`situate lsp`): semantic search, hover context and an index that
//! follows every save, over the Language Server Protocol on stdin/stdout.
//!
//! Each workspace folder has its own engine on a writer thread ([`crate::service`]);
//! notifications become ordered events ([`events`]), and the request handlers
//! ([`handlers`]) read the last published views on the blocking pool and never wait for
//! indexing. Only this module knows the protocol: [`ext`] holds the shapes of situate's own
//! commands, [`to_proto`] and [`from_proto`] the conversions.

mod capabilities;
mod documents;
mod events;
mod ext;
mod from_proto;
mod handlers;
mod server;
mod state;
mod to_proto;
// Public for the fuzz targets only: its framing reader and message check.
#[doc(hidden)]
pub mod transport;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tower_lsp_server::{LspService, Server};

/// Serves one client on stdin/stdout until it sends `exit` or closes the stream. The exit
/// code is 0 when `shutdown` came first, 1 otherwise (as the protocol asks); an error means
/// the server could not start. Every folder reads `config_file`, when given, instead of its
/// own `situate.toml`.
pub fn serve_stdio(config_file: Option<PathBuf>) -> std::io::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let state = Arc::new(state::State { config_file, ..state::State::default() });
    let shared = Arc::clone(&state);
    runtime.block_on(async move {
        let (service, socket) = LspService::new(|client| server::Backend::new(client, shared));
        let (input, output, written) = transport::guard(tokio::io::stdin(), tokio::io::stdout());
        Server::new(input, output, socket).serve(service).await;
        let _ = written.await;
    });
    // The stdin reader may still be blocked in a read that never returns (clients often keep
    // the pipe open after `exit`): do not wait for it. Writers still running (no `shutdown`
    // came) are cut short; the index stays consistent because every commit is atomic.
    runtime.shutdown_background();
    Ok(if state.shut_down.load(Ordering::Relaxed) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
