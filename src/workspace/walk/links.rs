//! Following symbolic links in the walk (`follow_symlinks`): the folders behind links are
//! walked after the workspace's own, a level at a time, each folder once however many ways
//! lead to it, and a link back into a folder above it never makes the walk go round.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rayon::iter::{IntoParallelIterator, ParallelIterator};

use super::{Folder, Rules, Walk, is_folder, joined, lock, open_folder, size_and_time};
use crate::workspace::{SkipReason, Skipped, SourceFile, WalkResult, is_excluded};

/// What a walk that follows symbolic links keeps track of.
///
/// The workspace's own folders are walked first, as without links. The folders behind the
/// links met there are then walked a level at a time, shallowest first, and each level's
/// folders are claimed in order of their paths before any is read: where two ways lead to
/// one folder, it is indexed at the workspace's own place for it, else at the shallowest
/// place, else the first by path, whatever order the threads met them in.
pub(super) struct Links {
    /// Every folder walked, by device and inode, with the place it was walked at.
    walked: Mutex<HashMap<(u64, u64), String>>,
    /// The linked folders met in this round, to walk in the next.
    waiting: Mutex<Vec<Folder>>,
    /// The index folder, by device and inode and by its resolved path.
    index_dir: Option<((u64, u64), PathBuf)>,
}

impl Links {
    pub(super) fn new(index_dir: Option<&Path>) -> Links {
        let index_dir = index_dir.and_then(|dir| {
            let id = open_folder(dir).and_then(|fd| identity(&fd)).ok()?;
            Some((id, dir.to_path_buf()))
        });
        Links { walked: Mutex::default(), waiting: Mutex::default(), index_dir }
    }

    /// Puts a folder behind a link in line for its level.
    pub(super) fn wait(&self, folder: Folder) {
        lock(&self.waiting).push(folder);
    }

    /// Whether a link's target `abs` lies in the index folder.
    fn leads_into_index(&self, abs: &Path) -> bool {
        self.index_dir.as_ref().is_some_and(|(_, dir)| abs.canonicalize().is_ok_and(|p| p.starts_with(dir)))
    }
}

