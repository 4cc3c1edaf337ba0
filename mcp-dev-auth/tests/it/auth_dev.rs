//! The development authorization server's hardening (issue 44, review findings 2, 3, 4 and
//! 15), over real sockets: consent is a gate (anti-forgery token, no framing, no caching, the
//! client's name and redirect host shown), registered grant types are enforced and
//! `client_credentials` is not for dynamic clients, everything stored is bounded, client ID
//! metadata documents are never fetched from loopback or private addresses (and failures are
//! cached), redirect URIs are https or loopback, a reused code revokes what it produced, `kid`
//! is the RFC 7638 thumbprint (that the demo keeps secrets off its command line is tested in
//! the everymcp-demo crate).

use crate::raw_http;

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_auth::PkceVerifier;
use mcp_dev_auth::{DevAuthorizationServer, DevAuthorizationServerBuilder};
use mcp_hub::{HubConfig, MemoryHub};
use mcp_server::auth::ResourceServer;
use mcp_server::http::HttpConfig;
use mcp_server::{NoArgs, Server, Tool};
use raw_http::{RawRequest, RawResponse, Running};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const REDIRECT: &str = "http://127.0.0.1:9/callback";

async fn add(_: NoArgs) -> String {
    "added".into()
}

struct Setup {
    server: Running,
    issuer: String,
    resource: String,
}

/// A protected server with the development authorization server on its own address, built
/// from `configure` (which starts from the issuer, the scopes and the shared hub), verifying
/// tokens with the authorization server itself (as `mcp-demo` does).
async fn start(
    configure: impl FnOnce(DevAuthorizationServerBuilder) -> DevAuthorizationServerBuilder,
) -> Setup {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let resource = format!("{issuer}/mcp");
    let hub = Arc::new(MemoryHub::new(HubConfig::default()));
    let dev = configure(
        DevAuthorizationServer::builder(&issuer)
            .store(hub.clone())
            .scopes(["mcp:read", "mcp:deploy"]),
    )
    .build();
    let auth = ResourceServer::builder(&resource, &issuer)
        .scopes_supported(["mcp:read", "mcp:deploy"])
        .required_scopes(["mcp:read"])
        .verifier(dev.clone())
        .build()
        .unwrap();
    let server = Server::builder("protected", "1")
        .state_store(hub.clone())
        .event_log(hub)
        .tool(Tool::new("add", add))
        .build()
        .unwrap();
    let config = HttpConfig::new()
        .session_cache(std::time::Duration::ZERO)
        .auth(auth)
        .routes(dev);
    Setup {
        server: Running::start_listener(listener, server, config).await,
        issuer,
        resource,
    }
}

fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

async fn get(setup: &Setup, path_and_query: &str) -> RawResponse {
    RawRequest::new("GET", path_and_query)
        .send(setup.server.addr)
        .await
}

async fn post_form(setup: &Setup, path: &str, body: &str) -> RawResponse {
    RawRequest::new("POST", path)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body.as_bytes().to_vec())
        .send(setup.server.addr)
        .await
}

async fn register(setup: &Setup, metadata: &Value) -> RawResponse {
    RawRequest::new("POST", "/register")
        .json(metadata)
        .send(setup.server.addr)
        .await
}

/// A public client registered with `REDIRECT` and the name `Test App`.
async fn public_client(setup: &Setup) -> String {
    let registered = register(
        setup,
        &json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                "client_name": "Test App"}),
    )
    .await;
    assert_eq!(registered.status, 201, "{registered:?}");
    registered.json()["client_id"].as_str().unwrap().to_owned()
}

/// The authorization request's query for `client_id` with a fresh PKCE verifier.
fn authorization_query(client_id: &str, scope: &str, resource: &str) -> (String, PkceVerifier) {
    let verifier = PkceVerifier::generate().unwrap();
    let query = form(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("code_challenge", &verifier.challenge()),
        ("code_challenge_method", "S256"),
        ("state", "st4te"),
        ("scope", scope),
        ("resource", resource),
    ]);
    (query, verifier)
}

