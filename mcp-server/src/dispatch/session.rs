//! The one session type: a connection's protocol state.

use std::collections::BTreeSet;
use std::sync::Arc;

use mcp_adapters::{Adapter, ClientContext, LogLevel};

/// What `initialize`, `logging/setLevel` and `resources/subscribe` set on a connection, on
/// revisions with a handshake.
///
/// A stdio connection keeps one for its life, in its [`Context`](crate::Context). An HTTP
/// session is stored in the state store as its record (`session::SessionRecord`, the
/// serialized form of the same fields plus who owns the session), loaded into one of these
/// for each request, and saved back when a call changed it.
#[derive(Default)]
pub(crate) struct Session {
    /// The revision an `initialize` selected (or the stored session's).
    pub(crate) adapter: Option<Adapter>,
    /// The client's identity and capabilities from `initialize`; `None` when nothing is known.
    /// Shared with the exchanges of the connection's calls, which read it (no copy per call).
    pub(crate) client: Option<Arc<ClientContext>>,
    /// The level `logging/setLevel` set.
    pub(crate) log_level: Option<LogLevel>,
    /// URIs of `resources/subscribe`.
    pub(crate) subscriptions: BTreeSet<String>,
    /// Closes this connection's `subscriptions/listen` streams gracefully; made when first
    /// needed (most connections never listen). Lives in this process only: never stored.
    pub(crate) listeners: Option<crate::notifier::Closer>,
}

impl Session {
    /// The client's identity and capabilities (empty when it stated nothing).
    pub(crate) fn client(&self) -> &ClientContext {
        /// What a connection knows about a client that stated nothing.
        static NOTHING: ClientContext = ClientContext {
            info: None,
            capabilities: None,
        };
        self.client.as_deref().unwrap_or(&NOTHING)
    }

    /// The closer of this connection's listen streams, made when first asked for.
    pub(crate) fn listeners(&mut self) -> &crate::notifier::Closer {
        self.listeners.get_or_insert_with(Default::default)
    }
}

/// The client stated nothing (no identity, no capabilities).
pub(crate) fn stated_nothing(client: &ClientContext) -> bool {
    client.info.is_none() && client.capabilities.is_none()
}
