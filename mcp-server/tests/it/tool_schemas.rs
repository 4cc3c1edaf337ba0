//! `ServerBuilder::tool_schemas`: with `ToolSchemas::Native`, 2025-11-25 clients see a tool's
//! declared JSON Schema 2020-12 as it is (less `x-mcp-header`); by default they see the
//! projection, where a schema with a real union is not offered at all. Over real HTTP, read by
//! our client.

use crate::raw_http;

use mcp_client::{Client, Revision};
use mcp_server::http::HttpConfig;
use mcp_server::{Server, Tool, ToolSchemas};
use raw_http::{Running, WAIT};
use serde_json::Value;

/// Where to send the parcel.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)] // only the derived schema matters here
struct Ship {
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    to: Destination,
}

/// A real union: an address or a pickup point.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum Destination {
    Address { street: String, city: String },
    Pickup { point: u32 },
}

async fn ship(_: Ship) -> String {
    "shipped".into()
}

async fn listed(schemas: Option<ToolSchemas>, revision: Revision) -> Option<Value> {
    let mut builder = Server::builder("schemas", "1.0").tool(Tool::new("ship", ship));
    if let Some(schemas) = schemas {
        builder = builder.tool_schemas(schemas);
    }
    let running = Running::start(builder.build().unwrap(), HttpConfig::new()).await;
    let client = Client::builder()
        .timeout(WAIT)
        .revision(revision)
        .connect_http(&running.url("/mcp"))
        .await
        .unwrap();
    let tools = client.list_tools().await.unwrap();
    client.close().await.unwrap();
    tools.into_iter().find(|t| t["name"] == "ship")
}

#[tokio::test]
async fn native_schemas_reach_2025_11_25_clients_as_declared() {
    let native = listed(Some(ToolSchemas::Native), Revision::V2025_11_25)
        .await
        .expect("listed on 2025-11-25 when native");
    let schema = &native["inputSchema"];
    assert_eq!(
        schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{schema:#}"
    );
    assert!(schema["$defs"]["Destination"].is_object(), "{schema:#}");
    assert!(schema["properties"]["to"]["$ref"].is_string(), "{schema:#}");
    // The header annotation belongs to 2026-07-28 only.
    assert!(!schema.to_string().contains("x-mcp-header"), "{schema:#}");
    assert_eq!(native["description"], "Where to send the parcel.");

    // By default the union cannot be shown without loss: the tool is not offered there.
    assert!(listed(None, Revision::V2025_11_25).await.is_none());
    assert!(
        listed(Some(ToolSchemas::Projected), Revision::V2025_11_25)
            .await
            .is_none()
    );
    // Draft-07 revisions stay projected either way; 2026-07-28 always shows the declaration,
    // annotation included.
    assert!(
        listed(Some(ToolSchemas::Native), Revision::V2025_06_18)
            .await
            .is_none()
    );
    let modern = listed(None, Revision::V2026_07_28)
        .await
        .expect("listed on 2026-07-28");
    assert_eq!(
        modern["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
}
