//! The OAuth client against our own protected server and its development authorization
//! server, over real sockets on 127.0.0.1: a full login, refresh at expiry (one for many
//! concurrent calls, never a rotated refresh token spent twice by clients sharing a file, after
//! a restart without a new login), and the `resource` of a refresh request. Time moves by a
//! manual clock, never by sleeping.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_client::Client;
use mcp_client::oauth::{
    ClientRegistration, Clock, FileTokenStore, FollowRedirect, Grant, ManualClock,
    MemoryTokenStore, OAuth, OAuthConfig, OAuthError, PreRegistered, RedirectHandler, StoreLock,
    TokenSet, TokenStore,
};
use mcp_client::transport::BoxFuture;
use mcp_dev_auth::{DevAuthorizationServer, DevClient};
use mcp_server::auth::{JwtVerifier, ResourceServer};
use mcp_server::http::{HttpConfig, HttpEndpoint};
use mcp_server::{NoArgs, Server, Tool};

async fn add(_: NoArgs) -> String {
    "added".into()
}

async fn publish(_: NoArgs) -> String {
    "published".into()
}

/// A protected MCP server at `<issuer>/mcp` whose authorization server is the development
/// one on the same address (auto-approving, access tokens for an hour).
async fn protected_server() -> String {
    protected_server_with(Tool::new("publish", publish)).await
}

/// [`protected_server`] with `scoped` (which needs `mcp:deploy`) beside `add`; `script`/`s3cret`
/// is a pre-registered confidential client.
pub(crate) async fn protected_server_with(scoped: Tool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let resource = format!("{issuer}/mcp");
    let dev = DevAuthorizationServer::builder(&issuer)
        .scopes(["mcp:read", "mcp:deploy"])
        .auto_approve(true)
        .client(DevClient {
            client_id: "script".into(),
            client_secret: Some("s3cret".into()),
            redirect_uris: Vec::new(),
        })
        .build();
    let auth = ResourceServer::builder(&resource, &issuer)
        .scopes_supported(["mcp:read"])
        .required_scopes(["mcp:read"])
        .verifier(JwtVerifier::fetch(dev.jwks_uri()))
        .build()
        .unwrap();
    let server = Server::builder("protected", "1")
        .tool(Tool::new("add", add))
        .tool(scoped.scopes(["mcp:deploy"]))
        .build()
        .unwrap();
    let config = HttpConfig::new().auth(auth).routes(dev);
    let endpoint = HttpEndpoint::new(server, config);
    tokio::spawn(mcp_server::http::serve_with_shutdown(
        listener,
        endpoint,
        std::future::pending::<()>(),
    ));
    resource
}

/// Follows the redirect and counts the logins.
#[derive(Debug, Clone, Default)]
struct Counted {
    follow: FollowRedirect,
    logins: Arc<AtomicUsize>,
}

impl RedirectHandler for Counted {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        self.logins.fetch_add(1, Ordering::SeqCst);
        self.follow.authorize(authorization_url, redirect_uri)
    }
}

/// A store that counts the token sets saved (one per login or refresh).
#[derive(Debug, Clone)]
struct Counting {
    inner: Arc<dyn TokenStore>,
    saves: Arc<AtomicUsize>,
}

impl Counting {
    fn new(inner: impl TokenStore) -> Self {
        Self {
            inner: Arc::new(inner),
            saves: Arc::default(),
        }
    }
}

impl TokenStore for Counting {
    fn load_tokens(&self, resource: &str) -> Result<Option<TokenSet>, OAuthError> {
        self.inner.load_tokens(resource)
    }
    fn save_tokens(&self, tokens: &TokenSet) -> Result<(), OAuthError> {
        self.saves.fetch_add(1, Ordering::SeqCst);
        self.inner.save_tokens(tokens)
    }
    fn remove_tokens(&self, resource: &str) -> Result<(), OAuthError> {
        self.inner.remove_tokens(resource)
    }
    fn load_client(&self, issuer: &str) -> Result<Option<ClientRegistration>, OAuthError> {
        self.inner.load_client(issuer)
    }
    fn save_client(&self, client: &ClientRegistration) -> Result<(), OAuthError> {
        self.inner.save_client(client)
    }
    fn lock(&self, resource: &str) -> BoxFuture<'_, Result<StoreLock, OAuthError>> {
        self.inner.lock(resource)
    }
}

