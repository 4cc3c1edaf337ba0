//! [`is_plain_complete_result`]: a response whose result certainly holds no question, seen
//! from its text alone.

/// Whether the text of a response body shows, without parsing it, that its result needs
/// nothing from [`Adapter::read_result`](crate::Adapter::read_result) on any revision: no
/// input-required result, no task or other `resultType` but `"complete"`, no `_meta` (where
/// the older revisions put their questions).
///
/// The rule is on the text: no `"_meta"` member name anywhere, every `"resultType"` member
/// name followed by `"complete"`, and no `\u` escape (which could spell either name). A body
/// that passes may be read straight into the caller's type (for instance with
/// [`mcp_wire::jsonrpc::read_success_as`]); `false` only means "read the result as usual"
/// (a `"_meta"` inside a string's text, or a lone `_meta` deep in the result, also says
/// `false`). It says nothing about the rest of the body: it need not be JSON, nor a success.
///
/// Only the bytes `\`, `_` and `T` (rare in results) are looked at, found with a vectorised
/// search, so a long result costs little more than a scan of its bytes.
///
/// ```
/// use mcp_adapters::{AdapterSet, ResultKind, is_plain_complete_result};
/// use serde_json::Value;
///
/// let body = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"5"}]}}"#;
/// assert!(is_plain_complete_result(body));
/// let result = &serde_json::from_str::<Value>(body).unwrap()["result"];
/// for adapter in AdapterSet::all().adapters() {
///     assert_eq!(adapter.read_result(result), Ok(ResultKind::Complete));
/// }
///
/// // A question, or `_meta` that may hold one: read the result as usual.
/// assert!(!is_plain_complete_result(
///     r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}"#
/// ));
/// assert!(!is_plain_complete_result(r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{}}}"#));
/// ```
pub fn is_plain_complete_result(body: &str) -> bool {
    memchr::memchr3_iter(b'\\', b'_', b'T', body.as_bytes()).all(|at| byte_allows(body, at))
}

impl crate::Adapter {
    /// [`is_plain_complete_result`] for a response to a request of this revision: on a
    /// revision whose results say what they are (`resultType`, 2026-07-28), a question is
    /// never in `_meta`, so a `_meta` (the server's identity every result carries there) does
    /// not stop the body from being read straight into the caller's type; on the others it
    /// does, as there.
    ///
    /// ```
    /// use mcp_adapters::AdapterSet;
    ///
    /// let body = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"a":1},"resultType":"complete"}}"#;
    /// let all = AdapterSet::all();
    /// assert!(all.by_version("2026-07-28").unwrap().is_plain_complete_result(body));
    /// assert!(!all.by_version("2025-11-25").unwrap().is_plain_complete_result(body));
    /// ```
    pub fn is_plain_complete_result(&self, body: &str) -> bool {
        if !self.features().result_envelope {
            return is_plain_complete_result(body);
        }
        memchr::memchr2_iter(b'\\', b'T', body.as_bytes()).all(|at| byte_allows(body, at))
    }
}

