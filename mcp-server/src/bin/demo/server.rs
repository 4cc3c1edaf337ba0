include!("registry.rs");
include!("logging.rs");

use mcp_server::serve_stdio;

/// The demo server.
fn demo() -> Server {
    build_demo("mcp-stdio-demo", |builder| builder).expect("the demo's declarations are valid")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `--log-format text|json` (default text), `--otlp-endpoint URL`; the lines go to stderr.
    let usage = "usage: mcp-stdio-demo [--log-format text|json] [--otlp-endpoint URL]";
    let mut format = LogFormat::Text;
    let mut export = Export::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let parsed = match (arg.as_str(), args.next()) {
            ("--log-format", Some(value)) => LogFormat::parse(&value).map(|f| format = f),
            ("--otlp-endpoint", Some(url)) => {
                export.endpoint = Some(url);
                Ok(())
            }
            _ => Err(usage.to_owned()),
        };
        if let Err(err) = parsed {
            eprintln!("mcp-stdio-demo: {err}");
            std::process::exit(2);
        }
    }
    // Warnings only by default: a stdio server's stderr is shown by its client.
    let telemetry = match init_logging(format, "warn", "mcp-stdio-demo", &export) {
        Ok(telemetry) => telemetry,
        Err(err) => {
            eprintln!("mcp-stdio-demo: {err}");
            std::process::exit(2);
        }
    };
    let served = serve_stdio(demo()).await;
    // Sends the spans still queued before the process exits.
    #[allow(clippy::drop_non_drop, reason = "it holds the export's guard with `otel`")]
    drop(telemetry);
    if let Err(err) = served {
        eprintln!("mcp-stdio-demo: {err}");
        std::process::exit(1);
    }
}