fn temp_file(name: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir()
        .join(format!("mcp-oauth-{}-{nanos}", std::process::id()))
        .join(name)
}

async fn connect(url: &str, config: OAuthConfig) -> Client {
    Client::builder()
        .oauth(config)
        .connect_http(url)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_full_login_then_tools_list() {
    let url = protected_server().await;
    let redirect = Counted::default();
    let store = MemoryTokenStore::new();
    let client = connect(
        &url,
        OAuthConfig::new(redirect.clone()).store(store.clone()),
    )
    .await;
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools[0]["name"], "add");
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 1);
    let tokens = store.load_tokens(&url).unwrap().unwrap();
    assert_eq!(tokens.resource, url);
    assert!(tokens.scope.as_deref().unwrap().contains("mcp:read"));
    assert!(tokens.refresh_token.is_some());
    // Secrets stay out of logs.
    let debug = format!("{tokens:?} {client:?}");
    assert!(!debug.contains(&tokens.access_token), "{debug}");
    client.close().await.unwrap();
}

#[tokio::test]
async fn concurrent_calls_at_expiry_refresh_once() {
    let url = protected_server().await;
    let clock = ManualClock::new();
    let store = Counting::new(MemoryTokenStore::new());
    let redirect = Counted::default();
    let client = connect(
        &url,
        OAuthConfig::new(redirect.clone())
            .store(store.clone())
            .clock(clock.clone()),
    )
    .await;
    client
        .call_tool("add", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(store.saves.load(Ordering::SeqCst), 1, "the login");
    clock.advance(Duration::from_secs(2 * 3600));
    let calls = (0..8).map(|_| client.call_tool("add", serde_json::json!({})));
    for result in futures::future::join_all(calls).await {
        assert_eq!(result.unwrap()["content"][0]["text"], "added");
    }
    assert_eq!(
        store.saves.load(Ordering::SeqCst),
        2,
        "one refresh for eight calls"
    );
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 1, "no new login");
}

#[tokio::test]
async fn clients_sharing_a_file_store_never_reuse_a_rotated_refresh_token() {
    let url = protected_server().await;
    let path = temp_file("tokens.json");
    let clock = ManualClock::new();
    let redirect = Counted::default();
    let config = |store: FileTokenStore| {
        OAuthConfig::new(redirect.clone())
            .store(store)
            .clock(clock.clone())
    };
    let a = connect(&url, config(FileTokenStore::new(&path))).await;
    // The second client (another process, as far as the store knows) finds the tokens.
    let b = connect(&url, config(FileTokenStore::new(&path))).await;
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    for _ in 0..3 {
        clock.advance(Duration::from_secs(2 * 3600));
        // Both at once, then each alone: the dev server revokes the whole family when a
        // spent refresh token comes back, which would force a new login.
        let (x, y) = tokio::join!(
            a.call_tool("add", serde_json::json!({})),
            b.call_tool("add", serde_json::json!({}))
        );
        x.unwrap();
        y.unwrap();
        a.call_tool("add", serde_json::json!({})).await.unwrap();
        b.call_tool("add", serde_json::json!({})).await.unwrap();
    }
    assert_eq!(
        redirect.logins.load(Ordering::SeqCst),
        1,
        "never a new login"
    );
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn a_restarted_client_refreshes_a_stored_expired_token_without_a_login() {
    let url = protected_server().await;
    let path = temp_file("tokens.json");
    let clock = ManualClock::new();
    let redirect = Counted::default();
    let config = || {
        OAuthConfig::new(redirect.clone())
            .store(FileTokenStore::new(&path))
            .clock(clock.clone())
    };
    let first = connect(&url, config()).await;
    first.list_tools().await.unwrap();
    first.close().await.unwrap();
    drop(first);
    let before = FileTokenStore::new(&path)
        .load_tokens(&url)
        .unwrap()
        .unwrap();
    clock.advance(Duration::from_secs(2 * 3600));
    let second = connect(&url, config()).await;
    second.list_tools().await.unwrap();
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 1, "no new login");
    let after = FileTokenStore::new(&path)
        .load_tokens(&url)
        .unwrap()
        .unwrap();
    assert_ne!(before.refresh_token, after.refresh_token, "refreshed");
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn a_refresh_carries_the_resource() {
    // A token endpoint that records the forms it receives.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let token_endpoint = format!("http://{}/token", listener.local_addr().unwrap());
    let forms: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = forms.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let seen = seen.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: http::Request<hyper::body::Incoming>| {
                        let seen = seen.clone();
                        async move {
                            let body = request.into_body().collect().await.unwrap().to_bytes();
                            seen.lock()
                                .unwrap()
                                .push(String::from_utf8_lossy(&body).into_owned());
                            let answer = r#"{"access_token":"new","token_type":"Bearer","expires_in":3600,"refresh_token":"r2"}"#;
                            Ok::<_, Infallible>(
                                http::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(answer)))
                                    .unwrap(),
                            )
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let server = "https://mcp.example.com/mcp";
    let store = MemoryTokenStore::new();
    let clock = ManualClock::new();
    store
        .save_tokens(&TokenSet {
            access_token: "old".into(),
            refresh_token: Some("r1".into()),
            token_type: None,
            expires_at: Some(clock.now()),
            scope: Some("mcp:read".into()),
            server: server.into(),
            resource: "https://mcp.example.com/mcp".into(),
            issuer: "https://as.example.com".into(),
            token_endpoint,
            client: ClientRegistration {
                issuer: "https://as.example.com".into(),
                client_id: "app".into(),
                client_secret: None,
                token_endpoint_auth_method: "none".into(),
            },
        })
        .unwrap();
    let oauth = OAuth::new(
        OAuthConfig::new(FollowRedirect::new())
            .store(store.clone())
            .clock(clock),
        server,
    )
    .unwrap();
    assert_eq!(oauth.access_token().await.unwrap().as_deref(), Some("new"));
    let forms = forms.lock().unwrap().clone();
    assert_eq!(forms.len(), 1);
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(forms[0].as_bytes())
        .into_owned()
        .collect();
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("grant_type"), Some("refresh_token"));
    assert_eq!(get("refresh_token"), Some("r1"));
    assert_eq!(get("resource"), Some("https://mcp.example.com/mcp"));
    assert_eq!(get("client_id"), Some("app"));
    let saved = store.load_tokens(server).unwrap().unwrap();
    assert_eq!(saved.refresh_token.as_deref(), Some("r2"));
}

