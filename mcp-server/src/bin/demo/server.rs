include!("registry.rs");

use mcp_server::serve_stdio;

/// The demo server.
fn demo() -> Server {
    demo_builder("mcp-stdio-demo")
        .build()
        .expect("the demo's declarations are valid")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(err) = serve_stdio(demo()).await {
        eprintln!("mcp-stdio-demo: {err}");
        std::process::exit(1);
    }
}
