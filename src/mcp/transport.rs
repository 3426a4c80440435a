//! The stdio transport around the MCP SDK: messages are lines of JSON, and this layer checks
//! each before the SDK sees it, answering a malformed one with a JSON-RPC error (the SDK
//! drops a line that is not JSON without a word, and answers a request of the wrong shape
//! without its id). Well-formed lines pass through unchanged, in order; the SDK's output is
//! copied out line by line, with those error answers slotted in between.

use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, InitializeRequest, JsonRpcMessage,
    ListToolsRequest, PingRequest,
};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::mpsc;

use crate::wire::jsonrpc::{self, error, text_of, truncate};

/// Lines longer than this are refused (and skipped) rather than buffered: the SDK's own limit.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What reading one line gave.
#[derive(Debug, PartialEq)]
enum Line {
    /// A line, its newline included (absent at the end of the stream).
    Text(Vec<u8>),
    /// A line over [`MAX_LINE_BYTES`], skipped up to its newline.
    TooLong,
    End,
}

async fn read_line(input: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let n = (&mut *input).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line).await?;
    if n == 0 {
        return Ok(Line::End);
    }
    if line.len() > MAX_LINE_BYTES && line.last() != Some(&b'\n') {
        loop {
            let mut rest = Vec::new();
            let n = (&mut *input).take(64 * 1024).read_until(b'\n', &mut rest).await?;
            if n == 0 || rest.last() == Some(&b'\n') {
                return Ok(Line::TooLong);
            }
        }
    }
    Ok(Line::Text(line))
}

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// A message for the SDK.
    Pass,
    /// Nothing to do: a blank line, or a malformed notification (which gets no answer).
    Drop,
    /// The error to answer with.
    Answer(Value),
}

/// Checks one line (without its newline) against JSON-RPC 2.0 and the messages the SDK reads.
pub fn check(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Drop;
    }
    let text = match text_of(line) {
        Ok(text) => text,
        Err(answer) => return Verdict::Answer(answer),
    };
    // The common case costs one parse.
    if let Ok(message) = serde_json::from_str::<ClientJsonRpcMessage>(text) {
        // A request for a method the server serves whose params are of the wrong shape is
        // read by the SDK as a request of a method it does not know, and answered so.
        if let JsonRpcMessage::Request(request) = &message
            && let ClientRequest::CustomRequest(custom) = &request.request
            && let Some(why) = served_params_error(text, &custom.method)
        {
            return Verdict::Answer(error(json!(request.id), -32602, format!("Invalid params: {why}")));
        }
        return Verdict::Pass;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Verdict::Answer(error(Value::Null, -32700, format!("Parse error: {e}"))),
    };
    let Value::Object(message) = &value else {
        return Verdict::Answer(error(
            Value::Null,
            -32600,
            "Invalid request: a message is one JSON object (batches are not supported)".into(),
        ));
    };
    let id = match message.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => Some(id.clone()),
        _ => None,
    };
    let is_request = message.contains_key("method") && message.contains_key("id");
    let is_notification = message.contains_key("method") && !message.contains_key("id");
    let shaped = message.get("jsonrpc") == Some(&json!("2.0"))
        && message.get("method").is_none_or(Value::is_string)
        && message.get("params").is_none_or(|p| p.is_object() || p.is_array());
    match (is_request, is_notification, id) {
        // A notification the SDK does not know is skipped, as notifications get no answer.
        (_, true, _) => {
            tracing::debug!("skipped a notification the server cannot read: {}", truncate(text, 200));
            Verdict::Drop
        }
        (true, _, Some(id)) if shaped => Verdict::Answer(error(
            id,
            -32602,
            format!("Invalid params: {}", params_error(text).unwrap_or_else(|| "not a known request".into())),
        )),
        (_, _, id) => Verdict::Answer(error(
            id.unwrap_or(Value::Null),
            -32600,
            "Invalid request: not a JSON-RPC 2.0 request, notification or response \
             (`jsonrpc` must be \"2.0\", `method` a string, `params` an object or an array)"
                .into(),
        )),
    }
}

/// Why the params of a request for one of the methods this server serves cannot be read,
/// in serde's words; `None` for another method.
fn served_params_error(text: &str, method: &str) -> Option<String> {
    fn why<T: serde::de::DeserializeOwned>(body: Value) -> Option<String> {
        serde_json::from_value::<T>(body).err().map(|e| format!("{e}"))
    }
    let mut body: Value = serde_json::from_str(text).ok()?;
    let params = body.get_mut("params").map(Value::take);
    if params.is_none() && matches!(method, "initialize" | "tools/call") {
        return Some(format!("`{method}` needs params"));
    }
    let body = json!({ "method": method, "params": params });
    match method {
        "initialize" => why::<InitializeRequest>(body),
        "ping" => why::<PingRequest>(body),
        "tools/list" => why::<ListToolsRequest>(body),
        "tools/call" => why::<CallToolRequest>(body),
        _ => None,
    }
    .map(|e| format!("`{method}`: {e}"))
}

/// Why the SDK cannot read a request, in serde's words.
fn params_error(text: &str) -> Option<String> {
    serde_json::from_str::<ClientJsonRpcMessage>(text).err().map(|e| e.to_string())
}

