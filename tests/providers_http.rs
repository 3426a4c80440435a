//! Remote providers against real HTTP servers on 127.0.0.1: OpenAI-compatible embeddings
//! and chat, Anthropic messages, and every fault the retry policy has to handle — with the
//! API key checked to stay out of errors, logs and the index.

mod common;
mod http_server;
mod lsp_client;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Fixture;
use http_server::{Fault, TestServer, dead_port_url};
use lsp_client::LspClient;
use serde_json::{Value, json};
use situate::config::Config;
use situate::engine::{Engine, PendingVectors};
use situate::index::OpenMode;
use situate::providers::anthropic::AnthropicChat;
use situate::providers::chat::{Chat, ChatRequest, Usage};
use situate::providers::http::{
    ApiKey, Auth, ErrorKind, HttpClient, HttpSettings, ProviderError, RetryPolicy,
};
use situate::providers::openai::{OpenAiChat, OpenAiEmbedder, OpenAiEmbeddingConfig};
use situate::providers::static_model::StaticEmbedder;
use situate::providers::{EmbedError, Embedder, EmbeddingConfig, build as embedder_for};
use situate::search::{Expand, SearchMode, SearchRequest};

const KEY: &str = "sk-test-4f1c9e2b7a";

/// Short timeouts and delays, so that faults cost milliseconds.
fn quick(max_retries: u32) -> HttpSettings {
    HttpSettings {
        timeout: Duration::from_millis(1500),
        connect_timeout: Duration::from_millis(500),
        retry: RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(100),
            max_retry_after: Duration::from_secs(5),
        },
    }
}

fn client(base_url: &str, settings: HttpSettings) -> HttpClient {
    HttpClient::new(base_url, Auth::Bearer(ApiKey::new(KEY)), settings).unwrap()
}

/// An embedder on `server` with the static model's 256 dimensions declared (no probe).
fn embedder(server: &TestServer, batch_size: usize, settings: HttpSettings) -> OpenAiEmbedder {
    OpenAiEmbedder::connect(client(&server.openai_url(), settings), "mini", Some(dimensions()), batch_size)
        .unwrap()
}

fn dimensions() -> usize {
    StaticEmbedder::builtin().unwrap().identity().dimensions
}

fn provider_error(e: EmbedError) -> ProviderError {
    match e {
        EmbedError::Remote(e) => e,
        other => panic!("not a provider error: {other:?}"),
    }
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("text number {i} about {}", ["bread", "backups", "deploys"][i % 3])).collect()
}

/// Tracing output written while `f` runs on this thread (and on the tasks it starts).
fn captured_logs<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let result = tracing::subscriber::with_default(subscriber, f);
    let logs = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    (result, logs)
}

#[test]
fn embeddings_arrive_in_input_order_and_normalised() {
    let server = TestServer::start();
    let e = embedder(&server, 64, quick(0));
    let texts = texts(5);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let remote = e.embed(&refs).unwrap();
    let local = StaticEmbedder::builtin().unwrap().embed(&refs).unwrap();
    assert_eq!(remote.len(), 5);
    for (r, l) in remote.iter().zip(&local) {
        let norm: f32 = r.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        let cosine: f32 = r.iter().zip(l).map(|(a, b)| a * b).sum();
        assert!(cosine > 0.9999, "vectors out of order (cosine {cosine})");
    }
    let identity = e.identity();
    assert_eq!(identity.provider, "openai");
    assert_eq!(identity.model, format!("mini@{}", server.url().trim_start_matches("http://")));
    assert_eq!(identity.dimensions, dimensions());
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(request.body["model"], "mini");
    assert_eq!(request.body["dimensions"], dimensions());
    assert_eq!(request.headers["authorization"], format!("Bearer {KEY}"));
}

#[test]
fn batches_split_as_configured_and_blank_texts_stay_home() {
    let server = TestServer::start();
    let e = embedder(&server, 4, quick(0));
    let mut texts = texts(10);
    texts.insert(3, "   ".to_string());
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = e.embed(&refs).unwrap();
    assert_eq!(vectors.len(), 11);
    let sizes: Vec<usize> = server.embedding_batches().iter().map(Vec::len).collect();
    assert_eq!(sizes, [4, 4, 2]);
    assert!(!server.embedding_batches().concat().contains(&"   ".to_string()));
    assert_eq!(vectors[3].last(), Some(&1.0), "a blank text gets the fixed fallback vector");
}

