//! The task that serves every waiting poll of one hub with a single blocking `XREAD`.
//!
//! A poll that found nothing registers a [`Watch`] (stream key, cursor, reply channel). The
//! task keeps one dedicated connection blocked in `XREAD BLOCK` over every watched stream,
//! each from the oldest cursor watching it. When entries arrive it hands them to the watches
//! they concern. A new watch interrupts the block with `CLIENT UNBLOCK` sent over the ordinary
//! connection, so the next `XREAD` includes it at once. When the connection fails, every watch
//! gets the error and the task reconnects with backoff when it next has watches.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Client, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::bounded;
use super::reply::{self, Row, StreamRows};
use crate::BackendError;
use crate::Cursor;

/// How long one `XREAD` blocks before it is issued again (which also drops abandoned watches).
const BLOCK: Duration = Duration::from_secs(5);
/// First and longest pause between failed reconnection attempts.
const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// First and longest pause between `CLIENT UNBLOCK` attempts that found nothing blocked yet.
const MIN_UNBLOCK_RETRY: Duration = Duration::from_millis(1);
const MAX_UNBLOCK_RETRY: Duration = Duration::from_millis(100);

pub(super) type WatchReply = Result<Arc<Vec<Row>>, BackendError>;

/// A poll waiting for entries of `key` after `after`.
pub(super) struct Watch {
    pub(super) key: Vec<u8>,
    pub(super) after: Cursor,
    pub(super) reply: oneshot::Sender<WatchReply>,
}

/// The dedicated connection and its Redis client id (for `CLIENT UNBLOCK`).
pub(super) struct Waiter {
    connection: MultiplexedConnection,
    client_id: i64,
}

pub(super) struct Dispatcher {
    client: Client,
    control: ConnectionManager,
    waiter: Option<Waiter>,
    requests: mpsc::UnboundedReceiver<Watch>,
    command_timeout: Duration,
    max_batch: usize,
    watches: HashMap<Vec<u8>, Vec<(Cursor, oneshot::Sender<WatchReply>)>>,
    backoff: Duration,
    retry_at: Option<Instant>,
}

/// Opens a connection for blocking reads: no response timeout of its own, since `XREAD BLOCK`
/// answers late by design; the dispatcher bounds every call itself.
pub(super) async fn connect(client: &Client, timeout: Duration) -> Result<Waiter, BackendError> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(None);
    let mut connection = bounded(
        timeout,
        "connecting for waits",
        client.get_multiplexed_async_connection_with_config(&config),
    )
    .await?;
    let client_id: i64 = bounded(
        timeout,
        "identifying the wait connection",
        redis::cmd("CLIENT").arg("ID").query_async(&mut connection),
    )
    .await?;
    Ok(Waiter {
        connection,
        client_id,
    })
}

impl Dispatcher {
    pub(super) fn new(
        client: Client,
        control: ConnectionManager,
        waiter: Waiter,
        requests: mpsc::UnboundedReceiver<Watch>,
        command_timeout: Duration,
        max_batch: usize,
    ) -> Self {
        Self {
            client,
            control,
            waiter: Some(waiter),
            requests,
            command_timeout,
            max_batch,
            watches: HashMap::new(),
            backoff: MIN_BACKOFF,
            retry_at: None,
        }
    }

    fn add(&mut self, watch: Watch) {
        self.watches
            .entry(watch.key)
            .or_default()
            .push((watch.after, watch.reply));
    }

    /// Forgets watches whose poll has returned (timed out or dropped).
    fn prune(&mut self) {
        self.watches.retain(|_, waiting| {
            waiting.retain(|(_, reply)| !reply.is_closed());
            !waiting.is_empty()
        });
    }

    fn fail_all(&mut self, err: &BackendError) {
        for (_, waiting) in self.watches.drain() {
            for (_, reply) in waiting {
                let _ = reply.send(Err(err.clone()));
            }
        }
    }

    /// Hands fresh entries to the watches they concern; keeps the others.
    fn deliver(&mut self, streams: Vec<StreamRows>) {
        for (key, rows) in streams {
            let Some(newest) = rows.last().map(|row| row.id.key()) else {
                continue;
            };
            let Some(waiting) = self.watches.get_mut(&key) else {
                continue;
            };
            let rows = Arc::new(rows);
            let mut kept = Vec::with_capacity(waiting.len());
            for (after, reply) in waiting.drain(..) {
                if newest > after.key() {
                    let _ = reply.send(Ok(Arc::clone(&rows)));
                } else {
                    kept.push((after, reply));
                }
            }
            *waiting = kept;
        }
    }