#[tokio::test]
async fn a_403_insufficient_scope_steps_up_with_the_union() {
    let url = protected_server().await;
    let redirect = Counted::default();
    let store = MemoryTokenStore::new();
    let client = connect(
        &url,
        OAuthConfig::new(redirect.clone()).store(store.clone()),
    )
    .await;
    client
        .call_tool("add", serde_json::json!({}))
        .await
        .unwrap();
    let published = client
        .call_tool("publish", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(published["content"][0]["text"], "published");
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 2, "one step-up");
    let scope = store.load_tokens(&url).unwrap().unwrap().scope.unwrap();
    assert!(
        scope.contains("mcp:read") && scope.contains("mcp:deploy"),
        "{scope}"
    );
    // The scopes held now cover every tool: no more authorization.
    client
        .call_tool("add", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_refused_refresh_token_falls_back_to_one_new_login() {
    let url = protected_server().await;
    let clock = ManualClock::new();
    let redirect = Counted::default();
    let store = MemoryTokenStore::new();
    let client = connect(
        &url,
        OAuthConfig::new(redirect.clone())
            .store(store.clone())
            .clock(clock.clone()),
    )
    .await;
    client.list_tools().await.unwrap();
    // The refresh token is revoked behind the client's back.
    let mut tokens = store.load_tokens(&url).unwrap().unwrap();
    tokens.refresh_token = Some("revoked".into());
    store.save_tokens(&tokens).unwrap();
    clock.advance(Duration::from_secs(2 * 3600));
    client
        .call_tool("add", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 2, "one new login");
}

#[tokio::test]
async fn client_credentials_with_a_pre_registered_secret() {
    let url = protected_server().await;
    let redirect = Counted::default();
    let clock = ManualClock::new();
    let store = Counting::new(MemoryTokenStore::new());
    let client = connect(
        &url,
        OAuthConfig::new(redirect.clone())
            .grant(Grant::ClientCredentials)
            .client(PreRegistered::new("script", Some("s3cret".into())))
            .store(store.clone())
            .clock(clock.clone()),
    )
    .await;
    client
        .call_tool("add", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(
        redirect.logins.load(Ordering::SeqCst),
        0,
        "no user involved"
    );
    assert_eq!(store.saves.load(Ordering::SeqCst), 1);
    // At expiry a new token is requested, without a challenge first.
    clock.advance(Duration::from_secs(2 * 3600));
    client
        .call_tool("add", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(store.saves.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn every_streamable_revision_logs_in() {
    let url = protected_server().await;
    let redirect = Counted::default();
    let store = MemoryTokenStore::new();
    let revisions = mcp_client::Revision::ALL
        .iter()
        .copied()
        .filter(|r| !mcp_adapters::Adapter::new(*r).features().http_sse);
    let mut tried = 0;
    for revision in revisions {
        let client = Client::builder()
            .revision(revision)
            .oauth(OAuthConfig::new(redirect.clone()).store(store.clone()))
            .connect_http(&url)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", revision.as_str()));
        assert_eq!(client.revision(), revision);
        let tools = client.list_tools().await.unwrap();
        assert!(
            tools.iter().any(|t| t["name"] == "add"),
            "{}",
            revision.as_str()
        );
        client.close().await.unwrap();
        tried += 1;
    }
    assert!(tried >= 4, "{tried} revisions");
    // The first login's tokens served every later client through the shared store.
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 1);
}

/// A redirect handler for a process with no user.
#[derive(Debug)]
struct NoUser;

impl RedirectHandler for NoUser {
    fn authorize<'a>(
        &'a self,
        _authorization_url: &'a str,
        _redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async { Err(OAuthError::LoginRequired("no terminal".into())) })
    }
}

#[tokio::test]
async fn without_a_user_the_servers_401_stands() {
    let url = protected_server().await;
    let error = Client::builder()
        .oauth(OAuthConfig::new(NoUser))
        .connect_http(&url)
        .await
        .unwrap_err();
    assert_eq!(error.http_status(), Some(401), "{error}");
}

#[tokio::test]
async fn credentials_for_another_authorization_server_are_not_used() {
    let url = protected_server().await;
    let store = MemoryTokenStore::new();
    let client = connect(
        &url,
        OAuthConfig::new(FollowRedirect::new())
            .client(
                PreRegistered::new("script", Some("s3cret".into()))
                    .for_issuer("https://elsewhere.example"),
            )
            .store(store.clone()),
    )
    .await;
    client.list_tools().await.unwrap();
    let tokens = store.load_tokens(&url).unwrap().unwrap();
    assert_ne!(tokens.client.client_id, "script", "registered instead");
    assert_eq!(tokens.client.issuer, tokens.issuer);
}

/// [`protected_server`] over TLS with a test certificate, protecting `/mcp` and `/sse`; the
/// resource server fetches the key set over HTTPS, trusting the test CA. Returns the base URL
/// and the CA.
async fn protected_server_over_https() -> (String, rustls::pki_types::CertificateDer<'static>) {
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let ca = certified.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let tls = mcp_server::http::Tls::from_der(vec![ca.clone()], key).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("https://{}", listener.local_addr().unwrap());
    let dev = DevAuthorizationServer::builder(&base)
        .scopes(["mcp:read", "mcp:deploy"])
        .resources([format!("{base}/mcp"), format!("{base}/sse")])
        .auto_approve(true)
        .build();
    let auth = ResourceServer::builder(format!("{base}/mcp"), &base)
        .scopes_supported(["mcp:read", "mcp:deploy"])
        .required_scopes(["mcp:read"])
        .verifier(JwtVerifier::fetch(dev.jwks_uri()).add_root_certificate(ca.clone()))
        .build()
        .unwrap();
    let server = Server::builder("protected", "1")
        .tool(Tool::new("add", add))
        .tool(Tool::new("publish", publish).scopes(["mcp:deploy"]))
        .build()
        .unwrap();
    let config = HttpConfig::new().auth(auth).routes(dev);
    let endpoint = HttpEndpoint::new(server, config);
    tokio::spawn(mcp_server::http::serve_tls_with_shutdown(
        listener,
        endpoint,
        tls,
        std::future::pending::<()>(),
    ));
    (base, ca)
}

/// Every revision against our server and its development authorization server over HTTPS:
/// Streamable HTTP on the 2025 era and 2026-07-28, HTTP+SSE on 2024-11-05 (the stream's `GET`
/// and the POSTs carry the token). Each logs in once per resource, lists the tools, calls a
/// tool, then steps up to `mcp:deploy` for `publish` on a 403 `insufficient_scope`.
#[tokio::test]
async fn every_revision_logs_in_over_https_and_steps_up() {
    let (base, ca) = protected_server_over_https().await;
    let https = mcp_client::transport::Https::new()
        .web_pki_roots(false)
        .add_ca_der(ca)
        .unwrap()
        .proxy(mcp_client::transport::Proxy::none());
    let redirect = Counted {
        follow: FollowRedirect::with_https(https.clone()),
        logins: Arc::default(),
    };
    let store = MemoryTokenStore::new();
    let mut tried = 0;
    for revision in mcp_client::Revision::ALL.iter().copied() {
        let sse = mcp_adapters::Adapter::new(revision).features().http_sse;
        let builder = Client::builder()
            .revision(revision)
            .remember_era(false)
            .https(https.clone())
            .oauth(OAuthConfig::new(redirect.clone()).store(store.clone()));
        let client = if sse {
            builder.connect_sse(&format!("{base}/sse")).await
        } else {
            builder.connect_http(&format!("{base}/mcp")).await
        }
        .unwrap_or_else(|e| panic!("{}: {e}", revision.as_str()));
        assert_eq!(client.revision(), revision);
        let tools = client.list_tools().await.unwrap();
        assert!(
            tools.iter().any(|t| t["name"] == "add"),
            "{}",
            revision.as_str()
        );
        let added = client
            .call_tool("add", serde_json::json!({}))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", revision.as_str()));
        assert!(added.to_string().contains("added"), "{added}");
        let published = client
            .call_tool("publish", serde_json::json!({}))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", revision.as_str()));
        assert!(published.to_string().contains("published"), "{published}");
        client.close().await.unwrap();
        tried += 1;
    }
    assert_eq!(tried, mcp_client::Revision::ALL.len());
    // Per resource (`/mcp`, `/sse`): one login, one step-up; the later revisions reused the
    // stored tokens.
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 4);
}

/// A file store whose lock file another process holds (made here, fresh): registering the
/// client waits in `save_client` for it to go. That wait is on the blocking pool, so this
/// current-thread runtime (which also runs the server the login talks to and this test) keeps
/// running: the test sees the store wait, removes the lock file, and the login completes. When
/// the wait blocked the runtime's thread, nothing else ran until the store's timeout.
#[tokio::test]
async fn a_store_waiting_for_another_processes_lock_does_not_block_the_runtime() {
    #[derive(Debug)]
    struct Watched {
        inner: FileTokenStore,
        waiting: tokio::sync::mpsc::UnboundedSender<()>,
    }
    impl TokenStore for Watched {
        fn load_tokens(&self, resource: &str) -> Result<Option<TokenSet>, OAuthError> {
            self.inner.load_tokens(resource)
        }
        fn save_tokens(&self, tokens: &TokenSet) -> Result<(), OAuthError> {
            self.inner.save_tokens(tokens)
        }
        fn remove_tokens(&self, resource: &str) -> Result<(), OAuthError> {
            self.inner.remove_tokens(resource)
        }
        fn load_client(&self, issuer: &str) -> Result<Option<ClientRegistration>, OAuthError> {
            self.inner.load_client(issuer)
        }
        fn save_client(&self, client: &ClientRegistration) -> Result<(), OAuthError> {
            let _ = self.waiting.send(());
            self.inner.save_client(client)
        }
        fn lock(&self, resource: &str) -> BoxFuture<'_, Result<StoreLock, OAuthError>> {
            self.inner.lock(resource)
        }
    }
    let url = protected_server().await;
    let path = temp_file("tokens.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            path.parent().unwrap(),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
    }
    let lock_file = path.with_file_name("tokens.json.lock");
    std::fs::write(&lock_file, b"").unwrap();
    let (waiting, mut waits) = tokio::sync::mpsc::unbounded_channel();
    let redirect = Counted::default();
    let config = OAuthConfig::new(redirect.clone()).store(Watched {
        inner: FileTokenStore::new(&path),
        waiting,
    });
    let login = {
        let url = url.clone();
        tokio::spawn(async move { Client::builder().oauth(config).connect_http(&url).await })
    };
    // The store waits for the lock file; this task runs meanwhile and lets it go (still there:
    // nobody took it over as stale).
    waits.recv().await.unwrap();
    std::fs::remove_file(&lock_file).unwrap();
    let client = login.await.unwrap().unwrap();
    client
        .call_tool("add", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(redirect.logins.load(Ordering::SeqCst), 1);
    assert!(
        FileTokenStore::new(&path)
            .load_tokens(&url)
            .unwrap()
            .is_some(),
        "the tokens were saved once the lock was gone"
    );
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
