//! End-to-end tests of `situate lsp`: the real binary, spoken to over stdio by a small
//! JSON-RPC client, on a temporary copy of the fixture workspace.

mod common;
mod lsp_client;

use common::Fixture;
use lsp_client::{LspClient, file_uri};
use serde_json::{Value, json};

fn search(client: &mut LspClient, query: &str) -> Vec<Value> {
    let answer = client.command("situate.search", json!({ "query": query, "limit": 5 })).expect("search");
    answer["hits"].as_array().cloned().unwrap_or_default()
}

fn paths(hits: &[Value]) -> Vec<String> {
    hits.iter().map(|h| h["path"].as_str().unwrap_or_default().to_string()).collect()
}

fn hover(client: &mut LspClient, uri: &str, line: u32, character: u32) -> Result<Value, Value> {
    client.request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": character } }),
    )
}

fn status(client: &mut LspClient) -> Value {
    client.command("situate.status", Value::Null).expect("status")["folders"][0].clone()
}

#[test]
fn a_session_indexes_searches_hovers_follows_saves_and_deletions_and_survives_bad_requests() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    let init = client.initialize(f.root(), json!({}), json!({}));
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-16");
    assert_eq!(init["serverInfo"]["name"], "situate");

    // Progress: a token is created, then begin, report(s) with percentages, end. The token
    // names the run's kind (editors tell indexing from background work by it).
    let create = client.wait_for(|m| m["method"] == "window/workDoneProgress/create");
    assert!(create["params"]["token"].as_str().unwrap().starts_with("situate/index/"), "{create}");
    let begin = client.wait_for(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "begin");
    assert!(begin["params"]["value"]["title"].as_str().unwrap().starts_with("Indexing"), "{begin}");
    let end = client.wait_indexed();
    assert!(end["params"]["value"]["message"].as_str().unwrap().contains("4 files"), "{end}");
    let report = client.wait_for(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "report");
    assert!(report["params"]["value"]["percentage"].is_u64(), "{report}");
    // Watching files outside the editor was registered.
    let registration = client.wait_for(|m| m["method"] == "client/registerCapability");
    assert_eq!(registration["params"]["registrations"][0]["method"], "workspace/didChangeWatchedFiles");

    // Search finds a paragraph that never names its topic, through its heading context.
    let hits = search(&mut client, "backup retention");
    let top = &hits[0];
    assert_eq!(top["path"], "ops/backup.md");
    assert_eq!(top["heading_path"], json!(["Backups", "Retention"]));
    assert_eq!(top["context"], "Document: Backup policy > Backups > Retention");
    assert_eq!(top["range"]["start"], json!({ "line": 9, "character": 0 }));
    assert_eq!(top["uri"], file_uri(&f.root().join("ops/backup.md")));
    assert!(top["preview"].as_str().unwrap().starts_with("Snapshots are kept"), "{top}");
    // The preview is the line that matched, with the matched words marked (UTF-16 offsets).
    let legal = &search(&mut client, "legal hold")[0];
    assert_eq!(legal["preview"], "legal hold is placed on them.", "{legal}");
    assert_eq!(legal["preview_marks"], json!([[0, 5], [6, 10]]), "{legal}");
    assert_eq!(legal["preview_line"], 12, "{legal}");
    assert_eq!(legal["metadata"], json!({ "title": ["Backup policy"] }), "{legal}");

    // Front matter filters keep the hits of the documents that match them all.
    let within = client
        .command("situate.search", json!({ "query": "snapshot", "where": ["TITLE=backup policy"] }))
        .unwrap();
    let within = within["hits"].as_array().unwrap();
    assert!(!within.is_empty() && within.iter().all(|h| h["path"] == "ops/backup.md"), "{within:?}");
    let none =
        client.command("situate.search", json!({ "query": "snapshot", "where": ["title=nope"] })).unwrap();
    assert_eq!(none["hits"], json!([]));
    let bad =
        client.command("situate.search", json!({ "query": "snapshot", "where": ["title"] })).unwrap_err();
    assert!(bad["message"].as_str().unwrap().contains("write FIELD=VALUE"), "{bad}");

    // With `expand`, a hit keeps its own range and carries the wider passage.
    let wide = client
        .command("situate.search", json!({ "query": "backup retention", "limit": 1, "expand": "window" }))
        .unwrap();
    let wide = &wide["hits"][0];
    assert_eq!(wide["range"], top["range"]);
    assert!(wide["expanded"]["range"]["start"]["line"].as_u64() < top["range"]["start"]["line"].as_u64());
    assert!(wide["expanded"]["text"].as_str().unwrap().contains("Snapshots are kept"), "{wide}");
    assert!(top.get("expanded").is_none());

    // The same search as workspace symbols, for editors without a plugin.
    let symbols = client.request("workspace/symbol", json!({ "query": "backup retention" })).unwrap();
    assert_eq!(symbols[0]["location"]["uri"], top["uri"]);
    assert!(symbols[0]["name"].as_str().unwrap().starts_with("Retention"), "{symbols}");
    // In the headings above its own, as a symbol of code sits in its container.
    assert_eq!(symbols[0]["containerName"], "ops/backup.md · Backups");
    // A file without headings: its path alone.
    let symbols = client.request("workspace/symbol", json!({ "query": "herons canal" })).unwrap();
    assert_eq!(symbols[0]["containerName"], "journal/2026-03-02.txt", "{symbols}");

    // Hover shows the heading path and the context the chunk was indexed with.
    let backup = file_uri(&f.root().join("ops/backup.md"));
    let h = hover(&mut client, &backup, 11, 4).unwrap();
    let text = h["contents"]["value"].as_str().unwrap();
    assert!(text.contains("Backups › Retention"), "{text}");
    assert!(text.contains("> Document: Backup policy > Backups > Retention"), "{text}");
    assert!(!text.contains("Stale"), "{text}");
    assert_eq!(h["range"]["start"]["line"], 9);
    // Outside indexed files: nothing, not an error.
    f.write("notes.rst", "plain\n");
    assert_eq!(hover(&mut client, &file_uri(&f.root().join("notes.rst")), 0, 0).unwrap(), Value::Null);

    // A new paragraph, saved, becomes searchable.
    let deploy = f.root().join("ops/deploy.md");
    let mut text = std::fs::read_to_string(&deploy).unwrap();
    text.push_str("\n## Canary\n\nThe quokka canary takes five percent of traffic for an hour.\n");
    std::fs::write(&deploy, text).unwrap();
    client.saved(&deploy);
    let found = client.eventually(|c| {
        let hits = search(c, "quokka canary");
        hits.first().filter(|h| h["path"] == "ops/deploy.md").cloned()
    });
    assert_eq!(found["heading_path"].as_array().unwrap().last().unwrap(), "Canary");

    // A file deleted outside the editor leaves the index on the watcher's event.
    let bread = f.root().join("kitchen/bread.md");
    assert!(paths(&search(&mut client, "sourdough starter")).contains(&"kitchen/bread.md".to_string()));
    std::fs::remove_file(&bread).unwrap();
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({ "changes": [{ "uri": file_uri(&f.root().join("kitchen")) + "/bread.md", "type": 3 }] }),
    );
    client.eventually(|c| {
        (!paths(&search(c, "sourdough starter")).contains(&"kitchen/bread.md".to_string())).then_some(())
    });

    // Bad requests get clear errors and the server keeps serving.
    let e = client.command("situate.nope", json!({})).unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("unknown command `situate.nope`"), "{e}");
    let e = client.command("situate.status", json!({ "x": 1 })).unwrap_err();
    assert_eq!(e["code"], -32602, "{e}");
    assert!(e["message"].as_str().unwrap().contains("unknown field `x`"), "{e}");
    client.command("situate.status", json!({})).expect("an empty object is no argument");
    let e = client.command("situate.search", json!({ "limit": 3 })).unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("query"), "{e}");
    let e = client.command("situate.search", json!({ "query": "x", "mode": "psychic" })).unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("psychic"), "{e}");
    // A size is never trusted as an allocation: it is refused with its bounds.
    let e =
        client.command("situate.search", json!({ "query": "retry", "limit": 1_000_000_000u64 })).unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("between 1 and 1000"), "{e}");
    let e = client
        .command(
            "situate.similar",
            json!({ "uri": backup.clone(), "position": { "line": 9, "character": 0 }, "limit": 1_000_000_000u64 }),
        )
        .unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("between 1 and 1000"), "{e}");
    let e = hover(&mut client, &backup, 500, 0).unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("past the end"), "{e}");
    let e = client
        .command(
            "situate.similar",
            json!({ "uri": "untitled:Untitled-1", "position": { "line": 0, "character": 0 } }),
        )
        .unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("not a file: URI"), "{e}");
    let e =
        client.command("situate.reindex", json!({ "uri": "file:///definitely/elsewhere.md" })).unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("outside the workspace"), "{e}");
    let e = client.request("textDocument/hover", json!({ "textDocument": 7 })).unwrap_err();
    assert_eq!(e["code"], -32602, "{e}");
    client.send_raw(b"{ this is not json");
    let garbage = client.response_to_null();
    assert_eq!(garbage["code"], -32700, "{garbage}");
    // A request for a `$/` method is not one the server knows; a body that is not UTF-8, or
    // holds a lone surrogate, is not JSON.
    let id = client.send_request("$/situate/unknown", json!({}));
    assert_eq!(client.response(id).unwrap_err()["code"], -32601);
    client.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"id\":90,\"method\":\"workspace/symbol\",\"params\":{\"query\":\"\xff\"}}",
    );
    assert_eq!(client.response_to_null()["code"], -32700);
    client.send_raw(br#"{"jsonrpc":"2.0","id":91,"method":"workspace/symbol","params":{"query":"\ud800"}}"#);
    assert_eq!(client.response_to_null()["code"], -32700);

    // Related chunks leave out the chunk itself and its neighbours.
    let related = client
        .command("situate.similar", json!({ "uri": backup, "position": { "line": 11, "character": 0 } }))
        .unwrap();
    let hits = related["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h["path"] != "ops/backup.md"), "{related}");
    // The folder's few chunks are all candidates; the least related of them all, which
    // scores 0, is not listed as related.
    assert!(hits.iter().all(|h| h["score"].as_f64().unwrap() > 0.0), "{related}");

    // Reindex and status answer after all this.
    let r = client.command("situate.reindex", json!({ "uri": file_uri(&deploy) })).unwrap();
    assert_eq!(r["path"], "ops/deploy.md");
    let s = status(&mut client);
    assert_eq!(s["phase"], "ready");
    assert_eq!(s["index"]["files"], 3);
    assert_eq!(s["index"]["read_only"], false);
    assert_eq!(s["pending"], json!([]));
    let model = if situate::providers::has_builtin_e5() { "e5" } else { "static" };
    assert_eq!(s["index"]["embedder"]["provider"], model);

    assert!(client.shutdown().success());
}

#[test]
fn notifications_sent_back_to_back_are_applied_in_order() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    client.wait_indexed();
    let path = f.root().join("ops/backup.md");
    let uri = file_uri(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines = text.lines().count() as u32;
    let added = "\nA line typed in the editor.\n".repeat(30);

    // open, change (thirty more lines), hover on a new line: without the change applied
    // first, that line would be past the end of the document.
    client.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "markdown", "version": 1, "text": text } }),
    );
    client.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": uri, "version": 2 },
            "contentChanges": [{ "range": { "start": { "line": lines, "character": 0 }, "end": { "line": lines, "character": 0 } }, "text": added }],
        }),
    );
    let id = client.send_request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": uri }, "position": { "line": lines + 40, "character": 0 } }),
    );
    client.response(id).expect("the change was applied before the hover");
    let id = client.send_request(
        "textDocument/hover",
        json!({ "textDocument": { "uri": uri }, "position": { "line": 11, "character": 0 } }),
    );
    let h = client.response(id).unwrap();
    assert!(h["contents"]["value"].as_str().unwrap().contains("unsaved changes"), "{h}");

    // Then save and hover at once: the save is applied first.
    std::fs::write(&path, format!("{text}{added}")).unwrap();
    client.notify("textDocument/didSave", json!({ "textDocument": { "uri": uri } }));
    let h = hover(&mut client, &uri, 11, 0).unwrap();
    let value = h["contents"]["value"].as_str().unwrap();
    assert!(!value.contains("unsaved changes"), "{value}");
    assert!(client.shutdown().success());
}

