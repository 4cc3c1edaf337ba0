//! DPoP (RFC 9449) at the resource server, over real sockets on 127.0.0.1 (review finding 5):
//! a DPoP-bound token (`cnf.jkt`) is accepted only under the `DPoP` scheme with a valid proof
//! for the request, on Streamable HTTP and HTTP+SSE; a proof for another method, URI, token or
//! key, or a stale one, is refused; a proof is accepted once across workers sharing a hub;
//! server nonces work when turned on; the metadata advertises the algorithms.

use crate::backends;
use crate::raw_http;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use backends::Backend;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_auth::dpop::{access_token_hash, thumbprint};
use mcp_auth::{Audience, BearerChallenge, BearerScheme, Challenge, Claims, ScopeSet};
use mcp_hub::{Hub, HubConfig, MemoryHub, StateStore};
use mcp_server::auth::{ResourceServer, ResourceServerBuilder, StaticTokens};
use mcp_server::http::HttpConfig;
use mcp_server::{Revision, Server, Tool};
use raw_http::{RawRequest, RawResponse, Running};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const ISSUER: &str = "https://auth.example.test";
/// The public URL every worker is configured with: proofs name it, whatever `Host` says.
const BASE: &str = "https://mcp.example.test";

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

async fn add(args: AddArgs) -> String {
    (args.a + args.b).to_string()
}

struct Key {
    encoding: EncodingKey,
    jwk: Jwk,
    jkt: String,
}

fn es256() -> Key {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &rng,
    )
    .unwrap();
    let encoding = EncodingKey::from_ec_der(pkcs8.as_ref());
    let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).unwrap();
    let jkt = thumbprint(&jwk).unwrap();
    Key { encoding, jwk, jkt }
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

/// The claims of a proof for `method url` presenting `token`, with a fresh `jti`.
fn proof_claims(method: &str, url: &str, token: &str) -> Value {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    json!({
        "jti": format!("{}-{n}-{}", std::process::id(), now()),
        "htm": method,
        "htu": url,
        "iat": now(),
        "ath": access_token_hash(token),
    })
}

fn sign(key: &Key, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("dpop+jwt".into());
    header.jwk = Some(key.jwk.clone());
    jsonwebtoken::encode(&header, claims, &key.encoding).unwrap()
}

fn claims(jkt: Option<&str>) -> Claims {
    Claims {
        iss: Some(ISSUER.into()),
        sub: Some("alice".into()),
        aud: Some(Audience::One(format!("{BASE}/mcp"))),
        exp: Some(now() + 3600),
        scope: ScopeSet::parse("mcp:read"),
        cnf: jkt.map(|jkt| json!({ "jkt": jkt })),
        ..Claims::default()
    }
}

/// The resource server of the tests: `bound` is bound to `key`, `plain` is a bearer token.
fn resource_server(key: &Key) -> ResourceServerBuilder {
    let tokens = StaticTokens::new()
        .token("bound", claims(Some(&key.jkt)))
        .token("plain", claims(None));
    ResourceServer::builder(format!("{BASE}/mcp"), ISSUER)
        .required_scopes(["mcp:read"])
        .verifier(tokens)
}

fn server(store: Option<Arc<dyn Hub>>) -> Server {
    let mut builder = Server::builder("dpop", "1").tool(Tool::new("add", add));
    if let Some(hub) = store {
        builder = builder.state_store(hub.clone()).event_log(hub);
    }
    builder.build().unwrap()
}

