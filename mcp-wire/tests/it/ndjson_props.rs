//! Tests of the newline-delimited JSON framing used by the stdio transport.

use mcp_wire::ndjson::{self, NdjsonDecoder, NdjsonEncodeError, NdjsonError};
use proptest::prelude::*;
use serde_json::{Value, json};

type Item = Result<Vec<u8>, NdjsonError>;

/// Pushes the chunks, draining after each, then finishes and drains again.
fn decode_chunks<'a>(
    decoder: &mut NdjsonDecoder,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<Item> {
    let mut out = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        out.extend(&mut *decoder);
        assert!(decoder.buffered_len() <= decoder.max_line_length() + 1);
    }
    decoder.finish();
    out.extend(&mut *decoder);
    out
}

fn decode_all(limit: usize, bytes: &[u8]) -> Vec<Item> {
    decode_chunks(
        &mut NdjsonDecoder::new().with_max_line_length(limit),
        [bytes],
    )
}

fn split_at_points(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut chunks = Vec::new();
    let mut from = 0;
    for cut in cuts {
        chunks.push(bytes[from..cut].to_vec());
        from = cut;
    }
    chunks.push(bytes[from..].to_vec());
    chunks
}

/// Replaces the length reported in errors, which depends on where the input was split.
fn without_lengths(items: &[Item]) -> Vec<Result<Vec<u8>, usize>> {
    items
        .iter()
        .map(|item| match item {
            Ok(line) => Ok(line.clone()),
            Err(NdjsonError::LineTooLong { limit, .. }) => Err(*limit),
            Err(other) => panic!("unexpected error {other:?}"),
        })
        .collect()
}

fn ok(line: &str) -> Item {
    Ok(line.as_bytes().to_vec())
}

