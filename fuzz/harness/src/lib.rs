//! The checks behind the fuzz targets (`fuzz/fuzz_targets/*`), one function per target.
//!
//! Each function takes the raw input libFuzzer generated and panics when an invariant does not
//! hold (a panic inside the code under test counts the same). The nightly fuzz binaries call
//! them; on stable, `tests/replay.rs` runs every committed corpus file
//! (`fuzz/corpus/<target>/*`) and every reproducer (`fuzz/regressions/<target>/*`) through the
//! same function, so a crash once found stays a failing test until it is fixed.

use std::collections::BTreeMap;

use mcp_adapters::{AdapterSet, ResultKind};
use mcp_client::transport::fuzzing as client_readers;
use mcp_schema::{HeaderBinding, OutputProjection, Projection, SchemaProfile, Validator};
use mcp_wire::header::{self, ParamType};
use mcp_wire::jsonrpc::{self, DecodeError, Decoded, Id, Message, Response};
use mcp_wire::sse::{SseDecoder, SseError};
use serde_json::Value;

/// A target's check: panics when an invariant does not hold for the input.
pub type Check = fn(&[u8]);

/// Every target: its name (the fuzz binary, and the folder of its corpus and regressions) and
/// its check.
pub const TARGETS: [(&str, Check); 7] = [
    ("jsonrpc", jsonrpc),
    ("sse", sse),
    ("header", header),
    ("adapters", adapters),
    ("schema", schema),
    ("client", client),
    ("trace", trace),
];

/// The check of the target `name`, if there is one.
pub fn target(name: &str) -> Option<Check> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The trace context decoder ([`mcp_wire::trace`]): never a panic; a `traceparent` it accepts
/// prints back as the version-00 form of the same ids and flags, which it accepts again; and
/// a `_meta` context keeps `tracestate` and `baggage` only as bounded printable ASCII.
pub fn trace(data: &[u8]) {
    use mcp_wire::trace::{MAX_BAGGAGE, MAX_TRACESTATE, TraceContext, TraceParent};
    let text = String::from_utf8_lossy(data);
    if let Ok(parent) = TraceParent::parse(&text) {
        let printed = parent.to_string();
        assert_eq!(TraceParent::parse(&printed), Ok(parent), "{printed}");
        if text.starts_with("00-") {
            assert_eq!(printed, text, "version 00 prints back as it was read");
        }
        assert_ne!(parent.trace_id(), [0; 16]);
        assert_ne!(parent.parent_id(), [0; 8]);
    }
    // The input split in three, as a `_meta` would hold the three values.
    let mut parts = text.splitn(3, '\n');
    let (parent, state, baggage) = (parts.next(), parts.next(), parts.next());
    let meta = serde_json::json!({
        "traceparent": parent,
        "tracestate": state,
        "baggage": baggage,
    });
    if let Some(context) = meta.as_object().and_then(TraceContext::from_meta) {
        let printable = |s: &str| s.bytes().all(|b| (0x20..0x7f).contains(&b));
        if let Some(state) = &context.tracestate {
            assert!(
                state.len() <= MAX_TRACESTATE && printable(state),
                "{state:?}"
            );
        }
        if let Some(baggage) = &context.baggage {
            assert!(
                baggage.len() <= MAX_BAGGAGE && printable(baggage),
                "{baggage:?}"
            );
        }
        let mut written = serde_json::Map::new();
        context.write_meta(&mut written);
        assert_eq!(TraceContext::from_meta(&written), Some(context));
    }
}

