//! LLM snippets end to end against a chat server on 127.0.0.1: they land in the index and
//! change what search finds, the cache makes repeated work free, an edit costs one call per
//! changed chunk, the budget and a failing model stop the run without losing anything, and
//! the API key never reaches the disk or the logs.

mod common;
mod http_server;
mod lsp_client;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use common::Fixture;
use http_server::{Fault, TestServer, dead_port_url};
use lsp_client::{LspClient, file_uri};
use serde_json::{Value, json};
use situate::config::Config;
use situate::engine::{Engine, SnippetRun};
use situate::index::OpenMode;
use situate::providers::static_model::StaticEmbedder;
use situate::search::{Expand, SearchMode, SearchRequest};
use situate::snippets::generator::{Outcome, RunEnd, Totals};
use situate::snippets::prompt::SnippetMode;
use situate::snippets::{ChatProvider, SnippetConfig};

/// Chunks in `tests/data/workspace`.
const CHUNKS: usize = 8;

/// The reply the server gives: the backup retention chunk gets words found nowhere in the
/// workspace, every other chunk a plain sentence.
fn reply(request: &str) -> String {
    // In document mode the request holds the whole document: only the chunk counts.
    let chunk = request.rsplit("<chunk>").next().unwrap_or(request);
    if chunk.contains("thirty days") {
        "This section states the archival lifespan of nightly database dumps.".to_string()
    } else {
        "This part of the notes describes a routine task.".to_string()
    }
}

fn snippet_config(server: &TestServer) -> SnippetConfig {
    SnippetConfig {
        base_url: server.openai_url(),
        max_retries: 1,
        timeout_secs: 1,
        ..SnippetConfig::new(ChatProvider::OpenAi, "small-chat")
    }
}

fn config(f: &Fixture, snippets: SnippetConfig) -> Config {
    Config { snippets: Some(snippets), ..f.config() }
}

fn engine(f: &Fixture, config: Config) -> Engine {
    let embedder = Arc::new(StaticEmbedder::builtin().unwrap());
    let engine = Engine::open_with(f.root(), config, Vec::new(), embedder, OpenMode::Write).unwrap();
    assert!(engine.snippets_on());
    engine
}

fn run(engine: &mut Engine) -> SnippetRun {
    engine.reconcile(&mut |_| {}).unwrap();
    engine.write_snippets(Totals::default(), &mut |_| {}).unwrap()
}

fn first_hit(engine: &Engine, query: &str, mode: SearchMode) -> Option<(String, Vec<String>)> {
    let request = SearchRequest {
        query: query.to_string(),
        limit: 3,
        mode,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    };
    engine.search(&request).unwrap().into_iter().next().map(|h| (h.chunk.path, h.chunk.heading_path))
}

fn retention() -> Option<(String, Vec<String>)> {
    Some(("ops/backup.md".to_string(), vec!["Backups".to_string(), "Retention".to_string()]))
}

#[test]
fn snippets_land_in_the_index_and_change_what_search_finds() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    let mut engine = engine(&f, config(&f, snippet_config(&server)));
    engine.reconcile(&mut |_| {}).unwrap();
    // Header context only: the words of the snippet are nowhere yet.
    assert_eq!(engine.snippets_waiting(), CHUNKS);
    assert_eq!(first_hit(&engine, "archival lifespan", SearchMode::Bm25), None);
    let estimate = engine.snippet_estimate().unwrap();
    assert_eq!(estimate.calls, CHUNKS as u64);
    assert!(estimate.input_tokens > 100, "{estimate:?}");
    let run = engine.write_snippets(Totals::default(), &mut |_| {}).unwrap();
    assert_eq!(run.end, RunEnd::Finished);
    assert_eq!((run.indexed, run.waiting, run.totals.calls), (CHUNKS, 0, CHUNKS as u64));
    assert_eq!(server.chat_requests().len(), CHUNKS);
    assert!(run.totals.input_tokens > 0 && run.totals.output_tokens > 0);

    assert_eq!(first_hit(&engine, "archival lifespan", SearchMode::Bm25), retention());
    assert_eq!(first_hit(&engine, "archival lifespan of dumps", SearchMode::Hybrid), retention());
    let chunk = engine.chunks_at("ops/backup.md", Some(11)).unwrap().remove(0);
    let snippet = chunk.snippet.clone().unwrap();
    assert_eq!(snippet.text, "This section states the archival lifespan of nightly database dumps.");
    assert_eq!(snippet.model, format!("openai/small-chat@{}", server.url().trim_start_matches("http://")));
    assert!(snippet.created_at > 0);
    // The original text is kept apart from the snippet.
    assert!(!chunk.text.contains("archival"));
    assert!(chunk.embedding_text().contains("archival lifespan"));
    let status = engine.status();
    let s = status.snippets.unwrap();
    assert_eq!((s.done, s.pending), (CHUNKS, 0));
}

