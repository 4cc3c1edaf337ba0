//! A [`Transport`] wrapper that records every message in both directions, for validation
//! against the negotiated revision's official schema.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use http::HeaderMap;
use mcp_adapters::Revision;
use mcp_client::transport::{
    BoxFuture, Delivery, MessageStream, Outbound, Transport, TransportError, TransportInfo,
};
use mcp_wire::jsonrpc::Message;
use serde_json::Value;

use crate::schema::{SchemaError, Schemas};

/// One message seen on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Wire {
    /// The client sent it (else the server did).
    pub from_client: bool,
    /// The message as JSON.
    pub message: Value,
}

/// Every message both ways, shared between the transport and the test.
#[derive(Debug, Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Wire>>>);

impl Log {
    fn push(&self, from_client: bool, message: Value) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(Wire {
            from_client,
            message,
        });
    }

    fn push_inbound(&self, message: &Message) {
        let bytes = mcp_wire::jsonrpc::encode(message);
        match serde_json::from_slice(&bytes) {
            Ok(value) => self.push(false, value),
            Err(e) => self.push(false, Value::String(format!("unencodable: {e}"))),
        }
    }

    /// A copy of everything recorded so far.
    pub fn messages(&self) -> Vec<Wire> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The methods of the requests and notifications one side sent, in order.
    pub fn methods(&self, from_client: bool) -> Vec<String> {
        self.messages()
            .into_iter()
            .filter(|w| w.from_client == from_client)
            .filter_map(|w| w.message.get("method")?.as_str().map(str::to_owned))
            .collect()
    }

    /// Every schema violation of the recorded messages, each against `revision` (or, for a
    /// client request naming its own `_meta` protocol version, that revision).
    ///
    /// Requests whose method is in `off_schema` were sent outside the schema on purpose (an
    /// unknown method): only their JSON-RPC envelope is checked.
    pub fn violations(
        &self,
        schemas: &Schemas,
        revision: Revision,
        off_schema: &[&str],
    ) -> Result<Vec<String>, SchemaError> {
        let messages = self.messages();
        let mut problems = Vec::new();
        for wire in &messages {
            let message = &wire.message;
            let own = message
                .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                .and_then(Value::as_str)
                .and_then(Revision::parse);
            let revision = own.unwrap_or(revision);
            let method = if message.get("method").is_none() {
                // A response: find the request it answers, sent the other way.
                let id = message.get("id");
                messages
                    .iter()
                    .filter(|w| w.from_client != wire.from_client)
                    .find(|w| w.message.get("method").is_some() && w.message.get("id") == id)
                    .and_then(|w| w.message.get("method")?.as_str())
            } else {
                None
            };
            // The answer to a modern request is checked against the request's revision.
            let revision = match (method, message.get("id")) {
                (Some(_), Some(id)) => messages
                    .iter()
                    .find(|w| w.from_client != wire.from_client && w.message.get("id") == Some(id))
                    .and_then(|w| {
                        w.message
                            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                    })
                    .and_then(Value::as_str)
                    .and_then(Revision::parse)
                    .unwrap_or(revision),
                _ => revision,
            };
            let deliberate = message
                .get("method")
                .and_then(Value::as_str)
                .is_some_and(|m| off_schema.contains(&m));
            let found = if deliberate {
                schemas.check(revision, "JSONRPCRequest", message)?
            } else {
                schemas.check_message(revision, message, wire.from_client, method)?
            };
            for problem in found {
                let who = if wire.from_client { "client" } else { "server" };
                problems.push(format!("{revision} {who} message {message}: {problem}"));
            }
        }
        Ok(problems)
    }
}

/// Wraps a transport and records what passes through it.
#[derive(Debug)]
pub struct Recording<T> {
    inner: T,
    log: Log,
}

impl<T: Transport> Recording<T> {
    /// Records `inner`'s traffic into a new log.
    pub fn new(inner: T) -> (Self, Log) {
        let log = Log::default();
        (
            Self {
                inner,
                log: log.clone(),
            },
            log,
        )
    }
}

fn record_stream(log: Log, stream: MessageStream) -> MessageStream {
    Box::pin(stream.map(move |item| {
        if let Ok(inbound) = &item {
            log.push_inbound(&inbound.message);
        }
        item
    }))
}

impl<T: Transport> Transport for Recording<T> {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        match serde_json::from_slice::<Value>(&message.body) {
            Ok(value) => self.log.push(true, value),
            Err(e) => self.log.push(true, Value::String(format!("not JSON: {e}"))),
        }
        let log = self.log.clone();
        Box::pin(async move {
            match self.inner.send(message).await? {
                Delivery::Stream(stream) => Ok(Delivery::Stream(record_stream(log, stream))),
                other => Ok(other),
            }
        })
    }

    fn incoming(&self) -> Option<MessageStream> {
        let stream = self.inner.incoming()?;
        Some(record_stream(self.log.clone(), stream))
    }

    fn open_stream(
        &self,
        headers: HeaderMap,
        last_event_id: Option<String>,
    ) -> BoxFuture<'_, Result<MessageStream, TransportError>> {
        let log = self.log.clone();
        Box::pin(async move {
            let stream = self.inner.open_stream(headers, last_event_id).await?;
            Ok(record_stream(log, stream))
        })
    }

    fn info(&self) -> TransportInfo {
        self.inner.info()
    }

    fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }

    fn reset_session(&self) {
        self.inner.reset_session();
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        self.inner.close()
    }
}
