//! Finding and reading the workspace's files: ignore rules, globs, size cap, binary check
//! and encodings. One bad file never stops a run; every skip carries its reason.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::chunk::DocKind;

mod decode;
mod ignore_walk;
#[cfg(unix)]
mod walk;

#[cfg(not(unix))]
use ignore_walk::walk_with_the_ignore_crate;

pub use decode::{Legacy, decode};

/// Which files are indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkConfig {
    /// File name extensions, lowercase, without the dot.
    pub extensions: Vec<String>,
    /// Glob patterns (workspace-relative); when non-empty a file must match one of them.
    pub include: Vec<String>,
    /// Glob patterns (workspace-relative) of files and folders to leave out.
    pub exclude: Vec<String>,
    /// Files larger than this are skipped with a warning.
    pub max_file_bytes: u64,
    /// Whether symbolic links to folders and files are followed, their contents indexed at
    /// the link's path. Off by default: a link in a cloned repository could lead anywhere
    /// (to `/` or the home folder), and what it leads to would be indexed and searchable.
    pub follow_symlinks: bool,
    /// The encoding of files that are neither valid UTF-8 nor marked as UTF-16.
    pub encoding: Legacy,
}

impl Default for WalkConfig {
    fn default() -> Self {
        WalkConfig {
            extensions: vec!["md".into(), "markdown".into(), "mdx".into(), "txt".into()],
            include: Vec::new(),
            exclude: Vec::new(),
            max_file_bytes: 4 * 1024 * 1024,
            follow_symlinks: false,
            encoding: Legacy::Guessed,
        }
    }
}

/// A file the walk found: where it is and what the file system says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Workspace-relative, `/`-separated.
    pub rel_path: String,
    pub abs_path: PathBuf,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch (0 when unknown).
    pub mtime_ns: u64,
}

/// Why a file was left out.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    TooLarge {
        size: u64,
        limit: u64,
    },
    Binary,
    Unreadable {
        error: String,
    },
    /// A symbolic link (followed, with `follow_symlinks`) whose target does not exist.
    DanglingLink {
        target: String,
    },
    /// A folder met again on its own way down, through a link (`a/loop -> ..`): walking it
    /// would never end. `ancestor` is where it was walked (`.` for the workspace's top).
    LinkLoop {
        ancestor: String,
    },
    /// A folder a link leads to that was walked already, at `indexed_as`: its files are
    /// indexed once, at the workspace's own place for it, else the shallowest, else the
    /// first by path.
    AlreadyIndexed {
        indexed_as: String,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::TooLarge { size, limit } => {
                write!(f, "too large ({size} bytes; the limit is {limit}, see max_file_bytes)")
            }
            SkipReason::Binary => f.write_str("binary file (contains a NUL byte)"),
            SkipReason::Unreadable { error } => write!(f, "unreadable: {error}"),
            SkipReason::DanglingLink { target } => write!(f, "a link to {target}, which does not exist"),
            SkipReason::LinkLoop { ancestor } if ancestor == "." => {
                f.write_str("a link back into the workspace's top folder, above it")
            }
            SkipReason::LinkLoop { ancestor } => write!(f, "a link back into {ancestor}, a folder above it"),
            SkipReason::AlreadyIndexed { indexed_as } => {
                write!(f, "already indexed as {indexed_as} (another link leads to the same folder)")
            }
        }
    }
}

/// A file that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub path: String,
    #[serde(flatten)]
    pub reason: SkipReason,
}

/// The text of a file that passed the checks.
#[derive(Debug, Clone)]
pub struct FileText {
    pub text: String,
    /// xxh3 of the raw bytes.
    pub content_hash: u64,
    /// Some of the file's bytes could not be read in its encoding and were decoded as
    /// replacement characters (UTF-8 with bad bytes in it, say). A file in UTF-16 or in a
    /// legacy encoding such as Windows-1252 or GBK, read whole, is not lossy.
    pub lossy: bool,
}

/// The outcome of a walk.
#[derive(Debug, Default)]
pub struct WalkResult {
    pub files: Vec<SourceFile>,
    pub skipped: Vec<Skipped>,
}

