//! Tracing of the request path: one span per call, recorded only when a subscriber wants it.
//!
//! Every transport (Streamable HTTP, HTTP+SSE, stdio, the socket-free entry) serves a call
//! through the dispatcher, which opens the span here: target `mcp_server::request`, name
//! `mcp.request`, level DEBUG, with the fields
//!
//! | field | value |
//! | --- | --- |
//! | `revision` | the revision the call is served on |
//! | `method` | the JSON-RPC method |
//! | `gen_ai.tool.name` | the tool's name, on `tools/call` |
//! | `gen_ai.prompt.name` | the prompt's name, on `prompts/get` |
//! | `mcp.resource.uri` | the resource's URI, on `resources/read`, `resources/subscribe` and `resources/unsubscribe` |
//! | `id` | the JSON-RPC id (none for a notification) |
//! | `session` | the first 8 characters of the session id (`Mcp-Session-Id`, the HTTP+SSE `sessionId`): enough to correlate, never the whole id, which is a credential |
//! | `principal` | the subject of the verified access token, on a protected server |
//! | `outcome` | `ok`, `tool_error`, `input_required`, `error`, `cancelled` or `none` |
//! | `error_code` | the JSON-RPC error code, when `outcome` is `error` |
//! | `duration_us` | microseconds from dispatch to the outcome |
//!
//! The target's field names are those of the OpenTelemetry semantic conventions for MCP
//! (none of them is `name`, which a JSON formatter also writes for the span's own name: a
//! JSON parser would keep only one of the two).
//!
//! With no subscriber, or one whose level filter leaves DEBUG out for this target, the span
//! is disabled: nothing is formatted, no clock is read and no lock is taken, so the request
//! path costs a level check (see `docs/profiling.md`). Connections have their own DEBUG span
//! (`mcp.connection`, with the peer address) from [`serve`](crate::http::serve), so a call's
//! span sits inside its connection's.

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
        let span = tracing::debug_span!(
            target: "mcp_server::request",
            "mcp.request",
            revision = adapter.version(),
            method = &*call.method,
            gen_ai.tool.name = Empty,
            gen_ai.prompt.name = Empty,
            mcp.resource.uri = Empty,
            id = Empty,
            session = Empty,
            principal = Empty,
            outcome = Empty,
            error_code = Empty,
            duration_us = Empty,
        );
        if span.is_disabled() {
            return Self {
                span,
                started: None,
            };
        }
        if let Some(target) = &call.target {
            let field = match call.operation {
                Operation::CallTool => "gen_ai.tool.name",
                Operation::GetPrompt => "gen_ai.prompt.name",
                _ => "mcp.resource.uri",
            };
            span.record(field, target.as_str());
        }
        if let Some(id) = &call.id {
            span.record("id", display(id));
        }
        ctx.record_owner(&span);
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
            self.span.record("error_code", code);
        }
        let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.span.record("duration_us", micros);
        tracing::debug!(target: "mcp_server::request", parent: &self.span, outcome, duration_us = micros, "call served");
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
