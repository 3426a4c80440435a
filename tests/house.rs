//! House rules that code review would otherwise have to remember: every Rust file says
//! what it holds in a `//!` line, and no module is a catch-all.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn project_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches"] {
        if root.join(dir).is_dir() {
            rust_files(&root.join(dir), &mut files);
        }
    }
    files
}

#[test]
fn every_rust_file_starts_with_a_module_doc_line() {
    let missing: Vec<String> = project_files()
        .into_iter()
        .filter(|p| !std::fs::read_to_string(p).unwrap().starts_with("//!"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a leading //! line: {missing:?}");
}

#[test]
fn no_catch_all_modules() {
    let banned = ["utils.rs", "util.rs", "helpers.rs", "common.rs", "misc.rs"];
    let found: Vec<String> = project_files()
        .into_iter()
        .filter(|p| p.starts_with(Path::new(env!("CARGO_MANIFEST_DIR")).join("src")))
        .filter(|p| banned.iter().any(|b| p.file_name().is_some_and(|n| n == *b)))
        .map(|p| p.display().to_string())
        .collect();
    assert!(found.is_empty(), "catch-all modules: {found:?}");
}
