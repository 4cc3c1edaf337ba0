//! OpenTelemetry: the request spans exported over OTLP/HTTP (feature `otel`).
//!
//! The server's request span (`mcp.request`, see `docs/observability.md`) is a `tracing`
//! span. [`OtlpConfig::layer`] gives a `tracing-subscriber` layer ([`OtlpLayer`]) that
//! exports those spans, batched, to a collector over OTLP/HTTP (protobuf). The layer writes
//! the export requests straight from the spans it records, without the OpenTelemetry SDK's
//! span objects in between: exporting every request span costs the server about a quarter of
//! its `tools/call` throughput, where the SDK's path cost about half (`docs/benchmarks.md`).
//! A program that already runs the OpenTelemetry SDK with `tracing-opentelemetry` can use
//! that layer instead ([`OtlpConfig::provider`] gives an SDK pipeline with the same
//! settings): the server parents and links its spans through whichever of the two records
//! them.
//!
//! Each request span is the child of the trace context its request carries
//! (`_meta.traceparent`, else on Streamable HTTP the `traceparent` header), so a client's
//! span, the server's and the tool's own spans read as one trace.
//!
//! The export is bounded and never blocks a request: finished spans wait in a queue of
//! [`OtlpConfig::max_queue`] spans, which a background thread sends in batches; when the
//! queue is full (a slow or dead collector) further spans are dropped, not buffered; one
//! batch at a time is taken from the queue to be sent. Each
//! export has a deadline ([`OtlpConfig::export_timeout`]) and reads at most 64 KiB of the
//! collector's answer. The queue also has a memory bound ([`OtlpConfig::max_queue_bytes`],
//! 16 MiB). A span keeps at most 128 attributes, 64 events (16 attributes each), 128 links
//! and 16 KiB of text; what does not fit is counted in the span's dropped counts.
//! [`OtelGuard::dropped_spans`] and [`OtelGuard::failed_exports`] tell what was lost.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use tracing_subscriber::Layer as _;
//! use tracing_subscriber::layer::SubscriberExt as _;
//! use tracing_subscriber::util::SubscriberInitExt as _;
//!
//! let (layer, guard) = mcp_server::otel::OtlpConfig::new("my-server")
//!     .endpoint("http://127.0.0.1:4318")
//!     .layer()?;
//! tracing_subscriber::registry()
//!     .with(layer.with_filter(mcp_server::otel::export_filter()))
//!     .init();
//! // ... serve ...
//! drop(guard); // sends what is queued, within the export timeout
//! # Ok(()) }
//! ```
//!
//! The request span is at DEBUG: [`export_filter`] lets the request and task spans through
//! (and anything at INFO or above), without the DEBUG event that ends each request span.
//! Metrics stay on Prometheus (`Metrics`); a collector's Prometheus receiver scrapes them
//! into OTLP when wanted.

mod encode;
mod export;
mod layer;
mod record;

use std::str::FromStr as _;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use mcp_wire::trace::TraceContext;
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState,
};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

pub use layer::OtlpLayer;

use crate::auth::fetch::{Fetcher, refused_url};

/// The environment variable with the collector's base URL (`/v1/traces` is appended).
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The environment variable with the full URL traces are posted to (used as it is).
pub const TRACES_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";

/// The default collector, as the OTLP specification names it.
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// The longest answer read from the collector (the SDK pipeline's; the layer's is its own).
const MAX_ANSWER: usize = 64 * 1024;

/// Why the exporter was not set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The endpoint is not a URL the exporter posts to.
    #[error("OTLP endpoint refused: {0}")]
    Endpoint(String),
    /// The exporter's own thread and runtime could not be started.
    #[error("the OTLP exporter's runtime could not start: {0}")]
    Runtime(String),
    /// The OpenTelemetry SDK refused the configuration.
    #[error("the OTLP exporter could not be built: {0}")]
    Build(String),
}

/// Settings of the OTLP/HTTP span export.
#[derive(Clone, Debug)]
pub struct OtlpConfig {
    service_name: String,
    endpoint: Option<String>,
    traces_endpoint: Option<String>,
    ratio: f64,
    max_queue: usize,
    max_queue_bytes: usize,
    max_batch: usize,
    delay: Duration,
    export_timeout: Duration,
}

