//! Tests of the `Mcp-Name` / `Mcp-Param-*` header value codec (spec.md section 5.2 and 5.3).

use mcp_wire::header::{
    self, HeaderDecodeError, HeaderEncodeError, HeaderMismatch, MAX_SAFE_INTEGER, ParamType,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// The examples of SH26 "Request Metadata", value encoding: JSON value and header value.
const SPEC_EXAMPLES: &[(&str, &str)] = &[
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
];

#[test]
fn spec_examples_encode_and_decode() {
    for &(value, wire) in SPEC_EXAMPLES {
        let sent = header::encode_argument(&json!(value)).unwrap().unwrap();
        assert_eq!(sent, wire, "encoding {value:?}");
        assert_eq!(
            header::decode(wire.as_bytes()).unwrap(),
            value,
            "decoding {wire:?}"
        );
        assert_eq!(
            header::check_header(Some(wire.as_bytes()), Some(&json!(value))),
            Ok(())
        );
    }
}

#[test]
fn type_conversion_table() {
    // SH26 rule 1: string as is, integer as decimal, boolean lowercase; null omits the header.
    let cases: &[(Value, Option<&str>)] = &[
        (json!("us-west1"), Some("us-west1")),
        (json!(42), Some("42")),
        (json!(-7), Some("-7")),
        (json!(0), Some("0")),
        (json!(true), Some("true")),
        (json!(false), Some("false")),
        (json!(""), Some("")),
        (json!("us west 1"), Some("us west 1")),
        (json!(MAX_SAFE_INTEGER), Some("9007199254740991")),
        (json!(-MAX_SAFE_INTEGER), Some("-9007199254740991")),
        (Value::Null, None),
    ];
    for (value, expected) in cases {
        assert_eq!(
            header::encode_argument(value).unwrap().as_deref(),
            *expected,
            "{value}"
        );
    }
}

#[test]
fn type_conversion_errors() {
    let cases: &[(Value, HeaderEncodeError)] = &[
        (json!(2.5), HeaderEncodeError::NotAnInteger),
        (
            json!(MAX_SAFE_INTEGER + 1),
            HeaderEncodeError::IntegerOutOfRange {
                value: "9007199254740992".into(),
            },
        ),
        (
            json!(-MAX_SAFE_INTEGER - 1),
            HeaderEncodeError::IntegerOutOfRange {
                value: "-9007199254740992".into(),
            },
        ),
        (
            json!(u64::MAX),
            HeaderEncodeError::IntegerOutOfRange {
                value: u64::MAX.to_string(),
            },
        ),
        (
            json!(1e300),
            HeaderEncodeError::IntegerOutOfRange {
                value: "1e+300".into(),
            },
        ),
        (
            json!([1]),
            HeaderEncodeError::NotPrimitive { kind: "array" },
        ),
        (
            json!({"a": 1}),
            HeaderEncodeError::NotPrimitive { kind: "object" },
        ),
    ];
    for (value, expected) in cases {
        assert_eq!(
            header::encode_argument(value).as_ref(),
            Err(expected),
            "{value}"
        );
    }
}

#[test]
fn plain_or_encoded_table() {
    // (text, must be encoded)
    let cases: &[(&str, bool)] = &[
        ("us-west1", false),
        ("us west 1", false),
        ("a\tb", false),
        ("", false),
        ("!~", false),
        (" lead", true),
        ("trail ", true),
        ("\tlead", true),
        ("trail\t", true),
        ("a\rb", true),
        ("a\nb", true),
        ("a\u{7f}b", true),
        ("a\u{0}b", true),
        ("café", true),
        // Sentinel collision (rule 4), including overlapping markers.
        ("=?base64?literal?=", true),
        ("=?base64??=", true),
        ("=?base64?=", true),
        // Not the sentinel shape: literal, sent plain (SEP-2243).
        ("=?BASE64?abc?=", false),
        ("=?base64?abc", false),
        ("base64?abc?=", false),
    ];
    for &(text, encoded) in cases {
        assert_eq!(header::needs_encoding(text), encoded, "{text:?}");
        let sent = header::encode_text(text);
        assert_eq!(sent != text, encoded, "{text:?}");
        assert_eq!(header::decode(sent.as_bytes()).unwrap(), text);
    }
}

#[test]
fn malformed_values_are_rejected() {
    let cases: &[(&[u8], HeaderDecodeError)] = &[
        // SEP-2243: bad padding and bad characters inside the sentinel.
        (b"=?base64?SGVsbG8?=", HeaderDecodeError::InvalidBase64),
        (b"=?base64?SGVs*G8=?=", HeaderDecodeError::InvalidBase64),
        (b"=?base64?SGVsbG8=====?=", HeaderDecodeError::InvalidBase64),
        (b"=?base64?SGVs bG8=?=", HeaderDecodeError::InvalidBase64),
        // URL-safe alphabet is not the standard one.
        (
            b"=?base64?PT9iYXNlNjQ_bGl0ZXJhbD89?=",
            HeaderDecodeError::InvalidBase64,
        ),
        // Non-canonical trailing bits ("SGVsbG9=" would be "Hello" with stray bits).
        (b"=?base64?SGVsbG9=?=", HeaderDecodeError::InvalidBase64),
        // Valid base64 of 0xFF 0xFE: not UTF-8.
        (b"=?base64?//4=?=", HeaderDecodeError::InvalidUtf8),
        (
            b"caf\xc3\xa9",
            HeaderDecodeError::InvalidCharacter {
                index: 3,
                byte: 0xc3,
            },
        ),
        (
            b"a\nb",
            HeaderDecodeError::InvalidCharacter {
                index: 1,
                byte: b'\n',
            },
        ),
        (b" padded ", HeaderDecodeError::SurroundingWhitespace),
    ];
    for (raw, expected) in cases {
        assert_eq!(
            header::decode(raw).as_ref(),
            Err(expected),
            "{:?}",
            String::from_utf8_lossy(raw)
        );
        assert_eq!(
            header::check_header(Some(raw), Some(&json!("x"))),
            Err(HeaderMismatch::Malformed(expected.clone()))
        );
    }
}

#[test]
fn body_comparison_table() {
    // (header, body, matches)
    let cases: &[(&str, Value, bool)] = &[
        ("42", json!(42), true),
        ("42", json!(42.0), true),
        ("42.0", json!(42), true),
        ("4.2e1", json!(42), true),
        ("42", json!(43), false),
        ("+42", json!(42), false),
        ("042x", json!(42), false),
        ("-7", json!(-7), true),
        ("9007199254740991", json!(MAX_SAFE_INTEGER), true),
        ("true", json!(true), true),
        ("false", json!(false), true),
        ("True", json!(true), false),
        ("true", json!("true"), true),
        ("us-west1", json!("us-west1"), true),
        ("US-WEST1", json!("us-west1"), false),
        ("=?base64?dXMtd2VzdDE=?=", json!("us-west1"), true),
        ("=?BASE64?dXMtd2VzdDE=?=", json!("us-west1"), false),
        (
            "=?BASE64?dXMtd2VzdDE=?=",
            json!("=?BASE64?dXMtd2VzdDE=?="),
            true,
        ),
        ("x", json!(["x"]), false),
        ("", json!(""), true),
    ];
    for (raw, body, matches) in cases {
        assert_eq!(
            header::matches_body(raw.as_bytes(), body),
            Ok(*matches),
            "{raw:?} vs {body}"
        );
    }
}

#[test]
fn presence_rules() {
    let value = json!("v");
    assert_eq!(header::check_header(None, None), Ok(()));
    assert_eq!(header::check_header(None, Some(&Value::Null)), Ok(()));
    assert_eq!(
        header::check_header(Some(b"v"), None),
        Err(HeaderMismatch::Unexpected)
    );
    assert_eq!(
        header::check_header(Some(b"null"), Some(&Value::Null)),
        Err(HeaderMismatch::Unexpected)
    );
    assert_eq!(
        header::check_header(None, Some(&value)),
        Err(HeaderMismatch::Missing)
    );
    assert_eq!(
        header::check_header(Some(b"w"), Some(&value)),
        Err(HeaderMismatch::NotEqual)
    );
    assert_eq!(header::check_header(Some(b"v"), Some(&value)), Ok(()));
}

#[test]
fn decode_argument_table() {
    let ok: &[(&str, ParamType, Value)] = &[
        ("42", ParamType::Integer, json!(42)),
        (
            "-9007199254740991",
            ParamType::Integer,
            json!(-MAX_SAFE_INTEGER),
        ),
        ("true", ParamType::Boolean, json!(true)),
        ("false", ParamType::Boolean, json!(false)),
        ("42", ParamType::String, json!("42")),
        (
            "=?base64?IHBhZGRlZCA=?=",
            ParamType::String,
            json!(" padded "),
        ),
    ];
    for (raw, ty, expected) in ok {
        assert_eq!(
            header::decode_argument(raw.as_bytes(), *ty).as_ref(),
            Ok(expected)
        );
    }
    let bad: &[(&str, ParamType, HeaderDecodeError)] = &[
        ("+42", ParamType::Integer, HeaderDecodeError::NotAnInteger),
        ("4.2", ParamType::Integer, HeaderDecodeError::NotAnInteger),
        ("-", ParamType::Integer, HeaderDecodeError::NotAnInteger),
        ("", ParamType::Integer, HeaderDecodeError::NotAnInteger),
        (
            "9007199254740992",
            ParamType::Integer,
            HeaderDecodeError::IntegerOutOfRange,
        ),
        (
            "99999999999999999999999",
            ParamType::Integer,
            HeaderDecodeError::IntegerOutOfRange,
        ),
        ("TRUE", ParamType::Boolean, HeaderDecodeError::NotABoolean),
        ("1", ParamType::Boolean, HeaderDecodeError::NotABoolean),
    ];
    for (raw, ty, expected) in bad {
        assert_eq!(
            header::decode_argument(raw.as_bytes(), *ty).as_ref(),
            Err(expected),
            "{raw:?}"
        );
    }
}

#[test]
fn token_table() {
    // spec.md 5.3: `x-mcp-header` values are RFC 9110 tokens; "Method" is allowed.
    let cases: &[(&str, bool)] = &[
        ("Region", true),
        ("Method", true),
        ("a1!#$%&'*+-.^_`|~Z", true),
        ("", false),
        ("has space", false),
        ("colon:", false),
        ("slash/", false),
        ("quote\"", false),
        ("cr\r", false),
        ("lf\n", false),
        ("tab\t", false),
        ("nul\0", false),
        ("ümlaut", false),
        ("(paren)", false),
        ("{brace}", false),
        ("semi;", false),
        ("at@", false),
        ("eq=", false),
    ];
    for &(name, ok) in cases {
        assert_eq!(header::is_token(name), ok, "{name:?}");
    }
}

/// The reference definition of "plain", written independently of the implementation:
/// every char is a visible ASCII char, a space or a tab, and the first and last are neither.
fn plain_by_definition(text: &str) -> bool {
    let allowed = text
        .chars()
        .all(|c| c == ' ' || c == '\t' || c.is_ascii_graphic());
    let edges = [text.chars().next(), text.chars().last()];
    allowed && !edges.iter().any(|c| matches!(c, Some(' ' | '\t')))
}

fn arb_argument() -> impl Strategy<Value = (Value, ParamType)> {
    prop_oneof![
        any::<String>().prop_map(|s| (Value::String(s), ParamType::String)),
        "[ -~\t]{0,40}".prop_map(|s| (Value::String(s), ParamType::String)),
        "(=\\?base64\\?)?[ -~]{0,12}(\\?=)?".prop_map(|s| (Value::String(s), ParamType::String)),
        (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).prop_map(|i| (json!(i), ParamType::Integer)),
        any::<bool>().prop_map(|b| (json!(b), ParamType::Boolean)),
    ]
}

proptest! {
    #[test]
    fn argument_round_trip((value, ty) in arb_argument()) {
        let sent = header::encode_argument(&value).unwrap().unwrap();
        prop_assert_eq!(header::decode_argument(sent.as_bytes(), ty).unwrap(), value.clone());
        prop_assert!(header::check_header(Some(sent.as_bytes()), Some(&value)).is_ok());
        // What is sent is always a valid header field value: visible ASCII, space, tab.
        prop_assert!(sent.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b)));
    }

    #[test]
    fn plain_exactly_when_allowed(text in prop_oneof![
        any::<String>(),
        "[ -~\t]{0,40}",
        "(=\\?base64\\?)?[ -~]{0,12}(\\?=)?",
    ]) {
        let collision = text.starts_with("=?base64?") && text.ends_with("?=");
        let plain = plain_by_definition(&text) && !collision;
        let sent = header::encode_text(&text);
        if plain {
            prop_assert_eq!(&*sent, text.as_str());
        } else {
            prop_assert!(sent.starts_with("=?base64?") && sent.ends_with("?="));
            prop_assert!(sent.len() >= 11);
        }
        prop_assert_eq!(header::decode(sent.as_bytes()).unwrap(), text.as_str());
    }

    #[test]
    fn sentinel_collision_is_always_encoded(inner in "[!-~]{0,20}") {
        let text = format!("=?base64?{inner}?=");
        let sent = header::encode_text(&text);
        prop_assert_ne!(&*sent, text.as_str());
        prop_assert_eq!(header::decode(sent.as_bytes()).unwrap(), text.as_str());
    }

    #[test]
    fn malformed_base64_fails(payload in "[A-Za-z0-9+/=*_ -]{1,24}") {
        use base64::Engine as _;
        let decodes = base64::engine::general_purpose::STANDARD.decode(&payload).is_ok();
        let raw = format!("=?base64?{payload}?=");
        let result = header::decode(raw.as_bytes());
        if decodes {
            prop_assert!(!matches!(result, Err(HeaderDecodeError::InvalidBase64)));
        } else {
            prop_assert_eq!(result, Err(HeaderDecodeError::InvalidBase64));
        }
    }

    #[test]
    fn broken_padding_fails(text in "[ -~]{1,30}") {
        // Dropping the padding or a character from a non-multiple-of-3 payload breaks it.
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&text);
        let stripped = b64.trim_end_matches('=');
        prop_assume!(stripped.len() != b64.len());
        let raw = format!("=?base64?{stripped}?=");
        prop_assert_eq!(header::decode(raw.as_bytes()), Err(HeaderDecodeError::InvalidBase64));
    }

    #[test]
    fn decode_never_panics(raw in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = header::decode(&raw);
        let mut framed = b"=?base64?".to_vec();
        framed.extend_from_slice(&raw);
        framed.extend_from_slice(b"?=");
        let _ = header::decode(&framed);
    }
}
