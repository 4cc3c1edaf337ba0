//! The streams a transport delivers to its listeners: which changes a connection or session
//! wants, and the hub subscription that carries them.

use super::*;

/// Which changes one listener receives.
///
/// Default is nothing: add the list changes and resource URIs the listener wants. A 2026-07-28
/// `subscriptions/listen` builds one from its request; a legacy GET stream usually takes
/// [`all_list_changes`](Self::all_list_changes) plus the session's subscribed URIs
/// ([`Context::subscriptions`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotificationFilter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: BTreeSet<String>,
}

impl NotificationFilter {
    /// A filter that lets nothing through.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every list change (tools, prompts, resources).
    pub fn all_list_changes() -> Self {
        Self {
            tools: true,
            prompts: true,
            resources: true,
            uris: BTreeSet::new(),
        }
    }

    /// Whether `notifications/tools/list_changed` gets through. Default is `false`.
    #[must_use]
    pub fn tools_list_changed(mut self, on: bool) -> Self {
        self.tools = on;
        self
    }

    /// Whether `notifications/prompts/list_changed` gets through. Default is `false`.
    #[must_use]
    pub fn prompts_list_changed(mut self, on: bool) -> Self {
        self.prompts = on;
        self
    }

    /// Whether `notifications/resources/list_changed` gets through. Default is `false`.
    #[must_use]
    pub fn resources_list_changed(mut self, on: bool) -> Self {
        self.resources = on;
        self
    }

    /// Lets `notifications/resources/updated` for `uri` through (exact match). Default is no
    /// URI.
    #[must_use]
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.uris.insert(uri.into());
        self
    }

    /// Lets updates of every URI in `uris` through.
    #[must_use]
    pub fn resources(mut self, uris: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.uris.extend(uris.into_iter().map(Into::into));
        self
    }

    /// Nothing gets through.
    pub fn is_empty(&self) -> bool {
        !self.tools && !self.prompts && !self.resources && self.uris.is_empty()
    }

    /// Whether `change` gets through.
    pub fn matches(&self, change: &Change) -> bool {
        match change {
            Change::ResourceUpdated { uri } => self.uris.contains(uri),
            Change::ToolsListChanged => self.tools,
            Change::PromptsListChanged => self.prompts,
            Change::ResourcesListChanged => self.resources,
        }
    }
}

/// Every change published in one namespace, from a cursor on, with the cursor of each: the
/// raw feed under [`NotificationStream`].
///
/// Events the server does not relay (foreign payloads on the topic) are skipped. The stream
/// ends only after an error, which it yields first (see [`Subscription`]); start again from
/// [`cursor`](Self::cursor) to go on without loss or duplicates.
pub struct ChangeStream {
    inner: Subscription,
    /// The `traceparent` of the span that published the change read last, if it carried one.
    cause: Option<String>,
}

impl fmt::Debug for ChangeStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChangeStream")
            .field("cursor", &self.inner.cursor())
            .finish_non_exhaustive()
    }
}

impl ChangeStream {
    /// The cursor of the last event read (or the starting cursor).
    pub fn cursor(&self) -> Cursor {
        self.inner.cursor()
    }

    /// The changes, each with the `traceparent` of the span that published it when it
    /// carries one (see [`trace_link::delivery_span`](crate::trace_link::delivery_span)).
    pub(crate) fn traced(self) -> Traced {
        Traced(self)
    }
}

/// A [`ChangeStream`] whose items carry their publisher's `traceparent`.
pub(crate) struct Traced(ChangeStream);

impl Stream for Traced {
    type Item = Result<(Cursor, Change, Option<String>), NotifyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let changes = &mut self.0;
        changes.poll_next_unpin(cx).map(|item| {
            item.map(|item| item.map(|(cursor, change)| (cursor, change, changes.cause.take())))
        })
    }
}

impl Stream for ChangeStream {
    type Item = Result<(Cursor, Change), NotifyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match self.inner.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err.into()))),
                Poll::Ready(Some(Ok(event))) => {
                    if let Some((change, cause)) = Change::from_payload(&event.payload) {
                        self.cause = cause;
                        return Poll::Ready(Some(Ok((event.cursor, change))));
                    }
                    tracing::debug!(cursor = %event.cursor, "an event this server does not relay; skipped");
                }
            }
        }
    }
}

impl FusedStream for ChangeStream {
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }
}

/// What a [`NotificationStream`] delivers, and how it encodes it.
#[derive(Clone, Debug)]
enum Audience {
    /// A fixed filter on one revision.
    Fixed {
        adapter: Adapter,
        filter: NotificationFilter,
        subscription: Option<Id>,
    },
    /// A connection with a handshake: its revision, its capabilities, its subscriptions, read
    /// at each event.
    Connection(Context),
}

/// The notifications one listener receives, encoded for its revision, each with its cursor.
///
/// Items are `Ok((cursor, message))`: send `message` (a JSON-RPC notification) with `cursor`
/// as its SSE event id (`id: {cursor}`); a `Last-Event-ID` that comes back parses with
/// `str::parse::<Cursor>()` and resumes with [`Server::notifications`]. An `Err` item ends the
/// stream (a backend failure); resume from [`cursor`](Self::cursor).
pub struct NotificationStream {
    changes: ChangeStream,
    server: Server,
    audience: Audience,
}

