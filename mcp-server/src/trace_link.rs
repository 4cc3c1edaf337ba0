//! Links between spans across workers: what a record kept in the hub (request state, a
//! task) carries of the span that made it, and the link a later span on any worker makes to
//! it. Without the `otel` feature both are no-ops (there is no exported span to name).

/// The trace context of the span running now, when it is exported (feature `otel`).
pub(crate) fn current_context() -> Option<mcp_wire::trace::TraceContext> {
    #[cfg(feature = "otel")]
    return crate::otel::context_of(&tracing::Span::current());
    #[cfg(not(feature = "otel"))]
    None
}

/// The `traceparent` of the span running now, when it is exported: what a record kept in
/// the hub (request state, a task) carries so that a span on another worker can link to the
/// one that made it.
pub(crate) fn current_traceparent() -> Option<String> {
    current_context().map(|c| c.traceparent.to_string())
}

/// Links the span running now to the span `traceparent` names (kept by
/// [`current_traceparent`], maybe on another worker); nothing without the `otel` feature.
pub(crate) fn link_current(traceparent: Option<&str>) {
    #[cfg(feature = "otel")]
    if let Some(traceparent) = traceparent {
        crate::otel::link(&tracing::Span::current(), traceparent);
    }
    #[cfg(not(feature = "otel"))]
    let _ = traceparent;
}

/// The span of a question pushed to the client while its answer is awaited: a client span,
/// the server being the requester (`elicitation/create`, `sampling/createMessage`,
/// `roots/list`), inside the call's span. Its id is recorded once the request has one.
pub(crate) fn ask_span(method: &'static str) -> tracing::Span {
    tracing::debug_span!(
        target: "mcp_server::request",
        "mcp.ask",
        otel.name = method,
        otel.kind = "client",
        mcp.method.name = method,
        jsonrpc.request.id = tracing::field::Empty,
    )
}

/// The span of an answer to a pushed question, POSTed to this worker: a server span, the
/// child of the question's `mcp.ask` span (on any worker) when the question's id names it
/// (`<id>.<traceparent>`, see `Exchange::push`).
pub(crate) fn answer_span(id: &str) -> tracing::Span {
    let span = tracing::debug_span!(
        target: "mcp_server::request",
        "mcp.answer",
        otel.name = "answer",
        otel.kind = "server",
        jsonrpc.request.id = id,
    );
    child_of(&span, id.rsplit_once('.').map(|(_, asking)| asking));
    span
}

/// The `traceparent` a message's `params._meta` carries, when spans are exported (feature
/// `otel`): what a relayed message (a cancellation) keeps of the span that sent it.
pub(crate) fn carried(params: Option<&serde_json::Value>) -> Option<String> {
    #[cfg(feature = "otel")]
    return params
        .and_then(serde_json::Value::as_object)
        .and_then(mcp_wire::trace::TraceContext::from_params)
        .map(|context| context.traceparent.to_string());
    #[cfg(not(feature = "otel"))]
    {
        let _ = params;
        None
    }
}

/// Makes `span` the child of the span `cause` names (a `traceparent`, maybe of another
/// worker), when the span is exported.
fn child_of(span: &tracing::Span, cause: Option<&str>) {
    #[cfg(feature = "otel")]
    if !span.is_disabled()
        && let Some(cause) = cause
        && let Ok(cause) = mcp_wire::trace::TraceParent::parse(cause)
    {
        crate::otel::set_parent(span, &mcp_wire::trace::TraceContext::new(cause));
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, cause);
}

/// Records that a `notifications/cancelled` cancelled the call `id` of the session `session`
/// (its tag, as logs show it) running on this worker: a server span
/// (`notifications/cancelled`), the child of the span that sent the cancellation (`cause`, the
/// client's, from its `_meta`), whichever worker it was POSTed to. Nothing is made without a
/// cause: a cancellation outside any trace is no span of its own.
pub(crate) fn cancelled_here(id: &mcp_wire::jsonrpc::Id, session: &str, cause: Option<&str>) {
    if cause.is_none() {
        return;
    }
    let span = tracing::debug_span!(
        target: "mcp_server::request",
        "mcp.cancel",
        otel.name = mcp_wire::names::method::NOTIFICATION_CANCELLED,
        otel.kind = "server",
        mcp.method.name = mcp_wire::names::method::NOTIFICATION_CANCELLED,
        mcp.session.id = session,
        jsonrpc.request.id = %id,
    );
    child_of(&span, cause);
}

/// The span of a change (a list change, a resource update) sent to one client on this
/// worker: a producer span named after the notification, the child of the span that
/// published the change (`cause`, on any worker), when the change carries one.
pub(crate) fn delivery_span(method: &'static str, cause: Option<&str>) -> tracing::Span {
    if cause.is_none() {
        return tracing::Span::none();
    }
    let span = tracing::debug_span!(
        target: "mcp_server::request",
        "mcp.notify",
        otel.name = method,
        otel.kind = "producer",
        mcp.method.name = method,
    );
    child_of(&span, cause);
    span
}