/// The JSON-RPC decoder, differential: [`jsonrpc::decode`] (its direct reader, else serde_json)
/// gives exactly what serde_json alone gives, and it reports a parse error exactly when
/// serde_json rejects the text as JSON. And [`jsonrpc::peek_method`]'s scan: never a panic,
/// and on JSON whose top-level member names are unique, the `method` serde_json reads.
pub fn jsonrpc(data: &[u8]) {
    let peeked = jsonrpc::peek_method(data);
    if let Ok(value) = serde_json::from_slice::<Value>(data)
        && top_level_methods(data) <= 1
    {
        assert_eq!(
            peeked.as_deref(),
            value.get("method").and_then(Value::as_str),
            "peek_method and serde_json disagree"
        );
    }
    let decoded = jsonrpc::decode(data);
    assert_eq!(
        decoded,
        jsonrpc::decode_by_serde(data),
        "the direct reader and serde_json disagree"
    );
    // On UTF-8 text, a parse error exactly when serde_json rejects the text as JSON. (Other
    // bytes are read as serde_json reads bytes: invalid UTF-8 inside a member that is skipped
    // unread, such as an unknown member of the envelope, is not checked; the first fuzz run
    // found this, and `decode_by_serde` reads such a body the same way.)
    if std::str::from_utf8(data).is_ok() {
        let is_json = serde_json::from_slice::<Value>(data).is_ok();
        let parse_error = matches!(decoded, Decoded::Single(Err(DecodeError::Parse { .. })));
        assert_eq!(
            is_json, !parse_error,
            "parse error reported iff serde_json rejects: {decoded:?}"
        );
    }
    // Whatever was read is written back as JSON that reads the same.
    if let Decoded::Single(Ok(message)) = &decoded {
        let again = jsonrpc::decode(&jsonrpc::encode(message));
        assert_eq!(again, Decoded::Single(Ok(message.clone())), "re-encoding");
    }
}

/// How many top-level members of `data` are named `method` (0 when it is not a JSON object):
/// on duplicates [`jsonrpc::peek_method`] may answer with the first, serde_json's `Value` keeps
/// the last.
fn top_level_methods(data: &[u8]) -> usize {
    struct Count(usize);
    impl<'de> serde::Deserialize<'de> for Count {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_map(CountVisitor)
        }
    }
    struct CountVisitor;
    impl<'de> serde::de::Visitor<'de> for CountVisitor {
        type Value = Count;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
            let mut count = 0;
            while let Some(name) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                count += usize::from(name == "method");
                map.next_value::<serde::de::IgnoredAny>()?;
            }
            Ok(Count(count))
        }
    }
    serde_json::from_slice::<Count>(data).map_or(0, |count| count.0)
}

/// A small deterministic generator (xorshift), so cut points derive from the input alone.
fn cuts(seed: u64, len: usize, count: usize) -> Vec<usize> {
    let mut state = seed | 1;
    let mut out: Vec<usize> = (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % (len as u64 + 1)).unwrap_or(0)
        })
        .collect();
    out.sort_unstable();
    out
}

/// `bytes` cut at `points` (sorted).
fn split<'a>(bytes: &'a [u8], points: &[usize]) -> Vec<&'a [u8]> {
    let mut chunks = Vec::with_capacity(points.len() + 1);
    let mut from = 0;
    for &cut in points {
        chunks.push(&bytes[from..cut]);
        from = cut;
    }
    chunks.push(&bytes[from..]);
    chunks
}

/// The first two bytes as a split seed and a count of cuts, the rest as the payload.
fn seed_and_payload(data: &[u8]) -> (u64, usize, &[u8]) {
    match data {
        [a, b, rest @ ..] => (
            u64::from(*a) << 8 | u64::from(*b),
            usize::from(*b % 16),
            rest,
        ),
        _ => (0, 0, data),
    }
}

/// Everything an SSE decoder reports for `chunks`, and where it ends.
fn decode_sse<'a>(
    max: Option<usize>,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<String>, String, Option<u64>) {
    let mut decoder = SseDecoder::new();
    if let Some(max) = max {
        decoder = decoder.with_max_event_size(max);
    }
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        // The size an oversized event is reported at depends on how much had arrived ("at
        // least"), so only its limit is compared.
        events.extend(decoder.by_ref().map(|event| match event {
            Ok(event) => format!("{event:?}"),
            Err(SseError::EventTooLarge { limit, .. }) => format!("too large (limit {limit})"),
            Err(other) => format!("{other:?}"),
        }));
    }
    (events, decoder.last_event_id().to_owned(), decoder.retry())
}