#[test]
fn a_second_run_makes_no_call_and_a_rebuilt_index_takes_snippets_from_the_cache() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    let mut e = engine(&f, config(&f, snippet_config(&server)));
    assert_eq!(run(&mut e).totals.calls, CHUNKS as u64);
    drop(e);
    server.clear_requests();

    let mut e = engine(&f, config(&f, snippet_config(&server)));
    let again = run(&mut e);
    assert_eq!((again.totals.calls, again.waiting), (0, 0));
    drop(e);

    // The index is lost, the cache beside it is not.
    for entry in std::fs::read_dir(f.index_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() != "snippets.jsonl" {
            if path.is_dir() {
                std::fs::remove_dir_all(&path).unwrap();
            } else {
                std::fs::remove_file(&path).unwrap();
            }
        }
    }
    let mut e = engine(&f, config(&f, snippet_config(&server)));
    let rebuilt = run(&mut e);
    assert_eq!((rebuilt.totals.calls, rebuilt.waiting), (0, 0));
    assert_eq!(e.status().snippets.unwrap().done, CHUNKS);
    assert_eq!(first_hit(&e, "archival lifespan", SearchMode::Bm25), retention());
    assert!(server.chat_requests().is_empty());
}

#[test]
fn a_snippet_paid_for_is_kept_even_when_the_process_dies_before_indexing_it() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    let mut e = engine(&f, config(&f, snippet_config(&server)));
    e.reconcile(&mut |_| {}).unwrap();
    let runner = e.snippet_runner(Totals::default()).unwrap().unwrap();
    let cache = f.index_dir().join("snippets.jsonl");
    let cached = || std::fs::read_to_string(&cache).map_or(0, |c| c.lines().count());
    // The answers come back while the index is busy with the first (embedding it, say) and
    // never reach it, as when `situate index --snippets` is killed between two commits.
    let (release, busy) = std::sync::mpsc::channel::<()>();
    let answered = std::thread::spawn(move || {
        let mut answered = 0;
        runner.run(&AtomicBool::new(false), &mut |_| {
            answered += 1;
            if answered == 1 {
                let _ = busy.recv();
            }
        });
        answered
    });
    let start = std::time::Instant::now();
    while cached() < CHUNKS && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(cached(), CHUNKS, "every answer is in the cache while the index is busy");
    release.send(()).unwrap();
    assert_eq!(answered.join().unwrap(), CHUNKS);
    assert_eq!(server.chat_requests().len(), CHUNKS);
    drop(e);

    let mut e = engine(&f, config(&f, snippet_config(&server)));
    let again = run(&mut e);
    assert_eq!((again.totals.calls, again.waiting), (0, 0), "{again:?}");
    assert_eq!(server.chat_requests().len(), CHUNKS, "no snippet is paid for twice");
    assert_eq!(first_hit(&e, "archival lifespan", SearchMode::Bm25), retention());
}

#[test]
fn editing_one_paragraph_costs_one_call_and_reverting_it_none() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    let mut e = engine(&f, config(&f, snippet_config(&server)));
    run(&mut e);
    server.clear_requests();

    let path = f.root().join("ops/backup.md");
    let original = std::fs::read_to_string(&path).unwrap();
    let edited = original.replace("thirty days", "forty-five days");
    std::fs::write(&path, &edited).unwrap();
    e.update(&["ops/backup.md".to_string()]).unwrap();
    // At once: the edited chunk is indexed with its header context, the others with their
    // snippets from the cache.
    assert_eq!(e.snippets_waiting(), 1);
    let edit = e.write_snippets(Totals::default(), &mut |_| {}).unwrap();
    assert_eq!(edit.totals.calls, 1);
    let sent = server.chat_requests();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].body.to_string().contains("forty-five days"));

    server.clear_requests();
    std::fs::write(&path, &original).unwrap();
    e.update(&["ops/backup.md".to_string()]).unwrap();
    assert_eq!(e.snippets_waiting(), 0);
    assert!(server.chat_requests().is_empty());
    assert_eq!(first_hit(&e, "archival lifespan", SearchMode::Bm25), retention());
}