/// The rule of [`is_plain_complete_result`] at one byte of `text`: no `\u` escape, no
/// `"_meta"` member name, every `"resultType"` member name followed by `"complete"`.
fn byte_allows(text: &str, at: usize) -> bool {
    const META: &[u8] = br#""_meta""#;
    const RESULT_TYPE: &[u8] = br#""resultType""#;
    // Where the `T` sits in `"resultType"`.
    const T_AT: usize = 7;
    let bytes = text.as_bytes();
    match bytes[at] {
        b'\\' => bytes.get(at + 1) != Some(&b'u'),
        b'_' => !(at >= 1 && bytes[at - 1..].starts_with(META)),
        b'T' => {
            let Some(start) = at.checked_sub(T_AT) else {
                return true;
            };
            if !bytes[start..].starts_with(RESULT_TYPE) {
                return true;
            }
            // A char boundary: the name ends with a quote.
            let after = text[start + RESULT_TYPE.len()..].trim_start();
            after
                .strip_prefix(':')
                .is_some_and(|after| after.trim_start().starts_with(r#""complete""#))
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::{AdapterSet, INPUT_REQUIRED_META, ResultKind};

    /// [`is_plain_complete_result`] for bytes, which must be UTF-8.
    fn surely_complete(body: &[u8]) -> bool {
        std::str::from_utf8(body).is_ok_and(is_plain_complete_result)
    }

    #[test]
    fn only_results_without_questions_are_surely_complete() {
        let yes = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"sum\":5}"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType" : "complete","x":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"text":"\"_meta\" and \"resultType\""}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","a":{"resultType":"complete"}}}"#,
        ];
        for body in yes {
            assert!(surely_complete(body.as_bytes()), "{body}");
        }
        let no = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","a":{"resultType":1}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"text":"resultType","list":["resultType"]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"\u005fmeta":{}}}"#,
        ];
        for body in no {
            assert!(!surely_complete(body.as_bytes()), "{body}");
        }
        assert!(!surely_complete(b"{\"result\":\"\xff\"}"));
    }

    #[test]
    fn a_revision_with_result_types_reads_past_meta() {
        let all = AdapterSet::all();
        let modern = all.by_version("2026-07-28").unwrap();
        let meta = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}},"resultType":"complete"}}"#;
        assert!(modern.is_plain_complete_result(meta));
        assert_eq!(
            modern.read_result(&serde_json::from_str::<Value>(meta).unwrap()["result"]),
            Ok(ResultKind::Complete)
        );
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{},"resultType":"input_required"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{},"resultType":"task"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{},"\u0072esultType":"task"}}"#,
        ] {
            assert!(!modern.is_plain_complete_result(body), "{body}");
        }
        for adapter in all
            .adapters()
            .iter()
            .filter(|a| !a.features().result_envelope)
        {
            assert!(
                !adapter.is_plain_complete_result(meta),
                "{}",
                adapter.version()
            );
        }
    }

    /// The rule [`is_plain_complete_result`] implements, as plain text searches.
    fn surely_complete_by_search(body: &[u8]) -> bool {
        let Ok(text) = std::str::from_utf8(body) else {
            return false;
        };
        if text.contains("\\u") || text.contains(r#""_meta""#) {
            return false;
        }
        let name = r#""resultType""#;
        let mut rest = text;
        while let Some(at) = rest.find(name) {
            let after = rest[at + name.len()..].trim_start();
            let Some(after) = after.strip_prefix(':') else {
                return false;
            };
            let Some(after) = after.trim_start().strip_prefix(r#""complete""#) else {
                return false;
            };
            rest = after;
        }
        true
    }

    /// Bodies made of the pieces the rule looks for, so that most draws hit one of them.
    fn pieces() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(&b"\""[..]),
            Just(&b"\\"[..]),
            Just(&b"u"[..]),
            Just(&b"_"[..]),
            Just(&b"T"[..]),
            Just(&b"_meta"[..]),
            Just(&b"resultType"[..]),
            Just(&b"complete"[..]),
            Just(&b":"[..]),
            Just(&b" "[..]),
            Just(&b"\t"[..]),
            Just(&b"{},["[..]),
            Just(&b"\xff"[..]),
            Just("\u{a0}".as_bytes()),
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|parts| parts.concat())
    }

    /// Results made of what `read_result` looks at: `resultType` values, `_meta` with and
    /// without questions, nested anywhere, names escaped or not.
    fn result() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(json!("complete")),
            Just(json!("input_required")),
            Just(json!("task")),
            Just(json!({"inputRequests": {"a": {"method": "roots/list"}}, "requestState": "s"})),
            Just(json!({INPUT_REQUIRED_META: {"inputRequests": {}}})),
            Just(json!(1)),
        ];
        let name = prop_oneof![
            Just("resultType"),
            Just("_meta"),
            Just("inputRequests"),
            Just("content"),
        ];
        leaf.prop_recursive(3, 16, 4, move |inner| {
            proptest::collection::vec((name.clone(), inner), 0..4).prop_map(|members| {
                Value::Object(
                    members
                        .into_iter()
                        .map(|(name, value)| (name.to_owned(), value))
                        .collect(),
                )
            })
        })
    }

    proptest! {
        #[test]
        fn surely_complete_is_the_text_search_rule(body in pieces()) {
            prop_assert_eq!(surely_complete(&body), surely_complete_by_search(&body));
        }

        /// What the text rule passes, every revision reads as complete.
        #[test]
        fn a_plain_complete_result_is_complete_on_every_revision(
            result in result(),
            pretty in any::<bool>(),
        ) {
            let body = json!({"jsonrpc": "2.0", "id": 1, "result": result});
            let text = if pretty {
                serde_json::to_string_pretty(&body).unwrap()
            } else {
                body.to_string()
            };
            if is_plain_complete_result(&text) && result.is_object() {
                for adapter in AdapterSet::all().adapters() {
                    prop_assert_eq!(adapter.read_result(&result), Ok(ResultKind::Complete));
                }
            }
        }
    }
}
