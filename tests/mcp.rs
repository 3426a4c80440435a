//! `situate mcp` end to end: the official MCP Python SDK (PyPI `mcp`) drives the real binary
//! over stdio on a copy of the fixture workspace (`tests/mcp_client.py`), and this test checks
//! what each step answered. Without Python or the SDK it says it skipped and passes; CI
//! installs the SDK (`.ci/run`), so there it always runs.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Fixture;
use serde_json::Value;

/// The scenario starts two servers and indexes the fixture a few times; a hang is a failure.
const DEADLINE: Duration = Duration::from_secs(240);

fn sdk_missing() -> Option<String> {
    match Command::new("python3").args(["-c", "import mcp"]).output() {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("").to_string()),
        Err(e) => Some(format!("python3: {e}")),
    }
}

/// Runs the client script and returns what it recorded, step by step.
fn transcript(fixture: &Fixture) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_situate"))
        .arg(fixture.root())
        .env("XDG_CACHE_HOME", fixture.index.path())
        .env("SITUATE_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    // The pipes are read while the client runs: its transcript is larger than a pipe holds,
    // and a client blocked on a full pipe would never exit.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the client") {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            break child.wait().expect("wait for the killed client");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = stdout.join().expect("stdout reader");
    let stderr = stderr.join().expect("stderr reader");
    assert!(status.success(), "the client failed ({status})\nstdout:\n{stdout}\nstderr:\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\nstderr:\n{stderr}"))
}

/// A step's structured answer, checked to be a success.
fn ok<'a>(t: &'a Value, step: &str) -> &'a Value {
    let a = &t[step];
    assert_eq!(a["is_error"], false, "{step}: {a:#}");
    // The text content is the same JSON, for clients that read only text.
    let text: Value = serde_json::from_str(a["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, a["structured"], "{step}");
    &a["structured"]
}

/// A step's error message, checked to be a tool error (not a protocol error).
fn tool_error<'a>(t: &'a Value, step: &str) -> &'a str {
    let a = &t[step];
    assert_eq!(a["is_error"], true, "{step} should be a tool error: {a:#}");
    a["text"].as_str().unwrap()
}

fn located(results: &Value) -> Vec<String> {
    results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{}:{}-{}", r["path"].as_str().unwrap(), r["start_line"], r["end_line"]))
        .collect()
}

