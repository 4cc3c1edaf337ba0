//! `resources/subscribe` and `unsubscribe` on a connection, the 2026-07-28
//! `subscriptions/listen` request, and stdio's delivery of a connection's notifications.

use super::*;
use crate::server::Served;

impl Served {
    /// Whether `uri` names a registered resource or matches a template.
    fn resource_exists(&self, uri: &str) -> bool {
        let registry = &*self.registry;
        registry.resource_index.contains_key(uri)
            || registry
                .templates
                .iter()
                .any(|t| t.parsed.matches(uri).is_some())
    }

    /// `resources/subscribe` (revisions with a handshake): kept in the connection's state.
    pub(crate) fn subscribe(&self, call: &Call, ctx: &Context) -> Done {
        let uri = call.target.clone().unwrap_or_default();
        if !self.resource_exists(&uri) {
            return Done::failure(Failure::resource_not_found(&uri));
        }
        ctx.add_subscription(uri);
        Done::value(json!({}))
    }

    /// `resources/unsubscribe`: forgets the URI (unsubscribing from one never subscribed to
    /// succeeds).
    pub(crate) fn unsubscribe(&self, call: &Call, ctx: &Context) -> Done {
        let uri = call.target.clone().unwrap_or_default();
        ctx.remove_subscription(&uri);
        Done::value(json!({}))
    }

    /// `subscriptions/listen` (2026-07-28): acknowledges the honoured subset of the request,
    /// then delivers the matching changes tagged with the request's id until the call is
    /// cancelled (the stream dropped, `notifications/cancelled`) or closed gracefully
    /// ([`Context::close_listeners`], [`Server::close_streams`]), which sends the result.
    pub(crate) async fn listen(
        &self,
        adapter: Adapter,
        call: &Call,
        ctx: &Context,
        sink: &crate::sink::Sink,
        cancel: &CancelHandle,
    ) -> Done {
        let Some(id) = call.id.clone() else {
            return Done::Silent;
        };
        let requested = call
            .params
            .get("notifications")
            .cloned()
            .unwrap_or_default();
        let capabilities = &self.registry.view(adapter).capabilities;
        let mut honoured = Map::new();
        let mut filter = NotificationFilter::new();
        for (key, change) in [
            ("toolsListChanged", Change::ToolsListChanged),
            ("promptsListChanged", Change::PromptsListChanged),
            ("resourcesListChanged", Change::ResourcesListChanged),
        ] {
            if requested[key] == json!(true) && advertises_list_changed(capabilities, &change) {
                honoured.insert(key.into(), json!(true));
                filter = match change {
                    Change::ToolsListChanged => filter.tools_list_changed(true),
                    Change::PromptsListChanged => filter.prompts_list_changed(true),
                    _ => filter.resources_list_changed(true),
                };
            }
        }
        if capabilities["resources"]["subscribe"] == json!(true)
            && let Some(uris) = requested["resourceSubscriptions"].as_array()
        {
            let kept: Vec<String> = uris
                .iter()
                .filter_map(Value::as_str)
                .filter(|uri| self.resource_exists(uri))
                .map(str::to_owned)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            if !kept.is_empty() {
                honoured.insert("resourceSubscriptions".into(), json!(kept));
                filter = filter.resources(kept);
            }
        }
        // The Tasks extension: status notifications of the listed tasks the caller owns, when
        // the request declared the extension.
        let mut task_ids = BTreeSet::new();
        if let (Some(engine), Some(requested_ids)) =
            (&self.settings().tasks, requested["taskIds"].as_array())
            && crate::dispatch::declared_extension(adapter, call, ctx, crate::TASKS_EXTENSION)
                .is_some()
        {
            let principal = ctx.principal();
            for task_id in requested_ids
                .iter()
                .filter_map(Value::as_str)
                .take(crate::task::MAX_LISTENED_TASKS)
            {
                if !task_ids.contains(task_id)
                    && engine
                        .owns(ctx.namespace(), task_id, principal.as_deref())
                        .await
                {
                    task_ids.insert(task_id.to_owned());
                }
            }
            if !task_ids.is_empty() {
                honoured.insert("taskIds".into(), json!(task_ids));
            }
        }
        let result = Done::value(json!({"_meta": {meta::SUBSCRIPTION_ID: id}}));
        if filter.is_empty() && task_ids.is_empty() {
            // Nothing to deliver: acknowledge the empty subset and close at once.
            let _ = sink
                .send_wait(adapter.subscriptions_acknowledged(&id, Value::Object(honoured)))
                .await;
            return result;
        }
        // Take the position before the acknowledgement, so every change after it is delivered.
        let mut events = match Subscription::start(
            self.settings().log.clone(),
            ctx.namespace().topic(TOPIC),
            None,
        )
        .await
        {
            Ok(events) => events,
            Err(err) => return Done::failure(Failure::internal(err.to_string())),
        };
        let _ = sink
            .send_wait(adapter.subscriptions_acknowledged(&id, Value::Object(honoured)))
            .await;
        let mut server_closed = self.live.closed.watcher();
        let mut connection_closed = ctx.listeners_closer().watcher();
        loop {
            let event = tokio::select! {
                biased;
                () = cancel.cancelled() => return Done::Silent,
                _ = server_closed.wait_for(|c| *c) => return result,
                _ = connection_closed.wait_for(|c| *c) => return result,
                next = events.next() => match next {
                    Some(Ok(event)) => event,
                    Some(Err(err)) => {
                        tracing::warn!(%err, "listen stream: the event log failed; closing it");
                        return result;
                    }
                    None => return result,
                },
            };
            let message = if let Some((change, cause)) = Change::from_payload(&event.payload) {
                if !filter.matches(&change) {
                    continue;
                }
                // Sent to this listener: a span in the publisher's trace.
                drop(crate::trace_link::delivery_span(
                    change.method(),
                    cause.as_deref(),
                ));
                change.to_message(adapter, Some(&id))
            } else if let Some((task_id, params)) = crate::task::task_notification(&event.payload)
                && task_ids.contains(&task_id)
            {
                adapter.change_notification(
                    crate::task::TASKS_NOTIFICATION,
                    Some(params),
                    Some(&id),
                )
            } else {
                continue;
            };
            // Backpressure: a listener that reads slowly makes this loop wait (the event log
            // keeps the changes meanwhile, within its retention).
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Done::Silent,
                _ = server_closed.wait_for(|c| *c) => return result,
                _ = connection_closed.wait_for(|c| *c) => return result,
                sent = sink.send_wait(message) => {
                    if sent.is_err() {
                        return Done::Silent;
                    }
                }
            }
        }
    }
}

/// Delivers a stdio connection's notifications (subscribed updates, list changes) to `out`
/// until aborted. Returns `None` (after a warning) when the event log cannot be read.
pub(crate) async fn deliver_to_connection(
    server: &Server,
    ctx: &Context,
    out: mpsc::Sender<Vec<u8>>,
) -> Option<tokio::task::JoinHandle<()>> {
    let mut stream = match server.connection_notifications(ctx, None).await {
        Ok(stream) => stream,
        Err(err) => {
            tracing::warn!(%err, "notifications cannot be delivered on this connection");
            return None;
        }
    };
    Some(tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            match item {
                Ok((_, message)) => {
                    let bytes = serde_json::to_vec(&message).unwrap_or_default();
                    // Waits while stdout is backed up; the event log keeps the changes.
                    if out.send(bytes).await.is_err() {
                        return;
                    }
                }
                Err(err) => {
                    tracing::warn!(%err, "notification delivery stopped");
                    return;
                }
            }
        }
    }))
}
