//! JSON-RPC 2.0: ids, requests, notifications, responses, the wire error object and batches.
//!
//! Decoding goes from bytes straight to [`Message`] in one pass of serde: the envelope is read
//! member by member and never goes through an intermediate [`Value`]; only `params`, `result` and
//! `error.data` are kept as [`Value`] for the layers above to type. A single request or
//! notification in the usual shape (integer numbers, no other members, no lone surrogates) is
//! read by a direct reader instead, which builds the same [`Message`] with less work; anything
//! else, every error included, is read by serde_json.
//!
//! [`decode`] never fails as a whole. It yields a [`Decoded`]: one outcome for a single message, or
//! one outcome per item for a batch, so that one bad item never aborts its siblings. An outcome is
//! either a [`Message`] or a [`DecodeError`] that already knows its JSON-RPC code, and the id of the
//! offending item when it had a usable one.
//!
//! ```
//! use mcp_wire::jsonrpc::{self, Decoded, Id, Message};
//!
//! let decoded = jsonrpc::decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
//! let Decoded::Single(Ok(Message::Request(request))) = decoded else { panic!() };
//! assert_eq!(request.id, Id::Number(1));
//! assert_eq!(request.method, "ping");
//!
//! // One bad item in a batch does not hide the good one, and keeps its id.
//! let decoded = jsonrpc::decode(br#"[{"jsonrpc":"1.0","id":"a","method":"x"},
//!                                    {"jsonrpc":"2.0","method":"notifications/initialized"}]"#);
//! let Decoded::Batch(items) = decoded else { panic!() };
//! assert_eq!(items[0].as_ref().unwrap_err().id(), Some(&Id::from("a")));
//! assert!(matches!(items[1], Ok(Message::Notification(_))));
//! ```
//!
//! Two readers answer one question each without decoding a whole message: [`peek_method`] (the
//! `method` of a message, to route or schedule it) and [`read_success_as`] (the result of a
//! success response, read straight into the caller's type).
//!
//! # Ids
//!
//! An [`Id`] is a string or an integer that fits in `i64`. `null`, booleans, fractional numbers,
//! structured values and integers outside the `i64` range are rejected: the message becomes an
//! invalid request (-32600) without a usable id. Large integers are never truncated or rounded.
//!
//! # Leniency
//!
//! Members other than `jsonrpc`, `id`, `method`, `params`, `result` and `error` are ignored.
//! `"params": null` is read as absent `params`. An error response may have no `id` or a `null` id
//! (both decode to `id: None`, and `None` is written back as `"id": null`).
//! A `data` member of `null` in an error object reads as absent.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::names::error_code;

mod peek;

pub use peek::peek_method;

/// The only JSON-RPC version accepted and written: `"2.0"`.
pub const VERSION: &str = "2.0";

/// A JSON-RPC request id (also the shape of MCP progress tokens and subscription ids).
///
/// Integers are kept as `i64`; see the module docs for what is rejected.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl Id {
    /// The id as a string slice, if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            Self::Number(_) => None,
        }
    }

    /// The id as an integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Number(n) => Some(*n),
            Self::String(_) => None,
        }
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Self::Number(n)
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl fmt::Display for Id {
    /// Integers print as digits, strings as themselves (unquoted).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => f.write_str(s),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(n) => serializer.serialize_i64(*n),
            Self::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match deserializer.deserialize_any(IdSlotVisitor)? {
            IdSlot::Valid(id) => Ok(id),
            IdSlot::Null => Err(de::Error::custom("a JSON-RPC id must not be null")),
            IdSlot::Absent | IdSlot::Invalid => Err(de::Error::custom(
                "a JSON-RPC id must be a string or an integer within the i64 range",
            )),
        }
    }
}

/// The JSON-RPC error object `{code, message, data?}` as it travels on the wire.
///
/// This is plain data, not a Rust error type: a handler failure is turned into one of these by
/// the layer that owns the failure, never the other way round. `D` types the `data` member;
/// it defaults to [`Value`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(serialize = "D: Serialize", deserialize = "D: Deserialize<'de>"))]
pub struct ErrorObject<D = Value> {
    /// The error code, for example [`error_code::METHOD_NOT_FOUND`].
    pub code: i64,
    /// A short description, ideally one sentence.
    pub message: String,
    /// Extra information defined by the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<D>,
}

impl<D> ErrorObject<D> {
    /// An error object with no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Sets `data`.
    #[must_use]
    pub fn with_data(mut self, data: D) -> Self {
        self.data = Some(data);
        self
    }
}

impl<D: Serialize> ErrorObject<D> {
    /// The same error with `data` turned into JSON, for a [`Response`].
    pub fn into_untyped(self) -> Result<ErrorObject, serde_json::Error> {
        let data = self.data.map(serde_json::to_value).transpose()?;
        Ok(ErrorObject {
            code: self.code,
            message: self.message,
            data,
        })
    }
}

impl ErrorObject {
    /// -32700, the body is not JSON.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(error_code::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// -32600, JSON but not a valid JSON-RPC message.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(
            error_code::INVALID_REQUEST,
            format!("Invalid request: {detail}"),
        )
    }

    /// -32601 for `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            error_code::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// -32602 with `message`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(error_code::INVALID_PARAMS, message)
    }

    /// -32603 with `message`.
    pub fn internal_error(message: impl Into<String>) -> Self {
        Self::new(error_code::INTERNAL_ERROR, message)
    }

    /// `data` read as `D`, if there is any.
    pub fn data_as<D: de::DeserializeOwned>(&self) -> Option<Result<D, serde_json::Error>> {
        self.data.as_ref().map(D::deserialize)
    }
}

impl<D> fmt::Display for ErrorObject<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// A request: a method call that expects a [`Response`] with the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response must echo.
    pub id: Id,
    /// The method name, for example [`names::method::TOOLS_CALL`](crate::names::method::TOOLS_CALL).
    /// The decoders borrow the spec's names ([`names::method::known`](crate::names::method::known))
    /// and own only the others.
    pub method: Cow<'static, str>,
    /// `params`: an object (MCP) or an array (plain JSON-RPC), if present.
    pub params: Option<Value>,
}

/// A notification: a method call without an id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name (borrowed from [`names::method`](crate::names::method) when it is one of
    /// the spec's, as for [`Request::method`]).
    pub method: Cow<'static, str>,
    /// `params`: an object (MCP) or an array (plain JSON-RPC), if present.
    pub params: Option<Value>,
}

/// A method name read from a message: the spec's constant when it is one, else the text.
pub fn method_name(name: &str) -> Cow<'static, str> {
    match crate::names::method::known(name) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(name.to_owned()),
    }
}

/// [`method_name`] for a name already owned: kept as it is unless it is one of the spec's.
fn owned_method_name(name: String) -> Cow<'static, str> {
    match crate::names::method::known(&name) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(name),
    }
}

/// A response: the `result` of a request, or its `error`.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered. `None` only for an error about a message whose id could not
    /// be read; written as `"id": null`.
    pub id: Option<Id>,
    /// `Ok(result)` or `Err(error)`.
    pub outcome: Result<Value, ErrorObject>,
}

impl Response {
    /// A successful response.
    pub fn success(id: Id, result: Value) -> Self {
        Self {
            id: Some(id),
            outcome: Ok(result),
        }
    }

    /// An error response. Pass `None` only when the request's id is unknown.
    pub fn error(id: Option<Id>, error: ErrorObject) -> Self {
        Self {
            id,
            outcome: Err(error),
        }
    }
}

