//! The bytes of a client request: JSON-RPC request with the revision's per-request `_meta`.

use mcp_wire::jsonrpc::Id;
use mcp_wire::names::method;
use serde_json::{Map, Value};

use crate::adapter::Adapter;
use crate::operation::Operation;
use crate::write;

/// The `_meta` a revision adds to every request of one client: what
/// [`Adapter::request_meta`] returns, kept with its members serialized, so that each request
/// written with [`Adapter::encode_request`] or [`Adapter::encode_tool_call`] copies them
/// instead of building and serializing them again.
///
/// Empty on revisions without per-request `_meta` (unless a progress token was given), and
/// then requests are written without adding a `_meta`.
///
/// ```
/// use mcp_adapters::{Adapter, ClientContext, RequestMeta, Revision};
/// use serde_json::json;
///
/// let client = ClientContext {
///     info: Some(json!({"name": "c", "version": "1"})),
///     capabilities: None,
/// };
/// let modern = Adapter::new(Revision::V2026_07_28);
/// let meta = RequestMeta::new(modern.request_meta(&client, None, None));
/// assert_eq!(
///     meta.entries()["io.modelcontextprotocol/protocolVersion"],
///     Revision::V2026_07_28.as_str()
/// );
///
/// let legacy = Adapter::new(Revision::V2025_06_18);
/// assert!(RequestMeta::new(legacy.request_meta(&client, None, None)).is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestMeta {
    entries: Map<String, Value>,
    /// The members of `entries` as JSON, `"key":value,...`, without the braces.
    members: Vec<u8>,
    /// Where each entry's `"key":value` is in `members`, in the order of `entries`: a request
    /// that overrides some entries copies the others' bytes.
    spans: Vec<std::ops::Range<usize>>,
}

impl RequestMeta {
    /// The `_meta` entries `entries` (usually [`Adapter::request_meta`]'s), serialized once.
    pub fn new(entries: Map<String, Value>) -> Self {
        let mut members = Vec::new();
        let mut spans = Vec::with_capacity(entries.len());
        for (key, value) in &entries {
            if !members.is_empty() {
                members.push(b',');
            }
            let start = members.len();
            write::write_member(&mut members, key, value);
            spans.push(start..members.len());
        }
        Self {
            entries,
            members,
            spans,
        }
    }

    /// Writes the members whose keys `skip` does not name (already serialized), each followed
    /// by a comma.
    fn write_except(&self, out: &mut Vec<u8>, skip: impl Fn(&str) -> bool) {
        for ((key, _), span) in self.entries.iter().zip(&self.spans) {
            if !skip(key) {
                out.extend_from_slice(&self.members[span.clone()]);
                out.push(b',');
            }
        }
    }

    /// The entries.
    pub fn entries(&self) -> &Map<String, Value> {
        &self.entries
    }

    /// There is nothing to add.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds the entries to `params._meta` (created if absent); entries the caller already put
    /// there win, and a `_meta` that is not an object is left alone. What
    /// [`Adapter::client_params`] does with the revision's entries.
    pub fn add_to(&self, params: &mut Map<String, Value>) {
        add_meta(params, &self.entries);
    }
}

impl From<Map<String, Value>> for RequestMeta {
    fn from(entries: Map<String, Value>) -> Self {
        Self::new(entries)
    }
}

/// `added` merged into `params._meta` (created if absent), the entries already there winning.
pub(crate) fn add_meta(params: &mut Map<String, Value>, added: &Map<String, Value>) {
    if added.is_empty() {
        return;
    }
    let entry = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(existing) = entry {
        for (k, v) in added {
            if !existing.contains_key(k) {
                existing.insert(k.clone(), v.clone());
            }
        }
    }
}