/// The SSE decoder: never panics, and however the stream is cut into chunks, the events, the
/// last event id and the retry are the same (with and without a small event size limit).
pub fn sse(data: &[u8]) {
    let (seed, count, stream) = seed_and_payload(data);
    let points = cuts(seed, stream.len(), count);
    for max in [None, Some(64)] {
        let whole = decode_sse(max, [stream]);
        let chunked = decode_sse(max, split(stream, &points));
        assert_eq!(
            whole, chunked,
            "chunking changed the output (limit {max:?})"
        );
        let bytewise = decode_sse(max, stream.chunks(1));
        assert_eq!(
            whole, bytewise,
            "byte-at-a-time changed the output (limit {max:?})"
        );
    }
}

/// The `Mcp-Name`/`Mcp-Param-*` header value codec: decoding any bytes never panics; what
/// decodes re-encodes to a valid header value that decodes the same; any text and any argument
/// round-trip through encode and decode.
pub fn header(data: &[u8]) {
    let is_field_value = |sent: &str| {
        sent.bytes()
            .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
    };
    if let Ok(text) = header::decode(data) {
        let sent = header::encode_text(&text);
        assert!(is_field_value(&sent), "{sent:?}");
        assert_eq!(header::decode(sent.as_bytes()).as_deref(), Ok(&*text));
    }
    for ty in [ParamType::String, ParamType::Integer, ParamType::Boolean] {
        if let Ok(value) = header::decode_argument(data, ty) {
            let sent = header::encode_argument(&value)
                .expect("a decoded argument encodes")
                .expect("a decoded argument is not null");
            assert_eq!(
                header::decode_argument(sent.as_bytes(), ty).as_ref(),
                Ok(&value)
            );
        }
    }
    let _ = header::matches_body(data, &Value::String(String::from_utf8_lossy(data).into()));
    let text = String::from_utf8_lossy(data);
    let sent = header::encode_text(&text);
    assert!(is_field_value(&sent), "{sent:?}");
    assert_eq!(header::decode(sent.as_bytes()).as_deref(), Ok(&*text));
    let value = Value::String(text.into_owned());
    let sent = header::encode_argument(&value)
        .expect("a string encodes")
        .expect("not null");
    assert_eq!(
        header::decode_argument(sent.as_bytes(), ParamType::String),
        Ok(value.clone())
    );
    assert!(header::check_header(Some(sent.as_bytes()), Some(&value)).is_ok());
}

/// The tools the adapter target knows: `t`, whose `region` and `count` arguments are mirrored
/// into `Mcp-Param-Region` and `Mcp-Param-Count`.
fn tools() -> BTreeMap<String, Vec<HeaderBinding>> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
        },
    });
    let bindings = mcp_schema::extract_headers(&schema).expect("the fixed schema is valid");
    BTreeMap::from([("t".to_owned(), bindings)])
}

/// Headers then a body: header lines (`name: value`) up to the first empty line, then the body;
/// without an empty line, the whole input is the body.
fn headers_and_body(data: &[u8]) -> (Vec<(String, Vec<u8>)>, &[u8]) {
    let Some(at) = data.windows(2).position(|w| w == b"\n\n") else {
        return (Vec::new(), data);
    };
    let headers = data[..at]
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            let name = String::from_utf8_lossy(&line[..colon]).trim().to_owned();
            let value = line[colon + 1..]
                .strip_prefix(b" ")
                .unwrap_or(&line[colon + 1..]);
            Some((name, value.to_vec()))
        })
        .collect();
    (headers, &data[at + 2..])
}

/// Every adapter's decode: for a body plus headers, selection and decoding (with and without
/// the HTTP header checks) on every revision never panic, and give one decoded item per batch
/// item where the revision allows batches.
pub fn adapters(data: &[u8]) {
    let (headers, body) = headers_and_body(data);
    let tools = tools();
    let set = AdapterSet::all();
    let decoded = jsonrpc::decode(body);
    let _ = set.select_http(&decoded, &headers, None, None);
    let _ = set.select_http(&decoded, &headers, Some("2026-07-28"), Some("2025-03-26"));
    for adapter in set.adapters() {
        let http = adapter.decode_http(decoded.clone(), &headers, &tools);
        let plain = adapter.decode(decoded.clone());
        if let Decoded::Batch(items) = &decoded
            && adapter.allows_batch()
        {
            assert_eq!(http.items().len(), items.len());
            assert_eq!(plain.items().len(), items.len());
        }
        // Each message alone, as stdio reads it.
        if let Decoded::Single(Ok(message)) = &decoded {
            let _ = adapter.decode_message(message.clone());
        }
    }
}

