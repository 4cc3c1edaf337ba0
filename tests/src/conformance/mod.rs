//! The probes of `mcp-conformance`: what any MCP server over HTTP must do on each revision it
//! claims, checked from outside with a raw HTTP client.
//!
//! | transport | revisions | what is probed |
//! | --- | --- | --- |
//! | Streamable HTTP, stateless | 2026-07-28 | `server/discover`, the `MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` checks (400 + `-32020`), unsupported version (400 + `-32022`), missing `_meta` (400 + `-32602`), unknown method (404 + `-32601`), parse errors, notifications (202), GET and DELETE (405 on a modern-only server), `Origin` (403) |
//! | Streamable HTTP, sessions | 2025-03-26, 2025-06-18, 2025-11-25 | `initialize` and the version echo, `Mcp-Session-Id` (visible ASCII; 400 without it, 404 for an unknown one), `notifications/initialized` (202), the version header (400 when invalid), unknown method, batches (answered on 2025-03-26, refused later), the GET stream, DELETE |
//! | HTTP+SSE | 2024-11-05 | the `endpoint` event, POSTs answered on the stream, unknown method |
//!
//! Every JSON-RPC message the server sends is validated against the revision's official
//! `schema.json`. Revisions are those the server claims: the `supportedVersions` of
//! `server/discover`, else those `initialize` echoes.

pub mod http;

use std::fmt;
use std::time::Duration;

use ::http::{Method, StatusCode, Uri};
use mcp_adapters::{Adapter, Revision, VersionHeader};
use serde_json::{Value, json};

use self::http::{HttpError, READ_TIMEOUT, resolve, send};
use crate::schema::Schemas;

/// What to probe.
#[derive(Debug, Default)]
pub struct Options {
    /// The Streamable HTTP endpoint (`http://host:port/mcp`).
    pub url: Option<Uri>,
    /// The HTTP+SSE stream endpoint (`http://host:port/sse`).
    pub sse_url: Option<Uri>,
    /// Only these revisions (default: every revision the server claims).
    pub revisions: Vec<Revision>,
    /// The official schemas; `None` skips schema validation.
    pub schemas: Option<Schemas>,
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// The server did what the spec says.
    Pass(String),
    /// It did not.
    Fail(String),
    /// The check does not apply to this server.
    Skip(String),
}

/// One check and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The revision probed, if the check belongs to one.
    pub revision: Option<Revision>,
    /// What was checked.
    pub name: String,
    /// How it went.
    pub verdict: Verdict,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (tag, detail) = match &self.verdict {
            Verdict::Pass(d) => ("PASS", d),
            Verdict::Fail(d) => ("FAIL", d),
            Verdict::Skip(d) => ("SKIP", d),
        };
        let revision = self.revision.map_or("-", Revision::as_str);
        write!(f, "{tag} {revision:<10} {}", self.name)?;
        if !detail.is_empty() {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

/// Every check of one run.
#[derive(Debug, Default)]
pub struct Report {
    /// The checks, in the order they ran.
    pub checks: Vec<Check>,
}

impl Report {
    /// How many checks passed.
    pub fn passed(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Pass(_)))
    }

    /// How many checks failed.
    pub fn failed(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Fail(_)))
    }

    /// The failed checks.
    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Fail(_)))
    }

    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.checks.iter().filter(|c| f(&c.verdict)).count()
    }
}

/// What came back for one POST: the status, the session header and every JSON-RPC message of
/// the body (one JSON object, a batch array, or the events of an SSE stream up to the response).
#[derive(Debug)]
struct Reply {
    status: StatusCode,
    content_type: Option<String>,
    session: Option<String>,
    messages: Vec<Value>,
    /// The body was a JSON array.
    batch: bool,
    /// What could not be read, if anything.
    unreadable: Option<String>,
}

impl Reply {
    /// The response (not a request or notification) among the messages, if any.
    fn response(&self) -> Option<&Value> {
        self.messages.iter().find(|m| {
            m.get("method").is_none() && (m.get("result").is_some() || m.get("error").is_some())
        })
    }

    fn error_code(&self) -> Option<i64> {
        self.response()?.pointer("/error/code")?.as_i64()
    }

    fn result(&self) -> Option<&Value> {
        self.response()?.get("result")
    }

    fn describe(&self) -> String {
        let body = match (self.response(), &self.unreadable) {
            (Some(r), _) => r.to_string(),
            (None, Some(why)) => format!("unreadable body: {why}"),
            (None, None) if self.messages.is_empty() => "no body".to_owned(),
            (None, None) => Value::Array(self.messages.clone()).to_string(),
        };
        let body: String = body.chars().take(300).collect();
        format!("{} {body}", self.status.as_u16())
    }
}

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

