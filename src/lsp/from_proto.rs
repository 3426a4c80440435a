//! Conversions from protocol values to what the service reads: `file:` URIs to paths, and a
//! command's single object argument to its parameters.

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::Uri;

/// The path of a `file:` URI, resolved; anything else is an error.
pub fn file_path(uri: &Uri) -> Result<PathBuf> {
    // Symlinked workspaces: compare canonical paths, as the folders are.
    named_path(uri).map(|p| p.canonicalize().unwrap_or(p))
}

/// The path of a `file:` URI as the client names it, its symbolic links not resolved (see
/// `State::folder_of_file`); anything else is an error.
pub fn named_path(uri: &Uri) -> Result<PathBuf> {
    let is_file = uri.scheme().as_str().eq_ignore_ascii_case("file");
    match uri.to_file_path() {
        Some(p) if is_file && p.is_absolute() => Ok(p.into_owned()),
        _ => Err(Error::invalid_params(format!("{} is not a file: URI", uri.as_str()))),
    }
}

/// The command's single object argument (none at all reads as `{}`).
pub fn argument<T: DeserializeOwned>(command: &str, arguments: Vec<Value>) -> Result<T> {
    let value = match arguments.len() {
        0 => Value::Object(Default::default()),
        1 => arguments.into_iter().next().unwrap_or_default(),
        n => return Err(Error::invalid_params(format!("{command} takes one object argument, got {n}"))),
    };
    serde_json::from_value(value).map_err(|e| Error::invalid_params(format!("{command}: {e}")))
}
