//! Refusals of requests that carry no JSON-RPC message (`GET` and `DELETE` of the MCP
//! endpoint) have no request id to answer with. The schemas up to 2025-06-18 require an id on
//! every error (`"id": null` is not one), so there the refusal is its HTTP status with a plain
//! text body; from 2025-11-25 it is a JSON-RPC error without an id. Table-driven per revision,
//! each body validated against that revision's official schema.

use crate::raw_http;

use mcp_auth::{Audience, Claims, ScopeSet};
use mcp_server::auth::{ResourceServer, StaticTokens};
use mcp_server::http::HttpConfig;
use mcp_server::{Revision, Server, Tool};
use raw_http::{RawRequest, Running};
use schemars::JsonSchema;
use serde::Deserialize;

/// The revisions with sessions, hence with a `GET` stream or a `DELETE`.
const WITH_SESSIONS: [Revision; 3] = [
    Revision::V2025_03_26,
    Revision::V2025_06_18,
    Revision::V2025_11_25,
];

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

fn server(revisions: mcp_adapters::AdapterSet) -> Server {
    Server::builder("bodiless", "1")
        .revisions(revisions)
        .tool(Tool::new("echo", echo))
        .build()
        .unwrap()
}

/// (method, Accept, Mcp-Session-Id, expected status)
const CASES: [(&str, &str, Option<&str>, u16); 5] = [
    ("GET", "text/event-stream", None, 400),
    ("GET", "text/event-stream", Some("no-such-session"), 404),
    ("GET", "application/json", Some("no-such-session"), 406),
    ("DELETE", "application/json", None, 400),
    ("DELETE", "application/json", Some("no-such-session"), 404),
];

fn request(
    method: &'static str,
    accept: &str,
    session: Option<&str>,
    version: Option<Revision>,
) -> RawRequest<'static> {
    let mut request = RawRequest::new(method, "/mcp").header("Accept", accept);
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    if let Some(version) = version {
        request = request.header("MCP-Protocol-Version", version.as_str());
    }
    request
}

#[tokio::test]
async fn get_and_delete_refusals_fit_each_revisions_schema() {
    // A server of one revision, the request naming none (2025-03-26 clients send no
    // MCP-Protocol-Version header).
    for revision in WITH_SESSIONS {
        let running = Running::start(
            server(mcp_adapters::AdapterSet::only(revision)),
            HttpConfig::new(),
        )
        .await;
        for (method, accept, session, status) in CASES {
            let response = request(method, accept, session, None)
                .send(running.addr)
                .await;
            assert_eq!(response.status, status, "{revision} {method} {session:?}");
            crate::support::check_bodiless_refusal(&response, revision);
        }
        running.stop().await;
    }
    // A server of every revision, the request naming its revision.
    let running = Running::start(server(mcp_adapters::AdapterSet::all()), HttpConfig::new()).await;
    for revision in [Revision::V2025_06_18, Revision::V2025_11_25] {
        for (method, accept, session, status) in CASES {
            let response = request(method, accept, session, Some(revision))
                .send(running.addr)
                .await;
            assert_eq!(response.status, status, "{revision} {method} {session:?}");
            let code = crate::support::check_bodiless_refusal(&response, revision);
            if revision >= Revision::V2025_11_25 {
                assert!(code.is_some(), "{revision} {method}: {response:?}");
            }
        }
    }
    running.stop().await;
}

#[tokio::test]
async fn get_and_delete_without_a_token_are_401_in_each_revisions_shape() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let tokens = StaticTokens::new().token(
        "reader",
        Claims {
            iss: Some("https://auth.example.test".into()),
            sub: Some("alice".into()),
            aud: Some(Audience::One(resource.clone())),
            exp: Some(i64::MAX / 2),
            scope: ScopeSet::parse("mcp:read"),
            ..Claims::default()
        },
    );
    let auth = ResourceServer::builder(resource, "https://auth.example.test")
        .required_scopes(["mcp:read"])
        .verifier(tokens)
        .build()
        .unwrap();
    let running = Running::start_listener(
        listener,
        server(mcp_adapters::AdapterSet::all()),
        HttpConfig::new().auth(auth),
    )
    .await;
    for revision in WITH_SESSIONS {
        // 2025-03-26 clients name no revision; it is the one assumed then.
        let version = (revision >= Revision::V2025_06_18).then_some(revision);
        for method in ["GET", "DELETE"] {
            let response = request(method, "text/event-stream", Some("any"), version)
                .send(running.addr)
                .await;
            assert_eq!(response.status, 401, "{revision} {method}");
            assert!(response.header("www-authenticate").is_some());
            crate::support::check_bodiless_refusal(&response, revision);
        }
    }
    running.stop().await;
}
