//! The client's response readers, exposed for the fuzz targets (`fuzz/` at the repository root)
//! and their corpus replay. Only built with the `fuzzing` feature, which is off by default; not a
//! stable API.

use mcp_wire::jsonrpc::Message;
use mcp_wire::sse::{SseDecoder, SseError};

use super::TransportError;

/// Reads a JSON response body as the Streamable HTTP and stdio transports do: one JSON-RPC
/// message, anything else (a batch, a parse error) is a protocol error.
pub fn read_json_body(bytes: &[u8]) -> Result<Message, TransportError> {
    super::parse_message(bytes)
}

/// Reads an SSE response body (`text/event-stream`) pushed in `chunks`, as the Streamable HTTP
/// transport reads one: keep-alives and other event types are skipped, each `message` event is
/// parsed as one message, and the first error ends the stream. `limit` is the largest event in
/// bytes. Returns each message with the last event id in force when it was read.
pub fn read_sse_body<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
    limit: usize,
) -> Vec<Result<(Message, Option<String>), TransportError>> {
    let mut decoder = SseDecoder::new().with_max_event_size(limit);
    let mut out = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        while let Some(event) = decoder.next() {
            match event {
                Ok(event) => {
                    if event.event().is_some_and(|kind| kind != "message")
                        || event.data().is_empty()
                    {
                        continue;
                    }
                    let event_id = Some(decoder.last_event_id())
                        .filter(|id| !id.is_empty())
                        .map(str::to_owned);
                    let item = super::parse_message(event.data().as_bytes())
                        .map(|message| (message, event_id));
                    let failed = item.is_err();
                    out.push(item);
                    if failed {
                        return out;
                    }
                }
                Err(SseError::EventTooLarge { limit, .. }) => {
                    out.push(Err(TransportError::TooLarge { limit }));
                    return out;
                }
                Err(e) => {
                    out.push(Err(TransportError::Protocol(e.to_string())));
                    return out;
                }
            }
        }
    }
    out
}

/// The id the HTTP+SSE transport routes a message text to, before parsing it (`None`: parsed
/// as usual).
pub fn response_id(text: &str) -> Option<i64> {
    super::http_sse::response_id(text)
}
