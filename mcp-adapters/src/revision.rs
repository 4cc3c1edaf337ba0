//! The published protocol revisions.

use std::fmt;

/// One published MCP protocol revision.
///
/// The set is complete by definition for this release of the crate: a new revision is a new
/// variant (and a new row in every table), so the enum is `#[non_exhaustive]` and ordered by
/// date (`Revision::V2024_11_05 < Revision::V2026_07_28`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Revision {
    /// `2024-11-05`: stdio and HTTP+SSE (two endpoints).
    V2024_11_05,
    /// `2025-03-26`: Streamable HTTP with sessions, the GET stream and JSON-RPC batches.
    V2025_03_26,
    /// `2025-06-18`: no batches, `MCP-Protocol-Version` header, elicitation, structured output.
    V2025_06_18,
    /// `2025-11-25`: icons, URL elicitation, SSE polling, experimental tasks.
    V2025_11_25,
    /// `2026-07-28`: stateless; per-request `_meta`, MRTR, header mirroring, cache hints.
    V2026_07_28,
}

impl Revision {
    /// Every revision, newest first.
    pub const ALL: [Self; 5] = [
        Self::V2026_07_28,
        Self::V2025_11_25,
        Self::V2025_06_18,
        Self::V2025_03_26,
        Self::V2024_11_05,
    ];

    /// How many revisions there are: the size of a per-revision table ([`Revision::index`]).
    pub const COUNT: usize = Self::ALL.len();

    /// The newest revision this crate implements.
    pub const LATEST: Self = Self::V2026_07_28;

    /// The revision's place in a per-revision table of [`Revision::COUNT`] entries: its place
    /// in date order, oldest first (`0` for 2024-11-05). Tables sized and indexed this way
    /// grow with the enum, never by a literal.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The revision a server assumes when a Streamable HTTP request names none
    /// (no `MCP-Protocol-Version` header, no `_meta`, no session).
    pub const ASSUMED: Self = Self::V2025_03_26;

    /// The version string, as it appears on the wire (`"2025-06-18"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision whose version string is exactly `version` (case-sensitive), if any.
    pub fn parse(version: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == version)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_revision_has_its_own_index_below_count() {
        let mut seen = [false; Revision::COUNT];
        for revision in Revision::ALL {
            assert!(!seen[revision.index()], "{revision}");
            seen[revision.index()] = true;
        }
        assert!(seen.iter().all(|s| *s));
        // Date order.
        assert_eq!(Revision::V2024_11_05.index(), 0);
    }

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
    }
}
