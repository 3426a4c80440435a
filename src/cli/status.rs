//! `situate status`: what the index holds and its health.

use std::io::Write;
use std::path::Path;

use anyhow::Result;

use super::{open, render};
use crate::engine::OpenMode;
use crate::wire::StatusJson;

/// Show what the index holds and its health.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    folder: super::Folder,
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: StatusArgs, config: Option<&Path>, out: &mut impl Write) -> Result<()> {
    let engine = open(args.folder.path(), config, OpenMode::ReadOnly)?;
    let status = engine.view().status_with_estimate()?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &StatusJson::from(&status))?;
        writeln!(out)?;
    } else {
        render::status(out, &status)?;
    }
    Ok(())
}