/// Lists the files of `root` that the configuration selects, sorted by path. `index_dir` is
/// never walked, even when it lies inside the workspace.
///
/// Folders are read on several threads: a walk with nothing to read is a stat of every
/// file and a look for ignore files in every folder, which on a large workspace waits on
/// the file system more than it computes. What each thread finds is merged and sorted, so
/// the result does not depend on the order the threads met the files in.
pub fn walk(root: &Path, config: &WalkConfig, index_dir: Option<&Path>) -> WalkResult {
    let filter = WalkFilter::new(root, config, index_dir);
    #[cfg(unix)]
    let mut result = match &filter.index_dir {
        // The index folder is the workspace itself: nothing in it is the user's.
        Some(dir) if filter.canonical_root.as_deref() == Some(dir.as_path()) => WalkResult::default(),
        Some(dir) => {
            let inside = filter.canonical_root.as_ref().and_then(|r| relative_path(r, dir));
            walk::walk(root, &filter, inside.as_deref())
        }
        None => walk::walk(root, &filter, None),
    };
    #[cfg(not(unix))]
    let mut result = walk_with_the_ignore_crate(root, &filter);
    result.files.sort_unstable_by(|a, b| a.rel_path.cmp(&b.rel_path));
    result.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    result
}

/// Which of the files a walk meets it keeps: by extension, globs, and outside the index
/// folder.
struct WalkFilter<'a> {
    root: &'a Path,
    config: &'a WalkConfig,
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
    /// The index folder, when it lies inside the workspace or links are followed (a link
    /// could lead into it from anywhere).
    index_dir: Option<PathBuf>,
    canonical_root: Option<PathBuf>,
}

impl<'a> WalkFilter<'a> {
    fn new(root: &'a Path, config: &'a WalkConfig, index_dir: Option<&Path>) -> Self {
        // Only an index folder inside the workspace can be met by a walk that follows no
        // links; one outside it (the usual cache folder) costs nothing per file.
        let canonical_root = root.canonicalize().ok();
        let index_dir = index_dir
            .and_then(|d| d.canonicalize().ok())
            .filter(|d| config.follow_symlinks || canonical_root.as_ref().is_none_or(|r| d.starts_with(r)));
        WalkFilter {
            root,
            config,
            include: build_globs(&config.include),
            exclude: build_globs(&config.exclude),
            index_dir,
            canonical_root,
        }
    }

    /// Whether a file at `rel_path` is one the configuration selects: by extension and
    /// globs.
    fn keeps(&self, rel_path: &str) -> bool {
        has_extension(rel_path, &self.config.extensions)
            && !is_app_backup(rel_path)
            && self.include.as_ref().is_none_or(|g| g.is_match(rel_path))
            && !self.exclude.as_ref().is_some_and(|g| is_excluded(g, rel_path))
    }
}

/// Whether `rel_path` is a file the walk would select, decided without walking (for
/// single-file updates): extension, hidden segments, include/exclude globs, and the
/// `.gitignore` / `.ignore` files of the folders on its way down from `root`. A path whose
/// way down passes a symbolic link is selected only when links are followed.
pub fn is_selected(root: &Path, rel_path: &str, config: &WalkConfig) -> bool {
    is_candidate(rel_path, config)
        && !is_ignored(root, rel_path)
        && (config.follow_symlinks || !passes_a_link(root, rel_path))
}

/// Whether the way from `root` down to `rel_path` (the file itself included) passes a
/// symbolic link, which a walk that follows none never takes.
fn passes_a_link(root: &Path, rel_path: &str) -> bool {
    let mut path = root.to_path_buf();
    rel_path.split('/').any(|part| {
        path.push(part);
        path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink())
    })
}

/// Whether ignore files along the path leave `rel_path` out. As in the walk, a deeper
/// folder's rules win over a shallower one's, `.ignore` over `.gitignore`, and a later
/// `!pattern` can take a file back.
pub fn is_ignored(root: &Path, rel_path: &str) -> bool {
    let path = root.join(rel_path);
    let mut dirs = vec![root.to_path_buf()];
    let parts: Vec<&str> = rel_path.split('/').collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        let next = dirs[dirs.len() - 1].join(part);
        dirs.push(next);
    }
    for dir in dirs.iter().rev() {
        for name in [".ignore", ".gitignore"] {
            let file = dir.join(name);
            if !file.is_file() {
                continue;
            }
            let (rules, _) = ignore::gitignore::Gitignore::new(&file);
            match rules.matched_path_or_any_parents(&path, false) {
                ignore::Match::Ignore(_) => return true,
                ignore::Match::Whitelist(_) => return false,
                ignore::Match::None => {}
            }
        }
    }
    false
}

