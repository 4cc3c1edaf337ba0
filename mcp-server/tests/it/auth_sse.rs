//! The resource server protecting HTTP+SSE next to Streamable HTTP, over real sockets on
//! 127.0.0.1: the `/sse` endpoint is a resource of its own, whose metadata is served at
//! `/.well-known/oauth-protected-resource/sse` and named by the challenges on `/sse` and its
//! message endpoint (so clients that check the metadata's `resource` against the URL they
//! connect to accept it); a token issued for either resource of this server is accepted, one
//! for another server is refused on both endpoints.

use crate::raw_http;

use std::time::{SystemTime, UNIX_EPOCH};

use mcp_auth::{Audience, BearerChallenge, Challenge, Claims, ScopeSet};
use mcp_server::auth::{ResourceServer, StaticTokens};
use mcp_server::http::HttpConfig;
use mcp_server::{Revision, Server, Tool};
use raw_http::{RawRequest, RawResponse, RawStream, Running};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const ISSUER: &str = "https://auth.example.test";
const SSE_METADATA: &str = "/.well-known/oauth-protected-resource/sse";
const MCP_METADATA: &str = "/.well-known/oauth-protected-resource/mcp";

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

async fn add(args: AddArgs) -> String {
    (args.a + args.b).to_string()
}

async fn deploy(args: AddArgs) -> String {
    format!("deployed {}", args.a + args.b)
}

fn claims(resource: &str) -> Claims {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Claims {
        iss: Some(ISSUER.into()),
        sub: Some("alice".into()),
        aud: Some(Audience::One(resource.into())),
        exp: Some(i64::try_from(now).unwrap() + 3600),
        scope: ScopeSet::parse("mcp:read"),
        ..Claims::default()
    }
}

/// A server configured with its `/mcp` resource, as `mcp-demo --auth` is; the tokens are
/// `for-mcp`, `for-sse` and `foreign` (issued for a resource of another server).
async fn protected() -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let tokens = StaticTokens::new()
        .token("for-mcp", claims(&format!("{base}/mcp")))
        .token("for-sse", claims(&format!("{base}/sse")))
        .token("foreign", claims("http://127.0.0.1:1/sse"));
    let auth = ResourceServer::builder(format!("{base}/mcp"), ISSUER)
        .scopes_supported(["mcp:read", "mcp:deploy"])
        .required_scopes(["mcp:read"])
        .verifier(tokens)
        .build()
        .unwrap();
    let server = Server::builder("protected", "1")
        .tool(Tool::new("add", add))
        .tool(Tool::new("deploy", deploy).scopes(["mcp:deploy"]))
        .build()
        .unwrap();
    Running::start_listener(listener, server, HttpConfig::new().auth(auth)).await
}

fn challenge(response: &RawResponse) -> BearerChallenge {
    let header = response
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("a challenge: {response:?}"));
    BearerChallenge::find(&Challenge::parse_all(header).unwrap()).unwrap()
}

fn with_token<'a>(request: RawRequest<'a>, token: Option<&str>) -> RawRequest<'a> {
    match token {
        Some(token) => request.header("Authorization", &format!("Bearer {token}")),
        None => request,
    }
}

fn open_sse(token: Option<&str>) -> RawRequest<'static> {
    with_token(
        RawRequest::new("GET", "/sse").header("Accept", "text/event-stream"),
        token,
    )
}

fn post_mcp(token: Option<&str>, body: &Value) -> RawRequest<'static> {
    with_token(
        RawRequest::new("POST", "/mcp")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", Revision::V2025_06_18.as_str())
            .json(body),
        token,
    )
}

fn initialize(id: i64, revision: Revision) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": revision.as_str(), "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

/// The `resource_metadata` of a 401 and the path of the document it names.
fn refused_with(response: &RawResponse, server: &Running, metadata: &str) {
    assert_eq!(response.status, 401, "{response:?}");
    let challenge = challenge(response);
    assert_eq!(
        challenge.resource_metadata.as_deref(),
        Some(server.url(metadata).as_str()),
        "{response:?}"
    );
    assert_eq!(challenge.scope.as_deref(), Some("mcp:read"));
}

/// The next message on an HTTP+SSE stream.
async fn next_message(stream: &mut RawStream) -> Value {
    stream.message().await.expect("the stream stays open")
}