async fn post(url: &Uri, headers: &[(&str, &str)], body: Vec<u8>) -> Result<Reply, HttpError> {
    let mut all = vec![
        ("accept", ACCEPT_BOTH),
        ("content-type", "application/json"),
    ];
    for (name, value) in headers {
        all.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        all.push((name, value));
    }
    all.retain(|(_, v)| !v.is_empty());
    let response = send(Method::POST, url, &all, Some(body)).await?;
    read_reply(response).await
}

async fn read_reply(response: http::Response) -> Result<Reply, HttpError> {
    let status = response.status;
    let content_type = response.content_type();
    let session = response.header("mcp-session-id");
    let mut reply = Reply {
        status,
        content_type: content_type.clone(),
        session,
        messages: Vec::new(),
        batch: false,
        unreadable: None,
    };
    match content_type.as_deref() {
        Some("text/event-stream") => {
            let mut events = response.events();
            loop {
                match events.next(READ_TIMEOUT).await {
                    Ok(Some(event)) => {
                        if event.data().is_empty() {
                            continue;
                        }
                        match serde_json::from_str::<Value>(event.data()) {
                            Ok(value) => {
                                let done = value.get("method").is_none();
                                reply.messages.push(value);
                                if done {
                                    break;
                                }
                            }
                            Err(e) => {
                                reply.unreadable = Some(format!("SSE data is not JSON: {e}"));
                                break;
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        reply.unreadable = Some(e.to_string());
                        break;
                    }
                }
            }
        }
        _ => {
            let bytes = response.bytes().await?;
            if !bytes.is_empty() {
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(Value::Array(items)) => {
                        reply.batch = true;
                        reply.messages = items;
                    }
                    Ok(value) => reply.messages.push(value),
                    Err(e) => {
                        let text: String =
                            String::from_utf8_lossy(&bytes).chars().take(120).collect();
                        reply.unreadable = Some(format!("not JSON ({e}): {text:?}"));
                    }
                }
            }
        }
    }
    Ok(reply)
}

fn request(id: i64, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap_or_default()
}

fn notification(method: &str, params: Option<Value>) -> Vec<u8> {
    let mut message = json!({"jsonrpc": "2.0", "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    serde_json::to_vec(&message).unwrap_or_default()
}

fn client_info() -> Value {
    json!({"name": "mcp-conformance", "version": env!("CARGO_PKG_VERSION")})
}

fn modern_meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": client_info(),
    })
}

/// The checker's state: the options and the report so far.
struct Run<'a> {
    options: &'a Options,
    report: Report,
    next_id: i64,
}

impl Run<'_> {
    fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    fn record(&mut self, revision: Option<Revision>, name: &str, verdict: Verdict) {
        self.report.checks.push(Check {
            revision,
            name: name.to_owned(),
            verdict,
        });
    }

    fn outcome(&mut self, revision: Option<Revision>, name: &str, outcome: Result<String, String>) {
        let verdict = match outcome {
            Ok(detail) => Verdict::Pass(detail),
            Err(why) => Verdict::Fail(why),
        };
        self.record(revision, name, verdict);
    }

    /// Validates every message of `reply` against `revision`'s schema (`method`: the request's).
    fn schema(&mut self, revision: Revision, name: &str, reply: &Reply, method: Option<&str>) {
        let Some(schemas) = &self.options.schemas else {
            return;
        };
        let mut problems = Vec::new();
        for message in &reply.messages {
            match schemas.check_message(revision, message, false, method) {
                Ok(found) => problems.extend(found),
                Err(e) => problems.push(e.to_string()),
            }
        }
        let name = format!("{name}: every message is valid against schema.json");
        if reply.messages.is_empty() {
            return;
        }
        let outcome = if problems.is_empty() {
            Ok(format!("{} message(s)", reply.messages.len()))
        } else {
            let text: Vec<String> = problems
                .iter()
                .take(3)
                .map(|p| p.chars().take(400).collect())
                .collect();
            Err(text.join("; "))
        };
        self.outcome(Some(revision), &name, outcome);
    }

    /// Expects `status` and JSON-RPC error `code` (when given).
    fn expect_error(
        &mut self,
        revision: Revision,
        name: &str,
        reply: Result<Reply, HttpError>,
        status: &[u16],
        code: Option<i64>,
    ) -> Option<Reply> {
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => {
                self.outcome(Some(revision), name, Err(e.to_string()));
                return None;
            }
        };
        let status_ok = status.contains(&reply.status.as_u16());
        let code_ok = code.is_none_or(|c| reply.error_code() == Some(c));
        let want = match code {
            Some(c) => format!("{status:?} + {c}"),
            None => format!("{status:?}"),
        };
        let outcome = if status_ok && code_ok {
            Ok(reply.describe())
        } else {
            Err(format!("expected {want}, got {}", reply.describe()))
        };
        self.outcome(Some(revision), name, outcome);
        Some(reply)
    }
}