impl fmt::Debug for NotificationStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NotificationStream")
            .field("cursor", &self.changes.cursor())
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl NotificationStream {
    /// The cursor of the last event read (delivered or filtered out), or the starting cursor:
    /// resuming from it loses nothing and repeats nothing.
    pub fn cursor(&self) -> Cursor {
        self.changes.cursor()
    }

    fn encode(&self, change: &Change) -> Option<Value> {
        match &self.audience {
            Audience::Fixed {
                adapter,
                filter,
                subscription,
            } => filter
                .matches(change)
                .then(|| change.to_message(*adapter, subscription.as_ref())),
            Audience::Connection(ctx) => {
                let adapter: Adapter = ctx.revision()?.into();
                if adapter.features().has_listen {
                    return None;
                }
                let wanted = match change {
                    Change::ResourceUpdated { uri } => ctx.is_subscribed(uri),
                    list => {
                        let registry = self.server.live.current();
                        advertises_list_changed(&registry.view(adapter).capabilities, list)
                    }
                };
                wanted.then(|| change.to_message(adapter, None))
            }
        }
    }
}

impl Stream for NotificationStream {
    type Item = Result<(Cursor, Value), NotifyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match self.changes.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err))),
                Poll::Ready(Some(Ok((cursor, change)))) => {
                    if let Some(message) = self.encode(&change) {
                        // Sent to this stream's client: a span in the publisher's trace.
                        drop(crate::trace_link::delivery_span(
                            change.method(),
                            self.changes.cause.as_deref(),
                        ));
                        return Poll::Ready(Some(Ok((cursor, message))));
                    }
                }
            }
        }
    }
}

impl FusedStream for NotificationStream {
    fn is_terminated(&self) -> bool {
        self.changes.is_terminated()
    }
}

impl Server {
    /// Every change published in `namespace`, strictly after `after`, or from now when
    /// `after` is `None`.
    ///
    /// The cursor is checked before this returns: one whose following events fell out of
    /// retention gives [`NotifyError::CursorExpired`], one the log did not issue
    /// [`NotifyError::UnknownCursor`].
    pub async fn changes(
        &self,
        namespace: &Namespace,
        after: Option<Cursor>,
    ) -> Result<ChangeStream, NotifyError> {
        let inner =
            Subscription::start(self.settings().log.clone(), namespace.topic(TOPIC), after).await?;
        Ok(ChangeStream { inner, cause: None })
    }

    /// The notifications a listener on `adapter`'s revision wants (`filter`), published in
    /// `namespace` strictly after `after` (or from now), encoded for the revision, each with
    /// its cursor.
    ///
    /// This is the GET stream of the legacy Streamable HTTP revisions: send each item as an
    /// SSE event whose id is the cursor; a client that reconnects with `Last-Event-ID` gets,
    /// from any worker sharing the event log, every later event exactly once, as long as the
    /// log still retains them ([`RetentionConfig`](mcp_hub::RetentionConfig): 1000 events or
    /// one hour per topic by default). Beyond that the call fails with
    /// [`NotifyError::CursorExpired`], and a cursor the log never issued with
    /// [`NotifyError::UnknownCursor`]; a transport then usually starts from now (`None`).
    ///
    /// `filter` is fixed for the life of the stream; a transport whose subscriptions change
    /// while the stream is open reads [`changes`](Self::changes) and filters each event
    /// itself, or uses [`connection_notifications`](Self::connection_notifications).
    pub async fn notifications(
        &self,
        namespace: &Namespace,
        adapter: Adapter,
        filter: NotificationFilter,
        after: Option<Cursor>,
    ) -> Result<NotificationStream, NotifyError> {
        Ok(NotificationStream {
            changes: self.changes(namespace, after).await?,
            server: self.clone(),
            audience: Audience::Fixed {
                adapter,
                filter,
                subscription: None,
            },
        })
    }

    /// The notifications of one connection with a handshake (stdio, or an HTTP session kept
    /// in this process), in its namespace: list changes the current registry advertises
    /// `listChanged` for, and updates of the URIs the connection subscribed to
    /// (`resources/subscribe`), checked at each event, so a subscription made while the
    /// stream is open takes effect at once. Nothing is delivered before `initialize`, nor on
    /// revisions with `subscriptions/listen` (2026-07-28). Cursors as for
    /// [`notifications`](Self::notifications).
    pub async fn connection_notifications(
        &self,
        ctx: &Context,
        after: Option<Cursor>,
    ) -> Result<NotificationStream, NotifyError> {
        Ok(NotificationStream {
            changes: self.changes(ctx.namespace(), after).await?,
            server: self.clone(),
            audience: Audience::Connection(ctx.clone()),
        })
    }

    /// The filter of a legacy session's GET stream: the list changes `adapter`'s revision is
    /// told are announced (`listChanged` in the current capabilities), plus updates of
    /// `subscribed` (the session's [`Context::subscriptions`]).
    pub fn session_filter(
        &self,
        adapter: Adapter,
        subscribed: impl IntoIterator<Item = impl Into<String>>,
    ) -> NotificationFilter {
        let registry = self.live.current();
        let capabilities = &registry.view(adapter).capabilities;
        NotificationFilter::new()
            .tools_list_changed(advertises_list_changed(
                capabilities,
                &Change::ToolsListChanged,
            ))
            .prompts_list_changed(advertises_list_changed(
                capabilities,
                &Change::PromptsListChanged,
            ))
            .resources_list_changed(advertises_list_changed(
                capabilities,
                &Change::ResourcesListChanged,
            ))
            .resources(subscribed)
    }
}
