//! `conformance-target [--addr HOST:PORT]`: the fixture server for the suite's server scenarios.
//!
//! Not served yet: it needs mcp-server's HTTP transport (`mcp_server::http`), which is not in
//! the tree yet. Until then it prints why and exits with status 1; the fixture itself is
//! [`mcp_conformance_peers::target::server`], tested socket-free.

fn main() -> std::process::ExitCode {
    match mcp_conformance_peers::target::server() {
        Ok(_) => eprintln!("conformance-target: waiting for mcp-server's HTTP transport"),
        Err(e) => eprintln!("conformance-target: the fixture declarations are invalid: {e}"),
    }
    std::process::ExitCode::FAILURE
}
