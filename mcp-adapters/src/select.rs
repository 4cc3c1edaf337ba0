//! Picking exactly one adapter per request.

use crate::adapter::Adapter;
use crate::failure::Failure;
use crate::revision::Revision;

/// A version hint read from one place of a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hint<'a> {
    /// The place does not carry a version.
    #[default]
    Absent,
    /// The version string found there.
    Value(&'a str),
    /// Something is there but it is not a version string (a non-string `_meta` value, a header
    /// value that is not visible ASCII).
    Malformed,
}

impl<'a> Hint<'a> {
    /// `Value(v)` for `Some(v)`, `Absent` for `None`.
    pub fn from_option(value: Option<&'a str>) -> Self {
        value.map_or(Self::Absent, Self::Value)
    }
}

/// Everything about a request that can pick its revision.
///
/// Build it with [`SelectionInput::from_body`] (which reads the
/// body's `_meta` version and `initialize` params) and fill in the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelectionInput<'a> {
    /// An explicit pin by the operator, typically a query parameter (`?mcp=2025-06-18`).
    pub pin: Option<&'a str>,
    /// The `MCP-Protocol-Version` header.
    pub header: Hint<'a>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]` of the (first) message.
    pub meta: Hint<'a>,
    /// `Some(params.protocolVersion)` when the message is `initialize`.
    pub initialize: Option<Hint<'a>>,
    /// The version stored with the session named by `Mcp-Session-Id` (or fixed on a stdio
    /// connection by an earlier `initialize`).
    pub session: Option<&'a str>,
}

/// Which rule picked the adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SelectedBy {
    /// The explicit pin.
    Pin,
    /// The body's `_meta` protocol version.
    Meta,
    /// The `MCP-Protocol-Version` header.
    Header,
    /// `initialize` negotiation (the requested version if served, else the newest served
    /// revision that has a handshake).
    Initialize,
    /// The session's stored version.
    Session,
    /// Nothing named a version: 2025-03-26.
    Assumed,
}

/// The adapter chosen for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selected {
    /// The adapter that decodes and answers the request.
    pub adapter: Adapter,
    /// Why it was chosen.
    pub by: SelectedBy,
}

/// A request refused during selection, with the adapter that renders the error.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected {
    /// The adapter whose failure table and envelope render the error (the newest served).
    pub adapter: Adapter,
    /// What went wrong.
    pub failure: Failure,
}

/// The revisions a server (or client) serves, and the rules that pick one per request.
///
/// The rules, first match wins:
///
/// 1. an explicit pin (query parameter) resolves or is refused;
/// 2. a malformed `_meta` version is refused (`MissingMeta`), a malformed header too
///    (`HeaderMismatch`);
/// 3. header and `_meta` both present and different: `HeaderMismatch` (`-32020` on 2026-07-28);
/// 4. the `_meta` protocol version;
/// 5. the `MCP-Protocol-Version` header;
/// 6. `initialize`: the requested version if served and it has a handshake, else the newest
///    served revision that has one (a version the set does not serve is never echoed); if
///    none has a handshake, `UnsupportedVersion`;
/// 7. the session's stored version;
/// 8. otherwise 2025-03-26 if served. A set without it refuses with `HeaderMismatch`
///    ("missing header") when its newest revision mirrors headers (2026-07-28 says it MUST),
///    else with `UnsupportedVersion` for `2025-03-26`.
///
/// An unknown or unserved version is refused with `UnsupportedVersion`, whose `data` lists the
/// served versions newest first, rendered by the newest served adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSet {
    /// Newest first, no duplicates, never empty.
    adapters: Vec<Adapter>,
    revisions: Vec<Revision>,
}

/// [`AdapterSet::new`] was given no revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("an adapter set needs at least one revision")]
pub struct EmptySetError;

impl Default for AdapterSet {
    /// Every revision.
    fn default() -> Self {
        Self::all()
    }
}

impl AdapterSet {
    /// Every revision this crate implements.
    pub fn all() -> Self {
        Self::from_sorted(Revision::ALL.to_vec())
    }