#[test]
fn utf8_positions_are_used_when_the_client_offers_them() {
    let f = Fixture::standard();
    f.write("notes/café.md", "# Café\n\nLe crème brûlée du chef — très célèbre.\n");
    let mut client = LspClient::start(f.index.path());
    let init = client.initialize(
        f.root(),
        json!({}),
        json!({ "general": { "positionEncodings": ["utf-8", "utf-16"] } }),
    );
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    client.wait_indexed();
    let hits = search(&mut client, "crème brûlée célèbre");
    let hit = hits.iter().find(|h| h["path"] == "notes/café.md").expect("found");
    let last_line = "Le crème brûlée du chef — très célèbre.";
    assert_eq!(hit["range"]["end"], json!({ "line": 2, "character": last_line.len() }));
    assert!(hit["uri"].as_str().unwrap().ends_with("/notes/caf%C3%A9.md"), "{hit}");
    assert!(client.shutdown().success());
}

#[test]
fn a_checkout_of_many_files_is_indexed_in_one_commit() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    client.wait_indexed();
    let before = status(&mut client)["index"]["generation"].as_u64().unwrap();
    let mut changes = Vec::new();
    for i in 0..500 {
        let rel = format!("checkout/page-{i:03}.md");
        f.write(&rel, format!("# Page {i}\n\nThe wombat ledger entry number {i}.\n"));
        changes.push(json!({ "uri": file_uri(&f.root().join(&rel)), "type": 1 }));
    }
    client.notify("workspace/didChangeWatchedFiles", json!({ "changes": changes }));
    let s = client.eventually(|c| {
        let s = status(c);
        (s["index"]["files"] == 504 && s["pending"] == json!([])).then_some(s)
    });
    assert_eq!(s["index"]["generation"].as_u64().unwrap(), before + 1, "{s}");
    assert!(paths(&search(&mut client, "wombat ledger")).iter().all(|p| p.starts_with("checkout/")));
    assert!(client.shutdown().success());
}

