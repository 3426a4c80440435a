//! A small HTTP/1.1 server on 127.0.0.1 for provider tests. It speaks OpenAI's embeddings
//! and chat completions and Anthropic's messages, records every request, and plays faults
//! on demand: 429 with Retry-After, 5xx, a stalled answer, malformed JSON, an answer cut
//! short, vectors of the wrong length, a 401 that quotes the key it was sent.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use situate::providers::Embedder;
use situate::providers::static_model::StaticEmbedder;

/// Something the server does instead of answering well.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with this `Retry-After` value.
    RateLimited(&'static str),
    /// This status, with an error message that quotes the key the request carried.
    Status(u16),
    /// Reads the request, then says nothing for this long and hangs up.
    Stall(Duration),
    /// 200 with a body that is not JSON.
    Malformed,
    /// Embeddings one element short.
    WrongDimensions,
    /// 200 whose body stops halfway through its `Content-Length`, the connection closed.
    CutShort,
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Header names lowercased.
    pub headers: HashMap<String, String>,
    pub body: Value,
    pub at: Instant,
}

#[derive(Default)]
struct State {
    /// Faults played one per request, in order, before normal answers resume.
    queued: VecDeque<Fault>,
    /// A fault played on every request once the queue is empty.
    always: Option<Fault>,
    requests: Vec<Recorded>,
    /// Added before every answer, as a remote server would.
    latency: Duration,
    /// When set, requests without this key get a 401.
    key: Option<String>,
    /// Documents already sent to the chat endpoints: their tokens now come from the cache.
    cached_documents: HashSet<String>,
    /// Writes the chat answer from the request's text (system, document and prompt).
    reply: Option<Reply>,
}