/// Runs every check that applies and returns the report.
pub async fn run(options: &Options) -> Report {
    let mut run = Run {
        options,
        report: Report::default(),
        next_id: 0,
    };
    if options.url.is_none() && options.sse_url.is_none() {
        run.outcome(
            None,
            "an endpoint to probe",
            Err("give --url or --sse-url".into()),
        );
        return run.report;
    }
    if let Some(url) = &options.url {
        let claimed = claims(&mut run, url).await;
        for revision in Revision::ALL {
            if !options.revisions.is_empty() && !options.revisions.contains(&revision) {
                continue;
            }
            let adapter = Adapter::new(revision);
            if !adapter.features().has_handshake {
                if claimed.contains(&revision) {
                    modern(&mut run, url, revision, &claimed).await;
                } else {
                    run.record(
                        Some(revision),
                        "claimed by the server",
                        Verdict::Skip("not offered".into()),
                    );
                }
            } else if adapter.features().http_sse {
                // 2024-11-05 has no Streamable HTTP: probed through --sse-url only.
                if options.sse_url.is_none() && claimed.contains(&revision) {
                    run.record(
                        Some(revision),
                        "HTTP+SSE",
                        Verdict::Skip("give --sse-url to probe this revision".into()),
                    );
                }
            } else if claimed.contains(&revision) {
                legacy(&mut run, url, revision).await;
            } else {
                run.record(
                    Some(revision),
                    "claimed by the server",
                    Verdict::Skip("not offered".into()),
                );
            }
        }
    }
    if let Some(sse_url) = &options.sse_url {
        let revision = Revision::V2024_11_05;
        if options.revisions.is_empty() || options.revisions.contains(&revision) {
            http_sse(&mut run, sse_url, revision).await;
        }
    }
    run.report
}

/// The revisions the server at `url` claims: `server/discover`'s `supportedVersions` when it
/// answers one, else every handshake revision whose `initialize` it echoes.
async fn claims(run: &mut Run<'_>, url: &Uri) -> Vec<Revision> {
    let modern = Revision::LATEST.as_str();
    let id = run.id();
    let body = request(id, "server/discover", json!({"_meta": modern_meta(modern)}));
    let headers = [
        ("mcp-protocol-version", modern),
        ("mcp-method", "server/discover"),
    ];
    let mut claimed = Vec::new();
    if let Ok(reply) = post(url, &headers, body).await
        && reply.status == StatusCode::OK
        && let Some(result) = reply.result()
    {
        for v in result["supportedVersions"].as_array().into_iter().flatten() {
            if let Some(r) = v.as_str().and_then(Revision::parse) {
                claimed.push(r);
            }
        }
    }
    for revision in Revision::ALL {
        let features = Adapter::new(revision).features();
        if claimed.contains(&revision) || !features.has_handshake || features.http_sse {
            continue;
        }
        let id = run.id();
        if let Ok(reply) = post(url, &[], initialize(id, revision)).await
            && reply.result().and_then(|r| r["protocolVersion"].as_str()) == Some(revision.as_str())
        {
            claimed.push(revision);
            if let Some(session) = &reply.session {
                let _ = send(Method::DELETE, url, &[("mcp-session-id", session)], None).await;
            }
        }
    }
    let names: Vec<&str> = claimed.iter().map(|r| r.as_str()).collect();
    let outcome = if claimed.is_empty() {
        Err("neither server/discover nor initialize names a known revision".to_owned())
    } else {
        Ok(names.join(", "))
    };
    run.outcome(None, "revisions claimed", outcome);
    claimed
}

fn initialize(id: i64, revision: Revision) -> Vec<u8> {
    request(
        id,
        "initialize",
        json!({"protocolVersion": revision.as_str(), "capabilities": {}, "clientInfo": client_info()}),
    )
}

