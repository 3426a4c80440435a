//! A workspace with symbolic links in it (a folder shared into a notes vault from elsewhere):
//! followed only with `follow_symlinks = true`, indexed at the link's path, kept current
//! through the link by full runs, by one-file updates and by an editor's saves, and gone
//! again when the link or the setting goes.
#![cfg(unix)]

mod common;
mod lsp_client;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{Counting, Fixture, age};
use lsp_client::LspClient;
use serde_json::json;
use situate::config::Config;
use situate::engine::{Engine, ReconcileReport};
use situate::search::{Expand, SearchMode, SearchRequest};
use situate::workspace::SkipReason;

/// A vault with a note of its own and, outside it, a synced folder holding a recipe.
struct Vault {
    fixture: Fixture,
    outside: tempfile::TempDir,
}

impl Vault {
    fn new() -> Vault {
        let fixture = Fixture::empty();
        fixture.write("daily.md", "# Daily\n\nWater the tomatoes before work.\n");
        age(&fixture.root().join("daily.md"));
        let outside = tempfile::tempdir().unwrap();
        let vault = Vault { fixture, outside };
        vault.write_outside(
            "Sync/shared/recipes/bread.md",
            "# Bread\n\nA sourdough loaf wants a cold proof overnight.\n",
        );
        vault
    }

    fn shared(&self) -> std::path::PathBuf {
        self.outside.path().join("Sync/shared")
    }

    fn write_outside(&self, rel: &str, text: &str) {
        let path = self.outside.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        age(&path);
    }

    fn link(&self, target: &Path, at: &str) {
        let at = self.fixture.root().join(at);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(target, at).unwrap();
    }

    fn engine(&self, follow_symlinks: bool) -> Engine {
        let mut config: Config = self.fixture.config();
        config.walk.follow_symlinks = follow_symlinks;
        self.fixture.engine_with(config, Counting::new())
    }
}

fn reconcile(engine: &mut Engine) -> ReconcileReport {
    engine.reconcile(&mut |_| {}).unwrap()
}

fn indexed(engine: &Engine) -> Vec<String> {
    engine.index().manifest().files.keys().cloned().collect()
}

/// The paths of the hits for `query` by words.
fn found(engine: &Engine, query: &str) -> Vec<String> {
    let request = SearchRequest {
        query: query.to_string(),
        limit: 5,
        mode: SearchMode::Bm25,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    };
    engine.search(&request).unwrap().into_iter().map(|h| h.chunk.path).collect()
}

#[test]
fn a_linked_folder_is_indexed_at_the_link_and_found_only_when_links_are_followed() {
    let vault = Vault::new();
    vault.link(&vault.shared(), "shared");
    let mut engine = vault.engine(false);
    reconcile(&mut engine);
    assert_eq!(indexed(&engine), ["daily.md"], "off by default: nothing through a link");
    assert!(found(&engine, "sourdough").is_empty());
    drop(engine);

    let mut engine = vault.engine(true);
    let report = reconcile(&mut engine);
    assert_eq!(report.files_indexed, 1, "{report:?}");
    assert_eq!(indexed(&engine), ["daily.md", "shared/recipes/bread.md"]);
    assert_eq!(found(&engine, "sourdough proof"), ["shared/recipes/bread.md"]);
    let chunks = engine.chunks_at("shared/recipes/bread.md", None).unwrap();
    assert!(chunks[0].text.contains("cold proof"), "{chunks:?}");

    // Turned off again, the linked notes leave the index on the next run.
    drop(engine);
    let mut engine = vault.engine(false);
    let report = reconcile(&mut engine);
    assert_eq!(report.files_removed, 1, "{report:?}");
    assert_eq!(indexed(&engine), ["daily.md"]);
    assert!(found(&engine, "sourdough").is_empty());
}

#[test]
fn a_change_behind_a_link_is_read_again_and_a_removed_link_takes_its_notes_along() {
    let vault = Vault::new();
    vault.link(&vault.shared(), "shared");
    vault.link(&vault.shared().join("recipes/bread.md"), "bread.md");
    let mut engine = vault.engine(true);
    reconcile(&mut engine);
    assert_eq!(indexed(&engine), ["bread.md", "daily.md", "shared/recipes/bread.md"]);

    // The same number of bytes, another word and another time: only the time tells.
    let path = vault.shared().join("recipes/bread.md");
    std::fs::write(&path, "# Bread\n\nA sourdough loaf wants a warm proof overnight.\n").unwrap();
    let later = SystemTime::now() - Duration::from_secs(1800);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
    let report = reconcile(&mut engine);
    assert_eq!(report.files_indexed, 2, "{report:?}");
    assert_eq!(found(&engine, "warm proof"), ["bread.md", "shared/recipes/bread.md"]);

    std::fs::remove_file(vault.fixture.root().join("shared")).unwrap();
    let report = reconcile(&mut engine);
    assert_eq!(report.files_removed, 1, "{report:?}");
    assert_eq!(indexed(&engine), ["bread.md", "daily.md"]);
}

