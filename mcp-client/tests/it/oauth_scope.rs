//! Scopes and redirect URIs of the OAuth client (issue 44, "what a new user hit"): a script
//! with client credentials steps up to the scope a `403 insufficient_scope` names, without a
//! user; `OAuthConfig::scope` asks for more up front (and a kept token without it is not
//! used); an interactive step-up tells the redirect handler why; the redirect URI a handler
//! prepares (an ephemeral loopback port) is the one registered and sent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcp_client::Client;
use mcp_client::oauth::{
    FollowRedirect, Grant, MemoryTokenStore, OAuthConfig, OAuthError, PreRegistered,
    RedirectHandler, TokenStore,
};
use mcp_client::transport::BoxFuture;
use mcp_server::{NoArgs, Tool};

async fn deploy(_: NoArgs) -> String {
    "deployed".into()
}

/// A protected MCP server (`deploy` needs `mcp:deploy`) with the development authorization
/// server on the same address; `script`/`s3cret` is a pre-registered confidential client.
async fn protected_server() -> String {
    crate::oauth::protected_server_with(Tool::new("deploy", deploy)).await
}

/// Follows the redirect; records the logins, the step-up reasons, and the redirect URIs.
#[derive(Debug, Clone, Default)]
struct Recorded {
    follow: FollowRedirect,
    logins: Arc<AtomicUsize>,
    step_ups: Arc<Mutex<Vec<(String, String)>>>,
    /// When set, `prepare` answers this redirect URI.
    prepared: Option<String>,
    redirect_uris: Arc<Mutex<Vec<String>>>,
}

impl RedirectHandler for Recorded {
    fn prepare<'a>(&'a self, redirect_uri: &'a str) -> BoxFuture<'a, Result<String, OAuthError>> {
        let uri = self
            .prepared
            .clone()
            .unwrap_or_else(|| redirect_uri.to_owned());
        Box::pin(async move { Ok(uri) })
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        self.logins.fetch_add(1, Ordering::SeqCst);
        let sent = url::Url::parse(authorization_url)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "redirect_uri")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        assert_eq!(sent, redirect_uri, "the handler is told the URI sent");
        self.redirect_uris.lock().unwrap().push(sent);
        self.follow.authorize(authorization_url, redirect_uri)
    }

    fn step_up(&self, held: &str, needed: &str) {
        self.step_ups
            .lock()
            .unwrap()
            .push((held.to_owned(), needed.to_owned()));
    }
}

async fn connect(url: &str, config: OAuthConfig) -> Client {
    Client::builder()
        .oauth(config)
        .connect_http(url)
        .await
        .unwrap()
}

fn scopes_of(store: &MemoryTokenStore, url: &str) -> String {
    store.load_tokens(url).unwrap().unwrap().scope.unwrap()
}

#[tokio::test]
async fn client_credentials_step_up_to_the_scope_a_403_names() {
    let url = protected_server().await;
    let redirect = Recorded::default();
    let store = MemoryTokenStore::new();
    let client = connect(
        &url,
        OAuthConfig::new(redirect.clone())
            .grant(Grant::ClientCredentials)
            .client(PreRegistered::new("script", Some("s3cret".into())))
            .store(store.clone()),
    )
    .await;
    client
        .call_tool("add", serde_json::json!({}))
        .await
        .unwrap();
    assert!(!scopes_of(&store, &url).contains("mcp:deploy"));
    let deployed = client
        .call_tool("deploy", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(deployed["content"][0]["text"], "deployed");
    assert_eq!(
        redirect.logins.load(Ordering::SeqCst),
        0,
        "no user involved"
    );
    let scope = scopes_of(&store, &url);
    assert!(
        scope.contains("mcp:read") && scope.contains("mcp:deploy"),
        "{scope}"
    );
}

#[tokio::test]
async fn a_configured_scope_is_asked_for_and_a_kept_token_without_it_is_not_used() {
    let url = protected_server().await;
    let store = MemoryTokenStore::new();
    let first = Recorded::default();
    let client = connect(&url, OAuthConfig::new(first.clone()).store(store.clone())).await;
    client.list_tools().await.unwrap();
    assert!(!scopes_of(&store, &url).contains("mcp:deploy"));

    // A script that knows it deploys: `mcp login --scope mcp:deploy`.
    let second = Recorded::default();
    let client = connect(
        &url,
        OAuthConfig::new(second.clone())
            .store(store.clone())
            .scope("mcp:deploy"),
    )
    .await;
    client
        .call_tool("deploy", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(
        second.logins.load(Ordering::SeqCst),
        1,
        "one login, no step-up"
    );
    assert!(second.step_ups.lock().unwrap().is_empty());
    let scope = scopes_of(&store, &url);
    assert!(
        scope.contains("mcp:read") && scope.contains("mcp:deploy"),
        "{scope}"
    );

    // Its token has the scope now: a third client with the same wish uses it.
    let third = Recorded::default();
    let client = connect(
        &url,
        OAuthConfig::new(third.clone())
            .store(store.clone())
            .scope("mcp:deploy"),
    )
    .await;
    client
        .call_tool("deploy", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(third.logins.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_step_up_tells_the_handler_why() {
    let url = protected_server().await;
    let redirect = Recorded::default();
    let client = connect(&url, OAuthConfig::new(redirect.clone())).await;
    client
        .call_tool("add", serde_json::json!({}))
        .await
        .unwrap();
    client
        .call_tool("deploy", serde_json::json!({}))
        .await
        .unwrap();
    let step_ups = redirect.step_ups.lock().unwrap().clone();
    assert_eq!(step_ups.len(), 1, "{step_ups:?}");
    let (held, needed) = &step_ups[0];
    assert!(held.contains("mcp:read"), "{held}");
    assert_eq!(needed, "mcp:deploy");
}

#[tokio::test]
async fn the_prepared_redirect_uri_is_registered_and_sent() {
    let url = protected_server().await;
    let redirect = Recorded {
        prepared: Some("http://127.0.0.1:45678/prepared".into()),
        ..Recorded::default()
    };
    let client = connect(&url, OAuthConfig::new(redirect.clone())).await;
    client.list_tools().await.unwrap();
    assert_eq!(
        *redirect.redirect_uris.lock().unwrap(),
        ["http://127.0.0.1:45678/prepared"]
    );
}
