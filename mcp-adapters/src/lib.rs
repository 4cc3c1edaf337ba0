//! One adapter per MCP protocol revision, and per-request selection.
//!
//! The adapters are where the revisions differ, so that nothing above them does. An
//! [`Adapter`] is a small `Copy` value (a [`Revision`] and its `const` [`Features`] row): pure,
//! stateless, shared by every request. Upper layers branch on its flags (`can_ask`,
//! `can_push_ask`, `asks_in_arguments`, `allows_batch`, `has_handshake`, `has_sessions`,
//! `progress_message`, `supports_extensions` and the rest of [`Features`]), never on a version
//! string.
//!
//! ```text
//!   bytes ──► mcp_wire::jsonrpc::decode ──► AdapterSet::select_http ──► Adapter
//!         ──► Adapter::decode_http ──► [Incoming: Call | Reply | Invalid]
//!         ──► (server dispatch) ──► Outcome ──► Adapter::encode ──► Encoded (bytes or JSON, and an HTTP status)
//! ```
//!
//! | Module concern | Entry points |
//! | --- | --- |
//! | flags and tables | [`Adapter::features`], [`Adapter::operation`], [`Adapter::method`], [`FailureKind::mapping`] |
//! | selection | [`AdapterSet::select`], [`AdapterSet::select_http`], [`AdapterSet::negotiate`] |
//! | decoding and the 2026-07-28 header checks | [`Adapter::decode`], [`Adapter::decode_http`] (validation order in its docs) |
//! | encoding | [`Adapter::encode`], [`Adapter::result_body`], [`Adapter::encode_failure`], [`Adapter::describe_result`] |
//! | asking | [`Adapter::check_ask`], [`Adapter::encode_input_required`], [`Adapter::pushed_request`], [`Answers`], [`ElicitAnswer`] |
//! | projection | [`Adapter::project_tool`] (cache it: [`PerRevision`]), [`Adapter::project_content`], [`Adapter::project_resource`], [`Adapter::project_prompt`] |
//! | client side | [`Adapter::handshake_request`], [`Adapter::client_params`] and [`Adapter::encode_request`] (with a [`RequestMeta`]), [`Adapter::client_headers`] and [`Adapter::request_headers`], [`Adapter::attach_answers`], [`Adapter::read_result`] (skippable when [`is_plain_complete_result`]) |
//!
//! ```
//! use mcp_adapters::{AdapterSet, Incoming, Operation, Outcome, ResultContext};
//! use mcp_wire::jsonrpc;
//! use serde_json::json;
//!
//! let set = AdapterSet::all();
//! let body = jsonrpc::decode(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
//! let headers: Vec<(&str, &str)> = vec![("MCP-Protocol-Version", "2025-06-18")];
//! let adapter = set.select_http(&body, &headers, None, None).unwrap().adapter;
//! assert!(adapter.can_push_ask() && !adapter.allows_batch());
//!
//! let decoded = adapter.decode_http(body, &headers, &mcp_adapters::NoTools);
//! let Incoming::Call(call) = &decoded.items()[0] else { unreachable!() };
//! assert_eq!(call.operation, Operation::ListTools);
//!
//! let reply = adapter
//!     .encode(call, Outcome::Value(json!({"tools": []})), &ResultContext::default())
//!     .unwrap();
//! assert_eq!(reply.to_value(), json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}));
//! ```
//!
//! **Layering:** depends on `mcp-wire` and `mcp-schema` (and `http` for header types, `memchr`
//! for a byte search) only.
//! No runtime or I/O crate. The crate has no feature flags.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod adapter;
mod ask;
mod call;
mod client;
mod complete;
mod context;
mod decode;
mod encode;
mod failure;
mod features;
mod headers;
mod operation;
mod project;
mod request;
mod revision;
mod select;
mod write;

pub use adapter::Adapter;
pub use ask::{
    ANSWERS_ARGUMENT, Answers, ElicitAction, ElicitAnswer, INPUT_REQUIRED_META, InputRequest,
    InputRequests, Questions, STATE_ARGUMENT,
};
pub use call::{Call, ClientContext, Incoming, Invalid, LogLevel, Reply, UnknownLogLevel};
pub use client::{ClientError, RequestHeaders, ResultKind, is_modern_error};
pub use complete::is_plain_complete_result;
pub use decode::{DecodedBody, is_core_method};
pub use encode::{CacheHint, CacheScope, Encoded, Outcome, ResultContext, ToolResult};
pub use failure::{ErrorMapping, Failure, FailureKind, codes};
pub use features::{AskMechanism, ErrorTable, Features, StructuredOutput, VersionHeader};
pub use headers::{HeaderSource, Lookup, NoTools, ToolHeaders};
pub use operation::{ClientRequestKind, Operation, changes_connection, starts_session};
pub use project::{PerRevision, ToolDefinition, ToolView};
pub use request::RequestMeta;
pub use revision::{Descriptor, Revision};
pub use select::{AdapterSet, EmptySetError, Hint, Rejected, Selected, SelectedBy, SelectionInput};

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
