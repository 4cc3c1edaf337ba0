//! Request state: what a call that asked must find again when the client retries.
//!
//! Only an opaque random id leaves the server (MRTR `requestState`, or the `mcpState`
//! argument): 192 bits from the operating system, so it cannot be guessed, and there is
//! nothing in it to tamper with. The record stays in the hub's [`StateStore`] (shared by every
//! worker), under the call's namespace, bound to the principal (when the transport knows one),
//! the method, the target and a SHA-256 digest of the arguments, with an expiry, and it is
//! single use: redeeming deletes it, and only the one redeemer whose delete removed it may go
//! on. Whatever does not match exactly is refused (-32602) without spending the record (so a
//! state presented by another principal cannot be burnt by it), and answers to questions the
//! record does not list are ignored.

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
    /// The `traceparent` of the span that asked (exported spans only): the retry's span
    /// links to it, on whichever worker the retry lands.
    pub(crate) asked_in: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct StoredState {
    binding: String,
    asked: BTreeMap<String, String>,
    payload: Option<Value>,
    expires_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked_in: Option<String>,
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
        asked_in: Option<String>,
    ) -> Result<String, StateError> {
        let record = StoredState {
            binding,
            asked,
            payload,
            asked_in,
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
        let stored: StoredState = serde_json::from_slice(&record.value)
            .map_err(|_| StateError::Invalid("unreadable record"))?;
        if stored.expires_at_ms <= now_ms() {
            return Err(StateError::Invalid("expired"));
        }
        // Checked before the record is spent: a state presented by another principal (or for
        // another call) is refused and stays redeemable by its own call.
        if stored.binding != binding {
            return Err(StateError::Invalid("issued for another call"));
        }
        // Whoever deletes the record owns it: a concurrent replay loses here.
        let removed = self
            .store
            .delete(&key)
            .await
            .map_err(|e| StateError::Store(e.to_string()))?;
        if !removed {
            return Err(StateError::Invalid("already used"));
        }
        Ok(Redeemed {
            asked: stored.asked,
            payload: stored.payload,
            asked_in: stored.asked_in,
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
/// `[method, target, arguments, principal]` (`null` for no principal), hex-encoded.
pub(crate) fn binding(
    method: &str,
    target: &str,
    arguments: &Map<String, Value>,
    principal: Option<&str>,
) -> String {
    let mut canonical = String::new();
    canonical.push('[');
    write_canonical(&Value::String(method.to_owned()), &mut canonical);
    canonical.push(',');
    write_canonical(&Value::String(target.to_owned()), &mut canonical);
    canonical.push(',');
    write_canonical_object(arguments, &mut canonical);
    canonical.push(',');
    write_canonical(
        &principal.map_or(Value::Null, |p| Value::String(p.to_owned())),
        &mut canonical,
    );
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
    use std::future::Future;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn binding_ignores_key_order_and_sees_every_difference() {
        let a = binding(
            "tools/call",
            "deploy",
            &object(json!({"x": 1, "y": {"b": 2, "a": [1, 2]}})),
            None,
        );
        let b = binding(
            "tools/call",
            "deploy",
            &object(json!({"y": {"a": [1, 2], "b": 2}, "x": 1})),
            None,
        );
        assert_eq!(a, b);
        for other in [
            binding(
                "prompts/get",
                "deploy",
                &object(json!({"x": 1, "y": {"b": 2, "a": [1, 2]}})),
                None,
            ),
            binding(
                "tools/call",
                "deploy2",
                &object(json!({"x": 1, "y": {"b": 2, "a": [1, 2]}})),
                None,
            ),
            binding(
                "tools/call",
                "deploy",
                &object(json!({"x": 2, "y": {"b": 2, "a": [1, 2]}})),
                None,
            ),
            binding(
                "tools/call",
                "deploy",
                &object(json!({"x": 1, "y": {"b": 2, "a": [2, 1]}})),
                None,
            ),
            binding(
                "tools/call",
                "deploy",
                &object(json!({"x": "1", "y": {"b": 2, "a": [1, 2]}})),
                None,
            ),
        ] {
            assert_ne!(a, other);
        }
    }

    #[test]
    fn binding_names_the_principal() {
        let args = object(json!({"x": 1}));
        let none = binding("tools/call", "t", &args, None);
        let alice = binding("tools/call", "t", &args, Some("alice"));
        assert_ne!(none, alice);
        assert_ne!(alice, binding("tools/call", "t", &args, Some("bob")));
        // A principal that looks like a JSON null is still a principal.
        assert_ne!(none, binding("tools/call", "t", &args, Some("null")));
    }

    fn states(ttl: Duration) -> RequestStates {
        let hub = Arc::new(mcp_hub::MemoryHub::new(mcp_hub::HubConfig::default()));
        RequestStates::new(hub, ttl)
    }

    fn run<F: Future>(fut: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(fut)
    }

    #[test]
    fn state_is_single_use_bound_and_never_guessed() {
        run(async {
            let states = states(Duration::from_secs(60));
            let ns = Namespace::root();
            let asked = BTreeMap::from([("confirm".to_owned(), "elicitation/create".to_owned())]);
            let id = states
                .issue(
                    &ns,
                    "bound".into(),
                    asked.clone(),
                    Some(json!({"step": 1})),
                    None,
                )
                .await
                .unwrap();
            // Another call, another tenant, a tampered or foreign id: refused.
            let other = states
                .issue(&ns, "bound".into(), asked.clone(), None, None)
                .await
                .unwrap();
            assert_eq!(
                states.redeem(&ns, &other, "other").await,
                Err(StateError::Invalid("issued for another call"))
            );
            // ... without spending it: its own call still redeems it, once.
            assert!(states.redeem(&ns, &other, "bound").await.is_ok());
            assert!(states.redeem(&ns, &other, "bound").await.is_err());
            let tenant = Namespace::new("tenant-b");
            assert!(states.redeem(&tenant, &id, "bound").await.is_err());
            let mut tampered = id.clone();
            tampered.replace_range(0..1, if id.starts_with('A') { "B" } else { "A" });
            assert!(states.redeem(&ns, &tampered, "bound").await.is_err());
            for bad in ["", "not/an/id", &"a".repeat(65), "ü"] {
                assert_eq!(
                    states.redeem(&ns, bad, "bound").await,
                    Err(StateError::Invalid("not a state this server issued"))
                );
            }
            let redeemed = states.redeem(&ns, &id, "bound").await.unwrap();
            assert_eq!(redeemed.asked, asked);
            assert_eq!(redeemed.payload, Some(json!({"step": 1})));
            // Replayed.
            assert!(states.redeem(&ns, &id, "bound").await.is_err());
        });
    }

    #[test]
    fn an_expired_record_is_refused_even_if_the_store_still_has_it() {
        run(async {
            let states = states(Duration::from_secs(60));
            let ns = Namespace::root();
            let record = StoredState {
                binding: "bound".into(),
                asked: BTreeMap::new(),
                payload: None,
                expires_at_ms: now_ms() - 1,
                asked_in: None,
            };
            let id = random_id().unwrap();
            states
                .store
                .create(
                    &ns.key(&state_key(&id)),
                    Bytes::from(serde_json::to_vec(&record).unwrap()),
                    Duration::from_secs(60),
                )
                .await
                .unwrap();
            assert_eq!(
                states.redeem(&ns, &id, "bound").await,
                Err(StateError::Invalid("expired"))
            );
        });
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
