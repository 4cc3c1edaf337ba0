//! The protocol revisions, each one a [`Descriptor`]: its version string, its feature row and
//! its method map, in one place.
//!
//! Every published revision is written below as the one before it with its differences, oldest
//! first. Nothing else in the workspace lists the revisions: [`Revision::ALL`] is derived from
//! these rows, and a revision that is not published yet (or a test's synthetic one) is a
//! [`Descriptor`] of its own, handed to [`Revision::from_descriptor`].

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use mcp_schema::SchemaProfile;

use crate::features::{AskMechanism, ErrorTable, Features, StructuredOutput, VersionHeader};
use crate::operation::{LEGACY_METHODS, MODERN_METHODS, Operation, Row};

/// Everything that makes one revision what it is: the version string, the flags and tables
/// of [`Features`], and the client-to-server method map.
///
/// The published revisions' descriptors are reached through their [`Revision`] constants
/// ([`Revision::descriptor`]). A new revision is a new descriptor, usually a copy of the newest
/// one with its differences:
///
/// ```
/// use mcp_adapters::{Descriptor, Revision};
///
/// static NEXT: Descriptor = {
///     let mut next = Revision::V2026_07_28.descriptor().derive("2099-01-01");
///     next.features.cache_hints = false;
///     next
/// };
///
/// let next = Revision::from_descriptor(&NEXT);
/// assert_eq!(next.as_str(), "2099-01-01");
/// assert!(next > Revision::LATEST);
/// assert!(!next.features().cache_hints && next.features().mirrors_headers);
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Descriptor {
    /// The version string, as it appears on the wire (`"2025-06-18"`): a date, so that the
    /// order of the strings is the order of the revisions.
    pub version: &'static str,
    /// The revision's flags and tables.
    pub features: Features,
    /// Every client-to-server method of the revision with the operation it carries.
    pub methods: &'static [(&'static str, Operation)],
}

impl Descriptor {
    /// This descriptor under another version string: the start of a new revision written as
    /// this one with differences.
    pub const fn derive(&self, version: &'static str) -> Self {
        Self { version, ..*self }
    }
}

/// 2024-11-05: stdio and HTTP+SSE (two endpoints).
const V2024_11_05: Descriptor = Descriptor {
    version: "2024-11-05",
    features: Features {
        ask: AskMechanism::InArguments,
        allows_batch: false,
        has_handshake: true,
        has_sessions: true,
        has_get_stream: true,
        sse_resumable: false,
        sse_polling: false,
        http_sse: true,
        version_header: VersionHeader::Undefined,
        mirrors_headers: false,
        per_request_meta: false,
        result_envelope: false,
        cache_hints: false,
        progress_message: false,
        client_progress: true,
        supports_extensions: false,
        extensions_at_initialize: true,
        has_titles: false,
        has_icons: false,
        has_annotations: false,
        structured_output: StructuredOutput::TextOnly,
        has_audio: false,
        has_resource_link: false,
        has_elicitation: false,
        url_elicitation: false,
        has_ping: true,
        per_request_log_level: false,
        has_listen: false,
        has_resource_subscribe: true,
        stream_close_cancels: false,
        core_tasks: false,
        error_id_optional: false,
        schema: SchemaProfile::V2024_11_05,
        definition_meta: false,
        has_completions: false,
        error_table: ErrorTable::Sessions,
    },
    methods: LEGACY_METHODS,
};

/// 2025-03-26: Streamable HTTP with sessions, the GET stream and JSON-RPC batches.
const V2025_03_26: Descriptor = Descriptor {
    version: "2025-03-26",
    features: Features {
        allows_batch: true,
        sse_resumable: true,
        http_sse: false,
        progress_message: true,
        has_annotations: true,
        has_audio: true,
        schema: SchemaProfile::V2025_03_26,
        has_completions: true,
        ..V2024_11_05.features
    },
    ..V2024_11_05
};