#[test]
fn the_dimension_is_found_by_a_probe_when_not_configured() {
    let server = TestServer::start();
    let e = OpenAiEmbedder::connect(client(&server.openai_url(), quick(0)), "mini", None, 64).unwrap();
    assert_eq!(e.identity().dimensions, dimensions());
    assert_eq!(server.requests().len(), 1);
    assert!(server.requests()[0].body.get("dimensions").is_none(), "nothing to ask for");
}

#[test]
fn a_rate_limit_is_retried_after_the_advertised_delay() {
    let server = TestServer::start();
    let e = embedder(&server, 64, quick(2));
    server.queue([Fault::RateLimited("1")]);
    let started = Instant::now();
    assert_eq!(e.embed(&["hello"]).unwrap().len(), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let gap = requests[1].at - requests[0].at;
    assert!(gap >= Duration::from_millis(950), "retried after {gap:?}, not the advertised second");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn server_errors_are_retried_until_the_server_recovers() {
    let server = TestServer::start();
    let e = embedder(&server, 64, quick(3));
    server.queue([Fault::Status(500), Fault::Status(503), Fault::Status(502)]);
    let (result, logs) = captured_logs(|| e.embed(&["hello", "world"]));
    assert_eq!(result.unwrap().len(), 2);
    assert_eq!(server.requests().len(), 4);
    assert_eq!(logs.matches("retrying").count(), 3, "{logs}");
    assert!(logs.contains("server error 500"), "{logs}");
    assert!(!logs.contains(KEY), "the key leaked into the logs: {logs}");
}

#[test]
fn a_permanent_server_error_fails_after_the_last_retry() {
    let server = TestServer::start();
    let e = embedder(&server, 64, quick(2));
    server.always(Some(Fault::Status(500)));
    let (result, logs) = captured_logs(|| e.embed(&["hello"]));
    let err = provider_error(result.unwrap_err());
    assert!(matches!(err.kind, ErrorKind::Server { status: 500, .. }), "{err:?}");
    assert_eq!(err.attempts, 3);
    assert_eq!(server.requests().len(), 3);
    let shown = err.to_string();
    assert!(shown.contains(&format!("{}/embeddings", server.openai_url())), "{shown}");
    assert!(shown.contains("gave up after 3 attempts"), "{shown}");
    for text in [shown, format!("{err:?}"), logs] {
        assert!(!text.contains(KEY), "the key leaked: {text}");
    }
}

#[test]
fn a_stalled_server_times_out() {
    let server = TestServer::start();
    let settings = HttpSettings { timeout: Duration::from_millis(300), ..quick(1) };
    let e = embedder(&server, 64, settings);
    // The server stalls and then closes without an answer: an error of any other kind
    // than a timeout means the client waited for the close.
    server.always(Some(Fault::Stall(Duration::from_secs(3))));
    let err = provider_error(e.embed(&["hello"]).unwrap_err());
    assert!(matches!(err.kind, ErrorKind::Timeout(_)), "{err:?}");
    assert_eq!((err.attempts, server.requests().len()), (2, 2));
}

#[test]
fn malformed_json_is_an_error_naming_the_endpoint() {
    let server = TestServer::start();
    let e = embedder(&server, 64, quick(3));
    server.queue([Fault::Malformed]);
    let err = provider_error(e.embed(&["hello"]).unwrap_err());
    assert!(matches!(err.kind, ErrorKind::Malformed(_)), "{err:?}");
    assert!(err.to_string().contains("/v1/embeddings"), "{err}");
    assert_eq!(server.requests().len(), 1, "a malformed answer is not retried");
}

#[test]
fn an_answer_cut_short_is_retried_and_said_to_be_cut_short_not_unreachable() {
    let server = TestServer::start();
    let e = embedder(&server, 64, quick(3));
    server.queue([Fault::CutShort]);
    assert_eq!(e.embed(&["hello"]).unwrap().len(), 1, "the retry is answered");
    assert_eq!(server.requests().len(), 2);

    server.always(Some(Fault::CutShort));
    let err = provider_error(e.embed(&["hello"]).unwrap_err());
    assert!(matches!(err.kind, ErrorKind::CutShort(_)), "{err:?}");
    assert!(err.to_string().contains("the answer was cut short"), "{err}");
    assert!(!err.to_string().contains("cannot reach the server"), "{err}");
}

#[test]
fn vectors_of_the_wrong_length_are_refused() {
    let server = TestServer::start();
    let e = embedder(&server, 64, quick(3));
    server.queue([Fault::WrongDimensions]);
    let err = provider_error(e.embed(&["hello"]).unwrap_err());
    assert_eq!(err.kind, ErrorKind::WrongDimensions { expected: dimensions(), got: dimensions() - 1 });

    // Without a configured dimension the probe's answer sets it.
    let probed = OpenAiEmbedder::connect(client(&server.openai_url(), quick(0)), "mini", None, 64).unwrap();
    server.queue([Fault::WrongDimensions]);
    let err = provider_error(probed.embed(&["hello"]).unwrap_err());
    assert!(matches!(err.kind, ErrorKind::WrongDimensions { .. }), "{err:?}");
}

#[test]
fn a_refused_key_is_not_retried_and_stays_out_of_errors_and_logs() {
    let server = TestServer::start();
    server.require_key("sk-the-right-one");
    let e = embedder_with_key_refused(&server);
    let (result, logs) = captured_logs(|| e.embed(&["hello"]));
    let err = provider_error(result.unwrap_err());
    assert!(matches!(err.kind, ErrorKind::Client { status: 401, .. }), "{err:?}");
    assert_eq!(server.requests().len(), 1, "401 is not retried");
    let shown = err.to_string();
    assert!(shown.contains("Incorrect API key provided: <redacted>"), "{shown}");
    for text in [shown, format!("{err:?}"), format!("{e:?}"), logs] {
        assert!(!text.contains(KEY), "the key leaked: {text}");
    }
}

fn embedder_with_key_refused(server: &TestServer) -> OpenAiEmbedder {
    // A declared dimension means no probe, so the refusal comes from the call under test.
    embedder(server, 64, quick(3))
}

#[test]
fn a_dead_server_is_unreachable_after_the_retries() {
    let url = dead_port_url();
    let err = OpenAiEmbedder::connect(client(&url, quick(2)), "mini", None, 64).unwrap_err();
    assert!(matches!(err.kind, ErrorKind::Unreachable(_)), "{err:?}");
    assert_eq!(err.attempts, 3);
    let shown = err.to_string();
    assert!(shown.starts_with(&format!("{url}/embeddings: cannot reach the server")), "{shown}");
    assert!(shown.to_lowercase().contains("refused"), "{shown}");
}

#[test]
fn the_embedder_works_from_plain_threads_and_spawn_blocking() {
    let server = TestServer::start();
    let e: Arc<dyn Embedder> = Arc::new(embedder(&server, 8, quick(0)));
    let from_thread = {
        let e = Arc::clone(&e);
        std::thread::spawn(move || e.embed(&["from a thread"]).unwrap()).join().unwrap()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let from_tasks = runtime.block_on(async {
        let tasks: Vec<_> = (0..4)
            .map(|i| {
                let e = Arc::clone(&e);
                tokio::task::spawn_blocking(move || e.embed(&[&format!("from task {i}")]).unwrap())
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        // The last handle is dropped inside the async context: that must not panic.
        drop(e);
        out
    });
    assert_eq!(from_thread[0].len(), dimensions());
    assert_eq!(from_tasks.len(), 4);
    assert_eq!(server.requests().len(), 5);
}

#[test]
fn openai_chat_returns_the_text_and_cached_tokens() {
    let server = TestServer::start();
    let chat = OpenAiChat::new(client(&server.openai_url(), quick(0)), "small-chat");
    let request = ChatRequest {
        system: "Situate chunks in their document.".into(),
        document: "The whole document text here".into(),
        prompt: "Explain the chunk".into(),
        max_tokens: 100,
    };
    let first = chat.complete(&request).unwrap();
    assert_eq!(first.text, "About: 5");
    assert_eq!(
        first.usage,
        Usage { input_tokens: 13, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0 }
    );
    let second = chat.complete(&request).unwrap();
    assert_eq!(second.usage.cache_read_tokens, 5);
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(sent.body["max_tokens"], 100);
    assert_eq!(sent.body["messages"][0]["role"], "system");
    assert!(sent.body["messages"][1]["content"].as_str().unwrap().starts_with("The whole document"));
}

#[test]
fn anthropic_messages_cache_the_document_and_report_cache_usage() {
    let server = TestServer::start();
    let chat = AnthropicChat::new(&server.url(), ApiKey::new(KEY), "claude-test", quick(2)).unwrap();
    let request = ChatRequest {
        system: "Be brief.".into(),
        document: "one two three four five six".into(),
        prompt: "Situate this chunk".into(),
        max_tokens: 50,
    };
    // An overloaded server (529) is retried like any 5xx.
    server.queue([Fault::Status(529)]);
    let first = chat.complete(&request).unwrap();
    assert_eq!(first.text, "A short snippet.");
    assert_eq!(
        first.usage,
        Usage { input_tokens: 11, output_tokens: 3, cache_read_tokens: 0, cache_write_tokens: 6 }
    );
    let second = chat.complete(&request).unwrap();
    assert_eq!(
        second.usage,
        Usage { input_tokens: 11, output_tokens: 3, cache_read_tokens: 6, cache_write_tokens: 0 }
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let sent = &requests[1];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.headers["x-api-key"], KEY);
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    assert!(!sent.headers.contains_key("authorization"));
    let content = &sent.body["messages"][0]["content"];
    assert_eq!(content[0]["text"], "one two three four five six");
    assert_eq!(content[0]["cache_control"]["type"], "ephemeral");
    assert!(content[1].get("cache_control").is_none());
    assert_eq!(sent.body["system"], "Be brief.");
    assert_eq!(sent.body["max_tokens"], 50);
}

#[test]
fn a_chat_client_refused_for_its_key_is_not_retried() {
    let server = TestServer::start();
    server.require_key("sk-the-right-one");
    let chat = AnthropicChat::new(&server.url(), ApiKey::new(KEY), "claude-test", quick(3)).unwrap();
    let request =
        ChatRequest { system: String::new(), document: "doc".into(), prompt: "p".into(), max_tokens: 10 };
    let err = chat.complete(&request).unwrap_err();
    assert!(matches!(err.kind, ErrorKind::Client { status: 401, .. }), "{err:?}");
    assert_eq!(server.requests().len(), 1);
    assert!(!err.to_string().contains(KEY) && !format!("{chat:?}").contains(KEY));
}

/// The configuration of a workspace that embeds through `server` under `model`.
fn remote_config(f: &Fixture, server: &TestServer, model: &str) -> Config {
    let mut remote = OpenAiEmbeddingConfig::new(model);
    remote.base_url = server.openai_url();
    remote.batch_size = 16;
    remote.max_retries = 0;
    Config { embedding: EmbeddingConfig::OpenAi(remote), ..f.config() }
}

fn open(f: &Fixture, config: Config) -> Engine {
    let embedder = embedder_for(&config.embedding).unwrap();
    Engine::open_with(f.root(), config, Vec::new(), embedder, OpenMode::Write).unwrap()
}

fn vector_search(engine: &Engine, query: &str) -> Vec<String> {
    let request = SearchRequest {
        query: query.to_string(),
        limit: 3,
        mode: SearchMode::Vector,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    };
    engine
        .search(&request)
        .unwrap()
        .iter()
        .map(|h| format!("{}:{}", h.chunk.path, h.chunk.start_line))
        .collect()
}

#[test]
fn a_workspace_indexed_through_a_remote_server_answers_vector_searches() {
    let f = Fixture::standard();
    let server = TestServer::start();
    let mut engine = open(&f, remote_config(&f, &server, "mini"));
    let report = engine.reconcile(&mut |_| {}).unwrap();
    assert_eq!(report.files_indexed, 4);
    let chunks = engine.index().manifest().chunk_count();
    assert_eq!(engine.index().vector_count(), chunks);
    assert!(server.embedding_batches().iter().all(|b| b.len() <= 16));
    assert_eq!(engine.status().embedder.provider, "openai");

    let remote_hits = vector_search(&engine, "bread dough folding and shaping");
    assert!(remote_hits[0].starts_with("kitchen/bread.md"), "{remote_hits:?}");
    // The server embeds with the static model, so the ranking is the static model's.
    let local = Fixture::standard();
    let mut local_engine = local.engine(Arc::new(StaticEmbedder::builtin().unwrap()));
    local_engine.reconcile(&mut |_| {}).unwrap();
    assert_eq!(remote_hits, vector_search(&local_engine, "bread dough folding and shaping"));
}

#[test]
fn switching_the_remote_model_re_embeds_without_rechunking() {
    let f = Fixture::standard();
    let server = TestServer::start();
    let mut engine = open(&f, remote_config(&f, &server, "mini"));
    engine.reconcile(&mut |_| {}).unwrap();
    let chunks = engine.index().manifest().chunk_count();
    drop(engine);
    server.clear_requests();

    let mut engine = open(&f, remote_config(&f, &server, "mini-v2"));
    assert!(
        engine.index().notes().iter().any(|n| n.contains("embedding model changed")),
        "{:?}",
        engine.index().notes()
    );
    let report = engine.reconcile(&mut |_| {}).unwrap();
    assert_eq!((report.files_indexed, report.vectors_refilled), (0, chunks));
    let requests = server.requests();
    assert!(requests.iter().skip(1).all(|r| r.body["model"] == "mini-v2"));
    assert_eq!(
        server.embedding_batches().iter().skip(1).map(Vec::len).sum::<usize>(),
        chunks,
        "after the probe"
    );
    assert!(vector_search(&engine, "bread dough folding and shaping")[0].starts_with("kitchen/bread.md"));
}

#[test]
fn a_dead_embedding_server_is_a_clear_error_when_the_engine_opens() {
    let f = Fixture::standard();
    let mut remote = OpenAiEmbeddingConfig::new("mini");
    remote.base_url = dead_port_url();
    remote.max_retries = 0;
    let Err(err) = embedder_for(&EmbeddingConfig::OpenAi(remote.clone())) else {
        panic!("a dead server answered")
    };
    let err = err.to_string();
    assert!(err.contains(&remote.base_url) && err.contains("cannot reach the server"), "{err}");

    // With the dimension declared there is no probe: the first embedding fails instead,
    // and the reconcile reports it. The texts were committed before their vectors, so the
    // words are searchable and nothing is lost; the vectors come when the server does.
    remote.dimensions = Some(dimensions());
    let config = Config { embedding: EmbeddingConfig::OpenAi(remote), ..f.config() };
    let mut engine = open(&f, config);
    let err = engine.reconcile(&mut |_| {}).unwrap_err().to_string();
    assert!(err.contains("cannot reach the server"), "{err}");
    assert_eq!(engine.index().manifest().files.len(), 4);
    assert_eq!(engine.index().vector_count(), 0);
    let request = SearchRequest {
        query: "backup retention".into(),
        limit: 1,
        mode: SearchMode::Bm25,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    };
    assert_eq!(engine.search(&request).unwrap()[0].chunk.path, "ops/backup.md");
}

#[test]
fn a_save_is_searchable_by_its_words_while_the_embedding_server_is_down() {
    let f = Fixture::standard();
    let server = TestServer::start();
    let mut config = remote_config(&f, &server, "mini");
    if let EmbeddingConfig::OpenAi(remote) = &mut config.embedding {
        remote.dimensions = Some(dimensions());
    }
    let mut engine = open(&f, config);
    engine.set_pending_vectors(PendingVectors::Queued);
    engine.reconcile(&mut |_| {}).unwrap();
    while engine.pending_vectors() > 0 {
        engine.fill_pending_vectors(64).unwrap();
    }
    let vectors = engine.index().vector_count();

    // The server goes down; a save must still reach the index, by its words, at once.
    server.always(Some(Fault::Status(503)));
    f.write("ops/backup.md", "# Backups\n\nThe quarterly zeppelin audit keeps its own archive.\n");
    let report = engine.update(&["ops/backup.md".to_string()]).unwrap();
    assert_eq!(report.files_indexed, 1);
    let request = SearchRequest {
        query: "zeppelin audit".into(),
        limit: 1,
        mode: SearchMode::Bm25,
        paths: Vec::new(),
        filters: Vec::new(),
        expand: Expand::None,
    };
    assert_eq!(engine.search(&request).unwrap()[0].chunk.path, "ops/backup.md");
    // The default, hybrid search cannot embed its query: it answers by words; a search by
    // meaning alone says why it cannot.
    let hybrid = SearchRequest { mode: SearchMode::Hybrid, ..request.clone() };
    assert_eq!(engine.search(&hybrid).unwrap()[0].chunk.path, "ops/backup.md");
    let vector = SearchRequest { mode: SearchMode::Vector, ..request.clone() };
    assert!(engine.search(&vector).unwrap_err().to_string().contains("503"));
    assert!(engine.pending_vectors() > 0, "the new text waits for its vector");
    assert!(engine.fill_pending_vectors(64).is_err(), "the server is still down");

    // When it is back, the pending vectors are filled and the new text is found by meaning.
    server.always(None);
    while engine.pending_vectors() > 0 {
        engine.fill_pending_vectors(64).unwrap();
    }
    assert_eq!(engine.index().vector_count(), engine.index().manifest().chunk_count());
    assert!(engine.index().vector_count() <= vectors + 1);
    assert!(vector_search(&engine, "zeppelin audit archive")[0].starts_with("ops/backup.md"));

    // An engine that fills its own vectors (no language server around it) reports the
    // failure, but only after the text is committed.
    engine.set_pending_vectors(PendingVectors::FilledNow);
    server.always(Some(Fault::Status(503)));
    f.write("ops/pager.md", "# Pager\n\nThe walrus rota changes every Tuesday.\n");
    let err = engine.update(&["ops/pager.md".to_string()]).unwrap_err().to_string();
    assert!(err.contains("503"), "{err}");
    let request = SearchRequest { query: "walrus rota".into(), ..request };
    assert_eq!(engine.search(&request).unwrap()[0].chunk.path, "ops/pager.md");
}

/// Runs the real binary in the fixture with `KEY` in its environment.
fn situate(f: &Fixture, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_situate"))
        .args(args)
        .current_dir(f.root())
        .env("XDG_CACHE_HOME", f.index.path())
        .env("SITUATE_TEST_API_KEY", KEY)
        .env("SITUATE_LOG", "debug")
        .output()
        .unwrap()
}

fn files_holding(dir: &std::path::Path, needle: &[u8], found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_holding(&path, needle, found);
        } else if std::fs::read(&path).unwrap().windows(needle.len()).any(|w| w == needle) {
            found.push(path.display().to_string());
        }
    }
}

#[test]
fn the_cli_indexes_through_a_keyed_server_and_the_key_stays_out_of_the_index() {
    let f = Fixture::standard();
    let server = TestServer::start();
    server.require_key(KEY);
    let toml = format!(
        "index_dir = {:?}\n[embedding]\nprovider = \"openai\"\nmodel = \"mini\"\nbase_url = \"{}\"\n\
         api_key_env = \"SITUATE_TEST_API_KEY\"\nbatch_size = 8\n",
        f.index_dir(),
        server.openai_url()
    );
    f.write("situate.toml", toml);
    let out = situate(&f, &["index"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("4 files seen"), "{stdout}");
    assert!(server.requests().iter().all(|r| r.headers["authorization"] == format!("Bearer {KEY}")));

    let out = situate(&f, &["search", "bread dough folding and shaping", "--mode", "vector", "-k", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("kitchen/bread.md"), "{stdout}");
    let out = situate(&f, &["status", "--json"]);
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(status.contains("\"openai\""), "{status}");

    let mut found = Vec::new();
    files_holding(&f.index_dir(), KEY.as_bytes(), &mut found);
    assert!(found.is_empty(), "the key was written to {found:?}");
    for out in [&stdout.to_string(), &stderr.to_string(), &status.to_string()] {
        assert!(!out.contains(KEY), "the key leaked: {out}");
    }
}

#[test]
fn the_cli_reports_a_dead_server_and_a_missing_key() {
    let f = Fixture::standard();
    let toml = format!(
        "index_dir = {:?}\n[embedding]\nprovider = \"openai\"\nmodel = \"mini\"\nbase_url = \"{}\"\nmax_retries = 0\n",
        f.index_dir(),
        dead_port_url()
    );
    f.write("situate.toml", &toml);
    let out = situate(&f, &["index"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("cannot reach the server") && stderr.contains("/v1/embeddings"), "{stderr}");

    f.write("situate.toml", format!("{toml}api_key_env = \"SITUATE_TEST_NO_SUCH_KEY\"\n"));
    let out = situate(&f, &["index"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("SITUATE_TEST_NO_SUCH_KEY (named by api_key_env) is not set"), "{stderr}");
}

#[test]
fn the_language_server_indexes_and_searches_through_a_remote_server() {
    let f = Fixture::standard();
    let server = TestServer::start();
    let mut client = LspClient::start_with_env(f.index.path(), &[("SITUATE_TEST_API_KEY", KEY)]);
    let embedding = json!({
        "provider": "openai", "model": "mini", "base_url": server.openai_url(),
        "api_key_env": "SITUATE_TEST_API_KEY", "max_retries": 0,
    });
    client.initialize(f.root(), json!({ "embedding": embedding }), json!({}));
    client.wait_indexed();
    // A remote model is a slow one: its vectors are filled in after the texts.
    client.eventually(|c| {
        let s = c.command("situate.status", Value::Null).unwrap();
        (s["folders"][0]["vectors_pending"] == 0 && s["folders"][0]["index"]["vectors"] == 8).then_some(())
    });
    // Searches run in spawn_blocking tasks of the server's runtime; the query is embedded
    // there, through the same server.
    let before = server.requests().len();
    let answer = client
        .command(
            "situate.search",
            json!({ "query": "bread dough folding and shaping", "mode": "vector", "limit": 1 }),
        )
        .unwrap();
    assert_eq!(answer["hits"][0]["path"], "kitchen/bread.md", "{answer}");
    assert_eq!(server.requests().len(), before + 1);
    assert!(server.requests().iter().all(|r| r.headers["authorization"] == format!("Bearer {KEY}")));
    let status = client.command("situate.status", serde_json::Value::Null).unwrap();
    assert!(status.to_string().contains("openai") && !status.to_string().contains(KEY), "{status}");
    assert!(client.shutdown().success());
}

#[test]
fn the_language_server_reports_a_dead_embedding_server_once_and_keeps_answering() {
    let f = Fixture::standard();
    let mut client = LspClient::start(f.index.path());
    let embedding =
        json!({ "provider": "openai", "model": "mini", "base_url": dead_port_url(), "max_retries": 0 });
    client.initialize(f.root(), json!({ "embedding": embedding }), json!({}));
    let shown = client.wait_for(|m| m["method"] == "window/showMessage");
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(message.contains("cannot reach the server") && message.contains("/v1/embeddings"), "{shown}");
    let status = client.eventually(|c| {
        let s = c.command("situate.status", serde_json::Value::Null).unwrap()["folders"][0].clone();
        (s["phase"] == "failed").then_some(s)
    });
    assert!(status["errors"][0].as_str().unwrap().contains("cannot reach the server"), "{status}");
    let answer = client.command("situate.search", json!({ "query": "backup" })).unwrap();
    assert_eq!(answer["hits"], json!([]));
    let shown = client.received.iter().filter(|m| m["method"] == "window/showMessage").count();
    assert_eq!(shown, 1, "the failure is shown once");
    assert!(client.shutdown().success());
}

/// Runs the real binary in the fixture; stdout and stderr of a run that must succeed.
fn situate_ok(f: &Fixture, args: &[&str]) -> (String, String) {
    let out = situate(f, args);
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(out.status.success(), "{args:?} failed\nstdout: {stdout}\nstderr: {stderr}");
    (stdout, stderr)
}

#[test]
fn the_cli_stops_at_the_quick_tier_on_request_and_searches_never_wait_for_a_slow_model() {
    let f = Fixture::standard();
    let server = TestServer::start();
    f.write(
        "situate.toml",
        format!(
            "[embedding]\nprovider = \"openai\"\nmodel = \"mini\"\nbase_url = \"{}\"\nmax_retries = 0\ndimensions = {}\n",
            server.openai_url(),
            dimensions()
        ),
    );
    let status = |f: &Fixture| -> serde_json::Value {
        serde_json::from_str(&situate_ok(f, &["status", "--json"]).0).unwrap()
    };

    // The quick tier only: texts and static vectors, no remote vector yet.
    let (out, _) = situate_ok(&f, &["index", "--quick"]);
    let chunks = status(&f)["chunks"].as_u64().unwrap();
    assert!(out.contains(&format!("openai vectors: 0 of {chunks}")), "{out}");
    assert_eq!(status(&f)["vectors_pending"], chunks);
    let embedded_before = server.embedding_batches().iter().map(Vec::len).sum::<usize>();

    // A search answers at once, by meaning too, and says what is still to come.
    let (out, err) = situate_ok(&f, &["search", "sourdough starter", "--mode", "vector", "--json"]);
    let hits: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(hits[0]["path"], "kitchen/bread.md");
    assert!(err.contains("`situate index` computes them"), "{err}");
    let embedded_after = server.embedding_batches().iter().map(Vec::len).sum::<usize>();
    assert_eq!(embedded_after - embedded_before, 1, "only the query went to the server");

    // `situate index` fills the rest, and measures how fast.
    situate_ok(&f, &["index"]);
    let s = status(&f);
    assert_eq!((s["vectors_pending"].as_u64(), s["vectors"].as_u64()), (Some(0), Some(chunks)));

    // A later change stopped at the quick tier comes with an estimate of the time left.
    f.write("kitchen/tea.md", "# Tea\n\nSteep green tea for two minutes at eighty degrees.\n");
    situate_ok(&f, &["index", "--quick"]);
    let s = status(&f);
    assert_eq!(s["vectors_pending"], 1);
    assert!(s["vectors_eta_secs"].as_u64().is_some(), "{s}");
}

/// A bare MCP client over the server's stdio (newline-delimited JSON-RPC), enough to call
/// tools; the protocol itself is checked with the official SDK in `tests/mcp.rs`.
struct McpPeer {
    child: std::process::Child,
    out: std::io::BufReader<std::process::ChildStdout>,
    next: u64,
}

impl McpPeer {
    fn start(f: &Fixture) -> McpPeer {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_situate"))
            .args(["mcp", "--dir"])
            .arg(f.root())
            .env("XDG_CACHE_HOME", f.index.path())
            .env("SITUATE_LOG", "warn")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut peer = McpPeer { child, out, next: 0 };
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}});
        peer.request("initialize", init);
        peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        peer
    }

    fn send(&mut self, message: Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        use std::io::BufRead;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.out.read_line(&mut line).unwrap() > 0, "the MCP server closed its output");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == self.next {
                return message["result"].clone();
            }
        }
    }

    fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let result = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert_eq!(result["isError"], false, "{result:#}");
        result["structuredContent"].clone()
    }
}

impl Drop for McpPeer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

#[test]
fn the_mcp_server_answers_at_once_while_a_slow_models_vectors_are_filled_in_the_background() {
    let f = Fixture::standard();
    let server = TestServer::start();
    // Each request to the model server takes a while: a fill of the workspace takes
    // several of them, and the first answer must not wait for them all.
    server.set_latency(Duration::from_millis(800));
    f.write(
        "situate.toml",
        format!(
            "[embedding]\nprovider = \"openai\"\nmodel = \"mini\"\nbase_url = \"{}\"\nmax_retries = 0\n\
             dimensions = {}\nbatch_size = 2\n",
            server.openai_url(),
            dimensions()
        ),
    );
    let mut mcp = McpPeer::start(&f);
    let first = mcp.tool("search", json!({"query": "how long are backups kept?", "k": 3}));
    assert_eq!(first["results"][0]["path"], "ops/backup.md", "{first:#}");
    let note = first["note"].as_str().unwrap_or_default();
    assert!(note.contains("passages still wait for their vectors from mini@"), "{first:#}");
    let status = mcp.tool("status", json!({}));
    let chunks = status["chunks"].as_u64().unwrap();
    assert!(status["pending"]["vectors"].as_u64().unwrap() > 0, "{status:#}");

    // No further call is needed: the background fill gets through them all.
    let mut last = status;
    for _ in 0..600 {
        if last["pending"]["vectors"] == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        last = mcp.tool("status", json!({}));
    }
    assert_eq!(last["pending"]["vectors"], 0, "{last:#}");
    assert!(server.embedding_batches().iter().map(Vec::len).sum::<usize>() as u64 >= chunks);
    let done = mcp.tool("search", json!({"query": "how long are backups kept?", "k": 3}));
    assert!(!done["note"].as_str().unwrap_or_default().contains("still wait"), "{done:#}");
}