/// The chunk a chat request asks about.
fn chunk_asked(request: &http_server::Recorded) -> String {
    let body = request.body.to_string();
    let chunk = body.rsplit("<chunk>").next().unwrap_or_default();
    chunk.split("</chunk>").next().unwrap_or_default().to_string()
}

#[test]
fn a_file_saved_mid_run_costs_no_call_for_the_chunks_the_save_took_out() {
    let server = TestServer::start();
    server.set_reply(reply);
    server.set_latency(Duration::from_millis(150));
    let f = Fixture::standard();
    // One call at a time, in file order: ops/backup.md comes after the first answers.
    let snippets = SnippetConfig { concurrency: 1, ..snippet_config(&server) };
    let mut e = engine(&f, config(&f, snippets));
    e.reconcile(&mut |_| {}).unwrap();
    let runner = e.snippet_runner(Totals::default()).unwrap().unwrap();
    assert_eq!(runner.len(), CHUNKS);
    // The run goes on a thread of its own, as in the language server, whose writer meanwhile
    // indexes a save.
    let (tx, answers) = std::sync::mpsc::channel::<Outcome>();
    let running = std::thread::spawn(move || {
        runner.run(&AtomicBool::new(false), &mut |outcome| tx.send(outcome).unwrap())
    });
    let start = std::time::Instant::now();
    while server.chat_requests().is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    // The retention paragraph changes and the restoring section goes.
    let path = f.root().join("ops/backup.md");
    let original = std::fs::read_to_string(&path).unwrap();
    let kept = &original[..original.find("## Restoring").unwrap()];
    std::fs::write(&path, kept.replace("thirty days", "forty-five days")).unwrap();
    e.update(&["ops/backup.md".to_string()]).unwrap();
    let asked =
        |words: &str| server.chat_requests().iter().filter(|r| chunk_asked(r).contains(words)).count();
    assert_eq!(asked("nightly-dump"), 0, "the save came before the file's turn");
    assert_eq!(running.join().unwrap(), RunEnd::Finished);
    e.apply_snippets(answers.try_iter().collect()).unwrap();
    // The next run asks about the chunks the save made.
    let next = e.write_snippets(Totals::default(), &mut |_| {}).unwrap();
    assert_eq!((&next.end, next.waiting), (&RunEnd::Finished, 0), "{next:?}");
    assert_eq!((asked("thirty days"), asked("restore --from")), (0, 0), "no call for chunks gone");
    assert_eq!((asked("forty-five days"), asked("nightly-dump")), (1, 1));
    assert_eq!(server.chat_requests().len(), CHUNKS - 1, "one call per chunk of the index");
    let status = e.status().snippets.unwrap();
    assert_eq!((status.done, status.pending), (CHUNKS - 1, 0));
}

#[test]
fn transient_faults_are_retried_and_every_snippet_lands() {
    let server = TestServer::start();
    server.set_reply(reply);
    server.queue([
        Fault::RateLimited("0"),
        Fault::Status(502),
        Fault::Malformed,
        Fault::Stall(Duration::from_millis(2500)),
    ]);
    let f = Fixture::standard();
    let snippets = SnippetConfig { concurrency: 1, max_retries: 2, ..snippet_config(&server) };
    let mut e = engine(&f, config(&f, snippets));
    let r = run(&mut e);
    assert_eq!(r.end, RunEnd::Finished);
    // The first job met 429 and 502 (both retried), then malformed JSON, which is not: it
    // failed and its chunk waits with its header context. The stalled answer of the second
    // job timed out and was retried. Everything else landed.
    assert_eq!((r.totals.failed, r.indexed, r.waiting), (1, CHUNKS - 1, 1), "{r:?}");
    let r = run(&mut e);
    assert_eq!((r.totals.calls, r.indexed, r.waiting), (1, 1, 0));
    assert_eq!(e.status().snippets.unwrap().done, CHUNKS);
}