/// 2025-06-18: no batches, `MCP-Protocol-Version` header, elicitation, structured output.
const V2025_06_18: Descriptor = Descriptor {
    version: "2025-06-18",
    features: Features {
        ask: AskMechanism::Push,
        allows_batch: false,
        version_header: VersionHeader::AfterHandshake,
        has_titles: true,
        structured_output: StructuredOutput::ObjectOnly,
        has_resource_link: true,
        has_elicitation: true,
        schema: SchemaProfile::V2025_06_18,
        definition_meta: true,
        ..V2025_03_26.features
    },
    ..V2025_03_26
};

/// 2025-11-25: icons, URL elicitation, SSE polling, experimental tasks.
const V2025_11_25: Descriptor = Descriptor {
    version: "2025-11-25",
    features: Features {
        sse_polling: true,
        has_icons: true,
        url_elicitation: true,
        core_tasks: true,
        error_id_optional: true,
        schema: SchemaProfile::V2025_11_25,
        ..V2025_06_18.features
    },
    ..V2025_06_18
};

/// 2026-07-28: stateless; per-request `_meta`, MRTR, header mirroring, cache hints.
const V2026_07_28: Descriptor = Descriptor {
    version: "2026-07-28",
    features: Features {
        ask: AskMechanism::InputRequired,
        has_handshake: false,
        has_sessions: false,
        has_get_stream: false,
        sse_resumable: false,
        sse_polling: false,
        version_header: VersionHeader::EveryRequest,
        mirrors_headers: true,
        per_request_meta: true,
        result_envelope: true,
        cache_hints: true,
        client_progress: false,
        supports_extensions: true,
        extensions_at_initialize: false,
        structured_output: StructuredOutput::Any,
        has_ping: false,
        per_request_log_level: true,
        has_listen: true,
        has_resource_subscribe: false,
        stream_close_cancels: true,
        core_tasks: false,
        schema: SchemaProfile::V2026_07_28,
        error_table: ErrorTable::Stateless,
        ..V2025_11_25.features
    },
    methods: MODERN_METHODS,
};

/// One MCP protocol revision: a `Copy` handle on its [`Descriptor`].
///
/// Revisions compare, order and hash by their version strings (dates), so
/// `Revision::V2024_11_05 < Revision::V2026_07_28`. They cannot be `match`ed: code above the
/// adapters reads a revision's [`Features`], never which revision it is.
#[derive(Clone, Copy)]
pub struct Revision(&'static Descriptor);

impl Revision {
    /// `2024-11-05`: stdio and HTTP+SSE (two endpoints).
    pub const V2024_11_05: Self = Self(&V2024_11_05);
    /// `2025-03-26`: Streamable HTTP with sessions, the GET stream and JSON-RPC batches.
    pub const V2025_03_26: Self = Self(&V2025_03_26);
    /// `2025-06-18`: no batches, `MCP-Protocol-Version` header, elicitation, structured output.
    pub const V2025_06_18: Self = Self(&V2025_06_18);
    /// `2025-11-25`: icons, URL elicitation, SSE polling, experimental tasks.
    pub const V2025_11_25: Self = Self(&V2025_11_25);
    /// `2026-07-28`: stateless; per-request `_meta`, MRTR, header mirroring, cache hints.
    pub const V2026_07_28: Self = Self(&V2026_07_28);

    /// Every published revision, newest first: the default set of servers and clients
    /// ([`AdapterSet::all`](crate::AdapterSet::all)).
    pub const ALL: [Self; 5] = [
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];

    /// The newest published revision.
    pub const LATEST: Self = Self::ALL[0];

    /// The revision a server assumes when a Streamable HTTP request names none
    /// (no `MCP-Protocol-Version` header, no `_meta`, no session).
    pub const ASSUMED: Self = Self::V2025_03_26;

    /// The revision `descriptor` describes: a revision this crate does not publish (the next
    /// one, or a test's).
    ///
    /// # Panics
    ///
    /// When the version string is empty or is not visible ASCII (it travels in the
    /// `MCP-Protocol-Version` header). In a `const` or `static` initializer that is a compile
    /// error.
    pub const fn from_descriptor(descriptor: &'static Descriptor) -> Self {
        let bytes = descriptor.version.as_bytes();
        assert!(!bytes.is_empty(), "a revision needs a version string");
        let mut i = 0;
        while i < bytes.len() {
            assert!(
                bytes[i] > b' ' && bytes[i] < 0x7f,
                "a version string is visible ASCII"
            );
            i += 1;
        }
        Self(descriptor)
    }

    /// The revision's descriptor.
    pub const fn descriptor(self) -> &'static Descriptor {
        self.0
    }

    /// The revision's flags and tables.
    pub const fn features(self) -> &'static Features {
        &self.0.features
    }

    /// The version string, as it appears on the wire (`"2025-06-18"`).
    pub const fn as_str(self) -> &'static str {
        self.0.version
    }

    /// The published revision whose version string is exactly `version` (case-sensitive), if
    /// any. A set of revisions that includes unpublished ones resolves versions itself
    /// ([`AdapterSet::by_version`](crate::AdapterSet::by_version)).
    pub fn parse(version: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == version)
    }
}

