//! The server's notifications a session wants, by one rule for every stream that carries them
//! (a Streamable HTTP GET stream, an HTTP+SSE stream): the list changes its revision is told
//! are announced (`listChanged` in the current capabilities) and updates of the URIs it
//! subscribed to, the subscriptions read from its record at each update so that one made on
//! any worker counts. A session that has not chosen its revision yet (an HTTP+SSE stream
//! before `initialize`) is sent nothing.

use futures::{Stream, StreamExt as _};
use mcp_adapters::{Adapter, AdapterSet};
use mcp_hub::Cursor;

use crate::notify::{Change, ChangeStream};
use crate::server::Server;
use crate::session::{SessionRecord, Sessions};

/// The changes of `changes` the session `id` wants, each with its cursor and rendered as a
/// JSON-RPC notification by the session's revision: `adapter` when the stream knows it, else
/// the one of `set` its record names once `initialize` chose it. The stream ends when the
/// change feed fails (its error is not a notification).
pub(crate) fn wanted(
    server: Server,
    sessions: Sessions,
    id: String,
    adapter: Option<Adapter>,
    set: AdapterSet,
    changes: ChangeStream,
) -> impl Stream<Item = (Cursor, Vec<u8>)> + Send + 'static {
    changes
        .traced()
        .take_while(|item| std::future::ready(item.is_ok()))
        .filter_map(move |item| {
            let (server, sessions, id, set) =
                (server.clone(), sessions.clone(), id.clone(), set.clone());
            async move {
                let (cursor, change, cause) = item.ok()?;
                // The record is read only when the answer depends on it: the subscriptions
                // of an update, or the revision of a session whose stream does not know it.
                let record = match (&change, adapter) {
                    (Change::ResourceUpdated { .. }, _) | (_, None) => {
                        Some(sessions.load(&id).await.ok()?.record)
                    }
                    _ => None,
                };
                let adapter = adapter.or_else(|| {
                    let version = record.as_ref()?.version.as_deref()?;
                    set.by_version(version)
                })?;
                let subscribed = record.iter().flat_map(|r| r.subscriptions.iter().cloned());
                if !server.session_filter(adapter, subscribed).matches(&change) {
                    return None;
                }
                drop(crate::trace_link::delivery_span(
                    change.method(),
                    cause.as_deref(),
                ));
                let message = serde_json::to_vec(&change.to_message(adapter, None)).ok()?;
                Some((cursor, message))
            }
        })
}

/// What a session whose stream lost events (a `Last-Event-ID` out of the log's retention)
/// could have missed: one notification of every kind it would have been sent (each list it is
/// told changes, each resource it subscribed to), rendered by `adapter`. Every such event says
/// "re-read this", so re-reading everything is exactly what was lost.
pub(crate) fn missed(server: &Server, adapter: Adapter, record: &SessionRecord) -> Vec<Vec<u8>> {
    let filter = server.session_filter(adapter, record.subscriptions.iter().cloned());
    [
        Change::ToolsListChanged,
        Change::PromptsListChanged,
        Change::ResourcesListChanged,
    ]
    .into_iter()
    .chain(
        record
            .subscriptions
            .iter()
            .map(|uri| Change::ResourceUpdated { uri: uri.clone() }),
    )
    .filter(|change| filter.matches(change))
    .filter_map(|change| serde_json::to_vec(&change.to_message(adapter, None)).ok())
    .collect()
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;
    use crate::session::SessionConfig;

    /// The first notification a stream of session `id` yields, with its cursor.
    async fn first(
        server: &Server,
        sessions: &Sessions,
        id: &str,
        adapter: Option<Adapter>,
        changes: ChangeStream,
    ) -> (Cursor, serde_json::Value) {
        let stream = wanted(
            server.clone(),
            sessions.clone(),
            id.to_owned(),
            adapter,
            server.revisions().clone(),
            changes,
        );
        let (cursor, json) = Box::pin(stream).next().await.expect("a notification");
        (cursor, serde_json::from_slice(&json).unwrap())
    }

    #[tokio::test]
    async fn a_session_gets_its_subscribed_updates_and_nothing_before_initialize() {
        let server = Server::builder("changes", "1").build().unwrap();
        let (sessions, _) = SessionConfig::default().build(&server);
        let notifier = server.notifier();
        let namespace = notifier.namespace().clone();
        let version = server.revisions().newest().version().to_owned();
        let subscribed = SessionRecord {
            version: Some(version.clone()),
            subscriptions: vec!["file:///a".into()],
            ..SessionRecord::default()
        };
        let subscriber = sessions.create(&subscribed, None).await.unwrap();
        let not_yet = sessions
            .create(&SessionRecord::default(), None)
            .await
            .unwrap();
        let feed = || server.changes(&namespace, None);
        let (for_subscriber, for_not_yet, for_known) = (
            feed().await.unwrap(),
            feed().await.unwrap(),
            feed().await.unwrap(),
        );

        notifier.resource_updated("file:///b").await.unwrap();
        let a = notifier.resource_updated("file:///a").await.unwrap();
        // Before `initialize` the session is sent nothing: both updates are read and dropped
        // (the memory hub has them ready, so one poll reads them).
        let mut before = Box::pin(wanted(
            server.clone(),
            sessions.clone(),
            not_yet.clone(),
            None,
            server.revisions().clone(),
            for_not_yet,
        ));
        assert!(before.next().now_or_never().is_none());
        // The session chooses its revision and subscribes: from now on it is sent what it
        // wants.
        let loaded = sessions.load(&not_yet).await.unwrap();
        sessions
            .update(&not_yet, loaded, |record| {
                record.version = Some(version.clone());
                record.subscriptions = vec!["file:///a".into()];
                true
            })
            .await
            .unwrap();
        let again = notifier.resource_updated("file:///a").await.unwrap();

        // The revision read from the record (HTTP+SSE) or given by the stream (a GET stream).
        let (cursor, message) = first(&server, &sessions, &subscriber, None, for_subscriber).await;
        assert_eq!(cursor, a);
        assert_eq!(message["method"], "notifications/resources/updated");
        assert_eq!(message["params"]["uri"], "file:///a");
        let known = Some(server.revisions().newest());
        let (cursor, _) = first(&server, &sessions, &subscriber, known, for_known).await;
        assert_eq!(cursor, a);
        let (cursor, _) = before.next().await.unwrap();
        assert_eq!(cursor, again);
    }

    #[test]
    fn what_a_session_missed_is_one_update_per_subscription() {
        let server = Server::builder("changes", "1").build().unwrap();
        let adapter = server.revisions().newest();
        let record = SessionRecord {
            subscriptions: vec!["file:///a".into(), "file:///b".into()],
            ..SessionRecord::default()
        };
        let missed: Vec<serde_json::Value> = missed(&server, adapter, &record)
            .iter()
            .map(|json| serde_json::from_slice(json).unwrap())
            .collect();
        let filter = server.session_filter(adapter, std::iter::empty::<String>());
        let lists = [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ]
        .iter()
        .filter(|change| filter.matches(change))
        .count();
        assert_eq!(missed.len(), lists + 2);
        let uris: Vec<&str> = missed
            .iter()
            .filter(|m| m["method"] == "notifications/resources/updated")
            .map(|m| m["params"]["uri"].as_str().unwrap())
            .collect();
        assert_eq!(uris, ["file:///a", "file:///b"]);
    }
}