#[test]
fn a_save_through_a_link_is_indexed_only_when_links_are_followed() {
    let vault = Vault::new();
    vault.link(&vault.shared(), "shared");
    let through_link = vault.fixture.root().join("shared/recipes/bread.md");
    let names = [through_link.display().to_string(), "shared/recipes/bread.md".to_string()];
    for name in &names {
        let mut engine = vault.engine(false);
        reconcile(&mut engine);
        let report = engine.update(std::slice::from_ref(name)).unwrap();
        assert_eq!(report.files_indexed, 0, "{name}: {report:?}");
        assert_eq!(indexed(&engine), ["daily.md"], "{name}");
    }
    for name in &names {
        let mut engine = vault.engine(true);
        reconcile(&mut engine);
        vault.write_outside("Sync/shared/recipes/bread.md", "# Bread\n\nRye flour needs no kneading.\n");
        let report = engine.update(std::slice::from_ref(name)).unwrap();
        assert_eq!((report.files_indexed, report.files_removed), (1, 0), "{name}: {report:?}");
        assert_eq!(found(&engine, "rye kneading"), ["shared/recipes/bread.md"], "{name}");
        vault.write_outside("Sync/shared/recipes/bread.md", "# Bread\n\nA sourdough loaf.\n");
        drop(engine);
    }
}

#[test]
fn loops_two_links_to_one_folder_and_links_to_nothing_are_listed_and_the_rest_indexed() {
    let vault = Vault::new();
    vault.link(&vault.shared(), "shared");
    vault.link(&vault.shared(), "two");
    vault.link(Path::new(".."), "shared-notes/up");
    vault.fixture.write("shared-notes/n.md", "# Notes\n\nPlant garlic in October.\n");
    vault.link(&vault.outside.path().join("gone"), "gone.md");
    let mut engine = vault.engine(true);
    let report = reconcile(&mut engine);
    assert_eq!(indexed(&engine), ["daily.md", "shared-notes/n.md", "shared/recipes/bread.md"]);
    let skipped: Vec<(&str, &SkipReason)> =
        report.skipped.iter().map(|s| (s.path.as_str(), &s.reason)).collect();
    assert_eq!(
        skipped,
        [
            (
                "gone.md",
                &SkipReason::DanglingLink { target: vault.outside.path().join("gone").display().to_string() }
            ),
            ("shared-notes/up", &SkipReason::LinkLoop { ancestor: ".".into() }),
            ("two", &SkipReason::AlreadyIndexed { indexed_as: "shared".into() }),
        ]
    );
    assert_eq!(engine.status().skipped.len(), 3);
    // A save under the link the walk passed over is not indexed a second time.
    let report = engine.update(&["two/recipes/bread.md".to_string()]).unwrap();
    assert_eq!(report.files_indexed, 0, "{report:?}");
    assert_eq!(found(&engine, "sourdough"), ["shared/recipes/bread.md"]);
    // A second run changes nothing.
    let report = reconcile(&mut engine);
    assert_eq!((report.files_indexed, report.files_removed, report.skipped.len()), (0, 0, 3), "{report:?}");
}

#[test]
fn an_editor_s_save_of_a_note_through_a_link_is_indexed_at_the_link_s_path() {
    let vault = Vault::new();
    vault.link(&vault.shared(), "shared");
    // As an editor names it: through the link, not where the link leads.
    let bread = vault.fixture.root().canonicalize().unwrap().join("shared/recipes/bread.md");
    let uri = format!("file://{}", bread.display());
    let mut client = LspClient::start(vault.fixture.index.path());
    client.initialize(vault.fixture.root(), json!({ "follow_symlinks": true }), json!({}));
    client.wait_indexed();
    vault.write_outside("Sync/shared/recipes/bread.md", "# Bread\n\nRye flour needs no kneading.\n");
    let answer = client.command("situate.reindex", json!({ "uri": uri })).unwrap();
    assert_eq!(answer["path"], "shared/recipes/bread.md", "{answer}");
    assert_eq!(answer["report"]["files_indexed"], 1, "{answer}");
    vault.write_outside("Sync/shared/recipes/bread.md", "# Bread\n\nSpelt wants a long soak.\n");
    client.notify("textDocument/didSave", json!({ "textDocument": { "uri": uri } }));
    client.eventually(|c| {
        let answer = c.command("situate.search", json!({ "query": "spelt soak", "limit": 5 })).unwrap();
        (answer["hits"][0]["path"] == "shared/recipes/bread.md").then_some(())
    });
    let hover = client.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": uri }, "position": { "line": 2, "character": 0 } }),
    );
    let hover = hover.unwrap();
    assert!(
        hover["contents"]["value"].as_str().unwrap().contains("`shared/recipes/bread.md` lines 1–3"),
        "{hover}"
    );
    assert!(client.shutdown().success());
}
