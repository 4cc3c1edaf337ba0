//! The streams of sessions on one endpoint: the open GET streams of each session, bounded per
//! session, and the single streams (HTTP+SSE) this worker holds, with their sessions' lives.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use mcp_adapters::Failure;
use mcp_hub::{EventLog, Topic};
use tokio::sync::mpsc;

use crate::FastMap;
use crate::session::{Cancels, Hold, SessionError, Sessions};

/// The open Streamable HTTP GET streams of each session on this endpoint, at most
/// [`HttpConfig::max_streams_per_session`](crate::http::HttpConfig::max_streams_per_session) each. Taken once per GET, not per request.
pub(crate) struct StreamSlots {
    open: Mutex<FastMap<Arc<str>, usize>>,
    max: usize,
}

/// One open GET stream of a session; dropping it frees the slot.
pub(crate) struct StreamSlot {
    slots: Arc<StreamSlots>,
    session: Arc<str>,
}

impl StreamSlots {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            open: Mutex::default(),
            max: max.max(1),
        }
    }

    /// A slot for one more GET stream of `session`, or `None` when it has its maximum open.
    pub(crate) fn take(self: &Arc<Self>, session: &str) -> Option<StreamSlot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((key, count)) = open.get_key_value(session) {
            if *count >= self.max {
                return None;
            }
            let key = key.clone();
            *open.get_mut(&key)? += 1;
            return Some(StreamSlot {
                slots: self.clone(),
                session: key,
            });
        }
        let key: Arc<str> = Arc::from(session);
        open.insert(key.clone(), 1);
        Some(StreamSlot {
            slots: self.clone(),
            session: key,
        })
    }

    /// The failure a GET beyond the limit gets: 503, retry later.
    pub(crate) fn full(&self) -> Failure {
        Failure::unavailable(format!(
            "the session has its maximum of {} GET streams open; close one or retry later",
            self.max
        ))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&*self.session) {
            *count -= 1;
            if *count == 0 {
                open.remove(&*self.session);
            }
        }
    }
}

/// The most messages waiting in a local stream channel for a client that does not read; one
/// more ends the stream (the event log keeps 1000 per topic by default, alike).
pub(crate) const LOCAL_BACKLOG: usize = 1024;

/// The single streams this worker holds (HTTP+SSE: a session's one stream carries everything):
/// a channel into each, by session id, so the messages of requests that land here skip the
/// event log.
#[derive(Default)]
pub(crate) struct LocalStreams {
    senders: Mutex<FastMap<String, mpsc::Sender<Bytes>>>,
}

impl LocalStreams {
    fn lock(&self) -> MutexGuard<'_, FastMap<String, mpsc::Sender<Bytes>>> {
        self.senders.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens the channel of the stream of session `id`; its messages arrive on the receiver.
    fn register(&self, id: &str) -> mpsc::Receiver<Bytes> {
        let (sender, receiver) = mpsc::channel(LOCAL_BACKLOG);
        self.lock().insert(id.to_owned(), sender);
        receiver
    }

    /// The channel into the stream of session `id`, when this worker holds it.
    pub(crate) fn sender(&self, id: &str) -> Option<mpsc::Sender<Bytes>> {
        self.lock().get(id).cloned()
    }

    /// Forgets the channel of session `id`.
    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// Where the messages of one request of a session with a single stream go: into the stream's
/// local channel while this worker holds the stream, else (or from the first failed send on)
/// to the stream's topic, which the worker holding it reads. Every message of one request
/// takes the same path, so the order within a call holds.
pub(crate) struct Delivery<'a> {
    streams: &'a LocalStreams,
    sessions: &'a Sessions,
    log: &'a dyn EventLog,
    id: &'a str,
    pub(crate) local: Option<mpsc::Sender<Bytes>>,
    /// The stream's topic, named on the first publish.
    topic: Option<Topic>,
}

impl<'a> Delivery<'a> {
    /// Looks the stream of session `id` up once, for every message of the request; `local`
    /// is the channel an earlier look found (`None`: look now).
    pub(crate) fn new(
        streams: &'a LocalStreams,
        sessions: &'a Sessions,
        log: &'a dyn EventLog,
        id: &'a str,
        local: Option<Option<mpsc::Sender<Bytes>>>,
    ) -> Self {
        Self {
            streams,
            sessions,
            log,
            id,
            local: local.unwrap_or_else(|| streams.sender(id)),
            topic: None,
        }
    }

