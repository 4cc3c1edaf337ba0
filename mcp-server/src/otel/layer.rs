//! The export layer: each span its filter lets through becomes a [`Record`] in the span's
//! extensions (ids, start time, fields), events inside it become span events, and when the
//! span closes a sampled record goes to the export queue. Nothing here blocks or waits;
//! the per-span cost is a few small allocations and two clock reads.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_wire::trace::TraceContext;
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use super::export::Queue;
use super::record::{Record, Text};

/// A `tracing-subscriber` layer that exports spans over OTLP/HTTP, made by
/// [`OtlpConfig::layer`](super::OtlpConfig::layer).
///
/// A span's name is its `otel.name` field if it has one, its kind `otel.kind` (`server`,
/// `client`, `producer`, `consumer`, else internal), its status `otel.status_code` (`ok`,
/// `error`) and `otel.status_message`; every other field is an attribute (numbers, booleans
/// and text as themselves, anything else as its `Debug` text). Events inside an exported
/// span are its span events, named by their message. A span's parent is the nearest
/// enclosing span the layer exports, or the remote context the server gives it (a request's
/// `traceparent`); a span without either starts a trace, sampled by the configured ratio.
///
/// The layer finds spans through `tracing-subscriber`'s `Registry`: it is meant for a
/// subscriber built on `tracing_subscriber::registry()`.
pub struct OtlpLayer<S> {
    queue: Queue,
    /// Root spans whose trace id's last 8 bytes read below this are sampled.
    sample_below: u64,
    all: bool,
    subscriber: PhantomData<fn(S)>,
}

impl<S> std::fmt::Debug for OtlpLayer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpLayer").finish_non_exhaustive()
    }
}

impl<S> OtlpLayer<S> {
    pub(crate) fn new(queue: Queue, ratio: f64) -> Self {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a ratio of the id space, clamped to it"
        )]
        let sample_below = (ratio.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
        Self {
            queue,
            sample_below,
            all: ratio >= 1.0,
            subscriber: PhantomData,
        }
    }

    fn sampled(&self, trace_id: &[u8; 16]) -> bool {
        if self.all {
            return true;
        }
        let mut low = [0u8; 8];
        low.copy_from_slice(&trace_id[8..]);
        u64::from_be_bytes(low) < self.sample_below
    }
}

impl<S> Layer<S> for OtlpLayer<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let parent = span.parent().and_then(|parent| {
            parent
                .extensions()
                .get::<Record>()
                .map(|p| (p.trace_id, p.span_id, p.flags, p.tracestate.clone()))
        });
        let mut record = match parent {
            Some((trace_id, parent_id, flags, tracestate)) => {
                let mut record = Record::new(trace_id, ids::span(), flags);
                record.parent_id = Some(parent_id);
                record.tracestate = tracestate;
                record
            }
            None => {
                let trace_id = ids::trace();
                let sampled = self.sampled(&trace_id);
                Record::new(trace_id, ids::span(), u8::from(sampled))
            }
        };
        record.name = Text::Static(attrs.metadata().name());
        record.start = now();
        attrs.record(&mut record.creation());
        span.extensions_mut().insert(record);
    }

    fn on_record(&self, id: &Id, values: &tracing::span::Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(record) = span.extensions_mut().get_mut::<Record>()
        {
            values.record(&mut record.fields());
        }
    }

    fn on_follows_from(&self, id: &Id, follows: &Id, ctx: Context<'_, S>) {
        let Some(cause) = ctx.span(follows).and_then(|cause| {
            cause
                .extensions()
                .get::<Record>()
                .map(|c| (c.trace_id, c.span_id, c.flags))
        }) else {
            return;
        };
        if let Some(span) = ctx.span(id)
            && let Some(record) = span.extensions_mut().get_mut::<Record>()
        {
            record.link(cause.0, cause.1, cause.2);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.event_span(event) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        let Some(record) = extensions.get_mut::<Record>() else {
            return;
        };
        if !record.sampled() {
            return;
        }
        let level = *event.metadata().level();
        if level == tracing::Level::ERROR && record.status == 0 {
            record.status = 2;
        }
        if let Some(mut fields) = record.event(now(), level.as_str()) {
            event.record(&mut fields);
            fields.0.finish();
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(mut record) = span.extensions_mut().remove::<Record>() else {
            return;
        };
        if record.sampled() {
            record.end = now();
            self.queue.push(record);
        }
    }
}

/// Nanoseconds since the Unix epoch.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Runs `f` on the export record of `span`, when the layer exports it.
fn with_record<R>(span: &tracing::Span, f: impl FnOnce(&mut Record) -> R) -> Option<R> {
    span.with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
        let data = registry.span(id)?;
        let mut extensions = data.extensions_mut();
        extensions.get_mut::<Record>().map(f)
    })
    .flatten()
}

/// Makes `span` the child of the span `parent` names (`remote`: in another process). `None`
/// when the layer does not export `span`.
pub(crate) fn set_parent(span: &tracing::Span, parent: &TraceContext, remote: bool) -> Option<()> {
    with_record(span, |record| {
        let traceparent = parent.traceparent;
        record.trace_id = traceparent.trace_id();
        record.parent_id = Some(traceparent.parent_id());
        record.remote_parent = remote;
        record.flags = traceparent.flags();
        record.tracestate = parent.tracestate.as_deref().map(Box::from);
    })
}

/// Links `span` to the span `cause` names. `None` when the layer does not export `span`.
pub(crate) fn link(span: &tracing::Span, cause: &mcp_wire::trace::TraceParent) -> Option<()> {
    with_record(span, |record| {
        record.link(cause.trace_id(), cause.parent_id(), cause.flags());
    })
}

/// The trace context of `span`, when the layer exports it (`Some(None)`: it does, but the
/// context could not be written).
pub(crate) fn context_of(span: &tracing::Span) -> Option<Option<TraceContext>> {
    with_record(span, |record| {
        TraceContext::from_span(
            record.trace_id,
            record.span_id,
            record.flags,
            record.tracestate.as_deref().unwrap_or(""),
        )
    })
}

/// Span and trace ids: a per-thread generator seeded from the operating system.
mod ids {
    use super::RefCell;

    thread_local! {
        static RNG: RefCell<fastrand::Rng> = RefCell::new(seeded());
    }

    fn seeded() -> fastrand::Rng {
        let mut seed = [0u8; 8];
        match getrandom::fill(&mut seed) {
            Ok(()) => fastrand::Rng::with_seed(u64::from_le_bytes(seed)),
            Err(_) => fastrand::Rng::new(),
        }
    }

    fn nonzero() -> u64 {
        RNG.with(|rng| {
            let mut rng = rng.borrow_mut();
            loop {
                let value = rng.u64(..);
                if value != 0 {
                    return value;
                }
            }
        })
    }

    /// A new span id (never all zeros).
    pub(super) fn span() -> [u8; 8] {
        nonzero().to_be_bytes()
    }

    /// A new trace id (never all zeros).
    pub(super) fn trace() -> [u8; 16] {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&nonzero().to_be_bytes());
        id[8..].copy_from_slice(&nonzero().to_be_bytes());
        id
    }
}