#[test]
fn bad_settings_are_shown_once_and_kept_in_status() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({ "search": { "limit": "many" }, "colour": "blue" }), json!({}));
    client.wait_indexed();
    let shown: Vec<Value> =
        client.received.iter().filter(|m| m["method"] == "window/showMessage").cloned().collect();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(shown.iter().any(|m| m["params"]["message"].as_str().unwrap().contains("search.limit")));
    let s = status(&mut client);
    let problems = s["index"]["config_problems"].as_array().unwrap();
    assert_eq!(problems.len(), 2, "{s}");
    // The standard workspace is English: every chunk by English rules.
    assert_eq!(
        s["index"]["languages"],
        json!([{ "code": "en", "name": "english", "chunks": s["index"]["chunks"] }])
    );
    // The defaults are in force, and the server serves.
    let hits = search(&mut client, "backup");
    assert!(hits.len() >= 2 && hits[0]["path"] == "ops/backup.md", "{hits:?}");

    // New settings from the editor reopen the folder with them.
    client.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": { "situate": { "search": { "limit": 2 } } } }),
    );
    client.eventually(|c| {
        let answer = c.command("situate.search", json!({ "query": "backup" })).unwrap();
        (answer["hits"].as_array().unwrap().len() == 2).then_some(())
    });
    assert!(client.shutdown().success());
}

#[test]
fn a_settings_file_given_with_config_is_read_for_the_folder() {
    let f = Fixture::standard();
    let settings = f.index.path().join("elsewhere.toml");
    std::fs::write(&settings, "exclude = [\"kitchen/**\"]\n[search]\nlimit = \"many\"\n").unwrap();
    let mut client = LspClient::start_with(f.index.path(), &["--config", settings.to_str().unwrap()], &[]);
    client.initialize(f.root(), Value::Null, json!({}));
    client.wait_indexed();
    let s = status(&mut client);
    assert_eq!(s["index"]["files"], 3, "kitchen is excluded by the given file: {s}");
    let problems = s["index"]["config_problems"].as_array().unwrap();
    assert!(problems.iter().any(|p| p.as_str().unwrap().contains("search.limit")), "{s}");
    assert!(!paths(&search(&mut client, "sourdough starter")).iter().any(|p| p.starts_with("kitchen/")));

    // A change to that file, outside the folder, reopens the folder with it.
    std::fs::write(&settings, "exclude = [\"kitchen/**\"]\n[search]\nlimit = 2\n").unwrap();
    let uri = file_uri(&settings);
    client.notify("workspace/didChangeWatchedFiles", json!({ "changes": [{ "uri": uri, "type": 2 }] }));
    client.eventually(|c| {
        let answer = c.command("situate.search", json!({ "query": "backup" })).unwrap();
        (answer["hits"].as_array().unwrap().len() == 2).then_some(())
    });
    assert!(client.shutdown().success());
}