/// 2026-07-28: stateless Streamable HTTP.
async fn modern(run: &mut Run<'_>, url: &Uri, revision: Revision, claimed: &[Revision]) {
    let v = revision.as_str();
    let r = Some(revision);
    // server/discover.
    let id = run.id();
    let body = request(id, "server/discover", json!({"_meta": modern_meta(v)}));
    let headers = [
        ("mcp-protocol-version", v),
        ("mcp-method", "server/discover"),
    ];
    match post(url, &headers, body).await {
        Ok(reply) => {
            let ok = reply.status == StatusCode::OK
                && reply.result().is_some_and(|res| {
                    res["supportedVersions"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|x| x == v))
                });
            let outcome = if ok {
                Ok(reply.describe())
            } else {
                Err(format!(
                    "expected 200 and a DiscoverResult naming {v}, got {}",
                    reply.describe()
                ))
            };
            run.outcome(r, "server/discover", outcome);
            run.schema(revision, "server/discover", &reply, Some("server/discover"));
            let type_ok = reply
                .content_type
                .as_deref()
                .is_some_and(|t| t == "application/json" || t == "text/event-stream");
            let outcome = if type_ok {
                Ok(reply.content_type.clone().unwrap_or_default())
            } else {
                Err(format!("Content-Type {:?}", reply.content_type))
            };
            run.outcome(
                r,
                "a request is answered as application/json or text/event-stream",
                outcome,
            );
            let outcome = match &reply.session {
                None => Ok(String::new()),
                Some(s) => Err(format!("minted Mcp-Session-Id {s:?}")),
            };
            run.outcome(r, "no Mcp-Session-Id is minted", outcome);
        }
        Err(e) => run.outcome(r, "server/discover", Err(e.to_string())),
    }
    // tools/list.
    let id = run.id();
    let body = request(id, "tools/list", json!({"_meta": modern_meta(v)}));
    let headers = [("mcp-protocol-version", v), ("mcp-method", "tools/list")];
    let mut tool: Option<String> = None;
    match post(url, &headers, body).await {
        Ok(reply) => {
            let outcome = match reply.result() {
                Some(result) if reply.status == StatusCode::OK => {
                    tool = result["tools"][0]["name"].as_str().map(str::to_owned);
                    Ok(format!(
                        "{} tool(s)",
                        result["tools"].as_array().map_or(0, Vec::len)
                    ))
                }
                _ => Err(reply.describe()),
            };
            run.outcome(r, "tools/list", outcome);
            run.schema(revision, "tools/list", &reply, Some("tools/list"));
        }
        Err(e) => run.outcome(r, "tools/list", Err(e.to_string())),
    }
    // Header checks.
    let id = run.id();
    let body = request(id, "server/discover", json!({"_meta": modern_meta(v)}));
    let reply = post(url, &[("mcp-method", "server/discover")], body).await;
    if let Some(reply) = run.expect_error(
        revision,
        "no MCP-Protocol-Version header: 400 + -32020",
        reply,
        &[400],
        Some(-32020),
    ) {
        run.schema(revision, "no MCP-Protocol-Version header", &reply, None);
    }
    let id = run.id();
    let body = request(id, "server/discover", json!({"_meta": modern_meta(v)}));
    let other = Revision::V2025_06_18.as_str();
    let reply = post(
        url,
        &[
            ("mcp-protocol-version", other),
            ("mcp-method", "server/discover"),
        ],
        body,
    )
    .await;
    run.expect_error(
        revision,
        "MCP-Protocol-Version differs from _meta: 400 + -32020",
        reply,
        &[400],
        Some(-32020),
    );
    let id = run.id();
    let body = request(id, "server/discover", json!({"_meta": modern_meta(v)}));
    let reply = post(
        url,
        &[("mcp-protocol-version", v), ("mcp-method", "tools/list")],
        body,
    )
    .await;
    run.expect_error(
        revision,
        "Mcp-Method differs from the body: 400 + -32020",
        reply,
        &[400],
        Some(-32020),
    );
    let id = run.id();
    let body = request(id, "server/discover", json!({"_meta": modern_meta(v)}));
    let reply = post(url, &[("mcp-protocol-version", v)], body).await;
    run.expect_error(
        revision,
        "no Mcp-Method header: 400 + -32020",
        reply,
        &[400],
        Some(-32020),
    );
    match &tool {
        Some(name) => {
            let id = run.id();
            let body = request(
                id,
                "tools/call",
                json!({"_meta": modern_meta(v), "name": name, "arguments": {}}),
            );
            let reply = post(
                url,
                &[("mcp-protocol-version", v), ("mcp-method", "tools/call")],
                body,
            )
            .await;
            run.expect_error(
                revision,
                "tools/call without Mcp-Name: 400 + -32020",
                reply,
                &[400],
                Some(-32020),
            );
            let id = run.id();
            let body = request(
                id,
                "tools/call",
                json!({"_meta": modern_meta(v), "name": name, "arguments": {}}),
            );
            let reply = post(
                url,
                &[
                    ("mcp-protocol-version", v),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "not-that-tool"),
                ],
                body,
            )
            .await;
            run.expect_error(
                revision,
                "Mcp-Name differs from params.name: 400 + -32020",
                reply,
                &[400],
                Some(-32020),
            );
        }
        None => run.record(
            r,
            "tools/call without Mcp-Name",
            Verdict::Skip("the server lists no tools".into()),
        ),
    }
    // Versions and _meta.
    let id = run.id();
    let bogus = "2099-01-01";
    let body = request(id, "server/discover", json!({"_meta": modern_meta(bogus)}));
    let reply = post(
        url,
        &[
            ("mcp-protocol-version", bogus),
            ("mcp-method", "server/discover"),
        ],
        body,
    )
    .await;
    if let Some(reply) = run.expect_error(
        revision,
        "unsupported version: 400 + -32022",
        reply,
        &[400],
        Some(-32022),
    ) {
        let data = reply
            .response()
            .and_then(|m| m.pointer("/error/data"))
            .cloned();
        let supported_ok = data
            .as_ref()
            .and_then(|d| d["supported"].as_array())
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string));
        let requested_ok = data.as_ref().is_some_and(|d| d["requested"] == bogus);
        let outcome = if supported_ok && requested_ok {
            Ok(data.map(|d| d.to_string()).unwrap_or_default())
        } else {
            Err(format!("error.data is {data:?}"))
        };
        run.outcome(r, "-32022 data names supported and requested", outcome);
        run.schema(revision, "unsupported version", &reply, None);
    }
    let id = run.id();
    let body = request(id, "tools/list", json!({}));
    let reply = post(
        url,
        &[("mcp-protocol-version", v), ("mcp-method", "tools/list")],
        body,
    )
    .await;
    run.expect_error(
        revision,
        "request without _meta: 400 + -32602",
        reply,
        &[400],
        Some(-32602),
    );
    let id = run.id();
    let body = request(id, "no/such/method", json!({"_meta": modern_meta(v)}));
    let reply = post(
        url,
        &[
            ("mcp-protocol-version", v),
            ("mcp-method", "no/such/method"),
        ],
        body,
    )
    .await;
    if let Some(reply) = run.expect_error(
        revision,
        "unknown method: 404 + -32601",
        reply,
        &[404],
        Some(-32601),
    ) {
        run.schema(revision, "unknown method", &reply, None);
    }
    let reply = post(
        url,
        &[("mcp-protocol-version", v), ("mcp-method", "tools/list")],
        b"{\"jsonrpc\": \"2.0\", \"id\": 1,".to_vec(),
    )
    .await;
    run.expect_error(
        revision,
        "unparseable body: 400 + -32700",
        reply,
        &[400],
        Some(-32700),
    );
    // A notification: cancelling the last request this run sent, as `requestId` MUST name a
    // request the client issued (that it has already been answered is allowed).
    let body = notification(
        "notifications/cancelled",
        Some(json!({"requestId": run.next_id, "reason": "probe"})),
    );
    let outcome = match post(url, &[("mcp-protocol-version", v)], body).await {
        Ok(reply) if reply.status == StatusCode::ACCEPTED && reply.messages.is_empty() => {
            Ok("202".to_owned())
        }
        Ok(reply) => Err(format!(
            "expected 202 without a body, got {}",
            reply.describe()
        )),
        Err(e) => Err(e.to_string()),
    };
    run.outcome(r, "a notification gets 202 Accepted", outcome);
    // Origin.
    let id = run.id();
    let body = request(id, "server/discover", json!({"_meta": modern_meta(v)}));
    let reply = post(
        url,
        &[
            ("mcp-protocol-version", v),
            ("mcp-method", "server/discover"),
            ("origin", "http://attacker.invalid"),
        ],
        body,
    )
    .await;
    run.expect_error(revision, "a foreign Origin gets 403", reply, &[403], None);
    // GET and DELETE on a modern-only server.
    let modern_only = claimed
        .iter()
        .all(|c| !Adapter::new(*c).features().has_handshake);
    for method in [Method::GET, Method::DELETE] {
        let name = format!("{method} on a modern-only server gets 405");
        if !modern_only {
            run.record(
                r,
                &name,
                Verdict::Skip("the server also speaks revisions with sessions".into()),
            );
            continue;
        }
        let outcome = match send(
            method,
            url,
            &[("accept", "text/event-stream"), ("mcp-protocol-version", v)],
            None,
        )
        .await
        {
            Ok(response) if response.status == StatusCode::METHOD_NOT_ALLOWED => {
                Ok("405".to_owned())
            }
            Ok(response) => Err(format!("got {}", response.status.as_u16())),
            Err(e) => Err(e.to_string()),
        };
        run.outcome(r, &name, outcome);
    }
}

