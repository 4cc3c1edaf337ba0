//! The whole OAuth 2.1 flow against our resource server and the development authorization
//! server on one address, over real sockets: discovery from a 401, dynamic registration,
//! PKCE, tokens as JWTs verified through the fetched key set, step-up, refresh rotation with
//! reuse detection, `client_credentials`, a token for another resource refused, and a second
//! worker sharing the authorization server's state.

use crate::raw_http;

use std::sync::Arc;

use mcp_auth::{
    AuthorizationServerMetadata, BearerChallenge, Challenge, PkceVerifier,
    ProtectedResourceMetadata, authorization_server_metadata_urls,
};
use mcp_dev_auth::{DevAuthorizationServer, DevClient};
use mcp_hub::{Hub, HubConfig, MemoryHub, RedisConfig, RedisHub};
use mcp_server::auth::{JwtVerifier, ResourceServer};
use mcp_server::http::HttpConfig;
use mcp_server::{NoArgs, Server, Tool};
use raw_http::{RawRequest, RawResponse, Running};
use serde_json::{Value, json};

const REDIRECT: &str = "http://127.0.0.1:9/callback";

async fn add(_: NoArgs) -> String {
    "added".into()
}

async fn publish(_: NoArgs) -> String {
    "published".into()
}

struct Setup {
    server: Running,
    hub: Arc<dyn Hub>,
    issuer: String,
    resource: String,
}

async fn setup() -> Setup {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    setup_on(
        listener,
        Arc::new(MemoryHub::new(HubConfig::default())),
        issuer,
    )
    .await
}

/// A worker on `listener` whose resource and authorization server live at `issuer` (its own
/// address, or another worker's behind the same name), keeping everything in `hub`.
async fn setup_on(listener: tokio::net::TcpListener, hub: Arc<dyn Hub>, issuer: String) -> Setup {
    let resource = format!("{issuer}/mcp");
    let dev = DevAuthorizationServer::builder(&issuer)
        .store(hub.clone())
        .scopes(["mcp:read", "mcp:deploy"])
        .auto_approve(true)
        .client(DevClient {
            client_id: "script".into(),
            client_secret: Some("s3cret".into()),
            redirect_uris: Vec::new(),
        })
        .build();
    let auth = ResourceServer::builder(&resource, &issuer)
        .scopes_supported(["mcp:read", "mcp:deploy"])
        .required_scopes(["mcp:read"])
        .verifier(JwtVerifier::fetch(dev.jwks_uri()))
        .build()
        .unwrap();
    let server = Server::builder("protected", "1")
        .state_store(hub.clone())
        .event_log(hub.clone())
        .tool(Tool::new("add", add))
        .tool(Tool::new("publish", publish).scopes(["mcp:deploy"]))
        .build()
        .unwrap();
    let config = HttpConfig::new()
        .session_cache(std::time::Duration::ZERO)
        .auth(auth)
        .routes(dev);
    Setup {
        server: Running::start_listener(listener, server, config).await,
        hub,
        issuer,
        resource,
    }
}

fn path_of(url: &str) -> String {
    let url = url::Url::parse(url).unwrap();
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

async fn get(setup: &Setup, url: &str) -> RawResponse {
    RawRequest::new("GET", &path_of(url))
        .send(setup.server.addr)
        .await
}

fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
        .into_bytes()
}

async fn token_request(setup: &Setup, pairs: &[(&str, &str)], basic: Option<&str>) -> RawResponse {
    let mut request = RawRequest::new("POST", "/token")
        .header("Content-Type", "application/x-www-form-urlencoded");
    if let Some(basic) = basic {
        request = request.header("Authorization", &format!("Basic {basic}"));
    }
    request.body(form(pairs)).send(setup.server.addr).await
}

