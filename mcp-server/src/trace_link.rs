//! Links between spans across workers: what a record kept in the hub (request state, a
//! task) carries of the span that made it, and the link a later span on any worker makes to
//! it. Without the `otel` feature both are no-ops (there is no exported span to name).

/// The `traceparent` of the span running now, when it is exported (feature `otel`): what a
/// record kept in the hub (request state, a task) carries so that a span on another worker
/// can link to the one that made it.
pub(crate) fn current_traceparent() -> Option<String> {
    #[cfg(feature = "otel")]
    return crate::otel::context_of(&tracing::Span::current()).map(|c| c.traceparent.to_string());
    #[cfg(not(feature = "otel"))]
    None
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
