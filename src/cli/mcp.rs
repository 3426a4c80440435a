//! `situate mcp`: the Model Context Protocol server on stdin/stdout, for AI agents.

use std::path::Path;

use anyhow::{Context, Result};

/// Serve the workspace's search to AI agents over the Model Context Protocol (stdio).
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(flatten)]
    folder: super::Folder,
    /// Seconds without a tool call (and with no vectors left to fill) after which the server
    /// lets go of the index's writer lock, so that an editor or `situate index` can write
    /// the index; the next call takes it again when it is free.
    #[arg(long, value_name = "SECONDS", default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub idle: u64,
}

pub fn run(args: McpArgs, config: Option<&Path>) -> Result<()> {
    super::settings_readable(config)?;
    crate::mcp::serve_stdio(args.folder.path(), config, std::time::Duration::from_secs(args.idle))
        .context("cannot serve MCP")
}