async fn start(auth: ResourceServer, store: Option<Arc<dyn Hub>>) -> Running {
    Running::start(server(store), HttpConfig::new().auth(auth)).await
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": Revision::V2025_06_18.as_str(), "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

/// `POST /mcp` (initialize) with `authorization` and, if given, a `DPoP` header.
async fn post_mcp(running: &Running, authorization: &str, proof: Option<&str>) -> RawResponse {
    let mut request = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", Revision::V2025_06_18.as_str())
        .header("Authorization", authorization);
    if let Some(proof) = proof {
        request = request.header("DPoP", proof);
    }
    request.json(&initialize()).send(running.addr).await
}

/// The DPoP challenge of a 401.
fn dpop_challenge(response: &RawResponse) -> BearerChallenge {
    assert_eq!(response.status, 401, "{response:?}");
    let header = response
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("a challenge: {response:?}"));
    let challenges = Challenge::parse_all(header).unwrap();
    let dpop = challenges
        .iter()
        .find(|c| c.is("DPoP"))
        .unwrap_or_else(|| panic!("a DPoP challenge: {header}"));
    let challenge = BearerChallenge::from_challenge(dpop);
    assert_eq!(challenge.scheme, BearerScheme::DPoP);
    assert!(
        challenge
            .algs
            .as_deref()
            .unwrap_or_default()
            .contains("ES256"),
        "{header}"
    );
    challenge
}

fn refused_as(response: &RawResponse, error: &str) {
    assert_eq!(dpop_challenge(response).error.as_deref(), Some(error));
}

#[tokio::test]
async fn a_bound_token_presented_as_bearer_or_without_a_proof_is_refused() {
    let key = es256();
    let running = start(resource_server(&key).build().unwrap(), None).await;
    let url = format!("{BASE}/mcp");
    // The review's reproduction: a bound token as a bearer token.
    refused_as(
        &post_mcp(&running, "Bearer bound", None).await,
        "invalid_token",
    );
    // ... even with a valid proof next to it.
    let proof = sign(&key, &proof_claims("POST", &url, "bound"));
    refused_as(
        &post_mcp(&running, "Bearer bound", Some(&proof)).await,
        "invalid_token",
    );
    // The DPoP scheme without a proof, or with two.
    refused_as(
        &post_mcp(&running, "DPoP bound", None).await,
        "invalid_token",
    );
    let two = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("Authorization", "DPoP bound")
        .header("DPoP", &sign(&key, &proof_claims("POST", &url, "bound")))
        .header("DPoP", &sign(&key, &proof_claims("POST", &url, "bound")))
        .json(&initialize())
        .send(running.addr)
        .await;
    refused_as(&two, "invalid_token");
    // A bearer token under the DPoP scheme is refused too (no downgrade either way)...
    let proof = sign(&key, &proof_claims("POST", &url, "plain"));
    refused_as(
        &post_mcp(&running, "DPoP plain", Some(&proof)).await,
        "invalid_token",
    );
    // ... and still works as a bearer token.
    assert_eq!(post_mcp(&running, "Bearer plain", None).await.status, 200);
    running.stop().await;
}

#[tokio::test]
async fn a_valid_proof_is_accepted_on_streamable_http_and_http_sse() {
    let key = es256();
    let running = start(resource_server(&key).build().unwrap(), None).await;
    // Streamable HTTP: the proof names the configured URL, not the Host the request carries.
    let proof = sign(&key, &proof_claims("POST", &format!("{BASE}/mcp"), "bound"));
    let response = post_mcp(&running, "DPoP bound", Some(&proof)).await;
    assert_eq!(response.status, 200, "{response:?}");
    assert_eq!(
        response.messages()[0]["result"]["protocolVersion"],
        Revision::V2025_06_18.as_str()
    );
    // The scheme is matched without case.
    let proof = sign(&key, &proof_claims("POST", &format!("{BASE}/mcp"), "bound"));
    assert_eq!(
        post_mcp(&running, "dpop bound", Some(&proof)).await.status,
        200
    );

    // HTTP+SSE: the stream (GET /sse), then messages to its endpoint (POST /messages), each
    // with a proof for its own method and URI (without the query).
    let proof = sign(&key, &proof_claims("GET", &format!("{BASE}/sse"), "bound"));
    let mut stream = RawRequest::new("GET", "/sse")
        .header("Accept", "text/event-stream")
        .header("Authorization", "DPoP bound")
        .header("DPoP", &proof)
        .open(running.addr)
        .await;
    assert_eq!(stream.status, 200);
    let head = stream.event().await.expect("the endpoint event");
    assert_eq!(head.event.as_deref(), Some("endpoint"));
    let endpoint = head.data;
    let path = endpoint.split('?').next().unwrap().to_owned();
    let post = |body: Value, method: &'static str, htu: String| {
        let endpoint = endpoint.clone();
        let proof = sign(&key, &proof_claims(method, &htu, "bound"));
        let addr = running.addr;
        async move {
            RawRequest::new("POST", &endpoint)
                .header("Authorization", "DPoP bound")
                .header("DPoP", &proof)
                .json(&body)
                .send(addr)
                .await
        }
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": Revision::V2024_11_05.as_str(), "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let response = post(init, "POST", format!("{BASE}{path}")).await;
    assert_eq!(response.status, 202, "{response:?}");
    let answer = stream.message().await.expect("the initialize result");
    assert_eq!(answer["id"], 1, "{answer}");
    // A proof for the stream's URI does not pass on the message endpoint.
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let wrong = post(ping, "POST", format!("{BASE}/sse")).await;
    refused_as(&wrong, "invalid_token");
    running.stop().await;
}