    /// Exactly the given revisions (order and duplicates do not matter).
    pub fn new(revisions: impl IntoIterator<Item = Revision>) -> Result<Self, EmptySetError> {
        let mut list: Vec<Revision> = revisions.into_iter().collect();
        list.sort_unstable_by(|a, b| b.cmp(a));
        list.dedup();
        if list.is_empty() {
            return Err(EmptySetError);
        }
        Ok(Self::from_sorted(list))
    }

    /// One revision only.
    pub fn only(revision: Revision) -> Self {
        Self::from_sorted(vec![revision])
    }

    fn from_sorted(revisions: Vec<Revision>) -> Self {
        Self {
            adapters: revisions.iter().copied().map(Adapter::new).collect(),
            revisions,
        }
    }

    /// The served revisions that have an `initialize` handshake: the set an HTTP+SSE
    /// (2024-11-05 transport) endpoint uses, since 2026-07-28's required headers cannot travel
    /// with HTTP+SSE messages. `EmptySetError` when none is served.
    pub fn handshake_only(&self) -> Result<Self, EmptySetError> {
        Self::new(
            self.revisions
                .iter()
                .copied()
                .filter(|r| Adapter::new(*r).has_handshake()),
        )
    }

    /// The served adapters, newest first.
    pub fn adapters(&self) -> &[Adapter] {
        &self.adapters
    }

    /// The served revisions, newest first (the order of `supportedVersions`).
    pub fn revisions(&self) -> &[Revision] {
        &self.revisions
    }

