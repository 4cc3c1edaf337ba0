//! `mcp-demo --auth` as several workers behind one name (issue 47): two processes on one Redis
//! with the same `--public-url` issue and accept the same tokens, because the issuer, resource
//! and metadata URLs come from the public URL and the signing key and clients live in the hub.
//! Without `--public-url` each worker's issuer is its own bound address, and a token from one
//! is refused by the other: the control that shows the flag is what makes it work.
#![cfg(feature = "redis")]

use serde_json::{Value, json};

use crate::demo_process::DemoProcess;
use crate::raw_http::{RawRequest, RawResponse};

const PUBLIC: &str = "http://localhost:8080";

/// An `mcp-demo --auth` worker on 127.0.0.1:0; killed when dropped.
struct Worker(DemoProcess);

impl Worker {
    async fn start(redis: &str, clients: &str, public: Option<&str>) -> Self {
        let mut args = vec![
            "--addr",
            "127.0.0.1:0",
            "--hub",
            redis,
            "--auth",
            "--auth-client-file",
            clients,
        ];
        if let Some(public) = public {
            args.extend(["--public-url", public]);
        }
        Self(DemoProcess::start(&args, &["MCP_DEMO_PUBLIC_URL"]).await)
    }

    /// A `client_credentials` token for `resource` from this worker's token endpoint.
    async fn token(&self, resource: &str) -> String {
        let form = format!(
            "grant_type=client_credentials&client_id=svc&client_secret=s3cret&scope=mcp%3Aread&resource={}",
            resource.replace(':', "%3A").replace('/', "%2F")
        );
        let response = RawRequest::new("POST", "/token")
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form)
            .send(self.0.addr)
            .await;
        assert_eq!(
            response.status,
            200,
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        response.json()["access_token"]
            .as_str()
            .expect("an access token")
            .to_owned()
    }

    /// `initialize` (2025-06-18) on this worker's `/mcp` with `token`.
    async fn initialize(&self, token: &str) -> RawResponse {
        RawRequest::new("POST", "/mcp")
            .header("Accept", "application/json, text/event-stream")
            .header("Authorization", &format!("Bearer {token}"))
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "auth-workers", "version": "1"}}}),
            )
            .send(self.0.addr)
            .await
    }
}

fn redis() -> String {
    std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// The clients file both workers read: one confidential client.
fn clients_file(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("{name}-{}.txt", std::process::id()));
    std::fs::write(&path, "svc:s3cret=http://127.0.0.1/cb\n").unwrap();
    path
}

fn initialized(response: &RawResponse) -> bool {
    let text = String::from_utf8_lossy(&response.body);
    let message: Option<Value> = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .map_or_else(
            || serde_json::from_str(&text).ok(),
            |data| serde_json::from_str(data.trim()).ok(),
        );
    response.status == 200
        && message.is_some_and(|m| m["result"]["protocolVersion"] == "2025-06-18")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_from_one_worker_works_on_another_with_a_public_url() {
    let clients = clients_file("auth-workers");
    let clients_arg = clients.display().to_string();
    let a = Worker::start(&redis(), &clients_arg, Some(PUBLIC)).await;
    let b = Worker::start(&redis(), &clients_arg, Some(PUBLIC)).await;

    // Both describe the same resource and authorization server: the public one.
    let metadata = RawRequest::new("GET", "/.well-known/oauth-protected-resource/mcp")
        .send(b.0.addr)
        .await;
    assert_eq!(metadata.status, 200);
    let metadata = metadata.json();
    assert_eq!(metadata["resource"], format!("{PUBLIC}/mcp"), "{metadata}");
    assert_eq!(
        metadata["authorization_servers"],
        json!([PUBLIC]),
        "{metadata}"
    );
    let issuer = RawRequest::new("GET", "/.well-known/oauth-authorization-server")
        .send(a.0.addr)
        .await
        .json();
    assert_eq!(issuer["issuer"], PUBLIC, "{issuer}");
    let challenge = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send(b.0.addr)
        .await;
    assert_eq!(challenge.status, 401);
    let www = challenge.header("www-authenticate").unwrap_or_default();
    assert!(
        www.contains(&format!(
            "resource_metadata=\"{PUBLIC}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{www}"
    );

    // A token from A is accepted by B, and one from B by A.
    let from_a = a.token(&format!("{PUBLIC}/mcp")).await;
    let on_b = b.initialize(&from_a).await;
    assert!(initialized(&on_b), "{on_b:?}");
    let from_b = b.token(&format!("{PUBLIC}/mcp")).await;
    let on_a = a.initialize(&from_b).await;
    assert!(initialized(&on_a), "{on_a:?}");
    let _ = std::fs::remove_file(&clients);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_public_url_each_worker_is_its_own_issuer() {
    let clients = clients_file("auth-workers-control");
    let clients_arg = clients.display().to_string();
    let a = Worker::start(&redis(), &clients_arg, None).await;
    let b = Worker::start(&redis(), &clients_arg, None).await;
    let from_a = a.token(&format!("http://{}/mcp", a.0.addr)).await;
    // Valid where it was issued...
    assert!(initialized(&a.initialize(&from_a).await));
    // ...and refused by the other worker, whose issuer and resource differ.
    let on_b = b.initialize(&from_a).await;
    assert_eq!(on_b.status, 401, "{on_b:?}");
    let _ = std::fs::remove_file(&clients);
}
