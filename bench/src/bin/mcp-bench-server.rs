//! `mcp-bench-server`: our server with an `add` tool, for the harness's own rows.
//!
//! ```text
//! mcp-bench-server --port PORT --store memory|redis [--redis-url URL]
//! mcp-bench-server --port PORT --hub memory|redis://…|postgres://…|sqlite:PATH
//! mcp-bench-server --port PORT [--hub …] --auth-jwt TOKEN_FILE
//! mcp-bench-server --port PORT [--hub …] --auth-dpop TOKEN_FILE
//! mcp-bench-server --port PORT --metrics
//! mcp-bench-server --port PORT --otlp-endpoint URL
//! ```
//!
//! With `--otlp-endpoint` every request span is recorded and exported over OTLP/HTTP (the
//! span-export row, issue 49; `mcp-floor --body ''` is a collector that takes everything).
//!
//! Contract (see the crate docs, "Server contract"): Streamable HTTP at `/mcp` for every
//! revision, HTTP+SSE at `GET /sse` for 2024-11-05, and an `add` tool taking `{a, b}` integers
//! and returning `{"sum": a + b}` as structured content, plus a `confirm` tool that asks the
//! client once (for `mcp-load --ask`), and `add_task`, `add` as a task (task support required,
//! the Tasks extension offered, tasks in the memory or the given hub's store for 10 s; for
//! `mcp-load --tasks`). Listens on `127.0.0.1:PORT`; with
//! `--store redis` sessions and the event log live in Redis (default `redis://127.0.0.1:6379`,
//! keys under a prefix unique to the process). `--hub` names the hub as `mcp-demo --hub` does
//! (PostgreSQL tables under the prefix `mcp_bench`; a SQLite file at PATH). Runs on one thread (the harness pins it to one
//! core) until Ctrl-C or SIGTERM.
//!
//! `--auth-jwt TOKEN_FILE` protects the endpoint as an OAuth resource server
//! (`mcp_server::auth::ResourceServer`, every request needs `mcp:read`) that verifies JWTs
//! against a fixed local key set (`JwtVerifier::from_jwks`, never fetched): an ES256 key is
//! generated at start, and an access token signed with it (audience
//! `http://127.0.0.1:PORT/mcp`, scope `mcp:read`, valid for a day) is written to TOKEN_FILE
//! before the port is bound, for `mcp-load --bearer`.
//!
//! `--auth-dpop TOKEN_FILE` is the same with a DPoP-bound token (RFC 9449): a second ES256
//! key is generated, the token names its thumbprint in `cnf.jkt`, and the key (PKCS#8 DER,
//! base64url) is written to `TOKEN_FILE.dpop-key`, for `mcp-load --bearer TOKEN --dpop-key
//! FILE`. Every request then costs the server one proof signature check (the token itself is
//! verified once and cached) and one replay record in its store.

use std::process::ExitCode;

use mcp_server::http::{HttpConfig, HttpEndpoint, serve_with_shutdown, shutdown_signal};
use mcp_server::{Exchange, Json, Question, Server, TaskSupport, Tasks, Tool, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Asks the client once (pushed on 2025-06-18 and 2025-11-25, so the answer comes back through
/// the hub), then answers `"confirmed"`: `mcp-load --ask` measures answer-to-result latency.
async fn confirm(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("go", Question::elicit("Go on?")).await?;
    if answer.accepted() {
        Ok("confirmed".to_owned())
    } else {
        Ok("declined".to_owned())
    }
}

async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a.saturating_add(args.b),
    })
}