/// Any single JSON-RPC message.
///
/// Complete by definition: JSON-RPC 2.0 has exactly these three kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request (has `method` and `id`).
    Request(Request),
    /// A notification (has `method`, no `id`).
    Notification(Notification),
    /// A response (has `result` or `error`).
    Response(Response),
}

impl Message {
    /// The method name of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::Request(r) => Some(&r.method),
            Self::Notification(n) => Some(&n.method),
            Self::Response(_) => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&Id> {
        match self {
            Self::Request(r) => Some(&r.id),
            Self::Notification(_) => None,
            Self::Response(r) => r.id.as_ref(),
        }
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Self::Request(r)
    }
}

impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Self::Notification(n)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Self::Response(r)
    }
}

/// Why a JSON value is not a valid JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidReason {
    /// The message (or batch item) is not a JSON object.
    NotAnObject,
    /// The body is an empty array.
    EmptyBatch,
    /// The batch has more items than [`DecodeOptions::max_batch_len`].
    BatchTooLarge {
        /// The limit in force.
        limit: usize,
    },
    /// `jsonrpc` is missing or is not exactly `"2.0"`.
    BadVersion,
    /// `id` is null, a boolean, a fractional number, an integer outside `i64`, or structured.
    BadId,
    /// `method` is not a string.
    MethodNotString,
    /// `params` is neither an object nor an array.
    BadParams,
    /// `method` appears together with `result` or `error`.
    MethodWithResponseMember,
    /// Both `result` and `error` are present.
    ResultAndError,
    /// None of `method`, `result` or `error` is present.
    NoMethodOrResponseMember,
    /// `error` is not an object with an integer `code` and a string `message`.
    BadErrorObject,
    /// A `result` response has no id, or a `null` one.
    ResultWithoutId,
    /// A member appears twice.
    DuplicateMember(&'static str),
}

impl fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnObject => f.write_str("a JSON-RPC message must be a JSON object"),
            Self::EmptyBatch => f.write_str("a batch must not be empty"),
            Self::BatchTooLarge { limit } => write!(f, "a batch must have at most {limit} items"),
            Self::BadVersion => f.write_str(r#""jsonrpc" must be exactly "2.0""#),
            Self::BadId => {
                f.write_str(r#""id" must be a string or an integer within the i64 range"#)
            }
            Self::MethodNotString => f.write_str(r#""method" must be a string"#),
            Self::BadParams => f.write_str(r#""params" must be an object or an array"#),
            Self::MethodWithResponseMember => {
                f.write_str(r#""method" must not appear with "result" or "error""#)
            }
            Self::ResultAndError => f.write_str(r#""result" and "error" must not both appear"#),
            Self::NoMethodOrResponseMember => {
                f.write_str(r#"one of "method", "result" or "error" is required"#)
            }
            Self::BadErrorObject => f.write_str(
                r#""error" must be an object with an integer "code" and a string "message""#,
            ),
            Self::ResultWithoutId => f.write_str(r#"a "result" response needs a non-null "id""#),
            Self::DuplicateMember(name) => write!(f, "member {name:?} appears more than once"),
        }
    }
}

/// Why bytes did not decode to a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The body is not JSON at all (-32700). Never produced for a single batch item: a batch that
    /// is not valid JSON is one parse error.
    #[error("parse error: {detail}")]
    Parse {
        /// What the JSON parser reported (position included).
        detail: String,
    },
    /// JSON, but not a valid JSON-RPC message (-32600).
    #[error("invalid request: {reason}")]
    Invalid {
        /// The item's id, when it had a usable one, so the error response can echo it.
        id: Option<Id>,
        /// What is wrong.
        reason: InvalidReason,
    },
}

impl DecodeError {
    /// The JSON-RPC error code: -32700 or -32600.
    pub fn code(&self) -> i64 {
        match self {
            Self::Parse { .. } => error_code::PARSE_ERROR,
            Self::Invalid { .. } => error_code::INVALID_REQUEST,
        }
    }

    /// The id to echo in the error response, if the offending message had a usable one.
    pub fn id(&self) -> Option<&Id> {
        match self {
            Self::Parse { .. } => None,
            Self::Invalid { id, .. } => id.as_ref(),
        }
    }

    /// The wire error object for this failure.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            Self::Parse { detail } => ErrorObject::parse_error(detail),
            Self::Invalid { reason, .. } => ErrorObject::invalid_request(reason),
        }
    }

    /// The error response to send back: the error object, with the id when one was usable.
    pub fn to_response(&self) -> Response {
        Response::error(self.id().cloned(), self.to_error_object())
    }
}

/// The outcome of decoding one message or one batch item.
pub type Outcome = Result<Message, DecodeError>;

/// What [`decode`] found in a body.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// The body was one message (or was not a batch: a parse error, a scalar, an empty array).
    Single(Outcome),
    /// The body was a non-empty array: one outcome per item, in order.
    Batch(Vec<Outcome>),
}

/// Limits applied by [`decode_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeOptions {
    /// The most items a batch may have. A longer batch is still read to its end (so a syntax error
    /// anywhere is a parse error), but yields a single -32600 and no items.
    ///
    /// Default is `256`.
    pub max_batch_len: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self { max_batch_len: 256 }
    }
}

impl DecodeOptions {
    /// Sets [`max_batch_len`](Self::max_batch_len). Default is `256`.
    #[must_use]
    pub fn max_batch_len(mut self, limit: usize) -> Self {
        self.max_batch_len = limit;
        self
    }
}

/// Decodes a body with the default [`DecodeOptions`].
///
/// Whether a batch is allowed at all depends on the protocol revision (only 2025-03-26 has them);
/// that check belongs to the caller.
pub fn decode(bytes: &[u8]) -> Decoded {
    decode_with(bytes, DecodeOptions::default())
}

/// Decodes a body: a single message or a batch.
///
/// Nesting deeper than serde_json's recursion limit (128) is a parse error.
pub fn decode_with(bytes: &[u8], options: DecodeOptions) -> Decoded {
    // A body that is valid UTF-8 (nearly every body) is checked once here, so serde_json does not
    // check each string it reads again; any other body is read as bytes, which reports the same
    // errors as before.
    // A well-formed single request or notification in the usual shape (no lone surrogates, integer
    // numbers) is read by a direct reader; anything else goes through serde_json, which gives
    // the same outcome for such bodies and reports every error.
    match std::str::from_utf8(bytes) {
        Ok(text) => match Direct::new(text).message() {
            Some(message) => Decoded::Single(Ok(message)),
            None => decode_from(serde_json::Deserializer::from_str(text), options),
        },
        Err(_) => decode_from(serde_json::Deserializer::from_slice(bytes), options),
    }
}

/// How deep [`Direct`] reads nested `params` before leaving the body to serde_json (well below
/// serde_json's recursion limit of 128, so no limit is ever reached here that serde_json would
/// report).
const DIRECT_DEPTH: usize = 64;

/// Non-zero when one of the eight bytes of `word` is a quote, a backslash or below `0x20` (the lowest
/// flagged byte is always such a byte; bytes above it may be flagged wrongly).
fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let quote = has_zero(word ^ (ONES * u64::from(b'"')));
    let backslash = has_zero(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control
}

/// The index of the first quote, backslash or control character in `bytes` from `from` on
/// (or the length), eight bytes at a time: the lowest byte [`special_bytes`] flags in a word
/// is the first special one (a false flag only ever sits above a true one), so a word that
/// has one gives its index at once; only the last bytes of the text, fewer than eight, are
/// read one by one.
fn plain_run(bytes: &[u8], from: usize) -> usize {
    let mut end = from;
    while let Some(chunk) = bytes.get(end..end + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let flags = special_bytes(u64::from_le_bytes(word));
        if flags != 0 {
            return end + (flags.trailing_zeros() / 8) as usize;
        }
        end += 8;
    }
    while let Some(&b) = bytes.get(end) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            break;
        }
        end += 1;
    }
    end
}

