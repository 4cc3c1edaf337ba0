//! The connection a message came on: its legacy state (the revision an `initialize`
//! selected, the client, the log level, subscriptions), its owner (principal, session) and the
//! requests in flight on it.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_adapters::Revision;
use mcp_hub::Namespace;
use mcp_wire::jsonrpc::Id;

use super::session::Session;
use super::telemetry;
use crate::FastMap;
use crate::exchange::{CancelHandle, Owner};

/// What a transport knows about the connection a message came on.
///
/// A stdio connection keeps legacy state for its whole life: the revision an `initialize`
/// selected, the client's identity and capabilities, and the log level. Cheap to clone; clones
/// share that state.
#[derive(Clone)]
pub struct Context {
    pub(super) inner: Arc<ContextInner>,
}

pub(super) struct ContextInner {
    pub(super) namespace: Namespace,
    pub(super) can_push: bool,
    connection: Mutex<Session>,
    in_flight: Mutex<InFlightIds>,
    owner: Mutex<Owner>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("namespace", &self.inner.namespace)
            .field("revision", &self.revision())
            .finish_non_exhaustive()
    }
}

impl Default for Context {
    fn default() -> Self {
        Self::connection()
    }
}

impl Context {
    /// A dual-era connection (stdio): a first `server/discover` or any request with a
    /// `_meta` protocol version is served statelessly; an `initialize` selects its revision
    /// for the rest of the connection. Questions can be pushed (the transport carries
    /// server-to-client requests).
    pub fn connection() -> Self {
        Self::build(true)
    }

    /// A context whose transport cannot carry server-to-client requests (say, an HTTP
    /// response with a plain JSON body): pushed questions are refused.
    pub fn without_push() -> Self {
        Self::build(false)
    }

