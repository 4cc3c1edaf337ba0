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
