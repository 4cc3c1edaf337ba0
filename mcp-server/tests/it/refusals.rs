//! Refusals an operator can see: after a 401, a 403 `insufficient_scope`, a 413 and a limit
//! hit (`max_sessions_per_principal`), the JSON log holds one INFO line for each with its reason and no
//! token, `mcp_refusals_total` counts each by reason (feature `metrics`), and the JSON line
//! of a `tools/call` parses with the tool's name in its span (no duplicate `name` key).

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_auth::{Audience, Claims, ScopeSet};
use mcp_server::auth::{ResourceServer, StaticTokens};
use mcp_server::http::HttpConfig;
use mcp_server::{Server, Tool};
use raw_http::{RawRequest, RawResponse, Running};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::raw_http;

const ISSUER: &str = "https://auth.example.test";
const TOKEN: &str = "s3cret-read-token";
const REVISION: &str = "2025-11-25";

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

async fn add(args: AddArgs) -> String {
    (args.a + args.b).to_string()
}

async fn deploy(_: AddArgs) -> String {
    "deployed".into()
}

/// Log lines written into memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    /// Every line, parsed: a line that is not JSON fails the test.
    fn lines(&self) -> Vec<Value> {
        self.text()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }
}

fn post(addr_token: Option<&str>, session: Option<&str>, body: &Value) -> RawRequest<'static> {
    let mut request = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", REVISION);
    if let Some(token) = addr_token {
        request = request.header("Authorization", &format!("Bearer {token}"));
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request.json(body)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": REVISION, "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

fn call(id: i64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": {"a": 1, "b": 2}}})
}

fn status(response: &RawResponse, expected: u16) {
    assert_eq!(
        response.status,
        expected,
        "{response:?} {}",
        String::from_utf8_lossy(&response.body)
    );
}

// A current-thread runtime: the server's tasks run on this thread, under the subscriber set
// for it.
#[tokio::test]
async fn refusals_are_logged_once_each_without_secrets_and_counted_by_reason() {
    use tracing_subscriber::fmt::format::FmtSpan;
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn,mcp_server=debug"))
        .with_writer(move || writer.clone())
        .with_span_events(FmtSpan::CLOSE)
        .json()
        .with_current_span(true)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let resource = format!("http://{}/mcp", listener.local_addr().unwrap());
    let claims = Claims {
        iss: Some(ISSUER.into()),
        sub: Some("alice".into()),
        aud: Some(Audience::One(resource.clone())),
        exp: Some(
            i64::try_from(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_secs(),
            )
            .unwrap()
                + 3600,
        ),
        scope: ScopeSet::parse("mcp:read"),
        ..Claims::default()
    };
    let auth = ResourceServer::builder(resource, ISSUER)
        .scopes_supported(["mcp:read", "mcp:deploy"])
        .required_scopes(["mcp:read"])
        .verifier(StaticTokens::new().token(TOKEN, claims))
        .build()
        .unwrap();
    #[cfg(feature = "metrics")]
    let metrics = mcp_server::Metrics::new();
    let builder = Server::builder("refusals", "1")
        .tool(Tool::new("add", add))
        .tool(Tool::new("deploy", deploy).scopes(["mcp:deploy"]));
    #[cfg(feature = "metrics")]
    let builder = builder.metrics(&metrics);
    let server = builder.build().unwrap();
    let config = HttpConfig::new()
        .auth(auth)
        .max_sessions_per_principal(1)
        .body_limit(4096);
    let running = Running::start_listener(listener, server, config).await;
    let addr = running.addr;

    // 401: no token.
    status(&post(None, None, &initialize()).send(addr).await, 401);
    // A session: the principal's only one.
    let init = post(Some(TOKEN), None, &initialize()).send(addr).await;
    status(&init, 200);
    let session = init.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    status(
        &post(Some(TOKEN), Some(&session), &initialized)
            .send(addr)
            .await,
        202,
    );
    // 503: the principal's session limit (an idle session is never evicted for a principal at
    // its own limit).
    status(
        &post(Some(TOKEN), None, &initialize()).send(addr).await,
        503,
    );
    // 403 insufficient_scope: `deploy` needs mcp:deploy.
    status(
        &post(Some(TOKEN), Some(&session), &call(1, "deploy"))
            .send(addr)
            .await,
        403,
    );
    // 413: the body limit.
    let large = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2, "pad": "x".repeat(8192)}}});
    status(
        &post(Some(TOKEN), Some(&session), &large).send(addr).await,
        413,
    );
    // A tool call served.
    let served = post(Some(TOKEN), Some(&session), &call(3, "add"))
        .send(addr)
        .await;
    status(&served, 200);
    running.stop().await;

    let text = captured.text();
    assert!(!text.contains(TOKEN), "a token was logged:\n{text}");
    assert!(!text.contains("Bearer"), "{text}");
    assert!(
        !text.contains(&session),
        "a whole session id was logged:\n{text}"
    );
    let lines = captured.lines();
    let refusals: Vec<&Value> = lines
        .iter()
        .filter(|l| l["target"] == "mcp_server::refusal")
        .collect();
    for (reason, code) in [
        ("unauthorized", 401),
        ("max_sessions_per_principal", 503),
        ("insufficient_scope", 403),
        ("body_limit", 413),
    ] {
        let of_reason: Vec<_> = refusals
            .iter()
            .filter(|l| l["fields"]["reason"] == reason)
            .collect();
        assert_eq!(of_reason.len(), 1, "{reason}: {refusals:#?}");
        let line = of_reason[0];
        assert_eq!(line["level"], "INFO", "{line}");
        assert_eq!(line["fields"]["status"], code, "{line}");
        let message = line["fields"]["message"].as_str().unwrap();
        assert!(message.starts_with("request refused: "), "{line}");
    }
    // The tool call's span, as a JSON parser reads it: its name and the tool's.
    let spans: Vec<&Value> = lines
        .iter()
        .map(|l| &l["span"])
        .filter(|span| span["name"] == "mcp.request" && span["mcp.method.name"] == "tools/call")
        .collect();
    assert!(
        spans.iter().any(|span| span["gen_ai.tool.name"] == "add"),
        "{spans:#?}"
    );

    #[cfg(feature = "metrics")]
    {
        let rendered = metrics.render();
        for reason in [
            "unauthorized",
            "max_sessions_per_principal",
            "insufficient_scope",
            "body_limit",
        ] {
            let line = format!("mcp_refusals_total{{reason=\"{reason}\"}} 1\n");
            assert!(rendered.contains(&line), "{line}\n{rendered}");
        }
        assert!(
            rendered.contains("mcp_refusals_total{reason=\"origin\"} 0\n"),
            "every reason is exported: {rendered}"
        );
        assert!(
            rendered.contains("tool=\"add\"} 1\n"),
            "the tool label: {rendered}"
        );
        assert!(rendered.contains("mcp_build_info{version="), "{rendered}");
    }
}