#[test]
fn a_settings_file_that_cannot_be_parsed_keeps_the_folder_from_being_indexed_until_fixed() {
    let f = Fixture::standard();
    f.write("situate.toml", "exclude = [\"kitchen/**\"]\n[search]\nmode = bm25\n");
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), Value::Null, json!({}));
    let shown = client.wait_for(|m| m["method"] == "window/showMessage");
    let message = shown["params"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("situate.toml:3:8: not valid TOML"), "{message}");
    assert!(message.contains("nothing is indexed"), "{message}");
    let s = status(&mut client);
    assert_eq!(s["phase"], "failed", "{s}");
    assert!(search(&mut client, "sourdough starter").is_empty(), "nothing was indexed with the defaults");

    // Fixed and saved: the folder opens with the file's settings.
    f.write("situate.toml", "exclude = [\"kitchen/**\"]\n[search]\nmode = \"bm25\"\n");
    let uri = file_uri(&f.root().join("situate.toml"));
    client.notify("workspace/didChangeWatchedFiles", json!({ "changes": [{ "uri": uri, "type": 2 }] }));
    client.wait_indexed();
    let s = client.eventually(|c| {
        let s = status(c);
        (s["index"]["files"] == 3).then_some(s)
    });
    // The error the broken file gave goes with it; one the fixed file gives is listed.
    assert_eq!(s["errors"], json!([]), "{s}");
    f.write("situate.toml", "exclude = [\"kitchen/**\"]\n[search]\nmode = \"fuzzy\"\n");
    client.notify("workspace/didChangeWatchedFiles", json!({ "changes": [{ "uri": uri, "type": 2 }] }));
    let s = client.eventually(|c| {
        let s = status(c);
        (s["errors"].as_array().is_some_and(|e| !e.is_empty()) && s["phase"] == "ready").then_some(s)
    });
    let errors = s["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{s}");
    assert!(errors[0].as_str().unwrap().contains("search.mode"), "{s}");
    assert!(client.shutdown().success());
}

#[test]
fn a_second_server_on_the_same_folder_reads_the_shared_index_and_takes_over_when_the_first_exits() {
    let f = Fixture::standard();
    let mut first = LspClient::start(f.index.path());
    first.initialize(f.root(), json!({}), json!({}));
    first.wait_indexed();

    let mut second = LspClient::start(f.index.path());
    second.initialize(f.root(), json!({}), json!({}));
    let s = second.eventually(|c| {
        let s = status(c);
        (s["phase"] == "read-only" && s["index"].is_object()).then_some(s)
    });
    assert_eq!(s["index"]["read_only"], true);
    assert_eq!(s["index"]["other_writer"], true);
    assert_eq!(paths(&search(&mut second, "backup retention"))[0], "ops/backup.md");
    let e = second.command("situate.reindex", json!({})).unwrap_err();
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("read-only") && message.contains("(`situate lsp`, process"), "{e}");

    // What the first one indexes, the second one sees.
    f.write("ops/pager.md", "# Pager\n\nThe narwhal rota changes every Tuesday.\n");
    first.saved(&f.root().join("ops/pager.md"));
    second
        .eventually(|c| paths(&search(c, "narwhal rota")).first().filter(|p| *p == "ops/pager.md").cloned());

    // What the second one saves, the first one indexes (an editor that watches no files
    // would never tell the first of it), and the second one then sees it indexed.
    f.write("ops/runbook.md", "# Runbook\n\nThe pangolin checklist opens every incident.\n");
    second.saved(&f.root().join("ops/runbook.md"));
    first.eventually(|c| {
        paths(&search(c, "pangolin checklist")).first().filter(|p| *p == "ops/runbook.md").cloned()
    });
    second.eventually(|c| {
        let s = status(c);
        (s["pending"] == json!([]) && !paths(&search(c, "pangolin checklist")).is_empty()).then_some(())
    });

    assert!(first.shutdown().success());
    second.eventually(|c| (status(c)["phase"] == "ready").then_some(()));
    f.write("ops/oncall.md", "# On call\n\nThe axolotl handbook lists every escalation.\n");
    second.saved(&f.root().join("ops/oncall.md"));
    second.eventually(|c| {
        paths(&search(c, "axolotl handbook")).first().filter(|p| *p == "ops/oncall.md").cloned()
    });
    assert!(second.shutdown().success());
}

