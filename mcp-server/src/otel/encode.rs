//! The OTLP/HTTP protobuf body of a batch of finished spans
//! (`opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest`), written straight
//! from the span records in protobuf's wire format (prost's varint primitives): no
//! intermediate message structs, one buffer per batch. A span (and an event) is written to
//! a scratch buffer and copied after its length; smaller messages have their lengths
//! computed first, so every varint is the shortest one. The tests, a proptest among them,
//! decode what is written with `opentelemetry-proto`.

use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};

use super::record::{Event, Link, Record, Value};

/// The `resource` and `scope` of every batch, encoded once.
#[derive(Debug)]
pub(crate) struct Preamble {
    /// `ResourceSpans.resource` (field 1), key and length included.
    resource: Vec<u8>,
    /// `ScopeSpans.scope` (field 1), key and length included.
    scope: Vec<u8>,
}

impl Preamble {
    /// The resource of `service_name`'s process `instance`, and this crate's scope.
    pub(crate) fn new(service_name: &str, instance: &str) -> Self {
        let mut attributes = Vec::new();
        key_value_str(&mut attributes, "service.name", service_name);
        key_value_str(&mut attributes, "service.instance.id", instance);
        key_value_str(&mut attributes, "telemetry.sdk.name", "everymcp");
        key_value_str(&mut attributes, "telemetry.sdk.language", "rust");
        let mut resource = Vec::new();
        bytes(&mut resource, 1, &attributes);

        let mut body = Vec::new();
        string(&mut body, 1, "mcp-server");
        string(&mut body, 2, env!("CARGO_PKG_VERSION"));
        let mut scope = Vec::new();
        bytes(&mut scope, 1, &body);
        Self { resource, scope }
    }
}

/// The export request of `spans`: one `ResourceSpans` with one `ScopeSpans`. Each span is
/// written to a scratch buffer first, then copied after its length.
pub(crate) fn request(preamble: &Preamble, spans: &[Record]) -> Vec<u8> {
    let mut encoded = Vec::with_capacity(spans.len() * 512);
    let mut scratch = Vec::with_capacity(1024);
    for span in spans {
        scratch.clear();
        span_body(&mut scratch, span);
        key(&mut encoded, 2, LEN);
        varint(&mut encoded, scratch.len() as u64);
        encoded.extend_from_slice(&scratch);
    }
    let scope_spans = preamble.scope.len() + encoded.len();
    let resource_spans =
        preamble.resource.len() + 1 + encoded_len_varint(scope_spans as u64) + scope_spans;
    let mut out =
        Vec::with_capacity(1 + encoded_len_varint(resource_spans as u64) + resource_spans);
    key(&mut out, 1, LEN);
    varint(&mut out, resource_spans as u64);
    out.extend_from_slice(&preamble.resource);
    key(&mut out, 2, LEN);
    varint(&mut out, scope_spans as u64);
    out.extend_from_slice(&preamble.scope);
    out.extend_from_slice(&encoded);
    out
}

/// Wire types.
const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

/// A field's key; every tag written here is below 16 (one byte) but the span's flags (16).
fn key(buf: &mut Vec<u8>, tag: u8, wire: u8) {
    if tag < 16 {
        buf.push(tag << 3 | wire);
    } else {
        encode_key(u32::from(tag), wire_type(wire), buf);
    }
}

fn wire_type(wire: u8) -> WireType {
    match wire {
        VARINT => WireType::Varint,
        I64 => WireType::SixtyFourBit,
        I32 => WireType::ThirtyTwoBit,
        _ => WireType::LengthDelimited,
    }
}

/// A varint: one byte for the common small values, prost's encoder for the rest.
fn varint(buf: &mut Vec<u8>, value: u64) {
    if value < 0x80 {
        #[allow(clippy::cast_possible_truncation, reason = "below 0x80")]
        buf.push(value as u8);
    } else {
        encode_varint(value, buf);
    }
}