/// Decodes the escape whose letter is at `at` (just after the backslash) onto `out`; the index
/// after it. `None` for what serde_json refuses: an unknown escape, bad hex, a lone surrogate.
fn escape(bytes: &[u8], at: usize, out: &mut String) -> Option<usize> {
    let c = match *bytes.get(at)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(bytes.get(at + 1..at + 5)?)?;
            let (c, next) = match high {
                0xD800..=0xDBFF => {
                    if bytes.get(at + 5..at + 7)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(bytes.get(at + 7..at + 11)?)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return None;
                    }
                    let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?;
                    (c, at + 11)
                }
                _ => (char::from_u32(high)?, at + 5),
            };
            out.push(c);
            return Some(next);
        }
        _ => return None,
    };
    out.push(c);
    Some(at + 1)
}

/// Four hex digits (either case).
fn hex4(digits: &[u8]) -> Option<u32> {
    digits
        .iter()
        .try_fold(0, |n, &d| char::from(d).to_digit(16).map(|d| (n << 4) | d))
}

/// A reader for the common case of [`decode_with`]: one object with `"jsonrpc":"2.0"`, a
/// `method`, an optional string or `i64` `id`, optional object or array `params`, and nothing
/// else, where no string has a control character or a lone surrogate, the member names of the
/// envelope and its version have no escapes, and every number is an integer within `i64` or
/// `u64`. It builds exactly the [`Message`] serde_json's reading would (the same
/// `Value`s: integers as serde_json reads them, later duplicate keys in `params` objects
/// replacing earlier ones). Every method yields `None` as soon as the body leaves that case;
/// the body is then read again by serde_json, which reports what is wrong.
struct Direct<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Direct<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }

    fn byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    /// Skips JSON whitespace; the next byte.
    fn peek(&mut self) -> Option<u8> {
        while let Some(b) = self.byte() {
            if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// Skips whitespace and `expected`.
    fn eat(&mut self, expected: u8) -> Option<()> {
        (self.peek()? == expected).then(|| self.pos += 1)
    }

    /// After whitespace, a string without escapes or control characters.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.pos;
        let end = plain_run(self.text.as_bytes(), start);
        if self.text.as_bytes().get(end) != Some(&b'"') {
            return None;
        }
        self.pos = end + 1;
        self.text.get(start..end)
    }

    /// After whitespace, a string without control characters, its escapes decoded. A lone
    /// surrogate, or anything else serde_json refuses, is left to serde_json.
    fn owned_string(&mut self) -> Option<String> {
        self.decoded_string().map(Cow::into_owned)
    }

    /// A method name: the spec's constant when it is one (no allocation), else an owned copy.
    fn method(&mut self) -> Option<Cow<'static, str>> {
        Some(match self.decoded_string()? {
            Cow::Borrowed(plain) => method_name(plain),
            Cow::Owned(unescaped) => owned_method_name(unescaped),
        })
    }

    /// [`owned_string`](Self::owned_string) before the copy: borrowed from the text when the
    /// string has no escape, decoded otherwise.
    fn decoded_string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let end = plain_run(bytes, start);
        if *bytes.get(end)? == b'"' {
            self.pos = end + 1;
            return self.text.get(start..end).map(Cow::Borrowed);
        }
        self.unescape(start, end).map(Cow::Owned)
    }

    /// The rest of [`owned_string`](Self::owned_string) from the first escape (or control
    /// character) at `end`; kept apart so that plain strings take a short path.
    #[cold]
    #[inline(never)]
    fn unescape(&mut self, start: usize, mut end: usize) -> Option<String> {
        let bytes = self.text.as_bytes();
        let mut out = String::with_capacity(end - start + 16);
        out.push_str(self.text.get(start..end)?);
        loop {
            match *bytes.get(end)? {
                b'"' => break,
                b'\\' => end = escape(bytes, end + 1, &mut out)?,
                _ => return None,
            }
            let run = plain_run(bytes, end);
            out.push_str(self.text.get(end..run)?);
            end = run;
        }
        self.pos = end + 1;
        Some(out)
    }

    /// An integer, at its first byte: what serde_json reads as `u64` (non-negative) or `i64`
    /// (negative). `-0`, fractions, exponents and integers outside both ranges are left to
    /// serde_json (which reads them as `f64`).
    fn integer(&mut self) -> Option<Value> {
        let negative = self.byte() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let start = self.pos;
        let mut magnitude: u64 = 0;
        while let Some(b) = self.byte().filter(u8::is_ascii_digit) {
            magnitude = magnitude
                .checked_mul(10)?
                .checked_add(u64::from(b - b'0'))?;
            self.pos += 1;
        }
        let digits = self.pos - start;
        if digits == 0
            || (digits > 1 && self.text.as_bytes()[start] == b'0')
            || matches!(self.byte(), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        if !negative {
            return Some(Value::from(magnitude));
        }
        match magnitude {
            0 => None,
            m if m == 1 << 63 => Some(Value::from(i64::MIN)),
            m => i64::try_from(m).ok().map(|m| Value::from(-m)),
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Option<Value> {
        let rest = self.text.get(self.pos..)?;
        rest.starts_with(word).then(|| {
            self.pos += word.len();
            value
        })
    }

    /// Any value, `depth` levels of nesting left.
    fn value(&mut self, depth: usize) -> Option<Value> {
        match self.peek()? {
            b'"' => self.owned_string().map(Value::String),
            b'{' => {
                let depth = depth.checked_sub(1)?;
                self.pos += 1;
                let mut map = serde_json::Map::new();
                if self.peek()? == b'}' {
                    self.pos += 1;
                    return Some(Value::Object(map));
                }
                loop {
                    let key = self.owned_string()?;
                    self.eat(b':')?;
                    let value = self.value(depth)?;
                    map.insert(key, value);
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b'}' => break,
                        _ => return None,
                    }
                }
                self.pos += 1;
                Some(Value::Object(map))
            }
            b'[' => {
                let depth = depth.checked_sub(1)?;
                self.pos += 1;
                let mut items = Vec::new();
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Some(Value::Array(items));
                }
                loop {
                    items.push(self.value(depth)?);
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b']' => break,
                        _ => return None,
                    }
                }
                self.pos += 1;
                Some(Value::Array(items))
            }
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Null),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    /// The whole body as one request or notification.
    fn message(&mut self) -> Option<Message> {
        self.eat(b'{')?;
        let mut version = false;
        let mut id = None;
        let mut method = None;
        let mut params = None;
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            match key {
                "jsonrpc" if !version => {
                    if self.string()? != VERSION {
                        return None;
                    }
                    version = true;
                }
                "id" if id.is_none() => {
                    id = Some(if self.peek()? == b'"' {
                        Id::String(self.owned_string()?)
                    } else {
                        Id::Number(self.integer()?.as_i64()?)
                    });
                }
                "method" if method.is_none() => method = Some(self.method()?),
                "params" if params.is_none() => {
                    if !matches!(self.peek()?, b'{' | b'[') {
                        return None;
                    }
                    params = Some(self.value(DIRECT_DEPTH)?);
                }
                _ => return None,
            }
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => break,
                _ => return None,
            }
        }
        self.pos += 1;
        if self.peek().is_some() || !version {
            return None;
        }
        let method = method?;
        Some(match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        })
    }
}