/// Whether `rel_path` is a file the configuration selects by name alone: extension, hidden
/// segments and globs.
pub fn is_candidate(rel_path: &str, config: &WalkConfig) -> bool {
    if !has_extension(rel_path, &config.extensions) {
        return false;
    }
    if rel_path.split('/').any(|part| part.starts_with('.')) || is_app_backup(rel_path) {
        return false;
    }
    if build_globs(&config.include).is_some_and(|g| !g.is_match(rel_path)) {
        return false;
    }
    !build_globs(&config.exclude).is_some_and(|g| is_excluded(&g, rel_path))
}

/// The folders where Logseq keeps copies of a graph's pages (`logseq/bak/`, and
/// `logseq/version-files/` in older versions): every page edited there has up to three, which
/// would each be found beside the page itself.
const APP_BACKUPS: [&str; 2] = ["logseq/bak/", "logseq/version-files/"];

/// Whether `rel_path` lies in a notes app's folder of backup copies ([`APP_BACKUPS`]), at
/// the workspace's top or in a graph below it.
fn is_app_backup(rel_path: &str) -> bool {
    APP_BACKUPS.iter().any(|folder| {
        rel_path.match_indices(folder).any(|(at, _)| at == 0 || rel_path.as_bytes()[at - 1] == b'/')
    })
}

/// Reads one file, applying the size cap and the binary check, and decodes it
/// ([`decode`]).
pub fn read(file: &SourceFile, max_bytes: u64, legacy: Legacy) -> Result<FileText, SkipReason> {
    if file.size > max_bytes {
        return Err(SkipReason::TooLarge { size: file.size, limit: max_bytes });
    }
    let bytes = read_regular(&file.abs_path).map_err(|e| SkipReason::Unreadable { error: e.to_string() })?;
    // The file may have grown between the walk and the read.
    if bytes.len() as u64 > max_bytes {
        return Err(SkipReason::TooLarge { size: bytes.len() as u64, limit: max_bytes });
    }
    decode(&bytes, legacy)
}

/// The bytes of the regular file at `path`. Anything else (a folder, a named pipe, a device)
/// is an error of kind `InvalidInput`, found without waiting: the file is opened without
/// blocking (a named pipe would otherwise wait for a writer) and checked before it is read.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let (mut file, len) = open_regular(path)?;
    // The size is a hint, not a promise (a file can grow or shrink meanwhile): the buffer
    // starts no larger than a large note.
    let mut bytes = Vec::with_capacity(len.min(64 << 20) as usize);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The bytes `from..from + len` of the regular file at `path`, or fewer where it ends
/// sooner; a folder, a named pipe or a device is an error, as for [`read_regular`].
pub fn read_span(path: &Path, from: u64, len: usize) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let (mut file, _) = open_regular(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::with_capacity(len);
    file.take(len as u64).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Opens `path` for reading without waiting on a pipe's writer, and its size, when it is a
/// regular file.
fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, u64)> {
    let mut options = std::fs::File::options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok((file, meta.len()))
}

/// How a file is parsed, by its extension.
pub fn doc_kind(rel_path: &str) -> DocKind {
    let ext = rel_path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("txt" | "text") => DocKind::Text,
        Some("mdx") => DocKind::Mdx,
        _ => DocKind::Markdown,
    }
}

/// The workspace-relative, `/`-separated form of `path`, if it lies inside `root`.
pub fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    // The usual case, met once per file of a walk: a UTF-8 path of plain names, already in
    // the `/`-separated form.
    if std::path::MAIN_SEPARATOR == '/'
        && let Some(text) = rel.to_str()
        && !text.is_empty()
        && text.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
    {
        return Some(text.to_string());
    }
    let parts: Vec<String> = rel
        .components()
        .map(|c| match c {
            std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    if parts.is_empty() { None } else { Some(parts.join("/")) }
}

/// Metadata of one file, in the form the walk gives (for single-file updates).
pub fn stat(root: &Path, rel_path: &str) -> std::io::Result<SourceFile> {
    let abs_path = root.join(rel_path);
    let meta = std::fs::metadata(&abs_path)?;
    Ok(SourceFile { rel_path: rel_path.to_string(), abs_path, size: meta.len(), mtime_ns: mtime_ns(&meta) })
}

fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos().min(u64::MAX as u128) as u64)
}

