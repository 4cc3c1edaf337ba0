//! Request state: what a call that asked must find again when the client retries.
//!
//! Only an opaque random id leaves the server (MRTR `requestState`, or the `mcpState`
//! argument). The record stays in the hub's [`StateStore`], bound to the method, the target and
//! a SHA-256 digest of the arguments, with an expiry, and it is single use: redeeming deletes
//! it, and only the one redeemer whose delete removed it may go on. Whatever does not match
//! exactly is refused, and answers to questions the record does not list are ignored.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use mcp_hub::{Namespace, StateStore};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// A state id that cannot be used (unknown, expired, already used, tampered with, or issued
/// for another call). The dispatcher answers -32602.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum StateError {
    /// The id names no live record, or one bound to another call.
    #[error("invalid requestState: {0}")]
    Invalid(&'static str),
    /// The store failed.
    #[error("request state store: {0}")]
    Store(String),
}

/// What a redeemed state gives back.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Redeemed {
    /// The questions asked so far (key to method); only answers to these are read.
    pub(crate) asked: BTreeMap<String, String>,
    /// The handler's own state, if it saved one.
    pub(crate) payload: Option<Value>,
}

#[derive(Serialize, Deserialize)]
struct StoredState {
    binding: String,
    asked: BTreeMap<String, String>,
    payload: Option<Value>,
    expires_at_ms: u64,
}

/// Issues and redeems request state in a [`StateStore`].
#[derive(Clone)]
pub(crate) struct RequestStates {
    store: Arc<dyn StateStore>,
    ttl: Duration,
}

impl std::fmt::Debug for RequestStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStates")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RequestStates {
    pub(crate) fn new(store: Arc<dyn StateStore>, ttl: Duration) -> Self {
        Self { store, ttl }
    }

    pub(crate) fn store(&self) -> &Arc<dyn StateStore> {
        &self.store
    }

    /// Stores a new record and returns its id.
    pub(crate) async fn issue(
        &self,
        namespace: &Namespace,
        binding: String,
        asked: BTreeMap<String, String>,
        payload: Option<Value>,
    ) -> Result<String, StateError> {
        let record = StoredState {
            binding,
            asked,
            payload,
            expires_at_ms: now_ms()
                .saturating_add(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)),
        };
        let bytes =
            Bytes::from(serde_json::to_vec(&record).map_err(|e| StateError::Store(e.to_string()))?);
        // A collision of 192 random bits is not expected; retry once all the same.
        for _ in 0..2 {
            let id = random_id()?;
            let key = namespace.key(&state_key(&id));
            match self.store.create(&key, bytes.clone(), self.ttl).await {
                Ok(_) => return Ok(id),
                Err(mcp_hub::StoreError::AlreadyExists) => continue,
                Err(err) => return Err(StateError::Store(err.to_string())),
            }
        }
        Err(StateError::Store(
            "could not allocate a request state id".into(),
        ))
    }

    /// Redeems `id` for a call with `binding`: the record is deleted (single use) and returned
    /// if it was live, unexpired and bound to the same call.
    pub(crate) async fn redeem(
        &self,
        namespace: &Namespace,
        id: &str,
        binding: &str,
    ) -> Result<Redeemed, StateError> {
        if id.is_empty()
            || id.len() > 64
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(StateError::Invalid("not a state this server issued"));
        }
        let key = namespace.key(&state_key(id));
        let record = self
            .store
            .get(&key)
            .await
            .map_err(|e| StateError::Store(e.to_string()))?;
        let Some(record) = record else {
            return Err(StateError::Invalid("unknown, expired or already used"));
        };
        // Whoever deletes the record owns it: a concurrent replay loses here.
        let removed = self
            .store
            .delete(&key)
            .await
            .map_err(|e| StateError::Store(e.to_string()))?;
        if !removed {
            return Err(StateError::Invalid("already used"));
        }
        let stored: StoredState = serde_json::from_slice(&record.value)
            .map_err(|_| StateError::Invalid("unreadable record"))?;
        if stored.expires_at_ms <= now_ms() {
            return Err(StateError::Invalid("expired"));
        }
        if stored.binding != binding {
            return Err(StateError::Invalid("issued for another call"));
        }
        Ok(Redeemed {
            asked: stored.asked,
            payload: stored.payload,
        })
    }
}

fn state_key(id: &str) -> String {
    format!("request-state/{id}")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// 24 random bytes from the operating system (`getrandom`), base64url: 32 characters.
pub(crate) fn random_id() -> Result<String, StateError> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| StateError::Store(format!("no randomness: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The binding of a call: SHA-256 over the canonical JSON (sorted keys, no whitespace) of
/// `[method, target, arguments]`, hex-encoded.
pub(crate) fn binding(method: &str, target: &str, arguments: &Map<String, Value>) -> String {
    let mut canonical = String::new();
    canonical.push('[');
    write_canonical(&Value::String(method.to_owned()), &mut canonical);
    canonical.push(',');
    write_canonical(&Value::String(target.to_owned()), &mut canonical);
    canonical.push(',');
    write_canonical_object(arguments, &mut canonical);
    canonical.push(']');
    let digest = Sha256::digest(canonical.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => write_canonical_object(map, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn write_canonical_object(map: &Map<String, Value>, out: &mut String) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push('{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        write_canonical(&map[key], out);
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn binding_ignores_key_order_and_sees_every_difference() {
        let a = binding(
            "tools/call",
            "deploy",
            &object(json!({"x": 1, "y": {"b": 2, "a": [1, 2]}})),
        );
        let b = binding(
            "tools/call",
            "deploy",
            &object(json!({"y": {"a": [1, 2], "b": 2}, "x": 1})),
        );
        assert_eq!(a, b);
        for other in [
            binding(
                "prompts/get",
                "deploy",
                &object(json!({"x": 1, "y": {"b": 2, "a": [1, 2]}})),
            ),
            binding(
                "tools/call",
                "deploy2",
                &object(json!({"x": 1, "y": {"b": 2, "a": [1, 2]}})),
            ),
            binding(
                "tools/call",
                "deploy",
                &object(json!({"x": 2, "y": {"b": 2, "a": [1, 2]}})),
            ),
            binding(
                "tools/call",
                "deploy",
                &object(json!({"x": 1, "y": {"b": 2, "a": [2, 1]}})),
            ),
            binding(
                "tools/call",
                "deploy",
                &object(json!({"x": "1", "y": {"b": 2, "a": [1, 2]}})),
            ),
        ] {
            assert_ne!(a, other);
        }
    }

    #[test]
    fn ids_are_random_and_url_safe() {
        let a = random_id().unwrap();
        let b = random_id().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
    }
}