    fn build(can_push: bool) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                namespace: Namespace::root(),
                can_push,
                connection: Mutex::new(Session::default()),
                in_flight: Mutex::default(),
                owner: Mutex::default(),
            }),
        }
    }

    /// Sets the namespace (tenant) of request state and question topics. Default is the root
    /// namespace.
    #[must_use]
    pub fn with_namespace(self, namespace: Namespace) -> Self {
        let inner = ContextInner {
            namespace,
            can_push: self.inner.can_push,
            connection: Mutex::new(Session::default()),
            in_flight: Mutex::default(),
            owner: Mutex::new(self.owner()),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Sets the authenticated principal of the requests on this context (say `"<iss>|<sub>"`
    /// from a verified token), for a transport or middleware that authenticates. Default is
    /// none: nothing is bound to a principal.
    ///
    /// Request state (MRTR `requestState`, the `mcpState` argument) issued on this context
    /// is bound to it and refused (-32602) on a context with another principal or none, and
    /// replies to questions pushed on this context are delivered only from a context with the
    /// same principal. Set it before the context serves its first message; clones share it.
    #[must_use]
    pub fn with_principal(self, principal: impl Into<String>) -> Self {
        self.owner_mut().principal = Some(Arc::from(principal.into()));
        self
    }

    /// Binds the context to a verified access token's principal: its
    /// [`binding`](mcp_auth::Principal::binding) becomes the [`principal`](Self::principal),
    /// and handlers read the whole principal with [`Exchange::auth`](crate::Exchange::auth).
    #[must_use]
    pub fn with_auth(self, principal: Arc<mcp_auth::Principal>) -> Self {
        self.with_auth_listing(principal, false)
    }

    /// [`with_auth`](Self::with_auth); with `hide_tools`, `tools/list` shows only the tools
    /// the principal's scopes allow it to call.
    pub(crate) fn with_auth_listing(
        self,
        principal: Arc<mcp_auth::Principal>,
        hide_tools: bool,
    ) -> Self {
        let binding = Arc::from(principal.binding());
        self.with_auth_binding(principal, binding, hide_tools)
    }

    /// [`with_auth_listing`](Self::with_auth_listing) with the principal's binding already
    /// built (the resource server keeps it with the cached token).
    pub(crate) fn with_auth_binding(
        self,
        principal: Arc<mcp_auth::Principal>,
        binding: Arc<str>,
        hide_tools: bool,
    ) -> Self {
        {
            let mut owner = self.owner_mut();
            owner.principal = Some(binding);
            owner.auth = Some(crate::exchange::AuthPrincipal(principal, hide_tools));
        }
        self
    }

    /// Sets the transport's session id (an HTTP `Mcp-Session-Id`, an HTTP+SSE `sessionId`).
    /// Default is none. Replies to questions pushed on this context are delivered only from a
    /// context with the same session (and principal): a reply POSTed in another session is
    /// accepted by the transport but reaches nobody. Set it before the context serves its
    /// first message; clones share it.
    #[must_use]
    pub fn with_session(self, session: impl Into<String>) -> Self {
        self.owner_mut().session = Some(Arc::from(session.into()));
        self
    }

    /// [`with_session`](Self::with_session) with an id the transport already shares.
    pub(crate) fn with_shared_session(self, session: Arc<str>) -> Self {
        self.owner_mut().session = Some(session);
        self
    }

    /// Records the session id and the token's subject on a request's span.
    pub(crate) fn record_owner(&self, span: &tracing::Span) {
        let owner = self.owner_mut();
        if let Some(session) = &owner.session {
            span.record("mcp.session.id", telemetry::session_tag(session));
        }
        if let Some(auth) = &owner.auth {
            span.record("principal", auth.0.subject.as_str());
        }
    }

    /// The principal set with [`with_principal`](Self::with_principal).
    pub fn principal(&self) -> Option<String> {
        self.owner_mut().principal.as_deref().map(str::to_owned)
    }

    pub(super) fn owner(&self) -> Owner {
        self.owner_mut().clone()
    }

    fn owner_mut(&self) -> MutexGuard<'_, Owner> {
        self.inner
            .owner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The revision an `initialize` selected on this connection, if any.
    pub fn revision(&self) -> Option<Revision> {
        self.conn().adapter.map(|a| a.revision())
    }

    /// Cancels the in-flight request `id` (as `notifications/cancelled` does). Returns whether
    /// one was running.
    pub fn cancel(&self, id: &Id) -> bool {
        let handle = self.in_flight().get(id).cloned();
        handle.map(|h| h.cancel()).is_some()
    }

    /// Cancels every in-flight request (a transport shutting down).
    pub fn cancel_all(&self) {
        for handle in self.in_flight().handles() {
            handle.cancel();
        }
    }

    pub(super) fn conn(&self) -> MutexGuard<'_, Session> {
        self.inner
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn in_flight(&self) -> MutexGuard<'_, InFlightIds> {
        self.inner
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Context {
    /// A context for one HTTP request of a stored session (or of no session): the session's
    /// revision, client and log level, as if the connection had lived on. `can_push` says
    /// whether the response can carry server-to-client requests (an SSE stream).
    pub(crate) fn for_session(session: Session, can_push: bool, namespace: Namespace) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                namespace,
                can_push,
                connection: Mutex::new(session),
                in_flight: Mutex::default(),
                owner: Mutex::default(),
            }),
        }
    }

    /// Runs `f` on the session state as it is now, borrowed: comparing it with a stored
    /// record needs no copy.
    pub(crate) fn inspect_session<R>(&self, f: impl FnOnce(&Session) -> R) -> R {
        f(&self.conn())
    }
}

/// The requests in flight on a connection, by id, with their cancel handles. Most
/// connections (an HTTP request's) have one at a time: it is kept inline, and the hash table
/// is only used (and allocated) for more.
#[derive(Default)]
pub(super) struct InFlightIds {
    first: Option<(Id, CancelHandle)>,
    more: FastMap<Id, CancelHandle>,
}

