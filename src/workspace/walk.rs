//! The walk over a workspace's folders on Unix: each folder is read through a handle on it,
//! and each file's size and time are asked of that handle by name, so that the system does
//! not look up every folder on a file's path again for each of the file's calls.
//!
//! At 80,000 files in 23,000 folders the walk is a stat of every file and a read of every
//! folder; asking by full path spent about a third of it finding the files again. The rules
//! are the `ignore` crate's, with the options of [`super::walk`]: `.ignore`, `.gitignore` and
//! `.git/info/exclude` in every folder (without a git repository too), no rules from above
//! the root, hidden names left out unless a rule takes them back. The matching is the
//! crate's own ([`Gitignore`]); the order in which folders' rules count is the crate's, and a
//! test holds the two walks to the same result.
//!
//! Symbolic links are followed only with `follow_symlinks` ([`Links`]); without it a link is
//! passed over on the kind the folder's listing gives, at no cost. With it, every folder's
//! device and inode are asked once, so that a folder is walked once however many ways lead
//! to it, and a link back into a folder above it never makes the walk go round.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use links::Links;

use super::{
    SkipReason, Skipped, SourceFile, WalkFilter, WalkResult, error_path, has_extension, mtime_ns_of,
};

mod links;

/// Lists what `filter` keeps below `root`, unsorted.
pub(super) fn walk(root: &Path, filter: &WalkFilter<'_>, index_dir_rel: Option<&str>) -> WalkResult {
    let found = Mutex::new(WalkResult::default());
    let links = filter.config.follow_symlinks.then(|| Links::new(filter.index_dir.as_deref()));
    let walk = Walk { root, filter, index_dir_rel, found: &found, links: links.as_ref() };
    match open_folder(root) {
        Ok(fd) => {
            let folder = Folder { abs: root.to_path_buf(), rel: String::new(), rules: None, linked: false };
            rayon::scope(|scope| walk.read_folder(scope, Arc::new(fd), folder));
            if let Some(links) = &links {
                walk.follow(links);
            }
        }
        Err(e) => walk.found().skipped.push(Skipped {
            path: root.display().to_string(),
            reason: SkipReason::Unreadable { error: format!("{}: {e}", root.display()) },
        }),
    }
    found.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// One walk's settings and findings, shared by the threads that read folders.
struct Walk<'a> {
    root: &'a Path,
    filter: &'a WalkFilter<'a>,
    /// The index folder, relative to the root, when it lies inside the workspace.
    index_dir_rel: Option<&'a str>,
    found: &'a Mutex<WalkResult>,
    /// What a walk that follows links keeps track of (`None`: links are not followed).
    links: Option<&'a Links>,
}

/// A folder to read.
struct Folder {
    /// Its path as walked: through the links that led to it, not resolved.
    abs: PathBuf,
    /// Relative to the root, `/`-separated, ending in `/` (empty for the root).
    rel: String,
    /// The rules of the ignore files in this folder and above it (`None`: no such files).
    rules: Option<Arc<Rules>>,
    /// Reached through a link: walked a level at a time, and not when walked already.
    linked: bool,
}

/// The entries of one folder (without `.` and `..`): their names, each ending in a NUL,
/// one after the other, and where each starts with its kind.
struct Listing {
    names: Vec<u8>,
    entries: Vec<(usize, Kind)>,
}

impl Listing {
    fn entries(&self) -> impl Iterator<Item = (&CStr, Kind)> + '_ {
        self.entries.iter().map(|&(start, kind)| {
            // Each name was pushed with its NUL, and holds none before it.
            let name = CStr::from_bytes_until_nul(&self.names[start..]).unwrap_or_default();
            (name, kind)
        })
    }

    fn has(&self, name: &[u8]) -> bool {
        self.entries().any(|(n, _)| n.to_bytes() == name)
    }

    fn push(&mut self, name: &[u8], kind: Kind) {
        if name == b"." || name == b".." {
            return;
        }
        self.entries.push((self.names.len(), kind));
        self.names.extend_from_slice(name);
        self.names.push(0);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Folder,
    File,
    /// A symbolic link: followed only with `follow_symlinks`.
    Link,
    /// A socket, a device, a pipe: never walked.
    Other,
}