/// The value of query parameter `name` of `url`.
fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The hidden fields of the consent page's form.
fn hidden_fields(page: &str) -> Vec<(String, String)> {
    let unescape = |s: &str| {
        s.replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    page.split(r#"<input type="hidden" name=""#)
        .skip(1)
        .map(|rest| {
            let (name, rest) = rest.split_once('"').unwrap();
            let value = rest
                .split_once(r#"value=""#)
                .unwrap()
                .1
                .split_once('"')
                .unwrap()
                .0;
            (unescape(name), unescape(value))
        })
        .collect()
}

fn page_text(response: &RawResponse) -> String {
    String::from_utf8_lossy(&response.body).into_owned()
}

/// Finding 2 (a): a direct POST of the consent form is refused; only the page's own form
/// (its anti-forgery token, bound to the request) approves; no page may be framed or cached;
/// the page names the client's registered name and the redirect host, not the random id.
#[tokio::test]
async fn consent_is_a_gate_only_the_pages_own_form_approves() {
    let setup = start(|b| b).await;
    let client_id = public_client(&setup).await;
    let (query, _verifier) = authorization_query(&client_id, "mcp:read", &setup.resource);

    let page = get(&setup, &format!("/authorize?{query}")).await;
    assert_eq!(page.status, 200, "{page:?}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert!(
        page.header("content-security-policy")
            .is_some_and(|csp| csp.contains("frame-ancestors 'none'")),
        "{page:?}"
    );
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let text = page_text(&page);
    assert!(text.contains("Authorize Test App"), "{text}");
    assert!(text.contains("<strong>127.0.0.1:9</strong>"), "{text}");
    assert!(!text.contains(&format!("Authorize {client_id}")), "{text}");

    // The review's reproduction: the form posted directly, without the page.
    let mut direct: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    direct.push(("decision".into(), "approve".into()));
    let body = |fields: &[(String, String)]| {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish()
    };
    let forged = post_form(&setup, "/authorize", &body(&direct)).await;
    assert_eq!(forged.status, 403, "{forged:?}");
    assert!(forged.header("location").is_none(), "{forged:?}");
    assert_eq!(forged.header("x-frame-options"), Some("DENY"));

    // The page's token does not carry over to another request (a wider scope).
    let mut fields = hidden_fields(&text);
    assert!(fields.iter().any(|(k, _)| k == "csrf"), "{text}");
    let widened: Vec<(String, String)> = fields
        .iter()
        .map(|(k, v)| match k.as_str() {
            "scope" => (k.clone(), "mcp:read mcp:deploy".to_owned()),
            _ => (k.clone(), v.clone()),
        })
        .chain([("decision".to_owned(), "approve".to_owned())])
        .collect();
    let altered = post_form(&setup, "/authorize", &body(&widened)).await;
    assert_eq!(altered.status, 403, "{altered:?}");
    let mut bad_token = fields.clone();
    for (k, v) in &mut bad_token {
        if k == "csrf" {
            *v = URL_SAFE_NO_PAD.encode([0u8; 32]);
        }
    }
    bad_token.push(("decision".into(), "approve".into()));
    let guessed = post_form(&setup, "/authorize", &body(&bad_token)).await;
    assert_eq!(guessed.status, 403, "{guessed:?}");

    // The page's own form approves.
    fields.push(("decision".into(), "approve".into()));
    let approved = post_form(&setup, "/authorize", &body(&fields)).await;
    assert_eq!(approved.status, 302, "{approved:?}");
    let location = approved.header("location").unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    assert!(query_param(location, "code").is_some(), "{location}");
    assert_eq!(approved.header("x-frame-options"), Some("DENY"));
}

/// Finding 2 (b): registered grant types are stored and enforced; dynamic registration does
/// not offer `client_credentials` (unless the unsafe option says so).
#[tokio::test]
async fn grant_types_are_enforced_and_client_credentials_is_not_for_dynamic_clients() {
    let setup = start(|b| b).await;
    // The review's reproduction: register for client_credentials.
    let refused = register(&setup, &json!({"grant_types": ["client_credentials"]})).await;
    assert_eq!(refused.status, 400, "{refused:?}");
    assert_eq!(refused.json()["error"], "invalid_client_metadata");
    let unknown = register(
        &setup,
        &json!({"redirect_uris": [REDIRECT], "grant_types": ["authorization_code", "password"]}),
    )
    .await;
    assert_eq!(unknown.json()["error"], "invalid_client_metadata");

    // A confidential client registered for the code grant only: no client_credentials.
    let confidential = register(
        &setup,
        &json!({"redirect_uris": [REDIRECT], "grant_types": ["authorization_code"]}),
    )
    .await;
    assert_eq!(confidential.status, 201, "{confidential:?}");
    let id = confidential.json()["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let secret = confidential.json()["client_secret"]
        .as_str()
        .unwrap()
        .to_owned();
    let credentials = form(&[
        ("grant_type", "client_credentials"),
        ("client_id", &id),
        ("client_secret", &secret),
        ("scope", "mcp:read mcp:deploy"),
        ("resource", &setup.resource),
    ]);
    let denied = post_form(&setup, "/token", &credentials).await;
    assert_eq!(denied.status, 400, "{denied:?}");
    assert_eq!(denied.json()["error"], "unauthorized_client");
    // Nor a refresh token, which it did not register: the code exchange gives none, and the
    // grant is refused.
    let refresh = form(&[
        ("grant_type", "refresh_token"),
        ("client_id", &id),
        ("client_secret", &secret),
        ("refresh_token", "x.y"),
    ]);
    let no_refresh = post_form(&setup, "/token", &refresh).await;
    assert_eq!(no_refresh.json()["error"], "unauthorized_client");

    // Only with the unsafe option may a dynamic (confidential) client register it.
    let lax = start(|b| b.allow_dynamic_client_credentials(true)).await;
    let public = register(
        &lax,
        &json!({"grant_types": ["client_credentials"], "token_endpoint_auth_method": "none"}),
    )
    .await;
    assert_eq!(public.json()["error"], "invalid_client_metadata");
    let allowed = register(&lax, &json!({"grant_types": ["client_credentials"]})).await;
    assert_eq!(allowed.status, 201, "{allowed:?}");
    let granted = post_form(
        &lax,
        "/token",
        &form(&[
            ("grant_type", "client_credentials"),
            ("client_id", allowed.json()["client_id"].as_str().unwrap()),
            (
                "client_secret",
                allowed.json()["client_secret"].as_str().unwrap(),
            ),
            ("scope", "mcp:read"),
            ("resource", &lax.resource),
        ]),
    )
    .await;
    assert_eq!(granted.status, 200, "{granted:?}");
}

/// Finding 3: a registration flood stays within the documented bound (refused past it with
/// 503 `temporarily_unavailable`), and the rate per minute is bounded too (429).
#[tokio::test]
async fn a_registration_flood_stays_within_the_bound() {
    let setup = start(|b| b.max_clients(5).registrations_per_minute(1_000)).await;
    let mut created = 0;
    for _ in 0..20 {
        let response = register(&setup, &json!({"redirect_uris": [REDIRECT]})).await;
        match response.status {
            201 => created += 1,
            503 => {
                let error = response.json();
                assert_eq!(error["error"], "temporarily_unavailable");
                assert!(
                    error["error_description"]
                        .as_str()
                        .unwrap()
                        .contains("max_clients"),
                    "{error}"
                );
            }
            other => panic!("unexpected {other}: {response:?}"),
        }
    }
    assert_eq!(created, 5, "exactly max_clients registrations are kept");

    // The rate: 3 a minute. Seven in a row cross at most one minute's boundary, so at most
    // six get through and at least one is refused.
    let rated = start(|b| b.registrations_per_minute(3)).await;
    let mut refused = 0;
    for _ in 0..7 {
        let response = register(&rated, &json!({"redirect_uris": [REDIRECT]})).await;
        if response.status == 429 {
            refused += 1;
            assert_eq!(response.json()["error"], "temporarily_unavailable");
            assert_eq!(response.header("retry-after"), Some("60"));
        } else {
            assert_eq!(response.status, 201, "{response:?}");
        }
    }
    assert!(refused >= 1, "the registration rate is bounded");
    // The count is per source: another address registers still.
    assert_eq!(register_from("127.0.0.2", &rated).await, 201);

    // One registration is small: a body over the limit is refused before anything is kept.
    let big = json!({"redirect_uris": [REDIRECT], "client_name": "x".repeat(20_000)});
    let too_large = register(&setup, &big).await;
    assert_eq!(too_large.status, 413, "{too_large:?}");
    assert_eq!(too_large.json()["error"], "invalid_request");
}

/// The status of a registration sent from `source` (a loopback address of this host).
async fn register_from(source: &str, setup: &Setup) -> u16 {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let mut stream = socket.connect(setup.server.addr).await.unwrap();
    let body = json!({"redirect_uris": [REDIRECT]}).to_string();
    let request = format!(
        "POST /register HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        setup.server.addr,
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("{response}"))
}

/// Finding 3: scopes are checked, deduplicated and stored normalized; the code challenge is
/// RFC 7636's; loopback redirects match with their query; codes and grants are bounded.
#[tokio::test]
async fn scopes_challenges_redirects_codes_and_grants_are_bounded() {
    let setup = start(|b| b.auto_approve(true).max_codes(2).max_grants(1)).await;
    let client_id = public_client(&setup).await;
    // The review's reproduction, small: a known scope repeated is stored once.
    let repeated = ["mcp:read"; 50].join(" ");
    let (query, verifier) = authorization_query(&client_id, &repeated, &setup.resource);
    let redirected = get(&setup, &format!("/authorize?{query}")).await;
    assert_eq!(redirected.status, 302, "{redirected:?}");
    let code = query_param(redirected.header("location").unwrap(), "code").unwrap();
    let tokens = post_form(
        &setup,
        "/token",
        &form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier.as_str()),
            ("client_id", &client_id),
        ]),
    )
    .await;
    assert_eq!(tokens.status, 200, "{tokens:?}");
    assert_eq!(tokens.json()["scope"], "mcp:read");

    // An unknown scope, and code challenges of the wrong length or alphabet.
    let (unknown, _) = authorization_query(&client_id, "mcp:read admin", &setup.resource);
    let location = get(&setup, &format!("/authorize?{unknown}")).await;
    let location = location.header("location").unwrap();
    assert_eq!(
        query_param(location, "error").as_deref(),
        Some("invalid_scope")
    );
    for challenge in [
        "abc".to_owned(),
        "a".repeat(129),
        format!("{}!", "a".repeat(42)),
    ] {
        let query = form(&[
            ("response_type", "code"),
            ("client_id", &client_id),
            ("redirect_uri", REDIRECT),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ]);
        let response = get(&setup, &format!("/authorize?{query}")).await;
        let location = response.header("location").unwrap();
        assert_eq!(
            query_param(location, "error").as_deref(),
            Some("invalid_request"),
            "{challenge}"
        );
    }

    // A loopback redirect may change its port, not its query.
    for (redirect, allowed) in [
        ("http://127.0.0.1:4242/callback", true),
        ("http://127.0.0.1:9/callback?next=elsewhere", false),
    ] {
        let verifier = PkceVerifier::generate().unwrap();
        let query = form(&[
            ("response_type", "code"),
            ("client_id", &client_id),
            ("redirect_uri", redirect),
            ("code_challenge", &verifier.challenge()),
            ("code_challenge_method", "S256"),
        ]);
        let response = get(&setup, &format!("/authorize?{query}")).await;
        assert_eq!(response.status == 302, allowed, "{redirect}: {response:?}");
    }
    // Codes issued so far: the first and the one on port 4242; max_codes is 2.
    let (third, _) = authorization_query(&client_id, "mcp:read", &setup.resource);
    let response = get(&setup, &format!("/authorize?{third}")).await;
    let location = response.header("location").unwrap();
    assert_eq!(
        query_param(location, "error").as_deref(),
        Some("temporarily_unavailable"),
        "{location}"
    );

    // Grants: max_grants is 1 and the first exchange holds it.
    let other = start(|b| b.auto_approve(true).max_grants(1)).await;
    let client_id = public_client(&other).await;
    let mut statuses = Vec::new();
    for _ in 0..2 {
        let (query, verifier) = authorization_query(&client_id, "mcp:read", &other.resource);
        let redirected = get(&other, &format!("/authorize?{query}")).await;
        let code = query_param(redirected.header("location").unwrap(), "code").unwrap();
        let exchanged = post_form(
            &other,
            "/token",
            &form(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", REDIRECT),
                ("code_verifier", verifier.as_str()),
                ("client_id", &client_id),
            ]),
        )
        .await;
        statuses.push((exchanged.status, exchanged.json()["error"].clone()));
    }
    assert_eq!(statuses[0].0, 200);
    assert_eq!(
        statuses[1],
        (503, json!("temporarily_unavailable")),
        "past max_grants"
    );
}

