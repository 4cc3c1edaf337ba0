//! The resource server end to end over real sockets on 127.0.0.1, on every revision that has
//! authorization: metadata discovery, 401 with its challenge, 403 `insufficient_scope` and
//! step-up on the same session, tokens for another resource or expired refused, sessions and
//! request state bound to their principal. Every error body is checked against its revision's
//! schema.

use crate::raw_http;
use crate::support;

use std::time::{SystemTime, UNIX_EPOCH};

use mcp_auth::{Audience, BearerChallenge, Challenge, Claims, ScopeSet};
use mcp_server::auth::{ResourceServer, StaticTokens};
use mcp_server::http::HttpConfig;
use mcp_server::{Exchange, Question, Revision, Server, Tool, ToolError};
use raw_http::{RawRequest, RawResponse, Running};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const ISSUER: &str = "https://auth.example.test";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const WITH_AUTH: [Revision; 4] = [
    Revision::V2025_03_26,
    Revision::V2025_06_18,
    Revision::V2025_11_25,
    Revision::V2026_07_28,
];

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

async fn add(args: AddArgs, ex: Exchange) -> String {
    let who = ex
        .auth()
        .map_or("nobody", |p| p.subject.as_str())
        .to_owned();
    format!("{} for {who}", args.a + args.b)
}

#[derive(Deserialize, JsonSchema)]
struct DeployArgs {
    service: String,
}

async fn deploy(args: DeployArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "confirm",
            Question::elicit(format!("Deploy {}?", args.service)),
        )
        .await?;
    Ok(format!("deployed {}: {}", args.service, answer.accepted()))
}

async fn publish(args: DeployArgs) -> String {
    format!("published {}", args.service)
}

fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

fn claims(resource: &str, sub: &str, scope: &str) -> Claims {
    Claims {
        iss: Some(ISSUER.into()),
        sub: Some(sub.into()),
        aud: Some(Audience::One(resource.into())),
        exp: Some(now() + 3600),
        scope: ScopeSet::parse(scope),
        ..Claims::default()
    }
}

async fn protected() -> Running {
    protected_with(false).await
}

async fn protected_with(hide_tools: bool) -> Running {
    // The resource is the URL clients use, so the port is known only once bound: bind first.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let tokens = StaticTokens::new()
        .token("alice-read", claims(&resource, "alice", "mcp:read"))
        .token(
            "alice-deploy",
            claims(&resource, "alice", "mcp:read mcp:deploy"),
        )
        .token("bob-read", claims(&resource, "bob", "mcp:read"))
        .token(
            "bob-deploy",
            claims(&resource, "bob", "mcp:read mcp:deploy"),
        )
        .token(
            "alice-elsewhere",
            claims("http://127.0.0.1:1/other", "alice", "mcp:read mcp:deploy"),
        )
        .token(
            "alice-expired",
            Claims {
                exp: Some(now() - 3600),
                ..claims(&resource, "alice", "mcp:read")
            },
        );
    let auth = ResourceServer::builder(resource, ISSUER)
        .scopes_supported(["mcp:read", "mcp:deploy"])
        .required_scopes(["mcp:read"])
        .hide_unauthorized_tools(hide_tools)
        .verifier(tokens)
        .build()
        .unwrap();
    let server = Server::builder("protected", "1")
        .tool(Tool::new("add", add))
        .tool(Tool::new("deploy", deploy).scopes(["mcp:deploy"]))
        .tool(Tool::new("publish", publish).scopes(["mcp:deploy"]))
        .build()
        .unwrap();
    Running::start_listener(listener, server, HttpConfig::new().auth(auth)).await
}

fn post(
    revision: Revision,
    token: Option<&str>,
    session: Option<&str>,
    body: &Value,
) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp").header("Accept", ACCEPT_BOTH);
    if revision >= Revision::V2025_06_18 {
        request = request.header("MCP-Protocol-Version", revision.as_str());
    }
    if let Some(token) = token {
        request = request.header("Authorization", &format!("Bearer {token}"));
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    if revision == Revision::V2026_07_28 {
        request = request.header("Mcp-Method", body["method"].as_str().unwrap_or_default());
        if let Some(name) = body["params"]["name"].as_str() {
            request = request.header("Mcp-Name", name);
        }
    }
    request.json(body)
}