impl<'a> Walk<'a> {
    fn found(&self) -> std::sync::MutexGuard<'a, WalkResult> {
        self.found.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens the folder `name` of the folder `parent` and reads it. Folders waiting their
    /// turn hold their parent's handle, not one of their own: a folder of thousands of
    /// folders would otherwise hold thousands open at once, past the process's limit.
    fn open_and_read<'s>(&'s self, scope: &rayon::Scope<'s>, parent: &OwnedFd, name: &CStr, folder: Folder) {
        match open_child(parent, name) {
            Ok(fd) => self.read_folder(scope, Arc::new(fd), folder),
            Err(e) => {
                let skip = self.unreadable(&folder, &e);
                self.found().skipped.push(skip);
            }
        }
    }

    fn read_folder<'s>(&'s self, scope: &rayon::Scope<'s>, fd: Arc<OwnedFd>, folder: Folder) {
        if let Some(links) = self.links
            && !folder.linked
            && !self.notes_own_folder(links, &fd, &folder)
        {
            return;
        }
        let mut local = WalkResult::default();
        let listing = match Listing::read(&fd) {
            Ok(listing) => listing,
            Err(e) => {
                local.skipped.push(self.unreadable(&folder, &e));
                self.found().skipped.append(&mut local.skipped);
                return;
            }
        };
        let rules = Rules::for_folder(&folder, &listing, self.root, &mut local.skipped);
        for (name, kind) in listing.entries() {
            let bytes = name.to_bytes();
            // A link is matched by the rules as what it leads to, as the `ignore` crate does.
            let target = match (kind, self.links) {
                (Kind::Link, Some(_)) => Some(stat_at(&fd, name, true)),
                (Kind::Link | Kind::Other, _) => continue,
                _ => None,
            };
            let is_dir =
                kind == Kind::Folder || target.as_ref().is_some_and(|t| t.as_ref().is_ok_and(is_folder));
            // Paths are built only for what is kept: most entries of a large workspace are
            // files whose name is all the walk needs to look at before their stat.
            let matched = match &rules {
                Some(rules) => rules.matched(&folder.abs.join(OsStr::from_bytes(bytes)), is_dir),
                None => Match::None,
            };
            if matched.is_ignore() || (matched.is_none() && bytes.starts_with(b".")) {
                continue;
            }
            match kind {
                Kind::Folder => {
                    let rel = joined(&folder.rel, bytes);
                    if self.index_dir_rel == Some(rel.as_str()) {
                        continue;
                    }
                    let abs = folder.abs.join(OsStr::from_bytes(bytes));
                    let child = Folder { abs, rel: rel + "/", rules: rules.clone(), linked: folder.linked };
                    match self.links {
                        // Behind a link, folders are walked a level at a time (see `Links`).
                        Some(links) if folder.linked => links.wait(child),
                        _ => {
                            let (parent, name) = (Arc::clone(&fd), name.to_owned());
                            scope.spawn(move |scope| self.open_and_read(scope, &parent, &name, child));
                        }
                    }
                }
                Kind::File
                    if has_extension(&String::from_utf8_lossy(bytes), &self.filter.config.extensions) =>
                {
                    let rel = joined(&folder.rel, bytes);
                    if !self.filter.keeps(&rel) {
                        continue;
                    }
                    match stat_at(&fd, name, false) {
                        Ok(stat) => {
                            let abs_path = folder.abs.join(OsStr::from_bytes(bytes));
                            let (size, mtime_ns) = size_and_time(&stat);
                            local.files.push(SourceFile { rel_path: rel, abs_path, size, mtime_ns });
                        }
                        Err(e) => local.skipped.push(Skipped {
                            path: rel,
                            reason: SkipReason::Unreadable { error: e.to_string() },
                        }),
                    }
                }
                Kind::Link => {
                    if let (Some(links), Some(target)) = (self.links, target) {
                        self.met_link(links, &folder, bytes, target, rules.as_ref(), &mut local);
                    }
                }
                Kind::File | Kind::Other => {}
            }
        }
        if !local.files.is_empty() || !local.skipped.is_empty() {
            let mut found = self.found();
            found.files.append(&mut local.files);
            found.skipped.append(&mut local.skipped);
        }
    }

    fn unreadable(&self, folder: &Folder, error: &std::io::Error) -> Skipped {
        let path = folder.rel.trim_end_matches('/');
        Skipped {
            path: if path.is_empty() { self.root.display().to_string() } else { path.to_string() },
            reason: SkipReason::Unreadable { error: format!("{}: {error}", folder.abs.display()) },
        }
    }
}

/// `rel` (a folder's relative path, ending in `/` or empty) followed by `name`.
fn joined(rel: &str, name: &[u8]) -> String {
    let name = String::from_utf8_lossy(name);
    let mut path = String::with_capacity(rel.len() + name.len() + 1);
    path.push_str(rel);
    path.push_str(&name);
    path
}

/// The rules of one folder's ignore files, with those of the folders above it.
struct Rules {
    parent: Option<Arc<Rules>>,
    dot_ignore: Gitignore,
    gitignore: Gitignore,
    git_exclude: Gitignore,
}

