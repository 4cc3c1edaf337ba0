//! `mcp-soak`: one attack of the soak and abuse harness (issue 27), driven by
//! `cargo xtask soak`. Prints one JSON line (the attack's report).
//!
//! ```text
//! mcp-soak --attack NAME --demo PATH --stdio-demo PATH [--seconds S] [--hold S] [--quick] [--pin]
//! ```
//!
//! It starts the server processes the attack needs itself (`mcp-demo --addr 127.0.0.1:0`, and
//! for the Redis attacks its own `redis-server` on a free loopback port), and kills them on
//! every exit path. See the module docs of `soak` for what is measured.

#[path = "../soak/mod.rs"]
mod soak;

use std::process::ExitCode;

fn main() -> ExitCode {
    let options = match soak::Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("mcp-soak: {error}");
            eprintln!(
                "usage: mcp-soak --attack NAME --demo PATH --stdio-demo PATH [--seconds S] \
                 [--hold S] [--quick] [--pin]\nattacks: {}",
                soak::ATTACKS.join(", ")
            );
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("mcp-soak: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(soak::run(&options)) {
        Ok(report) => match serde_json::to_string(&report) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("mcp-soak: {error}");
                ExitCode::FAILURE
            }
        },
        Err(error) => {
            eprintln!("mcp-soak: {}: {error}", options.attack);
            ExitCode::FAILURE
        }
    }
}