/// [`mtime_ns`] of a time the system gave as seconds and nanoseconds since the epoch: the
/// same number for the same file, whichever call asked.
#[cfg_attr(not(unix), allow(dead_code))]
fn mtime_ns_of(seconds: i64, nanoseconds: i64) -> u64 {
    if seconds < 0 || !(0..1_000_000_000).contains(&nanoseconds) {
        return 0;
    }
    (seconds as u128 * 1_000_000_000 + nanoseconds as u128).min(u64::MAX as u128) as u64
}

fn has_extension(rel_path: &str, extensions: &[String]) -> bool {
    let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => extensions.iter().any(|e| e.eq_ignore_ascii_case(ext)),
        _ => false,
    }
}

fn build_globs(patterns: &[String]) -> Option<GlobSet> {
    if patterns.is_empty() {
        return None;
    }
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        // Patterns were validated with the config; a bad one is simply not used.
        if let Ok(g) = Glob::new(p) {
            builder.add(g);
        }
    }
    builder.build().ok()
}

/// A path is excluded when it or any of its parent folders matches, so `drafts` and
/// `drafts/**` both leave out everything below `drafts/`.
fn is_excluded(globs: &GlobSet, rel_path: &str) -> bool {
    if globs.is_match(rel_path) {
        return true;
    }
    rel_path.match_indices('/').any(|(i, _)| globs.is_match(&rel_path[..i]))
}