/// Authorization code + PKCE for `scope`: the tokens.
async fn authorize(setup: &Setup, client_id: &str, scope: &str, resource: &str) -> Value {
    let verifier = PkceVerifier::generate().unwrap();
    let challenge = verifier.challenge();
    let query = form(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
        ("state", "st4te"),
        ("scope", scope),
        ("resource", resource),
    ]);
    let query = String::from_utf8(query).unwrap();
    let redirected = RawRequest::new("GET", &format!("/authorize?{query}"))
        .send(setup.server.addr)
        .await;
    assert_eq!(redirected.status, 302, "{redirected:?}");
    let location = url::Url::parse(redirected.header("location").unwrap()).unwrap();
    let params: Vec<(String, String)> = location.query_pairs().into_owned().collect();
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    assert_eq!(param("state"), "st4te");
    assert_eq!(
        param("iss"),
        setup.issuer,
        "RFC 9207: the issuer in the response"
    );
    let code = param("code");
    let exchange = |verifier: String| {
        let code = code.clone();
        async move {
            token_request(
                setup,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", REDIRECT),
                    ("code_verifier", &verifier),
                    ("client_id", client_id),
                    ("resource", resource),
                ],
                None,
            )
            .await
        }
    };
    let tokens = exchange(verifier.as_str().to_owned()).await;
    assert_eq!(tokens.status, 200, "{tokens:?}");
    assert_eq!(tokens.header("cache-control"), Some("no-store"));
    // A code is used once; a second use also revokes what it produced (tests/it/auth_dev.rs).
    tokens.json()
}

async fn call(setup: &Setup, token: &str, tool: &str) -> RawResponse {
    RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("Authorization", &format!("Bearer {token}"))
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", tool)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": tool, "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send(setup.server.addr)
        .await
}

#[tokio::test]
async fn discovery_registration_pkce_step_up_and_refresh_rotation() {
    let setup = setup().await;
    // Discovery starts from the 401.
    let refused = call(&setup, "no-token", "add").await;
    assert_eq!(refused.status, 401);
    let challenge = BearerChallenge::find(
        &Challenge::parse_all(refused.header("www-authenticate").unwrap()).unwrap(),
    )
    .unwrap();
    let prm: ProtectedResourceMetadata = serde_json::from_value(
        get(&setup, challenge.resource_metadata.as_deref().unwrap())
            .await
            .json(),
    )
    .unwrap();
    prm.check_resource(&setup.resource).unwrap();
    let issuer = &prm.authorization_servers[0];
    assert_eq!(issuer, &setup.issuer);
    let url = &authorization_server_metadata_urls(issuer).unwrap()[0];
    let metadata: AuthorizationServerMetadata =
        serde_json::from_value(get(&setup, url).await.json()).unwrap();
    metadata.check_issuer(issuer).unwrap();
    assert!(metadata.supports_s256());
    assert_eq!(metadata.client_id_metadata_document_supported, Some(true));
    // Dynamic registration of a public client.
    let registered = RawRequest::new("POST", "/register")
        .json(
            &json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
            "application_type": "native", "client_name": "test"}),
        )
        .send(setup.server.addr)
        .await;
    assert_eq!(registered.status, 201, "{registered:?}");
    let client_id = registered.json()["client_id"].as_str().unwrap().to_owned();
    // Authorization code + PKCE, then a call.
    let tokens = authorize(&setup, &client_id, "mcp:read", &setup.resource).await;
    let access = tokens["access_token"].as_str().unwrap();
    let added = call(&setup, access, "add").await;
    assert_eq!(added.status, 200, "{added:?}");
    // Step-up: 403 names the scope, a new authorization for the union gets through.
    let forbidden = call(&setup, access, "publish").await;
    assert_eq!(forbidden.status, 403);
    let challenge = BearerChallenge::find(
        &Challenge::parse_all(forbidden.header("www-authenticate").unwrap()).unwrap(),
    )
    .unwrap();
    let wider = mcp_auth::step_up(
        &mcp_auth::ScopeSet::parse("mcp:read"),
        &mcp_auth::ScopeSet::parse(challenge.scope.as_deref().unwrap()),
    );
    let stepped = authorize(&setup, &client_id, &wider.to_string(), &setup.resource).await;
    let published = call(&setup, stepped["access_token"].as_str().unwrap(), "publish").await;
    assert_eq!(published.status, 200, "{published:?}");
    // Refresh rotation: the new refresh token works, the spent one revokes the family.
    let first = tokens["refresh_token"].as_str().unwrap().to_owned();
    let refresh = |token: String| {
        let client_id = client_id.clone();
        let setup = &setup;
        async move {
            token_request(
                setup,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", &token),
                    ("client_id", &client_id),
                    ("resource", &setup.resource),
                ],
                None,
            )
            .await
        }
    };
    let rotated = refresh(first.clone()).await;
    assert_eq!(rotated.status, 200, "{rotated:?}");
    let second = rotated.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    let fresh_access = rotated.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(call(&setup, &fresh_access, "add").await.status, 200);
    let reused = refresh(first).await;
    assert_eq!(reused.json()["error"], "invalid_grant");
    let after_reuse = refresh(second).await;
    assert_eq!(
        after_reuse.json()["error"],
        "invalid_grant",
        "the family is revoked after a reuse"
    );
}