#[tokio::test]
async fn the_sse_endpoint_names_and_serves_its_own_metadata() {
    let server = protected().await;
    let response = open_sse(None).send(server.addr).await;
    refused_with(&response, &server, SSE_METADATA);
    let messages = RawRequest::new("POST", "/messages?session_id=unknown")
        .json(&initialize(1, Revision::V2024_11_05))
        .send(server.addr)
        .await;
    refused_with(&messages, &server, SSE_METADATA);
    let mcp = post_mcp(None, &initialize(1, Revision::V2025_06_18))
        .send(server.addr)
        .await;
    refused_with(&mcp, &server, MCP_METADATA);
    // (metadata path, the resource it describes)
    let documents = [
        (SSE_METADATA, "/sse"),
        (MCP_METADATA, "/mcp"),
        ("/.well-known/oauth-protected-resource", "/mcp"),
    ];
    for (path, resource) in documents {
        let response = RawRequest::new("GET", path).send(server.addr).await;
        assert_eq!(response.status, 200, "{path}: {response:?}");
        let document = response.json();
        assert_eq!(document["resource"], server.url(resource), "{path}");
        assert_eq!(document["authorization_servers"], json!([ISSUER]), "{path}");
        assert_eq!(
            document["scopes_supported"],
            json!(["mcp:read", "mcp:deploy"]),
            "{path}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn a_token_for_either_resource_of_this_server_is_accepted() {
    let server = protected().await;
    for token in ["for-sse", "for-mcp"] {
        // HTTP+SSE: the stream, then a session's messages, each with the token.
        let mut stream = open_sse(Some(token)).open(server.addr).await;
        assert_eq!(stream.status, 200, "{token}");
        let head = stream.event().await.expect("the endpoint event");
        assert_eq!(head.event.as_deref(), Some("endpoint"));
        let endpoint = head.data;
        let post = |body: Value| {
            let endpoint = endpoint.clone();
            let addr = server.addr;
            async move {
                with_token(RawRequest::new("POST", &endpoint), Some(token))
                    .json(&body)
                    .send(addr)
                    .await
            }
        };
        let response = post(initialize(1, Revision::V2024_11_05)).await;
        assert_eq!(response.status, 202, "{token}: {response:?}");
        let init = next_message(&mut stream).await;
        assert_eq!(init["id"], 1, "{init}");
        assert_eq!(
            init["result"]["protocolVersion"],
            Revision::V2024_11_05.as_str()
        );
        let response = post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        assert_eq!(response.status, 202, "{token}: {response:?}");
        let response = post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}))
        .await;
        assert_eq!(response.status, 202, "{token}: {response:?}");
        let sum = next_message(&mut stream).await;
        assert_eq!(sum["id"], 2, "{sum}");
        assert_eq!(sum["result"]["content"][0]["text"], "5", "{sum}");
        // A call the token lacks a scope for is refused before it is accepted, with a
        // challenge naming this endpoint's metadata and the scopes to step up to.
        let response = post(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "deploy", "arguments": {"a": 1, "b": 1}}}))
        .await;
        assert_eq!(response.status, 403, "{token}: {response:?}");
        let step_up = challenge(&response);
        assert_eq!(step_up.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(step_up.scope.as_deref(), Some("mcp:deploy mcp:read"));
        assert_eq!(
            step_up.resource_metadata.as_deref(),
            Some(server.url(SSE_METADATA).as_str())
        );
        assert_eq!(response.json()["id"], 3);
        // The message endpoint still wants a token on every POST.
        let anonymous = RawRequest::new("POST", &endpoint)
            .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
            .send(server.addr)
            .await;
        refused_with(&anonymous, &server, SSE_METADATA);

        // Streamable HTTP.
        let response = post_mcp(Some(token), &initialize(1, Revision::V2025_06_18))
            .send(server.addr)
            .await;
        assert_eq!(response.status, 200, "{token}: {response:?}");
        let body = response.messages();
        assert_eq!(
            body[0]["result"]["protocolVersion"],
            Revision::V2025_06_18.as_str(),
            "{token}: {body:?}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn a_token_for_another_server_is_refused_on_both_endpoints() {
    let server = protected().await;
    let sse = open_sse(Some("foreign")).send(server.addr).await;
    refused_with(&sse, &server, SSE_METADATA);
    assert_eq!(challenge(&sse).error.as_deref(), Some("invalid_token"));
    let messages = with_token(
        RawRequest::new("POST", "/messages?session_id=unknown"),
        Some("foreign"),
    )
    .json(&initialize(1, Revision::V2024_11_05))
    .send(server.addr)
    .await;
    refused_with(&messages, &server, SSE_METADATA);
    assert_eq!(challenge(&messages).error.as_deref(), Some("invalid_token"));
    let mcp = post_mcp(Some("foreign"), &initialize(1, Revision::V2025_06_18))
        .send(server.addr)
        .await;
    refused_with(&mcp, &server, MCP_METADATA);
    assert_eq!(challenge(&mcp).error.as_deref(), Some("invalid_token"));
    server.stop().await;
}