impl OtlpConfig {
    /// Spans of the service `service_name` (the `service.name` resource attribute; each
    /// process also gets a random `service.instance.id`), to the
    /// endpoint of the environment ([`ENDPOINT_ENV`], [`TRACES_ENDPOINT_ENV`]) or else
    /// [`DEFAULT_ENDPOINT`], every trace sampled unless its parent says otherwise.
    pub fn new(service_name: impl Into<String>) -> Self {
        Self {
            service_name: service_name.into(),
            endpoint: None,
            traces_endpoint: None,
            ratio: 1.0,
            max_queue: 2048,
            max_queue_bytes: 16 * 1024 * 1024,
            max_batch: 512,
            delay: Duration::from_secs(1),
            export_timeout: Duration::from_secs(10),
        }
    }

    /// The collector's base URL (`http://127.0.0.1:4318`); spans go to `<base>/v1/traces`.
    /// Overrides the environment. `https://`, or `http://` to a loopback host (a collector
    /// beside the server); anything else is refused by [`layer`](Self::layer).
    #[must_use]
    pub fn endpoint(mut self, base: impl Into<String>) -> Self {
        self.endpoint = Some(base.into());
        self.traces_endpoint = None;
        self
    }

    /// The full URL spans are posted to, used as it is. Overrides the environment and
    /// [`endpoint`](Self::endpoint).
    #[must_use]
    pub fn traces_endpoint(mut self, url: impl Into<String>) -> Self {
        self.traces_endpoint = Some(url.into());
        self
    }

    /// The share of new traces recorded (0.0 to 1.0; default 1.0). A request whose context
    /// says its trace is sampled (or not) follows its parent (parent-based sampling).
    #[must_use]
    pub fn sample_ratio(mut self, ratio: f64) -> Self {
        self.ratio = if ratio.is_nan() {
            0.0
        } else {
            ratio.clamp(0.0, 1.0)
        };
        self
    }

    /// How many finished spans may wait for export (at least 1; default 2048). When the
    /// queue is full further spans are dropped: a slow or dead collector costs this many
    /// spans of memory, and requests never wait for it.
    #[must_use]
    pub fn max_queue(mut self, spans: usize) -> Self {
        self.max_queue = spans.max(1);
        self.max_batch = self.max_batch.min(self.max_queue);
        self
    }

    /// How much memory the waiting spans may take, in bytes (their records, attributes,
    /// events, links and text; at least 64 KiB; default 16 MiB). Spans are small (a request
    /// span is under 1 KiB) but a span may hold up to 16 KiB of text and 64 events: this
    /// bounds the queue whatever its spans hold. A span that does not fit is dropped, as when
    /// [`max_queue`](Self::max_queue) spans wait. Applies to [`layer`](Self::layer).
    #[must_use]
    pub fn max_queue_bytes(mut self, bytes: usize) -> Self {
        self.max_queue_bytes = bytes.max(64 * 1024);
        self
    }

    /// How many spans one export sends at most (at least 1, at most the queue; default 512).
    #[must_use]
    pub fn max_batch(mut self, spans: usize) -> Self {
        self.max_batch = spans.clamp(1, self.max_queue);
        self
    }

    /// How long spans wait to be sent with others (default 1 s).
    #[must_use]
    pub fn batch_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The deadline of one export, the collector's answer included (default 10 s).
    #[must_use]
    pub fn export_timeout(mut self, timeout: Duration) -> Self {
        self.export_timeout = timeout;
        self
    }

    /// The URL spans are posted to: the explicit one, else the environment's, else the
    /// default, checked.
    pub fn resolved_endpoint(&self) -> Result<String, OtelError> {
        let env = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let url = match (&self.traces_endpoint, &self.endpoint) {
            (Some(url), _) => url.clone(),
            (None, Some(base)) => traces_url(base),
            (None, None) => match (env(TRACES_ENDPOINT_ENV), env(ENDPOINT_ENV)) {
                (Some(url), _) => url,
                (None, Some(base)) => traces_url(&base),
                (None, None) => traces_url(DEFAULT_ENDPOINT),
            },
        };
        match refused_url(&url) {
            Some(why) => Err(OtelError::Endpoint(why)),
            None => Ok(url),
        }
    }