#[test]
fn a_server_that_starts_while_another_creates_the_index_waits_for_it_instead_of_failing() {
    // Two editors opening a folder never indexed at the same moment: one takes the writer
    // lock and creates the index, and the other finds the lock held and no index yet. The
    // test holds the lock itself, as the first server would.
    let f = Fixture::standard();
    let index_dir = f.index.path().join("shared-index");
    f.write("situate.toml", format!("index_dir = {:?}\n", index_dir.to_str().unwrap()));
    std::fs::create_dir_all(&index_dir).unwrap();
    let held = situate::index::lock::WriterLock::try_acquire(&index_dir.join("writer.lock")).unwrap();
    assert!(held.is_some());

    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    let s = client.eventually(|c| {
        let s = status(c);
        (s["phase"] != "opening").then_some(s)
    });
    assert_eq!(s["phase"], "read-only", "{s}");
    assert!(s["errors"].as_array().is_none_or(|e| e.is_empty()), "{s}");

    // The other process stops before its first commit: this server creates the index.
    drop(held);
    client.eventually(|c| {
        paths(&search(c, "backup retention")).first().filter(|p| *p == "ops/backup.md").cloned()
    });
    assert_eq!(status(&mut client)["phase"], "ready");
    assert!(client.shutdown().success());
}

#[test]
fn logs_go_to_the_log_file_and_never_to_stdout() {
    let f = Fixture::standard();
    let log = f.index.path().join("server.log");
    let mut client =
        LspClient::start_with_env(f.index.path(), &[("SITUATE_LOG_FILE", log.to_str().unwrap())]);
    client.initialize(f.root(), json!({}), json!({}));
    client.wait_indexed();
    assert!(client.shutdown().success());
    let written = std::fs::read_to_string(&log).unwrap();
    assert!(written.contains("indexed: 4 files"), "{written}");
    // Every byte on stdout was a framed message, or the client would have failed above.
}

#[test]
fn exit_without_shutdown_ends_with_code_one() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    client.notify("exit", Value::Null);
    assert_eq!(client.wait().code(), Some(1));
}

#[test]
fn each_workspace_folder_has_its_own_index_and_folders_come_and_go() {
    let notes = Fixture::standard();
    let book = Fixture::empty();
    book.write("chapters/one.md", "# The lighthouse\r\n\r\nThe keeper trims the lamp wick at dusk.\r\n");
    let mut client = LspClient::start(notes.index.path());
    let (a, b) = (file_uri(notes.root()), file_uri(book.root()));
    client.initialize_folders(&[(a.as_str(), "notes"), (b.as_str(), "book")]);
    let folders = client.folders_when(|f| f.len() == 2 && f.iter().all(|f| f["phase"] == "ready"));
    assert_ne!(folders[0]["index"]["index_dir"], folders[1]["index"]["index_dir"]);

    // Hits come from both folders; a CRLF file's range ends before the `\r`.
    let hits = search(&mut client, "lamp wick at dusk");
    let hit = &hits[0];
    assert_eq!(hit["uri"], file_uri(&book.root().join("chapters/one.md")));
    assert_eq!(
        hit["range"]["end"],
        json!({ "line": 2, "character": "The keeper trims the lamp wick at dusk.".len() })
    );
    assert_eq!(paths(&search(&mut client, "backup retention"))[0], "ops/backup.md");
    let h = hover(&mut client, hit["uri"].as_str().unwrap(), 2, 3).unwrap();
    assert!(h["contents"]["value"].as_str().unwrap().contains("The lighthouse"), "{h}");

    // Without progress support no progress is sent, and no watcher is registered.
    assert!(
        !client
            .received
            .iter()
            .any(|m| m["method"] == "$/progress" || m["method"] == "client/registerCapability")
    );

    client.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({ "event": { "added": [], "removed": [{ "uri": b, "name": "book" }] } }),
    );
    client.eventually(|c| {
        let hits = search(c, "lamp wick at dusk");
        (!hits.iter().any(|h| h["path"] == "chapters/one.md")).then_some(())
    });
    assert_eq!(
        client.command("situate.status", Value::Null).unwrap()["folders"].as_array().unwrap().len(),
        1
    );
    assert!(client.shutdown().success());
}

#[test]
fn an_index_folder_that_cannot_be_created_is_reported_and_the_server_keeps_answering() {
    let f = Fixture::standard();
    f.write("blocker", "a file where the index folder would go\n");
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({ "index_dir": "blocker/index" }), json!({}));
    let shown = client.wait_for(|m| m["method"] == "window/showMessage");
    assert!(shown["params"]["message"].as_str().unwrap().contains("cannot open the index"), "{shown}");
    assert_eq!(shown["params"]["type"], 1, "an error, not a warning: {shown}");
    let s = client.eventually(|c| {
        let s = status(c);
        (s["phase"] == "failed").then_some(s)
    });
    assert!(s["errors"][0].as_str().unwrap().contains("blocker"), "{s}");
    let answer = client.command("situate.search", json!({ "query": "backup" })).unwrap();
    assert_eq!(answer["hits"], json!([]));
    assert!(client.shutdown().success());
}

/// The files of every folder named `name` under `dir`.
fn files_in_folders_named(dir: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() && path.file_name().is_some_and(|n| n == name) {
            found.extend(
                std::fs::read_dir(&path).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_file()),
            );
        } else if path.is_dir() {
            found.extend(files_in_folders_named(&path, name));
        }
    }
    found
}