#[test]
fn a_model_that_keeps_failing_stops_the_run_and_nothing_is_lost() {
    let server = TestServer::start();
    server.set_reply(reply);
    server.always(Some(Fault::Status(500)));
    let f = Fixture::standard();
    let snippets = SnippetConfig { concurrency: 1, ..snippet_config(&server) };
    let mut e = engine(&f, config(&f, snippets.clone()));
    let r = run(&mut e);
    match &r.end {
        RunEnd::Failing { error } => assert!(error.contains("500"), "{error}"),
        other => panic!("expected the run to stop, got {other:?}"),
    }
    assert_eq!(r.totals.failed, 3);
    assert_eq!(r.waiting, CHUNKS);
    // Every chunk is still searchable with its header context.
    assert_eq!(first_hit(&e, "how long are snapshots kept", SearchMode::Hybrid), retention());
    assert_eq!(e.status().chunks, CHUNKS);

    // The server recovers: the next run writes them all.
    server.always(None);
    let r = run(&mut e);
    assert_eq!((r.end, r.indexed, r.waiting), (RunEnd::Finished, CHUNKS, 0));
}

#[test]
fn a_refused_key_or_an_unknown_model_stops_the_run_at_the_first_answer() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    // SAFETY: no other test of this binary reads or writes this variable.
    unsafe { std::env::set_var("SITUATE_TEST_REFUSED_KEY", "sk-wrong") };
    server.require_key("sk-right");
    let snippets = SnippetConfig {
        concurrency: 1,
        api_key_env: Some("SITUATE_TEST_REFUSED_KEY".to_string()),
        ..snippet_config(&server)
    };
    let mut e = engine(&f, config(&f, snippets));
    let r = run(&mut e);
    match &r.end {
        RunEnd::Failing { error } => {
            assert!(error.contains("401") && error.contains("SITUATE_TEST_REFUSED_KEY"), "{error}");
            assert!(!error.contains("sk-wrong"), "{error}");
        }
        other => panic!("expected the run to stop, got {other:?}"),
    }
    assert_eq!(server.chat_requests().len(), 1, "one refusal is enough");
    assert_eq!((r.totals.failed, r.waiting), (1, CHUNKS));
    drop(e);

    // A model the server does not know is as hopeless for every chunk.
    let other = TestServer::start();
    other.always(Some(Fault::Status(404)));
    let snippets = SnippetConfig { api_key_env: None, ..snippet_config(&other) };
    let mut e = engine(&f, config(&f, SnippetConfig { concurrency: 1, ..snippets }));
    let r = run(&mut e);
    match &r.end {
        RunEnd::Failing { error } => assert!(error.contains("snippets.model"), "{error}"),
        other => panic!("expected the run to stop, got {other:?}"),
    }
    assert_eq!(other.chat_requests().len(), 1);
}

#[test]
fn a_thinking_model_is_read_past_its_reasoning_and_one_cut_off_while_thinking_is_not_cached() {
    let server = TestServer::start();
    server.set_reply(|request| {
        format!("<think>\nThe chunk is short. I will name its section.\n</think>\n\n{}", reply(request))
    });
    let f = Fixture::standard();
    let snippets = SnippetConfig { concurrency: 1, ..snippet_config(&server) };
    let mut e = engine(&f, config(&f, snippets.clone()));
    let r = run(&mut e);
    assert_eq!((&r.end, r.indexed, r.totals.rejected), (&RunEnd::Finished, CHUNKS, 0), "{r:?}");
    let chunk = e.chunks_at("ops/backup.md", Some(11)).unwrap().remove(0);
    assert_eq!(
        chunk.snippet.unwrap().text,
        "This section states the archival lifespan of nightly database dumps."
    );
    drop(e);

    // With too few tokens to finish thinking, the model says nothing: a setting to fix, not
    // a chunk without a snippet for good.
    let other = TestServer::start();
    other.set_reply(|_| "<think>\nThe user wants a note about this chunk. It is about".to_string());
    let snippets = SnippetConfig { concurrency: 1, ..snippet_config(&other) };
    let mut e = engine(&f, config(&f, snippets.clone()));
    let r = run(&mut e);
    match &r.end {
        RunEnd::Failing { error } => assert!(error.contains("snippets.max_tokens"), "{error}"),
        other => panic!("expected the run to stop, got {other:?}"),
    }
    assert_eq!((r.totals.failed, r.waiting), (3, CHUNKS), "{r:?}");
    assert!(r.totals.input_tokens > 0, "what the calls cost is counted");
    other.set_reply(reply);
    let r = run(&mut e);
    assert_eq!((&r.end, r.indexed, r.waiting), (&RunEnd::Finished, CHUNKS, 0), "{r:?}");
}

