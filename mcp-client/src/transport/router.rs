//! Routing responses to waiting requests on a connection-shaped transport.

use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use super::{Inbound, MessageStream, TransportError};
use mcp_wire::jsonrpc::{Id, Message, Response};

type Sender = mpsc::UnboundedSender<Result<Inbound, TransportError>>;

/// Routes messages read from one duplex channel to the requests waiting for them.
///
/// A connection-shaped transport (stdio, HTTP+SSE, your own socket) reads every server message
/// from one place. It calls [`Router::register`] before sending a request and returns the stream
/// it gets as the request's [`super::Delivery::Stream`]; its reader calls [`Router::dispatch`]
/// for each message. A response goes to the stream of the request it answers; everything else
/// goes to [`Router::incoming`]. Dropping a request's stream unregisters it.
#[derive(Clone)]
pub struct Router {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
}

struct State {
    pending: HashMap<Id, Sender>,
    incoming: Option<Sender>,
    incoming_rx: Option<mpsc::UnboundedReceiver<Result<Inbound, TransportError>>>,
    closed: bool,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("Router")
            .field("pending", &state.pending.len())
            .field("closed", &state.closed)
            .finish()
    }
}

impl Default for Router {
    fn default() -> Self {
        Self::new()
    }
}

impl Router {
    /// A router with nothing pending.
    pub fn new() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    pending: HashMap::new(),
                    incoming: Some(tx),
                    incoming_rx: Some(rx),
                    closed: false,
                }),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the map inconsistent; keep going.
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a request about to be sent; its response will come on the returned stream.
    /// After [`Router::close`] the stream yields [`TransportError::Closed`] at once.
    pub fn register(&self, id: Id) -> MessageStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.lock();
        if state.closed {
            let _ = tx.send(Err(TransportError::Closed));
        } else {
            state.pending.insert(id.clone(), tx);
        }
        drop(state);
        Box::pin(Pending {
            rx,
            id: Some(id),
            router: self.clone(),
        })
    }

    /// The stream of messages no request is waiting for. Returns `Some` once.
    pub fn incoming(&self) -> Option<MessageStream> {
        let rx = self.lock().incoming_rx.take()?;
        Some(Box::pin(Incoming { rx }))
    }

    /// Routes one message read from the channel.
    pub fn dispatch(&self, inbound: Inbound) {
        let mut state = self.lock();
        match &inbound.message {
            Message::Response(Response { id: Some(id), .. }) => {
                if let Some(tx) = state.pending.remove(id) {
                    let _ = tx.send(Ok(inbound));
                } else {
                    tracing::debug!(%id, "response to a request nobody waits for");
                }
            }
            Message::Response(Response { id: None, .. }) => {
                // The server could not tell which request failed: fail every waiting one rather
                // than leave it hanging until its timeout.
                for (_, tx) in state.pending.drain() {
                    let _ = tx.send(Ok(inbound.clone()));
                }
            }
            _ => {
                if let Some(tx) = &state.incoming {
                    let _ = tx.send(Ok(inbound));
                }
            }
        }
    }

    /// Ends every waiting request with `error` (or [`TransportError::Closed`]) and ends the
    /// incoming stream. Later registrations fail at once.
    pub fn close(&self, error: Option<TransportError>) {
        let mut state = self.lock();
        state.closed = true;
        let mut error = error;
        for (_, tx) in state.pending.drain() {
            let e = error.take().unwrap_or(TransportError::Closed);
            let _ = tx.send(Err(e));
        }
        state.incoming = None;
    }

    fn unregister(&self, id: &Id) {
        self.lock().pending.remove(id);
    }
}

struct Pending {
    rx: mpsc::UnboundedReceiver<Result<Inbound, TransportError>>,
    id: Option<Id>,
    router: Router,
}

impl Stream for Pending {
    type Item = Result<Inbound, TransportError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.id.is_none() {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(item)) => {
                // A response or an error ends this request's stream.
                self.id = None;
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                self.id = None;
                Poll::Ready(Some(Err(TransportError::Closed)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.router.unregister(&id);
        }
    }
}

struct Incoming {
    rx: mpsc::UnboundedReceiver<Result<Inbound, TransportError>>,
}

impl Stream for Incoming {
    type Item = Result<Inbound, TransportError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use mcp_wire::jsonrpc::Notification;
    use serde_json::json;

    use super::*;

    fn response(id: Option<i64>) -> Inbound {
        Inbound::new(Message::Response(Response {
            id: id.map(Id::Number),
            outcome: Ok(json!({})),
        }))
    }

    #[tokio::test]
    async fn routes_by_id_and_the_rest_to_incoming() {
        let router = Router::new();
        let mut incoming = router.incoming().unwrap();
        assert!(router.incoming().is_none());
        let mut one = router.register(Id::Number(1));
        let mut two = router.register(Id::Number(2));
        router.dispatch(response(Some(2)));
        router.dispatch(Inbound::new(Message::Notification(Notification {
            method: "n".into(),
            params: None,
        })));
        router.dispatch(response(Some(1)));
        router.dispatch(response(Some(99)));
        assert_eq!(two.next().await.unwrap().unwrap(), response(Some(2)));
        assert!(two.next().await.is_none());
        assert_eq!(one.next().await.unwrap().unwrap(), response(Some(1)));
        let n = incoming.next().await.unwrap().unwrap();
        assert_eq!(n.message.method(), Some("n"));
    }

    #[tokio::test]
    async fn null_id_fails_every_waiting_request_and_close_ends_all() {
        let router = Router::new();
        let mut one = router.register(Id::Number(1));
        let mut two = router.register(Id::Number(2));
        router.dispatch(response(None));
        assert_eq!(one.next().await.unwrap().unwrap(), response(None));
        assert_eq!(two.next().await.unwrap().unwrap(), response(None));
        let mut three = router.register(Id::Number(3));
        router.close(None);
        assert!(matches!(
            three.next().await,
            Some(Err(TransportError::Closed))
        ));
        let mut four = router.register(Id::Number(4));
        assert!(matches!(
            four.next().await,
            Some(Err(TransportError::Closed))
        ));
    }

    #[tokio::test]
    async fn dropping_a_stream_unregisters_it() {
        let router = Router::new();
        drop(router.register(Id::Number(1)));
        assert!(router.lock().pending.is_empty());
    }
}
