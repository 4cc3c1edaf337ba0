//! Shared test support: the official schemas, and a socket-free client per revision.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use futures::StreamExt as _;
use mcp_server::{Context, Outgoing, Revision, Server};
use serde_json::{Value, json};

/// Where the official `schema.json` files are: `MCP_SPEC_SCHEMAS`, or `../shared/spec-schemas`
/// beside the workspace.
pub fn schemas_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MCP_SPEC_SCHEMAS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/spec-schemas"
            ))
        });
    if dir.join("2026-07-28/schema.json").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the official schemas are missing at {} (set MCP_SPEC_SCHEMAS)",
        dir.display()
    );
    eprintln!(
        "notice: official schemas not found at {}; messages are not validated against them",
        dir.display()
    );
    None
}

/// The official schema of one revision, with validators compiled per type on first use.
pub struct SpecSchema {
    document: Value,
    defs: &'static str,
    validators: Mutex<HashMap<String, std::sync::Arc<jsonschema::Validator>>>,
}

impl SpecSchema {
    /// The schema of `revision`, loaded once; `None` when the schemas are not available.
    pub fn of(revision: Revision) -> Option<&'static Self> {
        static ALL: OnceLock<Option<HashMap<Revision, SpecSchema>>> = OnceLock::new();
        let all = ALL.get_or_init(|| {
            let dir = schemas_dir()?;
            let mut map = HashMap::new();
            for revision in Revision::ALL {
                let text = std::fs::read_to_string(dir.join(revision.as_str()).join("schema.json"))
                    .expect("readable schema");
                let document: Value = serde_json::from_str(&text).expect("schema is JSON");
                let defs = if document.get("$defs").is_some() {
                    "$defs"
                } else {
                    "definitions"
                };
                map.insert(
                    revision,
                    Self {
                        document,
                        defs,
                        validators: Mutex::new(HashMap::new()),
                    },
                );
            }
            Some(map)
        });
        all.as_ref().map(|m| &m[&revision])
    }

    /// This schema with an extension's `$defs` added beside the spec's own, so that the
    /// extension's types refer to the spec's (`#/$defs/Result`, ...). Panics on a name clash.
    pub fn extended(&self, extension: &Value) -> Self {
        let mut document = self.document.clone();
        let defs = document[self.defs]
            .as_object_mut()
            .expect("the schema has definitions");
        for (name, def) in extension["$defs"]
            .as_object()
            .expect("the extension has $defs")
        {
            assert!(
                defs.insert(name.clone(), def.clone()).is_none(),
                "the extension redefines {name}"
            );
        }
        Self {
            document,
            defs: self.defs,
            validators: Mutex::new(HashMap::new()),
        }
    }

    /// Panics unless `instance` is a valid `type_name` of this revision.
    pub fn check(&self, type_name: &str, instance: &Value) {
        let errors = self.errors(type_name, instance);
        assert!(
            errors.is_empty(),
            "not a valid {type_name}: {errors:?}\n{instance:#}"
        );
    }

    /// Why `instance` is not a valid `type_name` (empty when it is).
    pub fn errors(&self, type_name: &str, instance: &Value) -> Vec<String> {
        let validator = {
            let mut validators = self.validators.lock().unwrap();
            validators
                .entry(type_name.to_owned())
                .or_insert_with(|| {
                    assert!(
                        self.document[self.defs].get(type_name).is_some(),
                        "no type {type_name} in the schema"
                    );
                    let mut document = self.document.clone();
                    document["$ref"] = json!(format!("#/{}/{type_name}", self.defs));
                    std::sync::Arc::new(
                        jsonschema::validator_for(&document).expect("schema compiles"),
                    )
                })
                .clone()
        };
        validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }
}

/// The Tasks extension's schema (`tests/it/schemas/tasks-extension-2026-07-28.json`: the SEP-2663
/// messages a server sends) merged into the official 2026-07-28 schema; `None` when the
/// official schemas are not available.
pub fn tasks_schema() -> Option<&'static SpecSchema> {
    static TASKS: OnceLock<Option<SpecSchema>> = OnceLock::new();
    TASKS
        .get_or_init(|| {
            let extension: Value =
                serde_json::from_str(include_str!("../schemas/tasks-extension-2026-07-28.json"))
                    .expect("the extension schema is JSON");
            SpecSchema::of(Revision::V2026_07_28).map(|spec| spec.extended(&extension))
        })
        .as_ref()
}

/// Validates `instance` as the Tasks extension's (or the 2026-07-28 spec's) `type_name` when
/// the schemas are available.
pub fn check_tasks(type_name: &str, instance: &Value) {
    if let Some(schema) = tasks_schema() {
        schema.check(type_name, instance);
    }
}