/// Whether a connection is waiting on `listener` (non-blocking).
fn connection_waiting(listener: &std::net::TcpListener) -> bool {
    match listener.accept() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(e) => panic!("accept: {e}"),
    }
}

/// Finding 4: a client ID metadata document on 127.0.0.1 (or a name resolving there) is
/// refused without any connection; with the unsafe option it is fetched, and a failure is
/// cached (no second connection).
#[tokio::test]
async fn a_metadata_document_on_loopback_is_refused() {
    let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    target.set_nonblocking(true).unwrap();
    let port = target.local_addr().unwrap().port();
    let setup = start(|b| b).await;
    for client_id in [
        format!("https://127.0.0.1:{port}/admin"),
        format!("https://localhost:{port}/client.json"),
        format!("https://[::1]:{port}/client.json"),
    ] {
        let query = form(&[
            ("response_type", "code"),
            ("client_id", &client_id),
            ("redirect_uri", REDIRECT),
        ]);
        let refused = get(&setup, &format!("/authorize?{query}")).await;
        assert_eq!(refused.status, 400, "{refused:?}");
        assert!(refused.header("location").is_none());
        let text = page_text(&refused);
        assert!(text.contains("loopback, private"), "{client_id}: {text}");
        let token = post_form(
            &setup,
            "/token",
            &form(&[
                ("grant_type", "authorization_code"),
                ("client_id", &client_id),
                ("code", "x"),
            ]),
        )
        .await;
        assert_eq!(token.json()["error"], "invalid_client", "{token:?}");
        assert!(
            !connection_waiting(&target),
            "{client_id}: no connection made"
        );
    }
    // Not the CIMD form: refused without a fetch.
    let query = form(&[
        ("response_type", "code"),
        ("client_id", "https://example.com/client?x=1"),
        ("redirect_uri", REDIRECT),
    ]);
    let refused = get(&setup, &format!("/authorize?{query}")).await;
    assert!(page_text(&refused).contains("no query"), "{refused:?}");

    // With the unsafe development option, it is fetched (our listener speaks no TLS, so the
    // fetch fails), and the failure is cached: the second request makes no connection.
    let lax = start(|b| b.allow_private_addresses(true)).await;
    let client_id = format!("https://127.0.0.1:{port}/client.json");
    let query = form(&[
        ("response_type", "code"),
        ("client_id", &client_id),
        ("redirect_uri", REDIRECT),
    ]);
    // The fetch waits for a TLS answer: accept its connection and drop it.
    let accepting = tokio::task::spawn_blocking(move || {
        target.set_nonblocking(false).unwrap();
        let (connection, _) = target.accept().unwrap();
        drop(connection);
        target.set_nonblocking(true).unwrap();
        target
    });
    let first = get(&lax, &format!("/authorize?{query}")).await;
    assert!(page_text(&first).contains("unknown client"), "{first:?}");
    let target = accepting.await.unwrap();
    let second = get(&lax, &format!("/authorize?{query}")).await;
    assert!(page_text(&second).contains("unknown client"), "{second:?}");
    assert!(!connection_waiting(&target), "the failure was cached");
}