fn params(revision: Revision, mut params: Value) -> Value {
    if revision == Revision::V2026_07_28 {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        });
    }
    params
}

fn call(revision: Revision, id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": params(revision, json!({"name": name, "arguments": arguments}))})
}

fn challenge(response: &RawResponse) -> BearerChallenge {
    let header = response
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("a challenge: {response:?}"));
    BearerChallenge::find(&Challenge::parse_all(header).unwrap()).unwrap()
}

/// An error body: the revision's schema, and the id of the request.
fn refused(revision: Revision, response: &RawResponse, status: u16, id: i64) -> Value {
    assert_eq!(response.status, status, "{revision}: {response:?}");
    let body = response.json();
    support::check(revision, "JSONRPCMessage", &body);
    assert_eq!(body["id"], id, "{revision}: {body}");
    body
}

async fn open_session(server: &Running, revision: Revision, token: &str) -> Option<String> {
    if revision == Revision::V2026_07_28 {
        return None;
    }
    let init = post(
        revision,
        Some(token),
        None,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision.as_str(), "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .send(server.addr)
    .await;
    assert_eq!(init.status, 200, "{revision}: {init:?}");
    let session = init.header("mcp-session-id").unwrap().to_owned();
    let done = post(
        revision,
        Some(token),
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send(server.addr)
    .await;
    assert_eq!(done.status, 202);
    Some(session)
}

#[tokio::test]
async fn metadata_is_served_where_clients_look() {
    let server = protected().await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = RawRequest::new("GET", path).send(server.addr).await;
        assert_eq!(response.status, 200, "{path}");
        let document = response.json();
        assert_eq!(document["resource"], server.url("/mcp"));
        assert_eq!(document["authorization_servers"], json!([ISSUER]));
        assert_eq!(
            document["scopes_supported"],
            json!(["mcp:read", "mcp:deploy"])
        );
    }
}

#[tokio::test]
async fn without_a_valid_token_every_revision_gets_401_and_where_to_start() {
    let server = protected().await;
    let metadata = format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        server.addr
    );
    for revision in WITH_AUTH {
        let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
            "params": params(revision, json!({}))});
        // (token, error parameter of the challenge)
        for (token, error) in [
            (None, None),
            (Some("unknown"), Some("invalid_token")),
            (Some("alice-expired"), Some("invalid_token")),
            (Some("alice-elsewhere"), Some("invalid_token")),
        ] {
            let response = post(revision, token, None, &list).send(server.addr).await;
            refused(revision, &response, 401, 3);
            let challenge = challenge(&response);
            assert_eq!(
                challenge.resource_metadata.as_deref(),
                Some(metadata.as_str())
            );
            assert_eq!(challenge.scope.as_deref(), Some("mcp:read"));
            assert_eq!(challenge.error.as_deref(), error, "{revision} {token:?}");
        }
    }
    // A GET stream and a DELETE are protected too.
    let get = RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .send(server.addr)
        .await;
    assert_eq!(get.status, 401);
    assert!(get.header("www-authenticate").is_some());
}