    /// The `tracing-subscriber` layer exporting spans, and the guard that flushes and stops
    /// the export when dropped. The export runs on a thread and a one-thread runtime of its
    /// own, whatever runtime the server uses.
    pub fn layer<S>(&self) -> Result<(OtlpLayer<S>, OtelGuard), OtelError>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        let endpoint = self.resolved_endpoint()?;
        let (queue, control) = export::start(export::Settings {
            endpoint,
            preamble: encode::Preamble::new(&self.service_name, &instance_id()),
            max_queue: self.max_queue,
            max_queue_bytes: self.max_queue_bytes,
            max_batch: self.max_batch,
            delay: self.delay,
            timeout: self.export_timeout,
        })?;
        Ok((OtlpLayer::new(queue, self.ratio), OtelGuard { control }))
    }

    /// An OpenTelemetry SDK tracer provider with these settings (the same endpoint checks,
    /// queue, batches, sampling and resource), for a program that exports through the SDK
    /// (a `tracing-opentelemetry` layer, or tracing outside `tracing`) rather than
    /// [`layer`](Self::layer). Flush and shut it down when the program ends.
    pub fn provider(&self) -> Result<SdkTracerProvider, OtelError> {
        let endpoint = self.resolved_endpoint()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mcp-otlp-export")
            .enable_all()
            .build()
            .map_err(|e| OtelError::Runtime(e.to_string()))?;
        let client = OtlpHttp {
            fetcher: Fetcher::new(self.export_timeout, MAX_ANSWER),
            runtime: ExportRuntime(Some(runtime)),
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(endpoint)
            .with_timeout(self.export_timeout)
            .build()
            .map_err(|e| OtelError::Build(e.to_string()))?;
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(self.max_queue)
            .with_max_export_batch_size(self.max_batch)
            .with_scheduled_delay(self.delay)
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        let instance = instance_id();
        let resource = opentelemetry_sdk::Resource::builder_empty()
            .with_service_name(self.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.instance.id",
                instance,
            ))
            .build();
        Ok(SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                self.ratio,
            ))))
            .with_resource(resource)
            .build())
    }
}

/// The per-layer filter for the export layer: the request and task spans (target
/// `mcp_server::request`, DEBUG), and any other span or event at INFO or above (a handler's
/// own). Not the DEBUG event each request span ends with: its fields are the span's already,
/// and as an OpenTelemetry span event it would be sent twice.
///
/// ```no_run
/// # fn run() -> Result<(), mcp_server::otel::OtelError> {
/// use tracing_subscriber::Layer as _;
/// use tracing_subscriber::layer::SubscriberExt as _;
/// use tracing_subscriber::util::SubscriberInitExt as _;
///
/// let (layer, _guard) = mcp_server::otel::OtlpConfig::new("my-server").layer()?;
/// tracing_subscriber::registry()
///     .with(layer.with_filter(mcp_server::otel::export_filter()))
///     .init();
/// # Ok(()) }
/// ```
pub fn export_filter() -> tracing_subscriber::filter::FilterFn {
    tracing_subscriber::filter::filter_fn(|meta| {
        if meta.target() == "mcp_server::request" {
            meta.is_span()
        } else {
            *meta.level() <= tracing::Level::INFO
        }
    })
}

/// A random `service.instance.id`: each process is its own instance, so the spans of one
/// worker can be told apart.
fn instance_id() -> String {
    let mut instance = [0u8; 16];
    match getrandom::fill(&mut instance) {
        Ok(()) => mcp_wire::trace::TraceParent::new(instance, [1; 8], 0)
            .map_or_else(|| std::process::id().to_string(), |p| p.trace_id_hex()),
        Err(_) => std::process::id().to_string(),
    }
}

/// `<base>/v1/traces`.
fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

/// Keeps the export running; dropping it sends what is queued (within the export timeout)
/// and stops the export thread.
#[derive(Debug)]
#[must_use = "the export stops when the guard is dropped"]
pub struct OtelGuard {
    control: export::Control,
}

impl OtelGuard {
    /// Sends the spans queued now and waits for the collector's answer, at most the export
    /// timeout (and a second). `false` when the export did not finish in that time.
    pub fn flush(&self) -> bool {
        self.control.flush(false)
    }

    /// How many finished spans were dropped because the queue was full.
    pub fn dropped_spans(&self) -> u64 {
        self.control.losses().dropped.load(Ordering::Relaxed)
    }

