//! Long-lived notifications: `subscriptions/listen` on 2026-07-28, `resources/subscribe` and the
//! standalone stream before.

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use mcp_adapters::Operation;
use mcp_wire::jsonrpc::{Id, Message, Notification, Request};
use mcp_wire::names::method;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::client::{CallOptions, Client, Inner};
use crate::error::{Error, ErrorKind};
use crate::listeners::Subscriptions;
use crate::listeners::{Filter, ListenEnd, Registered, StreamState};
use crate::transport::refusal;
use crate::transport::{Delivery, Outbound, OutboundKind, TransportError};

/// A stream of the notifications asked for with [`Client::listen`]. Dropping it ends the
/// subscription (closing the listen stream, or `notifications/cancelled` on stdio).
///
/// The stream ends when the subscription does; [`Listener::end`] then says why, so that an
/// application can tell a server that ended the subscription from one that went away.
///
/// ```no_run
/// # async fn example(client: mcp_client::Client) -> Result<(), mcp_client::Error> {
/// use futures::StreamExt;
/// use mcp_client::{ListenEnd, Subscriptions};
///
/// let mut listener = client
///     .listen(Subscriptions::new().tools_changed().resource("config://app"))
///     .await?;
/// while let Some(notification) = listener.next().await {
///     println!("{}", notification.method);
/// }
/// if let Some(ListenEnd::Lost(why)) = listener.end() {
///     eprintln!("the server went away ({why}); connect again to go on listening");
/// }
/// # Ok(())
/// # }
/// ```
pub struct Listener {
    rx: mpsc::Receiver<Notification>,
    dropped: Arc<std::sync::atomic::AtomicU64>,
    end: Arc<std::sync::OnceLock<ListenEnd>>,
    inner: Weak<Inner>,
    slot: u64,
    task: Option<JoinHandle<()>>,
    accepted: Option<Value>,
    cancel: Option<Id>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("accepted", &self.accepted)
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// How many notifications this listener lost because it fell behind: at most
    /// [`crate::ClientBuilder::max_queued`] wait for it, and later ones are dropped while its
    /// queue is full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What the server agreed to send (the `notifications` of its acknowledgement, 2026-07-28).
    pub fn accepted(&self) -> Option<&Value> {
        self.accepted.as_ref()
    }

    /// The state of the standalone stream this listener's notifications come on, to watch it
    /// close and reopen (`None` when the client is gone). Only Streamable HTTP on the
    /// handshake revisions has one; elsewhere it stays [`StreamState::Connecting`].
    pub fn stream_state(&self) -> Option<tokio::sync::watch::Receiver<StreamState>> {
        self.inner
            .upgrade()
            .map(|inner| inner.stream_state.subscribe())
    }

    /// Why the stream ended; `None` while it goes on. Notifications that arrived before the end
    /// are still delivered first.
    pub fn end(&self) -> Option<&ListenEnd> {
        self.end.get()
    }

    fn new(registered: Registered, inner: &Arc<Inner>) -> Self {
        Self {
            rx: registered.rx,
            dropped: registered.dropped,
            end: registered.end,
            inner: Arc::downgrade(inner),
            slot: registered.slot,
            task: None,
            accepted: None,
            cancel: None,
        }
    }
}

impl Stream for Listener {
    type Item = Notification;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        let last = inner.remove_listener(self.slot);
        if let Some(id) = self.cancel.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            let inner = inner.clone();
            handle.spawn(async move {
                let params = json!({"requestId": id, "reason": "listener dropped"});
                let _ = inner
                    .notify(method::NOTIFICATION_CANCELLED, Some(params))
                    .await;
            });
        }
        if last
            && let Some(task) = inner
                .get_stream
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
        {
            task.abort();
        }
    }
}