/// 2025-03-26, 2025-06-18, 2025-11-25: Streamable HTTP with sessions.
async fn legacy(run: &mut Run<'_>, url: &Uri, revision: Revision) {
    let v = revision.as_str();
    let r = Some(revision);
    let features = Adapter::new(revision).features();
    let version_header = features.version_header != VersionHeader::Undefined;
    let id = run.id();
    let reply = match post(url, &[], initialize(id, revision)).await {
        Ok(reply) => reply,
        Err(e) => {
            run.outcome(r, "initialize", Err(e.to_string()));
            return;
        }
    };
    let echoed = reply
        .result()
        .and_then(|res| res["protocolVersion"].as_str())
        == Some(v);
    let outcome = if reply.status == StatusCode::OK && echoed {
        Ok(reply.describe())
    } else {
        Err(format!(
            "expected 200 and protocolVersion {v}, got {}",
            reply.describe()
        ))
    };
    run.outcome(r, "initialize echoes the version", outcome);
    run.schema(revision, "initialize", &reply, Some("initialize"));
    let session = reply.session.clone();
    let outcome = match &session {
        None => Ok("no session (allowed)".to_owned()),
        Some(s) if !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b)) => Ok(s.clone()),
        Some(s) => Err(format!("Mcp-Session-Id {s:?} is not visible ASCII")),
    };
    run.outcome(r, "Mcp-Session-Id is visible ASCII", outcome);
    let mut headers: Vec<(&str, &str)> = Vec::new();
    if let Some(s) = &session {
        headers.push(("mcp-session-id", s));
    }
    if version_header {
        headers.push(("mcp-protocol-version", v));
    }
    let outcome = match post(
        url,
        &headers,
        notification("notifications/initialized", None),
    )
    .await
    {
        Ok(reply) if reply.status == StatusCode::ACCEPTED => Ok("202".to_owned()),
        Ok(reply) => Err(format!("expected 202, got {}", reply.describe())),
        Err(e) => Err(e.to_string()),
    };
    run.outcome(r, "notifications/initialized gets 202 Accepted", outcome);
    for method in ["tools/list", "ping"] {
        let id = run.id();
        match post(url, &headers, request(id, method, json!({}))).await {
            Ok(reply) => {
                let outcome = if reply.status == StatusCode::OK && reply.result().is_some() {
                    Ok(reply.describe())
                } else {
                    Err(reply.describe())
                };
                run.outcome(r, method, outcome);
                run.schema(revision, method, &reply, Some(method));
            }
            Err(e) => run.outcome(r, method, Err(e.to_string())),
        }
    }
    let id = run.id();
    let reply = post(url, &headers, request(id, "no/such/method", json!({}))).await;
    if let Some(reply) = run.expect_error(
        revision,
        "unknown method: -32601",
        reply,
        &[200, 400, 404],
        Some(-32601),
    ) {
        run.schema(revision, "unknown method", &reply, None);
    }
    if let Some(s) = &session {
        let mut without: Vec<(&str, &str)> = Vec::new();
        if version_header {
            without.push(("mcp-protocol-version", v));
        }
        let id = run.id();
        let name =
            "a request without the session header gets 400 (SHOULD, where sessions are required)";
        match post(url, &without, request(id, "tools/list", json!({}))).await {
            Ok(reply) if reply.status.is_success() => run.record(
                r,
                name,
                Verdict::Skip(format!(
                    "the server does not require its sessions: {}",
                    reply.describe()
                )),
            ),
            reply => {
                run.expect_error(revision, name, reply, &[400], None);
            }
        }
        let mut unknown = without.clone();
        unknown.push(("mcp-session-id", "no-such-session"));
        let id = run.id();
        let reply = post(url, &unknown, request(id, "tools/list", json!({}))).await;
        run.expect_error(revision, "an unknown session gets 404", reply, &[404], None);
        let _ = s;
    } else {
        run.record(
            r,
            "session checks",
            Verdict::Skip("the server issues no session".into()),
        );
    }
    if version_header {
        let mut bad: Vec<(&str, &str)> = headers
            .iter()
            .filter(|(n, _)| *n != "mcp-protocol-version")
            .copied()
            .collect();
        bad.push(("mcp-protocol-version", "1999-01-01"));
        let id = run.id();
        let reply = post(url, &bad, request(id, "tools/list", json!({}))).await;
        run.expect_error(
            revision,
            "an unsupported MCP-Protocol-Version header gets 400",
            reply,
            &[400],
            None,
        );
    }
    // Batches.
    let (a, b) = (run.id(), run.id());
    let batch = serde_json::to_vec(&json!([
        {"jsonrpc": "2.0", "id": a, "method": "ping"},
        {"jsonrpc": "2.0", "id": b, "method": "tools/list"}
    ]))
    .unwrap_or_default();
    match post(url, &headers, batch).await {
        Ok(reply) if features.allows_batch => {
            let ids: Vec<Value> = reply.messages.iter().map(|m| m["id"].clone()).collect();
            let outcome = if reply.status == StatusCode::OK
                && ids.contains(&json!(a))
                && ids.contains(&json!(b))
                && reply.messages.iter().all(|m| m.get("result").is_some())
            {
                Ok(format!("{} responses", reply.messages.len()))
            } else {
                Err(format!(
                    "expected 200 and both results, got {}",
                    reply.describe()
                ))
            };
            run.outcome(r, "a batch is answered item by item", outcome);
            if let Some(schemas) = &run.options.schemas {
                let mut problems = Vec::new();
                for message in &reply.messages {
                    let method = if message["id"] == json!(a) {
                        "ping"
                    } else {
                        "tools/list"
                    };
                    match schemas.check_message(revision, message, false, Some(method)) {
                        Ok(found) => problems.extend(found),
                        Err(e) => problems.push(e.to_string()),
                    }
                }
                if reply.batch
                    && let Err(e) = schemas.check(
                        revision,
                        "JSONRPCBatchResponse",
                        &Value::Array(reply.messages.clone()),
                    )
                {
                    problems.push(e.to_string());
                }
                let outcome = if problems.is_empty() {
                    Ok(String::new())
                } else {
                    Err(problems.join("; "))
                };
                run.outcome(
                    r,
                    "batch: every response is valid against schema.json",
                    outcome,
                );
            }
        }
        Ok(reply) => {
            let refused = reply.status.is_client_error() || reply.error_code() == Some(-32600);
            let outcome = if refused {
                Ok(reply.describe())
            } else {
                Err(format!("a batch was accepted: {}", reply.describe()))
            };
            run.outcome(r, "a batch is refused (batching was removed)", outcome);
        }
        Err(e) => run.outcome(r, "batch", Err(e.to_string())),
    }
    // The GET stream.
    let mut get_headers = headers.clone();
    get_headers.push(("accept", "text/event-stream"));
    let mut priming = None;
    let outcome = match send(Method::GET, url, &get_headers, None).await {
        Ok(response) if response.status == StatusCode::METHOD_NOT_ALLOWED => {
            Ok("405 (no GET stream)".to_owned())
        }
        Ok(response)
            if response.status == StatusCode::OK
                && response.content_type().as_deref() == Some("text/event-stream") =>
        {
            if features.sse_polling {
                priming = Some(response);
            }
            Ok("200 text/event-stream".to_owned())
        }
        Ok(response) => Err(format!(
            "expected 200 text/event-stream or 405, got {} {:?}",
            response.status.as_u16(),
            response.content_type()
        )),
        Err(e) => Err(e.to_string()),
    };
    run.outcome(r, "GET opens an SSE stream or gets 405", outcome);
    // SSE polling: the stream SHOULD start with an event that has an id (and empty data).
    if let Some(response) = priming {
        let name = "the GET stream is primed with an event id (SHOULD)";
        let mut events = response.events();
        match events.next(Duration::from_secs(5)).await {
            Ok(Some(event)) if event.id().is_some_and(|id| !id.is_empty()) => {
                run.outcome(
                    r,
                    name,
                    Ok(format!("id {:?}", event.id().unwrap_or_default())),
                );
            }
            Ok(Some(event)) => run.record(
                r,
                name,
                Verdict::Skip(format!("the first event has no id: {:?}", event.data())),
            ),
            Ok(None) => run.record(r, name, Verdict::Skip("the stream ended at once".into())),
            Err(e) => run.record(r, name, Verdict::Skip(format!("no event: {e}"))),
        }
    }
    // DELETE ends the session.
    if session.is_some() {
        match send(Method::DELETE, url, &headers, None).await {
            Ok(response) if response.status == StatusCode::METHOD_NOT_ALLOWED => {
                run.outcome(r, "DELETE ends the session or gets 405", Ok("405".into()));
            }
            Ok(response) if response.status.is_success() => {
                run.outcome(
                    r,
                    "DELETE ends the session or gets 405",
                    Ok(response.status.as_u16().to_string()),
                );
                let id = run.id();
                let reply = post(url, &headers, request(id, "tools/list", json!({}))).await;
                run.expect_error(revision, "a deleted session gets 404", reply, &[404], None);
            }
            Ok(response) => run.outcome(
                r,
                "DELETE ends the session or gets 405",
                Err(format!("got {}", response.status.as_u16())),
            ),
            Err(e) => run.outcome(r, "DELETE ends the session or gets 405", Err(e.to_string())),
        }
    }
}