#[tokio::test]
async fn a_proof_for_another_method_uri_token_or_key_or_a_stale_one_is_refused() {
    let key = es256();
    let running = start(resource_server(&key).build().unwrap(), None).await;
    let url = format!("{BASE}/mcp");
    let with = |name: &str, value: Value| {
        let mut claims = proof_claims("POST", &url, "bound");
        claims[name] = value;
        sign(&key, &claims)
    };
    let other_key = es256();
    let cases = [
        ("htm", with("htm", json!("GET"))),
        ("htu path", with("htu", json!(format!("{BASE}/other")))),
        (
            "htu host",
            with("htu", json!(format!("http://{}/mcp", running.addr))),
        ),
        ("ath", with("ath", json!(access_token_hash("plain")))),
        ("iat", with("iat", json!(now() - 3600))),
        ("iat ahead", with("iat", json!(now() + 3600))),
        (
            "jkt",
            sign(&other_key, &proof_claims("POST", &url, "bound")),
        ),
        ("not a JWT", "x.y.z".to_owned()),
    ];
    for (what, proof) in cases {
        let response = post_mcp(&running, "DPoP bound", Some(&proof)).await;
        assert_eq!(response.status, 401, "{what}: {response:?}");
        refused_as(&response, "invalid_token");
        // The reason is a fixed sentence per check, with nothing of the proof in it.
        let description = dpop_challenge(&response).error_description.unwrap();
        assert!(
            !description.contains("example.test") && !description.contains("alice"),
            "{what}: {description}"
        );
    }
    // The same, well-formed, is accepted (the cases above fail for their one change).
    let good = sign(&key, &proof_claims("POST", &url, "bound"));
    assert_eq!(
        post_mcp(&running, "DPoP bound", Some(&good)).await.status,
        200
    );
    running.stop().await;
}

/// Sends one proof to `a`, then the same proof to `b`: accepted once, refused after.
async fn replayed(a: &Running, b: &Running, key: &Key) {
    let proof = sign(key, &proof_claims("POST", &format!("{BASE}/mcp"), "bound"));
    let first = post_mcp(a, "DPoP bound", Some(&proof)).await;
    assert_eq!(first.status, 200, "{first:?}");
    let again = post_mcp(b, "DPoP bound", Some(&proof)).await;
    refused_as(&again, "invalid_token");
    let same = post_mcp(a, "DPoP bound", Some(&proof)).await;
    refused_as(&same, "invalid_token");
}