impl Walk<'_> {
    /// What a followed link leads to: a folder waits for the next round, a file the
    /// configuration selects is kept at the link's path, and a link to nothing is reported.
    pub(super) fn met_link(
        &self,
        links: &Links,
        folder: &Folder,
        name: &[u8],
        target: std::io::Result<libc::stat>,
        rules: Option<&Arc<Rules>>,
        local: &mut WalkResult,
    ) {
        let rel = joined(&folder.rel, name);
        let abs = folder.abs.join(OsStr::from_bytes(name));
        match target {
            Ok(stat) if is_folder(&stat) => {
                if !links.leads_into_index(&abs) {
                    let child = Folder { abs, rel: rel + "/", rules: rules.cloned(), linked: true };
                    links.wait(child);
                }
            }
            Ok(stat) if stat.st_mode & libc::S_IFMT == libc::S_IFREG => {
                if self.filter.keeps(&rel) && !links.leads_into_index(&abs) {
                    let (size, mtime_ns) = size_and_time(&stat);
                    local.files.push(SourceFile { rel_path: rel, abs_path: abs, size, mtime_ns });
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) => {
                if self.filter.exclude.as_ref().is_some_and(|g| is_excluded(g, &rel)) {
                    return;
                }
                let target = std::fs::read_link(&abs).map(|t| t.display().to_string()).unwrap_or_default();
                local.skipped.push(Skipped { path: rel, reason: SkipReason::DanglingLink { target } });
            }
            Err(e) => local.skipped.push(Skipped {
                path: rel,
                reason: SkipReason::Unreadable { error: format!("{}: {e}", abs.display()) },
            }),
        }
    }

    /// Walks the folders behind the links met so far, a level at a time: those at the least
    /// depth are claimed one after the other in order of their paths, then read on several
    /// threads, and what they hold (folders, links) waits with the rest for its own level.
    pub(super) fn follow(&self, links: &Links) {
        loop {
            let waiting = std::mem::take(&mut *lock(&links.waiting));
            let Some(depth) = waiting.iter().map(depth).min() else { return };
            let (mut level, deeper): (Vec<Folder>, Vec<Folder>) =
                waiting.into_iter().partition(|f| self::depth(f) == depth);
            lock(&links.waiting).extend(deeper);
            level.sort_by(|a, b| a.rel.split('/').cmp(b.rel.split('/')));
            // Asked by path, not through a handle: a level can hold more folders than the
            // process may hold open.
            let known: Vec<(Folder, std::io::Result<(u64, u64)>)> = level
                .into_par_iter()
                .map(|folder| {
                    let id = std::fs::metadata(&folder.abs).map(|m| (m.dev(), m.ino()));
                    (folder, id)
                })
                .collect();
            let mut claimed = Vec::new();
            for (folder, id) in known {
                match id {
                    Ok(id) if self.claims(links, id, &folder) => claimed.push(folder),
                    Ok(_) => {}
                    Err(e) => {
                        let skip = self.unreadable(&folder, &e);
                        self.found().skipped.push(skip);
                    }
                }
            }
            claimed.into_par_iter().for_each(|folder| match open_folder(&folder.abs) {
                Ok(fd) => rayon::scope(|scope| self.read_folder(scope, Arc::new(fd), folder)),
                Err(e) => {
                    let skip = self.unreadable(&folder, &e);
                    self.found().skipped.push(skip);
                }
            });
        }
    }

    /// Notes a folder of the workspace itself as walked; `false` when it is the index folder
    /// (or cannot be asked about), which is not walked. Two of the workspace's own places for
    /// one folder (a bind mount) are both walked, as without links.
    pub(super) fn notes_own_folder(&self, links: &Links, fd: &OwnedFd, folder: &Folder) -> bool {
        let id = match identity(fd) {
            Ok(id) => id,
            Err(e) => {
                let skip = self.unreadable(folder, &e);
                self.found().skipped.push(skip);
                return false;
            }
        };
        if links.index_dir.as_ref().is_some_and(|(dir, _)| *dir == id) {
            return false;
        }
        lock(&links.walked).entry(id).or_insert_with(|| folder.rel.trim_end_matches('/').to_string());
        true
    }

    /// Whether `folder`, behind a link, is walked here: not when it is the index folder, nor
    /// when it was walked already (reported as a loop when that was on the way down to it,
    /// else as indexed at the other place).
    fn claims(&self, links: &Links, id: (u64, u64), folder: &Folder) -> bool {
        if links.index_dir.as_ref().is_some_and(|(dir, _)| *dir == id) {
            return false;
        }
        let place = folder.rel.trim_end_matches('/');
        let reason = match lock(&links.walked).entry(id) {
            Entry::Vacant(entry) => {
                entry.insert(place.to_string());
                return true;
            }
            Entry::Occupied(entry) if entry.get().is_empty() => SkipReason::LinkLoop { ancestor: ".".into() },
            Entry::Occupied(entry) => {
                let before = entry.get();
                if place.strip_prefix(before.as_str()).is_some_and(|rest| rest.starts_with('/')) {
                    SkipReason::LinkLoop { ancestor: before.clone() }
                } else {
                    SkipReason::AlreadyIndexed { indexed_as: before.clone() }
                }
            }
        };
        self.found().skipped.push(Skipped { path: place.to_string(), reason });
        false
    }
}

/// How many folders down from the top `folder` lies.
fn depth(folder: &Folder) -> usize {
    folder.rel.matches('/').count()
}

/// The device and inode of an open folder: the same folder whatever way led to it.
fn identity(fd: &OwnedFd) -> std::io::Result<(u64, u64)> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fd` is open and `stat` room for the answer.
    if unsafe { libc::fstat(fd.as_raw_fd(), stat.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the call succeeded, so it filled `stat`.
    let stat = unsafe { stat.assume_init() };
    // The fields' types differ from one platform to another.
    #[allow(clippy::unnecessary_cast)]
    Ok((stat.st_dev as u64, stat.st_ino as u64))
}