impl Client {
    /// Subscribes to notifications: one `subscriptions/listen` request on 2026-07-28;
    /// `resources/subscribe` per URI and the standalone stream (resumed with `Last-Event-ID`
    /// where the revision allows) before. Every notification also reaches `on_notification`.
    ///
    /// Resolves only once the notifications can arrive: on 2026-07-28 when the server's
    /// acknowledgement came; on Streamable HTTP before that when the standalone GET stream was
    /// answered with an event stream (or with an error status such as 405: the server offers
    /// none, and notifications come only on the streams of calls), and only then are the URIs
    /// subscribed, so an update sent right after a subscription is not lost. A server
    /// may still push a request or notification as soon as `listen` returns.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Timeout`] when the acknowledgement or the GET stream's answer takes longer
    /// than the client's timeout; [`ErrorKind::Transport`] when the server could not be reached
    /// for the GET stream (while other listeners exist, the client keeps retrying it in the background); the
    /// server's refusal of `subscriptions/listen` or `resources/subscribe`.
    pub async fn listen(&self, subscriptions: Subscriptions) -> Result<Listener, Error> {
        let adapter = self.adapter();
        let inner = &self.inner;
        if let Some(listen) = adapter.method(Operation::Listen) {
            let mut notifications = serde_json::Map::new();
            for (flag, name) in [
                (subscriptions.tools, "toolsListChanged"),
                (subscriptions.prompts, "promptsListChanged"),
                (subscriptions.resources, "resourcesListChanged"),
            ] {
                if flag {
                    notifications.insert(name.into(), Value::Bool(true));
                }
            }
            if !subscriptions.uris.is_empty() {
                notifications.insert("resourceSubscriptions".into(), json!(subscriptions.uris));
            }
            let id = inner.new_id();
            let registered = inner.add_listener(
                Some(id.clone()),
                Filter {
                    subs: subscriptions,
                },
            );
            let slot = registered.slot;
            let params = inner.decorate_public(adapter, json!({"notifications": notifications}));
            let headers = inner.headers_public(adapter, listen, Some(&params))?;
            let body = mcp_wire::jsonrpc::encode(&Message::Request(Request {
                id: id.clone(),
                method: mcp_wire::jsonrpc::method_name(listen),
                params: Some(params),
            }));
            let outbound = Outbound {
                kind: OutboundKind::Request(id.clone()),
                body: Bytes::from(body),
                headers,
                raw_answer: false,
            };
            let delivery = match inner.transport.send(outbound).await {
                Ok(d) => d,
                Err(TransportError::Status {
                    status,
                    content_type,
                    body,
                    retry_after_secs,
                    ..
                }) => {
                    inner.remove_listener(slot);
                    let error = refusal(content_type.as_deref(), &body);
                    let said = crate::transport::excerpt(&body);
                    return Err(Error::refused(
                        error,
                        Some(status),
                        said.as_deref(),
                        crate::limited::retry_after_wait(retry_after_secs),
                    ));
                }
                Err(e) => {
                    inner.remove_listener(slot);
                    return Err(e.into());
                }
            };
            let Delivery::Stream(mut stream) = delivery else {
                inner.remove_listener(slot);
                return Err(Error::protocol(
                    "the server accepted subscriptions/listen without a stream",
                ));
            };
            let weak = Arc::downgrade(inner);
            let listen_id = id.clone();
            let task = tokio::spawn(async move {
                let mut why = ListenEnd::Lost("the listen stream closed".into());
                while let Some(item) = stream.next().await {
                    let Some(inner) = weak.upgrade() else { return };
                    match item {
                        Ok(inbound) => match inbound.message {
                            Message::Notification(n) => inner.dispatch_notification(n),
                            Message::Request(r) => inner.clone().answer_request(r).await,
                            Message::Response(r)
                                if r.id.as_ref() == Some(&listen_id) || r.id.is_none() =>
                            {
                                why = ListenEnd::Ended;
                                break;
                            }
                            Message::Response(_) => {}
                        },
                        Err(e) => {
                            why = ListenEnd::Lost(e.to_string());
                            break;
                        }
                    }
                }
                // The subscription ended: close the listener's stream, saying why.
                if let Some(inner) = weak.upgrade() {
                    inner.end_listener(slot, why);
                }
            });
            let mut listener = Listener::new(registered, inner);
            listener.task = Some(task);
            listener.cancel = (!inner.info.request_streams).then(|| id.clone());
            // Wait for the acknowledgement, which names what the server will send.
            let timeout = inner.config.timeout;
            let first = tokio::time::timeout(timeout, listener.rx.recv()).await;
            match first {
                Ok(Some(n)) if n.method == method::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED => {
                    listener.accepted = n
                        .params
                        .as_ref()
                        .and_then(|p| p.get("notifications"))
                        .cloned();
                }
                Ok(Some(n)) => {
                    return Err(Error::protocol(format!(
                        "listen stream began with {} instead of an acknowledgement",
                        n.method
                    )));
                }
                Ok(None) => {
                    return Err(Error::protocol(
                        "the listen stream ended before its acknowledgement",
                    ));
                }
                Err(_) => return Err(Error::timeout(timeout)),
            }
            return Ok(listener);
        }
        // Handshake revisions: register the listener and open the standalone stream first, so
        // that an update sent right after a subscription's answer has somewhere to go; then
        // subscribe per URI.
        let registered = inner.add_listener(
            None,
            Filter {
                subs: subscriptions.clone(),
            },
        );
        let listener = Listener::new(registered, inner);
        if inner.info.request_streams && adapter.features().has_get_stream {
            let mut state = {
                let mut running = inner.get_stream.lock().unwrap_or_else(|e| e.into_inner());
                if running.as_ref().is_none_or(JoinHandle::is_finished) {
                    inner.stream_state.send_replace(StreamState::Connecting);
                    *running = Some(tokio::spawn(get_stream(Arc::downgrade(inner))));
                }
                inner.stream_state.subscribe()
            };
            let timeout = inner.config.timeout;
            let opened = tokio::time::timeout(
                timeout,
                state.wait_for(|s| !matches!(s, StreamState::Connecting)),
            )
            .await;
            let failure = match opened {
                Err(_) => Some(Error::timeout(timeout)),
                Ok(Ok(state)) => match &*state {
                    StreamState::Failed(reason) => Some(Error::new(
                        ErrorKind::Transport,
                        format!("could not open the notification stream: {reason}"),
                    )),
                    _ => None,
                },
                // The client is gone.
                Ok(Err(_)) => Some(Error::closed()),
            };
            if let Some(e) = failure {
                return Err(e);
            }
        }
        if let Some(subscribe) = adapter.method(Operation::Subscribe) {
            for uri in &subscriptions.uris {
                self.request_with(subscribe, Some(json!({"uri": uri})), CallOptions::new())
                    .await?;
            }
        }
        Ok(listener)
    }
}

