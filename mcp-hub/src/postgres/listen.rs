//! The hub's background task: one listener connection for `LISTEN`, and the periodic sweep.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_postgres::{AsyncMessage, NoTls};

use super::Inner;
use super::pool::bounded;
use crate::sql::Waiters;

/// First and longest pause between failed attempts to connect the listener.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How often a quiet listener connection is checked with a query.
const CHECK_EVERY: Duration = Duration::from_secs(15);

pub(super) struct Listener {
    pub(super) config: tokio_postgres::Config,
    pub(super) channel: String,
    pub(super) waiters: Arc<Waiters>,
    pub(super) listening: Arc<AtomicBool>,
    pub(super) timeout: Duration,
}

impl Listener {
    fn set_listening(&self, up: bool) {
        self.listening.store(up, Ordering::Release);
        // Up: whatever was published while down is read now. Down: waiters go to fallback polls.
        self.waiters.wake_all();
    }
}

/// Runs until the hub is dropped (`stopped` resolves).
pub(super) async fn run(listener: Listener, hub: Weak<Inner>, mut stopped: oneshot::Receiver<()>) {
    let sweep_every = match hub.upgrade() {
        Some(inner) => inner.config.sweep_interval,
        None => return,
    };
    let mut next_sweep = Instant::now() + sweep_every;
    let mut backoff = MIN_BACKOFF;
    loop {
        // Connect and LISTEN.
        let connected = bounded(listener.timeout, "listening", async {
            let (client, mut connection) = listener
                .config
                .connect(NoTls)
                .await
                .map_err(|e| super::classify("connecting the listener", e))?;
            let (messages, received) = mpsc::unbounded_channel();
            tokio::spawn(async move {
                let mut stream = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                while let Some(message) = stream.next().await {
                    match message {
                        Ok(AsyncMessage::Notification(note)) => {
                            if messages.send(note.payload().to_owned()).is_err() {
                                return;
                            }
                        }
                        Ok(_) => {}
                        Err(_) => return,
                    }
                }
            });
            client
                .batch_execute(&format!("LISTEN {}", listener.channel))
                .await
                .map_err(|e| super::classify("listening", e))?;
            Ok((client, received))
        })
        .await;
        let Ok((client, mut received)) = connected else {
            let retry = Instant::now() + backoff;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            tokio::select! {
                _ = &mut stopped => return,
                () = tokio::time::sleep_until(retry) => {}
            }
            continue;
        };
        backoff = MIN_BACKOFF;
        listener.set_listening(true);
        let mut next_check = Instant::now() + CHECK_EVERY;
        loop {
            tokio::select! {
                _ = &mut stopped => return,
                note = received.recv() => match note {
                    Some(topic) if topic.is_empty() => listener.waiters.wake_all(),
                    Some(topic) => listener.waiters.wake(&topic),
                    None => break,
                },
                () = tokio::time::sleep_until(next_check) => {
                    let alive = bounded(listener.timeout, "checking the listener", async {
                        client
                            .simple_query("SELECT 1")
                            .await
                            .map_err(|e| super::classify("checking the listener", e))
                    })
                    .await;
                    if alive.is_err() {
                        break;
                    }
                    next_check = Instant::now() + CHECK_EVERY;
                },
                () = tokio::time::sleep_until(next_sweep) => {
                    let Some(inner) = hub.upgrade() else { return };
                    // A failed sweep is tried again at the next interval.
                    let _ = inner.sweep().await;
                    drop(inner);
                    next_sweep = Instant::now() + sweep_every;
                },
            }
        }
        drop(client);
        listener.set_listening(false);
    }
}