/// The length of a length-delimited field of `len` bytes, key and length included (every
/// length-delimited tag used here is below 16: a one-byte key).
fn delimited_len(len: usize) -> usize {
    1 + encoded_len_varint(len as u64) + len
}

fn string(buf: &mut Vec<u8>, tag: u8, value: &str) {
    bytes(buf, tag, value.as_bytes());
}

fn bytes(buf: &mut Vec<u8>, tag: u8, value: &[u8]) {
    key(buf, tag, LEN);
    varint(buf, value.len() as u64);
    buf.extend_from_slice(value);
}

fn fixed64(buf: &mut Vec<u8>, tag: u8, value: u64) {
    key(buf, tag, I64);
    buf.extend_from_slice(&value.to_le_bytes());
}

fn fixed32(buf: &mut Vec<u8>, tag: u8, value: u32) {
    key(buf, tag, I32);
    buf.extend_from_slice(&value.to_le_bytes());
}

fn uint(buf: &mut Vec<u8>, tag: u8, value: u64) {
    key(buf, tag, VARINT);
    varint(buf, value);
}

fn varint_len(value: u64) -> usize {
    1 + encoded_len_varint(value)
}

/// `AnyValue`'s length for `value`, whose text is `text`.
fn any_len(text: &str, value: Value) -> usize {
    match value {
        Value::Text(_) => delimited_len(text.len()),
        Value::Bool(_) => 2,
        // int64 is a varint of its two's complement.
        #[allow(clippy::cast_sign_loss, reason = "protobuf's int64 encoding")]
        Value::Int(i) => varint_len(i as u64),
        Value::Float(_) => 9,
    }
}

/// A `KeyValue` as repeated field `tag`.
fn key_value(buf: &mut Vec<u8>, tag: u8, record: &Record, name: &str, value: Value) {
    let text = match value {
        Value::Text(text) => record.str(text),
        _ => "",
    };
    let any = any_len(text, value);
    key(buf, tag, LEN);
    varint(buf, (delimited_len(name.len()) + delimited_len(any)) as u64);
    string(buf, 1, name);
    key(buf, 2, LEN);
    varint(buf, any as u64);
    match value {
        Value::Text(_) => string(buf, 1, text),
        Value::Bool(b) => uint(buf, 2, u64::from(b)),
        #[allow(clippy::cast_sign_loss, reason = "protobuf's int64 encoding")]
        Value::Int(i) => uint(buf, 3, i as u64),
        Value::Float(f) => fixed64(buf, 4, f.to_bits()),
    }
}

/// A string `KeyValue` of the resource (field 1 of `Resource`).
fn key_value_str(buf: &mut Vec<u8>, name: &str, value: &str) {
    let any = delimited_len(value.len());
    key(buf, 1, LEN);
    varint(buf, (delimited_len(name.len()) + delimited_len(any)) as u64);
    string(buf, 1, name);
    key(buf, 2, LEN);
    varint(buf, any as u64);
    string(buf, 1, value);
}

/// An event (field 11 of `Span`), written to `scratch` first for its length.
fn event(buf: &mut Vec<u8>, scratch: &mut Vec<u8>, record: &Record, event: &Event) {
    scratch.clear();
    fixed64(scratch, 1, event.time);
    string(scratch, 2, record.str(event.name));
    for &(name, value) in &event.attributes {
        key_value(scratch, 3, record, name, value);
    }
    if event.dropped > 0 {
        uint(scratch, 4, u64::from(event.dropped));
    }
    bytes(buf, 11, scratch);
}

/// A link (field 13 of `Span`): its ids and flags, no trace state, no attributes.
fn link(buf: &mut Vec<u8>, link: &Link) {
    key(buf, 13, LEN);
    varint(buf, (delimited_len(16) + delimited_len(8) + 5) as u64);
    bytes(buf, 1, &link.trace_id);
    bytes(buf, 2, &link.span_id);
    // The link's flags: its trace flags, and "the linked span is remote" known and true.
    fixed32(buf, 6, u32::from(link.flags) | 0x300);
}