#[test]
fn chunk_store_files_cut_short_under_a_running_server_are_rebuilt_in_the_background() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    client.wait_indexed();
    assert_eq!(paths(&search(&mut client, "sourdough starter"))[0], "kitchen/bread.md");
    // A sync tool or a second program empties every segment file. Mapped, the next read of
    // any of them would end the server with SIGBUS.
    let segments: Vec<_> = files_in_folders_named(f.index.path(), "tantivy")
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e != "json" && e != "lock"))
        .collect();
    assert!(!segments.is_empty());
    for path in &segments {
        std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(0).unwrap();
    }
    for query in ["sourdough starter", "backups retention", "rollback"] {
        // An answer from what is intact, or an error that says in plain words what happened
        // and what the server does about it; either way the server is still there.
        if let Err(e) = client.command("situate.search", json!({ "query": query, "limit": 5 })) {
            let message = e["message"].as_str().unwrap_or_default().to_string();
            assert!(message.contains("damaged") && message.contains("rebuilt"), "{e}");
        }
    }
    // The user is told once, and the index is rebuilt from the files without a restart.
    let shown = client.wait_for(|m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().is_some_and(|t| t.contains("rebuilding the index"))
    });
    assert!(shown["params"]["message"].as_str().unwrap().contains("damaged"), "{shown}");
    let hits = client.eventually(|c| {
        let answer = c.command("situate.search", json!({ "query": "sourdough starter", "limit": 5 })).ok()?;
        let hits = answer["hits"].as_array().cloned().unwrap_or_default();
        (!hits.is_empty()).then_some(hits)
    });
    assert_eq!(paths(&hits)[0], "kitchen/bread.md");
    let shown = client.received.iter().filter(|m| m["method"] == "window/showMessage").count();
    assert_eq!(shown, 1, "the damage is reported once");
    assert!(client.shutdown().success());
}

#[test]
fn files_that_cannot_be_read_have_no_hover_and_a_named_pipe_never_holds_the_server_up() {
    let f = Fixture::standard();
    std::fs::create_dir_all(f.root().join("folder.md")).unwrap();
    let pipe = f.root().join("pipe.md");
    let made = std::process::Command::new("mkfifo").arg(&pipe).status().expect("mkfifo");
    assert!(made.success());
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    client.wait_indexed();

    // Gone, a folder, a named pipe: no hover, not an error.
    for name in ["gone.md", "folder.md", "pipe.md"] {
        let uri = file_uri(&f.root().join(name));
        assert_eq!(hover(&mut client, &uri, 0, 0), Ok(Value::Null), "{name}");
    }
    // More hovers on the pipe than the server runs requests at once, then a save and a
    // reindex of it: each is answered, and so is what comes after.
    let pipe_uri = file_uri(&pipe);
    let ids: Vec<i64> = (0..6)
        .map(|_| {
            client.send_request(
                "textDocument/hover",
                json!({ "textDocument": { "uri": pipe_uri }, "position": { "line": 0, "character": 0 } }),
            )
        })
        .collect();
    for id in ids {
        assert_eq!(client.response(id), Ok(Value::Null));
    }
    client.notify("textDocument/didSave", json!({ "textDocument": { "uri": pipe_uri } }));
    let r = client.command("situate.reindex", json!({ "uri": pipe_uri })).unwrap();
    assert_eq!(r["report"]["files_indexed"], 0, "{r}");
    let e = client
        .command("situate.similar", json!({ "uri": pipe_uri, "position": { "line": 0, "character": 0 } }))
        .unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("not a regular file"), "{e}");
    assert_eq!(status(&mut client)["phase"], "ready");
    assert!(client.shutdown().success());
}

/// UTF-8 with a bad byte in it (a file in Latin-1, or in UTF-8 and Latin-1 pasted
/// together, is read whole).
const DAMAGED_UTF8: &[u8] =
    b"# Caf\xc3\xa9 cr\xc3\xa8me br\xc3\xbbl\xc3\xa9e \xc3\xa0 la fran\xc3\xa7aise\n\nThe recipe \xff of the week.\n";

#[test]
fn files_that_are_not_utf8_are_reported_at_the_first_index_and_in_status() {
    let f = Fixture::standard();
    f.write("notes/mixed.md", DAMAGED_UTF8);
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    let end = client.wait_indexed();
    assert!(end["params"]["value"]["message"].as_str().unwrap().contains("1 not valid UTF-8"), "{end}");
    let shown = client.wait_for(|m| m["method"] == "window/showMessage");
    let text = shown["params"]["message"].as_str().unwrap();
    assert!(text.contains("notes/mixed.md is not valid UTF-8"), "{shown}");
    let s = status(&mut client);
    assert_eq!(s["index"]["lossy"], json!(["notes/mixed.md"]), "{s}");
    assert!(client.shutdown().success());

    // A server started later, which reads nothing again, still lists it.
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    client.wait_indexed();
    assert_eq!(status(&mut client)["index"]["lossy"], json!(["notes/mixed.md"]));
    assert!(client.shutdown().success());
}

#[test]
fn an_editor_slow_to_accept_a_progress_token_gets_the_warnings_meanwhile_then_the_run_s_latest_step() {
    let f = Fixture::standard();
    f.write("notes/mixed.md", DAMAGED_UTF8);
    let mut client = LspClient::start(f.index.path());
    // As VS Code activating its extensions: the token is accepted seconds later.
    client.hold("window/workDoneProgress/create");
    client.initialize(f.root(), json!({}), json!({}));
    let create = client.wait_for(|m| m["method"] == "window/workDoneProgress/create");
    let token = create["params"]["token"].clone();
    // The run ends, and its warning is not held back by the token waiting for an answer.
    let shown = client.wait_for(|m| m["method"] == "window/showMessage");
    assert!(
        shown["params"]["message"].as_str().unwrap().contains("notes/mixed.md is not valid UTF-8"),
        "{shown}"
    );
    client.folders_when(|f| f.iter().all(|f| f["phase"] == "ready"));
    let of_run = |c: &LspClient| -> Vec<Value> {
        c.received
            .iter()
            .filter(|m| m["method"] == "$/progress" && m["params"]["token"] == token)
            .cloned()
            .collect()
    };
    assert_eq!(of_run(&client), Vec::<Value>::new(), "no progress before the token is accepted");

    // Once accepted: the begin, then the end alone; the reports it made meanwhile are stale.
    client.accept(&create);
    client.wait_for(|m| {
        m["method"] == "$/progress" && m["params"]["token"] == token && m["params"]["value"]["kind"] == "end"
    });
    let run = of_run(&client);
    let kinds: Vec<Value> = run.iter().map(|m| m["params"]["value"]["kind"].clone()).collect();
    assert_eq!(kinds, [json!("begin"), json!("end")]);
    assert!(run[1]["params"]["value"]["message"].as_str().unwrap().contains("1 not valid UTF-8"));
    assert!(client.shutdown().success());
}