impl PartialEq for Revision {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0) || self.0.version == other.0.version
    }
}

impl Eq for Revision {}

impl PartialOrd for Revision {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Revision {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.version.cmp(other.0.version)
    }
}

impl Hash for Revision {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.version.hash(state);
    }
}

impl fmt::Debug for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Revision({})", self.0.version)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The client-to-server method map of `revision`.
pub(crate) const fn method_map(revision: Revision) -> &'static [Row] {
    revision.descriptor().methods
}

/// The operation `method` names on `revision`, if the revision defines it.
pub(crate) fn operation_of(revision: Revision, method: &str) -> Option<Operation> {
    method_map(revision)
        .iter()
        .find(|(m, _)| *m == method)
        .map(|(_, op)| *op)
}

/// The method that carries `operation` on `revision`, if the revision has it.
pub(crate) fn method_of(revision: Revision, operation: Operation) -> Option<&'static str> {
    method_map(revision)
        .iter()
        .find(|(_, op)| *op == operation)
        .map(|(m, _)| *m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_round_trips_and_is_exact() {
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Some(r));
            assert_eq!(r.to_string(), r.as_str());
        }
        for bad in [
            "",
            "2025-06-18 ",
            "2025-6-18",
            "draft",
            "2099-01-01",
            "2026-07-28-RC",
        ] {
            assert_eq!(Revision::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn all_is_newest_first_and_ordering_follows_dates() {
        let mut sorted = Revision::ALL;
        sorted.sort();
        sorted.reverse();
        assert_eq!(sorted, Revision::ALL);
        assert!(
            Revision::ALL
                .windows(2)
                .all(|w| w[0].as_str() > w[1].as_str())
        );
        assert_eq!(Revision::LATEST, Revision::V2026_07_28);
    }

    static NEXT: Descriptor = {
        let mut next = Revision::V2026_07_28.descriptor().derive("2099-01-01");
        next.features.has_ping = true;
        next
    };

    #[test]
    fn an_unpublished_revision_is_its_descriptor() {
        let next = Revision::from_descriptor(&NEXT);
        assert_ne!(next, Revision::LATEST);
        assert_eq!(next, Revision::from_descriptor(&NEXT));
        assert!(next > Revision::LATEST);
        assert_eq!(Revision::parse("2099-01-01"), None);
        assert!(next.features().has_ping && !Revision::LATEST.features().has_ping);
        assert_eq!(format!("{next:?}"), "Revision(2099-01-01)");
    }

    #[test]
    #[should_panic(expected = "visible ASCII")]
    fn a_version_string_must_fit_a_header() {
        static BAD: Descriptor = Revision::V2026_07_28.descriptor().derive("2099 01 01");
        let _ = Revision::from_descriptor(&BAD);
    }
}
