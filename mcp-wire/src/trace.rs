//! W3C Trace Context as MCP carries it: `traceparent`, `tracestate` and `baggage` in a
//! request's `_meta` (reserved for OpenTelemetry, SEP-414), and on HTTP as headers of the same
//! names.
//!
//! [`TraceParent::parse`] follows the W3C Trace Context rules for the `traceparent` value:
//! lowercase hex only, a trace id and a parent id that are not all zeros, version `ff`
//! refused, version `00` exactly 55 characters, and a later version at least that long with
//! anything after the flags behind a `-` (so a newer sender is still understood). A value that
//! breaks a rule is ignored, never an error the peer sees: the request is served, as a new
//! trace.
//!
//! `tracestate` and `baggage` are passed on as opaque text, but only beside a valid
//! `traceparent`, and only when they are printable ASCII within [`MAX_TRACESTATE`] and
//! [`MAX_BAGGAGE`] bytes; anything else is dropped, so a peer cannot make a server keep or
//! forward more than that.
//!
//! ```
//! use mcp_wire::trace::{TraceContext, TraceParent};
//! use serde_json::{Map, json};
//!
//! let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")?;
//! assert!(parent.sampled());
//! assert_eq!(parent.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
//!
//! // A request's `_meta`, with the context written into it and read back.
//! let mut meta = Map::new();
//! TraceContext::new(parent).write_meta(&mut meta);
//! assert_eq!(meta["traceparent"], json!(parent.to_string()));
//! assert_eq!(TraceContext::from_meta(&meta).map(|c| c.traceparent), Some(parent));
//! # Ok::<(), mcp_wire::trace::TraceParentError>(())
//! ```

use std::fmt;

use serde_json::{Map, Value};

use crate::names::meta::{BAGGAGE, TRACEPARENT, TRACESTATE};

/// The longest `tracestate` kept, in bytes (W3C: at least 512 characters SHOULD be propagated).
pub const MAX_TRACESTATE: usize = 512;

/// The longest `baggage` kept, in bytes (the W3C Baggage limit for the whole header).
pub const MAX_BAGGAGE: usize = 8192;

/// The length of a version `00` `traceparent`.
const LEN: usize = 55;

/// Why a `traceparent` value was not understood.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceParentError {
    /// Too short, too long for version `00`, or a `-` missing where one belongs.
    #[error("traceparent is not version-traceid-parentid-flags")]
    Shape,
    /// A character that is not lowercase hex where hex belongs.
    #[error("traceparent holds a character that is not lowercase hex")]
    NotHex,
    /// Version `ff`, which the W3C reserves as invalid.
    #[error("traceparent version ff is invalid")]
    Version,
    /// A trace id or parent id of all zeros.
    #[error("traceparent names an all-zero trace id or parent id")]
    Zero,
}

/// A parsed `traceparent`: the trace a request belongs to, the span that sent it, and its
/// flags (bit 0: sampled).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    trace_id: [u8; 16],
    parent_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// The `sampled` bit of the flags.
    pub const SAMPLED: u8 = 0x01;

    /// A context naming `trace_id` and the span `parent_id`, or `None` when either is all
    /// zeros (which the W3C forbids).
    pub fn new(trace_id: [u8; 16], parent_id: [u8; 8], flags: u8) -> Option<Self> {
        (trace_id != [0; 16] && parent_id != [0; 8]).then_some(Self {
            trace_id,
            parent_id,
            flags,
        })
    }

    /// Parses a `traceparent` value by the W3C rules (see the [module docs](self)).
    pub fn parse(text: &str) -> Result<Self, TraceParentError> {
        let bytes = text.as_bytes();
        if bytes.len() < LEN {
            return Err(TraceParentError::Shape);
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return Err(TraceParentError::Shape);
        }
        let mut version = [0u8; 1];
        hex_into(&bytes[0..2], &mut version)?;
        match version[0] {
            0xff => return Err(TraceParentError::Version),
            0x00 if bytes.len() != LEN => return Err(TraceParentError::Shape),
            // A later version may append fields, each behind a `-`.
            _ if bytes.len() > LEN && bytes[LEN] != b'-' => return Err(TraceParentError::Shape),
            _ => {}
        }
        let mut trace_id = [0u8; 16];
        hex_into(&bytes[3..35], &mut trace_id)?;
        let mut parent_id = [0u8; 8];
        hex_into(&bytes[36..52], &mut parent_id)?;
        let mut flags = [0u8; 1];
        hex_into(&bytes[53..55], &mut flags)?;
        Self::new(trace_id, parent_id, flags[0]).ok_or(TraceParentError::Zero)
    }

    /// The trace id.
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The id of the span that sent the request.
    pub fn parent_id(&self) -> [u8; 8] {
        self.parent_id
    }

    /// The parent id as 16 lowercase hex digits.
    pub fn parent_id_hex(&self) -> String {
        hex(&self.parent_id)
    }

    /// The trace flags.
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// Whether the sender recorded its span (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & Self::SAMPLED != 0
    }

    /// The same trace, sent by the span `span_id` (what a request made inside that span
    /// carries), or `None` when `span_id` is all zeros.
    pub fn with_parent(&self, span_id: [u8; 8]) -> Option<Self> {
        Self::new(self.trace_id, span_id, self.flags)
    }
}