#[tokio::test]
async fn a_missing_scope_is_403_and_a_wider_token_steps_up_on_the_same_session() {
    let server = protected().await;
    for revision in WITH_AUTH {
        let session = open_session(&server, revision, "alice-read").await;
        let session = session.as_deref();
        let added = post(
            revision,
            Some("alice-read"),
            session,
            &call(revision, 1, "add", json!({"a": 2, "b": 40})),
        )
        .send(server.addr)
        .await;
        assert_eq!(added.status, 200, "{revision}: {added:?}");
        let text = &added.messages()[0]["result"]["content"][0]["text"];
        assert_eq!(text, "42 for alice", "{revision}");
        let deploy = call(revision, 2, "publish", json!({"service": "web"}));
        let forbidden = post(revision, Some("alice-read"), session, &deploy)
            .send(server.addr)
            .await;
        refused(revision, &forbidden, 403, 2);
        let challenge = challenge(&forbidden);
        assert_eq!(challenge.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(challenge.scope.as_deref(), Some("mcp:deploy mcp:read"));
        // The same principal with the wider token goes on in the same session.
        let stepped = post(revision, Some("alice-deploy"), session, &deploy)
            .send(server.addr)
            .await;
        assert_eq!(stepped.status, 200, "{revision}: {stepped:?}");
        let text = &stepped.messages()[0]["result"]["content"][0]["text"];
        assert_eq!(text, "published web", "{revision}");
    }
}

#[tokio::test]
async fn sessions_and_request_state_belong_to_their_principal() {
    let server = protected().await;
    let list = |revision| json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": params(revision, json!({}))});
    for revision in [
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
    ] {
        let session = open_session(&server, revision, "alice-read").await.unwrap();
        let mine = post(
            revision,
            Some("alice-read"),
            Some(&session),
            &list(revision),
        )
        .send(server.addr)
        .await;
        assert_eq!(mine.status, 200);
        // Bob holds a valid token, but the session is not his: as if it did not exist.
        let theirs = post(revision, Some("bob-read"), Some(&session), &list(revision))
            .send(server.addr)
            .await;
        refused(revision, &theirs, 404, 5);
        let delete = RawRequest::new("DELETE", "/mcp")
            .header("Authorization", "Bearer bob-read")
            .header("Mcp-Session-Id", &session)
            .send(server.addr)
            .await;
        assert_eq!(delete.status, 404, "{revision}");
        let still = post(
            revision,
            Some("alice-read"),
            Some(&session),
            &list(revision),
        )
        .send(server.addr)
        .await;
        assert_eq!(
            still.status, 200,
            "{revision}: bob's DELETE ended alice's session"
        );
        // Alice's token expires mid-session: refused, and her next token finds the session.
        let expired = post(
            revision,
            Some("alice-expired"),
            Some(&session),
            &list(revision),
        )
        .send(server.addr)
        .await;
        refused(revision, &expired, 401, 5);
        let renewed = post(
            revision,
            Some("alice-deploy"),
            Some(&session),
            &list(revision),
        )
        .send(server.addr)
        .await;
        assert_eq!(
            renewed.status, 200,
            "{revision}: the session outlived the token"
        );
    }
    // 2026-07-28: the request state of alice's question is refused to bob.
    let revision = Revision::V2026_07_28;
    let asked = post(
        revision,
        Some("alice-deploy"),
        None,
        &call(revision, 7, "deploy", json!({"service": "web"})),
    )
    .send(server.addr)
    .await;
    let result = &asked.json()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    let state = result["requestState"].clone();
    let mut retry = call(revision, 8, "deploy", json!({"service": "web"}));
    retry["params"]["requestState"] = state;
    retry["params"]["inputResponses"] = json!({"confirm": {"action": "accept", "content": {}}});
    let theirs = post(revision, Some("bob-deploy"), None, &retry)
        .send(server.addr)
        .await;
    let error = theirs.json();
    support::check(revision, "JSONRPCMessage", &error);
    assert_eq!(
        error["error"]["code"], -32602,
        "bob redeemed alice's request state: {error}"
    );
    let mine = post(revision, Some("alice-deploy"), None, &retry)
        .send(server.addr)
        .await;
    let mine = mine.json();
    assert_eq!(
        mine["result"]["content"][0]["text"], "deployed web: true",
        "{mine}"
    );
}

/// With `hide_unauthorized_tools`, `tools/list` shows a token only what it may call.
#[tokio::test]
async fn listing_can_hide_what_a_token_cannot_call() {
    for (hide, reader_sees) in [(false, 3), (true, 1)] {
        let server = protected_with(hide).await;
        for revision in [Revision::V2025_03_26, Revision::V2026_07_28] {
            for (token, expected) in [("alice-read", reader_sees), ("alice-deploy", 3)] {
                let session = open_session(&server, revision, token).await;
                let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list",
                    "params": params(revision, json!({}))});
                let listed = post(revision, Some(token), session.as_deref(), &list)
                    .send(server.addr)
                    .await;
                let tools = listed.messages()[0]["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .len();
                assert_eq!(tools, expected, "hide={hide} {revision} {token}");
            }
        }
    }
}
