//! The value codec for the `Mcp-Name` and `Mcp-Param-*` request headers of 2026-07-28.
//!
//! Revision 2026-07-28 mirrors parts of the request body into HTTP headers so that
//! intermediaries can route on them without parsing JSON.
//! `Mcp-Name` carries `params.name` (or `params.uri` for `resources/read`), and each
//! `Mcp-Param-{Name}` header carries one tool argument whose schema property is annotated
//! with `x-mcp-header`.
//! The rules live in the 2026-07-28 Streamable HTTP transport page, section "Request Metadata"
//! (`docs/specification/2026-07-28/basic/transports/streamable-http.mdx`, cited as SH26 below),
//! and in the `x-mcp-header` part of the tools page (`2026-07-28/server/tools.mdx`, TL26).
//!
//! The pipeline on the client is:
//!
//! ```text
//!   JSON argument ──► text (argument_text) ──► plain or =?base64?…?= (encode_text)
//! ```
//!
//! and on the server:
//!
//! ```text
//!   header bytes ──► decode ──► compare with the body value (matches_body / check_header)
//! ```
//!
//! Header *names* are not handled here except for [`is_token`], the RFC 9110 token check that an
//! `x-mcp-header` annotation value must pass.
//!
//! # Example
//!
//! ```
//! use mcp_wire::header;
//! use serde_json::json;
//!
//! // Spec example (SH26): non-ASCII text must be base64-encoded.
//! let sent = header::encode_argument(&json!("Hello, 世界")).unwrap().unwrap();
//! assert_eq!(sent, "=?base64?SGVsbG8sIOS4lueVjA==?=");
//!
//! // The server decodes before comparing with the body.
//! assert_eq!(header::decode(sent.as_bytes()).unwrap(), "Hello, 世界");
//! assert!(header::check_header(Some(sent.as_bytes()), Some(&json!("Hello, 世界"))).is_ok());
//! ```

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// The case-sensitive prefix that marks an encoded header value: `=?base64?`.
///
/// SH26, value encoding: the prefix and suffix are exact and lowercase; `=?BASE64?…?=` is a
/// literal value, not an encoded one.
pub const BASE64_PREFIX: &str = "=?base64?";

/// The case-sensitive suffix that ends an encoded header value: `?=`.
pub const BASE64_SUFFIX: &str = "?=";

/// The largest integer a header parameter may carry: 2^53 − 1.
///
/// TL26: integer values of `x-mcp-header` properties MUST lie within ±(2^53 − 1), the range a
/// JSON number holds exactly in an IEEE 754 double.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The JSON types an `x-mcp-header` property may have.
///
/// TL26: the annotation may only be applied to properties of primitive type `integer`, `string`
/// or `boolean`; `number` is not allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParamType {
    /// A JSON string, sent as is.
    String,
    /// A JSON integer within ±(2^53 − 1), sent as its decimal text.
    Integer,
    /// A JSON boolean, sent as `true` or `false`.
    Boolean,
}

/// Why a JSON value cannot be turned into a header value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderEncodeError {
    /// The value is a number with a fractional part; `number` is not a permitted header type.
    #[error("a non-integral number cannot be sent in a header")]
    NotAnInteger,
    /// The value is an integer outside ±(2^53 − 1).
    #[error("integer {value} is outside the safe range ±(2^53 - 1)")]
    IntegerOutOfRange {
        /// The integer as it appeared in JSON.
        value: String,
    },
    /// The value is an array or an object.
    #[error("a JSON {kind} cannot be sent in a header")]
    NotPrimitive {
        /// `"array"` or `"object"`.
        kind: &'static str,
    },
}

/// Why a received header value is malformed.
///
/// SH26 (and the SEP-2243 test tables) ask the server to answer these with HTTP 400 and
/// the JSON-RPC error `-32020` (HeaderMismatch).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderDecodeError {
    /// The text between `=?base64?` and `?=` is not canonical standard base64 with padding.
    #[error("the encoded header value is not valid base64")]
    InvalidBase64,
    /// The base64 payload does not decode to UTF-8.
    #[error("the encoded header value is not valid UTF-8")]
    InvalidUtf8,
    /// A literal (not encoded) value contains a byte that a plain value may not contain.
    #[error("byte 0x{byte:02x} at index {index} is not allowed in a plain header value")]
    InvalidCharacter {
        /// Offset of the byte in the header value.
        index: usize,
        /// The byte itself.
        byte: u8,
    },
    /// A literal value starts or ends with a space or a tab; such values must be encoded.
    #[error("a plain header value must not start or end with whitespace")]
    SurroundingWhitespace,
    /// The value should be an integer parameter but is not a decimal integer.
    #[error("the header value is not a decimal integer")]
    NotAnInteger,
    /// The value is a decimal integer outside ±(2^53 − 1).
    #[error("the header value is an integer outside the safe range ±(2^53 - 1)")]
    IntegerOutOfRange,
    /// The value should be a boolean parameter but is neither `true` nor `false`.
    #[error("the header value is neither `true` nor `false`")]
    NotABoolean,
}

