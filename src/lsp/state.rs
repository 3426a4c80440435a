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

    /// The innermost folder holding the file the client names `named`, and the file's path
    /// as that folder sees it: resolved as the folders are (a workspace opened through a
    /// link), but for a symbolic link inside the folder that leads out of it, which the walk
    /// follows with `follow_symlinks` (`shared/recipes/bread.md`, not the place `shared`
    /// leads to).
    pub(super) fn folder_of_file(&self, named: &Path) -> Option<(Arc<Folder>, PathBuf)> {
        let resolved = named.canonicalize().unwrap_or_else(|_| named.to_path_buf());
        if let Some(folder) = self.folder_of(&resolved) {
            return Some((folder, resolved));
        }
        named.ancestors().skip(1).find_map(|ancestor| {
            let resolved = ancestor.canonicalize().ok()?;
            let folder = self.folder_of(&resolved)?;
            Some((folder, resolved.join(named.strip_prefix(ancestor).ok()?)))
        })
    }
}
