//! Scope sets (RFC 6749 §3.3) and the MCP specification's rules for choosing them.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A set of scope tokens, written space-separated.
///
/// Parsing keeps only valid scope tokens (`%x21 / %x23-5B / %x5D-7E`) and drops duplicates;
/// the written form is sorted, so two equal sets always read the same.
///
/// ```
/// use mcp_auth::ScopeSet;
///
/// let granted = ScopeSet::parse("mcp:read files:read");
/// let needed = ScopeSet::parse("mcp:read mcp:deploy");
/// assert_eq!(granted.missing(&needed).to_string(), "mcp:deploy");
/// assert_eq!(granted.union(&needed).to_string(), "files:read mcp:deploy mcp:read");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScopeSet(BTreeSet<String>);

impl ScopeSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The scopes of a space-separated string; invalid tokens are dropped.
    pub fn parse(text: &str) -> Self {
        text.split(' ')
            .filter(|token| is_scope_token(token))
            .map(str::to_owned)
            .collect()
    }

    /// Whether `scope` is in the set.
    pub fn contains(&self, scope: &str) -> bool {
        self.0.contains(scope)
    }

    /// Whether every scope of `other` is in the set.
    pub fn contains_all(&self, other: &Self) -> bool {
        other.0.is_subset(&self.0)
    }

    /// The scopes of `needed` that are not in the set.
    pub fn missing(&self, needed: &Self) -> Self {
        Self(needed.0.difference(&self.0).cloned().collect())
    }

    /// Both sets together.
    pub fn union(&self, other: &Self) -> Self {
        Self(self.0.union(&other.0).cloned().collect())
    }

    /// Adds `scope` when it is a valid scope token; returns whether it was added.
    pub fn insert(&mut self, scope: &str) -> bool {
        is_scope_token(scope) && self.0.insert(scope.to_owned())
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many scopes the set holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The scopes in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

/// A scope token (RFC 6749 §3.3): one or more of `%x21 / %x23-5B / %x5D-7E`.
pub fn is_scope_token(token: &str) -> bool {
    !token.is_empty()
        && token
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

impl<S: AsRef<str>> FromIterator<S> for ScopeSet {
    /// Valid scope tokens only.
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .filter(|s| is_scope_token(s.as_ref()))
                .map(|s| s.as_ref().to_owned())
                .collect(),
        )
    }
}

impl fmt::Display for ScopeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, scope) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(scope)?;
        }
        Ok(())
    }
}

impl Serialize for ScopeSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ScopeSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(deserializer)?))
    }
}

/// The scopes a client asks for in its authorization request, by the specification's order:
/// those of the challenge (`scope` of the `WWW-Authenticate` that sent it here), else every
/// scope the protected resource metadata lists (`scopes_supported`), else none (`None`: the
/// request omits `scope`).
///
/// `offline_access` is requested only when the authorization server lists it and the client
/// wants refresh tokens: pass `offline_access` as the authorization server's
/// `scopes_supported` contains it and the client wants it, `None` otherwise.
///
/// ```
/// use mcp_auth::{ScopeSet, select_scopes};
///
/// let from_challenge = ScopeSet::parse("mcp:basic");
/// let supported = ["mcp:basic", "mcp:write"];
/// assert_eq!(select_scopes(Some(&from_challenge), Some(&supported[..]), None).unwrap().to_string(), "mcp:basic");
/// assert_eq!(select_scopes(None, Some(&supported[..]), None).unwrap().to_string(), "mcp:basic mcp:write");
/// assert_eq!(select_scopes::<&str>(None, None, None), None);
/// ```
pub fn select_scopes<S: AsRef<str>>(
    challenge: Option<&ScopeSet>,
    scopes_supported: Option<&[S]>,
    offline_access: Option<&str>,
) -> Option<ScopeSet> {
    let mut chosen = match (challenge, scopes_supported) {
        (Some(scopes), _) if !scopes.is_empty() => scopes.clone(),
        (_, Some(supported)) if !supported.is_empty() => supported.iter().collect(),
        _ => return None,
    };
    if let Some(scope) = offline_access {
        chosen.insert(scope);
    }
    Some(chosen)
}

/// Step-up after a 403 `insufficient_scope`: the scopes held before together with those the
/// challenge names, so the new token never loses what the old one could do.
pub fn step_up(held: &ScopeSet, challenged: &ScopeSet) -> ScopeSet {
    held.union(challenged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_keeps_valid_distinct_tokens() {
        let set = ScopeSet::parse("  b a b \"bad\" c\\d e\u{e9} a ");
        assert_eq!(set.to_string(), "a b");
        assert_eq!(set.len(), 2);
        assert_eq!(ScopeSet::parse(""), ScopeSet::new());
    }

    #[test]
    fn selection_follows_the_spec_order() {
        let supported = ["x", "y"];
        let empty: [&str; 0] = [];
        let challenge = ScopeSet::parse("z");
        let cases = [
            (Some(&challenge), Some(&supported[..]), None, Some("z")),
            (None, Some(&supported[..]), None, Some("x y")),
            (
                Some(&ScopeSet::new()),
                Some(&supported[..]),
                None,
                Some("x y"),
            ),
            (None, Some(&empty[..]), None, None),
            (None, None, None, None),
            (
                Some(&challenge),
                None,
                Some("offline_access"),
                Some("offline_access z"),
            ),
        ];
        for (challenge, supported, offline, expected) in cases {
            let got = select_scopes(challenge, supported, offline).map(|s| s.to_string());
            assert_eq!(got.as_deref(), expected);
        }
        assert_eq!(
            step_up(&ScopeSet::parse("a b"), &ScopeSet::parse("c")).to_string(),
            "a b c"
        );
    }

    #[test]
    fn a_scope_set_is_a_json_string() {
        let set: ScopeSet = serde_json::from_str(r#""b a""#).unwrap();
        assert_eq!(serde_json::to_string(&set).unwrap(), r#""a b""#);
    }
}