#[test]
fn file_watchers_follow_the_extensions_of_changed_settings() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    client.wait_indexed();
    let registered = |m: &Value, glob: &str| {
        m["method"] == "client/registerCapability"
            && m["params"]["registrations"][0]["registerOptions"]["watchers"][0]["globPattern"] == glob
    };
    let first = client.wait_for(|m| registered(m, "**/*.{md,markdown,mdx,txt}"));
    let first_id = first["params"]["registrations"][0]["id"].clone();

    // The settings file changes the extensions: new watchers, and the old ones dropped.
    f.write("situate.toml", "extensions = [\"md\", \"org\"]\n");
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({ "changes": [{ "uri": file_uri(&f.root().join("situate.toml")), "type": 1 }] }),
    );
    let second = client.wait_for(|m| registered(m, "**/*.{md,org}"));
    let second_id = second["params"]["registrations"][0]["id"].clone();
    assert_ne!(second_id, first_id);
    let dropped = client.wait_for(|m| m["method"] == "client/unregisterCapability");
    assert_eq!(dropped["params"]["unregisterations"][0]["id"], first_id, "{dropped}");

    // So do the editor's settings.
    client.notify("workspace/didChangeConfiguration", json!({ "settings": { "extensions": ["rst"] } }));
    client.wait_for(|m| registered(m, "**/*.{rst}"));
    client.wait_for(|m| {
        m["method"] == "client/unregisterCapability" && m["params"]["unregisterations"][0]["id"] == second_id
    });
    assert!(client.shutdown().success());
}

#[test]
fn a_buffer_is_unsaved_only_while_it_differs_from_the_saved_file() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    client.wait_indexed();
    let path = f.root().join("ops/backup.md");
    let uri = file_uri(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let unsaved = |client: &mut LspClient| {
        let h = hover(client, &uri, 11, 0).unwrap();
        h["contents"]["value"].as_str().unwrap().contains("unsaved changes")
    };
    let at = |line: u32, from: u32, to: u32| json!({ "start": { "line": line, "character": from }, "end": { "line": line, "character": to } });
    client.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "markdown", "version": 1, "text": text } }),
    );
    assert!(!unsaved(&mut client));
    // Typed, then undone: the buffer is the saved text again.
    let typed = json!({ "textDocument": { "uri": uri, "version": 2 }, "contentChanges": [{ "range": at(11, 0, 0), "text": "Typed. " }] });
    client.notify("textDocument/didChange", typed);
    assert!(unsaved(&mut client));
    let undone = json!({ "textDocument": { "uri": uri, "version": 3 }, "contentChanges": [{ "range": at(11, 0, 7), "text": "" }] });
    client.notify("textDocument/didChange", undone);
    assert!(!unsaved(&mut client));

    // A buffer opened with edits that were never saved (restored by the editor) is unsaved.
    client.notify("textDocument/didClose", json!({ "textDocument": { "uri": uri } }));
    let restored = format!("{text}\nA line never saved.\n");
    client.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "markdown", "version": 1, "text": restored } }),
    );
    assert!(unsaved(&mut client));
    assert!(client.shutdown().success());
}

#[test]
fn a_folder_inside_another_open_folder_is_served_by_the_outer_index() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    let (outer, inner) = (file_uri(f.root()), file_uri(&f.root().join("ops")));
    client.initialize_folders(&[(outer.as_str(), "ws"), (inner.as_str(), "ops")]);
    let folders = client.folders_when(|f| f.iter().all(|f| f["phase"] == "ready"));
    assert_eq!(folders.len(), 1, "{folders:?}");
    assert_eq!(folders[0]["root"], f.root().canonicalize().unwrap().display().to_string());

    // Each chunk of the nested folder is listed once.
    let symbols = client.request("workspace/symbol", json!({ "query": "backup retention" })).unwrap();
    let mut locations: Vec<String> =
        symbols.as_array().unwrap().iter().map(|s| s["location"].to_string()).collect();
    let listed = locations.len();
    locations.sort();
    locations.dedup();
    assert_eq!(locations.len(), listed, "{symbols}");

    // A save in the nested folder updates the index that serves it.
    let backup = f.root().join("ops/backup.md");
    std::fs::write(&backup, "# Backups\n\nThe wombat archive rotates every fortnight.\n").unwrap();
    client.saved(&backup);
    let saved = client.eventually(|c| {
        let hits = search(c, "wombat archive fortnight");
        hits.first().filter(|h| h["preview"].as_str().unwrap_or("").contains("wombat")).cloned()
    });
    assert_eq!(saved["path"], "ops/backup.md");

    // Closing the outer folder leaves the nested one with an index of its own.
    client.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({ "event": { "added": [], "removed": [{ "uri": outer, "name": "ws" }] } }),
    );
    let folders = client.eventually(|c| {
        let s = c.command("situate.status", Value::Null).unwrap();
        let folders = s["folders"].as_array().cloned().unwrap_or_default();
        (folders.len() == 1
            && folders[0]["root"].as_str().unwrap().ends_with("/ops")
            && folders[0]["phase"] == "ready")
            .then_some(folders)
    });
    assert_eq!(folders[0]["index"]["files"], 2, "{folders:?}");
    assert!(client.shutdown().success());
}

