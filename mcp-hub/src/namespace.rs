//! Namespaces, and the topic and key names built from them.

use std::fmt;
use std::sync::Arc;

/// A tenant's share of the hub. Every [`Topic`] and every [`Key`] is built from one, so two
/// tenants that use the same topic or key name never see each other's events or records.
///
/// The namespace is escaped before it is joined to a name (`%` and `:` are percent-encoded),
/// so no namespace and name can spell the same scoped string as another pair:
/// namespace `a:b` with name `c` and namespace `a` with name `b:c` stay apart.
///
/// [`Namespace::root`] (the empty namespace) is for a deployment with a single tenant.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Namespace {
    /// The escaped form, ready to be joined with `:`.
    escaped: Arc<str>,
}

impl Namespace {
    /// The namespace called `name`. Any string is allowed, including the empty one (the root).
    pub fn new(name: &str) -> Self {
        let mut escaped = String::with_capacity(name.len());
        for ch in name.chars() {
            match ch {
                '%' => escaped.push_str("%25"),
                ':' => escaped.push_str("%3A"),
                other => escaped.push(other),
            }
        }
        Self {
            escaped: escaped.into(),
        }
    }

    /// The empty namespace, for a deployment with a single tenant.
    pub fn root() -> Self {
        Self::new("")
    }

    /// The topic `name` in this namespace.
    pub fn topic(&self, name: &str) -> Topic {
        Topic(self.scope(name))
    }

    /// The record key `name` in this namespace.
    pub fn key(&self, name: &str) -> Key {
        Key(self.scope(name))
    }

    fn scope(&self, name: &str) -> Arc<str> {
        let mut scoped = String::with_capacity(self.escaped.len() + 1 + name.len());
        scoped.push_str(&self.escaped);
        scoped.push(':');
        scoped.push_str(name);
        scoped.into()
    }
}

impl Default for Namespace {
    fn default() -> Self {
        Self::root()
    }
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Namespace").field(&&*self.escaped).finish()
    }
}

/// A topic of the event log, scoped to a [`Namespace`]: build it with [`Namespace::topic`].
///
/// Cloning is cheap (a reference count).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Topic(Arc<str>);

impl Topic {
    /// The scoped name, `<escaped namespace>:<name>`, as backends store it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The scoped name as a shared string, for maps keyed by it.
    pub(crate) fn shared(&self) -> &Arc<str> {
        &self.0
    }
}

impl fmt::Debug for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Topic").field(&&*self.0).finish()
    }
}

impl fmt::Display for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A key of the state store, scoped to a [`Namespace`]: build it with [`Namespace::key`].
///
/// Cloning is cheap (a reference count).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Key(Arc<str>);

impl Key {
    /// The scoped name, `<escaped namespace>:<name>`, as backends store it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The scoped name as a shared string, for maps keyed by it.
    pub(crate) fn shared(&self) -> &Arc<str> {
        &self.0
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Key").field(&&*self.0).finish()
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_names_never_collide_across_namespaces() {
        let pairs = [
            ("a:b", "c"),
            ("a", "b:c"),
            ("a%3Ab", "c"),
            ("a%b", "c"),
            ("", "a:b:c"),
            ("a", ""),
            ("", "a:"),
        ];
        let mut seen = std::collections::HashSet::new();
        for (ns, name) in pairs {
            let topic = Namespace::new(ns).topic(name);
            assert!(
                seen.insert(topic.as_str().to_owned()),
                "{ns:?} {name:?} collides"
            );
        }
    }

    #[test]
    fn topics_and_keys_share_the_scoped_form() {
        let ns = Namespace::new("tenant:1");
        assert_eq!(ns.topic("ask/7").as_str(), "tenant%3A1:ask/7");
        assert_eq!(ns.key("session/x").as_str(), "tenant%3A1:session/x");
        assert_eq!(
            Namespace::root().topic("notifications").as_str(),
            ":notifications"
        );
    }
}
