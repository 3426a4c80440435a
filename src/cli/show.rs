//! `situate show`: how a file, or the chunk at one of its lines, was indexed.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{open, render};
use crate::engine::{LookupError, OpenMode};
use crate::wire::ChunkJson;

/// Show how a file, or the chunk at one of its lines, was indexed.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// FILE or FILE:LINE (workspace-relative or absolute).
    pub target: String,
    /// The workspace folder.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Print the chunks as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ShowArgs, config: Option<&Path>, out: &mut impl Write) -> Result<()> {
    let engine = open(&args.dir, config, OpenMode::ReadOnly)?;
    let view = engine.view();
    let (file, line) = split_target(&args.target);
    let rel = view.indexed_file(file)?;
    let chunks = view.passages(&rel, line)?;
    if chunks.is_empty() {
        // Indexed all the same: an answer, not an error; stdout stays data.
        eprintln!("situate: {}", LookupError::NoText { path: rel.clone() });
    }
    if args.json {
        let chunks: Vec<ChunkJson> = chunks.iter().map(ChunkJson::from).collect();
        serde_json::to_writer_pretty(&mut *out, &chunks)?;
        writeln!(out)?;
    } else {
        render::chunks(out, &chunks, view.chunk_count(&rel))?;
    }
    Ok(())
}

/// `notes/a.md:12` → (`notes/a.md`, 12). A suffix that is not a line number stays part of
/// the path.
fn split_target(target: &str) -> (&str, Option<u32>) {
    match target.rsplit_once(':') {
        Some((file, line)) if !file.is_empty() => match line.parse::<u32>() {
            Ok(n) => (file, Some(n)),
            Err(_) => (target, None),
        },
        _ => (target, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_at_a_trailing_line_number() {
        assert_eq!(split_target("a.md:12"), ("a.md", Some(12)));
        assert_eq!(split_target("a.md"), ("a.md", None));
        assert_eq!(split_target("dir:x/a.md"), ("dir:x/a.md", None));
        assert_eq!(split_target(":3"), (":3", None));
    }
}