/// Finding 4: client ID metadata documents are fetched a bounded number at a time: past it,
/// a request is refused (`temporarily_unavailable`) instead of waiting or fetching.
#[tokio::test]
async fn metadata_document_fetches_in_flight_are_bounded() {
    let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = target.local_addr().unwrap().port();
    let setup = start(|b| b.allow_private_addresses(true).metadata_documents(16, 1)).await;
    let authorize = |n: u32| {
        let query = form(&[
            ("response_type", "code"),
            (
                "client_id",
                &format!("https://127.0.0.1:{port}/client-{n}.json"),
            ),
            ("redirect_uri", REDIRECT),
        ]);
        format!("/authorize?{query}")
    };
    // The first fetch connects and gets no answer: it stays in flight.
    let addr = setup.server.addr;
    let first_path = authorize(1);
    let first = tokio::spawn(async move { RawRequest::new("GET", &first_path).send(addr).await });
    let (held, _) = tokio::task::spawn_blocking(move || target.accept().unwrap())
        .await
        .unwrap();
    let busy = get(&setup, &authorize(2)).await;
    assert_eq!(busy.status, 400, "{busy:?}");
    let text = page_text(&busy);
    assert!(
        text.contains("metadata_documents") && text.contains("try again later"),
        "{text}"
    );
    // Its connection closed, the first fetch fails and its request ends.
    drop(held);
    let first = first.await.unwrap();
    assert!(page_text(&first).contains("unknown client"), "{first:?}");
}