#[tokio::test]
async fn a_replayed_proof_is_refused_on_the_same_and_another_worker_of_a_memory_hub() {
    let key = es256();
    let hub: Arc<dyn Hub> = Arc::new(MemoryHub::new(HubConfig::default()));
    let a = start(resource_server(&key).build().unwrap(), Some(hub.clone())).await;
    let b = start(resource_server(&key).build().unwrap(), Some(hub)).await;
    replayed(&a, &b, &key).await;
    // Workers that share no hub cannot see each other's proofs: what makes the test above
    // pass is the hub (a proof replayed on an unrelated server is accepted there once).
    let alone = start(resource_server(&key).build().unwrap(), None).await;
    let proof = sign(&key, &proof_claims("POST", &format!("{BASE}/mcp"), "bound"));
    assert_eq!(post_mcp(&a, "DPoP bound", Some(&proof)).await.status, 200);
    assert_eq!(
        post_mcp(&alone, "DPoP bound", Some(&proof)).await.status,
        200
    );
    for running in [a, b, alone] {
        running.stop().await;
    }
}

#[tokio::test]
async fn a_replayed_proof_is_refused_on_another_worker_of_each_shared_hub() {
    let key = es256();
    for backend in Backend::all() {
        let Some(place) = backend.place().await else {
            continue;
        };
        let a = start(
            resource_server(&key).build().unwrap(),
            Some(place.hub().await),
        )
        .await;
        let b = start(
            resource_server(&key).build().unwrap(),
            Some(place.hub().await),
        )
        .await;
        replayed(&a, &b, &key).await;
        a.stop().await;
        b.stop().await;
    }
}

#[tokio::test]
async fn a_configured_replay_store_is_used() {
    let key = es256();
    let store: Arc<dyn StateStore> = Arc::new(MemoryHub::new(HubConfig::default()));
    let auth = |key: &Key| {
        resource_server(key)
            .dpop_replay_store(store.clone(), mcp_hub::Namespace::new("rs"))
            .build()
            .unwrap()
    };
    // Two servers with hubs of their own, one replay store.
    let a = start(auth(&key), None).await;
    let b = start(auth(&key), None).await;
    replayed(&a, &b, &key).await;
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn server_nonces_are_asked_for_and_accepted() {
    let key = es256();
    let auth = resource_server(&key)
        .dpop_nonces(
            b"a test secret of thirty-two bytes",
            Duration::from_secs(300),
        )
        .build()
        .unwrap();
    let running = start(auth, None).await;
    let url = format!("{BASE}/mcp");
    let response = post_mcp(
        &running,
        "DPoP bound",
        Some(&sign(&key, &proof_claims("POST", &url, "bound"))),
    )
    .await;
    refused_as(&response, "use_dpop_nonce");
    let nonce = response
        .header("dpop-nonce")
        .expect("a DPoP-Nonce")
        .to_owned();
    let mut claims = proof_claims("POST", &url, "bound");
    claims["nonce"] = json!("1.forged");
    let forged = post_mcp(&running, "DPoP bound", Some(&sign(&key, &claims))).await;
    refused_as(&forged, "use_dpop_nonce");
    claims = proof_claims("POST", &url, "bound");
    claims["nonce"] = json!(nonce);
    let response = post_mcp(&running, "DPoP bound", Some(&sign(&key, &claims))).await;
    assert_eq!(response.status, 200, "{response:?}");
    // Bearer tokens are not concerned.
    assert_eq!(post_mcp(&running, "Bearer plain", None).await.status, 200);
    running.stop().await;
}

#[tokio::test]
async fn the_metadata_advertises_dpop_and_required_dpop_refuses_bearer_tokens() {
    let key = es256();
    let running = start(resource_server(&key).build().unwrap(), None).await;
    let metadata = RawRequest::new("GET", "/.well-known/oauth-protected-resource/mcp")
        .send(running.addr)
        .await
        .json();
    let algs = metadata["dpop_signing_alg_values_supported"]
        .as_array()
        .unwrap();
    assert!(algs.contains(&json!("ES256")), "{metadata}");
    assert!(!algs.iter().any(|a| a.as_str().unwrap().starts_with("HS")));
    assert!(metadata.get("dpop_bound_access_tokens_required").is_none());
    running.stop().await;

    let running = start(
        resource_server(&key).require_dpop(true).build().unwrap(),
        None,
    )
    .await;
    let metadata = RawRequest::new("GET", "/.well-known/oauth-protected-resource/mcp")
        .send(running.addr)
        .await
        .json();
    assert_eq!(metadata["dpop_bound_access_tokens_required"], true);
    // A request with no token is told which scheme to use.
    let anonymous = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", Revision::V2025_06_18.as_str())
        .json(&initialize())
        .send(running.addr)
        .await;
    let challenge = dpop_challenge(&anonymous);
    assert!(challenge.error.is_none(), "{anonymous:?}");
    refused_as(
        &post_mcp(&running, "Bearer plain", None).await,
        "invalid_token",
    );
    let proof = sign(&key, &proof_claims("POST", &format!("{BASE}/mcp"), "bound"));
    assert_eq!(
        post_mcp(&running, "DPoP bound", Some(&proof)).await.status,
        200
    );
    running.stop().await;
}

/// The development authorization server in front of a resource server, on one address.
async fn with_dev_as() -> (Running, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let dev = mcp_dev_auth::DevAuthorizationServer::builder(&issuer)
        .scopes(["mcp:read"])
        .auto_approve(true)
        .client(mcp_dev_auth::DevClient {
            client_id: "app".into(),
            client_secret: None,
            redirect_uris: vec!["http://127.0.0.1/callback".into()],
        })
        .build();
    let auth = ResourceServer::builder(format!("{issuer}/mcp"), &issuer)
        .verifier(mcp_server::auth::JwtVerifier::fetch(dev.jwks_uri()))
        .build()
        .unwrap();
    let config = HttpConfig::new().auth(auth).routes(dev);
    (
        Running::start_listener(listener, server(None), config).await,
        issuer,
    )
}

fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
        .into_bytes()
}