    /// Sends `message` into this worker's stream of the session, if it holds it and the
    /// stream takes it; else gives it back for the hub ([`send`](Self::send)).
    pub(crate) fn send_local(&mut self, message: Bytes) -> Result<(), Bytes> {
        let Some(local) = &self.local else {
            return Err(message);
        };
        match local.try_send(message) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(back)) => {
                // The stream went away: the rest of the request follows this message to the
                // hub.
                self.local = None;
                Err(back)
            }
            Err(mpsc::error::TrySendError::Full(back)) => {
                // The client has not read its stream for LOCAL_BACKLOG messages: the stream
                // ends (as when the event log's retention passes a slow reader), instead of
                // this worker buffering without bound.
                tracing::warn!("a client stopped reading its session's stream; ending it");
                self.streams.remove(self.id);
                self.local = None;
                Err(back)
            }
        }
    }

    /// Sends `message` into the local stream, else publishes it to the stream's topic.
    pub(crate) async fn send(&mut self, message: Bytes) {
        let Err(message) = self.send_local(message) else {
            return;
        };
        let topic = self
            .topic
            .get_or_insert_with(|| self.sessions.stream_topic(self.id));
        if let Err(err) = self.log.publish(topic, message).await {
            tracing::warn!(%err, "could not publish to a session's stream");
        }
    }
}

/// A session that lives as long as its one stream (HTTP+SSE): renewed while the stream is
/// open, even when no request comes for longer than the TTL, and deleted with its stream's
/// topic, its local channel and its cancellations when the stream ends (this drops).
pub(crate) struct StreamSession {
    sessions: Sessions,
    cancels: Arc<Cancels>,
    log: Arc<dyn EventLog>,
    streams: Arc<LocalStreams>,
    id: String,
    topic: Topic,
    renew: tokio::task::JoinHandle<()>,
    /// Keeps the session busy (never evicted) while its stream is open.
    _hold: Option<Hold>,
}

impl StreamSession {
    /// Takes over session `id` (held by `hold`) for its stream, and opens the stream's local
    /// channel; its messages arrive on the receiver. `renew_every` is the renewal period (a
    /// fraction of the TTL).
    pub(crate) fn open(
        sessions: &Sessions,
        cancels: &Arc<Cancels>,
        log: &Arc<dyn EventLog>,
        streams: &Arc<LocalStreams>,
        id: String,
        hold: Option<Hold>,
        renew_every: Duration,
    ) -> (Self, mpsc::Receiver<Bytes>) {
        let renew = {
            let sessions = sessions.clone();
            let id = id.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(renew_every).await;
                    match sessions.renew(&id).await {
                        Err(SessionError::NotFound) => return,
                        Err(err) => tracing::warn!(%err, "could not renew a stream's session"),
                        Ok(()) => {}
                    }
                }
            })
        };
        // Registered with no await before `Self` exists, so dropping it always removes it.
        let local = streams.register(&id);
        let session = Self {
            sessions: sessions.clone(),
            cancels: cancels.clone(),
            log: log.clone(),
            streams: streams.clone(),
            topic: sessions.stream_topic(&id),
            id,
            renew,
            _hold: hold,
        };
        (session, local)
    }
}

impl Drop for StreamSession {
    fn drop(&mut self) {
        self.renew.abort();
        self.streams.remove(&self.id);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (sessions, cancels, log) = (
            self.sessions.clone(),
            self.cancels.clone(),
            self.log.clone(),
        );
        let id = std::mem::take(&mut self.id);
        let topic = self.topic.clone();
        runtime.spawn(async move {
            cancels.forget(&id);
            let _ = sessions.delete(&id).await;
            let _ = log.delete(&topic).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Server;

    #[tokio::test]
    async fn a_stream_whose_client_stops_reading_is_ended_instead_of_buffered() {
        let server = Server::builder("overflow", "1").build().unwrap();
        let (sessions, _) = super::super::SessionConfig::default().build(&server);
        let streams = LocalStreams::default();
        let log = server.settings().log.clone();
        let id = "unread-stream";
        let topic = sessions.stream_topic(id);
        let before = log.position(&topic).await.unwrap();
        let mut receiver = streams.register(id);

        // A full backlog goes straight into the stream; the hub sees nothing.
        let mut delivery = Delivery::new(&streams, &sessions, &*log, id, None);
        for n in 0..LOCAL_BACKLOG {
            delivery.send(n.to_string().into()).await;
        }
        assert_eq!(log.position(&topic).await.unwrap(), before);
        assert!(streams.sender(id).is_some());

        // One more: the stream is given up (the message goes to the hub, as for a stream on
        // another worker) and later requests no longer find it here.
        delivery.send(Bytes::from_static(b"overflow")).await;
        assert_ne!(log.position(&topic).await.unwrap(), before);
        assert!(streams.sender(id).is_none());
        drop(delivery);

        // The stream drains what it holds, in order, then ends.
        for n in 0..LOCAL_BACKLOG {
            assert_eq!(receiver.recv().await, Some(Bytes::from(n.to_string())));
        }
        assert_eq!(receiver.recv().await, None);
    }
}