    /// The served version strings, newest first (`DiscoverResult.supportedVersions`).
    pub fn versions(&self) -> Vec<&'static str> {
        self.revisions.iter().map(|r| r.as_str()).collect()
    }

    /// The adapter of `revision`, if served.
    pub fn get(&self, revision: Revision) -> Option<Adapter> {
        self.adapters
            .iter()
            .copied()
            .find(|a| a.revision() == revision)
    }

    /// The adapter whose version string is `version`, if served.
    pub fn by_version(&self, version: &str) -> Option<Adapter> {
        self.adapters
            .iter()
            .find(|a| a.version() == version)
            .copied()
    }

    /// The newest served adapter; it renders failures that happen before any adapter is
    /// chosen.
    pub fn newest(&self) -> Adapter {
        self.adapters[0]
    }

    /// The newest served adapter that has an `initialize` handshake.
    pub fn newest_with_handshake(&self) -> Option<Adapter> {
        self.adapters.iter().copied().find(Adapter::has_handshake)
    }

    /// `version` resolved, or refused with `UnsupportedVersion`.
    pub fn resolve(&self, version: &str) -> Result<Adapter, Rejected> {
        self.by_version(version)
            .ok_or_else(|| self.reject(Failure::unsupported_version(version, &self.revisions)))
    }

    /// `initialize` negotiation: the requested version if served and it has a handshake,
    /// else the newest served revision with a handshake.
    pub fn negotiate(&self, requested: Option<&str>) -> Result<Adapter, Rejected> {
        if let Some(adapter) = requested.and_then(|v| self.by_version(v))
            && adapter.has_handshake()
        {
            return Ok(adapter);
        }
        self.newest_with_handshake().ok_or_else(|| {
            self.reject(Failure::unsupported_version(
                requested.unwrap_or(""),
                &self.revisions,
            ))
        })
    }

    /// Picks the adapter for one request (see the rules on the type).
    pub fn select(&self, input: &SelectionInput<'_>) -> Result<Selected, Rejected> {
        let pick = |adapter, by| Selected { adapter, by };
        if let Some(pin) = input.pin {
            return self.resolve(pin).map(|a| pick(a, SelectedBy::Pin));
        }
        if input.meta == Hint::Malformed {
            return Err(self.reject(Failure::missing_meta(
                "_meta \"io.modelcontextprotocol/protocolVersion\" must be a string",
            )));
        }
        if input.header == Hint::Malformed {
            return Err(self.reject(Failure::header_mismatch(
                "malformed MCP-Protocol-Version header",
            )));
        }
        match (input.header, input.meta) {
            (Hint::Value(header), Hint::Value(meta)) if header != meta => {
                let renderer = self.by_version(meta).unwrap_or_else(|| self.newest());
                return Err(Rejected {
                    adapter: renderer,
                    failure: Failure::header_mismatch(format!(
                        "MCP-Protocol-Version header {header:?} does not match _meta protocolVersion {meta:?}"
                    )),
                });
            }
            (_, Hint::Value(meta)) => {
                return self.resolve(meta).map(|a| pick(a, SelectedBy::Meta));
            }
            (Hint::Value(header), _) => {
                return self.resolve(header).map(|a| pick(a, SelectedBy::Header));
            }
            _ => {}
        }
        if let Some(requested) = input.initialize {
            let requested = match requested {
                Hint::Value(v) => Some(v),
                Hint::Absent | Hint::Malformed => None,
            };
            return self
                .negotiate(requested)
                .map(|a| pick(a, SelectedBy::Initialize));
        }
        if let Some(stored) = input.session {
            return self.resolve(stored).map(|a| pick(a, SelectedBy::Session));
        }
        if let Some(adapter) = self.get(Revision::ASSUMED) {
            return Ok(pick(adapter, SelectedBy::Assumed));
        }
        let failure = if self.newest().features().mirrors_headers {
            Failure::header_mismatch("missing MCP-Protocol-Version header")
        } else {
            Failure::unsupported_version(Revision::ASSUMED.as_str(), &self.revisions)
        };
        Err(self.reject(failure))
    }

    /// Holds a request of a session to the revision the session negotiated (`stored`): a
    /// request that named no revision gets the session's; one that named another (header,
    /// `_meta` or pin) is refused with `UnsupportedVersion` (400), rendered by the session's
    /// revision, whose `data.supported` lists only that revision. A session speaks the
    /// revision it negotiated and no other (its batches, error codes and asking mechanism
    /// follow from it).
    pub fn confirm_session(
        &self,
        selected: Selected,
        stored: Option<&str>,
    ) -> Result<Adapter, Rejected> {
        let Some(stored) = stored else {
            return Ok(selected.adapter);
        };
        let session = self.resolve(stored)?;
        match selected.by {
            SelectedBy::Assumed | SelectedBy::Session | SelectedBy::Initialize => Ok(session),
            SelectedBy::Pin | SelectedBy::Meta | SelectedBy::Header
                if selected.adapter == session =>
            {
                Ok(session)
            }
            SelectedBy::Pin | SelectedBy::Meta | SelectedBy::Header => {
                let named = selected.adapter.version();
                let mut failure = Failure::unsupported_version(named, &[session.revision()]);
                failure.message = format!(
                    "this session negotiated protocol version {stored}; the request names {named}"
                );
                Err(Rejected {
                    adapter: session,
                    failure,
                })
            }
        }
    }

    fn reject(&self, failure: Failure) -> Rejected {
        Rejected {
            adapter: self.newest(),
            failure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::FailureKind;

    fn input<'a>() -> SelectionInput<'a> {
        SelectionInput::default()
    }

    #[test]
    fn set_is_sorted_deduplicated_and_never_empty() {
        let set = AdapterSet::new([
            Revision::V2025_03_26,
            Revision::V2026_07_28,
            Revision::V2025_03_26,
        ])
        .unwrap();
        assert_eq!(set.versions(), ["2026-07-28", "2025-03-26"]);
        assert_eq!(AdapterSet::new([]), Err(EmptySetError));
        assert_eq!(AdapterSet::all().versions().len(), 5);
        assert_eq!(AdapterSet::all().newest().revision(), Revision::V2026_07_28);
    }

    /// One row per rule: (what the request says, the version picked or the failure kind).
    #[test]
    fn rules_in_order() {
        type Row<'a> = (
            &'a str,
            SelectionInput<'a>,
            Result<(&'a str, SelectedBy), FailureKind>,
        );
        let all: Vec<Row<'_>> = vec![
            (
                "pin outranks a header/meta disagreement",
                SelectionInput {
                    pin: Some("2025-06-18"),
                    header: Hint::Value("2025-11-25"),
                    meta: Hint::Value("2026-07-28"),
                    ..input()
                },
                Ok(("2025-06-18", SelectedBy::Pin)),
            ),
            (
                "unknown pin",
                SelectionInput {
                    pin: Some("1999-01-01"),
                    ..input()
                },
                Err(FailureKind::UnsupportedVersion),
            ),
            (
                "header and meta disagree",
                SelectionInput {
                    header: Hint::Value("2025-11-25"),
                    meta: Hint::Value("2026-07-28"),
                    ..input()
                },
                Err(FailureKind::HeaderMismatch),
            ),
            (
                "meta",
                SelectionInput {
                    meta: Hint::Value("2026-07-28"),
                    session: Some("2025-06-18"),
                    ..input()
                },
                Ok(("2026-07-28", SelectedBy::Meta)),
            ),
            (
                "meta and header agree",
                SelectionInput {
                    header: Hint::Value("2026-07-28"),
                    meta: Hint::Value("2026-07-28"),
                    ..input()
                },
                Ok(("2026-07-28", SelectedBy::Meta)),
            ),
            (
                "malformed meta",
                SelectionInput {
                    meta: Hint::Malformed,
                    ..input()
                },
                Err(FailureKind::MissingMeta),
            ),
            (
                "malformed header",
                SelectionInput {
                    header: Hint::Malformed,
                    ..input()
                },
                Err(FailureKind::HeaderMismatch),
            ),
            (
                "header",
                SelectionInput {
                    header: Hint::Value("2025-06-18"),
                    session: Some("2025-11-25"),
                    ..input()
                },
                Ok(("2025-06-18", SelectedBy::Header)),
            ),
            (
                "unknown header",
                SelectionInput {
                    header: Hint::Value("2025-13-01"),
                    ..input()
                },
                Err(FailureKind::UnsupportedVersion),
            ),
            (
                "initialize echoes a served version",
                SelectionInput {
                    initialize: Some(Hint::Value("2024-11-05")),
                    ..input()
                },
                Ok(("2024-11-05", SelectedBy::Initialize)),
            ),
            (
                "initialize with an unknown version gets the newest handshake revision",
                SelectionInput {
                    initialize: Some(Hint::Value("2099-01-01")),
                    ..input()
                },
                Ok(("2025-11-25", SelectedBy::Initialize)),
            ),
            (
                "initialize asking for 2026-07-28 (no handshake) is downgraded",
                SelectionInput {
                    initialize: Some(Hint::Value("2026-07-28")),
                    ..input()
                },
                Ok(("2025-11-25", SelectedBy::Initialize)),
            ),
            (
                "session",
                SelectionInput {
                    session: Some("2025-06-18"),
                    ..input()
                },
                Ok(("2025-06-18", SelectedBy::Session)),
            ),
            ("nothing", input(), Ok(("2025-03-26", SelectedBy::Assumed))),
        ];
        let set = AdapterSet::all();
        for (name, row, expected) in all {
            let got = set
                .select(&row)
                .map(|s| (s.adapter.version(), s.by))
                .map_err(|r| r.failure.kind);
            assert_eq!(got, expected, "{name}");
        }
    }

    #[test]
    fn unsupported_version_lists_the_served_versions() {
        let set = AdapterSet::new([Revision::V2026_07_28, Revision::V2025_06_18]).unwrap();
        let rejected = set
            .select(&SelectionInput {
                header: Hint::Value("2025-03-26"),
                ..SelectionInput::default()
            })
            .unwrap_err();
        assert_eq!(rejected.adapter.revision(), Revision::V2026_07_28);
        assert_eq!(
            rejected.failure.data,
            Some(
                serde_json::json!({"supported": ["2026-07-28", "2025-06-18"], "requested": "2025-03-26"})
            )
        );
        let mapping = rejected.failure.mapping(rejected.adapter.revision());
        assert_eq!((mapping.code, mapping.status.as_u16()), (-32022, 400));
    }

    #[test]
    fn negotiation_never_echoes_an_unserved_version() {
        let set = AdapterSet::new([Revision::V2026_07_28, Revision::V2025_06_18]).unwrap();
        for requested in [
            "2025-11-25",
            "2025-03-26",
            "2024-11-05",
            "2026-07-28",
            "junk",
        ] {
            let chosen = set.negotiate(Some(requested)).unwrap();
            assert_eq!(chosen.version(), "2025-06-18", "{requested}");
        }
        assert_eq!(set.negotiate(None).unwrap().version(), "2025-06-18");
    }

    #[test]
    fn modern_only_set_refuses_initialize_and_unlabelled_requests() {
        let set = AdapterSet::only(Revision::V2026_07_28);
        let init = set
            .select(&SelectionInput {
                initialize: Some(Hint::Value("2025-06-18")),
                ..SelectionInput::default()
            })
            .unwrap_err();
        assert_eq!(init.failure.kind, FailureKind::UnsupportedVersion);
        assert_eq!(
            init.failure.data.as_ref().unwrap()["supported"],
            serde_json::json!(["2026-07-28"])
        );
        let bare = set.select(&SelectionInput::default()).unwrap_err();
        assert_eq!(bare.failure.kind, FailureKind::HeaderMismatch);
        assert_eq!(bare.failure.mapping(Revision::V2026_07_28).code, -32020);
    }

    #[test]
    fn legacy_set_without_2025_03_26_refuses_unlabelled_requests_as_unsupported() {
        let set = AdapterSet::new([Revision::V2025_11_25, Revision::V2025_06_18]).unwrap();
        let bare = set.select(&SelectionInput::default()).unwrap_err();
        assert_eq!(bare.failure.kind, FailureKind::UnsupportedVersion);
        assert_eq!(bare.failure.data.unwrap()["requested"], "2025-03-26");
    }

    #[test]
    fn handshake_only_drops_2026() {
        let sse = AdapterSet::all().handshake_only().unwrap();
        assert_eq!(sse.newest().revision(), Revision::V2025_11_25);
        assert_eq!(sse.revisions().len(), 4);
        assert_eq!(
            AdapterSet::only(Revision::V2026_07_28).handshake_only(),
            Err(EmptySetError)
        );
    }

    #[test]
    fn a_session_is_held_to_the_revision_it_negotiated() {
        let set = AdapterSet::all();
        let pick = |revision, by| Selected {
            adapter: Adapter::new(revision),
            by,
        };
        // (selected, stored, outcome: Ok(revision) or Err(rendering revision))
        let table = [
            (
                pick(Revision::V2025_03_26, SelectedBy::Assumed),
                Some("2025-11-25"),
                Ok(Revision::V2025_11_25),
            ),
            (
                pick(Revision::V2025_11_25, SelectedBy::Header),
                Some("2025-11-25"),
                Ok(Revision::V2025_11_25),
            ),
            (
                pick(Revision::V2025_03_26, SelectedBy::Header),
                Some("2025-11-25"),
                Err(Revision::V2025_11_25),
            ),
            (
                pick(Revision::V2025_06_18, SelectedBy::Pin),
                Some("2025-03-26"),
                Err(Revision::V2025_03_26),
            ),
            (
                pick(Revision::V2025_06_18, SelectedBy::Meta),
                Some("2025-06-18"),
                Ok(Revision::V2025_06_18),
            ),
            (
                pick(Revision::V2025_06_18, SelectedBy::Header),
                None,
                Ok(Revision::V2025_06_18),
            ),
        ];
        for (selected, stored, expected) in table {
            let got = set.confirm_session(selected, stored);
            match (got, expected) {
                (Ok(adapter), Ok(revision)) => assert_eq!(adapter.revision(), revision),
                (Err(rejected), Err(revision)) => {
                    assert_eq!(rejected.adapter.revision(), revision);
                    assert_eq!(rejected.failure.kind, FailureKind::UnsupportedVersion);
                    assert_eq!(
                        rejected.failure.data.as_ref().unwrap()["supported"],
                        serde_json::json!([revision.as_str()])
                    );
                    assert_eq!(
                        rejected.failure.mapping(revision).status,
                        http::StatusCode::BAD_REQUEST
                    );
                }
                (got, expected) => {
                    panic!("{selected:?} {stored:?}: {got:?}, expected {expected:?}")
                }
            }
        }
    }

    #[test]
    fn a_stored_session_version_no_longer_served_is_refused() {
        let set = AdapterSet::only(Revision::V2025_11_25);
        let rejected = set
            .select(&SelectionInput {
                session: Some("2025-06-18"),
                ..SelectionInput::default()
            })
            .unwrap_err();
        assert_eq!(rejected.failure.kind, FailureKind::UnsupportedVersion);
    }
}