#[test]
fn an_mcp_client_lists_and_calls_every_tool_and_a_second_server_reads_then_takes_over() {
    if let Some(why) = sdk_missing() {
        println!("skipped: the MCP Python SDK is not installed (pip install mcp): {why}");
        return;
    }
    let fixture = Fixture::standard();
    let t = transcript(&fixture);

    // The handshake and the tool list, each tool with a description and both schemas.
    assert_eq!(t["initialize"]["server"], "situate");
    assert_eq!(t["initialize"]["tools_capability"], true);
    assert!(t["initialize"]["instructions"].as_str().unwrap().contains("search"));
    let tools = t["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search", "show", "similar", "status"]);
    for tool in tools {
        assert!(tool["description"].as_str().unwrap().len() > 100, "{tool:#}");
        assert_eq!(tool["input_schema"]["type"], "object", "{tool:#}");
        assert_eq!(tool["output_schema"]["type"], "object", "{tool:#}");
        assert_eq!(tool["read_only"], true);
    }
    let search_args = &tools[0]["input_schema"];
    assert_eq!(search_args["required"], serde_json::json!(["query"]));
    for arg in ["query", "k", "mode", "paths", "expand", "max_tokens"] {
        let description = search_args["properties"][arg]["description"].as_str().unwrap_or("");
        assert!(!description.is_empty(), "`{arg}` has no description: {search_args:#}");
    }

    // search: the answer never says "backup"; its title and headings do.
    let search = ok(&t, "search");
    let hits = located(&search["results"]);
    assert!(hits[..2].contains(&"ops/backup.md:10-13".to_string()), "{search:#}");
    let retention = &search["results"].as_array().unwrap().iter().find(|r| r["start_line"] == 10).unwrap();
    assert_eq!(retention["heading_path"], serde_json::json!(["Backups", "Retention"]));
    assert_eq!(retention["title"], "Backup policy");
    assert!(retention["text"].as_str().unwrap().starts_with("## Retention"), "{retention:#}");
    assert_eq!(search["omitted"], 0);

    // A path filter keeps hits in its folder.
    let in_kitchen = located(&ok(&t, "search_paths")["results"]);
    assert!(!in_kitchen.is_empty() && in_kitchen.iter().all(|h| h.starts_with("kitchen/")), "{in_kitchen:?}");

    // Words only, widened to the neighbouring chunks: the whole deploy page.
    let window = ok(&t, "search_bm25_window");
    let r = &window["results"][0];
    assert_eq!(
        (r["path"].as_str(), r["start_line"].as_u64(), r["end_line"].as_u64()),
        (Some("ops/deploy.md"), Some(1), Some(9))
    );
    assert_eq!(r["best_match"], serde_json::json!({"start_line": 6, "end_line": 9}));

    // Each passage names the lines that matched, the query's words in bold.
    let marked = &ok(&t, "search_marked")["results"][0];
    assert_eq!(
        marked["matched_lines"],
        serde_json::json!([{
            "line": 8,
            "text": "If the **error** **rate** **doubles** during the shift, the pipeline sends all traffic back to the"
        }]),
        "{marked:#}"
    );

    // Front matter filters. The document's only field is its title, which each passage
    // gives already.
    let within = ok(&t, "search_where")["results"].as_array().unwrap().clone();
    assert!(!within.is_empty(), "{within:?}");
    for r in &within {
        assert_eq!(r["path"], "ops/backup.md", "{r:#}");
        assert_eq!((&r["title"], &r["metadata"]), (&"Backup policy".into(), &Value::Null), "{r:#}");
    }
    assert!(tool_error(&t, "error_where").contains("write FIELD=VALUE"), "{}", t["error_where"]);
    let nothing = ok(&t, "search_where_nothing");
    assert!(
        nothing["note"].as_str().unwrap().contains("nothing matched within `paths` and `where`"),
        "{nothing:#}"
    );

    // A budget too small for the hits: fewer hits, and a note that says why.
    let small = ok(&t, "search_small_budget");
    assert!(small["omitted"].as_u64().unwrap() > 0, "{small:#}");
    assert!(small["note"].as_str().unwrap().contains("max_tokens"), "{small:#}");
    assert!(t["search_small_budget"]["text"].as_str().unwrap().len() <= 300 * 4, "{small:#}");

    // show: the chunk at a line, and a whole file.
    let shown = ok(&t, "show_line");
    assert_eq!(shown["path"], "ops/backup.md");
    assert_eq!(shown["title"], "Backup policy");
    assert_eq!(shown["passages_in_file"], 3);
    let chunk = &shown["chunks"][0];
    assert_eq!((chunk["start_line"].as_u64(), chunk["end_line"].as_u64()), (Some(10), Some(13)));
    assert_eq!(chunk["context"], "Document: Backup policy > Backups > Retention");
    assert!(chunk["token_count"].as_u64().unwrap() > 10);
    assert_eq!(shown["chunks"].as_array().unwrap().len(), 1);
    let file = ok(&t, "show_file");
    let lines: Vec<(u64, u64)> = file["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["start_line"].as_u64().unwrap(), c["end_line"].as_u64().unwrap()))
        .collect();
    assert_eq!(lines, [(5, 8), (10, 13), (15, 18)]);

    // similar: related passages elsewhere, not the passage itself or its neighbours.
    let similar = ok(&t, "similar");
    assert_eq!(similar["of"]["path"], "ops/deploy.md");
    assert_eq!(similar["of"]["heading_path"], serde_json::json!(["Deployment", "Rollback"]));
    let related = located(&similar["results"]);
    assert!(!related.is_empty() && related.len() <= 3, "{similar:#}");
    assert!(related.iter().all(|h| !h.starts_with("ops/deploy.md")), "{related:?}");

    // status: what is indexed, and nothing stale once the call brought it up to date.
    let status = ok(&t, "status");
    assert_eq!(status["writer"], true);
    assert_eq!(status["fresh"], true, "{status:#}");
    assert_eq!((status["files"].as_u64(), status["stale"]["count"].as_u64()), (Some(4), Some(0)));
    assert_eq!(status["pending"]["vectors"], 0);
    assert_eq!(
        status["folders"],
        serde_json::json!([{"path": "journal", "files": 1}, {"path": "kitchen", "files": 1}, {"path": "ops", "files": 2}])
    );

    // Mistakes come back as tool errors that say what to do, and the server goes on.
    assert!(tool_error(&t, "error_empty_query").contains("`query` is empty"));
    assert_eq!(tool_error(&t, "error_k"), "`k` must be between 1 and 100 (got 500)");
    assert_eq!(tool_error(&t, "error_budget"), "`max_tokens` must be between 100 and 50000 (got 1000000)");
    assert!(tool_error(&t, "error_unknown_argument").contains("unknown field `limit`"));
    assert!(tool_error(&t, "error_wrong_type").contains("invalid type"));
    let e = tool_error(&t, "error_path_filter");
    assert!(e.contains("no indexed file lies under `opz`") && e.contains("`ops`"), "{e}");
    let e = tool_error(&t, "error_missing_file");
    assert!(e.contains("no file `backup.md`") && e.contains("did you mean `ops/backup.md`?"), "{e}");
    assert!(tool_error(&t, "error_outside").contains("outside the workspace"));
    assert!(tool_error(&t, "error_folder").contains("`ops` is a folder"));
    assert!(tool_error(&t, "error_line").contains("line 400 is past the last passage"));
    let unknown = t["error_unknown_tool"]["protocol_error"].as_str().unwrap_or("");
    assert!(unknown.contains("no tool named `reindex`"), "{:#}", t["error_unknown_tool"]);
    assert_eq!(located(&ok(&t, "after_errors")["results"]), ["kitchen/bread.md:1-5"]);

    // The SDK's default client speaks the newest revision, and gets the same answers.
    let sdk = &t["sdk_client"];
    assert_eq!(sdk["protocol_version"], "2026-07-28", "{sdk:#}");
    assert_eq!(ok(&t, "sdk_client")["results"][0]["path"], "ops/backup.md", "{sdk:#}");

    // Each call brings the index up to date first.
    assert_eq!(ok(&t, "search_new_file")["results"][0]["path"], "ops/oncall.md");

    // A second server on the same folder reads the first one's index, and says so.
    let second = ok(&t, "second_status");
    assert_eq!(second["writer"], false, "{second:#}");
    // It names the writer: the first server.
    let note = second["note"].as_str().unwrap();
    assert!(note.contains("(`situate mcp`, process") && note.contains("is writing this index"), "{second:#}");
    let second_search = ok(&t, "second_search");
    assert!(located(&second_search["results"]).contains(&"ops/backup.md:10-13".to_string()));
    assert_eq!(ok(&t, "first_sees_tea")["results"][0]["path"], "kitchen/tea.md");
    assert_eq!(ok(&t, "second_sees_tea")["results"][0]["path"], "kitchen/tea.md");
    // When the first exits, the second takes over the writing.
    let took_over = ok(&t, "second_status_after_first_exits");
    assert_eq!(took_over["writer"], true, "{took_over:#}");
    assert_eq!(ok(&t, "second_sees_coffee")["results"][0]["path"], "kitchen/coffee.md");

    // Damage under the server: the call that meets it says what happened and what comes
    // next (or answers from what it could read), and the next call answers from the
    // rebuilt index.
    assert!(t["damaged_segments"].as_u64().unwrap() > 0);
    if t["search_damaged"]["is_error"] == true {
        let message = tool_error(&t, "search_damaged");
        assert!(message.contains("damaged") && message.contains("rebuilds"), "{message}");
    }
    assert_eq!(ok(&t, "search_rebuilt")["results"][0]["path"], "kitchen/coffee.md");
}

