//! Sessions as small records in the hub's state store, so that any worker serves any session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use mcp_adapters::{AdapterSet, ClientContext};
use mcp_hub::{Key, Namespace, StateStore, StoreError, Topic};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dispatch::{SessionSnapshot, SessionView};

/// The longest session id accepted from a client; longer ones cannot be ours.
const MAX_ID_LEN: usize = 128;

/// How many compare-and-set attempts a session update makes before giving up.
const SAVE_ATTEMPTS: usize = 8;

/// What a session record holds (JSON in the store).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SessionRecord {
    /// The negotiated protocol version; `None` on an HTTP+SSE stream before `initialize`.
    #[serde(
        rename = "protocolVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) version: Option<String>,
    /// The client's `Implementation` from `initialize`.
    #[serde(
        rename = "clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) client_info: Option<Value>,
    /// The client's capabilities from `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) capabilities: Option<Map<String, Value>>,
    /// The level `logging/setLevel` set.
    #[serde(rename = "logLevel", default, skip_serializing_if = "Option::is_none")]
    pub(crate) log_level: Option<String>,
    /// Resource URIs the client subscribed to (`resources/subscribe`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) subscriptions: Vec<String>,
    /// The session is an HTTP+SSE stream (its messages go out through the hub topic of the
    /// stream), not a Streamable HTTP session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) sse: bool,
}

impl SessionRecord {
    /// The connection state a [`Context`](crate::Context) starts from.
    pub(crate) fn snapshot(&self, adapters: &AdapterSet) -> SessionSnapshot {
        SessionSnapshot {
            adapter: self.version.as_deref().and_then(|v| adapters.by_version(v)),
            client: ClientContext {
                info: self.client_info.clone(),
                capabilities: self.capabilities.clone(),
            },
            log_level: self.log_level.as_deref().and_then(|l| l.parse().ok()),
            subscriptions: self.subscriptions.clone(),
        }
    }

    /// Whether [`absorb`](Self::absorb) would change anything (without copying the record).
    pub(crate) fn would_change(&self, now: &SessionView<'_>) -> bool {
        now.adapter
            .is_some_and(|a| self.version.as_deref() != Some(a.version()))
            || (now.client.info.is_some() && now.client.info != self.client_info)
            || (now.client.capabilities.is_some() && now.client.capabilities != self.capabilities)
            || now
                .log_level
                .is_some_and(|l| self.log_level.as_deref() != Some(l.as_str()))
            || !now.subscriptions.iter().eq(self.subscriptions.iter())
    }

    /// Takes what a call changed from the connection state `now`; returns whether anything
    /// did ([`would_change`](Self::would_change) decides, so the two cannot disagree).
    pub(crate) fn absorb(&mut self, now: &SessionView<'_>) -> bool {
        if !self.would_change(now) {
            return false;
        }
        if let Some(adapter) = now.adapter {
            self.version = Some(adapter.version().to_owned());
        }
        if now.client.info.is_some() {
            self.client_info.clone_from(&now.client.info);
        }
        if now.client.capabilities.is_some() {
            self.capabilities.clone_from(&now.client.capabilities);
        }
        if let Some(level) = now.log_level {
            self.log_level = Some(level.as_str().to_owned());
        }
        // The connection started from the record's set, so a difference is a (un)subscribe.
        self.subscriptions = now.subscriptions.iter().cloned().collect();
        true
    }

    fn to_bytes(&self) -> Bytes {
        Bytes::from(serde_json::to_vec(self).unwrap_or_default())
    }
}

/// A session read from the store.
#[derive(Clone, Debug)]
pub(crate) struct Loaded {
    /// The decoded record, shared with this worker's cache of decoded records.
    pub(crate) record: Arc<SessionRecord>,
    pub(crate) version: u64,
}

/// The most decoded records a worker keeps; the cache is emptied when it is full. Small: it
/// serves the sessions that are calling now, and idle sessions must stay cheap (issue 12).
const MAX_CACHED: usize = 1024;