impl fmt::Display for TraceParent {
    /// The version `00` form: `00-<trace id>-<parent id>-<flags>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            hex(&self.trace_id),
            hex(&self.parent_id),
            self.flags
        )
    }
}

impl fmt::Debug for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceParent({self})")
    }
}

impl std::str::FromStr for TraceParent {
    type Err = TraceParentError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// The whole context a request carries: its `traceparent`, and the `tracestate` and
/// `baggage` that go with it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceContext {
    /// The trace and the sending span.
    pub traceparent: TraceParent,
    /// Vendor-specific trace state, passed on untouched (at most [`MAX_TRACESTATE`] bytes).
    pub tracestate: Option<String>,
    /// W3C baggage, passed on untouched (at most [`MAX_BAGGAGE`] bytes).
    pub baggage: Option<String>,
}

impl TraceContext {
    /// A context with only a `traceparent`.
    pub fn new(traceparent: TraceParent) -> Self {
        Self {
            traceparent,
            tracestate: None,
            baggage: None,
        }
    }

    /// Reads the context of a request's `_meta`: `None` without a valid `traceparent` string;
    /// a `tracestate` or `baggage` that is not printable ASCII within its limit is dropped.
    pub fn from_meta(meta: &Map<String, Value>) -> Option<Self> {
        Self::from_parts(
            meta.get(TRACEPARENT)?.as_str()?,
            meta.get(TRACESTATE).and_then(Value::as_str),
            meta.get(BAGGAGE).and_then(Value::as_str),
        )
    }

    /// Reads the context of a request's `params` (its `_meta` member), as [`from_meta`]
    /// does.
    ///
    /// [`from_meta`]: Self::from_meta
    pub fn from_params(params: &Map<String, Value>) -> Option<Self> {
        params
            .get("_meta")
            .and_then(Value::as_object)
            .and_then(Self::from_meta)
    }

    /// Builds a context from the three values as text (`_meta` members or HTTP header
    /// values), by the rules of [`from_meta`](Self::from_meta).
    pub fn from_parts(
        traceparent: &str,
        tracestate: Option<&str>,
        baggage: Option<&str>,
    ) -> Option<Self> {
        let traceparent = TraceParent::parse(traceparent).ok()?;
        Some(Self {
            traceparent,
            tracestate: bounded(tracestate, MAX_TRACESTATE),
            baggage: bounded(baggage, MAX_BAGGAGE),
        })
    }

    /// The context of a span known by its ids (what a tracing library holds), with its
    /// `tracestate` header value (kept by the rules of [`from_meta`](Self::from_meta), empty
    /// for none); `None` when either id is all zeros.
    pub fn from_span(
        trace_id: [u8; 16],
        span_id: [u8; 8],
        flags: u8,
        tracestate: &str,
    ) -> Option<Self> {
        Some(Self {
            traceparent: TraceParent::new(trace_id, span_id, flags)?,
            tracestate: bounded(Some(tracestate).filter(|s| !s.is_empty()), MAX_TRACESTATE),
            baggage: None,
        })
    }

    /// Writes the context into a request's `_meta`, replacing what those three keys held
    /// (a `tracestate` or `baggage` this context lacks is removed).
    pub fn write_meta(&self, meta: &mut Map<String, Value>) {
        meta.insert(
            TRACEPARENT.to_owned(),
            Value::String(self.traceparent.to_string()),
        );
        for (key, value) in [(TRACESTATE, &self.tracestate), (BAGGAGE, &self.baggage)] {
            match value {
                Some(text) => {
                    meta.insert(key.to_owned(), Value::String(text.clone()));
                }
                None => {
                    meta.remove(key);
                }
            }
        }
    }

    /// Writes the context into a request's `params`, creating `_meta` when it is missing (a
    /// `_meta` that is not an object is left alone).
    pub fn write_params(&self, params: &mut Map<String, Value>) {
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            self.write_meta(meta);
        }
    }
}

/// `text` when it is printable ASCII (space to `~`) of at most `limit` bytes.
fn bounded(text: Option<&str>, limit: usize) -> Option<String> {
    let text = text?;
    (text.len() <= limit && text.bytes().all(|b| (0x20..0x7f).contains(&b)))
        .then(|| text.to_owned())
}

