//! Reading Redis replies: stream entries, and which of them follow a cursor.

use bytes::Bytes;
use redis::Value;

use crate::error::BackendErrorKind;
use crate::{BackendError, Cursor, Event};

/// The start cursor of every Redis topic: before the first entry a stream can hold.
pub(super) const START: Cursor = Cursor::from_parts(0, 0);

/// One stream entry as the hub writes it: `p` (the id of the entry before it) and `m`.
#[derive(Debug, Clone)]
pub(super) struct Row {
    pub(super) id: Cursor,
    pub(super) prev: Cursor,
    pub(super) payload: Bytes,
}

/// Why a cursor cannot be read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    Unknown,
    Expired,
}

/// The events after `after` among `rows` (ascending ids, as XRANGE and XREAD return them),
/// at most `max`.
///
/// Entries are only ever trimmed from the head of a stream, and each records the id of the
/// entry before it, so the first row after `after` tells whether anything was skipped: its
/// `prev` is `after` when nothing was, is newer than `after` when retention dropped entries in
/// between, and is older when `after` was never an entry of this stream.
pub(super) fn take_after(after: Cursor, rows: &[Row], max: usize) -> Result<Vec<Event>, Fault> {
    let start = rows.partition_point(|row| row.id.key() < after.key());
    let following = match rows.get(start) {
        None => &[][..],
        Some(row) if row.id == after => &rows[start + 1..],
        Some(row) if row.prev == after => &rows[start..],
        Some(row) if row.prev.key() > after.key() => return Err(Fault::Expired),
        Some(_) => return Err(Fault::Unknown),
    };
    Ok(following
        .iter()
        .take(max)
        .map(|row| Event {
            cursor: row.id,
            payload: row.payload.clone(),
        })
        .collect())
}

/// Parses an `XRANGE` reply: an array of entries.
pub(super) fn rows(value: Value) -> Result<Vec<Row>, BackendError> {
    match value {
        Value::Array(entries) => entries.into_iter().map(row).collect(),
        Value::Nil => Ok(Vec::new()),
        other => Err(unexpected("stream entries", &other)),
    }
}

/// The entries of one stream in an `XREAD` reply, with the stream key.
pub(super) type StreamRows = (Vec<u8>, Vec<Row>);

/// Parses an `XREAD` reply: per stream key, its entries. `Nil` when the block timed out.
pub(super) fn streams(value: Value) -> Result<Vec<StreamRows>, BackendError> {
    let pairs: Vec<(Value, Value)> = match value {
        Value::Nil => return Ok(Vec::new()),
        // RESP3: a map from key to entries.
        Value::Map(pairs) => pairs,
        // RESP2: an array of [key, entries] pairs.
        Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                Value::Array(pair) if pair.len() == 2 => {
                    let mut pair = pair.into_iter();
                    Ok((
                        pair.next().unwrap_or_default(),
                        pair.next().unwrap_or_default(),
                    ))
                }
                other => Err(unexpected("a stream and its entries", &other)),
            })
            .collect::<Result<_, _>>()?,
        other => return Err(unexpected("streams", &other)),
    };
    pairs
        .into_iter()
        .map(|(key, entries)| Ok((bytes(key, "stream key")?.to_vec(), rows(entries)?)))
        .collect()
}

/// Parses a stream entry id, as XADD returns it.
pub(super) fn id(value: Value) -> Result<Cursor, BackendError> {
    let raw = bytes(value, "stream id")?;
    std::str::from_utf8(&raw)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| {
            BackendError::new(
                BackendErrorKind::Unexpected,
                format!("not a stream id: {:?}", String::from_utf8_lossy(&raw)),
            )
        })
}

fn row(value: Value) -> Result<Row, BackendError> {
    let Value::Array(parts) = value else {
        return Err(unexpected("a stream entry", &value));
    };
    let mut parts = parts.into_iter();
    let (Some(entry_id), Some(fields), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(BackendError::new(
            BackendErrorKind::Unexpected,
            "a stream entry is not [id, fields]",
        ));
    };
    let entry_id = id(entry_id)?;
    let fields: Vec<Value> = match fields {
        Value::Array(fields) => fields,
        Value::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        other => return Err(unexpected("entry fields", &other)),
    };
    let mut prev = None;
    let mut payload = None;
    let mut fields = fields.into_iter();
    while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
        match &*bytes(name, "field name")? {
            b"p" => prev = Some(id(value)?),
            b"m" => payload = Some(bytes(value, "message")?),
            _ => {}
        }
    }
    match (prev, payload) {
        (Some(prev), Some(payload)) => Ok(Row {
            id: entry_id,
            prev,
            payload,
        }),
        _ => Err(BackendError::new(
            BackendErrorKind::Unexpected,
            format!("stream entry {entry_id} was not written by the hub"),
        )),
    }
}

