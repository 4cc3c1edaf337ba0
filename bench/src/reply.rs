//! Checking the replies the load generator receives.
//!
//! A reply is parsed into borrowed, mostly-ignored shapes (unknown fields are skipped without
//! being built), so a check allocates only when a string has escapes.
//! The `add` reply passes when it is a JSON-RPC response with the expected id, no `error`, no
//! `isError: true`, a `resultType` that is absent or `"complete"`, and the sum 5 found in
//! `structuredContent` (a number, or the first numeric field of an object) or, when there is no
//! structured content, in the first text block (a number, or such an object, as JSON text).

use std::{borrow::Cow, fmt};

use serde::{
    Deserialize, Deserializer,
    de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor},
};

use crate::{Revision, request::EXPECTED_SUM};

/// What a message on a reply stream turned out to be, when it is not wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Checked {
    /// The awaited response, and it is right.
    Passed,
    /// A request or notification (it has a `method`): not the reply; keep reading the stream.
    NotAResponse,
}

/// Why a reply failed its check.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// The message is not JSON of the expected shape.
    #[error("malformed reply: {0}")]
    Malformed(String),
    /// The response carries a JSON-RPC error.
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// The response's id is not the request's.
    #[error("reply id {got} does not match request id {expected}")]
    WrongId {
        /// The request's id.
        expected: u64,
        /// The reply's id, as JSON.
        got: String,
    },
    /// A response with neither `result` nor `error`.
    #[error("response has no result")]
    NoResult,
    /// The tool result has `isError: true`.
    #[error("tool reported an error")]
    ToolError,
    /// `resultType` is present and not `"complete"`.
    #[error("unexpected resultType `{0}`")]
    ResultType(String),
    /// The sum is not 5.
    #[error("wrong sum {0}")]
    WrongSum(f64),
    /// No sum was found in the result.
    #[error("no sum in the result")]
    NoSum,
    /// The `initialize` result names another protocol version.
    #[error("server negotiated protocol version `{got}`, not `{expected}`")]
    WrongVersion {
        /// The version requested.
        expected: &'static str,
        /// The version answered.
        got: String,
    },
}

/// Checks one JSON-RPC message received in answer to `tools/call add {a: 2, b: 3}`.
///
/// `expected_id` is the request's id; `None` skips the id check (for the floor, whose reply is
/// fixed).
pub fn check_add_reply(message: &[u8], expected_id: Option<u64>) -> Result<Checked, ReplyError> {
    let parsed: Message<'_, AddResult> = parse(message)?;
    let Some(result) = response_result(&parsed, expected_id)? else {
        return Ok(Checked::NotAResponse);
    };
    result.check().map(|()| Checked::Passed)
}

/// The members of a `tools/call add` result that the check reads, taken while the result is
/// read: only the first text block's text is kept (and `resultType` when it is not
/// `"complete"`), nothing else is built. Owned, so a client can deserialize a result
/// straight into it (the load generator and our client's rows use this one type, so both pay
/// for the same check).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct AddResult {
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
    #[serde(default, rename = "resultType")]
    result_type: Option<ResultType>,
    #[serde(default, rename = "structuredContent")]
    structured_content: Option<SumProbe>,
    #[serde(default)]
    content: Option<FirstText>,
}

impl AddResult {
    /// Checks the result: no `isError: true`, a `resultType` absent or `"complete"`, and the sum
    /// 5 in `structuredContent` or, when there is none, in the first text block.
    pub fn check(&self) -> Result<(), ReplyError> {
        if self.is_error == Some(true) {
            return Err(ReplyError::ToolError);
        }
        if let Some(ResultType::Other(kind)) = &self.result_type {
            return Err(ReplyError::ResultType(kind.clone()));
        }
        let sum = match (self.structured_content, &self.content) {
            (Some(SumProbe(Some(sum))), _) => sum,
            (Some(SumProbe(None)), _) | (None, None) => return Err(ReplyError::NoSum),
            (None, Some(FirstText(text))) => {
                let text = text.as_deref().ok_or(ReplyError::NoSum)?;
                match serde_json::from_str::<SumProbe>(text.trim()) {
                    Ok(SumProbe(Some(sum))) => sum,
                    _ => return Err(ReplyError::NoSum),
                }
            }
        };
        if sum == EXPECTED_SUM as f64 {
            Ok(())
        } else {
            Err(ReplyError::WrongSum(sum))
        }
    }
}

