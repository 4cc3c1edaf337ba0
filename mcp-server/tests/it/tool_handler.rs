//! A handler type that implements [`Handler`] itself: its `call` runs with an exchange, and its
//! output is converted like an async function's.

use futures::FutureExt as _;
use futures::future::BoxFuture;
use mcp_server::{Context, Exchange, Handler, Json, Server, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Args {
    n: i64,
}

#[derive(Serialize, JsonSchema)]
struct Doubled {
    doubled: i64,
}

/// Doubles `n`, written as a type rather than a function.
struct Doubler;

/// The marker of [`Doubler`]'s own implementation.
struct Own;

impl Handler<Own> for Doubler {
    type Input = Args;
    type Output = Json<Doubled>;
    const TAKES_EXCHANGE: bool = false;

    fn call(&self, args: Args, _: Exchange) -> BoxFuture<'static, Json<Doubled>> {
        async move {
            Json(Doubled {
                doubled: args.n * 2,
            })
        }
        .boxed()
    }
}

async fn doubled_fn(args: Args) -> Json<Doubled> {
    Json(Doubled {
        doubled: args.n * 2,
    })
}

async fn result_of(server: &Server, name: &str) -> Value {
    let ctx = Context::connection();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let out = server
        .handle_all(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"_meta": meta, "name": name, "arguments": {"n": 21}}}),
            &ctx,
        )
        .await;
    out.last().expect("a response").to_value()["result"].clone()
}

#[tokio::test]
async fn handler_types_and_functions_give_the_same_result() {
    let server = Server::builder("s", "1")
        .tool(Tool::new("by_type", Doubler))
        .tool(Tool::new("by_fn", doubled_fn))
        .build()
        .unwrap();
    let by_type = result_of(&server, "by_type").await;
    assert_eq!(by_type["structuredContent"], json!({"doubled": 42}));
    assert_eq!(by_type["content"][0]["text"], "{\"doubled\":42}");
    assert_eq!(by_type, result_of(&server, "by_fn").await);
}
