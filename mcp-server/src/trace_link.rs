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
    #[cfg(feature = "otel")]
    if !span.is_disabled()
        && let Some((_, asking)) = id.rsplit_once('.')
        && let Ok(asking) = mcp_wire::trace::TraceParent::parse(asking)
    {
        crate::otel::set_parent(&span, &mcp_wire::trace::TraceContext::new(asking));
    }
    span
}
