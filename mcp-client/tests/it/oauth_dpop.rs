//! DPoP end to end (RFC 9449, review finding 5): our OAuth client against our resource server
//! and the development authorization server on one address, over real sockets on 127.0.0.1.
//! The authorization server binds the tokens to the client's key when the token request
//! carries a proof; the resource server accepts them only with a fresh proof per request
//! (Streamable HTTP and HTTP+SSE), asks for nonces when configured, and a refresh needs the
//! same key.

use std::time::Duration;

use mcp_client::Client;
use mcp_client::oauth::{FollowRedirect, MemoryTokenStore, OAuthConfig, TokenStore};
use mcp_dev_auth::DevAuthorizationServer;
use mcp_server::auth::{JwtVerifier, ResourceServer};
use mcp_server::http::{HttpConfig, HttpEndpoint};
use mcp_server::{NoArgs, Server, Tool};

async fn add(_: NoArgs) -> String {
    "added".into()
}

/// A protected MCP server at `<issuer>/mcp` (and HTTP+SSE at `<issuer>/sse`) with the
/// development authorization server on the same address; `configure` sets the resource
/// server's DPoP options.
async fn protected_server(
    configure: impl FnOnce(
        mcp_server::auth::ResourceServerBuilder,
    ) -> mcp_server::auth::ResourceServerBuilder,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let dev = DevAuthorizationServer::builder(&issuer)
        .scopes(["mcp:read"])
        .auto_approve(true)
        .build();
    let auth = configure(
        ResourceServer::builder(format!("{issuer}/mcp"), &issuer)
            .scopes_supported(["mcp:read"])
            .required_scopes(["mcp:read"])
            .verifier(JwtVerifier::fetch(dev.jwks_uri())),
    )
    .build()
    .unwrap();
    let server = Server::builder("protected", "1")
        .tool(Tool::new("add", add))
        .build()
        .unwrap();
    let config = HttpConfig::new().auth(auth).routes(dev);
    let endpoint = HttpEndpoint::new(server, config);
    tokio::spawn(mcp_server::http::serve_with_shutdown(
        listener,
        endpoint,
        std::future::pending::<()>(),
    ));
    issuer
}

/// Calls `add` `times` times: each call carries a fresh proof (a reused one would be refused).
async fn calls(client: &Client, times: usize) {
    for _ in 0..times {
        let result = client
            .call_tool("add", serde_json::json!({}))
            .await
            .unwrap();
        assert_eq!(result["content"][0]["text"], "added");
    }
}

#[tokio::test]
async fn a_client_asking_for_dpop_gets_a_bound_token_and_uses_it() {
    let issuer = protected_server(|b| b).await;
    let url = format!("{issuer}/mcp");
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .oauth(
            OAuthConfig::new(FollowRedirect::default())
                .store(store.clone())
                .dpop(true),
        )
        .connect_http(&url)
        .await
        .unwrap();
    calls(&client, 3).await;
    let tokens = store.load_tokens(&url).unwrap().unwrap();
    assert_eq!(tokens.token_type.as_deref(), Some("DPoP"));
    // The token is bound: as a bearer token, the server refuses it.
    let response = reqwest_like_post(&url, &format!("Bearer {}", tokens.access_token)).await;
    assert!(response.starts_with("HTTP/1.1 401"), "{response}");
    assert!(
        response
            .to_ascii_lowercase()
            .contains("www-authenticate: dpop"),
        "{response}"
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_server_requiring_dpop_gets_it_from_a_default_client() {
    let issuer = protected_server(|b| b.require_dpop(true)).await;
    let url = format!("{issuer}/mcp");
    let store = MemoryTokenStore::new();
    let client = Client::builder()
        .oauth(OAuthConfig::new(FollowRedirect::default()).store(store.clone()))
        .connect_http(&url)
        .await
        .unwrap();
    calls(&client, 2).await;
    let tokens = store.load_tokens(&url).unwrap().unwrap();
    assert_eq!(tokens.token_type.as_deref(), Some("DPoP"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn server_nonces_are_followed_by_the_client() {
    let issuer = protected_server(|b| {
        b.dpop_nonces(
            b"thirty-two bytes of test secret!",
            Duration::from_secs(300),
        )
    })
    .await;
    let url = format!("{issuer}/mcp");
    let client = Client::builder()
        .oauth(OAuthConfig::new(FollowRedirect::default()).dpop(true))
        .connect_http(&url)
        .await
        .unwrap();
    calls(&client, 3).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_bound_token_is_refreshed_with_the_same_key() {
    let issuer = protected_server(|b| b).await;
    let url = format!("{issuer}/mcp");
    let store = MemoryTokenStore::new();
    // Tokens live an hour: refreshing two hours ahead refreshes before every request, with
    // the server's and the proofs' clocks left alone.
    let client = Client::builder()
        .oauth(
            OAuthConfig::new(FollowRedirect::default())
                .store(store.clone())
                .refresh_before(Duration::from_secs(2 * 3600))
                .dpop(true),
        )
        .connect_http(&url)
        .await
        .unwrap();
    let first = store.load_tokens(&url).unwrap().unwrap();
    calls(&client, 2).await;
    let later = store.load_tokens(&url).unwrap().unwrap();
    assert_ne!(first.access_token, later.access_token, "refreshed");
    assert_ne!(first.refresh_token, later.refresh_token, "rotated");
    assert_eq!(later.token_type.as_deref(), Some("DPoP"));
    client.close().await.unwrap();
}

#[tokio::test]
async fn http_sse_carries_a_proof_for_each_of_its_requests() {
    let issuer = protected_server(|b| b).await;
    let client = Client::builder()
        .oauth(OAuthConfig::new(FollowRedirect::default()).dpop(true))
        .connect_sse(&format!("{issuer}/sse"))
        .await
        .unwrap();
    calls(&client, 2).await;
    client.close().await.unwrap();
}

/// A raw `POST` of an initialize request with `authorization`: the response head and body.
async fn reqwest_like_post(url: &str, authorization: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let url = url::Url::parse(url).unwrap();
    let addr = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {authorization}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        url.path(),
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    String::from_utf8_lossy(&response).into_owned()
}