/// Schema projection: any JSON value as a tool's input and output schema, on every revision,
/// never panics; an offered input schema has an object root and compiles as a JSON Schema.
pub fn schema(data: &[u8]) {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    for (version, profile) in [
        ("2024-11-05", SchemaProfile::V2024_11_05),
        ("2025-06-18", SchemaProfile::V2025_06_18),
        ("2025-11-25", SchemaProfile::V2025_11_25),
        ("2025-11-25 native", SchemaProfile::V2025_11_25.native()),
        ("2026-07-28", SchemaProfile::V2026_07_28),
    ] {
        if let Projection::Offered(projected) = mcp_schema::project_input(&schema, &profile) {
            assert!(
                projected.is_object(),
                "{version}: not an object: {projected}"
            );
            if Validator::compile(&schema).is_ok() {
                assert!(
                    Validator::compile(&projected).is_ok(),
                    "{version}: the projection of a valid schema does not compile: {projected}"
                );
            }
        }
        if let OutputProjection::Shown(projected) = mcp_schema::project_output(&schema, &profile)
            && Validator::compile(&schema).is_ok()
        {
            assert!(
                Validator::compile(&projected).is_ok(),
                "{version}: the output projection does not compile: {projected}"
            );
        }
    }
}

/// The client's response readers: a JSON body, an SSE body in any chunking (same messages
/// whatever the cuts), and the HTTP+SSE routing by text, which routes a text to id `n` only
/// when that text is not read as anything but the success response to `n`. The typed fast
/// path: [`jsonrpc::read_success_as`] reads only what [`jsonrpc::decode`] reads as the same
/// success response, and a result [`mcp_adapters::is_plain_complete_result`] passes is
/// complete on every revision.
pub fn client(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let decoded = jsonrpc::decode(data);
        let response = match &decoded {
            Decoded::Single(Ok(Message::Response(response))) => Some(response),
            _ => None,
        };
        let id = response
            .and_then(|response| response.id.clone())
            .unwrap_or(Id::Number(1));
        if let Some(result) = jsonrpc::read_success_as::<Value>(&id, text) {
            assert_eq!(
                decoded,
                Decoded::Single(Ok(Message::Response(Response::success(id, result)))),
                "read_success_as read what decode does not"
            );
        }
        if mcp_adapters::is_plain_complete_result(text)
            && let Some(Ok(result)) = response.map(|response| &response.outcome)
            && result.is_object()
        {
            for adapter in AdapterSet::all().adapters() {
                assert_eq!(
                    adapter.read_result(result),
                    Ok(ResultKind::Complete),
                    "a plain complete result is not complete on {}",
                    adapter.version()
                );
            }
        }
    }
    let _ = client_readers::read_json_body(data);
    let (seed, count, stream) = seed_and_payload(data);
    let points = cuts(seed, stream.len(), count);
    let show =
        |items: Vec<Result<(Message, Option<String>), mcp_client::transport::TransportError>>| {
            items
                .into_iter()
                .map(|item| format!("{item:?}"))
                .collect::<Vec<_>>()
        };
    for limit in [64, 4 << 20] {
        let whole = show(client_readers::read_sse_body([stream], limit));
        let chunked = show(client_readers::read_sse_body(split(stream, &points), limit));
        assert_eq!(
            whole, chunked,
            "chunking changed what the client read (limit {limit})"
        );
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(id) = client_readers::response_id(text)
        && let Ok(message) = client_readers::read_json_body(data)
    {
        match message {
            Message::Response(response) => {
                assert_eq!(response.id, Some(Id::Number(id)), "routed to another id");
                assert!(response.outcome.is_ok(), "routed an error as a success");
            }
            other => panic!("routed a non-response as response {id}: {other:?}"),
        }
    }
}
