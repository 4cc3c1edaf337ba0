//! The demo MCP server over HTTP: Streamable HTTP at `/mcp` and HTTP+SSE at `/sse`.
//!
//! ```text
//! mcp-demo [--addr HOST:PORT] [--redis URL]
//! ```
//!
//! Listens on `127.0.0.1:8080` by default and prints `mcp-demo listening on http://HOST:PORT`
//! (the bound port, so `--addr 127.0.0.1:0` works) as its first line on stdout. The in-memory
//! hub holds sessions unless `--redis URL` (or the `MCP_DEMO_REDIS` environment variable) names
//! a Redis server, in which case several demo processes can share sessions. Stops on Ctrl-C or
//! SIGTERM.

include!("demo/registry.rs");

use std::io::Write as _;
use std::sync::Arc;

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};

struct Options {
    addr: String,
    redis: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        addr: "127.0.0.1:8080".to_owned(),
        redis: std::env::var("MCP_DEMO_REDIS")
            .ok()
            .filter(|v| !v.is_empty()),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => options.addr = args.next().ok_or("--addr needs HOST:PORT")?,
            "--redis" => options.redis = Some(args.next().ok_or("--redis needs a URL")?),
            "-h" | "--help" => {
                println!("usage: mcp-demo [--addr HOST:PORT] [--redis URL]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

async fn run(options: Options) -> Result<(), String> {
    let hub = match &options.redis {
        Some(url) => Some(Arc::new(
            mcp_hub::RedisHub::connect(url, mcp_hub::RedisConfig::new())
                .await
                .map_err(|e| format!("cannot use Redis at {url}: {e}"))?,
        )),
        None => None,
    };
    let server = build_demo("mcp-demo", |builder| match hub {
        Some(hub) => builder.state_store(hub.clone()).event_log(hub),
        None => builder,
    })
    .map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind(&options.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "mcp-demo listening on http://{bound}");
    let _ = stdout.flush();
    let endpoint = HttpEndpoint::new(server, HttpConfig::default());
    serve_with_shutdown(listener, endpoint, shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() {
    let result = match options() {
        Ok(options) => run(options).await,
        Err(err) => Err(err),
    };
    if let Err(err) = result {
        eprintln!("mcp-demo: {err}");
        std::process::exit(1);
    }
}