struct Options {
    port: u16,
    /// The hub's URL (`--hub`, or `--store redis` with `--redis-url`); `None` for the
    /// in-memory one.
    hub: Option<String>,
    /// `--auth-jwt`: where the access token is written.
    token_file: Option<String>,
    /// `--auth-dpop`: the token is DPoP-bound.
    dpop: bool,
    /// `--metrics`: count into Prometheus metrics (rendered by nobody: the row measures the
    /// counting).
    metrics: bool,
    /// `--rate-limit NAME=COUNT/PERIOD` (repeatable): rate limits, in the hub's store.
    rate_limits: Vec<mcp_server::RateLimit>,
    /// `--otlp-endpoint URL`: every request span exported over OTLP/HTTP to this collector.
    otlp: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut port = None;
    let mut store = "memory".to_owned();
    let mut url = "redis://127.0.0.1:6379".to_owned();
    let mut hub = None;
    let mut token_file = None;
    let mut metrics = false;
    let mut dpop = false;
    let mut rate_limits = Vec::new();
    let mut otlp = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--port" => {
                port = Some(
                    value("--port")?
                        .parse()
                        .map_err(|e| format!("--port: {e}"))?,
                );
            }
            "--store" => store = value("--store")?,
            "--redis-url" => url = value("--redis-url")?,
            "--hub" => hub = Some(value("--hub")?),
            "--auth-jwt" => token_file = Some(value("--auth-jwt")?),
            "--auth-dpop" => {
                token_file = Some(value("--auth-dpop")?);
                dpop = true;
            }
            "--metrics" => metrics = true,
            "--otlp-endpoint" => otlp = Some(value("--otlp-endpoint")?),
            "--rate-limit" => {
                let spec = value("--rate-limit")?;
                rate_limits.push(
                    mcp_server::RateLimit::parse(&spec)
                        .map_err(|e| format!("--rate-limit {spec}: {e}"))?,
                );
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let hub = match (hub, store.as_str()) {
        (Some(hub), _) if hub == "memory" => None,
        (Some(hub), _) => Some(hub),
        (None, "memory") => None,
        (None, "redis") => Some(url),
        (None, other) => return Err(format!("--store is memory or redis, not {other:?}")),
    };
    Ok(Options {
        port: port.ok_or("--port is required")?,
        hub,
        token_file,
        dpop,
        metrics,
        rate_limits,
        otlp,
    })
}

/// With `--otlp-endpoint`: request spans recorded and exported as a server configures it
/// (`otel::export_filter`), every one sampled; the guard sends what is queued when the server stops.
fn export_spans(endpoint: Option<&str>) -> Result<Option<mcp_server::otel::OtelGuard>, String> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let Some(endpoint) = endpoint else {
        return Ok(None);
    };
    let (layer, guard) = mcp_server::otel::OtlpConfig::new("mcp-bench-server")
        .endpoint(endpoint)
        .layer()
        .map_err(|e| e.to_string())?;
    tracing_subscriber::registry()
        .with(layer.with_filter(mcp_server::otel::export_filter()))
        .try_init()
        .map_err(|e| e.to_string())?;
    Ok(Some(guard))
}

