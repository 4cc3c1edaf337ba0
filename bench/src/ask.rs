//! The pushed-ask probe behind `mcp-load --ask`: how long an answer takes to reach the handler
//! that asked, through the server's hub.
//!
//! On 2025-11-25 over Streamable HTTP one session is opened with the `elicitation` capability,
//! then, one call at a time until the run ends:
//!
//! 1. `tools/call confirm {}` is POSTed on the call connection; the reply is an event stream on
//!    which the server pushes an `elicitation/create` request;
//! 2. the answer (`{"action": "accept", "content": {}}`) is POSTed on a second connection (the
//!    server's hub carries it to the waiting handler, in memory or through Redis), to the same
//!    server or, with [`LoadConfig::answer_url`], to another worker sharing its hub (the answer
//!    then crosses processes through the hub's store: Redis, PostgreSQL or SQLite);
//! 3. the `confirm` result then arrives on the call's stream.
//!
//! The latency recorded is from the answer POST being sent to the call's result being read:
//! the answer's trip through the hub, the handler resuming and the result's write. Every
//! result is checked (`"confirmed"` as its text); failures are counted.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{
    HeaderValue, Method, Request, StatusCode,
    header::{ACCEPT, CONTENT_TYPE, HOST},
};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, client::conn::http1::SendRequest};
use mcp_wire::sse::SseDecoder;
use serde::Serialize;
use serde_json::Value;

use crate::{
    Revision,
    histogram::Histogram,
    load::{self, CallError, LoadConfig, LoadError, MEASURE, STOP, Target},
};

/// The tool `mcp-bench-server` offers for this probe: asks once, then answers `"confirmed"`.
pub const CONFIRM_TOOL: &str = "confirm";
/// The text of a `confirm` result after an accepted answer.
pub const CONFIRMED: &str = "confirmed";

/// The result of [`run`], printed by `mcp-load --ask` as one JSON line.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AskReport {
    /// The target URL.
    pub url: String,
    /// The revision spoken (2025-11-25).
    pub revision: &'static str,
    /// Answered asks whose result passed its check during the measured time.
    pub asks: u64,
    /// Failed asks and handshakes, warm-up included.
    pub errors: u64,
    /// Median answer-to-result latency, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile answer-to-result latency, in milliseconds.
    pub p99_ms: f64,
    /// The first error seen, if any.
    pub first_error: Option<String>,
}

