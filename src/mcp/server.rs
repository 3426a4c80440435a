//! The MCP handler: what `initialize` and `tools/list` tell a client, and `tools/call`, which
//! parses the arguments, runs the tool on the blocking pool (it brings the index up to date
//! and reads it) and converts the answer. Every failure of a known tool, bad arguments
//! included, comes back as a tool error the model can read and act on; only a call to a tool
//! that does not exist is a protocol error.

use std::pin::Pin;
use std::sync::Arc;

use rmcp::handler::server::tool::schema_for_input;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::folder::{Folder, Fresh, Indexing};
use super::shapes::{
    SearchArgs, SearchResult, ShowArgs, ShowResult, SimilarArgs, SimilarResult, StatusArgs, StatusResult,
};
use super::tools::{self, ToolError};

const INSTRUCTIONS: &str = "situate searches the markdown and text files of one folder by meaning \
and by words. Start with `search`, a question or keywords in plain words; read a whole file, or \
the passage at a line, with `show`; find passages on the same subject elsewhere with `similar`; \
`status` tells what is indexed and whether anything is stale. Paths are relative to the folder and \
lines are 1-based. Every call brings the index up to date with the files first.";

const SEARCH: &str = "Search the folder's markdown and text files for the passages that answer a \
question or match keywords, by meaning and by words. Each result is a passage with its file path, \
1-based line range, document title, heading path and text, best first. Narrow with `paths` \
(folders or files), use `mode: bm25` for exact names and codes, and `expand` for more context \
around each passage. The answer stays within `max_tokens`; read more of a file with `show`.";

const SHOW: &str = "Show a file as it was indexed, or only the passage at one of its lines: its \
passages in order, each with its line range, heading path, the context header it was indexed with, \
its LLM-written snippet if there is one, and its text. Give `path` alone for the whole file (within \
`max_tokens`), `path` and `line` (or \"path:line\") for one passage, or `line` and `end_line` for the \
passages over a range of lines; when the budget cuts an answer, its note says where to read on.";

const SIMILAR: &str = "Find passages on the same subject as a given passage, elsewhere in the \
folder: give its file and any of its lines (a search result's `path` and `start_line`). Results \
are passages like those of `search`, best first; the passage itself and its immediate neighbours \
are left out.";

const STATUS: &str = "Tell what the index holds and how fresh it is: files and passages (per \
top-level folder), files changed on disk since they were indexed, files left out and why, \
passages still waiting for their vector, and whether this server keeps the index up to date or \
reads one that another process (an editor) writes.";

/// The server of one workspace.
#[derive(Clone)]
pub struct Server {
    folder: Arc<Folder>,
    tools: Arc<Vec<Tool>>,
}

impl Server {
    pub fn new(folder: Arc<Folder>) -> Server {
        let tools = vec![
            tool::<SearchArgs, SearchResult>("search", SEARCH),
            tool::<ShowArgs, ShowResult>("show", SHOW),
            tool::<SimilarArgs, SimilarResult>("similar", SIMILAR),
            tool::<StatusArgs, StatusResult>("status", STATUS),
        ];
        Server { folder, tools: Arc::new(tools) }
    }
}

/// A tool's declaration: its input and output schemas from its shapes. Every tool only reads
/// the workspace (updating the index is its own business) and sees nothing beyond it.
fn tool<A: JsonSchema + 'static, R: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
) -> Tool {
    // The argument shapes are structs, so their schemas are objects and this cannot fail.
    let input = schema_for_input::<A>().unwrap_or_else(|e| panic!("the arguments of `{name}`: {e}"));
    Tool::new(name, description, input)
        .with_output_schema::<R>()
        .annotate(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false))
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("situate", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let folder = Arc::clone(&self.folder);
        let started = std::time::Instant::now();
        let work: Pin<Box<dyn Future<Output = CallToolResult> + Send>> = match request.name.as_ref() {
            "search" => Box::pin(call(folder, arguments, tools::search)),
            "show" => Box::pin(call(folder, arguments, tools::show)),
            "similar" => Box::pin(call(folder, arguments, tools::similar)),
            "status" => Box::pin(call(folder, arguments, |fresh, _: StatusArgs| Ok(tools::status(fresh)))),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named `{other}`: the tools are search, show, similar and status"),
                    None,
                ));
            }
        };
        let result = match context.meta.get_progress_token() {
            Some(token) => with_progress(work, self.folder.indexing(), &context.peer, token).await,
            None => work.await,
        };
        tracing::debug!(tool = %request.name, ms = started.elapsed().as_secs_f64() * 1e3, "tool call");
        Ok(result.into())
    }
}

/// Runs a tool call, telling the client how far the indexing it waits for has got (a cold
/// index of a large folder takes minutes): a progress notification for each batch of files
/// indexed, whichever call or the warm-up at start indexes them.
async fn with_progress<T>(
    work: impl Future<Output = T>,
    mut indexing: watch::Receiver<Option<Indexing>>,
    peer: &Peer<RoleServer>,
    token: ProgressToken,
) -> T {
    tokio::pin!(work);
    // A reconcile may be under way already.
    indexing.mark_changed();
    // Each notification must say more than the last.
    let mut said: Option<usize> = None;
    loop {
        tokio::select! {
            out = &mut work => return out,
            changed = indexing.changed() => {
                if changed.is_err() {
                    return work.await;
                }
                let Some(step) = *indexing.borrow_and_update() else { continue };
                if said.is_some_and(|said| step.done <= said) {
                    continue;
                }
                said = Some(step.done);
                let message = match step.total {
                    Some(total) => format!("indexing the folder: {} of {total} new or changed files", step.done),
                    None => "indexing the folder: looking for new and changed files".to_string(),
                };
                let mut param = ProgressNotificationParam::new(token.clone(), step.done as f64).with_message(message);
                if let Some(total) = step.total {
                    param = param.with_total(total as f64);
                }
                if let Err(e) = peer.notify_progress(param).await {
                    tracing::debug!("cannot send progress: {e}");
                }
            }
        }
    }
}

/// Parses a tool's arguments, runs it on the blocking pool on an index brought up to date,
/// and converts its answer or its error.
async fn call<A, R>(
    folder: Arc<Folder>,
    arguments: serde_json::Value,
    tool: fn(&Fresh, A) -> Result<R, ToolError>,
) -> CallToolResult
where
    A: DeserializeOwned + Send + 'static,
    R: Serialize + Send + 'static,
{
    let args: A = match serde_json::from_value(arguments) {
        Ok(args) => args,
        Err(e) => return failure(format!("invalid arguments: {e}")),
    };
    let answer = tokio::task::spawn_blocking(move || {
        let fresh = folder.fresh().map_err(ToolError::new)?;
        let answer = tool(&fresh, args);
        if answer.as_ref().is_err_and(|e| e.damaged) {
            tracing::warn!(
                "the index's files are damaged: it is opened again, and so rebuilt, at the next call"
            );
            folder.reopen_later();
        }
        answer
    })
    .await;
    match answer {
        Ok(Ok(result)) => match serde_json::to_value(&result) {
            Ok(value) => CallToolResult::structured(value),
            Err(e) => failure(format!("cannot encode the answer: {e}")),
        },
        Ok(Err(e)) => failure(e.message),
        // A panic in the tool: this call fails, and the server goes on serving.
        Err(e) => {
            tracing::error!("a tool call failed: {e}");
            failure(format!("the tool failed: {e}"))
        }
    }
}

fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