/// Keeps the standalone GET stream open while listeners exist, resuming after the last event id
/// where the revision allows it.
async fn get_stream(weak: Weak<Inner>) {
    let mut last_event_id: Option<String> = None;
    let mut failures = 0u32;
    // A new session was started since the stream was last open (at most one per outage).
    let mut restarted = false;
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let adapter = inner.adapter();
        let headers = inner.headers_public(adapter, "", None).unwrap_or_default();
        let resume = if adapter.features().sse_resumable {
            last_event_id.clone()
        } else {
            None
        };
        let generation = inner.session_generation();
        let opened = inner.transport.open_stream(headers, resume).await;
        let mut stream = match opened {
            Ok(stream) => {
                inner.stream_state.send_replace(StreamState::Open);
                restarted = false;
                stream
            }
            Err(TransportError::Status { status: 405, .. }) => {
                inner.stream_state.send_replace(StreamState::Unavailable);
                return;
            }
            // The server lost the session: start a new one (unless a call already did), then
            // open the stream on it. A stream cannot resume across sessions.
            // (Also after failed attempts: a restarted server refuses connections first.)
            Err(TransportError::Status { status: 404, .. })
                if adapter.has_sessions() && !restarted =>
            {
                restarted = true;
                last_event_id = None;
                let client = Client {
                    inner: inner.clone(),
                };
                if let Err(e) = client.reinitialize(generation).await {
                    tracing::debug!(error = %e, "could not start a new session for the stream");
                    inner
                        .stream_state
                        .send_replace(StreamState::Failed(e.to_string()));
                    inner.end_shared_listeners(&ListenEnd::Lost(format!(
                        "the server forgot the session and a new one could not be started: {e}"
                    )));
                    return;
                }
                continue;
            }
            Err(e) => {
                failures += 1;
                tracing::debug!(error = %e, failures, "could not open the notification stream");
                // A status is the server's answer that there is no stream for us (as 405 is, in
                // other words); anything else is a failure to reach it.
                let state = if matches!(e, TransportError::Status { .. }) {
                    StreamState::Unavailable
                } else {
                    StreamState::Failed(e.to_string())
                };
                let lost = matches!(state, StreamState::Failed(_));
                inner.stream_state.send_replace(state);
                if failures > 5 {
                    // Given up: a listener waiting on this stream would wait forever.
                    if lost {
                        inner.end_shared_listeners(&ListenEnd::Lost(e.to_string()));
                    }
                    return;
                }
                drop(inner);
                tokio::time::sleep(Duration::from_millis(200 << failures.min(5))).await;
                continue;
            }
        };
        drop(inner);
        failures = 0;
        let mut pause = Duration::from_millis(100);
        while let Some(item) = stream.next().await {
            let Some(inner) = weak.upgrade() else { return };
            match item {
                Err(TransportError::Interrupted {
                    last_event_id: last,
                    retry_ms,
                }) => {
                    last_event_id = Some(last);
                    if let Some(ms) = retry_ms {
                        pause = Duration::from_millis(ms.min(30_000));
                    }
                }
                Ok(inbound) => {
                    if inbound.event_id.is_some() {
                        last_event_id = inbound.event_id;
                    }
                    match inbound.message {
                        Message::Notification(n) => inner.dispatch_notification(n),
                        Message::Request(r) => inner.clone().answer_request(r).await,
                        Message::Response(_) => {}
                    }
                }
                Err(_) => break,
            }
        }
        // The server closed the stream (SSE polling, a restart): reconnect after a pause.
        if let Some(inner) = weak.upgrade() {
            inner.stream_state.send_replace(StreamState::Connecting);
        }
        tokio::time::sleep(pause).await;
    }
}