/// Why a mirrored header does not agree with the request body.
///
/// SH26, server behaviour: any server that processes the body MUST validate the decoded header
/// values against it, and rejects a mismatch with HTTP 400 and `-32020` (HeaderMismatch).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderMismatch {
    /// The body has a non-null value but the header is absent.
    #[error("the header is missing although the body has a value")]
    Missing,
    /// The header is present but the body value is absent or `null`.
    #[error("the header is present although the body has no value")]
    Unexpected,
    /// The header value cannot be decoded.
    #[error("malformed header value: {0}")]
    Malformed(#[from] HeaderDecodeError),
    /// The decoded header value differs from the body value.
    #[error("the header value does not match the body")]
    NotEqual,
}

/// Whether `text` may be sent as a plain (not encoded) header value, ignoring the sentinel rule.
///
/// SH26, value encoding rule 2: a value is plain when it consists only of visible ASCII
/// (0x21–0x7E), space (0x20) and horizontal tab (0x09), per RFC 9110 `field-value`, with no
/// leading or trailing space or tab.
/// Non-ASCII characters, CR, LF and other control characters, and surrounding whitespace all
/// force encoding.
/// The empty string is plain (SEP-2243: an empty string becomes an empty header value).
///
/// Use [`needs_encoding`] to decide what to send; it also applies the sentinel collision rule.
pub fn is_plain_safe(text: &str) -> bool {
    let bytes = text.as_bytes();
    let allowed = bytes
        .iter()
        .all(|&b| b == b'\t' || (0x20..=0x7e).contains(&b));
    let edge_ok = |b: Option<&u8>| !matches!(b, Some(b' ' | b'\t'));
    allowed && edge_ok(bytes.first()) && edge_ok(bytes.last())
}

/// Whether `text` has the shape of an encoded value: it starts with `=?base64?` and ends with
/// `?=` (case-sensitive).
///
/// SH26, value encoding rule 4 (sentinel collision): a plain ASCII value with this shape MUST be
/// base64-encoded too, or the receiver would try to decode it.
/// Overlapping markers (the ten characters `=?base64?=`) count as this shape, so they are
/// encoded as well.
pub fn looks_encoded(text: &str) -> bool {
    text.starts_with(BASE64_PREFIX) && text.ends_with(BASE64_SUFFIX)
}

/// Whether `text` must be sent as `=?base64?…?=` rather than as is.
///
/// True when `text` is not plain-safe ([`is_plain_safe`], SH26 rules 2 and 3) or when it
/// collides with the encoded form ([`looks_encoded`], SH26 rule 4).
pub fn needs_encoding(text: &str) -> bool {
    !is_plain_safe(text) || looks_encoded(text)
}

/// Turns header text into the header value to send: `text` itself when it may be sent plain,
/// otherwise `=?base64?{base64 of its UTF-8 bytes}?=`.
///
/// SH26, value encoding rules 2–6.
/// The base64 alphabet is the standard one of RFC 4648 §4 with `=` padding; the spec only says
/// "Base64", and its examples (which contain `/` and `=`) fix the alphabet and the padding.
pub fn encode_text(text: &str) -> Cow<'_, str> {
    if needs_encoding(text) {
        let mut out = String::with_capacity(
            BASE64_PREFIX.len() + text.len().div_ceil(3) * 4 + BASE64_SUFFIX.len(),
        );
        out.push_str(BASE64_PREFIX);
        STANDARD.encode_string(text, &mut out);
        out.push_str(BASE64_SUFFIX);
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// Converts a JSON argument into header text, before the plain-or-encoded decision.
///
/// SH26, value encoding rule 1 (type conversion):
/// - a string is used as is;
/// - an integer becomes its decimal text (`42`, `-7`); it must lie within ±(2^53 − 1) (TL26);
///   a number with a zero fractional part such as `42.0` counts as the integer `42`, as in JSON
///   Schema's `integer` type;
/// - a boolean becomes `true` or `false`;
/// - `number` (a non-integral value) is not a permitted type and gives an error.
///
/// `null` gives `Ok(None)`: TL26 says that when the value is absent or `null` the client MUST
/// omit the header.
/// Arrays and objects give an error.
pub fn argument_text(value: &Value) -> Result<Option<Cow<'_, str>>, HeaderEncodeError> {
    match value {
        Value::Null => Ok(None),
        Value::Bool(true) => Ok(Some(Cow::Borrowed("true"))),
        Value::Bool(false) => Ok(Some(Cow::Borrowed("false"))),
        Value::String(s) => Ok(Some(Cow::Borrowed(s.as_str()))),
        Value::Number(n) => safe_integer(n).map(|i| Some(Cow::Owned(i.to_string()))),
        Value::Array(_) => Err(HeaderEncodeError::NotPrimitive { kind: "array" }),
        Value::Object(_) => Err(HeaderEncodeError::NotPrimitive { kind: "object" }),
    }
}

