//! House rules that code review would otherwise have to remember: every Rust file says what
//! it holds in a `//!` line; no module is a catch-all; modules import only downwards in the
//! layer table of ARCHITECTURE.md and never in a circle; only `src/lsp/` and `src/mcp/` name
//! their protocol crates and only `src/cli/` prints; no source file grows past a screenful
//! of concerns; and the protocol docs name the hash of the wire shapes they describe.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

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
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "crates", "fuzz/fuzz_targets"] {
        if root().join(dir).is_dir() {
            rust_files(&root().join(dir), &mut files);
        }
    }
    files
}

fn source_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files.sort();
    files
}

/// A source file without its unit tests (by convention the `#[cfg(test)]` module at its end).
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The module path of a source file: `src/index/open.rs` → `index::open`.
fn module_of(path: &Path) -> Vec<String> {
    let rel = path.strip_prefix(root().join("src")).unwrap();
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "mod.rs" | "lib.rs" | "main.rs" => {}
        file => parts.push(file.trim_end_matches(".rs").to_string()),
    }
    parts
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
    let found: Vec<String> = source_files()
        .into_iter()
        .filter(|p| banned.iter().any(|b| p.file_name().is_some_and(|n| n == *b)))
        .map(|p| p.display().to_string())
        .collect();
    assert!(found.is_empty(), "catch-all modules: {found:?}");
}

/// Each top-level module's layer (ARCHITECTURE.md, "Dependency direction"): a module may
/// import only modules of a lower layer.
const LAYERS: &[(&str, u32)] = &[
    ("analysis", 0),
    ("chunk", 0),
    ("context", 0),
    ("providers", 0),
    ("team", 0),
    ("workspace", 1),
    ("snippets", 1),
    ("index", 2),
    ("search", 3),
    ("config", 4),
    ("engine", 5),
    ("eval", 6),
    ("compare", 7),
    ("service", 7),
    ("wire", 8),
    ("lsp", 9),
    ("mcp", 9),
    ("cli", 10),
];

/// Imports that the layers would allow but the architecture forbids: above the engine,
/// nothing reaches into the index, and the protocol front ends (LSP, MCP) see only what the
/// service, the engine, search and the wire shapes give them.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("eval", &["index"]),
    ("compare", &["index"]),
    ("service", &["index"]),
    ("wire", &["index", "config"]),
    ("lsp", &["index", "workspace", "snippets", "chunk", "context", "providers", "team", "eval", "compare"]),
    ("mcp", &["index", "workspace", "snippets", "chunk", "context", "providers", "team", "eval", "compare"]),
    ("cli", &["index"]),
];

/// The module paths a file names: `crate::a::b`, and `super::…`/`self::…` resolved against
/// the file's own module.
fn imports(path: &Path, known: &BTreeSet<Vec<String>>) -> BTreeSet<Vec<String>> {
    let code = code_of(path);
    let me = module_of(path);
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    for (start, word) in [("crate::", 0), ("super::", 1), ("self::", 2)]
        .iter()
        .flat_map(|(w, k)| code.match_indices(w).map(move |(i, _)| (i, (*w, *k))))
        .map(|(i, (w, k))| (i + w.len(), k))
    {
        // `crate::` inside an identifier (`mycrate::`) is not a path.
        let before = start.checked_sub(match word {
            0 => 8,
            1 => 8,
            _ => 7,
        });
        if before.is_some_and(|b| bytes[b].is_ascii_alphanumeric() || bytes[b] == b'_') {
            continue;
        }
        let base: Vec<String> = match word {
            0 => Vec::new(),
            1 => {
                // The parent of `a::b` is `a`, whether `b` is a file or a folder.
                let mut m = me.clone();
                m.pop();
                m
            }
            _ => me.clone(),
        };
        // `use crate::{a, b::c}` names several paths.
        let rest = &code[start..];
        let segments: Vec<Vec<String>> = if rest.starts_with('{') {
            let end = rest.find('}').unwrap_or(rest.len());
            rest[1..end].split(',').map(|p| path_segments(p.trim())).collect()
        } else {
            vec![path_segments(rest)]
        };
        for segs in segments {
            let mut full = base.clone();
            full.extend(segs);
            // The longest known module the path names.
            while !full.is_empty() && !known.contains(&full) {
                full.pop();
            }
            if !full.is_empty() {
                out.insert(full);
            }
        }
    }
    out
}

fn path_segments(text: &str) -> Vec<String> {
    let mut segs = Vec::new();
    let mut rest = text;
    loop {
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let seg = &rest[..end];
        if seg.is_empty() || !seg.starts_with(|c: char| c.is_ascii_lowercase()) {
            break;
        }
        segs.push(seg.to_string());
        match rest[end..].strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    segs
}

/// Every file's module and the modules it imports.
fn import_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let files = source_files();
    let known: BTreeSet<Vec<String>> = files.iter().map(|p| module_of(p)).collect();
    files.iter().map(|p| (module_of(p), imports(p, &known))).collect()
}

