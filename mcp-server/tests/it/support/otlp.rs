//! An OTLP/HTTP receiver for the span export tests (issue 49): it decodes the collector
//! protocol's protobuf export requests and keeps every span, for `mcp-server`'s and
//! `mcp-demo`'s tests (the latter include this file by path).

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_client::trace::TraceParent;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;
use tokio::sync::{Notify, watch};

/// The OTLP span kinds.
pub const SERVER: i32 = 2;
/// See [`SERVER`].
pub const CLIENT: i32 = 3;
/// See [`SERVER`].
#[allow(
    dead_code,
    reason = "not every test binary that includes this module reads it"
)]
pub const PRODUCER: i32 = 4;

/// How long a test waits for spans.
const WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// One span as the receiver got it.
#[derive(Clone, Debug)]
pub struct Got {
    pub service: String,
    pub instance: String,
    pub name: String,
    /// The span kind (OTLP: 2 server, 3 client).
    pub kind: i32,
    pub trace_id: Vec<u8>,
    pub span_id: Vec<u8>,
    pub parent_span_id: Vec<u8>,
    pub attributes: BTreeMap<String, String>,
    /// (trace id, span id) of each link.
    pub links: Vec<(Vec<u8>, Vec<u8>)>,
    /// The span events' names.
    pub events: Vec<String>,
    /// The status code (OTLP: 0 unset, 1 ok, 2 error).
    pub status: i32,
}

/// An OTLP/HTTP receiver on 127.0.0.1: keeps every span of every export it is sent. While
/// `hold` is set it answers nothing (a collector that hangs).
pub struct Receiver {
    pub addr: SocketAddr,
    pub spans: Arc<Mutex<Vec<Got>>>,
    arrived: Arc<Notify>,
    pub hold: watch::Sender<bool>,
    pub exports: Arc<Mutex<usize>>,
}

impl Receiver {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(Notify::new());
        let exports = Arc::new(Mutex::new(0));
        let (hold, held) = watch::channel(false);
        let (kept, told, counted) = (spans.clone(), arrived.clone(), exports.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (kept, told, counted, held) =
                    (kept.clone(), told.clone(), counted.clone(), held.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |request: hyper::Request<Incoming>| {
                        let (kept, told, counted, mut held) =
                            (kept.clone(), told.clone(), counted.clone(), held.clone());
                        async move {
                            // A hanging collector: no answer while held.
                            let _ = held.wait_for(|hold| !hold).await;
                            assert_eq!(request.uri().path(), "/v1/traces");
                            assert_eq!(request.headers()["content-type"], "application/x-protobuf");
                            let body = request.into_body().collect().await.unwrap().to_bytes();
                            let export = ExportTraceServiceRequest::decode(body).unwrap();
                            *counted.lock().unwrap() += 1;
                            kept.lock().unwrap().extend(spans_of(&export));
                            told.notify_waiters();
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                                Bytes::new(),
                            )))
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            spans,
            arrived,
            hold,
            exports,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits until `count` spans match `wanted`, and returns them.
    pub async fn wait_for(&self, count: usize, wanted: impl Fn(&Got) -> bool) -> Vec<Got> {
        let found = self.within(WAIT, count, wanted).await;
        found.unwrap_or_else(|| {
            panic!(
                "fewer than {count} matching spans arrived; got {:#?}",
                self.spans.lock().unwrap()
            )
        })
    }

    /// The spans matching `wanted` once there are `count` of them, or `None` when fewer
    /// arrive within `wait`.
    pub async fn within(
        &self,
        wait: std::time::Duration,
        count: usize,
        wanted: impl Fn(&Got) -> bool,
    ) -> Option<Vec<Got>> {
        tokio::time::timeout(wait, async {
            loop {
                let arrived = self.arrived.notified();
                let hits: Vec<Got> = self
                    .spans
                    .lock()
                    .unwrap()
                    .iter()
                    .filter(|g| wanted(g))
                    .cloned()
                    .collect();
                if hits.len() >= count {
                    return hits;
                }
                arrived.await;
            }
        })
        .await
        .ok()
    }
}

pub fn spans_of(export: &ExportTraceServiceRequest) -> Vec<Got> {
    let mut out = Vec::new();
    for resource in &export.resource_spans {
        let resource_attributes = resource
            .resource
            .as_ref()
            .map(|r| attributes(&r.attributes))
            .unwrap_or_default();
        for scope in &resource.scope_spans {
            for span in &scope.spans {
                out.push(Got {
                    service: resource_attributes
                        .get("service.name")
                        .cloned()
                        .unwrap_or_default(),
                    instance: resource_attributes
                        .get("service.instance.id")
                        .cloned()
                        .unwrap_or_default(),
                    name: span.name.clone(),
                    kind: span.kind,
                    trace_id: span.trace_id.clone(),
                    span_id: span.span_id.clone(),
                    parent_span_id: span.parent_span_id.clone(),
                    attributes: attributes(&span.attributes),
                    links: span
                        .links
                        .iter()
                        .map(|l| (l.trace_id.clone(), l.span_id.clone()))
                        .collect(),
                    events: span.events.iter().map(|e| e.name.clone()).collect(),
                    status: span.status.as_ref().map_or(0, |s| s.code),
                });
            }
        }
    }
    out
}

pub fn attributes(
    list: &[opentelemetry_proto::tonic::common::v1::KeyValue],
) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Any::StringValue(s)) => s.clone(),
                Some(Any::IntValue(i)) => i.to_string(),
                Some(Any::BoolValue(b)) => b.to_string(),
                Some(Any::DoubleValue(d)) => d.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

/// A client span's context: a fresh trace id, so each test's spans are told apart.
pub fn client_span(tag: u8) -> TraceParent {
    let mut trace_id = [0u8; 16];
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    trace_id[..8].copy_from_slice(
        &u64::try_from(nanos % u128::from(u64::MAX))
            .unwrap()
            .to_be_bytes(),
    );
    trace_id[8..12].copy_from_slice(&std::process::id().to_be_bytes());
    trace_id[15] = tag;
    TraceParent::new(
        trace_id,
        [0xc1, 0x1e, 0x47, 0, 0, 0, 0, tag],
        TraceParent::SAMPLED,
    )
    .unwrap()
}

pub fn in_trace(parent: TraceParent) -> impl Fn(&Got) -> bool {
    move |g| g.trace_id == parent.trace_id()
}

/// The attributes a `tools/call` span has by the semantic conventions for MCP.
pub fn assert_call_span(span: &Got, parent: TraceParent, tool: &str, revision: &str) {
    assert_eq!(span.name, format!("tools/call {tool}"), "{span:#?}");
    assert_eq!(span.kind, SERVER, "{span:#?}");
    assert_eq!(span.trace_id, parent.trace_id(), "{span:#?}");
    assert_eq!(span.parent_span_id, parent.parent_id(), "{span:#?}");
    let a = &span.attributes;
    assert_eq!(a["mcp.method.name"], "tools/call", "{span:#?}");
    assert_eq!(a["gen_ai.tool.name"], tool, "{span:#?}");
    assert_eq!(a["gen_ai.operation.name"], "execute_tool", "{span:#?}");
    assert_eq!(a["mcp.protocol.version"], revision, "{span:#?}");
    assert!(a.contains_key("jsonrpc.request.id"), "{span:#?}");
    assert_eq!(a["outcome"], "ok", "{span:#?}");
}
