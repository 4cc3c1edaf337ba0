//! Driving a call's POST stream that resumes on any worker: the call runs in its own task, each
//! event is logged on the hub first (`session::resume`) and then framed as SSE with its id,
//! the priming event comes first, and a long stream may be closed early so the client polls
//! (`HttpConfig::post_stream_poll_after`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use futures::stream::{self, BoxStream};
use mcp_adapters::{Adapter, Failure};
use mcp_wire::jsonrpc::Id;
use tokio::sync::{mpsc, watch};

use crate::http::Shared;
use crate::http::body;
use crate::session::resume::{CallLog, TAG_MESSAGE};

/// Resolves once the endpoint cancels its calls (no borrow of the signal outlives it).
async fn cancelled(cancelling: &mut watch::Receiver<bool>) {
    let _ = cancelling.wait_for(|c| *c).await;
}

/// The live side of a resumable call's stream, driven by its own task: what goes to the
/// client that posted, while it listens.
struct Driver {
    out: Option<mpsc::Sender<Bytes>>,
    call: Option<CallLog>,
    renew: tokio::time::Interval,
    cancelling: watch::Receiver<bool>,
}

impl Driver {
    /// Sends `bytes` to the client if it still listens, renewing the lease while a slow
    /// client holds the call back. `false` when the endpoint cancels its calls.
    async fn deliver(&mut self, bytes: Bytes) -> bool {
        let Self {
            out,
            call,
            renew,
            cancelling,
        } = self;
        loop {
            let Some(tx) = out.as_ref() else { return true };
            tokio::select! {
                sent = tx.send(bytes.clone()) => {
                    if sent.is_err() {
                        *out = None;
                    }
                    return true;
                }
                _ = renew.tick() => {
                    if let Some(call) = call.as_ref() {
                        call.renew().await;
                    }
                }
                () = cancelled(cancelling) => return false,
            }
        }
    }

    /// Logs one message of the call and sends it with its id.
    async fn message(&mut self, json: &[u8]) -> bool {
        let id = match &self.call {
            Some(call) => call.publish(TAG_MESSAGE, json).await,
            None => None,
        };
        self.deliver(body::event(None, id.as_deref(), json)).await
    }
}

/// The stream of a call whose reply is SSE and outlives its first item, on a revision whose
/// POST streams resume: the call runs in its own task and logs every event (see the module
/// documentation). `first` is the first message, `rest` the JSON of the others.
pub(crate) fn detached(
    shared: &Arc<Shared>,
    adapter: Adapter,
    session: Arc<str>,
    call_id: Option<Id>,
    first: Vec<u8>,
    mut rest: BoxStream<'static, Vec<u8>>,
) -> BoxStream<'static, Bytes> {
    let (tx, rx) = mpsc::channel(shared.server.settings().max_queued);
    let guard = shared.calls.start();
    let shared = shared.clone();
    tokio::spawn(async move {
        let _guard = guard;
        let polling = adapter.features().sse_polling;
        let call = CallLog::new(&shared.call_hub(), &session, call_id.clone());
        // The priming id first (a read), then the lease and the first event written at once:
        // what the client waits for costs one read and one write's time.
        let (call, priming_id, first_id) = match call {
            Some(call) => {
                let start = if polling {
                    call.start().await
                } else {
                    Some(String::new())
                };
                let (opened, first_id) =
                    futures::join!(call.open(), call.publish(TAG_MESSAGE, &first));
                match (opened, start) {
                    (true, Some(start)) => (Some(call), Some(start), first_id),
                    _ => (None, None, None),
                }
            }
            None => (None, None, None),
        };
        let lease = shared.config.post_stream_lease;
        let mut renew = tokio::time::interval((lease / 3).max(Duration::from_millis(1)));
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is now, and the lease was just taken.
        renew.tick().await;
        // Closing the POST stream early only makes sense where the client is told it may poll.
        let poll_after = shared
            .config
            .post_stream_poll_after
            .filter(|_| polling && call.is_some());
        let mut driver = Driver {
            out: Some(tx),
            call,
            renew,
            cancelling: shared.cancelling.subscribe(),
        };
        let mut live = true;
        if polling {
            let id = priming_id.as_deref().unwrap_or("0");
            live = driver
                .deliver(body::priming(id, shared.config.sse_retry_ms))
                .await;
        }
        let close_at = poll_after.map(|after| tokio::time::Instant::now() + after);
        if poll_after == Some(Duration::ZERO) {
            // The client reads the rest with GET.
            driver.out = None;
        }
        live = live
            && driver
                .deliver(body::event(None, first_id.as_deref(), &first))
                .await;
        drop(first);
        let close = async move {
            match close_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(close);
        let mut closed = poll_after.is_none();
        while live {
            tokio::select! {
                next = rest.next() => match next {
                    Some(json) => live = driver.message(&json).await,
                    None => break,
                },
                _ = driver.renew.tick() => {
                    if let Some(call) = &driver.call {
                        call.renew().await;
                    }
                }
                () = &mut close, if !closed => {
                    closed = true;
                    tracing::debug!("a long POST stream is closed; the client resumes with GET");
                    driver.out = None;
                }
                () = cancelled(&mut driver.cancelling) => live = false,
            }
        }
        if !live {
            // The shutdown deadline passed: the call is cancelled, and whoever follows it is
            // told so rather than left waiting.
            drop(rest);
            let failure = Failure::internal("the server shut down before the call ended");
            let error = adapter.encode_failure(call_id, &failure).to_bytes();
            let id = match &driver.call {
                Some(call) => call.publish(TAG_MESSAGE, &error).await,
                None => None,
            };
            if let Some(tx) = &driver.out {
                let _ = tx.try_send(body::event(None, id.as_deref(), &error));
            }
        }
        // The client's stream ends with the reply, not after the bookkeeping below.
        driver.out = None;
        if let Some(call) = &driver.call {
            call.finish().await;
        }
    });
    stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) }).boxed()
}
