//! Choosing the revision: pinned, or negotiated the way the spec's dual-era client does it.
//!
//! Nothing here compares version strings to decide behaviour: a version string is only turned
//! into a [`Revision`] (or found in a server's list), and every decision reads the adapter's flags.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use mcp_adapters::{Adapter, Operation, Revision};
use mcp_wire::jsonrpc::ErrorObject;
use mcp_wire::names::{error_code, meta, method};
use serde_json::{Value, json};

use crate::client::{CallOptions, Client, Outcome, ServerDescription};
use crate::error::{Error, ErrorKind};

/// How the client picks its revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    Pinned(Revision),
    Negotiate,
}

/// What negotiation on one transport concluded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Negotiated {
    Done,
    /// Streamable HTTP is not there (400/404/405 without a modern body): use HTTP+SSE.
    FallBackToSse,
}

/// What the client remembers per origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Remembered {
    pub(crate) revision: Revision,
    pub(crate) http_sse: bool,
}

fn eras() -> &'static Mutex<HashMap<String, Remembered>> {
    static ERAS: OnceLock<Mutex<HashMap<String, Remembered>>> = OnceLock::new();
    ERAS.get_or_init(|| Mutex::new(HashMap::new()))
}

pub(crate) fn remembered(origin: &str) -> Option<Remembered> {
    eras()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(origin)
        .copied()
}

pub(crate) fn remember(origin: &str, era: Remembered) {
    eras()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(origin.to_owned(), era);
}

pub(crate) fn forget(origin: &str) {
    eras()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(origin);
}