/// 2024-11-05: the HTTP+SSE transport.
async fn http_sse(run: &mut Run<'_>, sse_url: &Uri, revision: Revision) {
    let r = Some(revision);
    let response = match send(
        Method::GET,
        sse_url,
        &[("accept", "text/event-stream")],
        None,
    )
    .await
    {
        Ok(response) => response,
        Err(e) => {
            run.outcome(r, "GET the SSE endpoint", Err(e.to_string()));
            return;
        }
    };
    let ok = response.status == StatusCode::OK
        && response.content_type().as_deref() == Some("text/event-stream");
    let outcome = if ok {
        Ok("200 text/event-stream".to_owned())
    } else {
        Err(format!(
            "got {} {:?}",
            response.status.as_u16(),
            response.content_type()
        ))
    };
    run.outcome(r, "GET the SSE endpoint", outcome);
    if !ok {
        return;
    }
    let mut events = response.events();
    let endpoint = match events.next(READ_TIMEOUT).await {
        Ok(Some(event)) if event.event() == Some("endpoint") => Some(event.data().to_owned()),
        Ok(other) => {
            run.outcome(
                r,
                "the first event is `endpoint`",
                Err(format!("got {other:?}")),
            );
            None
        }
        Err(e) => {
            run.outcome(r, "the first event is `endpoint`", Err(e.to_string()));
            None
        }
    };
    let Some(endpoint) = endpoint else { return };
    let post_url = match resolve(sse_url, &endpoint) {
        Ok(u) => u,
        Err(e) => {
            run.outcome(r, "the first event is `endpoint`", Err(e.to_string()));
            return;
        }
    };
    run.outcome(r, "the first event is `endpoint`", Ok(endpoint));
    let steps: [(&str, Vec<u8>, Option<i64>); 4] = {
        let a = run.id();
        let b = run.id();
        let c = run.id();
        [
            ("initialize", initialize(a, revision), Some(a)),
            (
                "notifications/initialized",
                notification("notifications/initialized", None),
                None,
            ),
            ("tools/list", request(b, "tools/list", json!({})), Some(b)),
            (
                "no/such/method",
                request(c, "no/such/method", json!({})),
                Some(c),
            ),
        ]
    };
    for (method, body, id) in steps {
        let outcome = match post(
            &post_url,
            &[("accept", ""), ("content-type", "application/json")],
            body,
        )
        .await
        {
            Ok(reply) if reply.status.is_success() => Ok(reply.status.as_u16().to_string()),
            Ok(reply) => Err(reply.describe()),
            Err(e) => Err(e.to_string()),
        };
        let posted = outcome.is_ok();
        run.outcome(r, &format!("POST {method} is accepted"), outcome);
        let Some(id) = id.filter(|_| posted) else {
            continue;
        };
        // The answer comes on the stream.
        let mut answer = None;
        let mut seen = Vec::new();
        while answer.is_none() {
            match events.next(Duration::from_secs(10)).await {
                Ok(Some(event)) => match serde_json::from_str::<Value>(event.data()) {
                    Ok(value) if value["id"] == json!(id) && value.get("method").is_none() => {
                        answer = Some(value)
                    }
                    Ok(value) => seen.push(value),
                    Err(e) => {
                        seen.push(json!(format!("not JSON: {e}")));
                        break;
                    }
                },
                Ok(None) => break,
                Err(_) => break,
            }
        }
        let reply = Reply {
            status: StatusCode::OK,
            content_type: Some("text/event-stream".into()),
            session: None,
            messages: answer.clone().into_iter().chain(seen.clone()).collect(),
            batch: false,
            unreadable: None,
        };
        let outcome = match (&answer, method) {
            (Some(a), "no/such/method") if a.pointer("/error/code") == Some(&json!(-32601)) => {
                Ok(a.to_string())
            }
            (Some(a), "no/such/method") => Err(format!("expected -32601, got {a}")),
            (Some(a), _) if a.get("result").is_some() => {
                Ok(a.to_string().chars().take(200).collect())
            }
            (Some(a), _) => Err(a.to_string()),
            (None, _) => Err(format!(
                "no answer on the stream within 10 s (other messages: {seen:?})"
            )),
        };
        run.outcome(r, &format!("{method} is answered on the stream"), outcome);
        let schema_method = (method != "no/such/method").then_some(method);
        run.schema(revision, method, &reply, schema_method);
    }
}