#[test]
fn modules_import_only_downwards_in_the_layer_table() {
    let layer = |m: &str| LAYERS.iter().find(|(name, _)| *name == m).map(|(_, l)| *l);
    let mut wrong = Vec::new();
    for (from, targets) in import_graph() {
        let Some(top) = from.first() else { continue };
        let Some(from_layer) = layer(top) else {
            wrong.push(format!("{top}: not in the layer table"));
            continue;
        };
        for to in targets {
            let target = &to[0];
            if target == top {
                continue;
            }
            let forbidden = FORBIDDEN.iter().any(|(m, f)| m == top && f.contains(&target.as_str()));
            match layer(target) {
                Some(l) if l < from_layer && !forbidden => {}
                _ => wrong.push(format!("{} imports {}", from.join("::"), to.join("::"))),
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layer table:\n{}", wrong.join("\n"));
}

#[test]
fn no_module_imports_in_a_circle() {
    // Within a module, its parts may use what its `mod.rs` defines (the module's table of
    // contents and shared types), and `mod.rs` declares and re-exports its parts; between
    // siblings, imports must not go round. Edges are taken between the siblings that hold
    // the two ends.
    let mut edges: BTreeSet<(Vec<String>, Vec<String>)> = BTreeSet::new();
    for (from, targets) in import_graph() {
        for to in targets {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                // Parent and descendant: the module tree, not a dependency between siblings.
                continue;
            }
            edges.insert((from[..=common].to_vec(), to[..=common].to_vec()));
        }
    }
    let nodes: BTreeSet<Vec<String>> = edges.iter().flat_map(|(a, b)| [a.clone(), b.clone()]).collect();
    let mut state: BTreeMap<Vec<String>, u8> = BTreeMap::new();
    fn visit(
        n: &Vec<String>,
        edges: &BTreeSet<(Vec<String>, Vec<String>)>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let at = stack.iter().position(|s| s == n).unwrap_or(0);
                return Some(stack[at..].iter().chain([n]).map(|m| m.join("::")).collect());
            }
            _ => {}
        }
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for (_, to) in edges.iter().filter(|(a, _)| a == n) {
            if let Some(cycle) = visit(to, edges, state, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
        None
    }
    for n in &nodes {
        if let Some(cycle) = visit(n, &edges, &mut state, &mut Vec::new()) {
            panic!("an import circle: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn only_the_protocol_servers_name_their_protocol_crates_and_only_the_cli_prints() {
    let mut wrong = Vec::new();
    for path in source_files() {
        let module = module_of(&path);
        let code = code_of(&path);
        let top = module.first().map(String::as_str).unwrap_or("");
        if top != "lsp" && code.contains("tower_lsp_server") {
            wrong.push(format!("{}: names tower_lsp_server", path.display()));
        }
        if top != "mcp" && code.contains("rmcp::") {
            wrong.push(format!("{}: names rmcp", path.display()));
        }
        let prints =
            ["println!", "print!(", "eprintln!", "eprint!(", "dbg!("].iter().any(|m| code.contains(m));
        if top != "cli" && prints {
            wrong.push(format!("{}: prints", path.display()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn source_files_stay_small() {
    // Tests at the end of a file do not count; past this size a file holds several concerns.
    const MAX_LINES: usize = 600;
    let mut files = source_files();
    rust_files(&root().join("crates"), &mut files);
    let long: Vec<String> = files
        .iter()
        .map(|p| (p, code_of(p).lines().count()))
        .filter(|(_, n)| *n > MAX_LINES)
        .map(|(p, n)| format!("{} ({n} lines)", p.display()))
        .collect();
    assert!(long.is_empty(), "split by concern: {long:?}");
}

/// FNV-1a over the file's bytes with line endings normalised: stable across platforms and
/// Rust versions.
fn wire_hash() -> String {
    let mut files = vec![root().join("src/lsp/ext.rs")];
    rust_files(&root().join("src/wire"), &mut files);
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap().replace("\r\n", "\n");
        for byte in text.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

#[test]
fn the_protocol_docs_and_the_vscode_mirror_name_the_hash_of_the_wire_shapes() {
    let hash = wire_hash();
    let line = format!("wire shapes hash: {hash}");
    for doc in ["docs/lsp.md", "editors/vscode/src/protocol.ts"] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        assert!(
            text.contains(&line),
            "{doc} does not name the current hash of src/lsp/ext.rs and src/wire/: the wire shapes \
             changed. Bring {doc} in step with them, then write `{line}` in it."
        );
    }
}

#[test]
fn only_wire_modules_and_storage_formats_derive_serialize() {
    // Serialized shapes are either what situate prints and sends (the wire modules) or what
    // it stores on disk and reads back (settings vocabulary included); engine results are
    // plain data converted at the edge.
    let allowed = [
        "src/lsp/ext.rs",
        "src/mcp/shapes.rs",
        "src/wire/",
        "src/chunk/mod.rs",
        "src/index/files.rs",
        "src/index/checked.rs",
        "src/index/manifest.rs",
        "src/providers/mod.rs",
        "src/search/mod.rs",
        "src/search/expand.rs",
        "src/snippets/mod.rs",
        "src/snippets/cache.rs",
        "src/snippets/prompt.rs",
        "src/team/tally.rs",
        "src/workspace.rs",
        "src/providers/openai.rs",
        "src/providers/anthropic.rs",
        "src/providers/http.rs",
    ];
    let wrong: Vec<String> = source_files()
        .iter()
        .filter(|p| {
            code_of(p).lines().any(|l| l.trim_start().starts_with("#[derive(") && l.contains("Serialize"))
        })
        .map(|p| p.strip_prefix(root()).unwrap().to_string_lossy().replace('\\', "/"))
        .filter(|p| !allowed.iter().any(|a| p.starts_with(a)))
        .collect();
    assert!(wrong.is_empty(), "serialized types outside the wire modules: {wrong:?}");
}