    /// One `XREAD` over every watched stream, interrupted when new watches arrive. Returns
    /// `None` when the hub is gone.
    async fn read_once(&mut self, waiter: &mut Waiter) -> Option<Result<Value, BackendError>> {
        let mut command = redis::cmd("XREAD");
        command
            .arg("COUNT")
            .arg(self.max_batch)
            .arg("BLOCK")
            .arg(BLOCK.as_millis() as u64)
            .arg("STREAMS");
        let keys: Vec<&Vec<u8>> = self.watches.keys().collect();
        for key in &keys {
            command.arg(&key[..]);
        }
        for key in &keys {
            let oldest = self.watches[*key]
                .iter()
                .map(|(after, _)| *after)
                .min_by_key(|after| after.key())
                .unwrap_or(reply::START);
            command.arg(oldest.to_string());
        }
        let mut connection = waiter.connection.clone();
        let mut read = pin!(bounded(
            BLOCK + self.command_timeout,
            "waiting for entries",
            command.query_async::<Value>(&mut connection),
        ));
        // Idle until a watch arrives; then unblock, retrying until Redis had the read blocked.
        let mut unblock_wanted = false;
        let mut unblocked = false;
        let mut retry = MIN_UNBLOCK_RETRY;
        loop {
            tokio::select! {
                biased;
                result = &mut read => return Some(result),
                request = self.requests.recv() => match request {
                    Some(watch) => {
                        self.add(watch);
                        unblock_wanted = !unblocked;
                    }
                    None => return None,
                },
                () = tokio::time::sleep(retry), if unblock_wanted => {
                    retry = (retry * 2).min(MAX_UNBLOCK_RETRY);
                }
            }
            if unblock_wanted {
                let mut control = self.control.clone();
                let done = bounded(
                    self.command_timeout,
                    "interrupting a wait",
                    redis::cmd("CLIENT")
                        .arg("UNBLOCK")
                        .arg(waiter.client_id)
                        .query_async::<i64>(&mut control),
                )
                .await;
                if matches!(done, Ok(1)) {
                    unblocked = true;
                    unblock_wanted = false;
                }
            }
        }
    }
}

/// The dispatcher's life: until every handle of the hub is dropped.
pub(super) async fn run(mut dispatcher: Dispatcher) {
    loop {
        dispatcher.prune();
        if dispatcher.watches.is_empty() {
            match dispatcher.requests.recv().await {
                Some(watch) => dispatcher.add(watch),
                None => return,
            }
            continue;
        }
        while let Ok(watch) = dispatcher.requests.try_recv() {
            dispatcher.add(watch);
        }
        let mut waiter = match dispatcher.waiter.take() {
            Some(waiter) => waiter,
            None => {
                if let Some(at) = dispatcher.retry_at
                    && Instant::now() < at
                {
                    tokio::select! {
                        request = dispatcher.requests.recv() => match request {
                            Some(watch) => dispatcher.add(watch),
                            None => return,
                        },
                        () = tokio::time::sleep_until(at) => {}
                    }
                    continue;
                }
                match connect(&dispatcher.client, dispatcher.command_timeout).await {
                    Ok(waiter) => {
                        dispatcher.backoff = MIN_BACKOFF;
                        dispatcher.retry_at = None;
                        waiter
                    }
                    Err(err) => {
                        dispatcher.fail_all(&err);
                        dispatcher.retry_at = Some(Instant::now() + dispatcher.backoff);
                        dispatcher.backoff = (dispatcher.backoff * 2).min(MAX_BACKOFF);
                        continue;
                    }
                }
            }
        };
        let Some(result) = dispatcher.read_once(&mut waiter).await else {
            return;
        };
        match result.and_then(reply::streams) {
            Ok(streams) => {
                dispatcher.deliver(streams);
                dispatcher.waiter = Some(waiter);
            }
            Err(err) => {
                // The connection is in doubt: drop it, tell every waiting poll, reconnect later.
                dispatcher.fail_all(&err);
            }
        }
    }
}
