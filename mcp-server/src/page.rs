//! Deterministic pages with opaque cursors.
//!
//! Lists are sorted by their key (tool and prompt names, resource URIs, URI templates). A
//! cursor names the last key of the page it follows, encoded so that clients treat it as
//! opaque; a cursor that does not decode, belongs to another list, or names no entry is refused
//! (the dispatcher answers -32602).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Which list a cursor belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    Templates,
    Prompts,
}

impl ListKind {
    const fn tag(self) -> char {
        match self {
            Self::Tools => 't',
            Self::Resources => 'r',
            Self::Templates => 'u',
            Self::Prompts => 'p',
        }
    }
}

/// The cursor was not issued for this list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnknownCursor;

pub(crate) fn encode_cursor(kind: ListKind, last_key: &str) -> String {
    let mut raw = String::with_capacity(last_key.len() + 2);
    raw.push(kind.tag());
    raw.push(':');
    raw.push_str(last_key);
    URL_SAFE_NO_PAD.encode(raw)
}

fn decode_cursor(kind: ListKind, cursor: &str) -> Result<String, UnknownCursor> {
    let raw = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| UnknownCursor)?;
    let raw = String::from_utf8(raw).map_err(|_| UnknownCursor)?;
    let mut chars = raw.chars();
    if chars.next() != Some(kind.tag()) || chars.next() != Some(':') {
        return Err(UnknownCursor);
    }
    Ok(chars.as_str().to_owned())
}

/// The page of `keys` (sorted, unique) after `cursor`: the index range and the next cursor.
pub(crate) fn page<K: AsRef<str>>(
    kind: ListKind,
    keys: &[K],
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(std::ops::Range<usize>, Option<String>), UnknownCursor> {
    let start = match cursor {
        None => 0,
        Some(cursor) => {
            let last = decode_cursor(kind, cursor)?;
            let at = keys
                .binary_search_by(|k| k.as_ref().cmp(last.as_str()))
                .map_err(|_| UnknownCursor)?;
            at + 1
        }
    };
    let end = start.saturating_add(page_size.max(1)).min(keys.len());
    let next = (end < keys.len()).then(|| encode_cursor(kind, keys[end - 1].as_ref()));
    Ok((start..end, next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pages_walk_the_whole_list_once() {
        let keys = ["a", "b", "c", "d", "e"];
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (range, next) = page(ListKind::Tools, &keys, cursor.as_deref(), 2).unwrap();
            seen.extend_from_slice(&keys[range]);
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, keys);
    }

    #[test]
    fn foreign_and_garbled_cursors_are_refused() {
        let keys = ["a", "b", "c"];
        let other = encode_cursor(ListKind::Prompts, "a");
        for bad in [
            other.as_str(),
            "",
            "!!!",
            "dDpa",
            &encode_cursor(ListKind::Tools, "zz"),
        ] {
            assert_eq!(
                page(ListKind::Tools, &keys, Some(bad), 2),
                Err(UnknownCursor),
                "{bad}"
            );
        }
    }

    proptest! {
        #[test]
        fn any_page_size_covers_every_key_in_order(n in 0usize..40, size in 1usize..10) {
            let keys: Vec<String> = (0..n).map(|i| format!("k{i:03}")).collect();
            let mut seen = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let (range, next) = page(ListKind::Resources, &keys, cursor.as_deref(), size).unwrap();
                prop_assert!(range.len() <= size);
                seen.extend(keys[range].iter().cloned());
                match next { Some(c) => cursor = Some(c), None => break }
            }
            prop_assert_eq!(seen, keys);
        }

        #[test]
        fn arbitrary_cursors_never_panic(cursor in ".{0,40}") {
            let keys = ["a", "b"];
            let _ = page(ListKind::Tools, &keys, Some(&cursor), 1);
        }
    }
}