/// A `resultType`: `"complete"` without allocating, anything else kept to report it.
#[derive(Clone, Debug, PartialEq)]
enum ResultType {
    Complete,
    Other(String),
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KindVisitor;
        impl Visitor<'_> for KindVisitor {
            type Value = ResultType;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a result type")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ResultType, E> {
                Ok(match v {
                    "complete" => ResultType::Complete,
                    other => ResultType::Other(other.to_owned()),
                })
            }
        }
        deserializer.deserialize_str(KindVisitor)
    }
}

/// Checks one JSON-RPC message received in answer to `initialize` (id 0): a result whose
/// `protocolVersion` is `revision`.
pub fn check_initialize_reply(message: &[u8], revision: Revision) -> Result<Checked, ReplyError> {
    let parsed: Message<'_, InitializeResult<'_>> = parse(message)?;
    let Some(result) = response_result(&parsed, Some(0))? else {
        return Ok(Checked::NotAResponse);
    };
    match &result.protocol_version {
        Some(v) if v == revision.as_str() => Ok(Checked::Passed),
        other => Err(ReplyError::WrongVersion {
            expected: revision.as_str(),
            got: other.as_deref().unwrap_or("").to_owned(),
        }),
    }
}

fn parse<'a, R: Deserialize<'a>>(message: &'a [u8]) -> Result<Message<'a, R>, ReplyError> {
    serde_json::from_slice(message).map_err(|e| ReplyError::Malformed(e.to_string()))
}

/// The result of a response, `None` for a request or notification.
fn response_result<'m, R>(
    parsed: &'m Message<'_, R>,
    expected_id: Option<u64>,
) -> Result<Option<&'m R>, ReplyError> {
    if parsed.method.is_some() {
        return Ok(None);
    }
    if let Some(error) = &parsed.error {
        return Err(ReplyError::Rpc {
            code: error.code,
            message: error.message.clone().into_owned(),
        });
    }
    if let Some(expected) = expected_id
        && parsed.id != Some(WireId::Number(expected))
    {
        return Err(ReplyError::WrongId {
            expected,
            got: parsed
                .id
                .as_ref()
                .map_or_else(|| "null".to_owned(), ToString::to_string),
        });
    }
    parsed.result.as_ref().map(Some).ok_or(ReplyError::NoResult)
}

/// A JSON-RPC message, reduced to what the checks read.
#[derive(Deserialize)]
struct Message<'a, R> {
    #[serde(default)]
    id: Option<WireId>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    result: Option<R>,
    #[serde(default, borrow)]
    error: Option<ErrorObject<'a>>,
}

#[derive(Deserialize)]
struct ErrorObject<'a> {
    #[serde(default)]
    code: i64,
    #[serde(default, borrow)]
    message: Cow<'a, str>,
}

#[derive(Deserialize)]
struct InitializeResult<'a> {
    #[serde(default, rename = "protocolVersion", borrow)]
    protocol_version: Option<Cow<'a, str>>,
}

/// A JSON-RPC id as far as the checks care: a non-negative integer, or something else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WireId {
    Number(u64),
    Other,
}

impl fmt::Display for WireId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Other => f.write_str("(not a non-negative integer)"),
        }
    }
}