/// Finding 15: redirect URIs are https or http to a loopback host.
#[tokio::test]
async fn redirect_uris_are_https_or_loopback() {
    let setup = start(|b| b).await;
    for (uri, ok) in [
        ("javascript:alert(1)", false),
        ("http://attacker.example/cb", false),
        ("data:text/html,hi", false),
        ("https://app.example/cb#frag", false),
        ("https://app.example/cb", true),
        ("http://localhost:1234/cb", true),
        ("http://[::1]/cb", true),
    ] {
        let response = register(&setup, &json!({"redirect_uris": [uri]})).await;
        if ok {
            assert_eq!(response.status, 201, "{uri}: {response:?}");
        } else {
            assert_eq!(response.status, 400, "{uri}: {response:?}");
            assert_eq!(response.json()["error"], "invalid_redirect_uri", "{uri}");
        }
    }
}

/// Finding 15: a code used twice revokes the tokens it produced (RFC 6749 §4.1.2): the
/// access token is refused by the resource server and the refresh token by the token
/// endpoint.
#[tokio::test]
async fn a_reused_code_revokes_the_tokens_it_produced() {
    let setup = start(|b| b.auto_approve(true)).await;
    let client_id = public_client(&setup).await;
    let (query, verifier) = authorization_query(&client_id, "mcp:read", &setup.resource);
    let redirected = get(&setup, &format!("/authorize?{query}")).await;
    let code = query_param(redirected.header("location").unwrap(), "code").unwrap();
    let exchange = form(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier.as_str()),
        ("client_id", &client_id),
    ]);
    let tokens = post_form(&setup, "/token", &exchange).await;
    assert_eq!(tokens.status, 200, "{tokens:?}");
    let access = tokens.json()["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens.json()["refresh_token"].as_str().unwrap().to_owned();

    let again = post_form(&setup, "/token", &exchange).await;
    assert_eq!(again.status, 400);
    assert_eq!(again.json()["error"], "invalid_grant");

    let call = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("Authorization", &format!("Bearer {access}"))
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .send(setup.server.addr)
        .await;
    assert_eq!(call.status, 401, "the access token is revoked: {call:?}");
    let refreshed = post_form(
        &setup,
        "/token",
        &form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client_id),
        ]),
    )
    .await;
    assert_eq!(refreshed.json()["error"], "invalid_grant", "{refreshed:?}");
}