fn span_body(buf: &mut Vec<u8>, span: &Record) {
    bytes(buf, 1, &span.trace_id);
    bytes(buf, 2, &span.span_id);
    if let Some(state) = &span.tracestate {
        string(buf, 3, state);
    }
    if let Some(parent) = &span.parent_id {
        bytes(buf, 4, parent);
    }
    string(buf, 5, span.str(span.name));
    #[allow(clippy::cast_sign_loss, reason = "kinds are small and positive")]
    uint(buf, 6, span.kind as u64);
    fixed64(buf, 7, span.start);
    fixed64(buf, 8, span.end);
    for &(name, value) in &span.attributes {
        key_value(buf, 9, span, name, value);
    }
    if span.dropped_attributes > 0 {
        uint(buf, 10, u64::from(span.dropped_attributes));
    }
    if !span.events.is_empty() {
        let mut scratch = Vec::new();
        for e in &span.events {
            event(buf, &mut scratch, span, e);
        }
    }
    if span.dropped_events > 0 {
        uint(buf, 12, u64::from(span.dropped_events));
    }
    for l in &span.links {
        link(buf, l);
    }
    if span.dropped_links > 0 {
        uint(buf, 14, u64::from(span.dropped_links));
    }
    let message = span.status_message.map(|m| span.str(m));
    if message.is_some() || span.status != 0 {
        let len =
            message.map_or(0, |m| delimited_len(m.len())) + if span.status == 0 { 0 } else { 2 };
        key(buf, 15, LEN);
        varint(buf, len as u64);
        if let Some(message) = message {
            string(buf, 2, message);
        }
        if span.status != 0 {
            #[allow(clippy::cast_sign_loss, reason = "status codes are small and positive")]
            uint(buf, 3, span.status as u64);
        }
    }
    // The span's flags: its trace flags, and whether its parent is remote (known).
    let remote = if span.remote_parent { 0x200 } else { 0 };
    fixed32(buf, 16, u32::from(span.flags) | 0x100 | remote);
}

#[cfg(test)]
mod tests {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use prost::Message as _;

    use super::*;
    use crate::otel::record::Text;

    fn record() -> Record {
        let mut r = Record::new([7; 16], [8; 8], 1);
        r.parent_id = Some([9; 8]);
        r.remote_parent = true;
        r.tracestate = Some("k=v".into());
        r.kind = 2;
        r.start = 1_000;
        r.end = 2_000;
        let name = r.push_text("tools/call add");
        r.name = name;
        let method = r.push_text("tools/call");
        r.set("mcp.method.name", Value::Text(method));
        r.set("duration_us", Value::Int(-5));
        r.set("big", Value::Int(i64::MAX));
        r.set("ok", Value::Bool(true));
        r.set("ratio", Value::Float(0.25));
        let text = r.push_text("é".repeat(200).as_str());
        r.set("long", Value::Text(text));
        r.status = 2;
        r.status_message = Some(r.push_text("failed"));
        let event_name = r.push_text("handler said");
        r.events.push(Event {
            time: 1_500,
            name: event_name,
            attributes: vec![("level", Value::Text(Text::Static("INFO")))],
            dropped: 3,
        });
        r.dropped_events = 1;
        r.links.push(Link {
            trace_id: [1; 16],
            span_id: [2; 8],
            flags: 1,
        });
        r.dropped_attributes = 2;
        r
    }