/// Runs the probe for [`LoadConfig::warmup`] plus [`LoadConfig::duration`], one ask at a time.
pub async fn run(config: &LoadConfig) -> Result<AskReport, LoadError> {
    let target = Arc::new(Target::of(&config.url, config)?);
    let answers = match &config.answer_url {
        Some(url) => Arc::new(Target::of(url, config)?),
        None => target.clone(),
    };
    let phase = Arc::new(AtomicU8::new(load::WARMUP));
    let timeline = {
        let phase = phase.clone();
        let config = config.clone();
        tokio::spawn(async move { load::timeline(&config, &phase).await })
    };
    let mut histogram = Histogram::new();
    let mut errors = 0;
    let mut first_error = None;
    let mut probe: Option<Probe> = None;
    while phase.load(Ordering::Relaxed) != STOP {
        let outcome = tokio::time::timeout(config.timeout, async {
            if probe.is_none() {
                probe = Some(Probe::open(&target, &answers).await?);
            }
            match &mut probe {
                Some(p) => p.ask().await,
                None => Err(CallError::StreamEnded),
            }
        })
        .await
        .unwrap_or(Err(CallError::Timeout));
        match outcome {
            Ok(latency) => {
                if phase.load(Ordering::Relaxed) == MEASURE {
                    histogram.record(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
                }
            }
            Err(error) => {
                errors += 1;
                first_error.get_or_insert_with(|| error.to_string());
                probe = None;
                if errors > 100 {
                    break;
                }
            }
        }
    }
    timeline.abort();
    let ms = |q: f64| histogram.quantile(q) as f64 / 1e6;
    Ok(AskReport {
        url: config.url.clone(),
        revision: Revision::V2025_11_25.as_str(),
        asks: histogram.count(),
        errors,
        p50_ms: ms(0.50),
        p99_ms: ms(0.99),
        first_error,
    })
}

const SESSION: &str = "mcp-session-id";
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"mcp-load","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// One session: a connection for the calls and one for the answers (to the same server or to
/// another worker).
struct Probe {
    calls: SendRequest<Full<Bytes>>,
    answers: SendRequest<Full<Bytes>>,
    target: Arc<Target>,
    answer_target: Arc<Target>,
    session: Option<HeaderValue>,
    decoder: SseDecoder,
    next_id: u64,
}

impl Probe {
    async fn open(target: &Arc<Target>, answers: &Arc<Target>) -> Result<Self, CallError> {
        let mut probe = Self {
            calls: target.connect().await?,
            answers: answers.connect().await?,
            target: target.clone(),
            answer_target: answers.clone(),
            session: None,
            decoder: SseDecoder::new(),
            next_id: 1,
        };
        let response = probe.post(false, INITIALIZE.to_owned()).await?;
        if response.status() != StatusCode::OK {
            return Err(CallError::Status(response.status()));
        }
        probe.session = response.headers().get(SESSION).cloned();
        response.into_body().collect().await?;
        let response = probe.post(false, INITIALIZED.to_owned()).await?;
        if !response.status().is_success() {
            return Err(CallError::Status(response.status()));
        }
        response.into_body().collect().await?;
        Ok(probe)
    }

    async fn post(
        &mut self,
        answer: bool,
        body: String,
    ) -> Result<http::Response<Incoming>, CallError> {
        let target = if answer {
            &self.answer_target
        } else {
            &self.target
        };
        let mut request = Request::new(Full::new(Bytes::from(body)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = target.path.clone();
        let headers = request.headers_mut();
        headers.insert(HOST, target.host.clone());
        target.add_extra(headers);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        // Not on `initialize` (sent before the session exists).
        if let Some(session) = &self.session {
            headers.insert(SESSION, session.clone());
            headers.insert(
                "mcp-protocol-version",
                HeaderValue::from_static(Revision::V2025_11_25.as_str()),
            );
        }
        let sender = if answer {
            &mut self.answers
        } else {
            &mut self.calls
        };
        sender.ready().await?;
        Ok(sender.send_request(request).await?)
    }

    /// One call: the question, the answer, the result; returns answer-to-result time.
    async fn ask(&mut self) -> Result<Duration, CallError> {
        let id = self.next_id;
        self.next_id += 1;
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{CONFIRM_TOOL}","arguments":{{}}}}}}"#
        );
        let response = self.post(false, call).await?;
        if response.status() != StatusCode::OK {
            return Err(CallError::Status(response.status()));
        }
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            return Err(malformed(
                "the call answered without pushing a question (not an event stream)",
            ));
        }
        let mut body = response.into_body();
        self.decoder.reset_stream();
        let mut sent: Option<Instant> = None;
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame?.into_data() else {
                continue;
            };
            self.decoder.push(&data);
            let mut messages = Vec::new();
            for event in &mut self.decoder {
                let event = event.map_err(|_| malformed("oversized SSE event"))?;
                if !event.data().is_empty() {
                    messages.push(event.data().to_owned());
                }
            }
            for message in messages {
                let message: Value =
                    serde_json::from_str(&message).map_err(|e| malformed(&e.to_string()))?;
                if message["method"] == "elicitation/create" {
                    let answer = format!(
                        r#"{{"jsonrpc":"2.0","id":{},"result":{{"action":"accept","content":{{}}}}}}"#,
                        message["id"]
                    );
                    sent = Some(Instant::now());
                    let reply = self.post(true, answer).await?;
                    if !reply.status().is_success() {
                        return Err(CallError::Status(reply.status()));
                    }
                    reply.into_body().collect().await?;
                } else if message["id"] == id {
                    let Some(sent) = sent else {
                        return Err(malformed("result before the question was answered"));
                    };
                    let latency = sent.elapsed();
                    if message["result"]["content"][0]["text"] != CONFIRMED {
                        return Err(malformed(&format!("unexpected reply {message}")));
                    }
                    // Read the stream to its end so the connection can be reused.
                    while let Some(frame) = body.frame().await {
                        frame?;
                    }
                    return Ok(latency);
                }
            }
        }
        Err(CallError::StreamEnded)
    }
}

fn malformed(why: &str) -> CallError {
    CallError::Reply(crate::reply::ReplyError::Malformed(why.into()))
}