impl Adapter {
    /// A JSON-RPC request as the client sends it on this revision: `params` with `meta` merged
    /// into their `_meta` as [`Adapter::client_params`] merges it (entries already there win),
    /// serialized. `None` params are sent as `{"_meta": ...}` when `meta` has entries and left
    /// out otherwise; params that are not an object (MCP never sends those) are sent as they
    /// are.
    ///
    /// The result is the request [`Adapter::client_params`] would give, written without
    /// copying the params: the caller's members, then `_meta` with the caller's entries
    /// followed by `meta`'s, already serialized.
    ///
    /// ```
    /// use mcp_adapters::{Adapter, RequestMeta, Revision};
    /// use mcp_wire::jsonrpc::Id;
    /// use serde_json::{Map, json};
    ///
    /// let adapter = Adapter::new(Revision::V2026_07_28);
    /// let mut entries = Map::new();
    /// entries.insert("io.modelcontextprotocol/protocolVersion".into(), "2026-07-28".into());
    /// let meta = RequestMeta::new(entries);
    /// let params = json!({"cursor": "c", "_meta": {"progressToken": 1}});
    /// let bytes = adapter.encode_request(&Id::Number(3), "tools/list", Some(&params), &meta);
    /// assert_eq!(
    ///     std::str::from_utf8(&bytes).unwrap(),
    ///     r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"c","_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
    /// );
    /// ```
    pub fn encode_request(
        &self,
        id: &Id,
        method_name: &str,
        params: Option<&Value>,
        meta: &RequestMeta,
    ) -> Vec<u8> {
        if meta.is_empty() {
            return plain_request(id, method_name, params);
        }
        let empty = Map::new();
        let map = match params {
            Some(Value::Object(map)) => map,
            None => &empty,
            Some(_) => return plain_request(id, method_name, params),
        };
        let own = match map.get("_meta") {
            None => &empty,
            Some(Value::Object(own)) => own,
            Some(_) => return plain_request(id, method_name, params),
        };
        // The caller set one of the revision's entries (a gateway passing its downstream
        // client's capabilities): the caller's wins, as `client_params` merges.
        let overridden = own.keys().any(|k| meta.entries.contains_key(k));
        let mut out = request_head(id, method_name, meta.members.len());
        out.extend_from_slice(br#","params":{"#);
        for (k, v) in map {
            if k == "_meta" {
                continue;
            }
            write::write_member(&mut out, k, v);
            out.push(b',');
        }
        out.extend_from_slice(br#""_meta":{"#);
        for (k, v) in own {
            write::write_member(&mut out, k, v);
            out.push(b',');
        }
        if overridden {
            meta.write_except(&mut out, |k| own.contains_key(k));
            if out.last() == Some(&b',') {
                out.pop();
            }
        } else {
            out.extend_from_slice(&meta.members);
        }
        out.extend_from_slice(b"}}}");
        out
    }

    /// [`Adapter::encode_request`] for a `tools/call` whose params are
    /// `{"name": name, "arguments": arguments}` (`arguments` left out when `null`), written
    /// from the name and arguments without building the params.
    ///
    /// ```
    /// use mcp_adapters::{Adapter, RequestMeta, Revision};
    /// use mcp_wire::jsonrpc::Id;
    /// use serde_json::json;
    ///
    /// let adapter = Adapter::new(Revision::V2025_06_18);
    /// let bytes =
    ///     adapter.encode_tool_call(&Id::Number(1), "add", &json!({"a": 2}), &RequestMeta::default());
    /// assert_eq!(
    ///     std::str::from_utf8(&bytes).unwrap(),
    ///     r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2}}}"#
    /// );
    /// ```
    pub fn encode_tool_call(
        &self,
        id: &Id,
        name: &str,
        arguments: &Value,
        meta: &RequestMeta,
    ) -> Vec<u8> {
        let mut out = self.tool_call_head(id, name, arguments, meta);
        if !meta.is_empty() {
            out.extend_from_slice(br#","_meta":{"#);
            out.extend_from_slice(&meta.members);
            out.push(b'}');
        }
        out.extend_from_slice(b"}}");
        out
    }

    /// [`Adapter::encode_tool_call`] with `_meta` entries of the call's own (a progress token,
    /// the caller's), which win over `meta`'s entries of the same name; `own` names each key
    /// once. What [`Adapter::encode_request`] writes for the same params with `own` in their
    /// `_meta`, without building that map.
    ///
    /// ```
    /// use mcp_adapters::{AdapterSet, RequestMeta};
    /// use mcp_wire::jsonrpc::Id;
    /// use serde_json::{Map, Value, json};
    ///
    /// let adapter = AdapterSet::all().by_version("2025-11-25").unwrap();
    /// let mut entries = Map::new();
    /// entries.insert("a".into(), json!(1));
    /// entries.insert("b".into(), json!(2));
    /// let meta = RequestMeta::new(entries);
    /// let token = json!(7);
    /// let body = adapter.encode_tool_call_with_meta(
    ///     &Id::Number(1), "add", &json!({"x": 1}), &meta, &[("progressToken", &token), ("b", &json!(3))],
    /// );
    /// let sent: Value = serde_json::from_slice(&body).unwrap();
    /// assert_eq!(sent["params"]["_meta"], json!({"progressToken": 7, "b": 3, "a": 1}));
    /// ```
    pub fn encode_tool_call_with_meta(
        &self,
        id: &Id,
        name: &str,
        arguments: &Value,
        meta: &RequestMeta,
        own: &[(&str, &Value)],
    ) -> Vec<u8> {
        if own.is_empty() {
            return self.encode_tool_call(id, name, arguments, meta);
        }
        let mut out = self.tool_call_head(id, name, arguments, meta);
        out.extend_from_slice(br#","_meta":{"#);
        for (key, value) in own {
            write::write_member(&mut out, key, value);
            out.push(b',');
        }
        meta.write_except(&mut out, |key| own.iter().any(|(k, _)| *k == key));
        out.pop();
        out.extend_from_slice(b"}}}");
        out
    }
}

impl Adapter {
    /// A tool call up to its arguments: `{"jsonrpc":"2.0","id":...,"method":...,"params":{"name":...`
    /// and `,"arguments":...` unless they are `null`, with room for `meta`.
    fn tool_call_head(
        &self,
        id: &Id,
        name: &str,
        arguments: &Value,
        meta: &RequestMeta,
    ) -> Vec<u8> {
        let method_name = self
            .method(Operation::CallTool)
            .unwrap_or(method::TOOLS_CALL);
        let mut out = request_head(id, method_name, meta.members.len());
        out.extend_from_slice(br#","params":{"name":"#);
        write::write_str(&mut out, name);
        if !arguments.is_null() {
            out.extend_from_slice(br#","arguments":"#);
            write::write_value(&mut out, arguments);
        }
        out
    }
}

/// `{"jsonrpc":"2.0","id":...,"method":...` with room for `extra` more bytes than a small
/// request needs.
fn request_head(id: &Id, method_name: &str, extra: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + extra);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    write::write_id(&mut out, id);
    out.extend_from_slice(br#","method":"#);
    write::write_str(&mut out, method_name);
    out
}

/// The request with `params` as they are (left out when `None`).
fn plain_request(id: &Id, method_name: &str, params: Option<&Value>) -> Vec<u8> {
    let mut out = request_head(id, method_name, 0);
    if let Some(params) = params {
        out.extend_from_slice(br#","params":"#);
        write::write_value(&mut out, params);
    }
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::call::{ClientContext, LogLevel};
    use crate::revision::Revision;

    /// The request as `client_params` and serde_json make it, serialized: the reference.
    fn reference_bytes(
        adapter: Adapter,
        id: &Id,
        method_name: &str,
        params: Option<&Value>,
        client: &ClientContext,
        level: Option<LogLevel>,
        token: Option<&Id>,
    ) -> Vec<u8> {
        #[derive(serde::Serialize)]
        struct Request<'a> {
            jsonrpc: &'static str,
            id: &'a Id,
            method: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<Value>,
        }
        let params = match params {
            Some(Value::Object(map)) => Some(Value::Object(adapter.client_params(
                map.clone(),
                client,
                level,
                token,
            ))),
            None => {
                let params = adapter.client_params(Map::new(), client, level, token);
                (!params.is_empty()).then_some(Value::Object(params))
            }
            Some(other) => Some(other.clone()),
        };
        serde_json::to_vec(&Request {
            jsonrpc: "2.0",
            id,
            method: method_name,
            params,
        })
        .unwrap()
    }

    /// [`reference_bytes`] read back (as the encoded request is: numbers compare as parsed).
    fn reference(
        adapter: Adapter,
        id: &Id,
        method_name: &str,
        params: Option<&Value>,
        client: &ClientContext,
        level: Option<LogLevel>,
        token: Option<&Id>,
    ) -> Value {
        parse(&reference_bytes(
            adapter,
            id,
            method_name,
            params,
            client,
            level,
            token,
        ))
    }

    fn parse(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    /// A tool call's params as a struct: serde writes `name` before `arguments`, as
    /// `encode_tool_call` does.
    #[derive(serde::Serialize)]
    struct ToolParams<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "Value::is_null")]
        arguments: &'a Value,
    }

    #[test]
    fn the_callers_meta_entries_win_without_a_copy_of_the_params() {
        let adapter = Adapter::new(Revision::V2026_07_28);
        let meta = RequestMeta::new(json!({"a": 1, "b": 2}).as_object().unwrap().clone());
        let id = Id::Number(1);
        for (own, merged) in [
            (json!({"a": 9}), json!({"a": 9, "b": 2})),
            (json!({"a": 9, "b": 8}), json!({"a": 9, "b": 8})),
            (json!({"b": 8, "c": [1]}), json!({"a": 1, "b": 8, "c": [1]})),
        ] {
            let params = json!({"name": "t", "arguments": {"x": "\"y\""}, "_meta": own});
            let bytes = adapter.encode_request(&id, "tools/call", Some(&params), &meta);
            assert_eq!(
                parse(&bytes),
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "name": "t", "arguments": {"x": "\"y\""}, "_meta": merged}}),
                "{}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }

    #[test]
    fn the_spliced_meta_equals_client_params() {
        let client = ClientContext {
            info: Some(json!({"name": "c", "version": "1"})),
            capabilities: Some(json!({"roots": {}}).as_object().unwrap().clone()),
        };
        let id = Id::Number(7);
        let cases = [
            None,
            Some(json!({})),
            Some(json!({"name": "t", "arguments": {"a": [1, "x\"y"]}})),
            Some(json!({"name": "t", "_meta": {"progressToken": 3}})),
            Some(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "mine", "x": 1}})),
            Some(json!({"_meta": 5})),
            Some(json!([1, 2])),
        ];
        for revision in Revision::ALL {
            let adapter = Adapter::new(revision);
            for token in [None, Some(Id::from("p"))] {
                let meta = RequestMeta::new(adapter.request_meta(
                    &client,
                    Some(LogLevel::Debug),
                    token.as_ref(),
                ));
                for params in &cases {
                    let bytes = adapter.encode_request(&id, "tools/call", params.as_ref(), &meta);
                    let want = reference(
                        adapter,
                        &id,
                        "tools/call",
                        params.as_ref(),
                        &client,
                        Some(LogLevel::Debug),
                        token.as_ref(),
                    );
                    assert_eq!(parse(&bytes), want, "{revision:?} {params:?}");
                    if meta.is_empty() {
                        // Nothing to add: the very bytes serde writes.
                        let serialized = reference_bytes(
                            adapter,
                            &id,
                            "tools/call",
                            params.as_ref(),
                            &client,
                            Some(LogLevel::Debug),
                            token.as_ref(),
                        );
                        assert_eq!(bytes, serialized, "{revision:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_tool_call_from_name_and_arguments_equals_its_params() {
        let client = ClientContext {
            info: Some(json!({"name": "c", "version": "1"})),
            capabilities: None,
        };
        let id = Id::Number(9);
        let names = [
            "echo",
            "a \"quoted\" tool",
            "ünï",
            "tab\there",
            "back\\slash\u{7f}",
        ];
        let arguments = [
            Value::Null,
            json!({}),
            json!({"text": "x\ny", "n": [1, 2.5, null]}),
            json!("not an object"),
        ];
        for revision in Revision::ALL {
            let adapter = Adapter::new(revision);
            let meta = RequestMeta::new(adapter.request_meta(&client, None, None));
            for name in names {
                for arguments in &arguments {
                    let bytes = adapter.encode_tool_call(&id, name, arguments, &meta);
                    let mut params = Map::new();
                    params.insert("name".into(), name.into());
                    if !arguments.is_null() {
                        params.insert("arguments".into(), arguments.clone());
                    }
                    let params = Value::Object(params);
                    assert_eq!(
                        parse(&bytes),
                        parse(&adapter.encode_request(
                            &id,
                            method::TOOLS_CALL,
                            Some(&params),
                            &meta
                        )),
                        "{revision:?} {name} {arguments}"
                    );
                    assert_eq!(
                        parse(&bytes),
                        reference(
                            adapter,
                            &id,
                            method::TOOLS_CALL,
                            Some(&params),
                            &client,
                            None,
                            None
                        ),
                        "{revision:?} {name} {arguments}"
                    );
                    if meta.is_empty() {
                        // Written straight out: the very bytes serde writes for the params.
                        let mut serialized =
                            br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":"#.to_vec();
                        let params = ToolParams { name, arguments };
                        serialized.extend_from_slice(&serde_json::to_vec(&params).unwrap());
                        serialized.push(b'}');
                        assert_eq!(bytes, serialized, "{name} {arguments}");
                    }
                }
            }
        }
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Keys that collide with the revision's `_meta` now and then.
    fn meta_key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("io.modelcontextprotocol/protocolVersion".to_owned()),
            Just("io.modelcontextprotocol/logLevel".to_owned()),
            Just("progressToken".to_owned()),
            any::<String>(),
        ]
    }

    fn any_params() -> impl Strategy<Value = Option<Value>> {
        let own_meta = prop_oneof![
            Just(None),
            any_value().prop_map(Some),
            proptest::collection::btree_map(meta_key(), any_value(), 0..4)
                .prop_map(|m| Some(Value::Object(m.into_iter().collect()))),
        ];
        let object = (
            proptest::collection::btree_map(any::<String>(), any_value(), 0..4),
            own_meta,
        )
            .prop_map(|(members, own)| {
                let mut map: Map<String, Value> = members.into_iter().collect();
                map.remove("_meta");
                if let Some(own) = own {
                    map.insert("_meta".into(), own);
                }
                Some(Value::Object(map))
            });
        prop_oneof![Just(None), any_value().prop_map(Some), object]
    }

    fn any_client() -> impl Strategy<Value = ClientContext> {
        (
            proptest::option::of(any_value()),
            proptest::option::of(proptest::collection::btree_map(
                "[a-z]{1,8}",
                any_value(),
                0..3,
            )),
        )
            .prop_map(|(info, capabilities)| ClientContext {
                info,
                capabilities: capabilities.map(|c| c.into_iter().collect()),
            })
    }

    proptest! {
        /// The fast encoding is `client_params` followed by serializing the request, for any
        /// params, client, log level and progress token.
        #[test]
        fn encode_request_is_client_params_serialized(
            revision in proptest::sample::select(Revision::ALL.to_vec()),
            params in any_params(),
            client in any_client(),
            level in proptest::option::of(Just(LogLevel::Warning)),
            token in proptest::option::of(any::<i64>().prop_map(Id::Number)),
            id in prop_oneof![any::<i64>().prop_map(Id::Number), any::<String>().prop_map(Id::from)],
            method_name in prop_oneof![Just("tools/call".to_owned()), any::<String>()],
        ) {
            let adapter = Adapter::new(revision);
            let meta = RequestMeta::new(adapter.request_meta(&client, level, token.as_ref()));
            let bytes = adapter.encode_request(&id, &method_name, params.as_ref(), &meta);
            let want = reference_bytes(adapter, &id, &method_name, params.as_ref(), &client, level, token.as_ref());
            prop_assert_eq!(parse(&bytes), parse(&want));
            if meta.is_empty() {
                // Nothing to add: the very bytes serde writes.
                prop_assert_eq!(bytes, want);
            }
        }

        /// The tool-call form is the request of its `{name, arguments}` params.
        #[test]
        fn encode_tool_call_is_its_params_encoded(
            revision in proptest::sample::select(Revision::ALL.to_vec()),
            name in any::<String>(),
            arguments in any_value(),
            client in any_client(),
            token in proptest::option::of(any::<i64>().prop_map(Id::Number)),
        ) {
            let adapter = Adapter::new(revision);
            let meta = RequestMeta::new(adapter.request_meta(&client, None, token.as_ref()));
            let id = Id::Number(1);
            let mut params = Map::new();
            params.insert("name".into(), name.clone().into());
            if !arguments.is_null() {
                params.insert("arguments".into(), arguments.clone());
            }
            let params = Value::Object(params);
            let bytes = adapter.encode_tool_call(&id, &name, &arguments, &meta);
            prop_assert_eq!(
                parse(&bytes),
                reference(adapter, &id, method::TOOLS_CALL, Some(&params), &client, None, token.as_ref())
            );
        }

        /// With the call's own `_meta` entries (some of the revision's names among them), the
        /// tool-call form is the request of `{name, arguments, _meta: own}`.
        #[test]
        fn encode_tool_call_with_meta_is_its_params_encoded(
            revision in proptest::sample::select(Revision::ALL.to_vec()),
            name in any::<String>(),
            arguments in any_value(),
            client in any_client(),
            own in proptest::collection::btree_map(
                prop_oneof![
                    meta_key(),
                    Just(mcp_wire::names::meta::CLIENT_CAPABILITIES.to_owned()),
                    Just(mcp_wire::names::meta::PROTOCOL_VERSION.to_owned()),
                ],
                any_value(),
                0..4,
            ),
        ) {
            let adapter = Adapter::new(revision);
            let meta = RequestMeta::new(adapter.request_meta(&client, None, None));
            let id = Id::Number(1);
            let own_list: Vec<(&str, &Value)> = own.iter().map(|(k, v)| (k.as_str(), v)).collect();
            let bytes = adapter.encode_tool_call_with_meta(&id, &name, &arguments, &meta, &own_list);
            let mut params = Map::new();
            params.insert("name".into(), name.clone().into());
            if !arguments.is_null() {
                params.insert("arguments".into(), arguments.clone());
            }
            if !own.is_empty() {
                params.insert("_meta".into(), Value::Object(own.clone().into_iter().collect()));
            }
            let params = Value::Object(params);
            let want = adapter.encode_request(&id, method::TOOLS_CALL, Some(&params), &meta);
            prop_assert_eq!(parse(&bytes), parse(&want));
        }
    }
}