    #[test]
    fn a_batch_decodes_as_the_otlp_messages_it_stands_for() {
        let preamble = Preamble::new("svc", "instance-1");
        let spans = vec![record(), Record::new([3; 16], [4; 8], 0)];
        let body = request(&preamble, &spans);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        assert_eq!(decoded.resource_spans.len(), 1);
        let resource = &decoded.resource_spans[0];
        let attributes = &resource.resource.as_ref().unwrap().attributes;
        assert_eq!(attributes[0].key, "service.name");
        assert_eq!(
            attributes[0].value.as_ref().unwrap().value,
            Some(Any::StringValue("svc".into()))
        );
        assert_eq!(attributes[1].key, "service.instance.id");
        let scope = &resource.scope_spans[0];
        assert_eq!(scope.scope.as_ref().unwrap().name, "mcp-server");
        assert_eq!(scope.spans.len(), 2);

        let span = &scope.spans[0];
        assert_eq!(span.trace_id, vec![7; 16]);
        assert_eq!(span.span_id, vec![8; 8]);
        assert_eq!(span.parent_span_id, vec![9; 8]);
        assert_eq!(span.trace_state, "k=v");
        assert_eq!(span.name, "tools/call add");
        assert_eq!(span.kind, 2);
        assert_eq!(
            (span.start_time_unix_nano, span.end_time_unix_nano),
            (1_000, 2_000)
        );
        assert_eq!(span.flags, 0x301);
        let value = |key: &str| {
            span.attributes
                .iter()
                .find(|kv| kv.key == key)
                .and_then(|kv| kv.value.clone())
                .and_then(|v| v.value)
        };
        assert_eq!(
            value("mcp.method.name"),
            Some(Any::StringValue("tools/call".into()))
        );
        assert_eq!(value("duration_us"), Some(Any::IntValue(-5)));
        assert_eq!(value("big"), Some(Any::IntValue(i64::MAX)));
        assert_eq!(value("ok"), Some(Any::BoolValue(true)));
        assert_eq!(value("ratio"), Some(Any::DoubleValue(0.25)));
        assert_eq!(value("long"), Some(Any::StringValue("é".repeat(200))));
        assert_eq!(span.dropped_attributes_count, 2);
        let status = span.status.as_ref().unwrap();
        assert_eq!((status.code, status.message.as_str()), (2, "failed"));
        assert_eq!(span.events.len(), 1);
        assert_eq!(span.events[0].name, "handler said");
        assert_eq!(span.events[0].time_unix_nano, 1_500);
        assert_eq!(span.events[0].dropped_attributes_count, 3);
        assert_eq!(span.events[0].attributes[0].key, "level");
        assert_eq!(span.dropped_events_count, 1);
        assert_eq!(span.links.len(), 1);
        assert_eq!(
            (
                span.links[0].trace_id.clone(),
                span.links[0].span_id.clone()
            ),
            (vec![1; 16], vec![2; 8])
        );
        assert_eq!(span.links[0].flags, 0x301);

        let bare = &scope.spans[1];
        assert!(bare.parent_span_id.is_empty());
        assert!(bare.status.is_none());
        assert_eq!(bare.flags, 0x100);
    }

    #[test]
    fn an_empty_batch_is_still_a_request() {
        let body = request(&Preamble::new("svc", "i"), &[]);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        assert!(decoded.resource_spans[0].scope_spans[0].spans.is_empty());
    }

    const KEYS: [&str; 6] = [
        "a",
        "mcp.method.name",
        "jsonrpc.request.id",
        "k",
        "x.y",
        "z",
    ];

    #[derive(Clone, Debug)]
    enum Arb {
        Text(String),
        Int(i64),
        Float(f64),
        Bool(bool),
    }

    fn arb_value() -> impl proptest::strategy::Strategy<Value = Arb> {
        use proptest::prelude::*;
        prop_oneof![
            ".{0,40}".prop_map(Arb::Text),
            any::<i64>().prop_map(Arb::Int),
            any::<f64>()
                .prop_filter("NaN compares unequal", |f| !f.is_nan())
                .prop_map(Arb::Float),
            any::<bool>().prop_map(Arb::Bool),
        ]
    }

    fn put(record: &mut Record, value: &Arb) -> Value {
        match value {
            Arb::Text(s) => Value::Text(record.push_text(s)),
            Arb::Int(i) => Value::Int(*i),
            Arb::Float(f) => Value::Float(*f),
            Arb::Bool(b) => Value::Bool(*b),
        }
    }