/// Decodes a body with the default [`DecodeOptions`] through serde_json alone, without the direct
/// reader: the reading [`decode`] must always agree with. Only for the differential fuzz target
/// (feature `fuzzing`, off by default).
#[cfg(feature = "fuzzing")]
pub fn decode_by_serde(bytes: &[u8]) -> Decoded {
    decode_from(
        serde_json::Deserializer::from_slice(bytes),
        DecodeOptions::default(),
    )
}

fn decode_from<'de, R: serde_json::de::Read<'de>>(
    mut deserializer: serde_json::Deserializer<R>,
    options: DecodeOptions,
) -> Decoded {
    let decoded = deserializer
        .deserialize_any(TopVisitor { options })
        .and_then(|decoded| deserializer.end().map(|()| decoded));
    // The visitors accept every well-formed JSON value, so any error is a JSON syntax error.
    decoded.unwrap_or_else(|e| {
        Decoded::Single(Err(DecodeError::Parse {
            detail: e.to_string(),
        }))
    })
}

/// The result of `body` read straight into `T`, when `body` is a success response to `id`
/// and nothing else: one object with exactly the members `jsonrpc` (`"2.0"`), `id` (equal to
/// `id`, read as [`Id`] reads) and `result`, which deserializes as `T`.
///
/// `None` means "not read here", not "invalid": an error response, another id, a batch, a
/// member [`decode`] would ignore, a duplicate member, an escape in `"2.0"`, or a result that
/// does not fit `T`. Decode such a body as usual. A client that expects a typed result can
/// try this first and skip the [`Value`] in between.
///
/// ```
/// use mcp_wire::jsonrpc::{Id, read_success_as};
///
/// #[derive(serde::Deserialize, Debug, PartialEq)]
/// struct Sum {
///     sum: i64,
/// }
///
/// let body = r#"{"jsonrpc":"2.0","id":7,"result":{"sum":5}}"#;
/// assert_eq!(read_success_as::<Sum>(&Id::Number(7), body), Some(Sum { sum: 5 }));
/// // Another id, or an error: not read here.
/// assert_eq!(read_success_as::<Sum>(&Id::Number(8), body), None);
/// let error = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}"#;
/// assert_eq!(read_success_as::<Sum>(&Id::Number(7), error), None);
/// ```
pub fn read_success_as<T: de::DeserializeOwned>(id: &Id, body: &str) -> Option<T> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Envelope<'a, T> {
        #[serde(borrow)]
        jsonrpc: &'a str,
        id: Id,
        result: T,
    }
    // An object only: a derived struct would also read an array of the three values.
    if !body
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return None;
    }
    // From text: the strings in it are not checked as UTF-8 one by one again.
    let envelope: Envelope<'_, T> = serde_json::from_str(body).ok()?;
    (envelope.jsonrpc == VERSION && envelope.id == *id).then_some(envelope.result)
}

/// Serializes one message to bytes.
pub fn encode(message: &Message) -> Vec<u8> {
    // Cannot fail: the writer is a Vec, every map key is a string, and `Value` holds no NaN.
    serde_json::to_vec(message).unwrap_or_default()
}

/// Serializes a batch (a JSON array of messages) to bytes.
pub fn encode_batch(messages: &[Message]) -> Vec<u8> {
    // Cannot fail, as in `encode`.
    serde_json::to_vec(messages).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Serialization: `"jsonrpc":"2.0"` first, then the members in the usual order.

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 3 + usize::from(self.params.is_some());
        let mut s = serializer.serialize_struct("Request", len)?;
        s.serialize_field("jsonrpc", VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("method", &self.method)?;
        if let Some(params) = &self.params {
            s.serialize_field("params", params)?;
        }
        s.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 2 + usize::from(self.params.is_some());
        let mut s = serializer.serialize_struct("Notification", len)?;
        s.serialize_field("jsonrpc", VERSION)?;
        s.serialize_field("method", &self.method)?;
        if let Some(params) = &self.params {
            s.serialize_field("params", params)?;
        }
        s.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Response", 3)?;
        s.serialize_field("jsonrpc", VERSION)?;
        s.serialize_field("id", &self.id)?;
        match &self.outcome {
            Ok(result) => s.serialize_field("result", result)?,
            Err(error) => s.serialize_field("error", error)?,
        }
        s.end()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Request(r) => r.serialize(serializer),
            Self::Notification(n) => n.serialize(serializer),
            Self::Response(r) => r.serialize(serializer),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Strict deserialization for typed use (`serde_json::from_value::<Message>`): the same envelope
// reader as `decode`, with an invalid message turned into a serde error.

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(ItemVisitor)?
            .map_err(de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Message::deserialize(deserializer)? {
            Message::Request(r) => Ok(r),
            _ => Err(de::Error::custom("expected a JSON-RPC request")),
        }
    }
}

impl<'de> Deserialize<'de> for Notification {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Message::deserialize(deserializer)? {
            Message::Notification(n) => Ok(n),
            _ => Err(de::Error::custom("expected a JSON-RPC notification")),
        }
    }
}

