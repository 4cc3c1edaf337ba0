//! The result cache of 2026-07-28: `ttlMs` and `cacheScope` on complete results.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mcp_wire::names::method;
use serde_json::Value;

/// Cached results by key (method plus the params that change the result).
#[derive(Debug, Default)]
pub(crate) struct Cache {
    entries: HashMap<String, (Instant, Value)>,
    max_entries: usize,
}

const CACHEABLE: [&str; 6] = [
    method::SERVER_DISCOVER,
    method::TOOLS_LIST,
    method::PROMPTS_LIST,
    method::RESOURCES_LIST,
    method::RESOURCES_TEMPLATES_LIST,
    method::RESOURCES_READ,
];

impl Cache {
    pub(crate) fn new(max_entries: usize) -> Self {
        Self {
            entries: HashMap::new(),
            max_entries,
        }
    }

    /// The key of a request, or `None` when its results are never cached.
    pub(crate) fn key(method_name: &str, params: Option<&Value>) -> Option<String> {
        if !CACHEABLE.contains(&method_name) {
            return None;
        }
        let part = |name: &str| {
            params
                .and_then(|p| p.get(name))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        Some(format!(
            "{method_name}\n{}\n{}",
            part("uri"),
            part("cursor")
        ))
    }

    pub(crate) fn get(&mut self, key: &str, now: Instant) -> Option<Value> {
        match self.entries.get(key) {
            Some((expires, value)) if now < *expires => Some(value.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Stores a complete result under `key` for its `ttlMs` (absent or negative means 0: not
    /// stored). Both `public` and `private` scopes are kept: this cache serves one client.
    pub(crate) fn put(&mut self, key: String, result: &Value, now: Instant) {
        let ttl = result.get("ttlMs").and_then(Value::as_i64).unwrap_or(0);
        if ttl <= 0 || self.max_entries == 0 {
            return;
        }
        if self.entries.len() >= self.max_entries {
            self.entries.retain(|_, (expires, _)| now < *expires);
            if self.entries.len() >= self.max_entries {
                return;
            }
        }
        let ttl = Duration::from_millis(u64::try_from(ttl).unwrap_or(0));
        self.entries.insert(key, (now + ttl, result.clone()));
    }

    /// Drops what a notification says is stale.
    pub(crate) fn invalidate(&mut self, notification: &str, params: Option<&Value>) {
        let prefixes: &[&str] = match notification {
            method::NOTIFICATION_TOOLS_LIST_CHANGED => &[method::TOOLS_LIST],
            method::NOTIFICATION_PROMPTS_LIST_CHANGED => &[method::PROMPTS_LIST],
            method::NOTIFICATION_RESOURCES_LIST_CHANGED => {
                &[method::RESOURCES_LIST, method::RESOURCES_TEMPLATES_LIST]
            }
            method::NOTIFICATION_RESOURCES_UPDATED => {
                let uri = params
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let key = format!("{}\n{uri}\n", method::RESOURCES_READ);
                self.entries.retain(|k, _| !k.starts_with(&key));
                return;
            }
            _ => return,
        };
        self.entries
            .retain(|k, _| !prefixes.iter().any(|p| k.split('\n').next() == Some(p)));
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ttl_keys_and_invalidation() {
        let now = Instant::now();
        let mut cache = Cache::new(16);
        assert_eq!(Cache::key("tools/call", None), None);
        let tools = Cache::key("tools/list", None).unwrap();
        let page2 = Cache::key("tools/list", Some(&json!({"cursor": "2"}))).unwrap();
        let read = Cache::key("resources/read", Some(&json!({"uri": "a://b"}))).unwrap();
        cache.put(tools.clone(), &json!({"ttlMs": 1000, "tools": []}), now);
        cache.put(page2.clone(), &json!({"ttlMs": 0, "tools": []}), now);
        cache.put(read.clone(), &json!({"ttlMs": -5}), now);
        assert!(cache.get(&tools, now).is_some());
        assert!(
            cache
                .get(&tools, now + Duration::from_millis(1000))
                .is_none()
        );
        assert!(cache.get(&page2, now).is_none());
        assert!(cache.get(&read, now).is_none());

        cache.put(tools.clone(), &json!({"ttlMs": 1000}), now);
        cache.put(read.clone(), &json!({"ttlMs": 1000}), now);
        cache.invalidate("notifications/prompts/list_changed", None);
        assert!(cache.get(&tools, now).is_some());
        cache.invalidate("notifications/tools/list_changed", None);
        assert!(cache.get(&tools, now).is_none());
        cache.invalidate(
            "notifications/resources/updated",
            Some(&json!({"uri": "other"})),
        );
        assert!(cache.get(&read, now).is_some());
        cache.invalidate(
            "notifications/resources/updated",
            Some(&json!({"uri": "a://b"})),
        );
        assert!(cache.get(&read, now).is_none());
    }
}
