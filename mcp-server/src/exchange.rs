//! The [`Exchange`]: what a handler knows about, and can do within, the call it serves.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use mcp_adapters::{Adapter, ClientContext, Failure, LogLevel, Operation, Revision};
use mcp_hub::{EventLog, Namespace, StateStore};
use mcp_wire::jsonrpc::Id;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};

use crate::ask::{Answer, AnswerAction, Question};
use crate::error::Interrupt;
use crate::state::random_id;

/// Where a call's messages go before its final response: notifications and pushed requests.
pub(crate) type Sink = mpsc::UnboundedSender<Value>;

/// A cancellation signal shared by a call and whoever may cancel it.
#[derive(Clone, Debug)]
pub(crate) struct CancelHandle(Arc<watch::Sender<bool>>);

impl CancelHandle {
    pub(crate) fn new() -> Self {
        Self(Arc::new(watch::channel(false).0))
    }

    pub(crate) fn cancel(&self) {
        self.0.send_replace(true);
    }

    pub(crate) fn watcher(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }
}

/// How pushed questions travel: out on the call's sink, back through the event log under a
/// topic named for the question's id.
#[derive(Clone)]
pub(crate) struct Pusher {
    pub(crate) log: Arc<dyn EventLog>,
    pub(crate) namespace: Namespace,
    pub(crate) timeout: Duration,
}

/// The topic a reply to the pushed request `id` is published under.
pub(crate) fn reply_topic(namespace: &Namespace, id: &str) -> mcp_hub::Topic {
    namespace.topic(&format!("ask/{id}"))
}

/// The prefix of ids the server gives pushed requests.
pub(crate) const PUSH_ID_PREFIX: &str = "mcp-q-";

#[derive(Default)]
pub(crate) struct AskState {
    /// Answers available to this attempt (validated against the questions asked before, or
    /// received on this attempt).
    pub(crate) answers: BTreeMap<String, Answer>,
    /// Every question asked on earlier attempts (key to method), carried into new state.
    pub(crate) asked: BTreeMap<String, String>,
    /// Questions to send back, in the order asked.
    pub(crate) pending: Vec<(String, Question)>,
    /// Why the handler could not go on, if it could not.
    pub(crate) interrupt: Option<Interrupted>,
    /// State the handler wants back on the next attempt.
    pub(crate) saved_state: Option<Value>,
}

/// What stopped a handler.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Interrupted {
    NeedsInput,
    /// The question cannot be put (capability not declared, operation or revision cannot
    /// carry it): answer the call with this failure.
    Failed(Failure),
    Cancelled,
}

pub(crate) struct ExchangeInner {
    pub(crate) adapter: Adapter,
    pub(crate) operation: Operation,
    pub(crate) request_id: Option<Id>,
    pub(crate) client: ClientContext,
    pub(crate) progress_token: Option<Id>,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) sink: Sink,
    pub(crate) cancel: watch::Receiver<bool>,
    pub(crate) ask: Mutex<AskState>,
    pub(crate) previous_state: Option<Value>,
    pub(crate) push: Option<Pusher>,
    pub(crate) store: Arc<dyn StateStore>,
    pub(crate) namespace: Namespace,
}

/// What a handler receives about its call: revision, client, progress, logging, cancellation,
/// asking the user, and the state store.
///
/// Cheap to clone; every clone refers to the same call.
#[derive(Clone)]
pub struct Exchange {
    pub(crate) inner: Arc<ExchangeInner>,
}

impl fmt::Debug for Exchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exchange")
            .field("revision", &self.inner.adapter.revision())
            .field("operation", &self.inner.operation)
            .field("request_id", &self.inner.request_id)
            .finish_non_exhaustive()
    }
}

