//! [`Reply`]: the stream of messages one input produces.

use std::fmt;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use futures::stream::{FusedStream, Stream};

use super::Outgoing;
use crate::sink::Drain;

/// The messages one input produces, in order: whatever the handler sends first, then the
/// response (if the message gets one). Dropping it cancels the call.
pub struct Reply {
    driver: Option<BoxFuture<'static, Option<Outgoing>>>,
    final_message: Option<Outgoing>,
    rx: Drain,
    done: bool,
}

impl Reply {
    /// The stream of a call driven by `driver`, whose earlier messages arrive on `rx`.
    pub(super) fn new(driver: BoxFuture<'static, Option<Outgoing>>, rx: Drain) -> Self {
        Self {
            driver: Some(driver),
            final_message: None,
            rx,
            done: false,
        }
    }
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Stream for Reply {
    type Item = Outgoing;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Outgoing>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Poll::Ready(message) = this.rx.poll_recv(cx) {
            return Poll::Ready(Some(Outgoing::Message(message)));
        }
        if let Some(driver) = this.driver.as_mut() {
            match driver.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(final_message) => {
                    this.driver = None;
                    this.final_message = final_message;
                }
            }
        }
        // The call is over: hand out what it sent before its response, then the response.
        if let Some(message) = this.rx.try_recv() {
            return Poll::Ready(Some(Outgoing::Message(message)));
        }
        this.done = true;
        Poll::Ready(this.final_message.take())
    }
}

impl FusedStream for Reply {
    fn is_terminated(&self) -> bool {
        self.done
    }
}
