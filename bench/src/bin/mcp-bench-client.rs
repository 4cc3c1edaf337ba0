//! `mcp-bench-client`: the load generator's loop driven through our `mcp-client` (see
//! `mcp_bench::client_load`). Same arguments and output as `mcp-load`, except
//! `--fixed-reply` and `--sessions`.

use std::process::ExitCode;

use mcp_bench::{client_load, load::LoadConfig};

fn main() -> ExitCode {
    let config = match LoadConfig::from_args(std::env::args().skip(1)) {
        Ok(config) if !config.fixed_reply && config.sessions.is_none() => config,
        Ok(_) => {
            eprintln!("mcp-bench-client: --fixed-reply and --sessions are mcp-load only");
            return ExitCode::from(2);
        }
        Err(error) => {
            eprintln!("mcp-bench-client: {error}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("mcp-bench-client: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let line = runtime
        .block_on(client_load::run(&config))
        .map(|report| serde_json::to_string(&report));
    match line {
        Ok(Ok(line)) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Ok(Err(error)) => {
            eprintln!("mcp-bench-client: {error}");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("mcp-bench-client: {error}");
            ExitCode::FAILURE
        }
    }
}
