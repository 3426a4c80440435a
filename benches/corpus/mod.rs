//! The corpus a benchmark runs on: a temporary copy of a folder, its markdown files by
//! size, and edits that stand for a user's save.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
            // Copies are read-only when the source is; the benchmark edits one.
            let mut perms = std::fs::metadata(&target).expect("stat").permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&target, perms).expect("chmod");
            // Files modified seconds before a run are read again on the next one (their
            // mtime cannot be trusted yet); an hour-old file is the usual case.
            let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
            std::fs::File::options()
                .write(true)
                .open(&target)
                .and_then(|f| f.set_modified(hour_ago))
                .expect("mtime");
        }
    }
}

pub fn append_paragraph(path: &Path) {
    let mut text = std::fs::read_to_string(path).unwrap_or_default();
    text.push_str("\n\nA new paragraph written by the benchmark about rotating certificates.\n");
    std::fs::write(path, text).expect("write");
}

/// Markdown files under `root`, smallest first.
pub fn markdown_files(root: &Path) -> Vec<(u64, PathBuf)> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "md")
                && let Ok(m) = entry.metadata()
            {
                files.push((m.len(), p));
            }
        }
    }
    files.sort();
    files
}

/// A benchmark's workspace: a copy of the corpus folder, an index cache beside it, and the
/// queries to ask. Dropped, it removes both.
pub struct Prepared {
    pub root: PathBuf,
    pub cache: PathBuf,
    pub queries: Vec<String>,
    _work: tempfile::TempDir,
}

/// Reads `[DIR [QUERIES.jsonl]]` from the command line (default: the Traefik docs and dev
/// queries from `../shared/data`) and copies DIR into a temporary folder; `None`, after
/// saying so, when there is no corpus.
pub fn prepare(bench: &str) -> Option<Prepared> {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let dir = args.first().map(PathBuf::from).unwrap_or_else(|| shared.join("traefik-docs"));
    let queries_file =
        args.get(1).map(PathBuf::from).unwrap_or_else(|| shared.join("traefik-dev-queries.jsonl"));
    if !dir.is_dir() {
        println!(
            "skipped: no corpus at {} (pass a folder: cargo bench --bench {bench} -- DIR)",
            dir.display()
        );
        return None;
    }
    let work = tempfile::tempdir().expect("temp dir");
    let root = work.path().join("corpus");
    copy_dir(&dir, &root);
    let cache = work.path().join("cache");
    std::fs::create_dir_all(&cache).expect("cache dir");
    Some(Prepared { root, cache, queries: read_queries(&queries_file), _work: work })
}

/// The `query` of each JSON line of `path`; three Traefik questions when there are none.
pub fn read_queries(path: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(str::to_string))
        .collect();
    if out.is_empty() {
        out = ["how do I configure the dashboard", "rate limit middleware", "TLS certificates"]
            .map(String::from)
            .to_vec();
    }
    out
}