/// Copies well-formed lines from `input` to `to_server`, and sends an error answer for each
/// malformed request to `answers`. Ends (closing `to_server`) at the end of `input`.
async fn pump_input(
    input: impl AsyncRead + Unpin,
    mut to_server: impl AsyncWrite + Unpin,
    answers: mpsc::UnboundedSender<Value>,
) {
    let mut input = BufReader::new(input);
    loop {
        let line = match read_line(&mut input).await {
            Ok(Line::Text(line)) => line,
            Ok(Line::TooLong) => {
                tracing::warn!("a message over {MAX_LINE_BYTES} bytes was skipped");
                let message = format!("Parse error: a message over the {MAX_LINE_BYTES}-byte limit");
                let _ = answers.send(error(Value::Null, -32700, message));
                continue;
            }
            Ok(Line::End) => break,
            Err(e) => {
                tracing::debug!("reading the client's messages ended: {e}");
                break;
            }
        };
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        match check(body) {
            Verdict::Pass => {
                let written = async {
                    to_server.write_all(body).await?;
                    to_server.write_all(b"\n").await?;
                    to_server.flush().await
                };
                if written.await.is_err() {
                    break;
                }
            }
            Verdict::Drop => {}
            Verdict::Answer(answer) => {
                tracing::warn!("malformed message: {}", answer["error"]["message"]);
                let _ = answers.send(answer);
            }
        }
    }
    let _ = to_server.shutdown().await;
}

/// Sends each line the SDK writes, whole and without its newline, to `lines`.
async fn read_output(from_server: impl AsyncRead + Unpin, lines: mpsc::UnboundedSender<Vec<u8>>) {
    let mut from_server = BufReader::new(from_server);
    loop {
        let mut line = Vec::new();
        match from_server.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if lines.send(line).is_err() {
                    return;
                }
            }
        }
    }
}

/// A message as a line.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.push(b'\n');
    out
}

/// Wraps `input`/`output`: returns the streams the SDK reads and writes, and spawns the
/// tasks that connect them. The returned task ends once the SDK's output is closed and all
/// of it has been written.
pub fn guard(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> (tokio::io::DuplexStream, tokio::io::DuplexStream, tokio::task::JoinHandle<()>) {
    jsonrpc::guard(|to_library, answers| pump_input(input, to_library, answers), read_output, output, framed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match check(line.as_bytes()) {
            Verdict::Answer(a) => a,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn lines_are_checked_against_json_rpc() {
        let call =
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{}}}"#;
        assert_eq!(check(call.as_bytes()), Verdict::Pass);
        assert_eq!(check(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Verdict::Pass);
        assert_eq!(check(b"  \r"), Verdict::Drop);
        let e = answer("{not json");
        assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (Value::Null, json!(-32700)));
        let e = answer(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"oops"}"#);
        assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(7), json!(-32600)));
        let e = answer(r#"{"id":"a","method":"ping"}"#);
        assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!("a"), json!(-32600)));
        assert_eq!(answer("[1]")["error"]["code"], -32600);
        // Not UTF-8, and a lone surrogate escape: not JSON text.
        let e = check(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"q\":\"\xff\"}}");
        assert!(matches!(e, Verdict::Answer(a) if a["error"]["code"] == -32700));
        let e = answer(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"q":"\ud800"}}"#);
        assert_eq!(e["error"]["code"], -32700, "{e}");
        let e = answer(r#"{"jsonrpc":"2.0","id":1,"method":"ping","extra":"\uDC00"}"#);
        assert_eq!(e["error"]["code"], -32700, "{e}");
        // A pair is a character.
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","id":1,"method":"ping","extra":"\ud83d\ude80"}"#),
            Verdict::Pass
        );
        // Params of the wrong shape for a method the server serves, and for one it does not.
        let e = answer(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":5}}"#);
        assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(9), json!(-32602)));
        let message = e["error"]["message"].as_str().unwrap();
        assert!(message.contains("`tools/call`") && message.contains("integer"), "{message}");
        assert_eq!(
            answer(r#"{"jsonrpc":"2.0","id":"p","method":"initialize","params":{}}"#)["error"]["code"],
            -32602
        );
        let e = answer(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#);
        assert_eq!(e["error"]["message"], "Invalid params: `tools/call` needs params");
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","id":3,"method":"resources/list","params":{"x":5}}"#.as_slice()),
            Verdict::Pass
        );
        // A malformed notification gets no answer.
        assert_eq!(
            check(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#),
            Verdict::Drop
        );
    }

    #[tokio::test]
    async fn long_lines_are_skipped_to_their_end() {
        let mut bytes = vec![b'x'; MAX_LINE_BYTES + 10];
        bytes.extend_from_slice(b"\n{}\n");
        let mut input = BufReader::new(&bytes[..]);
        assert_eq!(read_line(&mut input).await.unwrap(), Line::TooLong);
        assert_eq!(read_line(&mut input).await.unwrap(), Line::Text(b"{}\n".to_vec()));
        assert_eq!(read_line(&mut input).await.unwrap(), Line::End);
    }
}