#[test]
fn a_stalled_server_ends_the_run_with_the_calls_in_flight_and_starts_no_more() {
    let server = TestServer::start();
    server.always(Some(Fault::Stall(Duration::from_secs(3))));
    let f = Fixture::standard();
    // One worker per file of the fixture, each call timing out after a second.
    let snippets = SnippetConfig { concurrency: 4, max_retries: 0, ..snippet_config(&server) };
    let mut e = engine(&f, config(&f, snippets));
    e.reconcile(&mut |_| {}).unwrap();
    let r = e.write_snippets(Totals::default(), &mut |_| {}).unwrap();
    assert!(matches!(r.end, RunEnd::Failing { .. }), "{r:?}");
    // Before, the first worker to time out started a fifth call, which the run then waited
    // out although its third failure had ended it.
    assert_eq!(server.chat_requests().len(), 4, "no call starts once the first one failed");
    assert_eq!(r.waiting, CHUNKS);
}

#[test]
fn the_budget_pauses_the_run_and_the_rest_waits() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    let snippets = SnippetConfig { max_calls: Some(4), ..snippet_config(&server) };
    let mut e = engine(&f, config(&f, snippets));
    let r = run(&mut e);
    assert_eq!(r.end, RunEnd::BudgetReached);
    assert_eq!((r.totals.calls, r.indexed, r.waiting), (4, 4, CHUNKS - 4));
    assert_eq!(server.chat_requests().len(), 4);
    let status = e.status().snippets.unwrap();
    assert_eq!((status.done, status.pending), (4, CHUNKS - 4));
}

#[test]
fn changing_the_snippet_model_regenerates_lazily_and_switching_back_is_free() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    let first = snippet_config(&server);
    let mut e = engine(&f, config(&f, first.clone()));
    run(&mut e);
    drop(e);

    let other = SnippetConfig { model: "bigger-chat".to_string(), ..first.clone() };
    let mut e = engine(&f, config(&f, other));
    e.reconcile(&mut |_| {}).unwrap();
    // The old snippets stay searchable until the new ones arrive.
    assert_eq!(e.snippets_waiting(), CHUNKS);
    assert_eq!(first_hit(&e, "archival lifespan", SearchMode::Bm25), retention());
    server.clear_requests();
    let r = e.write_snippets(Totals::default(), &mut |_| {}).unwrap();
    assert_eq!(r.totals.calls, CHUNKS as u64);
    assert!(server.chat_requests().iter().all(|r| r.body["model"] == "bigger-chat"));
    drop(e);

    server.clear_requests();
    let mut e = engine(&f, config(&f, first));
    let back = run(&mut e);
    assert_eq!((back.totals.calls, back.waiting), (0, 0));
    let chunk = e.chunks_at("ops/backup.md", Some(11)).unwrap().remove(0);
    assert!(chunk.snippet.unwrap().model.starts_with("openai/small-chat@"));
}

#[test]
fn document_mode_sends_the_document_once_per_chunk_for_the_prompt_cache() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    let snippets = SnippetConfig { mode: SnippetMode::Document, concurrency: 1, ..snippet_config(&server) };
    let mut e = engine(&f, config(&f, snippets));
    let r = run(&mut e);
    assert_eq!((r.indexed, r.waiting), (CHUNKS, 0));
    // ops/backup.md has three chunks: the second and third read the document from the cache.
    let backup: Vec<_> = server
        .chat_requests()
        .into_iter()
        .filter(|r| r.body.to_string().contains("nightly-dump"))
        .map(|r| r.body["messages"][1]["content"].as_str().unwrap().to_string())
        .collect();
    assert!(backup.len() >= 3, "{backup:?}");
    assert!(r.totals.cache_read_tokens > 0, "{:?}", r.totals);
    assert_eq!(first_hit(&e, "archival lifespan", SearchMode::Bm25), retention());
}