#[tokio::test]
async fn client_credentials_other_audiences_and_a_second_worker() {
    let setup = setup().await;
    let basic = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "script:s3cret");
    let granted = token_request(
        &setup,
        &[
            ("grant_type", "client_credentials"),
            ("scope", "mcp:read"),
            ("resource", &setup.resource),
        ],
        Some(&basic),
    )
    .await;
    assert_eq!(granted.status, 200, "{granted:?}");
    let token = granted.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(call(&setup, &token, "add").await.status, 200);
    // A wrong secret, and a token for another resource.
    let wrong = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "script:nope");
    let denied = token_request(
        &setup,
        &[("grant_type", "client_credentials")],
        Some(&wrong),
    )
    .await;
    assert_eq!(denied.status, 401);
    assert_eq!(denied.json()["error"], "invalid_client");
    let elsewhere = token_request(
        &setup,
        &[
            ("grant_type", "client_credentials"),
            ("scope", "mcp:read"),
            ("resource", "http://127.0.0.1:1/other"),
        ],
        Some(&basic),
    )
    .await;
    let foreign = elsewhere.json()["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = call(&setup, &foreign, "add").await;
    assert_eq!(refused.status, 401);
    // A second worker on the same hub serves the same authorization server: same key,
    // same clients, same refresh tokens.
    let second = DevAuthorizationServer::builder(&setup.issuer)
        .store(setup.hub.clone())
        .build();
    let jwks_uri: http::Uri = "/jwks".parse().unwrap();
    let theirs = second
        .handle(
            &http::Method::GET,
            &jwks_uri,
            &http::HeaderMap::new(),
            bytes::Bytes::new(),
        )
        .await
        .unwrap();
    let ours = get(&setup, &format!("{}/jwks", setup.issuer)).await;
    assert_eq!(
        serde_json::from_slice::<Value>(theirs.body()).unwrap(),
        ours.json()
    );
    // An authorization server told which resources it fronts mints no token for another
    // (RFC 8707 `invalid_target`), at the token endpoint and the authorization endpoint.
    let strict = DevAuthorizationServer::builder(&setup.issuer)
        .store(setup.hub.clone())
        .resources([setup.resource.clone()])
        .client(DevClient {
            client_id: "script".into(),
            client_secret: Some("s3cret".into()),
            redirect_uris: Vec::new(),
        })
        .client(DevClient {
            client_id: "app".into(),
            client_secret: None,
            redirect_uris: vec!["http://127.0.0.1:1/cb".into()],
        })
        .build();
    let token_uri: http::Uri = "/token".parse().unwrap();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        format!("Basic {basic}").parse().unwrap(),
    );
    headers.insert(
        http::header::CONTENT_TYPE,
        "application/x-www-form-urlencoded".parse().unwrap(),
    );
    for (resource, status) in [
        ("http://127.0.0.1:1/other", 400),
        (setup.resource.as_str(), 200),
    ] {
        let body = format!(
            "grant_type=client_credentials&scope=mcp%3Aread&resource={}",
            url_encode(resource)
        );
        let response = strict
            .handle(&http::Method::POST, &token_uri, &headers, body.into())
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{resource}");
        if status == 400 {
            let error: Value = serde_json::from_slice(response.body()).unwrap();
            assert_eq!(error["error"], "invalid_target");
        }
    }
    let authorize: http::Uri = format!(
        "/authorize?response_type=code&client_id=app&redirect_uri={}&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&resource={}",
        url_encode("http://127.0.0.1:1/cb"),
        url_encode("http://127.0.0.1:1/other")
    )
    .parse()
    .unwrap();
    let response = strict
        .handle(
            &http::Method::GET,
            &authorize,
            &http::HeaderMap::new(),
            bytes::Bytes::new(),
        )
        .await
        .unwrap();
    let location = response.headers()[http::header::LOCATION].to_str().unwrap();
    assert!(
        location.starts_with("http://127.0.0.1:1/cb?") && location.contains("error=invalid_target"),
        "{location}"
    );
}

