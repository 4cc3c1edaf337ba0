//! [`ProjectionCache`]: each tool is projected once per profile, then looked up per request.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;

use crate::profile::SchemaProfile;
use crate::projection::{OutputProjection, Projection, project_input, project_output};

/// What one revision (profile) is shown of one tool.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolProjection {
    /// The projected `inputSchema`, or why the tool is not offered.
    pub input: Projection,
    /// The projected `outputSchema`; `None` when the tool declares none.
    pub output: Option<OutputProjection>,
}

impl ToolProjection {
    /// Projects a tool's declared schemas onto `profile`.
    pub fn compute(input: &Value, output: Option<&Value>, profile: &SchemaProfile) -> Self {
        Self {
            input: project_input(input, profile),
            output: output.map(|schema| project_output(schema, profile)),
        }
    }

    /// Whether the tool is listed on the revision.
    pub fn is_offered(&self) -> bool {
        self.input.is_offered()
    }
}

/// Projections computed once per (tool name, profile), shared as `Arc`s.
///
/// Lookups take a read lock, hash the tool name, and clone an `Arc`: nothing is projected or
/// allocated per request once an entry exists. The cache never evicts on its own; it holds at
/// most one entry per registered tool and distinct profile. Call
/// [`invalidate_tool`](Self::invalidate_tool) when a tool is re-registered with other schemas.
///
/// ```
/// use mcp_schema::{ProjectionCache, SchemaProfile, ToolProjection};
/// use serde_json::json;
///
/// let cache = ProjectionCache::new();
/// let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
/// let first = cache.get_or_insert_with("search", &SchemaProfile::V2025_06_18, || {
///     ToolProjection::compute(&schema, None, &SchemaProfile::V2025_06_18)
/// });
/// let again = cache.get("search", &SchemaProfile::V2025_06_18).unwrap();
/// assert!(std::sync::Arc::ptr_eq(&first, &again));
/// ```
#[derive(Debug, Default)]
pub struct ProjectionCache {
    entries: RwLock<HashMap<SchemaProfile, PerProfile>>,
}

/// One profile's projections, keyed by tool name (looked up by `&str`, without allocating).
type PerProfile = HashMap<Box<str>, Arc<ToolProjection>>;

impl ProjectionCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The cached projection of `tool` for `profile`, if computed.
    pub fn get(&self, tool: &str, profile: &SchemaProfile) -> Option<Arc<ToolProjection>> {
        // A panic while holding the lock cannot leave a half-written entry (insertion is one
        // `HashMap::insert`), so a poisoned lock is still safe to read.
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries.get(profile)?.get(tool).cloned()
    }

    /// The cached projection, or the result of `compute`, stored for next time. `compute` runs
    /// without the lock held; if two threads race, the first stored result wins and both get
    /// it.
    pub fn get_or_insert_with(
        &self,
        tool: &str,
        profile: &SchemaProfile,
        compute: impl FnOnce() -> ToolProjection,
    ) -> Arc<ToolProjection> {
        if let Some(hit) = self.get(tool, profile) {
            return hit;
        }
        let computed = Arc::new(compute());
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        entries
            .entry(*profile)
            .or_default()
            .entry(tool.into())
            .or_insert(computed)
            .clone()
    }

    /// The cached projection, computing it with [`ToolProjection::compute`] the first time.
    pub fn get_or_project(
        &self,
        tool: &str,
        profile: &SchemaProfile,
        input: &Value,
        output: Option<&Value>,
    ) -> Arc<ToolProjection> {
        self.get_or_insert_with(tool, profile, || {
            ToolProjection::compute(input, output, profile)
        })
    }

    /// Forgets every projection of `tool` (for example because it was re-registered).
    pub fn invalidate_tool(&self, tool: &str) {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        for per_profile in entries.values_mut() {
            per_profile.remove(tool);
        }
    }

    /// Forgets everything.
    pub fn clear(&self) {
        self.entries
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// How many (tool, profile) projections are cached.
    pub fn len(&self) -> usize {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries.values().map(HashMap::len).sum()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;

    #[test]
    fn computes_once_per_tool_and_profile() {
        let cache = ProjectionCache::new();
        let calls = AtomicUsize::new(0);
        let input = json!({"type": "object"});
        let compute = |profile: SchemaProfile| {
            calls.fetch_add(1, Ordering::SeqCst);
            ToolProjection::compute(&input, None, &profile)
        };
        for _ in 0..3 {
            for profile in [
                SchemaProfile::V2024_11_05,
                SchemaProfile::V2025_03_26,
                SchemaProfile::V2025_06_18,
                SchemaProfile::V2025_11_25,
                SchemaProfile::V2026_07_28,
            ] {
                cache.get_or_insert_with("t", &profile, || compute(profile));
            }
        }
        // 2024-11-05 and 2025-03-26 share a profile.
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(cache.len(), 4);
        assert!(cache.get("other", &SchemaProfile::V2025_06_18).is_none());
        cache.invalidate_tool("t");
        assert!(cache.is_empty());
        cache.get_or_project(
            "t",
            &SchemaProfile::V2026_07_28,
            &input,
            Some(&json!({"type": "string"})),
        );
        let hit = cache.get("t", &SchemaProfile::V2026_07_28).unwrap();
        assert!(hit.is_offered());
        assert_eq!(
            hit.output.as_ref().unwrap().schema(),
            Some(&json!({"type": "string"}))
        );
        cache.clear();
        assert!(cache.is_empty());
    }

    #[test]
    fn concurrent_first_lookups_share_one_result() {
        let cache = Arc::new(ProjectionCache::new());
        let input = json!({"type": "object"});
        let results: Vec<Arc<ToolProjection>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let cache = Arc::clone(&cache);
                    let input = &input;
                    scope.spawn(move || {
                        cache.get_or_project("t", &SchemaProfile::V2025_03_26, input, None)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1])));
        assert_eq!(cache.len(), 1);
    }
}