/// Runs the CLI in `dir` with `env`; returns stdout, stderr and the exit status.
fn cli(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (String, String, bool) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_situate"));
    command.current_dir(dir).args(args).env_remove("SITUATE_LOG");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn cli_index_snippets_with_anthropic_reports_totals_and_keeps_the_key_secret() {
    const KEY: &str = "sk-ant-test-93b1d7e05c";
    let server = TestServer::start();
    server.require_key(KEY);
    server.set_reply(reply);
    let f = Fixture::standard();
    let index = f.index_dir();
    f.write(
        "situate.toml",
        format!(
            "index_dir = {:?}\n[snippets]\nprovider = \"anthropic\"\nmodel = \"claude-test\"\n\
             base_url = {:?}\napi_key_env = \"SITUATE_TEST_ANTHROPIC_KEY\"\nmode = \"document\"\n",
            index.display().to_string(),
            server.url()
        ),
    );
    let log = f.index.path().join("situate.log");
    let env = [
        ("SITUATE_TEST_ANTHROPIC_KEY", KEY),
        ("SITUATE_LOG", "debug"),
        ("SITUATE_LOG_FILE", log.to_str().unwrap()),
    ];

    let (out, err, ok) = cli(f.root(), &["index"], &env);
    assert!(ok, "{err}");
    assert!(out.contains("snippets: 8 chunks wait for one"), "{out}");
    assert!(out.contains("calls"), "{out}");
    assert!(server.chat_requests().is_empty());

    let (out, err, ok) = cli(f.root(), &["index", "--snippets", "--json"], &env);
    assert!(ok, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    let totals = &summary["snippets"]["totals"];
    assert_eq!(totals["calls"], CHUNKS as u64);
    assert!(totals["cache_read_tokens"].as_u64().unwrap() > 0, "{totals}");
    assert_eq!(summary["snippets"]["end"]["kind"], "finished");
    assert!(server.chat_requests().iter().all(|r| r.headers["x-api-key"] == KEY));

    let (out, _, ok) = cli(f.root(), &["search", "archival lifespan", "--json"], &env);
    assert!(ok);
    let hits: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(hits[0]["path"], "ops/backup.md");
    assert!(hits[0]["snippet"]["text"].as_str().unwrap().contains("archival lifespan"));

    let (out, _, ok) = cli(f.root(), &["status"], &env);
    assert!(ok);
    assert!(out.contains("8 chunks done, 0 waiting"), "{out}");

    for path in files_under(&index).into_iter().chain([log]) {
        let bytes = std::fs::read(&path).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the key is in {}", path.display());
    }
}

#[test]
fn cli_says_why_snippets_are_off() {
    let f = Fixture::standard();
    f.write(
        "situate.toml",
        format!(
            "index_dir = {:?}\n[snippets]\nprovider = \"anthropic\"\nmodel = \"claude-test\"\n\
             base_url = \"http://127.0.0.1:9\"\n",
            f.index_dir().display().to_string()
        ),
    );
    let (_, err, ok) = cli(f.root(), &["index", "--snippets"], &[]);
    assert!(!ok);
    assert!(err.contains("snippets.api_key_env"), "{err}");
}

/// The folder's entry in `situate.status`.
fn folder_status(client: &mut LspClient) -> Value {
    client.command("situate.status", Value::Null).unwrap()["folders"][0].clone()
}

fn hover_text(client: &mut LspClient, uri: &str, line: u32) -> String {
    let hover = client
        .request(
            "textDocument/hover",
            json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": 0 } }),
        )
        .unwrap();
    hover["contents"]["value"].as_str().unwrap_or_default().to_string()
}

#[test]
fn the_language_server_writes_snippets_in_the_background_and_shows_them_on_hover() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    let snippets = json!({ "provider": "openai", "model": "small-chat", "base_url": server.openai_url() });
    client.initialize(
        f.root(),
        json!({ "snippets": snippets }),
        json!({ "window": { "workDoneProgress": true } }),
    );
    client.wait_indexed();
    let status = client.eventually(|c| {
        let s = folder_status(c);
        (s["index"]["snippets"]["done"] == CHUNKS && s["snippets"]["state"] == "idle").then_some(s)
    });
    assert_eq!(status["snippets"]["totals"]["calls"], CHUNKS, "{status}");
    assert_eq!(server.chat_requests().len(), CHUNKS);

    let answer =
        client.command("situate.search", json!({ "query": "archival lifespan", "mode": "bm25" })).unwrap();
    assert_eq!(answer["hits"][0]["path"], "ops/backup.md", "{answer}");
    let backup = f.root().join("ops/backup.md");
    let uri = file_uri(&backup);
    let text = hover_text(&mut client, &uri, 10);
    assert!(text.contains("This section states the archival lifespan of nightly database dumps."), "{text}");
    assert!(text.contains("_Snippet by openai/small-chat@127.0.0.1:"), "{text}");

    // A save that changes one paragraph: its chunk is re-indexed at once with its header
    // context, and one call brings its snippet.
    server.clear_requests();
    let edited = std::fs::read_to_string(&backup).unwrap().replace("thirty days", "forty-five days");
    std::fs::write(&backup, edited).unwrap();
    client.notify("textDocument/didSave", json!({ "textDocument": { "uri": uri } }));
    client.eventually(|c| {
        let s = folder_status(c);
        (s["index"]["snippets"]["pending"] == 0
            && s["snippets"]["state"] == "idle"
            && s["pending"] == json!([]))
        .then_some(())
    });
    let sent = server.chat_requests();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].body.to_string().contains("forty-five days"));
    // The new chunk's snippet is the one the server wrote for its new text.
    let text = hover_text(&mut client, &uri, 10);
    assert!(text.contains("describes a routine task") && !text.contains("archival"), "{text}");
    assert!(client.shutdown().success());
}