/// Validates a response to `method` (2026-07-28, the Tasks extension declared) by what it
/// is: a `CreateTaskResult` from `tools/call`, the results of `tasks/get`, `tasks/update` and
/// `tasks/cancel`; any message as a `JSONRPCMessage` first.
pub fn check_task_reply(method: &str, message: &Value) {
    check(Revision::V2026_07_28, "JSONRPCMessage", message);
    let Some(result) = message.get("result") else {
        return;
    };
    let type_name = match method {
        "tools/call" if result["resultType"] == "task" => "CreateTaskResultResponse",
        "tasks/get" => "GetTaskResultResponse",
        "tasks/update" => "UpdateTaskResultResponse",
        "tasks/cancel" => "CancelTaskResultResponse",
        _ => return,
    };
    check_tasks(type_name, message);
}

/// Validates `instance` as `type_name` on `revision` when the schemas are available.
pub fn check(revision: Revision, type_name: &str, instance: &Value) {
    if let Some(schema) = SpecSchema::of(revision) {
        schema.check(type_name, instance);
    }
}

/// A socket-free client speaking one revision to a server.
pub struct Client {
    pub server: Server,
    pub ctx: Context,
    pub revision: Revision,
    pub capabilities: Value,
    next_id: i64,
}

impl Client {
    /// A client of `revision`; legacy revisions are initialized with `capabilities`.
    pub async fn new(server: &Server, revision: Revision, capabilities: Value) -> Self {
        let mut client = Self {
            server: server.clone(),
            ctx: Context::connection(),
            revision,
            capabilities,
            next_id: 0,
        };
        if client.legacy() {
            let caps = client.capabilities.clone();
            let result = client
                .ok(
                    "initialize",
                    json!({"protocolVersion": revision.as_str(), "capabilities": caps, "clientInfo": {"name": "test", "version": "1"}}),
                )
                .await;
            check(revision, "InitializeResult", &result);
            assert_eq!(result["protocolVersion"], revision.as_str());
            client.notify("notifications/initialized", json!({})).await;
        }
        client
    }

    pub fn legacy(&self) -> bool {
        self.revision != Revision::V2026_07_28
    }

    /// `params` with this revision's per-request `_meta` added (2026-07-28).
    pub fn params(&self, mut params: Value) -> Value {
        if !self.legacy() {
            let meta = params
                .as_object_mut()
                .unwrap()
                .entry("_meta")
                .or_insert_with(|| json!({}));
            meta["io.modelcontextprotocol/protocolVersion"] = json!(self.revision.as_str());
            if meta
                .get("io.modelcontextprotocol/clientCapabilities")
                .is_none()
            {
                meta["io.modelcontextprotocol/clientCapabilities"] = self.capabilities.clone();
            }
        }
        params
    }

    /// Sends a request; returns what came before the response, and the response.
    pub async fn request(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": self.params(params)});
        let out = self.server.handle_all(message, &self.ctx).await;
        let mut values: Vec<Value> = out.iter().map(Outgoing::to_value).collect();
        for v in &values {
            check(self.revision, "JSONRPCMessage", v);
        }
        let response = values.pop().expect("a response");
        assert_eq!(response["id"], json!(self.next_id), "{response}");
        (values, response)
    }

    /// A request that must succeed: its result.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let (_, response) = self.request(method, params).await;
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// A request that must fail: its error object.
    pub async fn err(&mut self, method: &str, params: Value) -> Value {
        let (_, response) = self.request(method, params).await;
        assert!(
            response.get("result").is_none(),
            "{method} should fail: {response}"
        );
        response["error"].clone()
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let out = self.server.handle_all(message, &self.ctx).await;
        assert!(out.is_empty(), "a notification got {out:?}");
    }

    /// Sends a request and returns its reply stream, for calls that push questions.
    pub fn start(&mut self, method: &str, params: Value) -> (i64, mcp_server::Reply) {
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": self.params(params)});
        (self.next_id, self.server.handle(message, &self.ctx))
    }

    /// Sends a raw message (a reply to a pushed request) and expects nothing back.
    pub async fn send(&self, message: Value) {
        let out = self.server.handle_all(message, &self.ctx).await;
        assert!(out.is_empty(), "a reply got {out:?}");
    }
}

/// The next message of a reply stream.
pub async fn next(reply: &mut mcp_server::Reply) -> Value {
    reply.next().await.expect("another message").to_value()
}

/// Checks the refusal of a request that carries no JSON-RPC message (`GET`, `DELETE`)
/// against `revision`'s schema: a valid JSON-RPC error without an id where that schema
/// allows one (2025-11-25 on), plain text naming the problem where it requires an id
/// (never an error with `"id": null`, which those schemas refuse). Returns the error
/// code of a JSON body.
pub fn check_bodiless_refusal(
    response: &crate::raw_http::RawResponse,
    revision: Revision,
) -> Option<i64> {
    assert!(response.status >= 400, "{revision}: {response:?}");
    if revision >= Revision::V2025_11_25 {
        let body = response.json();
        check(revision, "JSONRPCMessage", &body);
        assert!(body.get("id").is_none(), "{revision}: {body}");
        return body["error"]["code"].as_i64();
    }
    assert!(response.is_plain_text(), "{revision}: {response:?}");
    assert!(!response.body.is_empty(), "{revision}: {response:?}");
    assert!(
        serde_json::from_slice::<Value>(&response.body).is_err(),
        "{revision}: {response:?}"
    );
    None
}