/// A token request with `pairs` and, if given, a `DPoP` proof.
async fn token_request(running: &Running, pairs: &[(&str, &str)], proof: Option<&str>) -> Value {
    let mut request = RawRequest::new("POST", "/token")
        .header("Content-Type", "application/x-www-form-urlencoded");
    if let Some(proof) = proof {
        request = request.header("DPoP", proof);
    }
    request.body(form(pairs)).send(running.addr).await.json()
}

/// A token-endpoint proof (no `ath`) by `key` for `htu`.
fn token_proof(key: &Key, htu: &str) -> String {
    let mut claims = proof_claims("POST", htu, "");
    claims.as_object_mut().unwrap().remove("ath");
    sign(key, &claims)
}

/// The claims of a JWT, unverified (the test reads what the server signed).
fn payload(jwt: &str) -> Value {
    use base64::Engine as _;
    let part = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn the_development_authorization_server_binds_tokens_and_their_refresh_to_the_key() {
    let (running, issuer) = with_dev_as().await;
    let key = es256();
    let token_url = format!("{issuer}/token");
    let metadata = RawRequest::new("GET", "/.well-known/oauth-authorization-server")
        .send(running.addr)
        .await
        .json();
    assert!(
        metadata["dpop_signing_alg_values_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("ES256")),
        "{metadata}"
    );
    // The code flow, its token request with a proof.
    let verifier = mcp_auth::PkceVerifier::generate().unwrap();
    let query = String::from_utf8(form(&[
        ("response_type", "code"),
        ("client_id", "app"),
        ("redirect_uri", "http://127.0.0.1/callback"),
        ("code_challenge", &verifier.challenge()),
        ("code_challenge_method", "S256"),
        ("state", "s"),
        ("scope", "mcp:read"),
        ("resource", &format!("{issuer}/mcp")),
    ]))
    .unwrap();
    let redirected = RawRequest::new("GET", &format!("/authorize?{query}"))
        .send(running.addr)
        .await;
    assert_eq!(redirected.status, 302, "{redirected:?}");
    let location = url::Url::parse(redirected.header("location").unwrap()).unwrap();
    let code = location
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let exchange = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", "http://127.0.0.1/callback"),
        ("code_verifier", verifier.as_str()),
        ("client_id", "app"),
    ];
    // A proof for another URI is refused (and spends nothing).
    let wrong = token_request(
        &running,
        &exchange,
        Some(&token_proof(&key, &format!("{issuer}/other"))),
    )
    .await;
    assert_eq!(wrong["error"], "invalid_dpop_proof", "{wrong}");
    let proof = token_proof(&key, &token_url);
    let tokens = token_request(&running, &exchange, Some(&proof)).await;
    assert_eq!(tokens["token_type"], "DPoP", "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    assert_eq!(payload(&access)["cnf"]["jkt"], key.jkt.as_str());
    // The same proof again is a replay.
    let replay = token_request(&running, &exchange, Some(&proof)).await;
    assert_eq!(replay["error"], "invalid_dpop_proof", "{replay}");

    // The bound token works at the resource server with a proof, not as a bearer token.
    let at_rs = |authorization: String, proof: Option<String>| {
        let addr = running.addr;
        async move {
            let mut request = RawRequest::new("POST", "/mcp")
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", Revision::V2025_06_18.as_str())
                .header("Authorization", &authorization);
            if let Some(proof) = &proof {
                request = request.header("DPoP", proof);
            }
            request.json(&initialize()).send(addr).await
        }
    };
    let mcp = format!("{issuer}/mcp");
    let ok = at_rs(
        format!("DPoP {access}"),
        Some(sign(&key, &proof_claims("POST", &mcp, &access))),
    )
    .await;
    assert_eq!(ok.status, 200, "{ok:?}");
    refused_as(
        &at_rs(format!("Bearer {access}"), None).await,
        "invalid_token",
    );

    // A refresh without a proof, or with another key's, is refused; with the key, it is bound.
    let refresh_token = tokens["refresh_token"].as_str().unwrap().to_owned();
    let refresh = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.as_str()),
        ("client_id", "app"),
    ];
    let bare = token_request(&running, &refresh, None).await;
    assert_eq!(bare["error"], "invalid_grant", "{bare}");
    let other = token_request(&running, &refresh, Some(&token_proof(&es256(), &token_url))).await;
    assert_eq!(other["error"], "invalid_grant", "{other}");
    let renewed = token_request(&running, &refresh, Some(&token_proof(&key, &token_url))).await;
    assert_eq!(renewed["token_type"], "DPoP", "{renewed}");
    assert_eq!(
        payload(renewed["access_token"].as_str().unwrap())["cnf"]["jkt"],
        key.jkt.as_str()
    );
    running.stop().await;
}

