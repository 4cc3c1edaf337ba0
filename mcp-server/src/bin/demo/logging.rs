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

/// Installs the demos' subscriber: the filter comes from `RUST_LOG` (say
/// `RUST_LOG=mcp_server=debug` for a span per request), else `default_filter`; lines go to
/// stderr, so stdout stays the protocol's on stdio.
fn init_logging(format: LogFormat, default_filter: &str) {
    #[cfg(feature = "demo-logging")]
    {
        use tracing_subscriber::EnvFilter;
        use tracing_subscriber::fmt::format::FmtSpan;
        let filter = EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new(default_filter));
        // Colours only for a person at a terminal: a file or a log collector gets none.
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(ansi)
            .with_writer(std::io::stderr)
            .with_span_events(FmtSpan::CLOSE);
        let installed = match format {
            LogFormat::Text => builder.try_init(),
            LogFormat::Json => builder.json().with_current_span(true).try_init(),
        };
        if let Err(err) = installed {
            eprintln!("logging is not set up: {err}");
        }
    }
    #[cfg(not(feature = "demo-logging"))]
    let _ = (format, default_filter);
}
