//! The stdio transport around the protocol library: it frames messages itself and answers
//! malformed ones (bad headers, bodies that are not JSON or not JSON-RPC, requests for
//! `$/` methods, which the library would drop without an answer) with an error,
//! so that one bad message never ends the session. Well-formed messages pass through
//! unchanged, in order; the library's output is copied out whole, message by message,
//! with those error answers slotted in between.

use serde_json::Value;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc;

use crate::wire::jsonrpc::{error, text_of, truncate};

/// Bodies larger than this are refused (and skipped) rather than buffered.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// What reading one framed message gave.
#[derive(Debug, PartialEq)]
pub enum Frame {
    Body(Vec<u8>),
    /// The header block was unusable; the bytes up to the next header were skipped.
    BadHeader(String),
    End,
}

/// Reads one message: headers up to a blank line, then `Content-Length` bytes.
pub async fn read_frame(input: &mut (impl AsyncBufRead + Unpin)) -> std::io::Result<Frame> {
    let mut length: Option<Result<usize, String>> = None;
    let mut saw_header = false;
    loop {
        let mut line = Vec::new();
        if input.read_until(b'\n', &mut line).await? == 0 {
            return Ok(Frame::End);
        }
        let text = String::from_utf8_lossy(&line);
        let mut text = text.trim_end_matches(['\r', '\n']);
        // A header glued to the end of a bad body: start again from it.
        if let Some(i) = text.to_ascii_lowercase().find("content-length:").filter(|i| *i > 0) {
            text = &text[i..];
        }
        if text.is_empty() {
            if saw_header {
                break;
            }
            continue;
        }
        saw_header = true;
        match text.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                length = Some(value.trim().parse::<usize>().map_err(|e| format!("bad Content-Length: {e}")));
            }
            Some(_) => {}
            None => return Ok(Frame::BadHeader(format!("not a header line: {:?}", truncate(text, 60)))),
        }
    }
    match length {
        None => Ok(Frame::BadHeader("missing Content-Length header".to_string())),
        Some(Err(e)) => Ok(Frame::BadHeader(e)),
        Some(Ok(n)) if n > MAX_BODY_BYTES => {
            // Read and drop it, to stay in step with the stream.
            tokio::io::copy(&mut input.take(n as u64), &mut tokio::io::sink()).await?;
            Ok(Frame::BadHeader(format!("message of {n} bytes is over the {MAX_BODY_BYTES}-byte limit")))
        }
        Some(Ok(n)) => {
            let mut body = vec![0; n];
            input.read_exact(&mut body).await?;
            Ok(Frame::Body(body))
        }
    }
}

/// `None` when the body is a message the library accepts; otherwise the error to answer.
pub fn check(body: &[u8]) -> Option<Value> {
    // JSON is UTF-8: the library's lenient parse skips the strings of unknown keys unread,
    // and would take a body with broken bytes in one for a message.
    let text = match text_of(body) {
        Ok(text) => text,
        Err(answer) => return Some(answer),
    };
    // A message is an object (the derived parsers would also take a JSON array), and a
    // request or notification names its method (the library's parser defaults it to "").
    let object = text.trim_start().starts_with('{');
    // The common case costs one parse: a request or notification.
    if object && let Ok(request) = serde_json::from_str::<jsonrpc::Request>(text) {
        // The library drops requests for `$/` methods it does not know without an answer;
        // the protocol asks for MethodNotFound (it knows none that is a request).
        if let Some(id) = request.id().filter(|_| request.method().starts_with("$/")) {
            let id = serde_json::to_value(id).unwrap_or(Value::Null);
            return Some(error(id, -32601, format!("Method not found: {}", request.method())));
        }
        if !request.method().is_empty() {
            return None;
        }
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Some(error(Value::Null, -32700, format!("Parse error: {e}"))),
    };
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    if object && serde_json::from_value::<jsonrpc::Response>(value).is_ok() {
        return None;
    }
    Some(error(id, -32600, "Invalid request: not a JSON-RPC 2.0 request, notification or response".into()))
}

async fn write_frame(output: &mut (impl AsyncWrite + Unpin), body: &[u8]) -> std::io::Result<()> {
    output.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).await?;
    output.write_all(body).await?;
    output.flush().await
}

/// Copies well-formed messages from `input` to `to_server`, and sends an error answer for
/// each malformed one to `answers`. Ends (closing `to_server`) at the end of `input`.
async fn pump_input(
    input: impl AsyncRead + Unpin,
    mut to_server: impl AsyncWrite + Unpin,
    answers: mpsc::UnboundedSender<Value>,
) {
    let mut input = BufReader::new(input);
    loop {
        let frame = match read_frame(&mut input).await {
            Ok(f) => f,
            Err(e) => {
                // Also how a read ends when the runtime stops after `exit`.
                tracing::debug!("reading the client's messages ended: {e}");
                break;
            }
        };
        match frame {
            Frame::End => break,
            Frame::BadHeader(reason) => {
                tracing::warn!("malformed message header: {reason}");
                let _ = answers.send(error(Value::Null, -32700, format!("Parse error: {reason}")));
            }
            Frame::Body(body) => match check(&body) {
                Some(answer) => {
                    tracing::warn!("malformed message: {}", answer["error"]["message"]);
                    let _ = answers.send(answer);
                }
                None => {
                    if write_frame(&mut to_server, &body).await.is_err() {
                        break;
                    }
                }
            },
        }
    }
    let _ = to_server.shutdown().await;
}