impl Rules {
    /// The rules that hold in `folder`: its parent's, joined by its own ignore files' when it
    /// has any. A file that cannot be read or parsed is reported, and its other rules kept.
    fn for_folder(
        folder: &Folder,
        listing: &Listing,
        root: &Path,
        skipped: &mut Vec<Skipped>,
    ) -> Option<Arc<Rules>> {
        let (has_ignore, has_gitignore, has_git) =
            (listing.has(b".ignore"), listing.has(b".gitignore"), listing.has(b".git"));
        if !has_ignore && !has_gitignore && !has_git {
            return folder.rules.clone();
        }
        let dir = folder.abs.as_path();
        let mut report = |error: Option<ignore::Error>| {
            if let Some(e) = error {
                skipped.push(Skipped {
                    path: error_path(&e, root),
                    reason: SkipReason::Unreadable { error: e.to_string() },
                });
            }
        };
        let mut read = |present: bool, from: &Path, name: &str| {
            if !present {
                return Gitignore::empty();
            }
            let (rules, error) = rules_of(dir, &from.join(name));
            report(error);
            rules
        };
        let dot_ignore = read(has_ignore, dir, ".ignore");
        let gitignore = read(has_gitignore, dir, ".gitignore");
        let git_exclude = match has_git.then(|| git_common_dir(dir)).flatten() {
            Some(git_dir) => read(true, &git_dir, "info/exclude"),
            None => Gitignore::empty(),
        };
        Some(Arc::new(Rules { parent: folder.rules.clone(), dot_ignore, gitignore, git_exclude }))
    }

    /// Whether `path` is ignored, taken back (whitelisted) or neither: as in the `ignore`
    /// crate, the deepest folder whose `.ignore` says anything of it decides; failing that,
    /// the deepest `.gitignore`, then the deepest git exclude file.
    fn matched(self: &Arc<Rules>, path: &Path, is_dir: bool) -> Match<()> {
        let kinds: [fn(&Rules) -> &Gitignore; 3] = [|r| &r.dot_ignore, |r| &r.gitignore, |r| &r.git_exclude];
        for rules_of_kind in kinds {
            let mut level = Some(self);
            while let Some(rules) = level {
                let found = rules_of_kind(rules).matched(path, is_dir);
                if !found.is_none() {
                    return found.map(|_| ());
                }
                level = rules.parent.as_ref();
            }
        }
        Match::None
    }
}

/// The rules of one ignore file whose patterns are relative to `dir`.
fn rules_of(dir: &Path, file: &Path) -> (Gitignore, Option<ignore::Error>) {
    let mut builder = GitignoreBuilder::new(dir);
    let mut error = if file.exists() { builder.add(file) } else { None };
    let rules = builder.build().unwrap_or_else(|e| {
        error.get_or_insert(e);
        Gitignore::empty()
    });
    (rules, error)
}

/// The git folder whose `info/exclude` holds for `dir`: its `.git` folder, or, when `.git`
/// is a file (a linked worktree), the common folder it names, found as the `ignore` crate
/// finds it.
fn git_common_dir(dir: &Path) -> Option<PathBuf> {
    let dot_git = dir.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if !meta.is_file() {
        return Some(dot_git);
    }
    let first_line = |path: &Path| std::fs::read_to_string(path).ok()?.lines().next().map(str::to_string);
    let real = PathBuf::from(first_line(&dot_git)?.strip_prefix("gitdir: ")?);
    let common = first_line(&real.join("commondir"))?;
    Some(if common.starts_with('.') { real.join(common) } else { PathBuf::from(common) })
}

/// Opens a folder by its path, following links.
fn open_folder(path: &Path) -> std::io::Result<OwnedFd> {
    let path = CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: `path` is a valid C string; the descriptor returned is owned by no one else.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    owned(fd)
}

/// Opens a folder inside `parent` by name, refusing a symlink.
fn open_child(parent: &OwnedFd, name: &CStr) -> std::io::Result<OwnedFd> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `parent` is an open folder and `name` a valid C string.
    let fd = unsafe { libc::openat(parent.as_raw_fd(), name.as_ptr(), flags) };
    owned(fd)
}

fn owned(fd: libc::c_int) -> std::io::Result<OwnedFd> {
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned by the system, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The status of the entry `name` of the folder `parent`: of what it leads to when
/// `follow`, else of the entry itself.
fn stat_at(parent: &OwnedFd, name: &CStr, follow: bool) -> std::io::Result<libc::stat> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
    // SAFETY: `parent` is an open folder, `name` a valid C string and `stat` room for the answer.
    let failed = unsafe { libc::fstatat(parent.as_raw_fd(), name.as_ptr(), stat.as_mut_ptr(), flags) };
    if failed != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the call succeeded, so it filled `stat`.
    Ok(unsafe { stat.assume_init() })
}