async fn run(options: Options) -> Result<(), String> {
    let _spans = export_spans(options.otlp.as_deref())?;
    let mut builder = Server::builder("mcp-bench-server", env!("CARGO_PKG_VERSION"))
        .tool(Tool::new("add", add).read_only())
        .tool(Tool::new("confirm", confirm))
        .tool(Tool::new("add_task", add).task_support(TaskSupport::Required))
        // Tasks are read once completed: a short time to live keeps the finished ones from
        // piling up in the store (and in the row's peak RSS) for the default hour. The load
        // creates tens of thousands a second, more than the default `max_retained` allows
        // within ten seconds: the bench measures throughput, not that limit.
        .tasks(
            Tasks::new()
                .ttl(std::time::Duration::from_secs(10))
                .max_retained(2_000_000),
        );
    for limit in &options.rate_limits {
        builder = builder.rate_limit(limit.clone());
    }
    let metrics = mcp_server::Metrics::new();
    if options.metrics {
        builder = builder.metrics(&metrics);
    }
    if let Some(url) = &options.hub {
        // Redis: keys of this process's own; PostgreSQL: the bench's tables; SQLite: the file.
        let connect = match mcp_hub::Backend::of(url) {
            Some(backend) if *backend == mcp_hub::Backend::REDIS => mcp_hub::ConnectOptions::new()
                .prefix(format!("mcp-bench-server:{}", std::process::id())),
            Some(backend) if *backend == mcp_hub::Backend::POSTGRES => {
                mcp_hub::ConnectOptions::new().prefix("mcp_bench")
            }
            _ => mcp_hub::ConnectOptions::new(),
        };
        let hub = connect.connect(url).await.map_err(|e| e.to_string())?;
        builder = builder.state_store(hub.clone()).event_log(hub);
    }
    let server = builder.build().map_err(|e| e.to_string())?;
    // The idle-sessions step opens 10,000 sessions (the default limit) on top of the load
    // rounds' own: no limit in the way of what is measured.
    let mut config = HttpConfig::new().max_sessions(usize::MAX);
    if let Some(path) = &options.token_file {
        config = config.auth(resource_server(options.port, path, options.dpop)?);
    }
    let endpoint = HttpEndpoint::new(server, config);
    // Bound last, so a server that accepts connections has written its token.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
        .await
        .map_err(|e| format!("port {}: {e}", options.port))?;
    serve_with_shutdown(listener, endpoint, shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

/// The issuer named in the bench's tokens (no authorization server runs there: the key set is
/// fixed).
const ISSUER: &str = "http://127.0.0.1/bench-issuer";

/// A resource server for `http://127.0.0.1:PORT/mcp` that verifies JWTs with a key generated
/// here, and the token it accepts, written to `token_file`.
fn resource_server(
    port: u16,
    token_file: &str,
    dpop: bool,
) -> Result<mcp_server::auth::ResourceServer, String> {
    use jsonwebtoken::jwk::{Jwk, JwkSet};
    use jsonwebtoken::{Algorithm, EncodingKey, Header};

    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &rng,
    )
    .map_err(|_| "cannot generate a signing key".to_owned())?;
    let key = EncodingKey::from_ec_der(pkcs8.as_ref());
    let kid = "bench-key";
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).map_err(|e| e.to_string())?;
    jwk.common.key_id = Some(kid.to_owned());
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let mut claims = serde_json::json!({
        "iss": ISSUER,
        "sub": "mcp-load",
        "client_id": "mcp-load",
        "aud": resource,
        "iat": now,
        "exp": now + 86_400,
        "scope": "mcp:read",
    });
    if dpop {
        use base64::Engine as _;
        let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &rng,
        )
        .map_err(|_| "cannot generate a DPoP key".to_owned())?;
        let dpop_jwk =
            Jwk::from_encoding_key(&EncodingKey::from_ec_der(pkcs8.as_ref()), Algorithm::ES256)
                .map_err(|e| e.to_string())?;
        let jkt = dpop_jwk
            .thumbprint(jsonwebtoken::jwk::ThumbprintHash::SHA256)
            .map_err(|e| e.to_string())?;
        claims["cnf"] = serde_json::json!({ "jkt": jkt });
        let file = format!("{token_file}.dpop-key");
        std::fs::write(
            &file,
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pkcs8.as_ref()),
        )
        .map_err(|e| format!("{file}: {e}"))?;
    }
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    header.typ = Some("at+jwt".to_owned());
    let token = jsonwebtoken::encode(&header, &claims, &key).map_err(|e| e.to_string())?;
    std::fs::write(token_file, &token).map_err(|e| format!("{token_file}: {e}"))?;
    mcp_server::auth::ResourceServer::builder(resource, ISSUER)
        .scopes_supported(["mcp:read"])
        .required_scopes(["mcp:read"])
        // The DPoP row measures the proof check at full speed (several thousand proofs a
        // second, each recorded for the 66 s `iat` window): room for all of them, where the
        // default bound (100,000 records, a sustained 1,500 a second) would answer 503.
        .dpop_replay_limit(2_000_000)
        .verifier(mcp_server::auth::JwtVerifier::from_jwks(JwkSet {
            keys: vec![jwk],
        }))
        .build()
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let result = options().and_then(|options| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?
            .block_on(run(options))
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-bench-server: {err}");
            ExitCode::FAILURE
        }
    }
}