/// Converts a JSON argument into the header value to send: [`argument_text`] followed by
/// [`encode_text`].
///
/// `Ok(None)` means "omit the header" (the value is `null`).
pub fn encode_argument(value: &Value) -> Result<Option<String>, HeaderEncodeError> {
    Ok(argument_text(value)?.map(|text| encode_text(&text).into_owned()))
}

/// Decodes a received header value into its text.
///
/// SH26, value encoding rule 5: a value of the form `=?base64?{payload}?=` (exact lowercase
/// markers, not overlapping) is decoded; the payload must be canonical standard base64 with
/// padding (rule 6) and decode to UTF-8.
/// The decoded text may contain anything, including control characters (the spec's own example
/// encodes `line1\nline2`).
///
/// Any other value is literal (SEP-2243: a missing prefix or suffix, or an uppercase
/// `=?BASE64?` marker, makes a literal value).
/// A literal value must itself be plain (rule 2): only visible ASCII, space and tab, and no
/// surrounding whitespace; otherwise the client should have encoded it and this is an error
/// (SH26: reject a recognized `Mcp-Param-*` header with invalid characters).
pub fn decode(raw: &[u8]) -> Result<Cow<'_, str>, HeaderDecodeError> {
    let min_len = BASE64_PREFIX.len() + BASE64_SUFFIX.len();
    if raw.len() >= min_len
        && raw.starts_with(BASE64_PREFIX.as_bytes())
        && raw.ends_with(BASE64_SUFFIX.as_bytes())
    {
        let payload = &raw[BASE64_PREFIX.len()..raw.len() - BASE64_SUFFIX.len()];
        let bytes = STANDARD
            .decode(payload)
            .map_err(|_| HeaderDecodeError::InvalidBase64)?;
        return String::from_utf8(bytes)
            .map(Cow::Owned)
            .map_err(|_| HeaderDecodeError::InvalidUtf8);
    }
    if let Some(index) = raw
        .iter()
        .position(|&b| b != b'\t' && !(0x20..=0x7e).contains(&b))
    {
        return Err(HeaderDecodeError::InvalidCharacter {
            index,
            byte: raw[index],
        });
    }
    if matches!(raw.first(), Some(b' ' | b'\t')) || matches!(raw.last(), Some(b' ' | b'\t')) {
        return Err(HeaderDecodeError::SurroundingWhitespace);
    }
    // Every byte is ASCII, checked above.
    std::str::from_utf8(raw)
        .map(Cow::Borrowed)
        .map_err(|_| HeaderDecodeError::InvalidUtf8)
}

/// Decodes a received header value into the JSON argument it carries, given the property's type.
///
/// The inverse of [`encode_argument`]: `decode_argument(encode_argument(v), type of v) == v`
/// for every string, boolean and safe integer `v`.
/// An integer must be decimal digits with an optional leading `-` and lie within
/// ±(2^53 − 1); a boolean must be exactly `true` or `false` (values are case-sensitive).
pub fn decode_argument(raw: &[u8], ty: ParamType) -> Result<Value, HeaderDecodeError> {
    let text = decode(raw)?;
    match ty {
        ParamType::String => Ok(Value::String(text.into_owned())),
        ParamType::Boolean => match &*text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(HeaderDecodeError::NotABoolean),
        },
        ParamType::Integer => {
            let digits = text.strip_prefix('-').unwrap_or(&text);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(HeaderDecodeError::NotAnInteger);
            }
            match text.parse::<i64>() {
                Ok(i) if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) => Ok(Value::from(i)),
                _ => Err(HeaderDecodeError::IntegerOutOfRange),
            }
        }
    }
}

/// Decodes a received header value and compares it with the body value, as the server must.
///
/// SH26, value encoding rule 5: the server MUST decode before comparing with the body.
/// - A string body value must equal the decoded text exactly (values are case-sensitive).
/// - A boolean must be `true` or `false`.
/// - A number is compared numerically (SH26: `42.0` equals `42`): the decoded text must be a
///   JSON number (no sign `+`, no whitespace) with the same value; integers are compared exactly,
///   not through floating point.
/// - `null`, arrays and objects never match.
///
/// Returns an error only when the header itself is malformed ([`decode`]).
pub fn matches_body(raw: &[u8], body: &Value) -> Result<bool, HeaderDecodeError> {
    let text = decode(raw)?;
    Ok(match body {
        Value::String(s) => text == s.as_str(),
        Value::Bool(b) => text == if *b { "true" } else { "false" },
        Value::Number(n) => numbers_equal(&text, n),
        Value::Null | Value::Array(_) | Value::Object(_) => false,
    })
}