/// Lowercase hex digits into bytes; `src` is twice as long as `dst`.
fn hex_into(src: &[u8], dst: &mut [u8]) -> Result<(), TraceParentError> {
    fn digit(b: u8) -> Result<u8, TraceParentError> {
        match b {
            b'0'..=b'9' => Ok(b - b'0'),
            b'a'..=b'f' => Ok(b - b'a' + 10),
            _ => Err(TraceParentError::NotHex),
        }
    }
    for (pair, out) in src.chunks_exact(2).zip(dst.iter_mut()) {
        *out = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Ok(())
}

/// Bytes as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn traceparent_values_by_the_w3c_rules() {
        let cases: &[(&str, Result<(), TraceParentError>)] = &[
            (VALID, Ok(())),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
                Ok(()),
            ),
            // A later version: longer is fine behind a `-`, not otherwise.
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-next",
                Ok(()),
            ),
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Ok(()),
            ),
            (
                "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
                Err(TraceParentError::Shape),
            ),
            // Version 00 is exactly 55 characters.
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
                Err(TraceParentError::Shape),
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
                Err(TraceParentError::Shape),
            ),
            ("", Err(TraceParentError::Shape)),
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Err(TraceParentError::Version),
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                Err(TraceParentError::NotHex),
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
                Err(TraceParentError::NotHex),
            ),
            (
                "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Err(TraceParentError::NotHex),
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                Err(TraceParentError::Zero),
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                Err(TraceParentError::Zero),
            ),
            (
                "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Err(TraceParentError::Shape),
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
                Err(TraceParentError::Shape),
            ),
            // Multi-byte UTF-8 where a separator belongs is a shape error, never a panic.
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473é00f067aa0ba902b7-01",
                Err(TraceParentError::Shape),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(TraceParent::parse(text).map(|_| ()), *expected, "{text}");
        }
        let parent = TraceParent::parse(VALID).unwrap();
        assert_eq!(parent.to_string(), VALID);
        assert_eq!(parent.parent_id_hex(), "00f067aa0ba902b7");
        assert!(parent.sampled());
        assert_eq!(parent.flags(), 1);
    }

    #[test]
    fn meta_round_trips_and_drops_what_is_out_of_bounds() {
        let meta = json!({
            "traceparent": VALID,
            "tracestate": "vendor=abc,other=1",
            "baggage": "user=x",
            "progressToken": 3,
        });
        let context = TraceContext::from_meta(meta.as_object().unwrap()).unwrap();
        assert_eq!(context.tracestate.as_deref(), Some("vendor=abc,other=1"));
        assert_eq!(context.baggage.as_deref(), Some("user=x"));
        let mut written = Map::new();
        written.insert("tracestate".into(), json!("stale"));
        context.write_meta(&mut written);
        assert_eq!(TraceContext::from_meta(&written), Some(context.clone()));

        let too_long = "a".repeat(MAX_TRACESTATE + 1);
        let cases = [
            json!({"traceparent": VALID, "tracestate": too_long}),
            json!({"traceparent": VALID, "tracestate": "a\nb", "baggage": 7}),
        ];
        for meta in cases {
            let read = TraceContext::from_meta(meta.as_object().unwrap()).unwrap();
            assert_eq!((read.tracestate, read.baggage), (None, None), "{meta}");
        }
        for meta in [
            json!({}),
            json!({"traceparent": 1}),
            json!({"traceparent": "junk", "tracestate": "a=b"}),
        ] {
            assert_eq!(
                TraceContext::from_meta(meta.as_object().unwrap()),
                None,
                "{meta}"
            );
        }

        // From a span's ids: an empty tracestate is none, an oversized one is dropped.
        let parent = context.traceparent;
        let from_span = |state: &str| {
            TraceContext::from_span(parent.trace_id(), parent.parent_id(), parent.flags(), state)
        };
        assert_eq!(from_span("").unwrap().tracestate, None);
        assert_eq!(from_span("a=1").unwrap().tracestate.as_deref(), Some("a=1"));
        assert_eq!(
            from_span(&"a".repeat(MAX_TRACESTATE + 1))
                .unwrap()
                .tracestate,
            None
        );
        assert_eq!(TraceContext::from_span([0; 16], [1; 8], 1, ""), None);

        // Without a tracestate of its own, writing removes the one `_meta` had.
        let mut params = Map::new();
        TraceContext::new(context.traceparent).write_params(&mut params);
        assert_eq!(params["_meta"], json!({"traceparent": VALID}));
        let mut odd = json!({"_meta": 5}).as_object().unwrap().clone();
        TraceContext::new(context.traceparent).write_params(&mut odd);
        assert_eq!(odd["_meta"], json!(5));
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_what_it_accepts_at_version_00_prints_back(text in ".{0,70}") {
            if let Ok(parent) = TraceParent::parse(&text)
                && text.starts_with("00")
            {
                prop_assert_eq!(parent.to_string(), text);
            }
        }

        #[test]
        fn every_nonzero_context_round_trips(
            trace_id in any::<[u8; 16]>(),
            parent_id in any::<[u8; 8]>(),
            flags in any::<u8>(),
        ) {
            match TraceParent::new(trace_id, parent_id, flags) {
                Some(parent) => prop_assert_eq!(TraceParent::parse(&parent.to_string()), Ok(parent)),
                None => prop_assert!(trace_id == [0; 16] || parent_id == [0; 8]),
            }
        }
    }
}