    /// How many batches the collector did not take (an error, a timeout, a status other
    /// than 2xx); their spans are lost.
    pub fn failed_exports(&self) -> u64 {
        self.control.losses().failed.load(Ordering::Relaxed)
    }
}

/// Makes `span` the child of the trace context `parent` (a remote span), through whichever
/// layer records it ([`OtlpLayer`] or `tracing-opentelemetry`'s).
pub(crate) fn set_parent(span: &tracing::Span, parent: &TraceContext) {
    if layer::set_parent(span, parent, true).is_some() {
        return;
    }
    let traceparent = parent.traceparent;
    let state = parent
        .tracestate
        .as_deref()
        .and_then(|s| TraceState::from_str(s).ok())
        .unwrap_or_default();
    let context = SpanContext::new(
        TraceId::from_bytes(traceparent.trace_id()),
        SpanId::from_bytes(traceparent.parent_id()),
        TraceFlags::new(traceparent.flags()),
        true,
        state,
    );
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(context));
}

/// Makes `span` (made without a parent) the child of `parent`, a span of this process that
/// has ended or will end first (a task's run and the call that created it).
pub(crate) fn adopt(span: &tracing::Span, parent: &tracing::Span) {
    match layer::context_of(parent) {
        Some(Some(context)) => {
            let _ = layer::set_parent(span, &context, false);
        }
        Some(None) => {}
        None => {
            let _ = span.set_parent(parent.context());
        }
    }
}

/// Links `span` to the span `traceparent` names (one that caused it, on any worker).
pub(crate) fn link(span: &tracing::Span, traceparent: &str) {
    let Ok(cause) = mcp_wire::trace::TraceParent::parse(traceparent) else {
        return;
    };
    if layer::link(span, &cause).is_some() {
        return;
    }
    span.add_link(SpanContext::new(
        TraceId::from_bytes(cause.trace_id()),
        SpanId::from_bytes(cause.parent_id()),
        TraceFlags::new(cause.flags()),
        true,
        TraceState::default(),
    ));
}

/// The trace context of `span` as a request would carry it, when the span is exported
/// (by [`OtlpLayer`] or by `tracing-opentelemetry`'s layer).
pub fn context_of(span: &tracing::Span) -> Option<TraceContext> {
    if let Some(context) = layer::context_of(span) {
        return context;
    }
    let context = span.context();
    let span_ref = context.span();
    let span_context = span_ref.span_context();
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

/// The exporter's HTTP client: the resource server's bounded fetcher, its requests run on a
/// one-thread runtime of its own. The batch processor exports from its own thread and waits
/// there; the server's runtime may be the current-thread kind, blocked while the guard
/// flushes, so the export cannot count on it.
#[derive(Debug)]
struct OtlpHttp {
    fetcher: Fetcher,
    runtime: ExportRuntime,
}

/// A runtime that may be dropped anywhere (inside another runtime too: the export thread's,
/// should its thread fail to start, is dropped where the layer was made).
#[derive(Debug)]
struct ExportRuntime(Option<tokio::runtime::Runtime>);

impl Drop for ExportRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for OtlpHttp {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
        let Some(runtime) = &self.runtime.0 else {
            return Err("the export runtime is gone".into());
        };
        let fetcher = self.fetcher.clone();
        let (status, body) = runtime
            .spawn(async move { fetcher.send(request.map(Full::new)).await })
            .await??;
        let mut response = http::Response::new(body);
        *response.status_mut() = status;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_and_are_checked() {
        let config = OtlpConfig::new("t");
        assert_eq!(
            config
                .clone()
                .endpoint("http://127.0.0.1:4318/")
                .resolved_endpoint()
                .unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            config
                .clone()
                .traces_endpoint("https://otel.example.com/custom")
                .resolved_endpoint()
                .unwrap(),
            "https://otel.example.com/custom"
        );
        for refused in [
            "http://collector.example.com:4318",
            "ftp://127.0.0.1",
            "not a url",
        ] {
            assert!(
                matches!(
                    config.clone().endpoint(refused).resolved_endpoint(),
                    Err(OtelError::Endpoint(_))
                ),
                "{refused}"
            );
        }
        let bounded = OtlpConfig::new("t")
            .max_queue(0)
            .max_batch(10)
            .sample_ratio(f64::NAN);
        assert_eq!(
            (bounded.max_queue, bounded.max_batch, bounded.ratio),
            (1, 1, 0.0)
        );
    }
}