/// A rule that writes the chat answer from the request's text.
pub type Reply = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A running server; it stops when dropped.
pub struct TestServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    pub fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let embedder = Arc::new(StaticEmbedder::builtin().unwrap());
        let (s, st) = (Arc::clone(&state), Arc::clone(&stop));
        thread::spawn(move || {
            for stream in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (s, embedder) = (Arc::clone(&s), Arc::clone(&embedder));
                thread::spawn(move || serve(stream, &s, &embedder));
            }
        });
        TestServer { addr, state, stop }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL of the OpenAI-style endpoints.
    pub fn openai_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    pub fn queue(&self, faults: impl IntoIterator<Item = Fault>) {
        self.state.lock().unwrap().queued.extend(faults);
    }

    pub fn always(&self, fault: Option<Fault>) {
        self.state.lock().unwrap().always = fault;
    }

    pub fn set_latency(&self, latency: Duration) {
        self.state.lock().unwrap().latency = latency;
    }

    /// Answers chat requests with `reply(request text)` instead of the fixed answers.
    pub fn set_reply(&self, reply: impl Fn(&str) -> String + Send + Sync + 'static) {
        self.state.lock().unwrap().reply = Some(Arc::new(reply));
    }

    /// Requests made to the chat endpoints.
    pub fn chat_requests(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| !r.path.ends_with("/embeddings")).collect()
    }

    pub fn require_key(&self, key: &str) {
        self.state.lock().unwrap().key = Some(key.to_string());
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn clear_requests(&self) {
        self.state.lock().unwrap().requests.clear();
    }

    /// Texts sent to the embeddings endpoint, request by request.
    pub fn embedding_batches(&self) -> Vec<Vec<String>> {
        self.requests()
            .iter()
            .filter(|r| r.path.ends_with("/embeddings"))
            .map(|r| {
                r.body["input"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect()
            })
            .collect()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// A port on 127.0.0.1 that nobody listens on.
pub fn dead_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/v1")
}

fn serve(stream: TcpStream, state: &Mutex<State>, embedder: &StaticEmbedder) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let Some((path, headers, body)) = read_request(&mut reader) else { return };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (fault, latency, key) = {
        let mut s = state.lock().unwrap();
        s.requests.push(Recorded {
            path: path.clone(),
            headers: headers.clone(),
            body: body.clone(),
            at: Instant::now(),
        });
        let fault = s.queued.pop_front().or_else(|| s.always.clone());
        (fault, s.latency, s.key.clone())
    };
    thread::sleep(latency);
    let sent_key = headers
        .get("authorization")
        .map(|v| v.trim_start_matches("Bearer ").to_string())
        .or_else(|| headers.get("x-api-key").cloned())
        .unwrap_or_default();
    let mut stream = stream;
    if let Some(expected) = key
        && sent_key != expected
    {
        // As OpenAI does, the refusal quotes the key it got.
        let message = format!("Incorrect API key provided: {sent_key}");
        return respond(&mut stream, 401, &[], &json!({ "error": { "message": message } }).to_string());
    }
    match fault {
        Some(Fault::RateLimited(after)) => {
            respond(&mut stream, 429, &[("Retry-After", after)], r#"{"error":{"message":"slow down"}}"#)
        }
        Some(Fault::Status(status)) => {
            let message = format!("upstream failure for key {sent_key}");
            respond(&mut stream, status, &[], &json!({ "error": { "message": message } }).to_string())
        }
        Some(Fault::Stall(how_long)) => thread::sleep(how_long),
        Some(Fault::Malformed) => respond(&mut stream, 200, &[], r#"{"data": [{"index": 0, "embedd"#),
        Some(Fault::CutShort) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\nConnection: close\r\n\r\n";
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(br#"{"data": [{"index": 0, "embedding": [0.1, "#);
            let _ = stream.flush();
        }
        Some(Fault::WrongDimensions) => {
            let answer = embeddings(&body, embedder, 1);
            respond(&mut stream, 200, &[], &answer.to_string())
        }
        None => {
            let answer = if path.ends_with("/embeddings") {
                embeddings(&body, embedder, 0)
            } else if path.ends_with("/chat/completions") {
                let mut s = state.lock().unwrap();
                let reply = s.reply.clone();
                let mut answer = openai_chat(&body, &mut s.cached_documents);
                if let Some(reply) = reply {
                    answer["choices"][0]["message"]["content"] = reply(&body.to_string()).into();
                }
                answer
            } else if path.ends_with("/messages") {
                let mut s = state.lock().unwrap();
                let reply = s.reply.clone();
                let mut answer = anthropic_messages(&body, &mut s.cached_documents);
                if let Some(reply) = reply {
                    answer["content"] = json!([{ "type": "text", "text": reply(&body.to_string()) }]);
                }
                answer
            } else {
                return respond(&mut stream, 404, &[], r#"{"error":{"message":"no such endpoint"}}"#);
            };
            respond(&mut stream, 200, &[], &answer.to_string())
        }
    }
}

/// Reads one request: path, headers and body.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, HashMap<String, String>, Vec<u8>)> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((path, headers, body))
}

fn respond(stream: &mut TcpStream, status: u16, headers: &[(&str, &str)], body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status} Status\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    let _ = stream.flush();
}

/// OpenAI's embeddings answer, with the static model's vectors scaled by 3 (so that the
/// client has to normalise them), listed in reverse order (so that it has to sort them),
/// and `short_by` elements cut off each.
fn embeddings(body: &Value, embedder: &StaticEmbedder, short_by: usize) -> Value {
    let texts: Vec<&str> = body["input"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let vectors = embedder.embed(&texts).unwrap();
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .rev()
        .map(|(index, v)| {
            let scaled: Vec<f32> = v.iter().take(v.len() - short_by).map(|x| x * 3.0).collect();
            json!({ "object": "embedding", "index": index, "embedding": scaled })
        })
        .collect();
    json!({ "object": "list", "data": data, "model": body["model"], "usage": { "prompt_tokens": texts.len(), "total_tokens": texts.len() } })
}

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// OpenAI's chat answer. The user message starts with the document; when that document was
/// seen before, its words count as cached prompt tokens.
fn openai_chat(body: &Value, cache: &mut HashSet<String>) -> Value {
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap();
    let document = user.split("\n\n").next().unwrap().to_string();
    let prompt_tokens: u64 = messages.iter().map(|m| words(m["content"].as_str().unwrap())).sum();
    let cached = if cache.insert(document.clone()) { 0 } else { words(&document) };
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": format!("About: {}", words(&document)) }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": prompt_tokens, "completion_tokens": 2, "prompt_tokens_details": { "cached_tokens": cached } }
    })
}

/// Anthropic's messages answer: the block marked `cache_control` is written to the cache on
/// first sight and read from it afterwards.
fn anthropic_messages(body: &Value, cache: &mut HashSet<String>) -> Value {
    let content = body["messages"][0]["content"].as_array().unwrap();
    let (mut fresh, mut read, mut written) = (words(body["system"].as_str().unwrap_or("")), 0, 0);
    for block in content {
        let text = block["text"].as_str().unwrap();
        if block.get("cache_control").is_some() {
            if cache.insert(text.to_string()) {
                written += words(text);
            } else {
                read += words(text);
            }
        } else {
            fresh += words(text);
        }
    }
    json!({
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{ "type": "text", "text": "A short " }, { "type": "text", "text": "snippet." }],
        "usage": { "input_tokens": fresh, "output_tokens": 3, "cache_read_input_tokens": read, "cache_creation_input_tokens": written }
    })
}