/// The bytes of a string reply, without copying a bulk string.
pub(super) fn bytes(value: Value, what: &str) -> Result<Bytes, BackendError> {
    match value {
        Value::BulkString(raw) => Ok(Bytes::from(raw)),
        Value::SimpleString(text) => Ok(Bytes::from(text)),
        other => Err(unexpected(what, &other)),
    }
}

pub(super) fn unexpected(what: &str, value: &Value) -> BackendError {
    let shown = format!("{value:?}");
    let shown: String = shown.chars().take(80).collect();
    BackendError::new(
        BackendErrorKind::Unexpected,
        format!("expected {what} from Redis, got {shown}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(text: &str) -> Cursor {
        text.parse().unwrap()
    }

    fn stream(entries: &[(&str, &str)]) -> Vec<Row> {
        entries
            .iter()
            .map(|(id, prev)| Row {
                id: cursor(id),
                prev: cursor(prev),
                payload: Bytes::from(id.to_string()),
            })
            .collect()
    }

    #[test]
    fn classifies_cursors_by_the_entry_that_follows() {
        let whole = stream(&[("5-0", "0-0"), ("6-0", "5-0"), ("6-1", "6-0")]);
        let trimmed = stream(&[("6-0", "5-0"), ("6-1", "6-0")]);
        // (rows, cursor, expected ids or fault)
        type Case<'a> = (
            &'a [Row],
            &'static str,
            Result<&'static [&'static str], Fault>,
        );
        let table: &[Case<'_>] = &[
            (&whole, "0-0", Ok(&["5-0", "6-0", "6-1"])),
            (&whole, "5-0", Ok(&["6-0", "6-1"])),
            (&whole, "6-1", Ok(&[])),
            (&whole, "5-1", Err(Fault::Unknown)),
            (&trimmed, "5-0", Ok(&["6-0", "6-1"])),
            (&trimmed, "0-0", Err(Fault::Expired)),
            (&trimmed, "4-9", Err(Fault::Expired)),
            (&trimmed, "5-1", Err(Fault::Unknown)),
            (&trimmed, "6-0", Ok(&["6-1"])),
            (&trimmed, "7-0", Ok(&[])),
        ];
        for (rows, after, expected) in table {
            let got = take_after(cursor(after), rows, usize::MAX).map(|events| {
                events
                    .iter()
                    .map(|e| e.cursor.to_string())
                    .collect::<Vec<_>>()
            });
            let expected = expected.map(|ids| ids.iter().map(|s| s.to_string()).collect());
            assert_eq!(got, expected, "after {after}");
        }
    }

    #[test]
    fn parses_both_reply_shapes() {
        let entry = |id: &str, prev: &str, message: &[u8]| {
            Value::Array(vec![
                Value::BulkString(id.as_bytes().to_vec()),
                Value::Array(vec![
                    Value::BulkString(b"p".to_vec()),
                    Value::BulkString(prev.as_bytes().to_vec()),
                    Value::BulkString(b"m".to_vec()),
                    Value::BulkString(message.to_vec()),
                ]),
            ])
        };
        let resp2 = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"k".to_vec()),
            Value::Array(vec![entry("1-0", "0-0", b"x")]),
        ])]);
        let resp3 = Value::Map(vec![(
            Value::BulkString(b"k".to_vec()),
            Value::Array(vec![entry("1-0", "0-0", b"x")]),
        )]);
        for reply in [resp2, resp3] {
            let parsed = streams(reply).unwrap();
            assert_eq!(parsed.len(), 1);
            assert_eq!(parsed[0].0, b"k");
            assert_eq!(parsed[0].1[0].payload, "x");
        }
        assert!(streams(Value::Nil).unwrap().is_empty());
        assert!(rows(Value::Int(3)).is_err());
        assert!(rows(Value::Array(vec![entry("1-0", "nope", b"x")])).is_err());
    }
}
