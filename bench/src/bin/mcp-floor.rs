//! `mcp-floor`: the bare hyper 1 floor server (see `mcp_bench::floor`).
//!
//! ```text
//! mcp-floor --port PORT [--echo] [--body JSON]
//! mcp-floor --stdio [--body JSON]
//! ```
//!
//! With `--stdio` it answers every line on stdin with the body on stdout instead; with `--echo`
//! the HTTP replies carry the request's id (`mcp_bench::floor::ReplyMode::Echo`).
//!
//! Listens on `127.0.0.1:PORT` with tokio's multi-thread runtime (one worker per core it may
//! run on; the harness pins it to one).

use std::process::ExitCode;

use bytes::Bytes;
use mcp_bench::floor;

fn main() -> ExitCode {
    let mut port = None;
    let mut stdio = false;
    let mut mode = floor::ReplyMode::Fixed;
    let mut bad = false;
    let mut body = floor::FLOOR_BODY.to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => stdio = true,
            "--echo" => mode = floor::ReplyMode::Echo,
            "--port" => match args.next().and_then(|v| v.parse::<u16>().ok()) {
                Some(value) => port = Some(value),
                None => bad = true,
            },
            "--body" => match args.next() {
                Some(value) => body = value,
                None => bad = true,
            },
            _ => bad = true,
        }
    }
    if stdio && !bad && port.is_none() {
        let result = floor::serve_stdio(
            std::io::stdin().lock(),
            std::io::stdout().lock(),
            body.as_bytes(),
        );
        return match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("mcp-floor: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let Some(port) = port.filter(|_| !bad && !stdio) else {
        eprintln!(
            "usage: mcp-floor --port PORT [--echo] [--body JSON] | mcp-floor --stdio [--body JSON]"
        );
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("mcp-floor: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        floor::serve(listener, Bytes::from(body), mode).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mcp-floor: {error}");
            ExitCode::FAILURE
        }
    }
}