impl Exchange {
    pub(crate) fn new(inner: ExchangeInner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The protocol revision of this call.
    pub fn revision(&self) -> Revision {
        self.inner.adapter.revision()
    }

    /// The revision's adapter (its flags say what the revision can do).
    pub fn adapter(&self) -> Adapter {
        self.inner.adapter
    }

    /// The request id of this call.
    pub fn request_id(&self) -> Option<&Id> {
        self.inner.request_id.as_ref()
    }

    /// The client's `Implementation` (`{name, version, ...}`), when known. On revisions with a
    /// handshake it is the one given at `initialize`, kept for the connection.
    pub fn client_info(&self) -> Option<&Value> {
        self.inner.client.info.as_ref()
    }

    /// The client's capabilities: declared at `initialize` (kept for the connection), or in
    /// this request's `_meta` on 2026-07-28, where silence means none.
    pub fn client_capabilities(&self) -> Option<&Map<String, Value>> {
        self.inner.client.capabilities.as_ref()
    }

    /// Reports progress, if the client asked for it (sent a progress token); otherwise does
    /// nothing. `message` is dropped on revisions without it (2024-11-05).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.inner.progress_token else {
            return;
        };
        self.send(
            self.inner
                .adapter
                .progress_notification(token, progress, total, message),
        );
    }

    /// The log level the client asked for, if any: `logging/setLevel` on the connection, or
    /// this request's `_meta` on 2026-07-28.
    pub fn log_level(&self) -> Option<LogLevel> {
        self.inner.log_level
    }

    /// Sends a log message (`notifications/message`) if the client asked for logs at `level`
    /// or below; otherwise does nothing.
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) {
        self.log_to(level, None, data);
    }

    /// Like [`log`](Self::log), naming the logger.
    pub fn log_to(&self, level: LogLevel, logger: Option<&str>, data: impl Into<Value>) {
        let Some(threshold) = self.inner.log_level else {
            return;
        };
        if level < threshold {
            return;
        }
        self.send(
            self.inner
                .adapter
                .log_notification(level, data.into(), logger),
        );
    }

    fn send(&self, message: Value) {
        // The call may be over (its stream closed): a late notification is dropped.
        let _ = self.inner.sink.send(message);
    }

    /// The call was cancelled (the client sent `notifications/cancelled`, or closed the
    /// stream).
    pub fn is_cancelled(&self) -> bool {
        *self.inner.cancel.borrow()
    }

    /// Waits until the call is cancelled.
    pub async fn cancelled(&self) {
        let mut watcher = self.inner.cancel.clone();
        // An error means the canceller is gone: the call can no longer be cancelled.
        if watcher.wait_for(|c| *c).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// The handle-based state store (namespaced), for handlers that keep their own state.
    pub fn store(&self) -> &Arc<dyn StateStore> {
        &self.inner.store
    }

    /// The namespace this call's keys and topics live in.
    pub fn namespace(&self) -> &Namespace {
        &self.inner.namespace
    }

    /// The state this handler saved with [`save_state`](Self::save_state) on the attempt
    /// before, when the call is a retry after a question.
    pub fn state(&self) -> Option<&Value> {
        self.inner.previous_state.as_ref()
    }

    /// Saves `state` for the next attempt of this call, when a question interrupts this one.
    /// It stays on the server; the client only carries an opaque id.
    pub fn save_state(&self, state: Value) {
        self.lock().saved_state = Some(state);
    }

    /// The key was answered (on an earlier attempt, or earlier in this one).
    pub fn answered(&self, key: &str) -> bool {
        self.lock().answers.contains_key(key)
    }

    /// Asks the client (and through it, the user) `question` under `key`, by whatever means
    /// the revision has, and returns the answer.
    ///
    /// It returns at once when `key` is already answered. Otherwise:
    ///
    /// - where the question is the result (2026-07-28) or rides in the tool call (2025-03-26,
    ///   2024-11-05), it returns [`Interrupt::NeedsInput`]: pass it on with `?`. The call is
    ///   answered with the question, and the handler runs again from the start when the answer
    ///   comes, so work before the last `ask` may run more than once;
    /// - where the question is pushed (2025-06-18, 2025-11-25), it sends the request and waits
    ///   for the reply (a JSON-RPC error reply or a timeout is a refusal: `cancel`);
    /// - a client that did not declare the capability, an operation that cannot carry a
    ///   question on this revision, or a transport without a way to push gives
    ///   [`Interrupt::CannotAsk`].
    pub async fn ask(&self, key: &str, question: Question) -> Result<Answer, Interrupt> {
        if self.is_cancelled() {
            return Err(self.stop(Interrupted::Cancelled));
        }
        if let Some(answer) = self.lock().answers.get(key) {
            return Ok(answer.clone());
        }
        let adapter = self.inner.adapter;
        if let Err(failure) = adapter.check_ask(
            self.inner.operation,
            question.as_request(),
            &self.inner.client,
        ) {
            return Err(self.stop(Interrupted::Failed(failure)));
        }
        if adapter.can_push_ask() {
            let Some(push) = self.inner.push.clone() else {
                return Err(self.stop(Interrupted::Failed(Failure::internal(
                    "this transport cannot carry a question to the client",
                ))));
            };
            let answer = self.push(&push, &question).await?;
            self.lock().answers.insert(key.to_owned(), answer.clone());
            return Ok(answer);
        }
        let mut state = self.lock();
        if !state.pending.iter().any(|(k, _)| k == key) {
            state.pending.push((key.to_owned(), question));
        }
        state.interrupt = Some(Interrupted::NeedsInput);
        Err(Interrupt::NeedsInput)
    }

    async fn push(&self, push: &Pusher, question: &Question) -> Result<Answer, Interrupt> {
        let fail = |what: &str| {
            self.stop(Interrupted::Failed(Failure::internal(format!(
                "the question could not be sent: {what}"
            ))))
        };
        let id = match random_id() {
            Ok(id) => format!("{PUSH_ID_PREFIX}{id}"),
            Err(err) => return Err(fail(&err.to_string())),
        };
        let request = match self
            .inner
            .adapter
            .pushed_request(Id::String(id.clone()), question.as_request())
        {
            Ok(request) => request,
            Err(failure) => return Err(self.stop(Interrupted::Failed(failure))),
        };
        let topic = reply_topic(&push.namespace, &id);
        // Take the position first, so a reply that comes before the first poll is still read.
        let cursor = match push.log.position(&topic).await {
            Ok(cursor) => cursor,
            Err(err) => return Err(fail(&err.to_string())),
        };
        if self.inner.sink.send(request).is_err() {
            return Err(self.stop(Interrupted::Cancelled));
        }
        let deadline = tokio::time::Instant::now() + push.timeout;
        let mut cancel = self.inner.cancel.clone();
        let outcome = loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            if remaining.is_zero() {
                break Ok(Answer::refused(AnswerAction::Cancel));
            }
            let events = tokio::select! {
                events = push.log.poll(&topic, cursor, remaining) => events,
                _ = cancel.wait_for(|c| *c) => break Err(self.stop(Interrupted::Cancelled)),
            };
            match events {
                Ok(events) => {
                    if let Some(event) = events.first() {
                        break Ok(Answer::from_reply(
                            question.kind(),
                            &decode_reply(&event.payload),
                        ));
                    }
                }
                Err(err) => break Err(fail(&err.to_string())),
            }
        };
        let _ = push.log.delete(&topic).await;
        outcome
    }

    fn stop(&self, why: Interrupted) -> Interrupt {
        let interrupt = match &why {
            Interrupted::NeedsInput => Interrupt::NeedsInput,
            Interrupted::Failed(failure) => Interrupt::CannotAsk(failure.message.clone()),
            Interrupted::Cancelled => Interrupt::Cancelled,
        };
        self.lock().interrupt = Some(why);
        interrupt
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, AskState> {
        // A handler that panicked while holding the lock leaves consistent data behind: every
        // update is a single insert or assignment.
        self.inner
            .ask
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A reply as published to the question's topic: `{"result": ...}` or `{"error": ...}`.
pub(crate) fn encode_reply(outcome: &Result<Value, mcp_wire::jsonrpc::ErrorObject>) -> Bytes {
    let value = match outcome {
        Ok(result) => json!({"result": result}),
        Err(error) => json!({"error": {"code": error.code, "message": error.message}}),
    };
    Bytes::from(value.to_string())
}

fn decode_reply(payload: &[u8]) -> Result<Value, mcp_wire::jsonrpc::ErrorObject> {
    let refused = || {
        Err(mcp_wire::jsonrpc::ErrorObject::internal_error(
            "unreadable reply",
        ))
    };
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(mut reply)) => match reply.remove("result") {
            Some(result) => Ok(result),
            None => refused(),
        },
        _ => refused(),
    }
}