/// A line-delimited JSON-RPC session with `situate mcp`, without the SDK.
struct RawSession {
    child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    next_id: u64,
}

impl RawSession {
    fn start(fixture: &Fixture, args: &[&str]) -> RawSession {
        let mut child = Command::new(env!("CARGO_BIN_EXE_situate"))
            .args(["mcp", "--dir", fixture.root().to_str().unwrap()])
            .args(args)
            .env("XDG_CACHE_HOME", fixture.index.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("situate mcp starts");
        let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        let mut session = RawSession { child, lines, next_id: 1 };
        session.request(
            "initialize",
            serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        session.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Value) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self.lines.next().expect("an answer").expect("a line");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The paths of a search's results.
    fn search(&mut self, query: &str) -> Vec<String> {
        let answer =
            self.request("tools/call", serde_json::json!({"name": "search", "arguments": {"query": query}}));
        let results =
            answer["result"]["structuredContent"]["results"].as_array().cloned().unwrap_or_default();
        results.iter().map(|r| r["path"].as_str().unwrap_or("").to_string()).collect()
    }
}

impl Drop for RawSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_idle_server_lets_go_of_the_index_so_that_others_can_write_it() {
    // An agent's session lasts hours, mostly idle: meanwhile `situate index` (or an editor)
    // must be able to write the index, and the server's next call sees what it wrote.
    let fixture = Fixture::standard();
    fixture.write("situate.toml", "[embedding]\nprovider = \"static\"\n");
    let mut server = RawSession::start(&fixture, &["--idle", "0"]);
    assert!(server.search("how long are backups kept?").contains(&"ops/backup.md".to_string()));

    fixture.write("ops/pager.md", "# Pager\n\nThe narwhal rota changes every Tuesday.\n");
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_situate"))
            .args(args)
            .args(["--dir", fixture.root().to_str().unwrap()])
            .env("XDG_CACHE_HOME", fixture.index.path())
            .output()
            .expect("situate runs")
    };
    let started = Instant::now();
    let out = loop {
        let out = cli(&["search", "narwhal rota"]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !stderr.contains("writes this index") || started.elapsed() > DEADLINE {
            break out;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !stderr.contains("writes this index"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("ops/pager.md"), "{stderr}");
    // The server, still running, takes the index again and answers from it.
    std::fs::remove_file(fixture.root().join("kitchen/bread.md")).unwrap();
    assert_eq!(server.search("narwhal rota").first().map(String::as_str), Some("ops/pager.md"));
    assert!(!server.search("sourdough starter").contains(&"kitchen/bread.md".to_string()));
}

#[test]
fn a_command_turned_away_by_a_busy_server_says_which_process_writes_the_index() {
    let fixture = Fixture::standard();
    fixture.write("situate.toml", "[embedding]\nprovider = \"static\"\n");
    let mut server = RawSession::start(&fixture, &["--idle", "3600"]);
    assert!(!server.search("backup").is_empty());
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_situate"))
            .args(args)
            .env("XDG_CACHE_HOME", fixture.index.path())
            .output()
            .expect("situate runs")
    };
    let root = fixture.root().to_str().unwrap();
    let pid = server.child.id();
    let out = cli(&["index", root]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "an AI agent's MCP server (`situate mcp`, process {pid}) is writing the index"
        )) && stderr.contains("lets go of the index a few seconds after its last call"),
        "{stderr}"
    );
    let out = cli(&["search", "backup", "--dir", root]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success());
    assert!(
        stderr.contains(&format!(
            "(`situate mcp`, process {pid}) writes this index; searching its last commit"
        )),
        "{stderr}"
    );
}

/// Malformed lines get JSON-RPC errors (with the request's id when it can be read), and the
/// server goes on serving. Spoken line by line, without the SDK, which never sends such lines.
#[test]
fn malformed_messages_are_answered_with_errors_and_the_server_keeps_serving() {
    use std::io::{BufRead, BufReader, Write};
    let f = Fixture::standard();
    let mut child = Command::new(env!("CARGO_BIN_EXE_situate"))
        .args(["mcp", "--dir"])
        .arg(f.root())
        .env("XDG_CACHE_HOME", f.index.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("situate mcp starts");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(serde_json::from_str(&line).expect("every line is JSON")).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |line: &[u8]| {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let next = || rx.recv_timeout(Duration::from_secs(60)).expect("an answer");
    send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#);
    assert_eq!(next()["id"], 1);
    send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    let cases: [(&[u8], Value, i64); 5] = [
        (b"{not json", Value::Null, -32700),
        (br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"oops"}"#, 7.into(), -32600),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":{\"q\":\"\xff\"}}",
            Value::Null,
            -32700,
        ),
        (br#"{"jsonrpc":"2.0","id":9,"method":"ping","params":{"q":"\ud800"}}"#, Value::Null, -32700),
        (br#"[{"jsonrpc":"2.0","id":10,"method":"ping"}]"#, Value::Null, -32600),
    ];
    for (line, id, code) in cases {
        send(line);
        let answer = next();
        assert_eq!((&answer["id"], &answer["error"]["code"]), (&id, &code.into()), "{answer}");
    }
    send(br#"{"jsonrpc":"2.0","id":11,"method":"ping"}"#);
    let pong = next();
    assert_eq!((&pong["id"], &pong["result"]), (&11.into(), &serde_json::json!({})), "{pong}");
    drop(stdin);
    let _ = child.wait();
}

impl RawSession {
    /// A tool call's structured answer, checked to be a success.
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", serde_json::json!({"name": tool, "arguments": arguments}));
        let result = &answer["result"];
        assert_eq!(result["isError"], false, "{tool} {arguments}: {answer:#}");
        result["structuredContent"].clone()
    }
}

/// A workspace on the static model, which answers at once.
fn quick_fixture() -> Fixture {
    let fixture = Fixture::standard();
    fixture.write("situate.toml", "[embedding]\nprovider = \"static\"\n");
    fixture
}

/// Sections of Chinese prose, each long enough to be a passage of its own.
fn chinese_sections(count: usize) -> String {
    let sentence = "所有权是这门语言最独特的功能，它让程序在没有垃圾回收器的情况下保障内存安全。";
    (1..=count).map(|n| format!("## 第{n}节\n\n{}\n\n", sentence.repeat(6))).collect()
}

#[test]
fn answers_in_chinese_stay_within_their_token_budget() {
    // A Chinese character is three bytes and about a token: counted at four bytes a token,
    // an answer of Chinese text ran a third over its budget.
    let fixture = quick_fixture();
    fixture.write("zh/ownership.md", format!("# 所有权\n\n{}", chinese_sections(30)));
    let mut server = RawSession::start(&fixture, &["--idle", "3600"]);
    for budget in [600, 1500] {
        let shown = server.call("show", serde_json::json!({"path": "zh/ownership.md", "max_tokens": budget}));
        let chunks = shown["chunks"].as_array().unwrap();
        assert!(chunks.len() > 1 && shown["omitted"].as_u64() > Some(0), "{shown:#}");
        // Each whole chunk's cl100k count, as the index measured it.
        let whole: u64 = chunks
            .iter()
            .filter(|c| c["truncated"] != true)
            .map(|c| c["token_count"].as_u64().unwrap())
            .sum();
        assert!(whole <= budget, "{whole} tokens of text in an answer of at most {budget}");
    }
}

#[test]
fn an_answer_never_comes_back_empty_for_its_size_alone_and_its_notes_count_against_the_budget() {
    let fixture = quick_fixture();
    // Deep headings: the passage's context and heading path alone take most of a small
    // budget.
    let lines: String = (1..=200).map(|n| format!("Line {n} of the long note.\n")).collect();
    fixture.write(
        "long.md",
        format!(
            "# Long notes on the many lines of a note\n\n## The first of its sections, which holds them all\n\n\
             ### A subsection that is named at some length\n\n{lines}"
        ),
    );
    let mut server = RawSession::start(&fixture, &["--idle", "3600"]);
    let answer = server.request(
        "tools/call",
        serde_json::json!({"name": "show", "arguments": {"path": "long.md", "max_tokens": 100}}),
    );
    let shown = &answer["result"]["structuredContent"];
    let chunks = shown["chunks"].as_array().unwrap();
    assert_eq!(chunks.len(), 1, "{shown:#}");
    assert_eq!(chunks[0]["truncated"], true, "{shown:#}");
    assert!(chunks[0]["text"].as_str().unwrap().starts_with("### A subsection"), "{shown:#}");
    // With a roomier budget, the whole answer (its note included) fits in it.
    for budget in [300, 1000] {
        let answer = server.request(
            "tools/call",
            serde_json::json!({"name": "show", "arguments": {"path": "long.md", "max_tokens": budget}}),
        );
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.len() <= budget * 4, "{} bytes for max_tokens = {budget}: {text}", text.len());
    }
}

/// A section too long for one chunk: the chunker cuts it into pieces that overlap by a few
/// lines.
fn long_section() -> String {
    let lines: String = (1..=150).map(|n| format!("On day {n} the narwhal count was {}.\n", n * 7)).collect();
    format!("# Narwhals\n\n## Counts\n\n{lines}")
}

#[test]
fn search_results_never_repeat_the_lines_of_a_better_one() {
    let fixture = quick_fixture();
    fixture.write("sea/narwhals.md", long_section());
    let mut server = RawSession::start(&fixture, &["--idle", "3600"]);
    let found = server.call(
        "search",
        serde_json::json!({"query": "narwhal count", "mode": "bm25", "paths": ["sea"], "max_tokens": 50000}),
    );
    let results = found["results"].as_array().unwrap();
    assert!(results.len() >= 3, "{found:#}");
    let mut seen = std::collections::BTreeSet::new();
    for r in results {
        let (start, end) = (r["start_line"].as_u64().unwrap(), r["end_line"].as_u64().unwrap());
        let text = r["text"].as_str().unwrap();
        assert_eq!(text.lines().count() as u64, end - start + 1, "{r:#}");
        for (line, n) in text.lines().zip(start..) {
            assert!(seen.insert(line.to_string()), "line {n} ({line}) is in two results: {found:#}");
        }
        for m in r["matched_lines"].as_array().into_iter().flatten() {
            assert!((start..=end).contains(&m["line"].as_u64().unwrap()), "{r:#}");
        }
    }
}

#[test]
fn show_reads_a_range_of_lines_and_says_where_to_read_on() {
    let fixture = quick_fixture();
    fixture.write("sea/narwhals.md", long_section());
    let mut server = RawSession::start(&fixture, &["--idle", "3600"]);
    let whole = server.call("show", serde_json::json!({"path": "sea/narwhals.md", "max_tokens": 50000}));
    let all = whole["chunks"].as_array().unwrap().clone();
    assert!(all.len() >= 3, "{whole:#}");
    let last_line = all.last().unwrap()["end_line"].as_u64().unwrap();

    // A small budget: the note says where the answer stopped and how to read on.
    let first = server.call("show", serde_json::json!({"path": "sea/narwhals.md", "max_tokens": 500}));
    let kept = first["chunks"].as_array().unwrap();
    let stop = kept.last().unwrap()["end_line"].as_u64().unwrap();
    let note = first["note"].as_str().unwrap();
    assert!(note.contains(&format!("`line` {} and `end_line` {last_line}", stop + 1)), "{note}");
    let rest = server.call(
        "show",
        serde_json::json!({"path": "sea/narwhals.md", "line": stop + 1, "end_line": last_line, "max_tokens": 50000}),
    );
    let rest = rest["chunks"].as_array().unwrap();
    assert!(rest[0]["start_line"].as_u64().unwrap() <= stop + 1, "{rest:?}");
    assert_eq!(rest.last().unwrap()["end_line"].as_u64(), Some(last_line));

    // A range: the passages that hold its lines.
    let (from, to) = (all[1]["start_line"].as_u64().unwrap(), all[1]["end_line"].as_u64().unwrap());
    let range =
        server.call("show", serde_json::json!({"path": "sea/narwhals.md", "line": from + 1, "end_line": to}));
    let lines: Vec<(u64, u64)> = range["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["start_line"].as_u64().unwrap(), c["end_line"].as_u64().unwrap()))
        .collect();
    assert!(lines.contains(&(from, to)) && lines.iter().all(|&(s, e)| e > from && s <= to), "{lines:?}");
    let backwards = server.request(
        "tools/call",
        serde_json::json!({"name": "show", "arguments": {"path": "sea/narwhals.md", "line": 9, "end_line": 3}}),
    );
    assert_eq!(backwards["result"]["isError"], true, "{backwards:#}");
    assert!(
        backwards["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("`end_line` 3 comes before `line` 9")
    );
}

#[test]
fn a_documents_front_matter_comes_once_per_answer_with_its_first_passage() {
    let fixture = quick_fixture();
    let front = "---\ntitle: Narwhal counts\ntags: [sea, census]\ndescription: How many narwhals were seen, day by day.\n---\n";
    fixture.write("sea/narwhals.md", format!("{front}{}", long_section()));
    let mut server = RawSession::start(&fixture, &["--idle", "3600"]);
    let found = server
        .call("search", serde_json::json!({"query": "narwhal count", "mode": "bm25", "paths": ["sea"]}));
    let results = found["results"].as_array().unwrap();
    assert!(results.len() >= 2, "{found:#}");
    assert_eq!(
        results[0]["metadata"],
        serde_json::json!({"description": ["How many narwhals were seen, day by day."], "tags": ["sea", "census"]}),
        "{found:#}"
    );
    for r in &results[1..] {
        assert_eq!((&r["title"], &r["metadata"]), (&"Narwhal counts".into(), &Value::Null), "{r:#}");
    }
}

#[test]
fn a_call_that_waits_for_indexing_tells_the_client_how_far_it_has_got() {
    let fixture = quick_fixture();
    let mut server = RawSession::start(&fixture, &["--idle", "3600"]);
    assert!(!server.search("backups").is_empty());
    for n in 0..300 {
        fixture.write(&format!("many/note-{n}.md"), format!("# Note {n}\n\nThe walrus number {n} sleeps.\n"));
    }
    server.send(&serde_json::json!({
        "jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "walrus"}, "_meta": {"progressToken": "walk"}}
    }));
    let mut steps = Vec::new();
    let answer = loop {
        let line = server.lines.next().expect("an answer").expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 99 {
            break message;
        }
        if message["method"] == "notifications/progress" {
            steps.push(message["params"].clone());
        }
    };
    assert_eq!(answer["result"]["isError"], false, "{answer:#}");
    assert!(steps.len() >= 2, "{steps:#?}");
    assert!(steps.iter().all(|s| s["progressToken"] == "walk"), "{steps:#?}");
    let progress: Vec<f64> = steps.iter().map(|s| s["progress"].as_f64().unwrap()).collect();
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    let last = steps.last().unwrap();
    assert_eq!((last["progress"].as_f64(), last["total"].as_f64()), (Some(300.0), Some(300.0)), "{steps:#?}");
    assert!(last["message"].as_str().unwrap().contains("300 of 300"), "{last}");
}
