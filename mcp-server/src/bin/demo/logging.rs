// Shared by the demo binaries: logs to stderr through tracing-subscriber.

/// How the demos write their log lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (for log collectors).
    Json,
}

impl LogFormat {
    fn parse(text: &str) -> Result<Self, String> {
        match text {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!("--log-format is text or json, not {other:?}")),
        }
    }
}

/// What the demos export spans to: `--otlp-endpoint URL`, else `OTEL_EXPORTER_OTLP_ENDPOINT`
/// (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), else nothing.
#[derive(Clone, Debug, Default)]
struct Export {
    /// `--otlp-endpoint`: the collector's base URL.
    endpoint: Option<String>,
}

impl Export {
    /// Whether spans are exported: a flag or the environment names a collector.
    fn wanted(&self) -> bool {
        self.endpoint.is_some()
            || ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
                .iter()
                .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
    }
}

/// Keeps the span export running until the demo ends (then sends what is queued).
struct Telemetry {
    #[cfg(feature = "otel")]
    _guard: Option<mcp_server::otel::OtelGuard>,
}

/// Installs the demos' subscriber: the filter comes from `RUST_LOG` (say
/// `RUST_LOG=mcp_server=debug` for a span per request), else `default_filter`; lines go to
/// stderr, so stdout stays the protocol's on stdio. With an OTLP endpoint (`export`), request
/// spans (and whatever INFO spans handlers open) are also exported, whatever `RUST_LOG` says.
fn init_logging(
    format: LogFormat,
    default_filter: &str,
    service: &str,
    export: &Export,
) -> Result<Telemetry, String> {
    #[cfg(feature = "demo-logging")]
    {
        use tracing_subscriber::EnvFilter;
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::fmt::format::FmtSpan;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        let filter = EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new(default_filter));
        // Colours only for a person at a terminal: a file or a log collector gets none.
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let lines = tracing_subscriber::fmt::layer()
            .with_ansi(ansi)
            .with_writer(std::io::stderr)
            .with_span_events(FmtSpan::CLOSE);
        let lines = match format {
            LogFormat::Text => lines.boxed(),
            LogFormat::Json => lines.json().with_current_span(true).boxed(),
        };
        #[cfg(feature = "otel")]
        let (spans, guard) = if export.wanted() {
            let mut config = mcp_server::otel::OtlpConfig::new(service);
            if let Some(endpoint) = &export.endpoint {
                config = config.endpoint(endpoint.clone());
            }
            let (layer, guard) = config.layer().map_err(|e| e.to_string())?;
            (
                Some(layer.with_filter(mcp_server::otel::export_filter())),
                Some(guard),
            )
        } else {
            (None, None)
        };
        #[cfg(not(feature = "otel"))]
        if export.wanted() {
            let _ = service;
            return Err("span export needs the `otel` feature".to_owned());
        }
        let registry = tracing_subscriber::registry().with(lines.with_filter(filter));
        #[cfg(feature = "otel")]
        let registry = registry.with(spans);
        if let Err(err) = registry.try_init() {
            eprintln!("logging is not set up: {err}");
        }
        Ok(Telemetry {
            #[cfg(feature = "otel")]
            _guard: guard,
        })
    }
    #[cfg(not(feature = "demo-logging"))]
    {
        let _ = (format, default_filter, service);
        if export.wanted() {
            return Err("span export needs the `otel` feature".to_owned());
        }
        Ok(Telemetry {
            #[cfg(feature = "otel")]
            _guard: None,
        })
    }
}