#[test]
fn line_splitting_table() {
    let cases: &[(&[u8], &[&[u8]])] = &[
        (b"", &[]),
        (b"{}\n", &[b"{}"]),
        (b"{}\r\n[]\n", &[b"{}", b"[]"]),
        (b"{}", &[b"{}"]),
        (b"{}\r", &[b"{}"]),
        (b"\n\n{}\n\r\n \t \n1\n", &[b"{}", b"1"]),
        (b"a\r\r\n", &[b"a\r"]),
        (b" {} \n", &[b" {} "]),
        // Bytes are passed through unvalidated.
        (b"\xFF\xFE\n", &[b"\xFF\xFE"]),
    ];
    for (input, expected) in cases {
        let want: Vec<Item> = expected.iter().map(|l| Ok(l.to_vec())).collect();
        assert_eq!(
            decode_all(1024, input),
            want,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn limit_boundaries() {
    let limit = 4;
    let too_long = |length| Err(NdjsonError::LineTooLong { length, limit });
    let cases: &[(&[u8], Vec<Item>)] = &[
        (b"abcd\n", vec![ok("abcd")]),
        (b"abcd\r\n", vec![ok("abcd")]),
        (b"abcd", vec![ok("abcd")]),
        (b"abcd\r", vec![ok("abcd")]),
        (b"abcde\n1\n", vec![too_long(5), ok("1")]),
        (b"abcd\r\r\n1\n", vec![too_long(6), ok("1")]),
        (b"abcdefghij", vec![too_long(10)]),
        (b"abcdefghij\n\n\n2\n", vec![too_long(10), ok("2")]),
    ];
    for (input, expected) in cases {
        assert_eq!(
            decode_all(limit, input),
            *expected,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn over_long_line_split_across_pushes_is_one_error() {
    let mut decoder = NdjsonDecoder::new().with_max_line_length(8);
    let got = decode_chunks(
        &mut decoder,
        [
            &b"{\"a\":"[..],
            b"\"xxxxxxxx",
            b"xxxxxxxxxxxxx",
            b"\"}\n{}",
            b"\n",
        ],
    );
    assert_eq!(
        got,
        vec![
            Err(NdjsonError::LineTooLong {
                length: 14,
                limit: 8
            }),
            ok("{}")
        ]
    );
}

#[test]
fn default_limit_is_four_mib() {
    let decoder = NdjsonDecoder::default();
    assert_eq!(decoder.max_line_length(), 4 * 1024 * 1024);
    assert_eq!(ndjson::DEFAULT_MAX_LINE_LENGTH, 4 * 1024 * 1024);
}

#[test]
fn memory_stays_bounded_for_a_huge_line() {
    let limit = 1024 * 1024;
    let mut decoder = NdjsonDecoder::new().with_max_line_length(limit);
    let chunk = vec![b'x'; 64 * 1024];
    let mut errors = 0;
    for _ in 0..160 {
        decoder.push(&chunk);
        errors += (&mut decoder).filter(Result::is_err).count();
        assert!(decoder.buffered_len() <= limit + 1);
    }
    decoder.push(b"\n{\"after\":true}\n");
    let rest: Vec<_> = (&mut decoder).collect();
    assert_eq!(errors, 1);
    assert_eq!(rest, vec![ok("{\"after\":true}")]);
}

#[test]
fn encoder_writes_one_compact_line() {
    let cases: &[(Value, &str)] = &[
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            "{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n",
        ),
        (json!("a\nb\r\n"), "\"a\\nb\\r\\n\"\n"),
        (json!([1, 2]), "[1,2]\n"),
        (json!(null), "null\n"),
    ];
    for (value, wire) in cases {
        assert_eq!(ndjson::to_line(value).unwrap(), wire.as_bytes());
    }
}

#[test]
fn encoder_errors_leave_output_unchanged() {
    use std::collections::BTreeMap;
    let mut out = b"kept\n".to_vec();
    // A map with non-string keys cannot be JSON.
    let bad: BTreeMap<Vec<u8>, u8> = BTreeMap::from([(vec![1], 1)]);
    assert!(matches!(
        ndjson::encode(&bad, &mut out),
        Err(NdjsonEncodeError::Serialize(_))
    ));
    assert!(matches!(
        ndjson::encode_raw(b"{\n}", &mut out),
        Err(NdjsonEncodeError::EmbeddedNewline { index: 1 })
    ));
    assert_eq!(out, b"kept\n");
    ndjson::encode_raw(b"{}", &mut out).unwrap();
    assert_eq!(out, b"kept\n{}\n");
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        "[\n\r\t \\\\\"a]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-z\n]{0,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One input line: its content and whether it ends in `\r\n` rather than `\n`.
fn arb_line() -> impl Strategy<Value = (Vec<u8>, bool)> {
    (
        prop_oneof![
            proptest::collection::vec(any::<u8>().prop_filter("no LF", |&b| b != b'\n'), 0..20),
            "[ \t\r]{0,3}".prop_map(String::into_bytes),
            "[{}\":a-z0-9]{1,20}".prop_map(String::into_bytes),
        ],
        any::<bool>(),
    )
}

/// What the decoder must yield for one line, by the documented rules.
fn expected_line(content: &[u8], crlf: bool, limit: usize) -> Option<Result<Vec<u8>, usize>> {
    let content = if crlf {
        content
    } else {
        content.strip_suffix(b"\r").unwrap_or(content)
    };
    if content.len() > limit {
        return Some(Err(limit));
    }
    if content.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        return None;
    }
    Some(Ok(content.to_vec()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_chunking_gives_the_same_lines(
        lines in proptest::collection::vec(arb_line(), 0..10),
        final_newline in any::<bool>(),
        limit in prop_oneof![Just(1024usize), 4usize..16],
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (i, (content, crlf)) in lines.iter().enumerate() {
            stream.extend_from_slice(content);
            // Without a final newline the last line is still yielded by `finish`.
            let terminated = i + 1 < lines.len() || final_newline;
            let crlf = *crlf && terminated;
            if terminated {
                stream.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            }
            expected.extend(expected_line(content, crlf, limit));
        }
        let chunks = split_at_points(&stream, &cuts);
        let mut decoder = NdjsonDecoder::new().with_max_line_length(limit);
        let got = decode_chunks(&mut decoder, chunks.iter().map(Vec::as_slice));
        prop_assert_eq!(without_lengths(&got), expected);
        prop_assert_eq!(decoder.buffered_len(), 0);
    }

    #[test]
    fn over_long_line_gives_one_error_and_intact_neighbours(
        before in proptest::collection::vec("[a-z0-9]{1,10}", 0..4),
        long_len in 11usize..200,
        after in proptest::collection::vec("[a-z0-9]{1,10}", 0..4),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let limit = 10;
        let mut stream = Vec::new();
        for line in &before {
            stream.extend_from_slice(line.as_bytes());
            stream.push(b'\n');
        }
        stream.extend(std::iter::repeat_n(b'x', long_len));
        stream.push(b'\n');
        for line in &after {
            stream.extend_from_slice(line.as_bytes());
            stream.push(b'\n');
        }
        let chunks = split_at_points(&stream, &cuts);
        let mut decoder = NdjsonDecoder::new().with_max_line_length(limit);
        let got = decode_chunks(&mut decoder, chunks.iter().map(Vec::as_slice));
        let mut expected: Vec<Result<Vec<u8>, usize>> =
            before.iter().map(|l| Ok(l.clone().into_bytes())).collect();
        expected.push(Err(limit));
        expected.extend(after.iter().map(|l| Ok(l.clone().into_bytes())));
        prop_assert_eq!(without_lengths(&got), expected);
        for item in &got {
            if let Err(NdjsonError::LineTooLong { length, .. }) = item {
                prop_assert!(*length > limit && *length <= long_len);
            }
        }
    }

    #[test]
    fn encoded_values_round_trip(
        values in proptest::collection::vec(arb_json(), 0..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut stream = Vec::new();
        for value in &values {
            ndjson::encode(value, &mut stream).unwrap();
        }
        prop_assert_eq!(stream.iter().filter(|&&b| b == b'\n').count(), values.len());
        let chunks = split_at_points(&stream, &cuts);
        let got = decode_chunks(&mut NdjsonDecoder::new(), chunks.iter().map(Vec::as_slice));
        let parsed: Vec<Value> = got
            .iter()
            .map(|line| serde_json::from_slice(line.as_ref().unwrap()).unwrap())
            .collect();
        prop_assert_eq!(parsed, values);
    }
}