fn error_path(error: &ignore::Error, root: &Path) -> String {
    fn find(error: &ignore::Error) -> Option<&Path> {
        match error {
            ignore::Error::WithPath { path, .. } => Some(path),
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => find(err),
            _ => None,
        }
    }
    find(error).and_then(|p| relative_path(root, p)).unwrap_or_else(|| root.display().to_string())
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    fn config() -> WalkConfig {
        WalkConfig::default()
    }

    fn write(root: &Path, rel: &str, bytes: &[u8]) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    fn paths(result: &WalkResult) -> Vec<&str> {
        result.files.iter().map(|f| f.rel_path.as_str()).collect()
    }

    #[test]
    fn walk_selects_by_extension_and_honours_ignore_rules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "a.md", b"# A");
        write(root, "b.MARKDOWN", b"b");
        write(root, "notes/c.txt", b"c");
        write(root, "notes/d.rs", b"fn main() {}");
        write(root, ".hidden/e.md", b"e");
        write(root, "build/f.md", b"f");
        write(root, ".gitignore", b"build/\n");
        write(root, ".md", b"only an extension");
        let result = walk(root, &config(), None);
        assert_eq!(paths(&result), ["a.md", "b.MARKDOWN", "notes/c.txt"]);
    }

    #[test]
    fn include_and_exclude_globs_apply_to_relative_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "docs/a.md", b"a");
        write(root, "docs/drafts/b.md", b"b");
        write(root, "c.md", b"c");
        let mut cfg = config();
        cfg.include = vec!["docs/**".into()];
        cfg.exclude = vec!["docs/drafts".into()];
        assert_eq!(paths(&walk(root, &cfg, None)), ["docs/a.md"]);
    }

    #[test]
    fn the_index_folder_is_never_walked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "a.md", b"a");
        write(root, "idx/x.md", b"x");
        assert_eq!(paths(&walk(root, &config(), Some(&root.join("idx")))), ["a.md"]);
    }

    #[test]
    fn read_applies_size_cap_binary_and_lossy_checks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "big.md", &[b'a'; 100]);
        write(root, "bin.md", b"abc\0def");
        write(root, "latin1.txt", b"caf\xe9 au lait");
        write(root, "bom.md", b"\xEF\xBB\xBF# Title");
        write(root, "mixed.md", b"caf\xc3\xa9 or caf\xe9");
        write(root, "gbk.md", b"\xc4\xe3\xba\xc3\xca\xc0\xbd\xe7");
        let result = walk(root, &config(), None);
        let file = |name: &str| result.files.iter().find(|f| f.rel_path == name).unwrap().clone();
        assert!(matches!(
            read(&file("big.md"), 50, Legacy::Guessed),
            Err(SkipReason::TooLarge { size: 100, limit: 50 })
        ));
        assert_eq!(read(&file("bin.md"), 1000, Legacy::Guessed).unwrap_err(), SkipReason::Binary);
        let latin = read(&file("latin1.txt"), 1000, Legacy::Guessed).unwrap();
        assert!(!latin.lossy);
        assert_eq!(latin.text, "café au lait");
        // UTF-8 and Latin-1 pasted together read whole. A Chinese encoding is read as such.
        let mixed = read(&file("mixed.md"), 1000, Legacy::Guessed).unwrap();
        assert!(!mixed.lossy);
        assert_eq!(mixed.text, "café or café");
        let gbk = read(&file("gbk.md"), 1000, Legacy::Guessed).unwrap();
        assert!(!gbk.lossy);
        assert_eq!(gbk.text, "你好世界");
        let bom = read(&file("bom.md"), 1000, Legacy::Guessed).unwrap();
        assert_eq!(bom.text, "# Title");
        assert!(!bom.lossy);
    }

    #[test]
    fn a_notes_app_s_backup_copies_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for path in [
            "pages/Garden.md",
            "logseq/bak/pages/Garden/2026-11-27T10_00_00.000Z.Desktop.md",
            "graph/logseq/version-files/pages/Garden.md",
            "notes/mylogseq/bak/kept.md",
        ] {
            write(root, path, b"# Garden\n");
        }
        let walked = walk(root, &config(), None);
        assert_eq!(paths(&walked), ["notes/mylogseq/bak/kept.md", "pages/Garden.md"]);
        assert!(!is_candidate("logseq/bak/pages/Garden/x.md", &config()));
        assert!(is_candidate("pages/logseq and bak.md", &config()));
    }

    #[test]
    fn candidates_follow_the_same_rules_as_the_walk() {
        let mut cfg = config();
        cfg.exclude = vec!["drafts/**".into()];
        assert!(is_candidate("notes/a.md", &cfg));
        assert!(!is_candidate("notes/a.rs", &cfg));
        assert!(!is_candidate(".obsidian/a.md", &cfg));
        assert!(!is_candidate("drafts/x/a.md", &cfg));
    }

    #[test]
    fn single_paths_follow_the_ignore_files_of_their_folders() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", b"build/\n*.tmp.md\n");
        write(root, "docs/.gitignore", b"drafts/\n!keep.tmp.md\n");
        write(root, "docs/.ignore", b"private.md\n");
        let files = [
            "a.md",
            "build/x.md",
            "x.tmp.md",
            "docs/keep.tmp.md",
            "docs/drafts/d.md",
            "docs/private.md",
            "docs/ok.md",
        ];
        for rel in files {
            write(root, rel, b"text");
        }
        let cfg = config();
        let walked = walk(root, &cfg, None);
        for rel in files {
            let in_walk = walked.files.iter().any(|f| f.rel_path == rel);
            assert_eq!(is_selected(root, rel, &cfg), in_walk, "{rel}: the walk says {in_walk}");
        }
        assert!(is_selected(root, "docs/keep.tmp.md", &cfg));
        assert!(!is_selected(root, "docs/drafts/d.md", &cfg));
    }

    #[test]
    fn the_threaded_walk_finds_what_one_thread_finds_in_the_same_order() {
        // Many folders with ignore files at several depths, walked by the threaded walk and
        // by the same rules on one thread: the same files, skips and order.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", b"*.draft.md\n");
        for a in 0..12 {
            write(root, &format!("part{a}/.ignore"), if a % 3 == 0 { b"secret/\n" } else { b"" });
            for b in 0..6 {
                for c in 0..5 {
                    let name = if c == 4 { "x.draft.md" } else { "page.md" };
                    write(root, &format!("part{a}/s{b}/{c}/{name}"), format!("{a} {b} {c}").as_bytes());
                }
                write(root, &format!("part{a}/secret/s{b}.md"), b"hidden by .ignore in every third part");
                write(root, &format!("part{a}/s{b}/notes.txt"), b"t");
            }
        }
        let cfg = config();
        let threaded = walk(root, &cfg, None);
        let one_thread = walk_of_the_ignore_crate(root, &cfg, None);
        assert_eq!(threaded.files.len(), 12 * 6 * 5 + 8 * 6);
        assert_eq!(threaded.files, one_thread.files);
        assert_eq!(threaded.skipped, one_thread.skipped);
        assert!(threaded.files.windows(2).all(|w| w[0].rel_path < w[1].rel_path));
        assert!(!paths(&threaded).iter().any(|p| p.ends_with(".draft.md") || p.starts_with("part0/secret")));
    }

    /// The `ignore` crate's own walk on one thread, sorted as [`walk`] sorts.
    fn walk_of_the_ignore_crate(root: &Path, cfg: &WalkConfig, index_dir: Option<&Path>) -> WalkResult {
        let filter = WalkFilter::new(root, cfg, index_dir);
        let mut one_thread = WalkResult::default();
        for entry in ignore_walk::walk_builder(root, cfg.follow_symlinks).build() {
            filter.visit(entry, &mut one_thread);
        }
        one_thread.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
        one_thread.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        one_thread
    }

    #[test]
    fn the_walk_keeps_the_ignore_crates_rules_in_every_corner() {
        // Rules that disagree across levels and kinds of ignore files, hidden names taken
        // back, a git repository's exclude file, symlinks and a name that is not UTF-8.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", b"*.log.md\nbuild/\n!keep/\n/top-only.md\n");
        write(root, ".ignore", b"private*.md\n!.shown.md\n");
        write(root, ".git/info/exclude", b"excluded.md\n");
        write(root, ".git/HEAD", b"ref: refs/heads/main\n");
        write(root, "docs/.gitignore", b"!*.log.md\ndrafts/\n!drafts/ok/\n");
        write(root, "docs/.ignore", b"!private-but-ok.md\n");
        write(root, "docs/deep/.gitignore", b"*.md\n!index.md\n");
        for rel in [
            "a.md",
            "a.log.md",
            "top-only.md",
            "sub/top-only.md",
            "excluded.md",
            "sub/excluded.md",
            "private.md",
            ".shown.md",
            ".hidden.md",
            ".hidden/inner.md",
            "build/b.md",
            "keep/k.md",
            "docs/a.log.md",
            "docs/private.md",
            "docs/private-but-ok.md",
            "docs/drafts/d.md",
            "docs/drafts/ok/o.md",
            "docs/deep/index.md",
            "docs/deep/other.md",
            "docs/deep/more/index.md",
            "docs/deep/more/x.md",
            "notes.txt",
            "code.rs",
        ] {
            write(root, rel, rel.as_bytes());
        }
        std::os::unix::fs::symlink(root.join("a.md"), root.join("link.md")).unwrap();
        std::os::unix::fs::symlink(root.join("docs"), root.join("docs-link")).unwrap();
        let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.md");
        std::fs::write(root.join("sub").join(odd), b"latin-1 name").unwrap();
        let cfg = config();
        let walked = walk(root, &cfg, None);
        let expected = walk_of_the_ignore_crate(root, &cfg, None);
        assert_eq!(walked.files, expected.files);
        assert_eq!(walked.skipped, expected.skipped);
        assert!(paths(&walked).contains(&"docs/deep/more/index.md"));
        assert!(paths(&walked).contains(&".shown.md"));
        assert!(!paths(&walked).contains(&"sub/excluded.md"));
        assert!(paths(&walked).contains(&"sub/caf\u{FFFD}.md"));
        // The index folder inside the workspace is left out the same way.
        write(root, "idx/i.md", b"x");
        assert_eq!(
            walk(root, &cfg, Some(&root.join("idx"))).files,
            walk_of_the_ignore_crate(root, &cfg, Some(&root.join("idx"))).files
        );
        assert!(walk(root, &cfg, Some(root)).files.is_empty());
    }

    fn link(target: &Path, at: &Path) {
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, at).unwrap();
    }

    fn following() -> WalkConfig {
        WalkConfig { follow_symlinks: true, ..config() }
    }

    fn skips(result: &WalkResult) -> Vec<(&str, String)> {
        result.skipped.iter().map(|s| (s.path.as_str(), s.reason.to_string())).collect()
    }

    #[test]
    fn a_linked_folder_is_walked_at_the_links_place_when_links_are_followed() {
        // A vault with a folder shared from elsewhere, and a note linked in on its own.
        let outside = tempfile::tempdir().unwrap();
        let shared = outside.path().join("Sync/shared");
        write(&shared, "recipes/bread.md", b"# Bread");
        write(&shared, "recipes/draft.tmp.md", b"ignored inside the linked folder");
        write(&shared, ".gitignore", b"*.tmp.md\n");
        write(&shared, ".hidden/h.md", b"hidden");
        write(&shared, "private/p.md", b"excluded by a glob on the link's path");
        write(outside.path(), "single.md", b"one note");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "own.md", b"own");
        link(&shared, &root.join("shared"));
        link(&shared, &root.join(".hidden-link"));
        link(&outside.path().join("single.md"), &root.join("notes/single.md"));
        link(&outside.path().join("single.md"), &root.join("notes/single.rs"));
        let cfg = WalkConfig { exclude: vec!["shared/private".into()], ..following() };
        let walked = walk(root, &cfg, None);
        assert_eq!(paths(&walked), ["notes/single.md", "own.md", "shared/recipes/bread.md"]);
        assert!(walked.skipped.is_empty(), "{:?}", walked.skipped);
        let bread = &walked.files[2];
        assert_eq!(bread.abs_path, root.join("shared/recipes/bread.md"));
        assert_eq!((bread.size, bread.mtime_ns), {
            let f = stat(root, "shared/recipes/bread.md").unwrap();
            (f.size, f.mtime_ns)
        });
        // The `ignore` crate's walk agrees.
        let expected = walk_of_the_ignore_crate(root, &cfg, None);
        assert_eq!(walked.files, expected.files);
        assert_eq!(walked.skipped, expected.skipped);
        // Off by default: nothing through a link, as the crate's walk without links.
        let unfollowed = walk(root, &WalkConfig { exclude: cfg.exclude.clone(), ..config() }, None);
        assert_eq!(paths(&unfollowed), ["own.md"]);
        assert_eq!(unfollowed.files, walk_of_the_ignore_crate(root, &config(), None).files);
    }

    #[test]
    fn loops_end_and_a_folder_two_links_lead_to_is_walked_once() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "x/a.md", b"a");
        write(outside.path(), "x/y/b.md", b"b");
        link(&outside.path().join("x"), &outside.path().join("x/y/up"));
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "notes/n.md", b"n");
        link(Path::new(".."), &root.join("notes/loop"));
        link(&root.join("notes"), &root.join("alias"));
        link(&outside.path().join("x"), &root.join("one"));
        link(&outside.path().join("x"), &root.join("two"));
        link(&outside.path().join("x/y"), &root.join("deep/y"));
        link(&outside.path().join("nothing"), &root.join("gone.md"));
        link(&outside.path().join("nothing"), &root.join(".gone.md"));
        let walked = walk(root, &following(), None);
        assert_eq!(paths(&walked), ["deep/y/b.md", "notes/n.md", "one/a.md"]);
        let gone = outside.path().join("nothing").display().to_string();
        assert_eq!(
            skips(&walked),
            [
                ("alias", "already indexed as notes (another link leads to the same folder)".into()),
                // Not on its own way down (deep, deep/y): walked as `one` in the round before.
                ("deep/y/up", "already indexed as one (another link leads to the same folder)".into()),
                ("gone.md", format!("a link to {gone}, which does not exist")),
                ("notes/loop", "a link back into the workspace's top folder, above it".into()),
                ("one/y", "already indexed as deep/y (another link leads to the same folder)".into()),
                ("two", "already indexed as one (another link leads to the same folder)".into()),
            ]
        );
        assert!(matches!(&walked.skipped[3].reason, SkipReason::LinkLoop { ancestor } if ancestor == "."));
        // The same, whatever order the threads meet things in.
        for _ in 0..5 {
            let again = walk(root, &following(), None);
            assert_eq!((again.files, again.skipped), (walked.files.clone(), walked.skipped.clone()));
        }
        // The `ignore` crate's walk stops loops too, but only at a link back into a folder
        // on its way down, so it walks a folder once for each way that leads to it.
        let crate_walk = walk_of_the_ignore_crate(root, &following(), None);
        let crate_paths = paths(&crate_walk);
        for path in ["alias/n.md", "one/y/b.md", "two/a.md", "two/y/b.md"] {
            assert!(crate_paths.contains(&path), "{path} in {crate_paths:?}");
        }
        assert!(
            crate_paths.iter().all(|p| !p.contains("loop/") && !p.contains("up/y/up/")),
            "{crate_paths:?}"
        );
        let crate_skips = skips(&crate_walk);
        for skip in [".gone.md", "gone.md", "notes/loop", "alias/loop", "one/y/up", "deep/y/up/y/up"] {
            assert!(crate_skips.iter().any(|(p, _)| *p == skip), "{skip} in {crate_skips:?}");
        }
        assert!(
            crate_skips
                .contains(&("notes/loop", "a link back into the workspace's top folder, above it".into()))
        );
    }

    #[test]
    fn a_folder_two_ways_lead_to_is_indexed_at_the_shallowest() {
        // `up` leads above the workspace, to a folder that holds the one `shared` leads to
        // (and the workspace itself): the shorter way holds the recipes, whichever link
        // sorts first.
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "Sync/shared/recipes/bread.md", b"# Bread");
        write(outside.path(), "Sync/shared/a/b/c/d/deep.md", b"# Deep");
        write(outside.path(), "beside.md", b"# Beside the vault");
        let root = outside.path().join("vault");
        write(&root, "own.md", b"own");
        link(Path::new("../Sync/shared"), &root.join("shared"));
        link(Path::new(".."), &root.join("shared-up"));
        let walked = walk(&root, &following(), None);
        assert_eq!(
            paths(&walked),
            ["own.md", "shared-up/beside.md", "shared/a/b/c/d/deep.md", "shared/recipes/bread.md"]
        );
        assert_eq!(
            skips(&walked),
            [
                (
                    "shared-up/Sync/shared",
                    "already indexed as shared (another link leads to the same folder)".into()
                ),
                ("shared-up/vault", "a link back into the workspace's top folder, above it".into()),
            ]
        );
    }

    #[test]
    fn the_index_folder_is_not_walked_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("w");
        write(&root, "a.md", b"a");
        let index = dir.path().join("index");
        write(&index, "i.md", b"i");
        write(&index, "sub/s.md", b"s");
        link(&index, &root.join("to-index"));
        link(&index.join("sub"), &root.join("to-inside"));
        link(&index.join("i.md"), &root.join("i.md"));
        let walked = walk(&root, &following(), Some(&index));
        assert_eq!(paths(&walked), ["a.md"]);
        assert!(walked.skipped.is_empty(), "{:?}", walked.skipped);
        assert_eq!(walk_of_the_ignore_crate(&root, &following(), Some(&index)).files, walked.files);
    }

    #[test]
    fn single_paths_through_a_link_are_selected_only_when_links_are_followed() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "recipes/bread.md", b"# Bread");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "own.md", b"own");
        link(outside.path(), &root.join("shared"));
        link(&outside.path().join("recipes/bread.md"), &root.join("bread.md"));
        for rel in ["shared/recipes/bread.md", "bread.md"] {
            assert!(!is_selected(root, rel, &config()), "{rel}");
            assert!(is_selected(root, rel, &following()), "{rel}");
        }
        assert!(is_selected(root, "own.md", &config()));
    }

    #[test]
    fn file_times_are_the_same_whichever_call_asked() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.md", b"a");
        let walked = walk(dir.path(), &config(), None);
        assert_eq!(walked.files[0], stat(dir.path(), "a.md").unwrap());
        assert_eq!(mtime_ns_of(-1, 5), 0);
        assert_eq!(mtime_ns_of(2, 7), 2_000_000_007);
    }

    #[test]
    fn relative_paths_are_plain_names_joined_by_slashes() {
        let root = Path::new("/w");
        assert_eq!(relative_path(root, Path::new("/w/a/b.md")).as_deref(), Some("a/b.md"));
        assert_eq!(relative_path(root, Path::new("/w/a//b.md")).as_deref(), Some("a/b.md"));
        assert_eq!(relative_path(root, Path::new("/w/a/b.md/")).as_deref(), Some("a/b.md"));
        assert_eq!(relative_path(root, Path::new("/w/../b.md")), None);
        assert_eq!(relative_path(root, Path::new("/w")), None);
        assert_eq!(relative_path(root, Path::new("/elsewhere/b.md")), None);
    }

    #[test]
    fn doc_kind_follows_the_extension() {
        assert_eq!(doc_kind("a/b.TXT"), DocKind::Text);
        assert_eq!(doc_kind("a/b.md"), DocKind::Markdown);
        assert_eq!(doc_kind("docs/intro.MDX"), DocKind::Mdx);
    }
}
