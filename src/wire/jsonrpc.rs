//! JSON-RPC 2.0 as both servers' transports check it: the error answers, the checks a
//! message's text passes before a lenient parser reads it, and the tasks that stand between
//! the client's streams and a protocol library (`lsp/transport.rs` frames messages by
//! headers, `mcp/transport.rs` by lines).

use std::future::Future;

use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

/// The text was not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON was not a JSON-RPC 2.0 message.
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// An error answer to the request `id` (`null` when it cannot be read).
pub fn error(id: Value, code: i64, message: String) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// A message's bytes as text, or the Parse error to answer: JSON is UTF-8, and a lone
/// UTF-16 surrogate escape (`\uD800`) is no character. Lenient parsers skip the strings of
/// keys they do not know unread, and would take either for a message.
pub fn text_of(bytes: &[u8]) -> Result<&str, Value> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(error(Value::Null, PARSE_ERROR, "Parse error: the message is not UTF-8".into()));
    };
    if may_hold_surrogate(text)
        && let Err(e) = serde_json::from_str::<Value>(text)
    {
        return Err(error(Value::Null, PARSE_ERROR, format!("Parse error: {e}")));
    }
    Ok(text)
}

/// Whether `text` may hold an escape of a UTF-16 surrogate (`\uD800` to `\uDFFF`): such a
/// text is parsed whole, where a lone surrogate is an error.
fn may_hold_surrogate(text: &str) -> bool {
    text.as_bytes().windows(4).any(|w| {
        w[0] == b'\\'
            && w[1] == b'u'
            && w[2] | 0x20 == b'd'
            && matches!(w[3] | 0x20, b'8'..=b'9' | b'a'..=b'f')
    })
}

/// The first `max` characters of `s`, for a log line about a message.
pub fn truncate(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// Connects a protocol library to the client through three tasks: `pump_input` copies the
/// client's well-formed messages to the library's input and sends an error answer for each
/// malformed one; `read_output` sends each whole message the library writes (its body);
/// and a writer writes both to `output`, each message framed by `frame`, in the order they
/// come. Messages are read whole before the writer sees them, so an answer never cuts into
/// a message half read. Returns the library's input and output streams, and the writer,
/// which ends once the library's output is closed and all of it written.
pub fn guard<I, R>(
    pump_input: impl FnOnce(DuplexStream, UnboundedSender<Value>) -> I,
    read_output: impl FnOnce(DuplexStream, UnboundedSender<Vec<u8>>) -> R,
    output: impl AsyncWrite + Unpin + Send + 'static,
    frame: fn(&[u8]) -> Vec<u8>,
) -> (DuplexStream, DuplexStream, JoinHandle<()>)
where
    I: Future<Output = ()> + Send + 'static,
    R: Future<Output = ()> + Send + 'static,
{
    let (library_in, to_library) = tokio::io::duplex(64 * 1024);
    let (library_out, from_library) = tokio::io::duplex(64 * 1024);
    let (answers_tx, answers_rx) = unbounded_channel();
    let (messages_tx, messages_rx) = unbounded_channel();
    tokio::spawn(pump_input(to_library, answers_tx));
    tokio::spawn(read_output(from_library, messages_tx));
    let writer = tokio::spawn(write_in_turn(output, messages_rx, answers_rx, frame));
    (library_in, library_out, writer)
}

/// Writes the library's messages and the error answers to `output` as they come, each
/// framed by `frame`; ends when the library's messages end (or `output` fails).
async fn write_in_turn(
    mut output: impl AsyncWrite + Unpin,
    mut messages: UnboundedReceiver<Vec<u8>>,
    mut answers: UnboundedReceiver<Value>,
    frame: fn(&[u8]) -> Vec<u8>,
) {
    let mut answers_open = true;
    loop {
        // Both receivers give a message whole or nothing, whichever branch is taken.
        let body = tokio::select! {
            message = messages.recv() => match message {
                Some(body) => body,
                None => return,
            },
            answer = answers.recv(), if answers_open => match answer {
                Some(answer) => answer.to_string().into_bytes(),
                None => {
                    answers_open = false;
                    continue;
                }
            },
        };
        if output.write_all(&frame(&body)).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_is_not_utf8_or_holds_a_lone_surrogate_is_a_parse_error() {
        assert_eq!(text_of(br#"{"a":"\ud83d\ude00"}"#), Ok(r#"{"a":"\ud83d\ude00"}"#));
        assert_eq!(text_of(b"not json at all"), Ok("not json at all"), "left to the parser that follows");
        for bad in [&b"{\"a\":\"\xff\"}"[..], br#"{"unknown":"\ud800"}"#, br#"{"x":"\uDFFF"}"#] {
            let answer = text_of(bad).unwrap_err();
            assert_eq!(
                (&answer["id"], &answer["error"]["code"]),
                (&Value::Null, &json!(PARSE_ERROR)),
                "{answer}"
            );
        }
    }
}
