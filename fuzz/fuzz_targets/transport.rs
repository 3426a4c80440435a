//! Fuzzes the language server's message framing (`lsp::transport::read_frame`) over
//! arbitrary bytes, delivered in pieces of a size the input picks, and the JSON-RPC check of
//! each body (`lsp::transport::check`). The reader must end, consume the stream in order,
//! return bodies of exactly their `Content-Length` taken from the stream, and read the
//! bodies it returned back the same when they are framed again; the check must accept only
//! JSON objects and answer everything else with a JSON-RPC error, and a request for a
//! reserved `$/` method with MethodNotFound.

#![no_main]

use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use situate::lsp::transport::{Frame, check, read_frame};
use tokio::io::{AsyncRead, BufReader, ReadBuf};

/// An in-memory stream that hands out at most `piece` bytes per read, as a pipe might.
struct Trickle<'a> {
    data: &'a [u8],
    piece: usize,
}

impl AsyncRead for Trickle<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.piece.min(self.data.len()).min(buf.remaining());
        let (head, tail) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = tail;
        Poll::Ready(Ok(()))
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().expect("a runtime"))
}

/// Every frame of `data`, and whether reading ended in an error (a body cut short).
fn frames(data: &[u8], piece: usize, capacity: usize) -> (Vec<Frame>, bool) {
    runtime().block_on(async {
        let mut input = BufReader::with_capacity(capacity, Trickle { data, piece });
        let mut out = Vec::new();
        loop {
            match read_frame(&mut input).await {
                Ok(Frame::End) => return (out, false),
                Ok(frame) => out.push(frame),
                Err(_) => return (out, true),
            }
            // Each frame takes at least one line of the stream.
            assert!(out.len() <= data.len(), "more frames than bytes");
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&shape, data)) = data.split_first() else {
        return;
    };
    let piece = usize::from(shape & 0x0f) + 1;
    let capacity = if shape & 0x10 == 0 { 8 * 1024 } else { usize::from(shape >> 5) + 1 };
    let (read, _) = frames(data, piece, capacity);

    let mut bodies = Vec::new();
    let mut searched = 0;
    for frame in &read {
        match frame {
            Frame::Body(body) => {
                // A body is a run of the stream's bytes, after those of the frames before it.
                let at = data[searched..]
                    .windows(body.len().max(1))
                    .position(|w| body.is_empty() || w == body.as_slice())
                    .map(|i| i + searched);
                let at = at.unwrap_or_else(|| panic!("a body of {} bytes is not in the stream", body.len()));
                searched = at + body.len();
                bodies.push(body.clone());
                match check(body) {
                    None => {
                        let value: Value = serde_json::from_slice(body).expect("an accepted body is JSON");
                        assert!(value.is_object(), "an accepted body is an object: {value}");
                    }
                    Some(answer) => {
                        assert_eq!(answer["jsonrpc"], "2.0");
                        let code = answer["error"]["code"].as_i64();
                        // A request for a `$/` method, which the protocol reserves, is not
                        // found; anything else is a parse error or an invalid request.
                        let reserved_request = serde_json::from_slice::<Value>(body).is_ok_and(|value| {
                            value["method"].as_str().is_some_and(|m| m.starts_with("$/"))
                                && value.get("id").is_some()
                        });
                        assert!(
                            matches!(code, Some(-32700 | -32600))
                                || (code == Some(-32601) && reserved_request),
                            "{answer}"
                        );
                        assert!(
                            answer["id"].is_null() || answer["id"].is_number() || answer["id"].is_string()
                        );
                    }
                }
            }
            Frame::BadHeader(reason) => assert!(!reason.is_empty()),
            Frame::End => unreachable!("End is not collected"),
        }
    }

    // The bodies, framed again as a client would, read back the same.
    let mut stream = Vec::new();
    for body in &bodies {
        stream.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        stream.extend_from_slice(body);
    }
    let (again, failed) = frames(&stream, piece, capacity);
    assert!(!failed);
    let again: Vec<Vec<u8>> = again
        .into_iter()
        .map(|frame| match frame {
            Frame::Body(body) => body,
            other => panic!("a well-framed stream gave {other:?}"),
        })
        .collect();
    assert_eq!(again, bodies);
});
