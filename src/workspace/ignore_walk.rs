//! The `ignore` crate's own walk: the walk where there is no Unix (and no handle-based walk),
//! and what that walk is tested against.

use std::path::Path;

use ignore::WalkBuilder;

use super::{
    SkipReason, Skipped, SourceFile, WalkFilter, WalkResult, error_path, is_excluded, mtime_ns, relative_path,
};

/// The walk by the `ignore` crate's own walker, threaded (where the handle-based walk of
/// `walk.rs` is not built, and as what that walk is checked against).
#[cfg_attr(unix, allow(dead_code))]
pub(super) fn walk_with_the_ignore_crate(root: &Path, filter: &WalkFilter<'_>) -> WalkResult {
    let found = std::sync::Mutex::new(WalkResult::default());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(WALK_THREADS);
    walk_builder(root, filter.config.follow_symlinks)
        .threads(threads)
        .build_parallel()
        .visit(&mut VisitorBuilder { filter, found: &found });
    found.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// At most this many threads read folders in a walk.
const WALK_THREADS: usize = 8;

/// The walk's rules: ignore files, hidden files, symlinks followed only when asked.
pub(super) fn walk_builder(root: &Path, follow_symlinks: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .ignore(true)
        .parents(false)
        .require_git(false)
        .follow_links(follow_symlinks);
    builder
}

impl WalkFilter<'_> {
    /// Adds what one entry of the walk contributes (a file, a skip, or nothing).
    pub(super) fn visit(&self, entry: Result<ignore::DirEntry, ignore::Error>, result: &mut WalkResult) {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let skip = self.link_skip(&e).unwrap_or_else(|| {
                    Some(Skipped {
                        path: error_path(&e, self.root),
                        reason: SkipReason::Unreadable { error: e.to_string() },
                    })
                });
                result.skipped.extend(skip);
                return;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return;
        }
        let path = entry.path();
        if let Some(dir) = &self.index_dir
            && path.canonicalize().is_ok_and(|p| p.starts_with(dir))
        {
            return;
        }
        let Some(rel_path) = relative_path(self.root, path) else { return };
        if !self.keeps(&rel_path) {
            return;
        }
        match entry.metadata() {
            Ok(meta) => result.files.push(SourceFile {
                rel_path,
                abs_path: path.to_path_buf(),
                size: meta.len(),
                mtime_ns: mtime_ns(&meta),
            }),
            Err(e) => result
                .skipped
                .push(Skipped { path: rel_path, reason: SkipReason::Unreadable { error: e.to_string() } }),
        }
    }

    /// The skip the `ignore` crate's error stands for when it is about a followed link: a
    /// loop, or a link to nothing, which is passed over in silence (`Some(None)`) when its
    /// name is hidden or excluded, as in the handle-based walk.
    fn link_skip(&self, error: &ignore::Error) -> Option<Option<Skipped>> {
        match error {
            ignore::Error::WithDepth { err, .. } => self.link_skip(err),
            ignore::Error::Loop { ancestor, child } => Some(Some(Skipped {
                path: relative_path(self.root, child)?,
                reason: SkipReason::LinkLoop {
                    ancestor: relative_path(self.root, ancestor).unwrap_or_else(|| ".".to_string()),
                },
            })),
            ignore::Error::WithPath { path, err } if matches!(&**err, ignore::Error::Io(e) if e.kind() == std::io::ErrorKind::NotFound) =>
            {
                let target = std::fs::read_link(path).ok()?;
                let rel = relative_path(self.root, path)?;
                let hidden = rel.split('/').any(|part| part.starts_with('.'));
                if hidden || self.exclude.as_ref().is_some_and(|g| is_excluded(g, &rel)) {
                    return Some(None);
                }
                Some(Some(Skipped {
                    path: rel,
                    reason: SkipReason::DanglingLink { target: target.display().to_string() },
                }))
            }
            _ => None,
        }
    }
}

/// The kind of the IO error inside `error`, if that is what it is.
#[cfg_attr(unix, allow(dead_code))]
fn io_error_kind(error: &ignore::Error) -> Option<std::io::ErrorKind> {
    match error {
        ignore::Error::Io(e) => Some(e.kind()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithPath { err, .. } => io_error_kind(err),
        _ => None,
    }
}

/// Gives each walking thread a visitor of its own.
struct VisitorBuilder<'s, 'a> {
    filter: &'s WalkFilter<'a>,
    found: &'s std::sync::Mutex<WalkResult>,
}

impl<'s, 'a> ignore::ParallelVisitorBuilder<'s> for VisitorBuilder<'s, 'a> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor { filter: self.filter, found: self.found, local: WalkResult::default() })
    }
}

/// One walking thread's findings, kept apart and merged when the thread is done.
struct Visitor<'s, 'a> {
    filter: &'s WalkFilter<'a>,
    found: &'s std::sync::Mutex<WalkResult>,
    local: WalkResult,
}

impl ignore::ParallelVisitor for Visitor<'_, '_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        self.filter.visit(entry, &mut self.local);
        ignore::WalkState::Continue
    }
}

impl Drop for Visitor<'_, '_> {
    fn drop(&mut self) {
        let mut found = self.found.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        found.files.append(&mut self.local.files);
        found.skipped.append(&mut self.local.skipped);
    }
}
