//! Cursors: printable positions in a topic's event log.

use std::fmt;
use std::str::FromStr;

/// A position in one topic's event log: "every event up to and including this one".
///
/// A cursor is opaque to callers but printable, so it can travel as an SSE event id and come
/// back as `Last-Event-ID`. Its text form is two decimal numbers joined by a dash, `7-42`, with
/// no sign and no leading zeros; [`FromStr`] accepts exactly what [`Display`](fmt::Display)
/// produces. What the numbers mean belongs to the backend that issued the cursor:
///
/// - the memory backend writes `<epoch>-<sequence>`, where the epoch identifies the log instance,
///   so a cursor from another process or another hub is recognised as not issued by this one;
/// - the Redis backend uses the stream entry id, `<milliseconds>-<sequence>`.
///
/// Parsing only checks the form. Whether the cursor was issued for a topic, and whether the
/// events after it are still retained, is decided by the backend when the cursor is used
/// ([`LogError::UnknownCursor`](crate::LogError::UnknownCursor),
/// [`LogError::CursorExpired`](crate::LogError::CursorExpired)).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cursor {
    high: u64,
    low: u64,
}

impl Cursor {
    /// Builds a cursor from its two parts. Backends only.
    pub(crate) const fn from_parts(high: u64, low: u64) -> Self {
        Self { high, low }
    }

    /// The first part: the memory epoch or the Redis milliseconds.
    pub(crate) const fn high(self) -> u64 {
        self.high
    }

    /// The second part: the memory or Redis sequence number.
    pub(crate) const fn low(self) -> u64 {
        self.low
    }

    /// Both parts, for ordering within one backend's id space.
    #[cfg_attr(
        not(feature = "redis"),
        allow(dead_code, reason = "used by the Redis backend")
    )]
    pub(crate) const fn key(self) -> (u64, u64) {
        (self.high, self.low)
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.high, self.low)
    }
}

impl fmt::Debug for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cursor({self})")
    }
}

impl FromStr for Cursor {
    type Err = CursorParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (high, low) = text.split_once('-').ok_or(CursorParseError(()))?;
        Ok(Self {
            high: parse_part(high)?,
            low: parse_part(low)?,
        })
    }
}

/// Parses one canonical decimal part: digits only, no leading zero unless the part is `0`.
fn parse_part(part: &str) -> Result<u64, CursorParseError> {
    let canonical = !part.is_empty()
        && part.bytes().all(|b| b.is_ascii_digit())
        && (part == "0" || !part.starts_with('0'));
    if !canonical {
        return Err(CursorParseError(()));
    }
    part.parse().map_err(|_| CursorParseError(()))
}

/// The text is not a cursor of any backend (wrong form, or a number out of range).
///
/// A server that receives such a `Last-Event-ID` treats it like a cursor it did not issue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a hub cursor: expected `<number>-<number>`")]
pub struct CursorParseError(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips() {
        for (text, high, low) in [
            ("0-0", 0, 0),
            ("1700000000000-0", 1_700_000_000_000, 0),
            (
                "18446744073709551615-18446744073709551615",
                u64::MAX,
                u64::MAX,
            ),
        ] {
            let cursor: Cursor = text.parse().unwrap();
            assert_eq!((cursor.high(), cursor.low()), (high, low));
            assert_eq!(cursor.to_string(), text);
        }
    }

    #[test]
    fn rejects_everything_that_is_not_canonical() {
        for text in [
            "",
            "-",
            "1",
            "1-",
            "-1",
            "01-1",
            "1-01",
            "+1-1",
            "1-+1",
            "1--1",
            "1-1-1",
            " 1-1",
            "1-1 ",
            "a-1",
            "18446744073709551616-0",
            "1_0-1",
            "١-1",
        ] {
            assert!(text.parse::<Cursor>().is_err(), "{text:?} parsed");
        }
    }

    proptest::proptest! {
        #[test]
        fn every_cursor_survives_its_text_form(high: u64, low: u64) {
            let cursor = Cursor::from_parts(high, low);
            proptest::prop_assert_eq!(cursor.to_string().parse::<Cursor>(), Ok(cursor));
        }

        #[test]
        fn text_parses_only_in_canonical_form(text in "[0-9+ -]{0,24}|\\PC{0,12}") {
            if let Ok(cursor) = text.parse::<Cursor>() {
                proptest::prop_assert_eq!(cursor.to_string(), text);
            }
        }
    }
}