/// Sends each message the server writes, whole, to `messages`.
async fn read_output(from_server: impl AsyncRead + Unpin, messages: mpsc::UnboundedSender<Vec<u8>>) {
    let mut from_server = BufReader::new(from_server);
    loop {
        match read_frame(&mut from_server).await {
            Ok(Frame::Body(body)) => {
                if messages.send(body).is_err() {
                    return;
                }
            }
            Ok(Frame::BadHeader(reason)) => tracing::error!("the server wrote a bad header: {reason}"),
            Ok(Frame::End) | Err(_) => return,
        }
    }
}

/// A body with its header.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Wraps `input`/`output`: returns the streams the protocol library reads and writes, and
/// spawns the tasks that connect them. The returned task ends once the library's output
/// is closed and all of it has been written.
pub fn guard(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> (tokio::io::DuplexStream, tokio::io::DuplexStream, tokio::task::JoinHandle<()>) {
    crate::wire::jsonrpc::guard(
        |to_library, answers| pump_input(input, to_library, answers),
        read_output,
        output,
        framed,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    async fn frames(bytes: &[u8]) -> Vec<Frame> {
        let mut input = BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            match read_frame(&mut input).await.unwrap() {
                Frame::End => return out,
                f => out.push(f),
            }
        }
    }

    #[tokio::test]
    async fn an_answer_never_cuts_into_a_message_the_library_is_still_writing() {
        use tokio::io::AsyncWriteExt;
        let (client_in, mut client) = tokio::io::duplex(1 << 20);
        let (client_out, output) = tokio::io::duplex(1 << 20);
        let (_library_in, mut library_out, writer) = guard(client_in, client_out);
        // The library has written half of a large message when a malformed one comes in.
        let body = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"{}\"}}", "x".repeat(200_000));
        let whole = framed(body.as_bytes());
        library_out.write_all(&whole[..100_000]).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        client.write_all(&framed(b"not json")).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        library_out.write_all(&whole[100_000..]).await.unwrap();
        drop(library_out);
        writer.await.unwrap();
        let mut written = Vec::new();
        let mut output = output;
        tokio::io::AsyncReadExt::read_to_end(&mut output, &mut written).await.unwrap();
        let got = frames(&written).await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.contains(&Frame::Body(body.into_bytes())), "the message arrives whole");
    }

    #[tokio::test]
    async fn frames_are_read_and_bad_headers_are_skipped() {
        let stream = b"Content-Length: 2\r\n\r\n{}\r\nContent-Type: x\r\n\r\nContent-Length: zz\r\n\r\ncontent-length: 4\r\n\r\nnull";
        assert_eq!(
            frames(stream).await,
            vec![
                Frame::Body(b"{}".to_vec()),
                Frame::BadHeader("missing Content-Length header".into()),
                Frame::BadHeader("bad Content-Length: invalid digit found in string".into()),
                Frame::Body(b"null".to_vec()),
            ]
        );
        let glued = b"Content-Length: zz\r\n\r\n{\"a\":1}Content-Length: 2\r\n\r\n[]";
        assert_eq!(
            frames(glued).await,
            vec![
                Frame::BadHeader("bad Content-Length: invalid digit found in string".into()),
                Frame::Body(b"[]".to_vec())
            ]
        );
    }

    #[test]
    fn bodies_are_checked_against_json_rpc() {
        assert!(check(br#"{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#).is_none());
        assert!(check(br#"{"jsonrpc":"2.0","method":"exit"}"#).is_none());
        assert!(check(br#"{"jsonrpc":"2.0","id":3,"result":null}"#).is_none());
        assert_eq!(check(b"{ nope").unwrap()["error"]["code"], -32700);
        let e = check(br#"{"id":7,"method":"x"}"#).unwrap();
        assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(7), json!(-32600)));
        assert_eq!(check(br#"[1,2]"#).unwrap()["id"], Value::Null);
        // A request for a `$/` method is answered; a notification is the library's.
        let e = check(br#"{"jsonrpc":"2.0","id":"d1","method":"$/foo","params":{}}"#).unwrap();
        assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!("d1"), json!(-32601)));
        assert!(check(br#"{"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"off"}}"#).is_none());
        // A lone surrogate escape is not Unicode text, wherever it stands.
        let e = check(br#"{"jsonrpc":"2.0","id":2,"method":"shutdown","extra":"\ud800"}"#).unwrap();
        assert_eq!(e["error"]["code"], -32700, "{e}");
    }

    #[test]
    fn bodies_that_only_a_lenient_parse_accepts_are_refused() {
        // Broken UTF-8 in the value of an unknown key, and no method: not a message.
        let body = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"muthod\":\"init\x97\x99lize\",\"params\":{}}";
        assert_eq!(check(body).unwrap()["error"]["code"], -32700);
        let e = check(br#"{"jsonrpc":"2.0","id":1,"muthod":"initialize"}"#).unwrap();
        assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(1), json!(-32600)));
        // A request written as an array of its fields.
        assert_eq!(check(br#"["2.0","initialize",{},1]"#).unwrap()["error"]["code"], -32600);
        assert_eq!(check(br#"["2.0"]"#).unwrap()["error"]["code"], -32600);
    }
}
