//! `situate mcp`: the Model Context Protocol server on stdin/stdout, for AI agents.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Serve the workspace's search to AI agents over the Model Context Protocol (stdio).
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// The workspace folder.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

pub fn run(args: McpArgs, config: Option<&Path>) -> Result<()> {
    super::settings_readable(config)?;
    crate::mcp::serve_stdio(&args.dir, config).context("cannot serve MCP")
}