/// Finding 15: `kid` is the RFC 7638 thumbprint of the public key.
#[tokio::test]
async fn kid_is_the_public_keys_thumbprint() {
    let setup = start(|b| b).await;
    let jwks = get(&setup, "/jwks").await.json();
    let key = &jwks["keys"][0];
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        key["x"].as_str().unwrap(),
        key["y"].as_str().unwrap()
    );
    let thumbprint = URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()));
    assert_eq!(key["kid"], thumbprint, "{jwks}");
    assert!(setup.issuer.starts_with("http://127.0.0.1:"));
}

/// Issue 44's leftover (review finding 15, RFC 6749 §4.1.2.1, RFC 9700 §4.11.2): `/authorize`
/// is never an open redirector. Errors before the client and its redirect URI are verified
/// (no such client, a client ID metadata document not fetched or not in its form, a redirect
/// URI the client did not register, a parameter sent twice) are shown on this server's page;
/// and a bad parameter of a client anyone can register (dynamic registration here, a metadata
/// document alike) whose redirect URI is not loopback is shown too, never redirected there
/// without the user. A pre-registered client, and a loopback redirect, get the redirect.
#[tokio::test]
async fn authorize_errors_never_redirect_to_an_unverified_or_untrusted_uri() {
    const ATTACKER: &str = "https://attacker.example/phish";
    const TRUSTED: &str = "https://app.example/callback";
    let setup = start(|b| {
        b.client(mcp_dev_auth::DevClient {
            client_id: "operator-app".into(),
            client_secret: None,
            redirect_uris: vec![TRUSTED.into()],
        })
    })
    .await;
    let loopback_client = public_client(&setup).await;
    let registered = register(
        &setup,
        &json!({"redirect_uris": [ATTACKER], "token_endpoint_auth_method": "none",
                "client_name": "Anyone"}),
    )
    .await;
    assert_eq!(registered.status, 201, "{registered:?}");
    let open_client = registered.json()["client_id"].as_str().unwrap().to_owned();
    let on_page = |response: &RawResponse, case: &str| {
        assert_eq!(response.status, 400, "{case}: {response:?}");
        assert!(
            response.header("location").is_none(),
            "{case}: redirected: {response:?}"
        );
        assert!(
            !page_text(response).contains("href"),
            "{case}: no link: {response:?}"
        );
    };
    // A bad parameter (response_type), for each kind of client id / redirect URI.
    let bad = |client_id: &str, redirect_uri: &str| {
        form(&[
            ("response_type", "token"),
            ("client_id", client_id),
            ("redirect_uri", redirect_uri),
            ("state", "st4te"),
        ])
    };

    // Before the client and its redirect URI are verified: always the page.
    for (case, query) in [
        ("unknown client", bad("no-such-client", ATTACKER)),
        (
            "metadata document on a refused address",
            bad("https://127.0.0.1:1/client.json", ATTACKER),
        ),
        (
            "metadata document URL not in the CIMD form",
            bad("https://attacker.example/", ATTACKER),
        ),
        (
            "redirect URI not registered",
            bad(&loopback_client, ATTACKER),
        ),
        (
            "redirect URI not registered (pre-registered client)",
            bad("operator-app", ATTACKER),
        ),
        (
            "client_id sent twice",
            format!("{}&client_id=operator-app", bad(&open_client, ATTACKER)),
        ),
    ] {
        on_page(&get(&setup, &format!("/authorize?{query}")).await, case);
    }

    // A verified client anyone can register, with a redirect URI off this machine: every
    // parameter error stays on the page, naming where the answer would have gone.
    let verifier = PkceVerifier::generate().unwrap();
    let challenge = verifier.challenge();
    let valid = [
        ("response_type", "code"),
        ("client_id", open_client.as_str()),
        ("redirect_uri", ATTACKER),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", "st4te"),
    ];
    let with = |name: &str, value: &str| {
        let mut pairs: Vec<(&str, &str)> =
            valid.iter().filter(|(k, _)| *k != name).copied().collect();
        pairs.push((name, value));
        form(&pairs)
    };
    for (case, query) in [
        ("response_type", with("response_type", "token")),
        ("code_challenge", with("code_challenge", "short")),
        (
            "code_challenge_method",
            with("code_challenge_method", "plain"),
        ),
        ("scope", with("scope", "admin")),
        ("resource", with("resource", "relative/mcp#fragment")),
    ] {
        let response = get(&setup, &format!("/authorize?{query}")).await;
        on_page(&response, case);
        assert!(
            page_text(&response).contains("attacker.example"),
            "{case}: names the host: {response:?}"
        );
    }
    // Its valid request still reaches the consent page (the user decides there).
    let consent = get(&setup, &format!("/authorize?{}", form(&valid))).await;
    assert_eq!(consent.status, 200, "{consent:?}");
    assert!(page_text(&consent).contains("attacker.example"));

    // The operator's client, and a loopback redirect, get the error redirected with state.
    for (client_id, redirect_uri) in [
        ("operator-app", TRUSTED),
        (loopback_client.as_str(), REDIRECT),
    ] {
        let response = get(
            &setup,
            &format!("/authorize?{}", bad(client_id, redirect_uri)),
        )
        .await;
        assert_eq!(response.status, 302, "{client_id}: {response:?}");
        let location = response.header("location").unwrap();
        assert!(location.starts_with(redirect_uri), "{location}");
        assert_eq!(
            query_param(location, "error").as_deref(),
            Some("unsupported_response_type")
        );
        assert_eq!(query_param(location, "state").as_deref(), Some("st4te"));
    }
}
