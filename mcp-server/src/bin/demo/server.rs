include!("registry.rs");

use mcp_server::serve_stdio;

/// The demo server.
fn demo() -> Server {
    build_demo("mcp-stdio-demo", |builder| builder).expect("the demo's declarations are valid")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(err) = serve_stdio(demo()).await {
        eprintln!("mcp-stdio-demo: {err}");
        std::process::exit(1);
    }
}