/// A file's size and modification time (nanoseconds since the epoch).
fn size_and_time(stat: &libc::stat) -> (u64, u64) {
    // The fields' types differ from one platform to another.
    #[allow(clippy::unnecessary_cast)]
    let mtime_ns = mtime_ns_of(stat.st_mtime as i64, stat.st_mtime_nsec as i64);
    (stat.st_size as u64, mtime_ns)
}

fn is_folder(stat: &libc::stat) -> bool {
    stat.st_mode & libc::S_IFMT == libc::S_IFDIR
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Listing {
    /// The entries of an open folder, with their kinds; an entry whose kind the listing
    /// does not tell is asked about.
    #[cfg(target_os = "linux")]
    fn read(folder: &OwnedFd) -> std::io::Result<Listing> {
        // The system's own listing call, straight into a buffer: the C library's stream
        // would take a descriptor of its own and ask the folder's status again, which at
        // 23,000 folders costs as much as the call itself.
        thread_local! {
            /// Each walking thread's buffer for listings, so that no folder zeroes one of
            /// its own.
            static BUFFER: std::cell::RefCell<Vec<u64>> = std::cell::RefCell::new(vec![0; 4096]);
        }
        BUFFER.with_borrow_mut(|buffer| Listing::read_into(folder, buffer))
    }

    #[cfg(target_os = "linux")]
    fn read_into(folder: &OwnedFd, buffer: &mut [u64]) -> std::io::Result<Listing> {
        let mut listing = Listing { names: Vec::with_capacity(1024), entries: Vec::new() };
        loop {
            // SAFETY: `folder` is open and `buffer` has room for the bytes asked for.
            let read = unsafe {
                libc::syscall(libc::SYS_getdents64, folder.as_raw_fd(), buffer.as_mut_ptr(), buffer.len() * 8)
            };
            if read < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if read == 0 {
                return Ok(listing);
            }
            // SAFETY: the call filled `read` bytes of the buffer.
            let bytes = unsafe { std::slice::from_raw_parts(buffer.as_ptr().cast::<u8>(), read as usize) };
            // Each record: inode (8 bytes), offset (8), its own length (2), kind (1), then the
            // name and a NUL.
            let mut at = 0;
            while at + 19 <= bytes.len() {
                let len = usize::from(u16::from_ne_bytes([bytes[at + 16], bytes[at + 17]]));
                if len == 0 || at + len > bytes.len() {
                    break;
                }
                let name = CStr::from_bytes_until_nul(&bytes[at + 19..at + len]).unwrap_or_default();
                let kind = match bytes[at + 18] {
                    libc::DT_DIR => Kind::Folder,
                    libc::DT_REG => Kind::File,
                    libc::DT_LNK => Kind::Link,
                    libc::DT_UNKNOWN => kind_of(folder, name),
                    _ => Kind::Other,
                };
                listing.push(name.to_bytes(), kind);
                at += len;
            }
        }
    }

    /// The entries of an open folder, with their kinds, through the C library's stream.
    #[cfg(not(target_os = "linux"))]
    fn read(folder: &OwnedFd) -> std::io::Result<Listing> {
        // The stream takes a descriptor of its own, which closing it closes; the folder's
        // stays open for the calls on its entries.
        // SAFETY: `folder` is open; `dup` returns a new descriptor or -1.
        let own = owned(unsafe { libc::dup(folder.as_raw_fd()) })?;
        // SAFETY: an open descriptor of a folder, whose ownership passes to the stream.
        let stream = unsafe { libc::fdopendir(own.as_raw_fd()) };
        if stream.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        std::mem::forget(own);
        let mut listing = Listing { names: Vec::new(), entries: Vec::new() };
        loop {
            // SAFETY: `stream` is open until `closedir` below, and read on this thread only.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                break;
            }
            // SAFETY: a non-null entry stays valid until the next `readdir` on the stream.
            let (name, d_type) = unsafe { (CStr::from_ptr((*entry).d_name.as_ptr()), (*entry).d_type) };
            let kind = match d_type {
                libc::DT_DIR => Kind::Folder,
                libc::DT_REG => Kind::File,
                libc::DT_LNK => Kind::Link,
                libc::DT_UNKNOWN => kind_of(folder, name),
                _ => Kind::Other,
            };
            listing.push(name.to_bytes(), kind);
        }
        // SAFETY: `stream` came from `fdopendir` and is closed once.
        unsafe { libc::closedir(stream) };
        Ok(listing)
    }
}

/// An entry's kind, asked of its folder (for file systems whose listings do not say it).
fn kind_of(parent: &OwnedFd, name: &CStr) -> Kind {
    match stat_at(parent, name, false).map(|stat| stat.st_mode & libc::S_IFMT) {
        Ok(libc::S_IFDIR) => Kind::Folder,
        Ok(libc::S_IFREG) => Kind::File,
        Ok(libc::S_IFLNK) => Kind::Link,
        _ => Kind::Other,
    }
}
