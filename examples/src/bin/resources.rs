//! Resources: fixed URIs whose contents a client lists and reads.
//!
//! ```sh
//! cargo run -p mcp-examples --bin resources              # http://127.0.0.1:8080/mcp
//! cargo run -p mcp-examples --bin resources 127.0.0.1:0  # any free port
//! ```
//!
//! A resource is a URI, a name, and an async reader. The reader returns text (`String`),
//! bytes (`Vec<u8>`, sent base64-encoded as a blob), one or several [`ResourceContents`], or a
//! `Result` of these whose error is a [`ResourceError`] (not found, or failed). Metadata
//! (title, description, MIME type, size, cache hints) is set on the declaration and shown in
//! `resources/list`.
//!
//! Resources whose URI has variables (`users://{id}`) are templates: see `templates.rs`.

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{CacheScope, Resource, ResourceContents, ResourceError, ResourceRequest, Server};

/// The smallest valid GIF (a transparent pixel), served as a binary resource.
const PIXEL_GIF: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

/// Text: the `String` becomes one text content with the URI that was read.
async fn readme(_: ResourceRequest) -> String {
    "This server shows resources: text, JSON, binary, and one that fails.".to_owned()
}

/// JSON is text too; its MIME type is set on the declaration below.
async fn settings(_: ResourceRequest) -> String {
    serde_json::json!({"theme": "dark", "language": "en"}).to_string()
}

/// Binary contents: `Vec<u8>` is sent as a base64 `blob`, with the declared MIME type.
async fn logo(_: ResourceRequest) -> Vec<u8> {
    PIXEL_GIF.to_vec()
}

/// Several contents under one URI, each with its own MIME type: [`ResourceContents`].
async fn bundle(request: ResourceRequest) -> Vec<ResourceContents> {
    vec![
        ResourceContents::text(
            format!("{}#notes", request.uri),
            "Two parts: notes and a pixel.",
        )
        .with_mime_type("text/markdown"),
        ResourceContents::blob(format!("{}#pixel", request.uri), PIXEL_GIF)
            .with_mime_type("image/gif"),
    ]
}

/// A reader may fail: the client gets a JSON-RPC error (an internal error with this text).
async fn flaky(_: ResourceRequest) -> Result<String, ResourceError> {
    Err(ResourceError::Failed(
        "the backing service is down; try again later".to_owned(),
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder("resources-example", "1.0")
        .resource(
            Resource::new("docs://readme", "readme", readme)
                .title("Read me")
                .description("What this server is.")
                .mime_type("text/plain"),
        )
        .resource(
            Resource::new("config://settings", "settings", settings)
                .mime_type("application/json")
                // A cache hint (2026-07-28): clients may keep it for a minute.
                .cache(60_000, CacheScope::Public),
        )
        .resource(
            Resource::new("images://logo", "logo", logo)
                .mime_type("image/gif")
                .size(PIXEL_GIF.len() as u64),
        )
        .resource(Resource::new("docs://bundle", "bundle", bundle))
        .resource(Resource::new("status://flaky", "flaky", flaky).mime_type("text/plain"))
        .build()?;

    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    serve_with_shutdown(listener, endpoint, shutdown_signal()).await?;
    Ok(())
}
