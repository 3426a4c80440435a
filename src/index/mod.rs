//! The on-disk index: the chunk store and BM25 (tantivy), vectors (usearch) and the
//! manifest, kept consistent through one commit sequence.
//!
//! A commit writes, in order: the new vectors (in memory), the tantivy commit (its payload
//! carries the generation and the pipeline fingerprint), the vector changes (appended to the
//! journal, or the vector file written whole), the manifest. Each write is atomic. Tantivy is
//! the source of truth: on open, a manifest or vector file from another generation is
//! repaired from the chunk store (the manifest rebuilt, missing vectors re-embedded from
//! stored texts), so a crash at any point costs work, never correctness.
//!
//! The [`Index`] handle is opened in [`open`], changed in [`write`] and [`pending`], made
//! durable in [`commit`]; [`Snapshot`]s of its commits are read from any thread. While a
//! slow model's vectors are pending, [`quick`] vectors from the built-in model stand in for
//! them.

mod checked;
mod commit;
pub mod files;
mod handoff;
mod journal;
mod load;
pub mod lock;
pub mod manifest;
mod manifest_file;
mod manifest_log;
mod manifest_open;
pub mod metadata;
mod open;
mod pending;
mod record;
mod retired;
mod schema;
mod sign_bits;
mod snapshot;
mod store_dir;
mod vector_file;
mod vector_log;
mod vector_open;
mod vector_scan;
mod vector_sidecar;
mod vectors;
mod write;

use std::path::Path;

pub use files::{default_dir, dir_bytes};
/// The framing (magic, length, checksum) and the number codes of the manifest's file, for
/// the other small binary files kept in the index folder.
pub(crate) use manifest_file::{Reader as BytesReader, Writer as BytesWriter, framed, unframed};
pub use open::Index;
pub use pending::PendingTexts;
pub use record::{
    ApplyStats, ChunkRecord, FileChange, PreparedChunk, PreparedFile, SnippetUpdate, VectorTiming,
};
pub use snapshot::{Scope, Snapshot};
pub use vector_file::{EXACT_VECTOR_LIMIT, VectorSearch};
pub use vectors::{VectorError, VectorIndex};
pub use write::embed_texts;

use crate::providers::EmbedError;

/// An index failure, with the path involved.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("chunk store {path}: {source}")]
    Store { path: String, source: tantivy::TantivyError },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error(transparent)]
    Vector(#[from] VectorError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("no index at {path} yet: run `situate index` first")]
    Missing { path: String },
    #[error("another situate process is creating the index at {path}; try again when it is done")]
    BeingCreated { path: String },
    #[error("the index is read-only here: another situate process is writing it")]
    ReadOnly,
}

impl IndexError {
    /// Whether the index's files are damaged, so that rebuilding them from the workspace is
    /// the cure. A failure of the machine rather than of the files (no space left, no
    /// permission, a read-only disk, too many open files) is not damage: a rebuild would
    /// meet it again, and at a million chunks it costs minutes.
    pub fn is_damage(&self) -> bool {
        match self {
            IndexError::Io { source, .. } => !is_machine_failure(source),
            IndexError::Store { source: tantivy::TantivyError::IoError(source), .. } => {
                !is_machine_failure(source)
            }
            IndexError::Vector(VectorError { io: Some(source), .. }) => !is_machine_failure(source),
            IndexError::Store { .. } | IndexError::Vector(_) => true,
            IndexError::Embed(_)
            | IndexError::Missing { .. }
            | IndexError::BeingCreated { .. }
            | IndexError::ReadOnly => false,
        }
    }
}

/// Whether an IO error says what the machine could not do now, not what the files are.
fn is_machine_failure(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    // Too many open files, of the process or of the system (EMFILE, ENFILE), have no kind.
    let too_many_open = cfg!(unix) && matches!(error.raw_os_error(), Some(23 | 24));
    too_many_open
        || matches!(
            error.kind(),
            PermissionDenied
                | StorageFull
                | QuotaExceeded
                | ReadOnlyFilesystem
                | OutOfMemory
                | Interrupted
                | WouldBlock
                | TimedOut
                | ResourceBusy
        )
}

pub(super) fn store_err(path: &Path) -> impl FnOnce(tantivy::TantivyError) -> IndexError + '_ {
    move |source| IndexError::Store { path: path.display().to_string(), source }
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError + '_ {
    move |source| IndexError::Io { path: path.display().to_string(), source }
}

/// Whether this process may change the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Take the writer lock (fails over to read-only in the caller when it is held).
    Write,
    ReadOnly,
    /// Read-only, for a search by words alone: no vector file is read, so opening costs
    /// the same whatever the number of vectors.
    ReadWords,
}

/// The fields BM25 searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// The chunk's original text.
    Text,
    /// The document title.
    Title,
    /// The heading path.
    Headings,
    /// The file path as words.
    Path,
    /// The LLM-written snippet.
    Snippet,
    /// The values of the front matter fields the header carries (`context.header_fields`).
    Metadata,
}

/// One term of a BM25 query: an analysed term in one field, with its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct WeightedTerm {
    pub field: TextField,
    pub term: String,
    pub weight: f32,
}

#[cfg(test)]
mod tests {
    use std::io::{Error, ErrorKind};
    use std::sync::Arc;

    use super::*;

    fn io(error: Error) -> IndexError {
        IndexError::Io { path: "chunks".to_string(), source: error }
    }

    #[test]
    fn damaged_files_are_damage_and_a_failing_machine_is_not() {
        for kind in [ErrorKind::InvalidData, ErrorKind::UnexpectedEof, ErrorKind::NotFound] {
            assert!(io(Error::from(kind)).is_damage(), "{kind:?}");
        }
        for kind in [ErrorKind::PermissionDenied, ErrorKind::StorageFull, ErrorKind::ReadOnlyFilesystem] {
            assert!(!io(Error::from(kind)).is_damage(), "{kind:?}");
        }
        #[cfg(unix)]
        assert!(!io(Error::from_raw_os_error(24)).is_damage(), "too many open files");
        let store = |source| IndexError::Store { path: "chunks".to_string(), source };
        assert!(
            !store(tantivy::TantivyError::IoError(Arc::new(Error::from(ErrorKind::StorageFull)))).is_damage()
        );
        assert!(
            store(tantivy::TantivyError::IoError(Arc::new(Error::from(ErrorKind::InvalidData)))).is_damage()
        );
        assert!(store(tantivy::TantivyError::InvalidArgument("bad".to_string())).is_damage());
        assert!(!IndexError::ReadOnly.is_damage());
        // A vector file: the file system's error decides; usearch's own failures are damage.
        let path = std::path::Path::new("vectors.usearch");
        let vector = |kind| IndexError::Vector(VectorError::io_at(path, Error::from(kind)));
        assert!(!vector(ErrorKind::PermissionDenied).is_damage());
        assert!(vector(ErrorKind::NotFound).is_damage());
        assert!(
            IndexError::Vector(VectorError::at(path, "the file does not match its checksum")).is_damage()
        );
    }
}
