//! Several server processes (workers) sharing one Redis: a client of any worker is served by
//! any worker, hears what any worker announces, and reads state any worker wrote.
//!
//! ```sh
//! cargo run -p mcp-examples --bin redis_workers 127.0.0.1:8081   # worker 1
//! cargo run -p mcp-examples --bin redis_workers 127.0.0.1:8082   # worker 2
//! mcp listen http://127.0.0.1:8081/mcp --resource board://latest  # listens on worker 1
//! mcp call http://127.0.0.1:8082/mcp post text=hello              # posts on worker 2
//! ```
//!
//! The listener on worker 1 hears the post made on worker 2, and reads it back from worker 1.
//! Redis is at `MCP_REDIS_URL` (default `redis://127.0.0.1:6379`); every worker of one
//! deployment uses the same key prefix, `MCP_REDIS_PREFIX` (default `mcp-examples`), and
//! deployments sharing a Redis use different ones.
//!
//! A [`RedisHub`] is both halves of the hub: the state store (sessions, the state of calls
//! waiting for answers, and here the application's own record) and the event log
//! (notifications, streams, pushed questions and their replies, between workers). Give it to
//! the builder as both, and run as many workers as needed behind any load balancer: no
//! affinity is needed. The repository's `docs/deploying.md` is the guide.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mcp_hub::{Key, RedisConfig, RedisHub, StateStore, StoreError};
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{
    Exchange, NoArgs, Notifier, Resource, ResourceError, ResourceRequest, Server, State, Tool,
    ToolError,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// The resource every worker serves from the shared record.
const BOARD_URI: &str = "board://latest";
/// The record's name in the hub (in the root namespace, beside the server's own records).
const BOARD_KEY: &str = "examples/board/latest";
/// How long the record lives after the last post.
const BOARD_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// What the handlers share within one worker.
#[derive(Clone)]
struct Worker {
    /// This worker's name, to show which one answered.
    name: String,
}

/// Stores `value` under `key`, whatever is there: the store only has compare-and-set writes,
/// so read the version, write on it, and try again when another worker wrote in between.
async fn put(store: &dyn StateStore, key: &Key, value: Bytes) -> Result<(), StoreError> {
    loop {
        let written = match store.get(key).await? {
            None => store.create(key, value.clone(), BOARD_TTL).await,
            Some(record) => {
                store
                    .save(key, value.clone(), record.version, BOARD_TTL)
                    .await
            }
        };
        match written {
            Ok(_) => return Ok(()),
            // Another worker got there first: read again.
            Err(StoreError::AlreadyExists | StoreError::VersionConflict { .. }) => {}
            Err(StoreError::NotFound) => {} // it expired in between
            Err(other) => return Err(other),
        }
    }
}

/// The arguments of `post`.
#[derive(Deserialize, JsonSchema)]
struct PostArgs {
    /// What to post on the board.
    text: String,
}

/// Writes the board in the shared store, then announces the change through the shared event
/// log: subscribers of every worker hear it.
async fn post(
    State(worker): State<Worker>,
    notifier: Notifier,
    args: PostArgs,
    ex: Exchange,
) -> Result<String, ToolError> {
    let key = ex.namespace().key(BOARD_KEY);
    put(ex.store().as_ref(), &key, Bytes::from(args.text.clone()))
        .await
        .map_err(|err| ToolError::new(format!("not posted: {err}")))?;
    notifier
        .resource_updated(BOARD_URI)
        .await
        .map_err(|err| ToolError::new(format!("posted, but not announced: {err}")))?;
    Ok(format!("posted {:?} on {}", args.text, worker.name))
}

/// Names the worker that served the call.
async fn whoami(State(worker): State<Worker>, _: NoArgs) -> String {
    worker.name
}

/// Reads the board from the shared store, whichever worker wrote it.
async fn board(_: ResourceRequest, ex: Exchange) -> Result<String, ResourceError> {
    let key = ex.namespace().key(BOARD_KEY);
    match ex.store().get(&key).await {
        Ok(Some(record)) => Ok(String::from_utf8_lossy(&record.value).into_owned()),
        Ok(None) => Ok("(nothing posted yet)".to_owned()),
        Err(err) => Err(ResourceError::Failed(format!(
            "the board cannot be read: {err}"
        ))),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url =
        std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let prefix = std::env::var("MCP_REDIS_PREFIX").unwrap_or_else(|_| "mcp-examples".to_owned());
    // Fails at once when Redis does not answer (within the command timeout).
    let hub = Arc::new(
        RedisHub::connect(&url, RedisConfig::new().key_prefix(prefix))
            .await
            // The URL may hold a password: not repeated in the message.
            .map_err(|err| format!("cannot use Redis (MCP_REDIS_URL): {err}"))?,
    );

    let worker = Worker {
        name: format!("worker-{}", std::process::id()),
    };
    let server = Server::builder("redis-example", "1.0")
        // The same hub as the state store and as the event log.
        .state_store(hub.clone())
        .event_log(hub)
        .with_state(worker.clone())
        .tool(Tool::new("post", post).description("Posts on the shared board."))
        .tool(Tool::new("whoami", whoami).description("Names the worker that answers."))
        .resource(Resource::new(BOARD_URI, "board", board).mime_type("text/plain"))
        .build()?;

    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    println!("{} on Redis", worker.name);
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    serve_with_shutdown(listener, endpoint, shutdown_signal()).await?;
    Ok(())
}