fn url_encode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// Two workers on one Redis (one key prefix), both named by the first one's address as a load
/// balancer would: a token obtained through A works on B, a refresh token issued by A rotates
/// on B and its reuse on A revokes the family, and a session made through A belongs on B to
/// its principal only.
#[tokio::test]
async fn two_workers_on_redis_share_the_authorization_server_and_the_sessions() {
    let url = std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = format!(
        "mcp-auth-test:{}:{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let connect = || RedisHub::connect(&url, RedisConfig::new().key_prefix(prefix.clone()));
    let (hub_a, hub_b) = match (connect().await, connect().await) {
        (Ok(a), Ok(b)) => (Arc::new(a), Arc::new(b)),
        (Err(err), _) | (_, Err(err)) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "Redis at {url} is unreachable with CI=true: {err}"
            );
            eprintln!("notice: Redis at {url} is unreachable ({err}); skipping");
            return;
        }
    };
    let listener_a = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener_a.local_addr().unwrap());
    let a = setup_on(listener_a, hub_a, issuer.clone()).await;
    let listener_b = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let b = setup_on(listener_b, hub_b, issuer).await;
    let registered = RawRequest::new("POST", "/register")
        .json(&json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}))
        .send(a.server.addr)
        .await;
    let client_id = registered.json()["client_id"].as_str().unwrap().to_owned();
    let tokens = authorize(&a, &client_id, "mcp:read", &a.resource).await;
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(call(&b, access, "add").await.status, 200, "A's token on B");
    // A session made through A, used through B by its principal; another principal's token
    // (a client_credentials one: another subject) finds no such session.
    let init = |token: &str| {
        RawRequest::new("POST", "/mcp")
            .header("Accept", "application/json, text/event-stream")
            .header("Authorization", &format!("Bearer {token}"))
            .json(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}),
            )
    };
    let opened = init(access).send(a.server.addr).await;
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let list = |token: &str| {
        RawRequest::new("POST", "/mcp")
            .header("Accept", "application/json, text/event-stream")
            .header("Authorization", &format!("Bearer {token}"))
            .header("MCP-Protocol-Version", "2025-11-25")
            .header("Mcp-Session-Id", &session)
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
    };
    assert_eq!(list(access).send(b.server.addr).await.status, 200);
    let basic = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "script:s3cret");
    let other = token_request(
        &b,
        &[
            ("grant_type", "client_credentials"),
            ("scope", "mcp:read"),
            ("resource", &b.resource),
        ],
        Some(&basic),
    )
    .await;
    let other = other.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(list(&other).send(b.server.addr).await.status, 404);
    // Rotation on B of A's refresh token; the spent one presented to A revokes the family.
    let first = tokens["refresh_token"].as_str().unwrap().to_owned();
    let refresh = |setup: &Setup, token: &str| {
        let pairs = [
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", token.to_owned()),
            ("client_id", client_id.clone()),
        ];
        let setup_addr = setup.server.addr;
        async move {
            let body = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())))
                .finish();
            RawRequest::new("POST", "/token")
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(body)
                .send(setup_addr)
                .await
        }
    };
    let rotated = refresh(&b, &first).await;
    assert_eq!(rotated.status, 200, "{rotated:?}");
    let second = rotated.json()["refresh_token"].as_str().unwrap().to_owned();
    // The refreshed access token is the same principal's: the session goes on.
    let renewed = rotated.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(list(&renewed).send(a.server.addr).await.status, 200);
    assert_eq!(refresh(&a, &first).await.json()["error"], "invalid_grant");
    assert_eq!(refresh(&a, &second).await.json()["error"], "invalid_grant");
}
