//! `conformance-target [--addr HOST:PORT]`: the fixture server for the suite's server scenarios,
//! over Streamable HTTP at `/mcp` (and HTTP+SSE at `/sse`), on every revision.
//!
//! `--addr` defaults to `127.0.0.1:0` (a free port). Once listening it prints one line,
//! `conformance-target listening on http://HOST:PORT/mcp`, and serves until Ctrl-C or SIGTERM.

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let mut addr = String::from("127.0.0.1:0");
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--addr", Some(value)) => addr = value,
            _ => {
                eprintln!("usage: conformance-target [--addr HOST:PORT]");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let server = match mcp_conformance_peers::target::server() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("conformance-target: the fixture declarations are invalid: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("conformance-target: cannot listen on {addr}: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let local = match listener.local_addr() {
        Ok(local) => local,
        Err(e) => {
            eprintln!("conformance-target: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    println!("conformance-target listening on http://{local}/mcp");
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    match serve_with_shutdown(listener, endpoint, shutdown_signal()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-target: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
