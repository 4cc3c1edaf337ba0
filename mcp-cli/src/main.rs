//! The `mcp` binary: see the `mcp_cli` crate docs, or run `mcp --help`.

use std::process::ExitCode;

fn main() -> ExitCode {
    mcp_cli::run()
}
