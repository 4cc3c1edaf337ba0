//! The open GET streams of each session on one endpoint, bounded per session.

use std::sync::Arc;

use mcp_adapters::Failure;

/// The open Streamable HTTP GET streams of each session on this endpoint, at most
/// [`HttpConfig::max_streams_per_session`](crate::http::HttpConfig::max_streams_per_session) each. Taken once per GET, not per request.
pub(crate) struct StreamSlots {
    open: std::sync::Mutex<crate::FastMap<Arc<str>, usize>>,
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
            open: std::sync::Mutex::default(),
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
