//! Files, folders and lines that a user names (a file to show, a folder to search under),
//! checked against a view's index: a mistake is a [`LookupError`] that says how to put it
//! right, never an empty answer. The command line and the MCP server both ask here.

use super::EngineError;
use super::view::{Freshness, View};
use crate::index::ChunkRecord;
use crate::search;

/// Why a named file, folder or line has nothing to give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error("`{path}` lies outside the workspace")]
    Outside { path: String },
    #[error("no file `{path}` in the workspace{}", did_you_mean(.same_name))]
    NoFile {
        path: String,
        /// Indexed files with the same name, elsewhere.
        same_name: Vec<String>,
    },
    #[error("`{path}` is a folder: name a file in it, e.g. `{inside}`")]
    Folder { path: String, inside: String },
    #[error("`{path}` is a folder that holds no indexed file: name a file")]
    EmptyFolder { path: String },
    #[error("`{path}` was skipped when the workspace was indexed: {reason}")]
    Skipped { path: String, reason: String },
    #[error(
        "`{path}` is not indexed: only the files that the settings select are (`extensions`, \
         `include` and `exclude`; status lists the files left out for their contents and why)"
    )]
    NotSelected { path: String },
    #[error("no indexed file lies under `{path}`{}", listed_folders(.top_folders))]
    NothingUnder {
        path: String,
        /// The index's top-level folders, to choose from.
        top_folders: Vec<String>,
    },
    #[error("lines are numbered from 1")]
    LineZero,
    #[error("line {line} is past the last passage of `{path}`, which ends at line {last}")]
    PastEnd { path: String, line: u32, last: u32 },
    #[error("`{path}` holds no text to index: it is empty, or holds only front matter")]
    NoText { path: String },
}

fn did_you_mean(paths: &[String]) -> String {
    if paths.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = paths.iter().map(|p| format!("`{p}`")).collect();
    format!("; did you mean {}?", quoted.join(" or "))
}

fn listed_folders(folders: &[String]) -> String {
    if folders.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = folders.iter().map(|t| format!("`{t}`")).collect();
    format!("; top-level folders: {}", quoted.join(", "))
}

/// Same-named files suggested at most.
const MAX_SAME_NAME: usize = 3;
/// Top-level folders listed at most.
const MAX_FOLDERS: usize = 20;

impl View {
    /// `path` (workspace-relative, `./`-prefixed or absolute) as the workspace-relative path
    /// of an indexed file.
    pub fn indexed_file(&self, path: &str) -> Result<String, LookupError> {
        let path = path.trim();
        let Some(rel) = self.relative(path) else {
            return Err(LookupError::Outside { path: path.to_string() });
        };
        if self.indexed_paths().any(|p| p == rel) {
            return Ok(rel);
        }
        let prefix = format!("{}/", rel.trim_end_matches('/'));
        if let Some(inside) = self.indexed_paths().find(|p| p.starts_with(&prefix)) {
            return Err(LookupError::Folder { path: rel, inside: inside.to_string() });
        }
        if let Some(skipped) = self.snapshot.manifest().skipped.iter().find(|s| s.path == rel) {
            return Err(LookupError::Skipped { path: rel, reason: skipped.reason.to_string() });
        }
        if self.setup.root.join(&rel).is_dir() {
            return Err(LookupError::EmptyFolder { path: rel });
        }
        match self.freshness(&rel) {
            Freshness::Unindexed => Err(LookupError::NotSelected { path: rel }),
            _ => {
                let name = rel.rsplit('/').next().unwrap_or(&rel);
                let same_name = self
                    .indexed_paths()
                    .filter(|p| p.rsplit('/').next() == Some(name))
                    .take(MAX_SAME_NAME)
                    .map(str::to_string)
                    .collect();
                Err(LookupError::NoFile { path: rel, same_name })
            }
        }
    }

    /// `path` (workspace-relative, `./`-prefixed or absolute) as a workspace-relative prefix
    /// that holds at least one indexed file, for a search to keep to; the workspace itself is
    /// the empty prefix.
    pub fn indexed_prefix(&self, path: &str) -> Result<String, LookupError> {
        let path = path.trim();
        let Some(rel) = self.relative(path) else {
            return Err(LookupError::Outside { path: path.to_string() });
        };
        let rel = rel.trim_end_matches('/');
        let rel = if rel == "." { "" } else { rel };
        if !self.indexed_paths().any(|p| search::under(p, rel)) {
            return Err(LookupError::NothingUnder { path: rel.to_string(), top_folders: self.top_folders() });
        }
        Ok(rel.to_string())
    }

    /// The chunks of the indexed file at `rel`, or the one holding `line` (the next one when
    /// the line falls between chunks); a line past the file's last chunk is an error.
    pub fn passages(&self, rel: &str, line: Option<u32>) -> Result<Vec<ChunkRecord>, EngineError> {
        if line == Some(0) {
            return Err(LookupError::LineZero.into());
        }
        let records = self.chunks_at(rel, line)?;
        if let Some(line) = line
            && records.is_empty()
        {
            let Some(last) = self.chunks_at(rel, None)?.last().map(|r| r.end_line) else {
                return Err(LookupError::NoText { path: rel.to_string() }.into());
            };
            return Err(LookupError::PastEnd { path: rel.to_string(), line, last }.into());
        }
        Ok(records)
    }

    /// The index's top-level folders, sorted.
    fn top_folders(&self) -> Vec<String> {
        // Sorted paths keep each folder's files together.
        let mut tops: Vec<&str> =
            self.indexed_paths().filter_map(|p| p.split_once('/').map(|(t, _)| t)).collect();
        tops.dedup();
        tops.into_iter().take(MAX_FOLDERS).map(str::to_string).collect()
    }
}
