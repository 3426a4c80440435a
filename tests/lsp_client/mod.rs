//! A small LSP client for end-to-end tests: it spawns the real `situate lsp` binary and
//! speaks JSON-RPC with it over stdio, answering the server's own requests (progress
//! tokens, capability registration) the way an editor would.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a test waits for any one answer before it fails (a hang guard, not a timing
/// assertion).
pub const PATIENCE: Duration = Duration::from_secs(120);

pub struct LspClient {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Value>,
    next_id: i64,
    /// Every notification and server request received so far, in order.
    pub received: Vec<Value>,
    /// Responses read while waiting for another one (requests in flight together may be
    /// answered in any order).
    early: Vec<Value>,
    /// Server requests of these methods are left unanswered until [`LspClient::accept`]
    /// (an editor busy elsewhere).
    held: Vec<&'static str>,
}

impl LspClient {
    /// Starts `situate lsp` with its cache (the default index location) in `cache_dir`.
    pub fn start(cache_dir: &Path) -> LspClient {
        LspClient::start_with_env(cache_dir, &[])
    }

    /// Starts the server with extra environment variables.
    pub fn start_with_env(cache_dir: &Path, env: &[(&str, &str)]) -> LspClient {
        LspClient::start_with(cache_dir, &[], env)
    }

    /// Starts `situate lsp` with extra arguments and environment variables.
    pub fn start_with(cache_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> LspClient {
        let mut child = Command::new(env!("CARGO_BIN_EXE_situate"))
            .arg("lsp")
            .args(args)
            .env("XDG_CACHE_HOME", cache_dir)
            .env("SITUATE_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(cache_dir.join("situate-lsp.log")).expect("log file"))
            .spawn()
            .expect("spawn situate lsp");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        LspClient {
            stdin: child.stdin.take(),
            child,
            incoming: rx,
            next_id: 1,
            received: Vec::new(),
            early: Vec::new(),
            held: Vec::new(),
        }
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// Sends a framed body as it is (for malformed messages).
    pub fn send_raw(&mut self, body: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        write!(stdin, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
        stdin.write_all(body).unwrap();
        stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Tells the server that the file at `path` was saved.
    pub fn saved(&mut self, path: &Path) {
        self.notify("textDocument/didSave", json!({ "textDocument": { "uri": file_uri(path) } }));
    }

    /// Leaves the server's requests of `method` unanswered from now on, until [`LspClient::accept`].
    pub fn hold(&mut self, method: &'static str) {
        self.held.push(method);
    }

    /// Accepts a server request that was held (answers it with a null result).
    pub fn accept(&mut self, request: &Value) {
        self.send(&json!({ "jsonrpc": "2.0", "id": request["id"], "result": null }));
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// Sends a request and waits for its response: `Ok(result)` or `Err(error)`.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// Waits for the response to request `id`.
    pub fn response(&mut self, id: i64) -> Result<Value, Value> {
        let is_it = |m: &Value| m.get("id") == Some(&json!(id)) && m.get("method").is_none();
        let message = match self.early.iter().position(is_it) {
            Some(at) => self.early.remove(at),
            None => self.next_matching(is_it),
        };
        match message.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// Waits for an error response that has no id (the answer to an unparsable message).
    pub fn response_to_null(&mut self) -> Value {
        let m = self.next_matching(|m| m.get("id") == Some(&Value::Null) && m.get("error").is_some());
        m["error"].clone()
    }

    pub fn command(&mut self, command: &str, argument: Value) -> Result<Value, Value> {
        let arguments = if argument.is_null() { json!([]) } else { json!([argument]) };
        self.request("workspace/executeCommand", json!({ "command": command, "arguments": arguments }))
    }

    /// Waits for a notification (or server request) that `matches`, looking first at those
    /// already received.
    pub fn wait_for(&mut self, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(m) = self.received.iter().find(|m| matches(m)) {
            return m.clone();
        }
        self.next_matching(|m| m.get("method").is_some() && matches(m))
    }

    /// Reads messages until one matches; notifications are kept in `received`, and
    /// server requests are answered.
    fn next_matching(&mut self, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.incoming.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => panic!("no matching message within {PATIENCE:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
            };
            if message.get("method").is_some() {
                let held = self.held.iter().any(|h| message["method"] == *h);
                if let Some(id) = message.get("id").filter(|_| !held) {
                    // A server request: accept it, as an editor would.
                    let reply = json!({ "jsonrpc": "2.0", "id": id, "result": null });
                    self.send(&reply);
                }
                self.received.push(message.clone());
            }
            if matches(&message) {
                return message;
            }
            if message.get("method").is_none() && message.get("id").is_some_and(|id| !id.is_null()) {
                self.early.push(message);
            }
        }
    }

    /// `initialize` for one folder with typical editor capabilities, then `initialized`.
    pub fn initialize(&mut self, root: &Path, options: Value, extra_capabilities: Value) -> Value {
        let uri = file_uri(root);
        let mut capabilities = json!({
            "window": { "workDoneProgress": true },
            "workspace": { "didChangeWatchedFiles": { "dynamicRegistration": true }, "workspaceFolders": true },
            "textDocument": { "hover": { "contentFormat": ["markdown", "plaintext"] } },
        });
        merge(&mut capabilities, extra_capabilities);
        let result = self
            .request(
                "initialize",
                json!({
                    "processId": null,
                    "rootUri": uri,
                    "capabilities": capabilities,
                    "initializationOptions": options,
                    "workspaceFolders": [{ "uri": uri, "name": "ws" }],
                }),
            )
            .expect("initialize");
        self.notify("initialized", json!({}));
        result
    }

    /// `initialize` with these workspace folders (uri, name) and no capabilities, then
    /// `initialized`.
    pub fn initialize_folders(&mut self, folders: &[(&str, &str)]) {
        let folders: Vec<Value> =
            folders.iter().map(|(uri, name)| json!({ "uri": uri, "name": name })).collect();
        self.request(
            "initialize",
            json!({ "processId": null, "capabilities": {}, "workspaceFolders": folders }),
        )
        .expect("initialize");
        self.notify("initialized", json!({}));
    }

    /// The folders of `situate.status` once `ready` says they are.
    pub fn folders_when(&mut self, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        self.eventually(|c| {
            let s = c.command("situate.status", Value::Null).unwrap();
            let folders = s["folders"].as_array().cloned().unwrap_or_default();
            ready(&folders).then_some(folders)
        })
    }

    /// Waits until the first indexing run has ended (its `$/progress` end report).
    pub fn wait_indexed(&mut self) -> Value {
        self.wait_for(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end")
    }

    /// Repeats `probe` until it returns `Some` (the index catches up in the background).
    pub fn eventually<T>(&mut self, mut probe: impl FnMut(&mut LspClient) -> Option<T>) -> T {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(v) = probe(self) {
                return v;
            }
            assert!(Instant::now() < deadline, "condition not met within {PATIENCE:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `shutdown` then `exit`; returns how the process ended.
    pub fn shutdown(mut self) -> ExitStatus {
        self.request("shutdown", Value::Null).expect("shutdown");
        self.notify("exit", Value::Null);
        self.stdin.take();
        self.wait()
    }

    pub fn wait(mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn file_uri(path: &Path) -> String {
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    format!("file://{}", canonical.display()).replace(' ', "%20")
}

fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) if !e.is_null() => *b = e,
        _ => {}
    }
}

fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}