/// A code only a modern (2026-07-28 or later) server sends.
fn is_modern_error(error: &ErrorObject) -> bool {
    matches!(
        error.code,
        error_code::HEADER_MISMATCH
            | error_code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | error_code::UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// The versions an error says the server supports (`data.supported`).
fn supported_in(error: &ErrorObject) -> Option<Vec<String>> {
    let list = error.data.as_ref()?.get("supported")?.as_array()?;
    Some(
        list.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

/// The newest revision in `supported` that this client speaks and has not tried, and that the
/// transport can carry. When every such revision was tried already (a server that refuses a
/// version and then names that very version among the ones it supports), the newest of them is
/// tried once more: one retry per negotiation, then the client gives up.
fn best(client: &Client, supported: &[String], tried: &[Revision]) -> Option<Revision> {
    let sse = client.inner.info.legacy_sse;
    let mutual = |r: &Revision| {
        supported.iter().any(|s| s == r.as_str()) && (!sse || Adapter::new(*r).has_handshake())
    };
    let ours = &client.inner.config.revisions;
    if let Some(fresh) = ours
        .iter()
        .copied()
        .find(|r| mutual(r) && !tried.contains(r))
    {
        return Some(fresh);
    }
    let retried = tried
        .iter()
        .enumerate()
        .any(|(i, r)| tried[..i].contains(r));
    if retried {
        return None;
    }
    ours.iter().copied().find(mutual)
}

/// The client's newest revision with a handshake.
fn newest_legacy(client: &Client) -> Revision {
    client
        .inner
        .config
        .revisions
        .iter()
        .copied()
        .find(|r| r.features().has_handshake)
        .unwrap_or(Revision::ASSUMED)
}

/// The client's newest revision without one.
fn newest_modern(client: &Client) -> Option<Revision> {
    client
        .inner
        .config
        .revisions
        .iter()
        .copied()
        .find(|r| !r.features().has_handshake)
}

pub(crate) async fn negotiate(
    client: &Client,
    choice: Choice,
    remember_era: bool,
) -> Result<Negotiated, Error> {
    let origin = client.inner.info.origin.clone().filter(|_| remember_era);
    if let Choice::Pinned(revision) = choice {
        return start(client, revision, &mut Vec::new()).await;
    }
    if let Some(origin) = &origin
        && let Some(era) = remembered(origin)
        && era.http_sse == client.inner.info.legacy_sse
    {
        match start(client, era.revision, &mut Vec::new()).await {
            Ok(n) => return Ok(n),
            Err(e) if e.is_timeout() => return Err(e),
            // The server changed since: negotiate from scratch.
            Err(_) => forget(origin),
        }
    }
    let outcome = if client.inner.info.legacy_sse {
        start(client, newest_legacy(client), &mut Vec::new()).await
    } else {
        probe(client).await
    };
    if let (Ok(Negotiated::Done), Some(origin)) = (&outcome, &origin) {
        remember(
            origin,
            Remembered {
                revision: client.revision(),
                http_sse: client.inner.info.legacy_sse,
            },
        );
    }
    outcome
}

/// Starts `revision`: `server/discover` or `initialize`, whichever its adapter has.
async fn start(
    client: &Client,
    revision: Revision,
    tried: &mut Vec<Revision>,
) -> Result<Negotiated, Error> {
    let adapter = Adapter::new(revision);
    tried.push(revision);
    if adapter.has_handshake() {
        initialize(client, adapter, tried).await
    } else {
        match describe(client, adapter, false).await? {
            Described::Modern => Ok(Negotiated::Done),
            Described::Supported(list) => match best(client, &list, tried) {
                Some(next) => Box::pin(start(client, next, tried)).await,
                None => Err(no_common(&list)),
            },
            Described::Refused(refusal) => Err(refusal.into_error()),
        }
    }
}

fn no_common(list: &[String]) -> Error {
    Error::new(
        ErrorKind::UnsupportedVersion,
        format!("the server supports {list:?}"),
    )
}

/// A refused handshake: the server's JSON-RPC error, or the HTTP status and what the server
/// said in the body, and its `Retry-After`.
struct Refusal {
    error: Option<ErrorObject>,
    status: Option<u16>,
    said: Option<String>,
    retry_after: Option<Duration>,
}

impl Refusal {
    fn empty() -> Self {
        Self {
            error: None,
            status: None,
            said: None,
            retry_after: None,
        }
    }

    /// A rate limit: the server is there, it only says "not now".
    fn is_rate_limit(&self) -> bool {
        crate::limited::classify(self.error.as_ref(), self.status, self.retry_after).is_some()
    }

    fn into_error(self) -> Error {
        Error::refused(
            self.error,
            self.status,
            self.said.as_deref(),
            self.retry_after,
        )
    }
}

/// The dual-era probe: a modern request first, then `initialize`, then (on HTTP) HTTP+SSE.
async fn probe(client: &Client) -> Result<Negotiated, Error> {
    let Some(modern) = newest_modern(client) else {
        return start(client, newest_legacy(client), &mut Vec::new()).await;
    };
    let mut tried = vec![modern];
    let http = client.inner.info.http;
    let described = describe(client, Adapter::new(modern), true).await;
    match described {
        Ok(Described::Modern) => Ok(Negotiated::Done),
        Ok(Described::Supported(list)) => match best(client, &list, &tried) {
            Some(next) => start(client, next, &mut tried).await,
            None => Err(no_common(&list)),
        },
        // A modern server's refusal, or a rate limit (the probe is sent again after the wait,
        // not taken for a legacy server's answer).
        Ok(Described::Refused(refusal))
            if refusal.error.as_ref().is_some_and(is_modern_error) || refusal.is_rate_limit() =>
        {
            Err(refusal.into_error())
        }
        // Anything else (an unrecognized 400, a 404 or 405, a legacy -32601) means a legacy
        // server, or no Streamable HTTP at all: `initialize` tells which.
        Ok(Described::Refused(..)) => start(client, newest_legacy(client), &mut tried).await,
        // stdio: a server that never answers the probe is a legacy one that ignores it.
        Err(e) if e.is_timeout() && !http => start(client, newest_legacy(client), &mut tried).await,
        Err(e) => Err(e),
    }
}

enum Described {
    Modern,
    Supported(Vec<String>),
    Refused(Refusal),
}

/// `server/discover` on a revision without a handshake.
async fn describe(client: &Client, adapter: Adapter, probing: bool) -> Result<Described, Error> {
    let name = adapter
        .method(Operation::Describe)
        .unwrap_or(method::SERVER_DISCOVER);
    // On stdio a server that ignores the probe is a legacy one: do not wait the whole request
    // timeout to find out.
    let timeout = if client.inner.info.http || !probing {
        client.inner.config.timeout
    } else {
        client
            .inner
            .config
            .probe_timeout
            .min(client.inner.config.timeout)
    };
    let (_, params) = adapter.handshake_request(&client.inner.context(adapter));
    let attempt = client.inner.attempt(adapter, name, Some(&params));
    let outcome = tokio::time::timeout(timeout, attempt)
        .await
        .map_err(|_| Error::timeout(timeout))??;
    match outcome {
        Outcome::Result(result) => {
            let Some(capabilities) = result.get("capabilities").filter(|c| c.is_object()) else {
                return Ok(Described::Refused(Refusal::empty()));
            };
            let supported: Vec<String> = result
                .get("supportedVersions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if !supported.is_empty() && !supported.iter().any(|s| s == adapter.version()) {
                return Ok(Described::Supported(supported));
            }
            crate::asking::questions(adapter, name, &result)?;
            client.inner.set_adapter(adapter);
            client.inner.set_initialized(true);
            client.inner.set_server(ServerDescription {
                capabilities: capabilities.clone(),
                server_info: result
                    .get("_meta")
                    .and_then(|m| m.get(meta::SERVER_INFO))
                    .or_else(|| result.get("serverInfo"))
                    .cloned(),
                instructions: result
                    .get("instructions")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                supported_versions: supported,
            });
            Ok(Described::Modern)
        }
        Outcome::Refused {
            error,
            status,
            said,
            retry_after,
        } => {
            if let Some(error) = &error
                && error.code == error_code::UNSUPPORTED_PROTOCOL_VERSION
                && let Some(list) = supported_in(error)
            {
                return Ok(Described::Supported(list));
            }
            Ok(Described::Refused(Refusal {
                error,
                status,
                said,
                retry_after,
            }))
        }
    }
}

/// `initialize` + `notifications/initialized` on a revision with a handshake.
async fn initialize(
    client: &Client,
    adapter: Adapter,
    tried: &mut Vec<Revision>,
) -> Result<Negotiated, Error> {
    let inner = &client.inner;
    let name = adapter
        .method(Operation::Describe)
        .unwrap_or(method::INITIALIZE);
    let (_, params) = adapter.handshake_request(&inner.context(adapter));
    inner.set_initialized(false);
    let timeout = inner.config.timeout;
    let attempt = inner.attempt(adapter, name, Some(&params));
    let outcome = tokio::time::timeout(timeout, attempt)
        .await
        .map_err(|_| Error::timeout(timeout))??;
    match outcome {
        Outcome::Result(result) => {
            let answered = result
                .get("protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let Some(revision) = inner
                .config
                .revisions
                .iter()
                .copied()
                .find(|r| r.as_str() == answered && r.features().has_handshake)
            else {
                return Err(Error::new(
                    ErrorKind::UnsupportedVersion,
                    format!("the server answered initialize with version {answered:?}"),
                ));
            };
            let adapter = Adapter::new(revision);
            inner.set_adapter(adapter);
            inner.set_server(ServerDescription {
                capabilities: result
                    .get("capabilities")
                    .cloned()
                    .unwrap_or_else(|| json!({})),
                server_info: result.get("serverInfo").cloned(),
                instructions: result
                    .get("instructions")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                supported_versions: Vec::new(),
            });
            inner.set_initialized(true);
            let initialized = adapter
                .method(Operation::HandshakeComplete)
                .unwrap_or(method::NOTIFICATION_INITIALIZED);
            inner.notify(initialized, None).await?;
            if !adapter.features().per_request_log_level
                && let (Some(level), Some(set_level)) = (
                    &inner.config.log_level,
                    adapter.method(Operation::SetLogLevel),
                )
            {
                let params = json!({"level": level.as_str()});
                let attempt = inner.attempt(adapter, set_level, Some(&params));
                // A refusal is only logged; a server that does not answer at all fails the
                // connect, as a hang at any other step of it does.
                match tokio::time::timeout(timeout, attempt).await {
                    Err(_) => return Err(Error::timeout(timeout)),
                    Ok(Ok(Outcome::Refused { error, .. })) => {
                        tracing::warn!(?error, "the server refused logging/setLevel");
                    }
                    Ok(_) => {}
                }
            }
            Ok(Negotiated::Done)
        }
        Outcome::Refused {
            error,
            status,
            said,
            retry_after,
        } => {
            if let Some(list) = error.as_ref().and_then(supported_in) {
                if let Some(next) = best(client, &list, tried) {
                    return Box::pin(start(client, next, tried)).await;
                }
                return Err(no_common(&list));
            }
            let modern_body = error.as_ref().is_some_and(is_modern_error);
            let fallback = matches!(status, Some(400 | 404 | 405));
            if fallback && !modern_body && inner.info.request_streams && inner.info.http {
                return Ok(Negotiated::FallBackToSse);
            }
            Err(Refusal {
                error,
                status,
                said,
                retry_after,
            }
            .into_error())
        }
    }
}

impl Client {
    /// Starts a fresh session after the server forgot ours (HTTP 404), unless another call already
    /// did since the call saw session generation `seen`.
    pub(crate) async fn reinitialize(&self, seen: u64) -> Result<(), Error> {
        let client = self;
        let mut generation = client.inner.generation().lock().await;
        if *generation != seen {
            return Ok(());
        }
        client.inner.transport.reset_session();
        let revision = client.revision();
        match start(client, revision, &mut Vec::new()).await? {
            Negotiated::Done => {
                *generation += 1;
                client.inner.set_session_generation(*generation);
                drop(generation);
                resubscribe(client).await;
                Ok(())
            }
            Negotiated::FallBackToSse => Err(Error::new(
                ErrorKind::Transport,
                "the server no longer speaks Streamable HTTP",
            )),
        }
    }
}

/// Subscribes the new session to every URI the listeners had subscribed to on the lost one. A
/// refusal is logged, not returned: the call that found the session lost goes on.
async fn resubscribe(client: &Client) {
    let Some(subscribe) = client.adapter().method(Operation::Subscribe) else {
        return;
    };
    for uri in client.inner.subscribed_uris() {
        let params = Some(json!({"uri": uri}));
        if let Err(e) = Box::pin(client.request_with(subscribe, params, CallOptions::new())).await {
            tracing::warn!(error = %e, uri, "could not subscribe the new session again");
        }
    }
}
