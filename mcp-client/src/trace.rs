//! Trace context on the client's requests: W3C `traceparent`, `tracestate` and `baggage` in
//! each request's `_meta` (every revision and transport), and on HTTP as headers of the same
//! names, so a server's span for the request is the child of the caller's.
//!
//! ```
//! use mcp_client::{Client, TracePropagation};
//! use mcp_client::trace::{TraceContext, TraceParent};
//!
//! let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")?;
//! let builder = Client::builder().trace_context(TracePropagation::Context(TraceContext::new(parent)));
//! # let _ = builder;
//! # Ok::<(), mcp_client::trace::TraceParentError>(())
//! ```

use std::fmt;
use std::sync::Arc;

pub use mcp_wire::trace::{TraceContext, TraceParent, TraceParentError};

/// The trace context a request carries, asked for each request (see
/// [`ClientBuilder::trace_context`](crate::ClientBuilder::trace_context)).
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum TracePropagation {
    /// Requests carry no trace context (the default).
    #[default]
    Off,
    /// Every request carries this context: its server spans are children of the span it
    /// names (a command line given `--traceparent`, a caller that manages its own spans).
    Context(TraceContext),
    /// Each request carries what the function returns when the request is sent (nothing when
    /// it returns `None`).
    With(Arc<dyn Fn() -> Option<TraceContext> + Send + Sync>),
    /// Each request carries the context of the current `tracing` span, as
    /// `tracing-opentelemetry` records it (nothing when the span is not exported).
    #[cfg(feature = "otel")]
    CurrentSpan,
}

impl TracePropagation {
    /// What each request carries, from `f` (see [`TracePropagation::With`]).
    pub fn with(f: impl Fn() -> Option<TraceContext> + Send + Sync + 'static) -> Self {
        Self::With(Arc::new(f))
    }

    /// The context of the request being sent now, if any.
    pub(crate) fn current(&self) -> Option<TraceContext> {
        match self {
            Self::Off => None,
            Self::Context(context) => Some(context.clone()),
            Self::With(f) => f(),
            #[cfg(feature = "otel")]
            Self::CurrentSpan => current_span(),
        }
    }

    /// Whether requests may carry a context.
    pub(crate) fn is_off(&self) -> bool {
        matches!(self, Self::Off)
    }
}

impl fmt::Debug for TracePropagation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("Off"),
            Self::Context(context) => f.debug_tuple("Context").field(context).finish(),
            Self::With(_) => f.write_str("With(..)"),
            #[cfg(feature = "otel")]
            Self::CurrentSpan => f.write_str("CurrentSpan"),
        }
    }
}

/// The context of the current `tracing` span, when `tracing-opentelemetry` exports it.
#[cfg(feature = "otel")]
fn current_span() -> Option<TraceContext> {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let context = tracing::Span::current().context();
    let span = context.span();
    let span_context = span.span_context();
    if !span_context.is_valid() {
        return None;
    }
    TraceContext::from_span(
        span_context.trace_id().to_bytes(),
        span_context.span_id().to_bytes(),
        span_context.trace_flags().to_u8(),
        &span_context.trace_state().header(),
    )
}

/// The HTTP headers of `context`: `traceparent`, and `tracestate` and `baggage` when set.
pub(crate) fn headers(context: &TraceContext, headers: &mut http::HeaderMap) {
    use http::HeaderValue;
    use mcp_wire::names::meta::{BAGGAGE, TRACEPARENT, TRACESTATE};
    // The values were checked as printable ASCII when the context was built.
    if let Ok(value) = HeaderValue::from_str(&context.traceparent.to_string()) {
        headers.insert(TRACEPARENT, value);
    }
    for (name, value) in [
        (TRACESTATE, &context.tracestate),
        (BAGGAGE, &context.baggage),
    ] {
        if let Some(value) = value.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(name, value);
        }
    }
}
