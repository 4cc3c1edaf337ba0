//! Tracing of the request path: one span per call, recorded only when a subscriber wants it.
//!
//! Every transport (Streamable HTTP, HTTP+SSE, stdio, the socket-free entry) serves a call
//! through the dispatcher, which opens the span here: target `mcp_server::request`, name
//! `mcp.request`, level DEBUG. Its fields are the attributes of the OpenTelemetry semantic
//! conventions for MCP (server spans), plus a few of ours:
//!
//! | field | value |
//! | --- | --- |
//! | `otel.name` | `{mcp.method.name} {target}` with the tool or prompt name as target, else the method (what an OpenTelemetry exporter names the span) |
//! | `otel.kind` | `server` |
//! | `mcp.method.name` | the JSON-RPC method |
//! | `mcp.protocol.version` | the revision the call is served on |
//! | `gen_ai.operation.name` | `execute_tool`, on `tools/call` |
//! | `gen_ai.tool.name` | the tool's name, on `tools/call` |
//! | `gen_ai.prompt.name` | the prompt's name, on `prompts/get` |
//! | `mcp.resource.uri` | the resource's URI, on `resources/read`, `resources/subscribe` and `resources/unsubscribe` |
//! | `jsonrpc.request.id` | the JSON-RPC id (none for a notification) |
//! | `mcp.session.id` | the first 8 characters of the session id (`Mcp-Session-Id`, the HTTP+SSE `sessionId`): enough to correlate, never the whole id, which is a credential |
//! | `principal` | the subject of the verified access token, on a protected server |
//! | `trace_id` | the trace the request belongs to, from its `_meta.traceparent` (or, on Streamable HTTP, its `traceparent` header): logs of one trace can be found without an exporter |
//! | `outcome` | `ok`, `tool_error`, `input_required`, `error`, `cancelled` or `none` |
//! | `error.type` | the JSON-RPC error code, or `tool_error` for a tool result with `isError`, or `cancelled` |
//! | `rpc.response.status_code` | the JSON-RPC error code, when `outcome` is `error` |
//! | `otel.status_code` | `ERROR` when `error.type` is set |
//! | `duration_us` | microseconds from dispatch to the outcome |
//!
//! None of the names is `name`, which a JSON formatter also writes for the span's own name: a
//! JSON parser would keep only one of the two. With the `otel` feature the span's parent is
//! the request's trace context, so an exported span is the child of the client's span
//! ([`crate::otel`]).
//!
//! With no subscriber, or one whose level filter leaves DEBUG out for this target, the span
//! is disabled: nothing is formatted, no clock is read, no trace context is parsed and no lock
//! is taken, so the request path costs a level check (see `docs/profiling.md`). Connections
//! have their own DEBUG span (`mcp.connection`, with the peer address) from
//! [`serve`](crate::http::serve), so a call's span sits inside its connection's.

use std::time::Instant;

use mcp_adapters::{Adapter, Call, Operation, Outcome};
use tracing::Span;
use tracing::field::{Empty, display};

use crate::dispatch::{Context, Done};

/// What logs show of a session id: its first 8 characters (a whole id is a credential).
pub(crate) fn session_tag(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// A call's span and the moment it started (when the span is recorded).
pub(crate) struct RequestSpan {
    pub(crate) span: Span,
    started: Option<Instant>,
}

impl RequestSpan {
    /// Opens the span of `call`, served on `adapter` for the connection `ctx`.
    pub(crate) fn open(adapter: Adapter, call: &Call, ctx: &Context) -> Self {
        // Values are given when the span is made, not recorded after: each `record` is a
        // registry lookup for every layer (an exporter's too). The macro evaluates them only
        // when the span is enabled.
        let target = call.target.as_deref();
        let named = matches!(call.operation, Operation::CallTool | Operation::GetPrompt);
        let span = tracing::debug_span!(
            target: "mcp_server::request",
            "mcp.request",
            otel.name = %SpanName { call, named },
            otel.kind = "server",
            mcp.method.name = &*call.method,
            mcp.protocol.version = adapter.version(),
            gen_ai.operation.name = (call.operation == Operation::CallTool).then_some("execute_tool"),
            gen_ai.tool.name = target.filter(|_| call.operation == Operation::CallTool),
            gen_ai.prompt.name = target.filter(|_| call.operation == Operation::GetPrompt),
            mcp.resource.uri = target.filter(|_| !named),
            jsonrpc.request.id = call.id.as_ref().map(display),
            mcp.session.id = Empty,
            principal = Empty,
            trace_id = Empty,
            outcome = Empty,
            error.type = Empty,
            rpc.response.status_code = Empty,
            otel.status_code = Empty,
            duration_us = Empty,
        );
        if span.is_disabled() {
            return Self {
                span,
                started: None,
            };
        }
        ctx.record_owner(&span);
        if let Some(parent) = mcp_wire::trace::TraceContext::from_params(&call.params) {
            span.record("trace_id", parent.traceparent.trace_id_hex());
            #[cfg(feature = "otel")]
            crate::otel::set_parent(&span, &parent);
        }
        Self {
            span,
            started: Some(Instant::now()),
        }
    }

    /// Records how the call ended (`cancelled` when its cancellation fired).
    pub(crate) fn close(&self, adapter: Adapter, done: &Done, cancelled: bool) {
        let Some(started) = self.started else {
            return;
        };
        let (outcome, code) = outcome_of(adapter, done, cancelled);
        self.span.record("outcome", outcome);
        if let Some(code) = code {
            self.span.record("rpc.response.status_code", display(code));
            self.span.record("error.type", display(code));
            self.span.record("otel.status_code", "ERROR");
        } else if matches!(outcome, "tool_error" | "cancelled") {
            self.span.record("error.type", outcome);
            self.span.record("otel.status_code", "ERROR");
        }
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.span.record("duration_us", micros);
        tracing::debug!(target: "mcp_server::request", parent: &self.span, outcome, duration_us = micros, "call served");
    }
}

/// A request span's name: the method, and the tool or prompt name when the call has one.
struct SpanName<'a> {
    call: &'a Call,
    named: bool,
}

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.call.target {
            Some(target) if self.named => write!(f, "{} {target}", self.call.method),
            _ => f.write_str(&self.call.method),
        }
    }
}

/// How a call ended, as the span and the metrics name it, with its JSON-RPC error code.
pub(crate) fn outcome_of(
    adapter: Adapter,
    done: &Done,
    cancelled: bool,
) -> (&'static str, Option<i64>) {
    match done {
        _ if cancelled => ("cancelled", None),
        Done::Silent => ("none", None),
        Done::Extension(_) => ("ok", None),
        Done::Send(outcome, _) => match outcome {
            Outcome::Failure(failure) => ("error", Some(failure.mapping(adapter.revision()).code)),
            Outcome::InputRequired { .. } => ("input_required", None),
            Outcome::Tool(result) if result.is_error() => ("tool_error", None),
            _ => ("ok", None),
        },
    }
}

/// A method as a metrics label: one of the spec's names (the adapters keep those as
/// constants), else `other`, so peers cannot grow the label space.
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
#[allow(clippy::ptr_arg, reason = "whether the Cow borrows is what is read")]
pub(crate) fn method_label(method: &std::borrow::Cow<'static, str>) -> &'static str {
    match method {
        std::borrow::Cow::Borrowed(name) => name,
        std::borrow::Cow::Owned(_) => "other",
    }
}