/// A decoded session record and the exact stored bytes and version it was decoded from.
struct Cached {
    version: u64,
    bytes: Bytes,
    record: Arc<SessionRecord>,
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// No live session has that id.
    #[error("session not found")]
    NotFound,
    /// The store failed.
    #[error("session store: {0}")]
    Store(#[from] StoreError),
    /// Other writers kept winning the compare-and-set.
    #[error("the session record kept changing under this update")]
    Contended,
    /// No randomness for a new id.
    #[error("no randomness for a session id: {0}")]
    Random(String),
}

/// The sessions of one endpoint: records in the state store, TTLs renewed lazily.
#[derive(Clone)]
pub(crate) struct Sessions {
    store: Arc<dyn StateStore>,
    namespace: Namespace,
    ttl: Duration,
    /// When this worker last renewed each session's TTL.
    touched: Arc<Mutex<HashMap<String, Instant>>>,
    /// Records this worker decoded, by session id. An entry is used only when the store
    /// returns the same version and the same bytes again, so a record written by another
    /// worker is always decoded afresh; it only saves parsing an unchanged record.
    decoded: Arc<Mutex<HashMap<String, Cached>>>,
}

impl Sessions {
    pub(crate) fn new(store: Arc<dyn StateStore>, namespace: Namespace, ttl: Duration) -> Self {
        Self {
            store,
            namespace,
            ttl,
            touched: Arc::new(Mutex::new(HashMap::new())),
            decoded: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Decodes the stored `record` of session `id`, reusing this worker's earlier decoding
    /// when the stored version and bytes are the same.
    fn decode(&self, id: &str, record: mcp_hub::Record) -> Result<Loaded, SessionError> {
        let decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cached) = decoded.get(id)
            && cached.version == record.version
            && cached.bytes == record.value
        {
            return Ok(Loaded {
                record: cached.record.clone(),
                version: record.version,
            });
        }
        drop(decoded);
        let parsed: SessionRecord =
            serde_json::from_slice(&record.value).map_err(|_| SessionError::NotFound)?;
        let parsed = Arc::new(parsed);
        self.remember(id, record.version, record.value, parsed.clone());
        Ok(Loaded {
            record: parsed,
            version: record.version,
        })
    }

    /// Remembers the record this worker just stored, so the next load need not decode it.
    fn remember(&self, id: &str, version: u64, bytes: Bytes, record: Arc<SessionRecord>) {
        let mut decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        if decoded.len() >= MAX_CACHED && !decoded.contains_key(id) {
            decoded.clear();
        }
        decoded.insert(
            id.to_owned(),
            Cached {
                version,
                bytes,
                record,
            },
        );
    }

    fn forget(&self, id: &str) {
        self.decoded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    pub(crate) fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    fn key(&self, id: &str) -> Key {
        self.namespace.key(&format!("mcp-session/{id}"))
    }

    /// The hub topic an HTTP+SSE stream's messages travel on.
    pub(crate) fn stream_topic(&self, id: &str) -> Topic {
        self.namespace.topic(&format!("mcp-sse/{id}"))
    }

    /// The hub topic the cancellations of a session's calls travel on between workers.
    pub(crate) fn cancel_topic(&self, id: &str) -> Topic {
        self.namespace.topic(&format!("mcp-cancel/{id}"))
    }

    /// Whether `id` could be a session id this server minted (visible ASCII, bounded).
    pub(crate) fn plausible(id: &str) -> bool {
        !id.is_empty() && id.len() <= MAX_ID_LEN && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
    }

    /// Mints a session holding `record`.
    pub(crate) async fn create(&self, record: &SessionRecord) -> Result<String, SessionError> {
        let value = record.to_bytes();
        loop {
            let mut bytes = [0u8; 24];
            getrandom::fill(&mut bytes).map_err(|e| SessionError::Random(e.to_string()))?;
            let id = URL_SAFE_NO_PAD.encode(bytes);
            match self
                .store
                .create(&self.key(&id), value.clone(), self.ttl)
                .await
            {
                Ok(version) => {
                    self.remember_touch(&id);
                    self.remember(&id, version, value, Arc::new(record.clone()));
                    return Ok(id);
                }
                Err(StoreError::AlreadyExists) => continue,
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// The live session `id` (one store read); renews its TTL when this worker has not done
    /// so for a quarter of the TTL.
    pub(crate) async fn load(&self, id: &str) -> Result<Loaded, SessionError> {
        if !Self::plausible(id) {
            return Err(SessionError::NotFound);
        }
        let key = self.key(id);
        let Some(record) = self.store.get(&key).await? else {
            self.forget(id);
            return Err(SessionError::NotFound);
        };
        let loaded = self.decode(id, record)?;
        if self.due(id) {
            match self.store.touch(&key, self.ttl).await {
                Ok(()) => self.remember_touch(id),
                Err(StoreError::NotFound) => return Err(SessionError::NotFound),
                Err(err) => tracing::warn!(%err, "could not renew a session's TTL"),
            }
        }
        Ok(loaded)
    }

    /// Applies `update` to the stored record with compare-and-set, re-reading on conflict.
    pub(crate) async fn update(
        &self,
        id: &str,
        mut loaded: Loaded,
        update: impl Fn(&mut SessionRecord) -> bool,
    ) -> Result<(), SessionError> {
        let key = self.key(id);
        for _ in 0..SAVE_ATTEMPTS {
            if !update(Arc::make_mut(&mut loaded.record)) {
                return Ok(());
            }
            let bytes = loaded.record.to_bytes();
            match self
                .store
                .save(&key, bytes.clone(), loaded.version, self.ttl)
                .await
            {
                Ok(version) => {
                    self.remember_touch(id);
                    self.remember(id, version, bytes, loaded.record);
                    return Ok(());
                }
                Err(StoreError::VersionConflict { .. }) => {
                    let fresh = self.store.get(&key).await?.ok_or(SessionError::NotFound)?;
                    loaded = self.decode(id, fresh)?;
                }
                Err(StoreError::NotFound) => return Err(SessionError::NotFound),
                Err(err) => return Err(err.into()),
            }
        }
        Err(SessionError::Contended)
    }

    /// Renews the TTL of session `id` now.
    pub(crate) async fn renew(&self, id: &str) -> Result<(), SessionError> {
        match self.store.touch(&self.key(id), self.ttl).await {
            Ok(()) => {
                self.remember_touch(id);
                Ok(())
            }
            Err(StoreError::NotFound) => Err(SessionError::NotFound),
            Err(err) => Err(err.into()),
        }
    }

    /// Ends session `id`; returns whether it was live.
    pub(crate) async fn delete(&self, id: &str) -> Result<bool, SessionError> {
        if !Self::plausible(id) {
            return Ok(false);
        }
        self.forget_touch(id);
        self.forget(id);
        Ok(self.store.delete(&self.key(id)).await?)
    }

    fn due(&self, id: &str) -> bool {
        let touched = self.touched.lock().unwrap_or_else(|e| e.into_inner());
        touched
            .get(id)
            .is_none_or(|at| at.elapsed() >= self.ttl / 4)
    }

    fn remember_touch(&self, id: &str) {
        let mut touched = self.touched.lock().unwrap_or_else(|e| e.into_inner());
        if touched.len() >= 4096 {
            let ttl = self.ttl;
            touched.retain(|_, at| at.elapsed() < ttl);
        }
        touched.insert(id.to_owned(), Instant::now());
    }

    fn forget_touch(&self, id: &str) {
        self.touched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}
