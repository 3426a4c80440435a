//! What the request handlers read and only the event task writes: the position encoding, the
//! open buffers and the workspace folders.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use super::documents::{Documents, Encoding};
use crate::service::Folder;

/// What handlers read; only the event task writes it.
#[derive(Default)]
pub struct State {
    pub(super) encoding: OnceLock<Encoding>,
    pub(super) documents: RwLock<Documents>,
    pub(super) folders: RwLock<Vec<Arc<Folder>>>,
    /// `shutdown` was received (so `exit` ends with code 0).
    pub shut_down: AtomicBool,
    /// The settings file every folder reads (`situate lsp --config`), if one was given.
    pub config_file: Option<PathBuf>,
}

impl State {
    pub(super) fn encoding(&self) -> Encoding {
        *self.encoding.get().unwrap_or(&Encoding::Utf16)
    }

    pub(super) fn folders(&self) -> Vec<Arc<Folder>> {
        self.folders.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The innermost folder holding `path`.
    pub(super) fn folder_of(&self, path: &Path) -> Option<Arc<Folder>> {
        self.folders()
            .into_iter()
            .filter(|f| path.starts_with(&f.root))
            .max_by_key(|f| f.root.as_os_str().len())
    }
}