#[test]
fn related_passages_mark_the_words_that_tell_the_passage_apart_not_those_every_note_has() {
    let f = Fixture::empty();
    f.write("harbour.md", "# Harbour\n\nThe lantern keeper logs every tanker that docks at the harbour.\n");
    f.write("depot.md", "# Depot\n\nThe lantern keeper counts each tanker in the depot ledger.\n");
    for (name, place) in [("mill", "mill"), ("bridge", "bridge"), ("chapel", "chapel"), ("school", "school")]
    {
        f.write(
            &format!("{name}.md"),
            format!("# {name}\n\nThe lantern keeper walks past the {place} at night.\n"),
        );
    }
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({ "embedding": { "provider": "static" } }), json!({}));
    client.wait_indexed();
    let harbour = file_uri(&f.root().join("harbour.md"));
    let related = client
        .command("situate.similar", json!({ "uri": harbour, "position": { "line": 2, "character": 0 } }))
        .unwrap();
    let depot =
        related["hits"].as_array().unwrap().iter().find(|h| h["path"] == "depot.md").expect("depot.md");
    let preview = depot["preview"].as_str().unwrap();
    let marked: Vec<&str> = depot["preview_marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &preview[m[0].as_u64().unwrap() as usize..m[1].as_u64().unwrap() as usize])
        .collect();
    // Every note has a lantern keeper; only these two a tanker.
    assert_eq!(marked, ["tanker"], "{depot}");
}

/// A line of nine sentences, which a budget of 40 tokens cuts in three; the last names a
/// unicorn.
fn orchard_line() -> String {
    let fruits = ["apples", "pears", "plums", "cherries", "quinces", "apricots", "damsons", "medlars"];
    let mut line: String =
        fruits.iter().map(|f| format!("This sentence is about {f} in the orchard. ")).collect();
    line.push_str("The last one names a unicorn called Zephyr.");
    line
}

/// Serves a workspace whose `notes/one-line.md` is `file` (a heading, then `line`), chunked
/// by 40 tokens, and checks the hit for "unicorn Zephyr": on the line, starting where it was
/// cut inside it, ending with it. Gives the client, the file's URI and the hit.
fn cut_hit(f: &Fixture, file: Vec<u8>, line: &str) -> (LspClient, String, Value) {
    f.write("situate.toml", "[chunk]\nmax_tokens = 40\noverlap_tokens = 0\n");
    f.write("notes/one-line.md", file);
    let mut client = LspClient::start(f.index.path());
    client.initialize(f.root(), json!({}), json!({}));
    client.wait_indexed();
    let hits = search(&mut client, "unicorn Zephyr");
    let hit = hits.iter().find(|h| h["path"] == "notes/one-line.md").expect("found").clone();
    let (start, end) = (&hit["range"]["start"], &hit["range"]["end"]);
    assert_eq!((start["line"].as_u64(), end["line"].as_u64()), (Some(2), Some(2)), "{hit}");
    let (from, to) =
        (start["character"].as_u64().unwrap() as usize, end["character"].as_u64().unwrap() as usize);
    assert!(from > 0 && to == line.len(), "{hit}");
    let shown = &line[from..to];
    assert!(shown.starts_with("This sentence") || shown.starts_with("The last"), "{shown}");
    assert!(shown.ends_with("Zephyr."), "{shown}");
    // Hover over the chunk's words gives the same range.
    let uri = file_uri(&f.root().join("notes/one-line.md"));
    let h = hover(&mut client, &uri, 2, (line.len() - 3) as u32).expect("hover");
    assert_eq!(h["range"]["start"], hit["range"]["start"], "{h}");
    (client, uri, hit)
}

#[test]
fn a_hit_cut_from_inside_a_long_line_starts_where_it_was_cut() {
    let (f, line) = (Fixture::standard(), orchard_line());
    let (client, _, _) = cut_hit(&f, format!("# Orchard\n\n{line}\n").into_bytes(), &line);
    assert!(client.shutdown().success());
}

/// The same for a file in UTF-16, whose bytes are not those of the text indexed: the column
/// is read from the file decoded, and so is the saved text that a hover compares the
/// editor's buffer with.
#[test]
fn a_hit_cut_from_inside_a_long_line_of_a_file_in_utf16_starts_where_it_was_cut() {
    let (f, line) = (Fixture::standard(), orchard_line());
    let text = format!("# Orchard\r\n\r\n{line}\r\n");
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    let (mut client, uri, _) = cut_hit(&f, utf16, &line);
    // A hover in the middle of the line shows the chunk that holds the word under it.
    let at = line.find("quinces").unwrap();
    let h = hover(&mut client, &uri, 2, at as u32).expect("hover");
    let (from, to) = (&h["range"]["start"]["character"], &h["range"]["end"]["character"]);
    let (from, to) = (from.as_u64().unwrap() as usize, to.as_u64().unwrap() as usize);
    assert!(from <= at && at < to && line[from..to].contains("quinces"), "{h}");
    // Opened in the editor, which decodes it as the index did: nothing is unsaved.
    client.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "markdown", "version": 1, "text": text } }),
    );
    let h = hover(&mut client, &uri, 2, at as u32).expect("hover");
    assert!(!h["contents"]["value"].as_str().unwrap().contains("unsaved"), "{h}");
    assert!(client.shutdown().success());
}