impl<'de> Deserialize<'de> for Response {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Message::deserialize(deserializer)? {
            Message::Response(r) => Ok(r),
            _ => Err(de::Error::custom("expected a JSON-RPC response")),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The lenient envelope reader. Every visitor here accepts any well-formed JSON value, so the only
// errors serde_json can report while using them are syntax errors.

struct TopVisitor {
    options: DecodeOptions,
}

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Decoded;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Decoded, A::Error> {
        read_envelope(map).map(Decoded::Single)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Decoded, A::Error> {
        let limit = self.options.max_batch_len;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(limit));
        while let Some(item) = seq.next_element_seed(ItemSeed)? {
            if items.len() == limit {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(invalid_single(InvalidReason::BatchTooLarge { limit }));
            }
            items.push(item);
        }
        if items.is_empty() {
            return Ok(invalid_single(InvalidReason::EmptyBatch));
        }
        Ok(Decoded::Batch(items))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Decoded, E> {
        Ok(invalid_single(InvalidReason::NotAnObject))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Decoded, E> {
        Ok(invalid_single(InvalidReason::NotAnObject))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Decoded, E> {
        Ok(invalid_single(InvalidReason::NotAnObject))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Decoded, E> {
        Ok(invalid_single(InvalidReason::NotAnObject))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Decoded, E> {
        Ok(invalid_single(InvalidReason::NotAnObject))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Decoded, E> {
        Ok(invalid_single(InvalidReason::NotAnObject))
    }
}

fn invalid_single(reason: InvalidReason) -> Decoded {
    Decoded::Single(Err(DecodeError::Invalid { id: None, reason }))
}

fn invalid(reason: InvalidReason) -> Outcome {
    Err(DecodeError::Invalid { id: None, reason })
}

struct ItemSeed;

impl<'de> DeserializeSeed<'de> for ItemSeed {
    type Value = Outcome;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Outcome, D::Error> {
        deserializer.deserialize_any(ItemVisitor)
    }
}

struct ItemVisitor;

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = Outcome;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Outcome, A::Error> {
        read_envelope(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Outcome, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(invalid(InvalidReason::NotAnObject))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Outcome, E> {
        Ok(invalid(InvalidReason::NotAnObject))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Outcome, E> {
        Ok(invalid(InvalidReason::NotAnObject))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Outcome, E> {
        Ok(invalid(InvalidReason::NotAnObject))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Outcome, E> {
        Ok(invalid(InvalidReason::NotAnObject))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Outcome, E> {
        Ok(invalid(InvalidReason::NotAnObject))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Outcome, E> {
        Ok(invalid(InvalidReason::NotAnObject))
    }
}

/// The envelope members, read without allocating.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MemberVisitor;

        impl Visitor<'_> for MemberVisitor {
            type Value = Member;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Member, E> {
                Ok(match name {
                    "jsonrpc" => Member::Jsonrpc,
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    "result" => Member::Result,
                    "error" => Member::Error,
                    _ => Member::Other,
                })
            }
        }

        deserializer.deserialize_identifier(MemberVisitor)
    }
}

/// What the `id` member held.
enum IdSlot {
    Absent,
    Null,
    Valid(Id),
    Invalid,
}

struct IdSlotSeed;

impl<'de> DeserializeSeed<'de> for IdSlotSeed {
    type Value = IdSlot;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<IdSlot, D::Error> {
        deserializer.deserialize_any(IdSlotVisitor)
    }
}

struct IdSlotVisitor;

impl<'de> Visitor<'de> for IdSlotVisitor {
    type Value = IdSlot;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or an integer")
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<IdSlot, E> {
        Ok(IdSlot::Valid(Id::Number(n)))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<IdSlot, E> {
        Ok(i64::try_from(n).map_or(IdSlot::Invalid, |n| IdSlot::Valid(Id::Number(n))))
    }

    fn visit_i128<E: de::Error>(self, n: i128) -> Result<IdSlot, E> {
        Ok(i64::try_from(n).map_or(IdSlot::Invalid, |n| IdSlot::Valid(Id::Number(n))))
    }

    fn visit_u128<E: de::Error>(self, n: u128) -> Result<IdSlot, E> {
        Ok(i64::try_from(n).map_or(IdSlot::Invalid, |n| IdSlot::Valid(Id::Number(n))))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<IdSlot, E> {
        // Fractional numbers, and integers too large for u64 (serde_json reads those as f64).
        Ok(IdSlot::Invalid)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<IdSlot, E> {
        Ok(IdSlot::Invalid)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<IdSlot, E> {
        Ok(IdSlot::Valid(Id::String(s.to_owned())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<IdSlot, E> {
        Ok(IdSlot::Valid(Id::String(s)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<IdSlot, E> {
        Ok(IdSlot::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<IdSlot, E> {
        Ok(IdSlot::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<IdSlot, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IdSlot, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(IdSlot::Invalid)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IdSlot, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(IdSlot::Invalid)
    }
}

/// Reads any value; yields whether it was exactly the string `"2.0"`, without allocating.
struct VersionSeed;

impl<'de> DeserializeSeed<'de> for VersionSeed {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(VersionVisitor)
    }
}

struct VersionVisitor;

impl<'de> Visitor<'de> for VersionVisitor {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
        Ok(s == VERSION)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

/// Reads any value; yields the string if it was one.
struct StringSeed;

impl<'de> DeserializeSeed<'de> for StringSeed {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(StringVisitor)
    }
}

struct StringVisitor;

impl<'de> Visitor<'de> for StringVisitor {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Some(s))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

fn read_envelope<'de, A: MapAccess<'de>>(mut map: A) -> Result<Outcome, A::Error> {
    // `Some(true)` when `jsonrpc` is exactly `"2.0"`.
    let mut version: Option<bool> = None;
    let mut id = IdSlot::Absent;
    let mut seen_id = false;
    let mut method: Option<Option<String>> = None;
    let mut params: Option<Value> = None;
    let mut seen_params = false;
    let mut result: Option<Value> = None;
    let mut error: Option<Value> = None;
    let mut duplicate: Option<&'static str> = None;

    while let Some(member) = map.next_key::<Member>()? {
        match member {
            Member::Jsonrpc => {
                let value = map.next_value_seed(VersionSeed)?;
                if version.is_some() {
                    duplicate.get_or_insert("jsonrpc");
                } else {
                    version = Some(value);
                }
            }
            Member::Id => {
                let slot = map.next_value_seed(IdSlotSeed)?;
                if seen_id {
                    duplicate.get_or_insert("id");
                } else {
                    seen_id = true;
                    id = slot;
                }
            }
            Member::Method => {
                let value = map.next_value_seed(StringSeed)?;
                if method.is_some() {
                    duplicate.get_or_insert("method");
                } else {
                    method = Some(value);
                }
            }
            Member::Params => {
                let value: Value = map.next_value()?;
                if seen_params {
                    duplicate.get_or_insert("params");
                } else {
                    seen_params = true;
                    // `"params": null` reads as absent.
                    params = (!value.is_null()).then_some(value);
                }
            }
            Member::Result => {
                let value: Value = map.next_value()?;
                if result.is_some() {
                    duplicate.get_or_insert("result");
                } else {
                    result = Some(value);
                }
            }
            Member::Error => {
                let value: Value = map.next_value()?;
                if error.is_some() {
                    duplicate.get_or_insert("error");
                } else {
                    error = Some(value);
                }
            }
            Member::Other => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }

    let id_is_null = matches!(id, IdSlot::Null);
    let id_is_invalid = matches!(id, IdSlot::Invalid);
    let usable_id = match id {
        IdSlot::Valid(id) => Some(id),
        IdSlot::Absent | IdSlot::Null | IdSlot::Invalid => None,
    };
    let fail = |id: Option<Id>, reason| Ok(Err(DecodeError::Invalid { id, reason }));

    if let Some(name) = duplicate {
        return fail(usable_id, InvalidReason::DuplicateMember(name));
    }
    if version != Some(true) {
        return fail(usable_id, InvalidReason::BadVersion);
    }
    if let Some(method) = method {
        if result.is_some() || error.is_some() {
            return fail(usable_id, InvalidReason::MethodWithResponseMember);
        }
        let Some(method) = method else {
            return fail(usable_id, InvalidReason::MethodNotString);
        };
        if params
            .as_ref()
            .is_some_and(|p| !p.is_object() && !p.is_array())
        {
            return fail(usable_id, InvalidReason::BadParams);
        }
        if id_is_null || id_is_invalid {
            return fail(None, InvalidReason::BadId);
        }
        let method = owned_method_name(method);
        return Ok(Ok(match usable_id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        }));
    }
    match (result, error) {
        (Some(_), Some(_)) => fail(usable_id, InvalidReason::ResultAndError),
        (Some(result), None) => match usable_id {
            Some(id) => Ok(Ok(Message::Response(Response::success(id, result)))),
            None if id_is_invalid => fail(None, InvalidReason::BadId),
            None => fail(None, InvalidReason::ResultWithoutId),
        },
        (None, Some(error)) => {
            if id_is_invalid {
                return fail(None, InvalidReason::BadId);
            }
            match ErrorObject::deserialize(error) {
                Ok(error) => Ok(Ok(Message::Response(Response::error(usable_id, error)))),
                Err(_) => fail(usable_id, InvalidReason::BadErrorObject),
            }
        }
        (None, None) => fail(usable_id, InvalidReason::NoMethodOrResponseMember),
    }
}

/// A batch of messages, serialized as a JSON array.
///
/// [`decode`] reports batches item by item ([`Decoded::Batch`]); this type is for sending one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch(pub Vec<Message>);

impl Serialize for Batch {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for message in &self.0 {
            seq.serialize_element(message)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn single(body: &str) -> Outcome {
        match decode(body.as_bytes()) {
            Decoded::Single(outcome) => outcome,
            Decoded::Batch(items) => panic!("expected a single outcome, got a batch: {items:?}"),
        }
    }

    fn invalid_reason(body: &str) -> (Option<Id>, InvalidReason) {
        match single(body) {
            Err(DecodeError::Invalid { id, reason }) => (id, reason),
            other => panic!("expected an invalid request for {body}, got {other:?}"),
        }
    }

    #[test]
    fn the_spec_method_names_are_borrowed_not_copied() {
        // The direct reader, its escape path and the general reader (an unknown member).
        for (body, name, borrowed) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
                "tools/call",
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#,
                "tools/call",
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","x":0}"#,
                "tools/call",
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "notifications/initialized",
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/calls"}"#,
                "tools/calls",
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x\u0041"}"#,
                "xA",
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"vendor/x","x":0}"#,
                "vendor/x",
                false,
            ),
        ] {
            let method = match single(body) {
                Ok(Message::Request(r)) => r.method,
                Ok(Message::Notification(n)) => n.method,
                other => panic!("{body}: {other:?}"),
            };
            assert_eq!(method, name, "{body}");
            assert_eq!(matches!(method, Cow::Borrowed(_)), borrowed, "{body}");
        }
    }

    #[test]
    fn parse_error_versus_invalid_request() {
        for body in [
            "",
            "{",
            "{\"jsonrpc\":\"2.0\",",
            "not json",
            "[1,",
            "{} trailing",
            "\u{0}",
        ] {
            let outcome = single(body);
            let err = outcome.expect_err(body);
            assert!(matches!(err, DecodeError::Parse { .. }), "{body}: {err:?}");
            assert_eq!(err.code(), -32700);
            assert_eq!(err.id(), None);
        }
        for body in [
            "1",
            "\"x\"",
            "null",
            "true",
            "{}",
            "[]",
            r#"{"jsonrpc":"2.0"}"#,
        ] {
            let err = single(body).expect_err(body);
            assert!(
                matches!(err, DecodeError::Invalid { .. }),
                "{body}: {err:?}"
            );
            assert_eq!(err.code(), -32600);
        }
    }

    #[test]
    fn text_and_byte_readers_agree() {
        // `decode_with` reads a UTF-8 body as text and any other body as bytes; both readers
        // must give the same outcome, error details included.
        let bodies: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,-2,3.5,true,null,"x"]}}"#,
            br#"{"jsonrpc":"2.0","id":"\u00e9\ud83d\ude00","method":"m\n"}"#,
            "{\"jsonrpc\":\"2.0\",\"method\":\"caf\u{e9} \u{1f600}\"}".as_bytes(),
            br#"{"jsonrpc":"2.0","method":"m","params":{"a":"\ud800"}}"#,
            br#"{"jsonrpc":"2.0","method":"m","params":{"a":"\x"}}"#,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\tb\"}",
            br#"{"jsonrpc":"2.0","method":"m","params":{"a":1e999}}"#,
            br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"1.0","id":2,"method":"b"},3]"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,2}}"#,
            b"{\"jsonrpc\":\"2.0\",\n  \"id\":1,\n  \"method\":",
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":01}}"#,
            b"",
        ];
        for body in bodies {
            let text = std::str::from_utf8(body).unwrap();
            let options = DecodeOptions::default();
            let as_text = decode_from(serde_json::Deserializer::from_str(text), options);
            let as_bytes = decode_from(serde_json::Deserializer::from_slice(body), options);
            assert_eq!(as_text, as_bytes, "{text}");
            assert_eq!(decode(body), as_bytes, "{text}");
        }
    }

    /// The reading of serde_json alone (what `decode_with` did before the direct reader).
    fn by_serde(body: &[u8]) -> Decoded {
        decode_from(
            serde_json::Deserializer::from_slice(body),
            DecodeOptions::default(),
        )
    }

    #[test]
    fn the_direct_reader_reads_usual_requests_as_serde_json_does() {
        let bodies = [
            // 2024-11-05 .. 2025-11-25: initialize, then calls without `_meta`.
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-load","version":"0.1.0"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#,
            r#"{"jsonrpc":"2.0","id":"s-1","method":"tools/list","params":{"cursor":"c"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"progressToken":-5}}}"#,
            // 2026-07-28: `_meta` on every request.
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"mcp-load","version":"0.1.0"}}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}"#,
            // Order, whitespace, nesting, extremes, duplicates, non-ASCII text.
            " {\n \"params\" : [ 1 , [ ] , { } , null , true , false ] ,\r\n\t\"method\":\"m\", \"jsonrpc\" : \"2.0\" } \n",
            r#"{"id":-9223372036854775808,"jsonrpc":"2.0","method":"m","params":{"a":18446744073709551615,"b":-1,"c":0}}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"m","params":{"a":1,"a":{"b":[{"c":[]}]}}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":\"\u{e9}\u{1f600}\",\"method\":\"caf\u{e9}\",\"params\":{\"\u{1f600}\":\"\u{7f}\"}}",
            r#"{"jsonrpc":"2.0","method":"","params":[]}"#,
            // Escapes in values, member names of `params`, the id and the method.
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\n"}}"#,
            r#"{"jsonrpc":"2.0","id":"\"q\"","method":"m\u0041\/","params":{"k\tey":"\"\\\/\b\f\n\r\t\u00e9\u00E9\ud83d\ude00\uD83D\uDE00\u0000x"}}"#,
            r#"{"jsonrpc":"2.0","method":"m","params":["\\","a very long plain prefix before the escape\nand a very long tail after it"]}"#,
        ];
        for body in bodies {
            let direct = Direct::new(body).message();
            assert!(direct.is_some(), "{body}");
            assert_eq!(
                decode(body.as_bytes()),
                Decoded::Single(Ok(direct.unwrap()))
            );
            assert_eq!(decode(body.as_bytes()), by_serde(body.as_bytes()), "{body}");
        }
    }

    #[test]
    fn the_direct_reader_leaves_everything_else_to_serde_json() {
        let bodies = [
            r#"{"jsonrpc":"\u0032.0","id":1,"method":"m"}"#,
            r#"{"json\u0072pc":"2.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\ud83d"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\ude00"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\ud83d\u0041"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\ud83dx"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\u00g0"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\u+041"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\u004"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\\n\u{1}\"}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\tb\"}",
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1.5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1e3}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1E3}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":-0}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":01}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":-}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":18446744073709551616}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":-9223372036854775809}}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","extra":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","id":2}"#,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":2}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m",}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1,]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":tru}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":nulll}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a" 1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"m\"}",
            "{}",
            "",
        ];
        for body in bodies {
            assert_eq!(Direct::new(body).message(), None, "{body}");
            assert_eq!(decode(body.as_bytes()), by_serde(body.as_bytes()), "{body}");
        }
        // Nesting deeper than the direct reader goes, and deeper than serde_json allows.
        for depth in [DIRECT_DEPTH - 1, DIRECT_DEPTH, DIRECT_DEPTH + 1, 200] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{}{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            );
            assert_eq!(
                Direct::new(&body).message().is_some(),
                depth <= DIRECT_DEPTH,
                "{depth}"
            );
            assert_eq!(
                decode(body.as_bytes()),
                by_serde(body.as_bytes()),
                "{depth}"
            );
        }
    }

    #[test]
    fn special_bytes_flags_exactly_quotes_backslashes_and_control_characters() {
        for byte in 0..=u8::MAX {
            let special = byte == b'"' || byte == b'\\' || byte < 0x20;
            for at in 0..8 {
                // Fillers on both sides: plain text, and bytes of multi-byte characters.
                for filler in [b'a', 0x7f, 0x80, 0xff, b'!'] {
                    let mut word = [filler; 8];
                    word[at] = byte;
                    let flagged = special_bytes(u64::from_le_bytes(word));
                    assert_eq!(flagged != 0, special, "{byte:#x} at {at}");
                    if special {
                        assert_eq!(flagged.trailing_zeros() / 8, at as u32, "{byte:#x} at {at}");
                    }
                }
            }
        }
        for body in [
            r#"{"jsonrpc":"2.0","method":"01234567\"}"#,
            "{\"jsonrpc\":\"2.0\",\"method\":\"0123456789abcde\u{1}\"}",
            r#"{"jsonrpc":"2.0","method":"0123456789abcdef"#,
        ] {
            assert_eq!(Direct::new(body).message(), None, "{body}");
            assert_eq!(decode(body.as_bytes()), by_serde(body.as_bytes()), "{body}");
        }
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            "[a-z/_.-]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z_]{0,6}|.{0,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    mod direct_props {
        use proptest::prelude::*;

        use super::super::*;
        use super::{any_json, by_serde};

        proptest! {
            /// Whatever the message, the direct reader and serde_json agree (the direct reader
            /// either reads it the same or leaves it to serde_json).
            #[test]
            fn direct_and_serde_readings_agree(
                id in proptest::option::of(any_json()),
                method in proptest::option::of(any_json()),
                params in proptest::option::of(any_json()),
                extra in proptest::option::of(any_json()),
                pretty in any::<bool>(),
            ) {
                let mut message = serde_json::Map::new();
                message.insert("jsonrpc".into(), VERSION.into());
                for (key, value) in [("id", id), ("method", method), ("params", params), ("x", extra)] {
                    if let Some(value) = value {
                        message.insert(key.into(), value);
                    }
                }
                let message = Value::Object(message);
                let body = if pretty {
                    serde_json::to_vec_pretty(&message).unwrap()
                } else {
                    serde_json::to_vec(&message).unwrap()
                };
                prop_assert_eq!(decode(&body), by_serde(&body));
            }

            /// The word-at-a-time scan stops where a byte-by-byte one does, from any start.
            #[test]
            fn plain_run_stops_at_the_first_special_byte(
                bytes in proptest::collection::vec(
                    prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x20, 0x20u8..=0xff],
                    0..40,
                ),
                from in 0usize..40,
            ) {
                let from = from.min(bytes.len());
                let expected = bytes[from..]
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                    .map_or(bytes.len(), |at| from + at);
                prop_assert_eq!(plain_run(&bytes, from), expected);
            }

            /// Usual requests are always read directly, and the same.
            #[test]
            fn usual_requests_are_read_directly(
                id in prop_oneof![
                    any::<i64>().prop_map(Id::Number),
                    "[a-z0-9-]{0,8}".prop_map(Id::String),
                ],
                method in "[a-z/]{1,20}",
                arguments in proptest::collection::btree_map(
                    "[a-z]{1,6}",
                    prop_oneof![
                        any::<i64>().prop_map(Value::from),
                        any::<u64>().prop_map(Value::from),
                        "[ !#-\\[\\]-~\u{e9}\u{1f600}]{0,10}".prop_map(Value::from),
                    ],
                    0..5,
                ),
            ) {
                let params = serde_json::json!({"name": "t", "arguments": arguments});
                let request = Request { id, method: method.into(), params: Some(params) };
                let body = encode(&Message::Request(request));
                let text = std::str::from_utf8(&body).unwrap();
                prop_assert!(Direct::new(text).message().is_some(), "{}", text);
                prop_assert_eq!(decode(&body), by_serde(&body));
            }

            /// Arbitrary text near JSON, alone or as `params`.
            #[test]
            fn arbitrary_text_reads_the_same(
                body in "[{}\\[\\],:\" 0-9a-z.eE+\\-\\\\\n]{0,60}",
                as_params in any::<bool>(),
            ) {
                let body = if as_params {
                    format!(r#"{{"jsonrpc":"2.0","method":"m","params":{body}"#)
                } else {
                    body
                };
                prop_assert_eq!(decode(body.as_bytes()), by_serde(body.as_bytes()));
            }
        }
    }

    #[test]
    fn a_body_that_is_not_utf8_is_read_as_bytes() {
        // Invalid UTF-8 inside a string is a parse error at its position, as before; outside
        // a string it is a syntax error.
        for body in [
            &b"{\"jsonrpc\":\"2.0\",\"method\":\"a\xffb\"}"[..],
            &b"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\xff"[..],
            &b"\xfe"[..],
        ] {
            let expected = decode_from(
                serde_json::Deserializer::from_slice(body),
                DecodeOptions::default(),
            );
            assert!(
                matches!(expected, Decoded::Single(Err(DecodeError::Parse { .. }))),
                "{expected:?}"
            );
            assert_eq!(decode(body), expected);
        }
    }

    #[test]
    fn the_version_must_be_exactly_the_string_2_0() {
        for version in [
            r#""2.0""#,
            r#""2.00""#,
            r#""2.0 ""#,
            r#""\u0032.0""#,
            "2.0",
            "2",
            "null",
            "true",
            "[\"2.0\"]",
            r#"{"v":"2.0"}"#,
        ] {
            let body = format!(r#"{{"jsonrpc":{version},"id":1,"method":"m"}}"#);
            let exact = matches!(version, r#""2.0""# | r#""\u0032.0""#);
            match single(&body) {
                Ok(_) => assert!(exact, "{body}"),
                Err(err) => {
                    assert!(!exact, "{body}: {err:?}");
                    assert_eq!(
                        err,
                        DecodeError::Invalid {
                            id: Some(Id::Number(1)),
                            reason: InvalidReason::BadVersion
                        },
                        "{body}"
                    );
                }
            }
        }
        let twice = r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"m"}"#;
        assert_eq!(
            invalid_reason(twice).1,
            InvalidReason::DuplicateMember("jsonrpc")
        );
        let twice_bad = r#"{"jsonrpc":1,"jsonrpc":"2.0","id":1,"method":"m"}"#;
        assert_eq!(
            invalid_reason(twice_bad).1,
            InvalidReason::DuplicateMember("jsonrpc")
        );
    }

    #[test]
    fn a_syntax_error_inside_a_batch_is_one_parse_error() {
        let err = single(r#"[{"jsonrpc":"2.0","method":"a"}, {"jsonrpc": ]"#).unwrap_err();
        assert!(matches!(err, DecodeError::Parse { .. }));
    }

    #[test]
    fn empty_batch_is_an_invalid_request() {
        let (id, reason) = invalid_reason("[]");
        assert_eq!((id, reason), (None, InvalidReason::EmptyBatch));
        assert_eq!(invalid_reason(" [ ] ").1, InvalidReason::EmptyBatch);
    }

    #[test]
    fn bad_ids_are_rejected() {
        for id in [
            "null",
            "true",
            "false",
            "1.5",
            "1.0",
            "1e3",
            "[1]",
            "{\"a\":1}",
            "9223372036854775808",
            "18446744073709551616",
            "-9223372036854775809",
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
            assert_eq!(invalid_reason(&body), (None, InvalidReason::BadId), "{id}");
        }
    }

    #[test]
    fn extreme_integer_ids_are_kept_exactly() {
        for n in [i64::MIN, -1, 0, i64::MAX] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"m"}}"#);
            let message = single(&body).unwrap();
            assert_eq!(message.id(), Some(&Id::Number(n)));
            assert_eq!(serde_json::to_value(&message).unwrap()["id"], json!(n));
        }
    }

    #[test]
    fn invalid_items_keep_a_usable_id() {
        let cases: &[(&str, Option<Id>, InvalidReason)] = &[
            (
                r#"{"jsonrpc":"1.0","id":7,"method":"m"}"#,
                Some(Id::Number(7)),
                InvalidReason::BadVersion,
            ),
            (
                r#"{"id":"a","method":"m"}"#,
                Some(Id::from("a")),
                InvalidReason::BadVersion,
            ),
            (
                r#"{"jsonrpc":2.0,"id":"a","method":"m"}"#,
                Some(Id::from("a")),
                InvalidReason::BadVersion,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":4}"#,
                Some(Id::Number(3)),
                InvalidReason::MethodNotString,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"m","params":"x"}"#,
                Some(Id::Number(3)),
                InvalidReason::BadParams,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"m","params":5}"#,
                Some(Id::Number(3)),
                InvalidReason::BadParams,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"m","result":{}}"#,
                Some(Id::Number(3)),
                InvalidReason::MethodWithResponseMember,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"result":1,"error":{"code":1,"message":"m"}}"#,
                Some(Id::Number(3)),
                InvalidReason::ResultAndError,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3}"#,
                Some(Id::Number(3)),
                InvalidReason::NoMethodOrResponseMember,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":"x","message":"m"}}"#,
                Some(Id::Number(3)),
                InvalidReason::BadErrorObject,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#,
                Some(Id::Number(3)),
                InvalidReason::BadErrorObject,
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"m","method":"n"}"#,
                Some(Id::Number(3)),
                InvalidReason::DuplicateMember("method"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"id":4,"method":"m"}"#,
                Some(Id::Number(3)),
                InvalidReason::DuplicateMember("id"),
            ),
            (
                r#"{"jsonrpc":"2.0","result":1}"#,
                None,
                InvalidReason::ResultWithoutId,
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
                None,
                InvalidReason::ResultWithoutId,
            ),
        ];
        for (body, id, reason) in cases {
            assert_eq!(invalid_reason(body), (id.clone(), reason.clone()), "{body}");
            let response = single(body).unwrap_err().to_response();
            assert_eq!(response.id, *id);
            assert_eq!(response.outcome.unwrap_err().code, -32600);
        }
    }

    #[test]
    fn kinds_of_message() {
        let request =
            single(r#"{"method":"m","params":{"a":1},"id":"x","jsonrpc":"2.0","extra":[1,{}]}"#);
        assert_eq!(
            request.unwrap(),
            Message::Request(Request {
                id: Id::from("x"),
                method: "m".into(),
                params: Some(json!({"a": 1}))
            })
        );
        let notification = single(r#"{"jsonrpc":"2.0","method":"n","params":[1,2]}"#);
        assert_eq!(
            notification.unwrap(),
            Message::Notification(Notification {
                method: "n".into(),
                params: Some(json!([1, 2]))
            })
        );
        let null_params = single(r#"{"jsonrpc":"2.0","method":"n","params":null}"#);
        assert_eq!(
            null_params.unwrap(),
            Message::Notification(Notification {
                method: "n".into(),
                params: None
            })
        );
        let result = single(r#"{"jsonrpc":"2.0","id":1,"result":null}"#);
        assert_eq!(
            result.unwrap(),
            Message::Response(Response::success(Id::Number(1), Value::Null))
        );
        for body in [
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ] {
            assert_eq!(
                single(body).unwrap(),
                Message::Response(Response::error(
                    None,
                    ErrorObject::new(-32700, "Parse error")
                ))
            );
        }
    }

    #[test]
    fn serialization_writes_the_version_and_null_ids() {
        let response = Message::Response(Response::error(None, ErrorObject::parse_error("x")));
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: x"}})
        );
        let request = Message::Request(Request {
            id: Id::Number(1),
            method: "m".into(),
            params: None,
        });
        assert_eq!(
            String::from_utf8(encode(&request)).unwrap(),
            r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#
        );
    }

    #[test]
    fn batch_limit() {
        let body = r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","method":"c"}]"#;
        let limited = decode_with(body.as_bytes(), DecodeOptions::default().max_batch_len(2));
        assert_eq!(
            limited,
            Decoded::Single(Err(DecodeError::Invalid {
                id: None,
                reason: InvalidReason::BatchTooLarge { limit: 2 }
            }))
        );
        let Decoded::Batch(items) =
            decode_with(body.as_bytes(), DecodeOptions::default().max_batch_len(3))
        else {
            panic!("expected a batch");
        };
        assert_eq!(items.len(), 3);
    }

    #[test]
    fn strict_deserialize_rejects_invalid_messages() {
        assert!(
            serde_json::from_value::<Message>(json!({"jsonrpc": "2.0", "id": 1.5, "method": "m"}))
                .is_err()
        );
        assert!(
            serde_json::from_value::<Request>(json!({"jsonrpc": "2.0", "method": "m"})).is_err()
        );
        assert!(
            serde_json::from_value::<Notification>(json!({"jsonrpc": "2.0", "method": "m"}))
                .is_ok()
        );
        assert!(serde_json::from_value::<Id>(json!(null)).is_err());
        assert!(serde_json::from_value::<Id>(json!(true)).is_err());
        assert!(serde_json::from_value::<Id>(json!(2.5)).is_err());
        assert_eq!(
            serde_json::from_value::<Id>(json!(-3)).unwrap(),
            Id::Number(-3)
        );
    }

    #[test]
    fn a_result_is_read_into_the_type_only_from_a_success_response_to_the_id() {
        let id = Id::Number(7);
        let read = |body: &str| read_success_as::<Value>(&id, body);
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":7,"result":{"a":[1]}}"#),
            Some(json!({"a": [1]}))
        );
        assert_eq!(
            read(r#" {"result":{},"id":7,"jsonrpc":"2.0"}"#),
            Some(json!({}))
        );
        for body in [
            r#"{"jsonrpc":"2.0","id":8,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"7","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7.0,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}"#,
            r#"[{"jsonrpc":"2.0","id":7,"result":{}}]"#,
            r#"["2.0",7,{}]"#,
        ] {
            assert_eq!(read(body), None, "{body}");
        }
        assert_eq!(
            read_success_as::<Vec<u8>>(&id, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#),
            None,
            "a result that does not fit the type"
        );
        assert_eq!(
            read_success_as::<Value>(&Id::from("7"), r#"{"jsonrpc":"2.0","id":"7","result":{}}"#),
            Some(json!({})),
            "string ids compare as ids"
        );
        // `-0` is not an integer id to `decode`, so not here either.
        let minus_zero = r#"{"jsonrpc":"2.0","id":-0,"result":{}}"#;
        assert_eq!(read_success_as::<Value>(&Id::Number(0), minus_zero), None);
        assert!(!matches!(
            decode(minus_zero.as_bytes()),
            Decoded::Single(Ok(Message::Response(Response { id: Some(_), .. })))
        ));
    }

    mod read_success_props {
        use proptest::prelude::*;
        use serde_json::json;

        use super::super::*;

        proptest! {
            /// What it reads, [`decode`] reads as the same success response.
            #[test]
            fn read_success_as_agrees_with_decode(
                id in prop_oneof![
                    any::<i64>().prop_map(Id::Number),
                    "[a-z\"\\\\]{0,4}".prop_map(Id::String),
                ],
                result in prop_oneof![
                    Just(json!({})),
                    Just(json!({"content": [{"type": "text", "text": "a\"b"}]})),
                    Just(json!([1, null])),
                    Just(json!("x")),
                ],
                extra in any::<bool>(),
            ) {
                let mut message = json!({"jsonrpc": "2.0", "id": id.clone(), "result": result.clone()});
                if extra {
                    message["extra"] = json!(1);
                }
                let body = message.to_string();
                let read = read_success_as::<Value>(&id, &body);
                prop_assert_eq!(read.is_some(), !extra);
                if let Some(read) = read {
                    prop_assert_eq!(&read, &result);
                    prop_assert_eq!(
                        decode(body.as_bytes()),
                        Decoded::Single(Ok(Message::Response(Response::success(id, result))))
                    );
                }
            }
        }
    }
}