#[test]
fn the_language_server_says_once_that_the_snippet_model_is_down_and_keeps_serving() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    let snippets = json!({
        "provider": "openai", "model": "small-chat", "base_url": dead_port_url(), "max_retries": 0,
    });
    client.initialize(f.root(), json!({ "snippets": snippets }), json!({}));
    let shown = client.wait_for(|m| m["method"] == "window/showMessage");
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(message.contains("snippets stopped") && message.contains("cannot reach the server"), "{message}");
    assert!(message.contains("keep their header context"), "{message}");
    let status = folder_status(&mut client);
    assert_eq!(status["snippets"]["state"], "stopped", "{status}");
    assert!(status["snippets"]["retry_at"].as_u64().is_some(), "{status}");
    assert_eq!(status["index"]["snippets"]["pending"], CHUNKS, "{status}");
    assert!(status["index"]["snippets"]["estimate"]["calls"].as_u64().unwrap() > 0, "{status}");
    // Everything stays searchable with its header context.
    let answer = client.command("situate.search", json!({ "query": "how long are snapshots kept" })).unwrap();
    assert_eq!(answer["hits"][0]["path"], "ops/backup.md", "{answer}");
    let uri = file_uri(&f.root().join("ops/backup.md"));
    let text = hover_text(&mut client, &uri, 10);
    assert!(text.contains("Header context only for now"), "{text}");
    let shown = client.received.iter().filter(|m| m["method"] == "window/showMessage").count();
    assert_eq!(shown, 1, "the outage is shown once");
    assert!(client.shutdown().success());
}

#[test]
fn the_language_server_pauses_on_its_budget_resumes_on_reindex_and_drops_the_queue_when_turned_off() {
    let server = TestServer::start();
    server.set_reply(reply);
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    let snippets = json!({
        "provider": "openai", "model": "small-chat", "base_url": server.openai_url(), "max_calls": 3,
    });
    client.initialize(f.root(), json!({ "snippets": snippets.clone() }), json!({}));
    let shown = client.wait_for(|m| m["method"] == "window/showMessage");
    assert!(shown["params"]["message"].as_str().unwrap().contains("snippet budget is spent"), "{shown}");
    let status = client.eventually(|c| {
        let s = folder_status(c);
        (s["snippets"]["state"] == "paused").then_some(s)
    });
    assert_eq!(status["snippets"]["totals"]["calls"], 3, "{status}");
    assert!(status["errors"].to_string().contains("budget is spent"), "{status}");

    // A full reindex starts a new period: three more calls, then a pause again.
    client.command("situate.reindex", Value::Null).unwrap();
    client.eventually(|c| {
        (server.chat_requests().len() == 6 && folder_status(c)["snippets"]["state"] == "paused").then_some(())
    });

    // Turned off: the queue leaves status, and no more calls are made.
    let off = json!({ "snippets": { "enabled": false } });
    client.notify("workspace/didChangeConfiguration", json!({ "settings": { "situate": off } }));
    client.eventually(|c| {
        let s = folder_status(c);
        (s["phase"] == "ready" && s.get("snippets").is_none() && s["index"].get("snippets").is_none())
            .then_some(())
    });
    assert_eq!(server.chat_requests().len(), 6);
    assert!(client.shutdown().success());
}