/// Validates one mirrored header against the body, including presence.
///
/// `header` is the raw header value if the header was sent; `body` is the value at the
/// property path (or `params.name` / `params.uri` for `Mcp-Name`) if present.
/// TL26 and SH26:
/// - body absent or `null`: the header must be absent ([`HeaderMismatch::Unexpected`]);
/// - body present: the header must be present ([`HeaderMismatch::Missing`]), decodable
///   ([`HeaderMismatch::Malformed`]) and equal after decoding ([`HeaderMismatch::NotEqual`],
///   see [`matches_body`]).
pub fn check_header(header: Option<&[u8]>, body: Option<&Value>) -> Result<(), HeaderMismatch> {
    match (header, body.filter(|v| !v.is_null())) {
        (None, None) => Ok(()),
        (Some(_), None) => Err(HeaderMismatch::Unexpected),
        (None, Some(_)) => Err(HeaderMismatch::Missing),
        (Some(raw), Some(value)) => {
            if matches_body(raw, value)? {
                Ok(())
            } else {
                Err(HeaderMismatch::NotEqual)
            }
        }
    }
}

/// Whether `b` is an RFC 9110 `tchar` (section 5.6.2, "Tokens").
///
/// `tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA`
pub const fn is_tchar(b: u8) -> bool {
    matches!(b,
        b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.'
        | b'^' | b'_' | b'`' | b'|' | b'~' | b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z')
}

/// Whether `name` is an RFC 9110 token (`1*tchar`), the syntax of a header field name.
///
/// TL26: an `x-mcp-header` value MUST be non-empty, MUST match `1*tchar` and MUST NOT contain
/// control characters (which `tchar` excludes anyway); the header sent is then
/// `Mcp-Param-{name}`.
/// Case-insensitive uniqueness within one `inputSchema` is for the caller to check.
pub fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_tchar)
}

/// Checks that a JSON number is an integer within ±(2^53 − 1) and returns it.
fn safe_integer(n: &serde_json::Number) -> Result<i64, HeaderEncodeError> {
    let out_of_range = || HeaderEncodeError::IntegerOutOfRange {
        value: n.to_string(),
    };
    let value = if let Some(i) = n.as_i64() {
        i
    } else if n.is_u64() {
        return Err(out_of_range());
    } else {
        let f = n.as_f64().ok_or(HeaderEncodeError::NotAnInteger)?;
        if !f.is_finite() || f.fract() != 0.0 {
            return Err(HeaderEncodeError::NotAnInteger);
        }
        if f.abs() > MAX_SAFE_INTEGER as f64 {
            return Err(out_of_range());
        }
        // In range and integral, so the conversion is exact; `-0.0` becomes `0`.
        f as i64
    };
    if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&value) {
        Ok(value)
    } else {
        Err(out_of_range())
    }
}

/// Compares header text with a body number numerically, exactly for integers.
fn numbers_equal(text: &str, body: &serde_json::Number) -> bool {
    let starts_ok = text.starts_with(|c: char| c == '-' || c.is_ascii_digit());
    let ends_ok = text.ends_with(|c: char| c.is_ascii_digit());
    if !starts_ok || !ends_ok {
        return false;
    }
    let Ok(header) = serde_json::from_str::<serde_json::Number>(text) else {
        return false;
    };
    let as_int = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (as_int(&header), as_int(body)) {
        (Some(a), Some(b)) => a == b,
        _ => match (header.as_f64(), body.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn overlapping_markers_are_encoded_and_decode_literally() {
        // `=?base64?=` has the shape of rule 4 when the markers overlap; it is encoded when sent,
        // and a received one is not an encoded value (there is no room for a payload).
        assert!(needs_encoding("=?base64?="));
        assert_eq!(decode(b"=?base64?=").unwrap(), "=?base64?=");
        assert_eq!(decode(b"=?base64??=").unwrap(), "");
    }

    #[test]
    fn integral_float_counts_as_integer() {
        assert_eq!(encode_argument(&json!(42.0)).unwrap().unwrap(), "42");
        assert_eq!(encode_argument(&json!(-0.0)).unwrap().unwrap(), "0");
        assert_eq!(
            encode_argument(&json!(3.5)),
            Err(HeaderEncodeError::NotAnInteger)
        );
    }

    #[test]
    fn numeric_comparison_is_exact_for_large_integers() {
        // 2^60 and 2^60 + 1 are the same f64 but different integers.
        assert!(!numbers_equal("1152921504606846977", &(1u64 << 60).into()));
        assert!(numbers_equal("1152921504606846976", &(1u64 << 60).into()));
    }
}
