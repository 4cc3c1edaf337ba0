//! Authorization on both sides of the gateway, without token passthrough: downstream clients
//! authenticate to the gateway's endpoint with tokens for the gateway; the gateway
//! authenticates upstream with its own credentials. A downstream token is never what the
//! upstream sees.

use std::time::{SystemTime, UNIX_EPOCH};

use http::{HeaderName, HeaderValue};
use mcp_auth::{Audience, Claims, ScopeSet};
use mcp_client::{Client, Revision};
use mcp_gateway::Gateway;
use mcp_server::auth::{ResourceServer, StaticTokens};
use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown};
use mcp_server::{Exchange, Server, Tool};
use tokio::net::TcpListener;

const ISSUER: &str = "https://auth.example.test";

fn claims(resource: &str, subject: &str, scope: &str) -> Claims {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    Claims {
        iss: Some(ISSUER.into()),
        sub: Some(subject.into()),
        aud: Some(Audience::One(resource.into())),
        exp: Some(i64::try_from(now).expect("a time") + 3600),
        scope: ScopeSet::parse(scope),
        ..Claims::default()
    }
}

async fn deploy() -> String {
    "deployed".into()
}

/// Who the upstream says is calling.
async fn whoami(ex: Exchange) -> String {
    ex.principal().unwrap_or("anonymous").to_owned()
}

/// Binds a free port of 127.0.0.1; the listener and its `http://` origin.
async fn bind() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    (listener, base)
}

/// A resource server for `base/mcp` accepting only `tokens` (token, subject, scopes).
fn protection(base: &str, tokens: &[(&str, &str, &str)]) -> HttpConfig {
    let resource = format!("{base}/mcp");
    let verifier = tokens
        .iter()
        .fold(StaticTokens::new(), |verifier, (token, subject, scope)| {
            verifier.token(*token, claims(&resource, subject, scope))
        });
    let auth = ResourceServer::builder(resource.clone(), ISSUER)
        .required_scopes(["mcp:read"])
        .verifier(verifier)
        .build()
        .expect("a resource server");
    HttpConfig::new().auth(auth)
}

fn bearer(token: &str) -> (HeaderName, HeaderValue) {
    (
        http::header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {token}")).expect("a header value"),
    )
}

async fn connect(url: &str, revision: Revision, token: Option<&str>) -> Result<Client, String> {
    let mut builder = Client::builder().revision(revision);
    if let Some(token) = token {
        let (name, value) = bearer(token);
        builder = builder.header(name, value);
    }
    builder
        .connect_http(url)
        .await
        .map_err(|e| format!("connect {url} on {revision}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_side_has_its_own_credentials_and_no_token_passes_through() {
    // The upstream accepts only the gateway's own token.
    let (listener, upstream) = bind().await;
    let server = Server::builder("upstream", "1.0")
        .tool(Tool::new("whoami", whoami))
        .tool(Tool::new("deploy", deploy))
        .build()
        .expect("the upstream builds");
    let endpoint = HttpEndpoint::new(
        server,
        protection(&upstream, &[("gateway-token", "gateway", "mcp:read")]),
    );
    tokio::spawn(serve_with_shutdown(
        listener,
        endpoint,
        std::future::pending::<()>(),
    ));
    let upstream_url = format!("{upstream}/mcp");
    assert!(
        connect(&upstream_url, Revision::V2025_11_25, Some("alice-token"))
            .await
            .is_err(),
        "the upstream refuses a token that is not the gateway's"
    );
    let client = connect(&upstream_url, Revision::V2025_11_25, Some("gateway-token"))
        .await
        .expect("the gateway reaches the upstream with its own token");
    let gateway = std::sync::Arc::new(
        Gateway::builder()
            .tool_scopes("deploy", ["mcp:deploy"])
            .start(client)
            .await
            .expect("the gateway starts"),
    );

    // The gateway accepts only tokens issued for it.
    let (listener, front) = bind().await;
    let config = protection(
        &front,
        &[
            ("alice-token", "alice", "mcp:read"),
            ("bob-token", "bob", "mcp:read mcp:deploy"),
        ],
    );
    let serving = gateway.clone();
    tokio::spawn(async move {
        serving
            .serve_http_with(listener, config, std::future::pending::<()>())
            .await
    });
    let front_url = format!("{front}/mcp");
    for revision in [Revision::V2026_07_28, Revision::V2025_06_18] {
        let anonymous = connect(&front_url, revision, None).await;
        assert!(anonymous.is_err(), "{revision}: served without a token");
        let wrong = connect(&front_url, revision, Some("gateway-token")).await;
        assert!(
            wrong.is_err(),
            "{revision}: served with the upstream's token"
        );
        let alice = connect(&front_url, revision, Some("alice-token"))
            .await
            .expect("alice reaches the gateway");
        let called = alice
            .call_tool("whoami", serde_json::json!({}))
            .await
            .expect("whoami through the gateway");
        // The upstream saw the gateway's credentials (its principal is the issuer and the
        // subject), not alice's token.
        assert_eq!(
            called["content"][0]["text"],
            format!("{ISSUER}\u{0}gateway"),
            "{revision}: {called}"
        );
        // A proxied tool with scopes of its own: alice's token lacks them, bob's has them.
        let refused = alice.call_tool("deploy", serde_json::json!({})).await;
        let refused = refused.expect_err("deploy without mcp:deploy");
        assert_eq!(refused.http_status(), Some(403), "{revision}: {refused}");
        let _ = alice.close().await;
        let bob = connect(&front_url, revision, Some("bob-token"))
            .await
            .expect("bob reaches the gateway");
        let deployed = bob
            .call_tool("deploy", serde_json::json!({}))
            .await
            .expect("deploy with mcp:deploy");
        assert_eq!(deployed["content"][0]["text"], "deployed", "{revision}");
        let _ = bob.close().await;
    }
}
