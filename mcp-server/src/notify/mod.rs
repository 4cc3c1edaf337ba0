//! Server-initiated notifications: publishing changes from any worker, runtime changes to the
//! registry, the streams a transport delivers to its listeners, and the 2026-07-28
//! `subscriptions/listen` request.
//!
//! Every change goes through the hub's [`EventLog`] on one topic per namespace
//! (`<namespace>:mcp/notifications`), so a listener on any worker that shares the log receives
//! what any other worker published. The payload is revision-neutral; each listener encodes it
//! for its own revision when it delivers it.

use std::collections::BTreeSet;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};
use std::task::{Context as TaskContext, Poll};

use futures::stream::{FusedStream, Stream, StreamExt as _};
use mcp_adapters::{Adapter, Call, Failure};
use mcp_hub::{Cursor, Namespace, Subscription};
use mcp_wire::jsonrpc::Id;
use mcp_wire::names::meta;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::dispatch::{Context, Done};
use crate::error::RegistrationError;
use crate::exchange::CancelHandle;
use crate::prompt::Prompt;
use crate::resource::{Resource, ResourceTemplate};
use crate::server::{Catalog, Server, build_prompts, build_resources, build_tools};
use crate::tool::Tool;

mod catalog;
mod listen;
mod streams;

pub(crate) use listen::deliver_to_connection;
pub use streams::{ChangeStream, NotificationFilter, NotificationStream};

pub(crate) use crate::notifier::TOPIC;
pub(crate) use crate::notifier::{Change, NotifyError};

/// Why a runtime change of the registry failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// The declaration is refused, for the same reasons as at
    /// [`build`](crate::ServerBuilder::build) (including a name already registered); nothing
    /// changed.
    #[error(transparent)]
    Registration(#[from] RegistrationError),
    /// Nothing is registered under this name or URI; nothing changed.
    #[error("no {kind} {name:?} is registered")]
    NotRegistered {
        /// `"tool"`, `"prompt"`, `"resource"` or `"resource template"`.
        kind: &'static str,
        /// The name, URI or template.
        name: String,
    },
    /// The registry changed, but the list-changed notification could not be published.
    #[error("the change is made, but its notification was not published: {0}")]
    Publish(NotifyError),
}

/// The capability (`tools`, `prompts`, `resources`) whose `listChanged` covers `change`.
fn list_capability(change: &Change) -> Option<&'static str> {
    match change {
        Change::ToolsListChanged => Some("tools"),
        Change::PromptsListChanged => Some("prompts"),
        Change::ResourcesListChanged => Some("resources"),
        Change::ResourceUpdated { .. } => None,
    }
}

fn advertises_list_changed(capabilities: &Value, change: &Change) -> bool {
    list_capability(change).is_some_and(|name| capabilities[name]["listChanged"] == json!(true))
}