    fn same(
        decoded: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>,
        want: &Arb,
    ) -> bool {
        match (decoded.and_then(|v| v.value.as_ref()), want) {
            (Some(Any::StringValue(s)), Arb::Text(w)) => s == w,
            (Some(Any::IntValue(i)), Arb::Int(w)) => i == w,
            (Some(Any::DoubleValue(f)), Arb::Float(w)) => f.to_bits() == w.to_bits(),
            (Some(Any::BoolValue(b)), Arb::Bool(w)) => b == w,
            _ => false,
        }
    }

    proptest::proptest! {
        #[test]
        fn any_batch_decodes_to_what_was_recorded(
            spans in proptest::collection::vec(
                (
                    proptest::collection::vec((0..KEYS.len(), arb_value()), 0..8),
                    proptest::collection::vec((".{0,20}", proptest::collection::vec((0..KEYS.len(), arb_value()), 0..3)), 0..3),
                    0usize..3,
                    proptest::option::of(proptest::prelude::any::<[u8; 8]>()),
                    proptest::option::of("[a-z]{1,8}=[a-z0-9]{1,8}"),
                    (0i32..3, proptest::prelude::any::<u64>(), proptest::prelude::any::<u8>()),
                ),
                0..5,
            )
        ) {
            let mut records = Vec::new();
            for (attributes, events, links, parent, state, (status, start, flags)) in &spans {
                let mut r = Record::new([5; 16], [6; 8], *flags);
                r.parent_id = *parent;
                r.tracestate = state.as_deref().map(Box::from);
                r.status = *status;
                r.start = *start;
                r.end = start.wrapping_add(1);
                r.name = r.push_text("span");
                for (key, value) in attributes {
                    let value = put(&mut r, value);
                    r.attributes.push((KEYS[*key], value));
                }
                for (name, attributes) in events {
                    let name = r.push_text(name);
                    let mut kept = Vec::new();
                    for (key, value) in attributes {
                        kept.push((KEYS[*key], put(&mut r, value)));
                    }
                    r.events.push(Event { time: 9, name, attributes: kept, dropped: 0 });
                }
                for i in 0..*links {
                    r.link([u8::try_from(i).unwrap() + 1; 16], [7; 8], 1);
                }
                records.push(r);
            }
            let body = request(&Preamble::new("svc", "i"), &records);
            let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
            let got = &decoded.resource_spans[0].scope_spans[0].spans;
            proptest::prop_assert_eq!(got.len(), spans.len());
            for (span, (attributes, events, links, parent, state, (status, start, flags))) in got.iter().zip(&spans) {
                proptest::prop_assert_eq!(&span.parent_span_id, &parent.map(|p| p.to_vec()).unwrap_or_default());
                proptest::prop_assert_eq!(span.trace_state.as_str(), state.as_deref().unwrap_or(""));
                proptest::prop_assert_eq!(span.start_time_unix_nano, *start);
                proptest::prop_assert_eq!(span.flags, u32::from(*flags) | 0x100);
                proptest::prop_assert_eq!(span.status.as_ref().map_or(0, |s| s.code), *status);
                proptest::prop_assert_eq!(span.attributes.len(), attributes.len());
                for (kv, (key, value)) in span.attributes.iter().zip(attributes) {
                    proptest::prop_assert_eq!(kv.key.as_str(), KEYS[*key]);
                    proptest::prop_assert!(same(kv.value.as_ref(), value), "{:?} {:?}", kv, value);
                }
                proptest::prop_assert_eq!(span.events.len(), events.len());
                for (event, (name, attributes)) in span.events.iter().zip(events) {
                    proptest::prop_assert_eq!(&event.name, name);
                    for (kv, (key, value)) in event.attributes.iter().zip(attributes) {
                        proptest::prop_assert_eq!(kv.key.as_str(), KEYS[*key]);
                        proptest::prop_assert!(same(kv.value.as_ref(), value));
                    }
                }
                proptest::prop_assert_eq!(span.links.len(), *links);
            }
        }
    }
}