impl<'de> Deserialize<'de> for WireId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl<'de> Visitor<'de> for IdVisitor {
            type Value = WireId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC id")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<WireId, E> {
                Ok(WireId::Number(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<WireId, E> {
                Ok(u64::try_from(v).map_or(WireId::Other, WireId::Number))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<WireId, E> {
                Ok(WireId::Other)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<WireId, E> {
                Ok(WireId::Other)
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// The sum in a value: the value itself when it is a number, or the first numeric field of an
/// object (nested values are skipped); `None` otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
struct SumProbe(Option<f64>);

impl<'de> Deserialize<'de> for SumProbe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ProbeVisitor { top: true })
    }
}

/// Visits a value for [`SumProbe`]; `top` is false for an object's field values, which are
/// only looked at when they are numbers.
struct ProbeVisitor {
    top: bool,
}

impl<'de> Visitor<'de> for ProbeVisitor {
    type Value = SumProbe;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SumProbe, E> {
        Ok(SumProbe(Some(v as f64)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SumProbe, E> {
        Ok(SumProbe(Some(v as f64)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<SumProbe, E> {
        Ok(SumProbe(Some(v)))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<SumProbe, E> {
        Ok(SumProbe(None))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<SumProbe, E> {
        Ok(SumProbe(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<SumProbe, E> {
        Ok(SumProbe(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SumProbe, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(SumProbe(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SumProbe, A::Error> {
        if !self.top {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(SumProbe(None));
        }
        let mut found = None;
        while map.next_key::<IgnoredAny>()?.is_some() {
            let SumProbe(value) = map.next_value::<FieldProbe>()?.0;
            found = found.or(value);
        }
        Ok(SumProbe(found))
    }
}

/// An object field's value for [`SumProbe`].
struct FieldProbe(SumProbe);

impl<'de> Deserialize<'de> for FieldProbe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(ProbeVisitor { top: false })
            .map(FieldProbe)
    }
}

/// The text of the first `{"type": "text"}` block of a content array (`None` when there is no
/// such block, or it has no text). Every block must have a `type`, and a `text` that is a
/// string.
#[derive(Clone, Debug, PartialEq)]
struct FirstText(Option<String>);

/// One block of a content array, as [`FirstText`] reads it.
struct Block {
    is_text: bool,
    text: Option<String>,
}

/// A member name of a content block.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum BlockKey {
    Type,
    Text,
    #[serde(other)]
    Other,
}

/// A block's `type`: whether it is `"text"`.
struct IsText(bool);

impl<'de> Deserialize<'de> for IsText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TypeVisitor;
        impl Visitor<'_> for TypeVisitor {
            type Value = IsText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a block type")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IsText, E> {
                Ok(IsText(v == "text"))
            }
        }
        deserializer.deserialize_str(TypeVisitor)
    }
}

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BlockVisitor;
        impl<'de> Visitor<'de> for BlockVisitor {
            type Value = Block;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Block, A::Error> {
                let (mut is_text, mut text) = (None, None);
                while let Some(key) = map.next_key::<BlockKey>()? {
                    match key {
                        BlockKey::Type if is_text.is_none() => {
                            is_text = Some(map.next_value::<IsText>()?.0);
                        }
                        BlockKey::Text if text.is_none() => {
                            text = Some(map.next_value::<String>()?)
                        }
                        BlockKey::Type => return Err(de::Error::duplicate_field("type")),
                        BlockKey::Text => return Err(de::Error::duplicate_field("text")),
                        BlockKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let is_text = is_text.ok_or_else(|| de::Error::missing_field("type"))?;
                Ok(Block { is_text, text })
            }
        }
        deserializer.deserialize_map(BlockVisitor)
    }
}

impl<'de> Deserialize<'de> for FirstText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SeqVisitor;
        impl<'de> Visitor<'de> for SeqVisitor {
            type Value = FirstText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstText, A::Error> {
                let mut first = None;
                while let Some(block) = seq.next_element::<Block>()? {
                    if first.is_none() && block.is_text {
                        first = Some(block.text);
                    }
                }
                Ok(FirstText(first.flatten()))
            }
        }
        deserializer.deserialize_seq(SeqVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_replies() {
        struct Case {
            name: &'static str,
            body: &'static str,
            id: Option<u64>,
            expected: Result<Checked, ReplyError>,
        }
        let cases = [
            Case {
                name: "structured object",
                body: r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"sum\":5}"}],"structuredContent":{"sum":5},"isError":false}}"#,
                id: Some(7),
                expected: Ok(Checked::Passed),
            },
            Case {
                name: "structured number",
                body: r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":5}}"#,
                id: Some(7),
                expected: Ok(Checked::Passed),
            },
            Case {
                name: "2026-07-28 envelope",
                body: r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"}},"content":[{"type":"text","text":"{\"sum\": 5}"}],"structuredContent":{"sum":5},"isError":false}}"#,
                id: Some(1),
                expected: Ok(Checked::Passed),
            },
            Case {
                name: "text only (2024-11-05), plain number",
                body: r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":" 5 "}]}}"#,
                id: Some(3),
                expected: Ok(Checked::Passed),
            },
            Case {
                name: "text only, JSON object, after an image block",
                body: r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"image","data":"","mimeType":"image/png"},{"type":"text","text":"{\"nested\":{\"x\":1},\"sum\":5}"}]}}"#,
                id: Some(3),
                expected: Ok(Checked::Passed),
            },
            Case {
                name: "float sum",
                body: r#"{"jsonrpc":"2.0","id":3,"result":{"structuredContent":{"sum":5.0}}}"#,
                id: Some(3),
                expected: Ok(Checked::Passed),
            },
            Case {
                name: "id not checked for the floor",
                body: r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"sum":5}}}"#,
                id: None,
                expected: Ok(Checked::Passed),
            },
            Case {
                name: "notification on the stream",
                body: r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#,
                id: Some(3),
                expected: Ok(Checked::NotAResponse),
            },
            Case {
                name: "wrong sum",
                body: r#"{"jsonrpc":"2.0","id":3,"result":{"structuredContent":{"sum":6}}}"#,
                id: Some(3),
                expected: Err(ReplyError::WrongSum(6.0)),
            },
            Case {
                name: "wrong id",
                body: r#"{"jsonrpc":"2.0","id":4,"result":{"structuredContent":{"sum":5}}}"#,
                id: Some(3),
                expected: Err(ReplyError::WrongId {
                    expected: 3,
                    got: "4".into(),
                }),
            },
            Case {
                name: "string id",
                body: r#"{"jsonrpc":"2.0","id":"3","result":{"structuredContent":{"sum":5}}}"#,
                id: Some(3),
                expected: Err(ReplyError::WrongId {
                    expected: 3,
                    got: "(not a non-negative integer)".into(),
                }),
            },
            Case {
                name: "JSON-RPC error",
                body: r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad \"args\""}}"#,
                id: Some(3),
                expected: Err(ReplyError::Rpc {
                    code: -32602,
                    message: "bad \"args\"".into(),
                }),
            },
            Case {
                name: "tool error",
                body: r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"5"}],"isError":true}}"#,
                id: Some(3),
                expected: Err(ReplyError::ToolError),
            },
            Case {
                name: "input required",
                body: r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{}}}"#,
                id: Some(3),
                expected: Err(ReplyError::ResultType("input_required".into())),
            },
            Case {
                name: "no result",
                body: r#"{"jsonrpc":"2.0","id":3}"#,
                id: Some(3),
                expected: Err(ReplyError::NoResult),
            },
            Case {
                name: "no sum anywhere",
                body: r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"five"}]}}"#,
                id: Some(3),
                expected: Err(ReplyError::NoSum),
            },
            Case {
                name: "structured content without a number",
                body: r#"{"jsonrpc":"2.0","id":3,"result":{"structuredContent":{"sum":"5"}}}"#,
                id: Some(3),
                expected: Err(ReplyError::NoSum),
            },
        ];
        for case in cases {
            assert_eq!(
                check_add_reply(case.body.as_bytes(), case.id),
                case.expected,
                "{}",
                case.name
            );
        }
    }

    /// The same result, read from a parsed value (our client over stdio) and from text (raw
    /// replies, and our client over HTTP), gets the same verdict; `None` when it does not read
    /// as a result at all.
    #[test]
    fn add_results_read_from_a_value_and_from_text_agree() {
        use serde_json::json;
        let table = [
            (json!({"structuredContent": {"sum": 5}}), Some(Ok(()))),
            (json!({"structuredContent": 5}), Some(Ok(()))),
            (
                json!({"structuredContent": {"nested": {"sum": 5}, "sum": 5.0}}),
                Some(Ok(())),
            ),
            // `null` is no structured content: the text has the sum.
            (
                json!({"structuredContent": null, "content": [{"type": "text", "text": "5"}]}),
                Some(Ok(())),
            ),
            (
                json!({"content": [{"type": "image", "data": ""}, {"text": " {\"sum\": 5} ", "type": "text", "x": [1]}, {"type": "text", "text": "6"}]}),
                Some(Ok(())),
            ),
            (
                json!({"content": [{"type": "text"}]}),
                Some(Err(ReplyError::NoSum)),
            ),
            (json!({"content": []}), Some(Err(ReplyError::NoSum))),
            (json!({}), Some(Err(ReplyError::NoSum))),
            (
                json!({"content": [{"type": "text", "text": "five"}]}),
                Some(Err(ReplyError::NoSum)),
            ),
            (
                json!({"structuredContent": {"sum": "5"}, "content": [{"type": "text", "text": "5"}]}),
                Some(Err(ReplyError::NoSum)),
            ),
            (
                json!({"structuredContent": {"sum": 6}}),
                Some(Err(ReplyError::WrongSum(6.0))),
            ),
            (
                json!({"structuredContent": {"sum": 5}, "isError": true}),
                Some(Err(ReplyError::ToolError)),
            ),
            (
                json!({"structuredContent": {"sum": 5}, "resultType": "complete"}),
                Some(Ok(())),
            ),
            (
                json!({"resultType": "input_required"}),
                Some(Err(ReplyError::ResultType("input_required".into()))),
            ),
            (json!({"content": "5"}), None),
            (json!({"content": [5]}), None),
            (json!({"content": [{"text": "5"}]}), None),
            (json!({"content": [{"type": "text", "text": 5}]}), None),
            (json!({"isError": "yes"}), None),
            (json!({"resultType": 1}), None),
        ];
        for (result, expected) in table {
            let from_value = AddResult::deserialize(&result).ok().map(|r| r.check());
            assert_eq!(from_value, expected, "{result}");
            let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
            let from_text = match check_add_reply(text.as_bytes(), Some(1)) {
                Err(ReplyError::Malformed(_)) => None,
                other => Some(other.map(|_| ())),
            };
            assert_eq!(from_text, expected, "{text}");
        }
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for body in [
            &b""[..],
            b"{",
            b"[]",
            b"null",
            b"\xff\xfe",
            b"{\"result\":{\"content\":5}}",
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","type":"text"}]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"5","text":"5"}]}}"#,
        ] {
            assert!(check_add_reply(body, Some(1)).is_err(), "{body:?}");
        }
    }

    #[test]
    fn initialize_replies() {
        let ok = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#;
        assert_eq!(
            check_initialize_reply(ok, Revision::V2025_06_18),
            Ok(Checked::Passed)
        );
        assert_eq!(
            check_initialize_reply(ok, Revision::V2025_11_25),
            Err(ReplyError::WrongVersion {
                expected: "2025-11-25",
                got: "2025-06-18".into()
            })
        );
        let unsupported = br#"{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Unsupported protocol version"}}"#;
        assert!(matches!(
            check_initialize_reply(unsupported, Revision::V2024_11_05),
            Err(ReplyError::Rpc { code: -32602, .. })
        ));
    }
}
