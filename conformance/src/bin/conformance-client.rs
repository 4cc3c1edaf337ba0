//! `conformance-client <server-url>`: the client the official conformance suite drives.
//!
//! The suite sets `MCP_CONFORMANCE_SCENARIO` (and `MCP_CONFORMANCE_PROTOCOL_VERSION`,
//! `MCP_CONFORMANCE_CONTEXT`) and appends its test server's URL. Exit status 0 means the
//! scenario ran to its end; the suite itself judges what the server saw.

use mcp_conformance_peers::client::Scenario;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let scenario = match Scenario::from_env(std::env::args().skip(1)) {
        Ok(scenario) => scenario,
        Err(e) => {
            eprintln!("conformance-client: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    println!("conformance-client: scenario {}", scenario.name);
    match scenario.run().await {
        Ok(()) => {
            println!("conformance-client: scenario {} done", scenario.name);
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("conformance-client: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