impl InFlightIds {
    /// Registers `id`; `false` (and nothing changes) when it is already in flight.
    pub(super) fn insert(&mut self, id: Id, handle: CancelHandle) -> bool {
        if self.get(&id).is_some() {
            return false;
        }
        if self.first.is_none() {
            self.first = Some((id, handle));
        } else {
            self.more.insert(id, handle);
        }
        true
    }

    fn get(&self, id: &Id) -> Option<&CancelHandle> {
        match &self.first {
            Some((first, handle)) if first == id => Some(handle),
            _ => self.more.get(id),
        }
    }

    fn remove(&mut self, id: &Id) {
        if self.first.as_ref().is_some_and(|(first, _)| first == id) {
            self.first = None;
        } else {
            self.more.remove(id);
        }
    }

    fn handles(&self) -> impl Iterator<Item = &CancelHandle> {
        self.first
            .iter()
            .map(|(_, handle)| handle)
            .chain(self.more.values())
    }
}

/// A request id registered as in flight, until this is dropped.
pub(super) struct InFlight {
    pub(super) ctx: Context,
    pub(super) id: Id,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.ctx.in_flight().remove(&self.id);
    }
}

/// Subscriptions and listen streams of a connection.
impl Context {
    /// The namespace (tenant) of this connection: its request state, question topics and
    /// notifications.
    pub fn namespace(&self) -> &Namespace {
        &self.inner.namespace
    }

    /// The URIs this connection subscribed to with `resources/subscribe` (revisions with a
    /// handshake), sorted; an HTTP transport saves them in its session record.
    pub fn subscriptions(&self) -> Vec<String> {
        self.conn().subscriptions.iter().cloned().collect()
    }

    /// Whether this connection subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.conn().subscriptions.contains(uri)
    }

    /// Replaces the subscribed URIs (an HTTP transport restoring a session record).
    pub fn set_subscriptions(&self, uris: impl IntoIterator<Item = impl Into<String>>) {
        self.conn().subscriptions = uris.into_iter().map(Into::into).collect();
    }

    /// Ends this connection's open `subscriptions/listen` streams gracefully: each sends its
    /// listen result and ends. For a transport whose peer is leaving (end of stdin). It cannot
    /// be undone: a later listen on this connection is acknowledged and closed at once.
    pub fn close_listeners(&self) {
        self.conn().listeners().close();
    }

    pub(crate) fn add_subscription(&self, uri: String) {
        self.conn().subscriptions.insert(uri);
    }

    pub(crate) fn remove_subscription(&self, uri: &str) {
        self.conn().subscriptions.remove(uri);
    }

    pub(crate) fn listeners_closer(&self) -> crate::notifier::Closer {
        self.conn().listeners().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_ids_hold_one_inline_and_more_in_the_table() {
        let mut ids = InFlightIds::default();
        let (a, b, c) = (
            CancelHandle::new(),
            CancelHandle::new(),
            CancelHandle::new(),
        );
        assert!(ids.insert(Id::from(1), a.clone()));
        assert!(
            !ids.insert(Id::from(1), b.clone()),
            "an id is in flight once"
        );
        assert!(ids.insert(Id::from("two"), b.clone()));
        assert!(ids.insert(Id::from(3), c.clone()));
        assert!(!ids.insert(Id::from("two"), c.clone()));
        assert_eq!(ids.handles().count(), 3);
        // The inline one leaves; its id is free again, the others stay.
        ids.remove(&Id::from(1));
        assert!(ids.get(&Id::from(1)).is_none());
        assert!(ids.get(&Id::from("two")).is_some() && ids.get(&Id::from(3)).is_some());
        assert!(ids.insert(Id::from(1), a.clone()));
        ids.remove(&Id::from(3));
        ids.remove(&Id::from("nobody"));
        assert_eq!(ids.handles().count(), 2);
        // The handle found is the one registered under that id.
        ids.get(&Id::from("two")).unwrap().cancel();
        assert!(b.is_cancelled() && !a.is_cancelled());
    }
}
