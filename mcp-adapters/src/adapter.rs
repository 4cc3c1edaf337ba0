//! The adapter value: one revision, its feature row and its tables.

use crate::failure::{ErrorMapping, FailureKind};
use crate::features::Features;
use crate::operation::Operation;
use crate::revision::{self, Revision};

/// The adapter of one protocol revision.
///
/// A small `Copy` value (the revision plus a pointer to its `const` feature row): pure and
/// stateless, shared by every request. Everything that differs between revisions is reached
/// through it — flags ([`Adapter::features`]), the method map ([`Adapter::operation`],
/// [`Adapter::method`]), the failure table ([`Adapter::failure_mapping`]), decoding, header
/// checks, encoding, projection and the client-side helpers (in the other modules of this
/// crate, as further `impl Adapter` blocks).
#[derive(Clone, Copy, Debug)]
pub struct Adapter {
    revision: Revision,
    features: &'static Features,
}

// Adapters compare and hash by their revision alone: the feature row is the revision's own
// (`Adapter::new` is the only constructor), and comparing it field by field costs a hundred
// instructions where the revision compares as a pointer.
impl PartialEq for Adapter {
    fn eq(&self, other: &Self) -> bool {
        self.revision == other.revision
    }
}

impl Eq for Adapter {}

impl std::hash::Hash for Adapter {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.revision.hash(state);
    }
}

impl Adapter {
    /// The adapter of `revision`.
    pub const fn new(revision: Revision) -> Self {
        Self {
            revision,
            features: revision.features(),
        }
    }

    /// The revision.
    pub const fn revision(&self) -> Revision {
        self.revision
    }

    /// The version string (`"2025-06-18"`).
    pub const fn version(&self) -> &'static str {
        self.revision.as_str()
    }

    /// The revision's flags.
    pub const fn features(&self) -> &'static Features {
        self.features
    }

    /// MRTR: the question is the result; the client calls again with the answers.
    pub const fn can_ask(&self) -> bool {
        self.features.can_ask()
    }

    /// The question is pushed on the call's open stream and answered separately.
    pub const fn can_push_ask(&self) -> bool {
        self.features.can_push_ask()
    }

    /// The question rides in the tool call itself (`mcpAnswers` / `mcpState`).
    pub const fn asks_in_arguments(&self) -> bool {
        self.features.asks_in_arguments()
    }

    /// JSON-RPC batch arrays are accepted.
    pub const fn allows_batch(&self) -> bool {
        self.features.allows_batch
    }

    /// The revision starts with `initialize`.
    pub const fn has_handshake(&self) -> bool {
        self.features.has_handshake
    }

    /// The revision has Streamable HTTP (or HTTP+SSE) sessions.
    pub const fn has_sessions(&self) -> bool {
        self.features.has_sessions
    }

    /// Progress notifications carry `message`.
    pub const fn progress_message(&self) -> bool {
        self.features.progress_message
    }

    /// The `extensions` capability exists.
    pub const fn supports_extensions(&self) -> bool {
        self.features.supports_extensions
    }

    /// The operation a client-to-server `method` names on this revision, or `None` when the
    /// revision does not define it (for example `ping` on 2026-07-28, `server/discover` before).
    pub fn operation(&self, method: &str) -> Option<Operation> {
        revision::operation_of(self.revision, method)
    }

    /// The method that carries `operation` on this revision, or `None` when it has none
    /// (for example [`Operation::Listen`] before 2026-07-28).
    pub fn method(&self, operation: Operation) -> Option<&'static str> {
        revision::method_of(self.revision, operation)
    }

    /// Every client-to-server method of the revision with its operation.
    pub fn methods(&self) -> impl Iterator<Item = (&'static str, Operation)> + use<> {
        revision::method_map(self.revision).iter().copied()
    }

    /// The JSON-RPC code and HTTP status of `kind` on this revision.
    pub const fn failure_mapping(&self, kind: FailureKind) -> ErrorMapping {
        kind.mapping(self.revision)
    }
}

impl From<Revision> for Adapter {
    fn from(revision: Revision) -> Self {
        Self::new(revision)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::Adapter;
    use crate::revision::Revision;

    #[test]
    fn adapters_are_equal_exactly_when_their_revisions_are() {
        let all = &Revision::ALL;
        for a in all {
            for b in all {
                assert_eq!(Adapter::new(*a) == Adapter::new(*b), a == b, "{a:?} {b:?}");
            }
        }
        // Equal adapters hash alike: a set keeps one per revision.
        let set: HashSet<Adapter> = all
            .iter()
            .chain(all.iter())
            .map(|r| Adapter::new(*r))
            .collect();
        assert_eq!(set.len(), all.len());
    }
}
