include!("registry.rs");
include!("logging.rs");

use mcp_server::serve_stdio;

/// The demo server.
fn demo() -> Server {
    build_demo("mcp-stdio-demo", |builder| builder).expect("the demo's declarations are valid")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `--log-format text|json` (default text); the lines go to stderr.
    let mut args = std::env::args().skip(1);
    let format = match (args.next().as_deref(), args.next()) {
        (None, _) => Ok(LogFormat::Text),
        (Some("--log-format"), Some(format)) => LogFormat::parse(&format),
        _ => Err("usage: mcp-stdio-demo [--log-format text|json]".to_owned()),
    };
    match format {
        // Warnings only by default: a stdio server's stderr is shown by its client.
        Ok(format) => init_logging(format, "warn"),
        Err(err) => {
            eprintln!("mcp-stdio-demo: {err}");
            std::process::exit(2);
        }
    }
    if let Err(err) = serve_stdio(demo()).await {
        eprintln!("mcp-stdio-demo: {err}");
        std::process::exit(1);
    }
}