/// The replay records one resource server keeps live are bounded
/// (`dpop_replay_limit`): past the limit a DPoP request gets 503 with `Retry-After` within the
/// proof window, a refused replay takes no place, and bearer tokens are still served.
#[tokio::test]
async fn replay_records_stop_at_their_limit_with_503_and_retry_after() {
    let key = es256();
    let running = start(
        resource_server(&key).dpop_replay_limit(2).build().unwrap(),
        None,
    )
    .await;
    let url = format!("{BASE}/mcp");
    let first = sign(&key, &proof_claims("POST", &url, "bound"));
    assert_eq!(
        post_mcp(&running, "DPoP bound", Some(&first)).await.status,
        200
    );
    // A replay is refused and records nothing.
    refused_as(
        &post_mcp(&running, "DPoP bound", Some(&first)).await,
        "invalid_token",
    );
    let second = sign(&key, &proof_claims("POST", &url, "bound"));
    assert_eq!(
        post_mcp(&running, "DPoP bound", Some(&second)).await.status,
        200
    );
    // The third live record would pass the limit.
    let third = sign(&key, &proof_claims("POST", &url, "bound"));
    let full = post_mcp(&running, "DPoP bound", Some(&third)).await;
    assert_eq!(full.status, 503, "{full:?}");
    let wait: u64 = full
        .header("retry-after")
        .unwrap_or_else(|| panic!("Retry-After: {full:?}"))
        .parse()
        .unwrap();
    assert!((1..=66).contains(&wait), "{wait}");
    let body = full.json();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too many DPoP proofs"),
        "{body}"
    );
    // Bearer tokens record nothing and are not limited.
    assert_eq!(post_mcp(&running, "Bearer plain", None).await.status, 200);
    running.stop().await;
}
