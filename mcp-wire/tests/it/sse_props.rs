//! Tests of the SSE encoder and push decoder (WHATWG "Interpreting an event stream").

use mcp_wire::sse::{self, Event, SseDecoder, SseEncodeError, SseError};
use proptest::prelude::*;

/// Decodes `stream` pushed in the given chunks, draining after every push.
fn decode_chunks<'a>(
    decoder: &mut SseDecoder,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<Result<Event, SseError>> {
    let mut out = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        out.extend(&mut *decoder);
    }
    out
}

fn decode_all(stream: &[u8]) -> (Vec<Result<Event, SseError>>, SseDecoder) {
    let mut decoder = SseDecoder::new();
    let events = decode_chunks(&mut decoder, [stream]);
    (events, decoder)
}

/// Splits `bytes` at the given (unsorted, possibly repeated) cut points.
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

fn ev(data: &str) -> Event {
    Event::new(data)
}

#[test]
fn whatwg_parsing_table() {
    // (stream, expected events as (type, id, retry, data))
    type Expected = (
        Option<&'static str>,
        Option<&'static str>,
        Option<u64>,
        &'static str,
    );
    let cases: &[(&[u8], &[Expected])] = &[
        (b"data: a\ndata: b\n\n", &[(None, None, None, "a\nb")]),
        (b"data:a\n\n", &[(None, None, None, "a")]),
        (b"data:  a\n\n", &[(None, None, None, " a")]),
        (b"data\n\n", &[(None, None, None, "")]),
        (b"data:\n\n", &[(None, None, None, "")]),
        (
            b"data: a\n\ndata: b\n\n",
            &[(None, None, None, "a"), (None, None, None, "b")],
        ),
        (
            b": comment\ndata: x\n: another\n\n",
            &[(None, None, None, "x")],
        ),
        (
            b"event: endpoint\ndata: /messages?s=1\n\n",
            &[(Some("endpoint"), None, None, "/messages?s=1")],
        ),
        (b"event:\ndata: x\n\n", &[(None, None, None, "x")]),
        (b"id: 1\ndata: x\n\n", &[(None, Some("1"), None, "x")]),
        (b"id: a\0b\ndata: x\n\n", &[(None, None, None, "x")]),
        (
            b"retry: 1000\ndata: x\n\n",
            &[(None, None, Some(1000), "x")],
        ),
        (b"retry: 10a\ndata: x\n\n", &[(None, None, None, "x")]),
        (b"retry: -1\ndata: x\n\n", &[(None, None, None, "x")]),
        (b"retry:\ndata: x\n\n", &[(None, None, None, "x")]),
        (
            b"retry: 99999999999999999999999\ndata: x\n\n",
            &[(None, None, None, "x")],
        ),
        (b"foo: bar\ndata: x\n\n", &[(None, None, None, "x")]),
        (b"DATA: x\n\n", &[]),
        (b"data : x\n\n", &[]),
        // No blank line: the incomplete event is never dispatched.
        (b"data: x\n", &[]),
        (b"data: x", &[]),
        // An id-only block dispatches nothing.
        (b"id: 1\n\n", &[]),
        (b"\xEF\xBB\xBFdata: x\n\n", &[(None, None, None, "x")]),
        // Only one BOM, and only at the start.
        (b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n", &[]),
        (
            b"data: x\n\n\xEF\xBB\xBFdata: y\n\n",
            &[(None, None, None, "x")],
        ),
        (b"data: x\r\n\r\n", &[(None, None, None, "x")]),
        (
            b"data: x\r\rdata: y\r\r",
            &[(None, None, None, "x"), (None, None, None, "y")],
        ),
        (
            b"data: x\r\ndata: y\rdata: z\n\n",
            &[(None, None, None, "x\ny\nz")],
        ),
        (b"data: a\xFFb\n\n", &[(None, None, None, "a\u{FFFD}b")]),
        (b"data: \xE4\xB8\x96\n\n", &[(None, None, None, "世")]),
        (b"\n\n\ndata: x\n\n", &[(None, None, None, "x")]),
        // 2025-11-25 priming event: an id, a retry and empty data.
        (
            b"id: 0\nretry: 3000\ndata:\n\n",
            &[(None, Some("0"), Some(3000), "")],
        ),
    ];
    for (stream, expected) in cases {
        let (events, _) = decode_all(stream);
        let got: Vec<Event> = events.into_iter().map(Result::unwrap).collect();
        let want: Vec<Event> = expected
            .iter()
            .map(|&(event, id, retry, data)| {
                let mut e = Event::new(data);
                if let Some(event) = event {
                    e = e.with_event(event).unwrap();
                }
                if let Some(id) = id {
                    e = e.with_id(id).unwrap();
                }
                if let Some(retry) = retry {
                    e = e.with_retry(retry);
                }
                e
            })
            .collect();
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(stream));
    }
}

#[test]
fn last_event_id_persists_and_resets() {
    let (events, decoder) = decode_all(b"id: 5\ndata: a\n\ndata: b\n\n");
    assert_eq!(events[1].as_ref().unwrap().id(), None);
    assert_eq!(decoder.last_event_id(), "5");

    // An id-only block still updates it; an empty id resets it.
    let (_, decoder) = decode_all(b"id: 5\n\nid: 6\n\n");
    assert_eq!(decoder.last_event_id(), "6");
    let (_, decoder) = decode_all(b"id: 5\ndata: a\n\nid\ndata: b\n\n");
    assert_eq!(decoder.last_event_id(), "");
    // An id containing NUL is ignored, the previous one stays.
    let (_, decoder) = decode_all(b"id: 5\n\nid: 6\x00\ndata: x\n\n");
    assert_eq!(decoder.last_event_id(), "5");
    // An id in an incomplete event is not applied.
    let (_, decoder) = decode_all(b"id: 5\n\nid: 6\ndata: x\n");
    assert_eq!(decoder.last_event_id(), "5");
}

#[test]
fn last_event_id_tracks_the_event_returned() {
    let mut decoder = SseDecoder::new();
    decoder.push(b"id: 1\ndata: a\n\nid: 2\ndata: b\n\n");
    assert_eq!(decoder.next().unwrap().unwrap().data(), "a");
    assert_eq!(decoder.last_event_id(), "1");
    assert_eq!(decoder.next().unwrap().unwrap().data(), "b");
    assert_eq!(decoder.last_event_id(), "2");
}

#[test]
fn retry_persists_and_survives_reset_stream() {
    let mut decoder = SseDecoder::new();
    decoder.push(b"id: 9\nretry: 2500\ndata: x\n\ndata: half");
    assert_eq!(decoder.next().unwrap().unwrap().retry(), Some(2500));
    assert_eq!(decoder.next(), None);
    assert_eq!(decoder.retry(), Some(2500));
    decoder.reset_stream();
    // The partial event is gone, a new BOM is accepted, state persists.
    decoder.push(b"\xEF\xBB\xBFdata: y\n\n");
    assert_eq!(decoder.next(), Some(Ok(ev("y"))));
    assert_eq!(decoder.last_event_id(), "9");
    assert_eq!(decoder.retry(), Some(2500));
}

#[test]
fn encoder_output_table() {
    let cases: Vec<(Event, &[u8])> = vec![
        (ev("hello"), b"data: hello\n\n"),
        (ev(""), b"data:\n\n"),
        (ev("a\nb"), b"data: a\ndata: b\n\n"),
        (ev("a\r\nb\rc"), b"data: a\ndata: b\ndata: c\n\n"),
        (ev("a\n"), b"data: a\ndata:\n\n"),
        (ev(" x"), b"data:  x\n\n"),
        (
            ev("{}")
                .with_event("message")
                .unwrap()
                .with_id("42")
                .unwrap()
                .with_retry(3000),
            b"event: message\nid: 42\nretry: 3000\ndata: {}\n\n",
        ),
        (
            ev("/m").with_event("endpoint").unwrap(),
            b"event: endpoint\ndata: /m\n\n",
        ),
        (
            ev("").with_id("0").unwrap().with_retry(1000),
            b"id: 0\nretry: 1000\ndata:\n\n",
        ),
        (ev("x").with_event("").unwrap(), b"data: x\n\n"),
    ];
    for (event, wire) in cases {
        assert_eq!(event.to_bytes(), wire, "{event:?}");
        let (decoded, _) = decode_all(wire);
        let mut expected = event.clone();
        if event.data().contains('\r') {
            expected = Event::new(sse::normalize_line_ends(event.data()));
        }
        assert_eq!(decoded, vec![Ok(expected)]);
    }
}

#[test]
fn encoder_rejects_unframeable_fields() {
    assert_eq!(
        ev("x").with_event("a\nb"),
        Err(SseEncodeError::InvalidEventType)
    );
    assert_eq!(
        ev("x").with_event("a\rb"),
        Err(SseEncodeError::InvalidEventType)
    );
    assert_eq!(ev("x").with_id("1\n"), Err(SseEncodeError::InvalidId));
    assert_eq!(ev("x").with_id("1\r"), Err(SseEncodeError::InvalidId));
    assert_eq!(ev("x").with_id("1\0"), Err(SseEncodeError::InvalidId));
}

#[test]
fn comments_table() {
    let cases: &[(&str, &[u8])] = &[
        ("", b":\n"),
        ("keep-alive", b": keep-alive\n"),
        ("a\nb", b": a\n: b\n"),
    ];
    for (text, wire) in cases {
        let mut out = Vec::new();
        sse::encode_comment(text, &mut out);
        assert_eq!(out, *wire);
        let (decoded, _) = decode_all(&out);
        assert!(decoded.is_empty());
    }
}

#[test]
fn every_two_way_split_of_a_fixed_stream() {
    let stream: &[u8] =
        b"\xEF\xBB\xBF: hi\r\nevent: e\r\nid: 1\r\ndata: \xE4\xB8\x96\r\n\r\ndata: a\rdata: b\r\r";
    let (whole, _) = decode_all(stream);
    assert_eq!(whole.len(), 2);
    for cut in 0..=stream.len() {
        let mut decoder = SseDecoder::new();
        let got = decode_chunks(&mut decoder, [&stream[..cut], &stream[cut..]]);
        assert_eq!(got, whole, "cut at {cut}");
        assert_eq!(decoder.last_event_id(), "1");
    }
    let mut decoder = SseDecoder::new();
    assert_eq!(decode_chunks(&mut decoder, stream.chunks(1)), whole);
}

#[test]
fn oversized_event_is_reported_once_and_skipped() {
    let limit = 32;
    let big = "x".repeat(100);
    let stream = format!("data: small\n\nid: 7\ndata: {big}\ndata: more\n\nid: 8\ndata: after\n\n");
    for chunk_size in [1, 2, 3, 7, 16, 33, 1000] {
        let mut decoder = SseDecoder::new().with_max_event_size(limit);
        let got = decode_chunks(&mut decoder, stream.as_bytes().chunks(chunk_size));
        assert_eq!(got.len(), 3, "chunk size {chunk_size}: {got:?}");
        assert_eq!(got[0], Ok(ev("small")));
        assert!(
            matches!(got[1], Err(SseError::EventTooLarge { limit: 32, size }) if size > 32),
            "{:?}",
            got[1]
        );
        assert_eq!(got[2], Ok(ev("after").with_id("8").unwrap()));
        assert_eq!(decoder.last_event_id(), "8");
    }
}

#[test]
fn size_limit_boundary() {
    // "data: " + 10 bytes = 16 bytes of lines.
    let stream = b"data: 0123456789\n\n";
    let mut at_limit = SseDecoder::new().with_max_event_size(16);
    assert_eq!(
        decode_chunks(&mut at_limit, [&stream[..]]),
        vec![Ok(ev("0123456789"))]
    );
    let mut below = SseDecoder::new().with_max_event_size(15);
    assert_eq!(
        decode_chunks(&mut below, [&stream[..]]),
        vec![Err(SseError::EventTooLarge {
            size: 16,
            limit: 15
        })]
    );
    // Comments do not count and are not buffered.
    let mut decoder = SseDecoder::new().with_max_event_size(16);
    let long_comment = format!(":{}\ndata: ok\n\n", "c".repeat(1000));
    for chunk in long_comment.as_bytes().chunks(10) {
        decoder.push(chunk);
        let got: Vec<_> = (&mut decoder).collect();
        assert!(decoder.buffered_len() <= 26, "{}", decoder.buffered_len());
        if !got.is_empty() {
            assert_eq!(got, vec![Ok(ev("ok"))]);
        }
    }
}

#[test]
fn memory_stays_bounded_while_discarding() {
    let limit = 1024 * 1024;
    let chunk = 64 * 1024;
    let mut decoder = SseDecoder::new().with_max_event_size(limit);
    let mut errors = 0;
    decoder.push(b"data: ");
    // 10 MiB of one data line, then many short data lines, then the end of the event.
    let line = vec![b'x'; chunk];
    for _ in 0..160 {
        decoder.push(&line);
        errors += (&mut decoder).filter(Result::is_err).count();
        assert!(decoder.buffered_len() <= limit + chunk);
    }
    let short = b"\ndata: y".repeat(chunk / 8);
    for _ in 0..40 {
        decoder.push(&short);
        errors += (&mut decoder).filter(Result::is_err).count();
        assert!(decoder.buffered_len() <= limit + chunk);
    }
    decoder.push(b"\n\ndata: next\n\n");
    let rest: Vec<_> = (&mut decoder).collect();
    assert_eq!(errors, 1);
    assert_eq!(rest, vec![Ok(ev("next"))]);
}

fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[a-z \r\n]{0,20}", "[{}\":,0-9a-z]{0,40}",]
}

fn arb_event() -> impl Strategy<Value = Event> {
    (
        arb_text(),
        proptest::option::of("[^\r\n]{0,10}"),
        proptest::option::of("[^\r\n\0]{0,10}"),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(data, event, id, retry)| {
            let mut e = Event::new(data);
            if let Some(event) = event {
                e = e.with_event(event).unwrap();
            }
            if let Some(id) = id {
                e = e.with_id(id).unwrap();
            }
            if let Some(retry) = retry {
                e = e.with_retry(retry);
            }
            e
        })
}

#[derive(Clone, Copy, Debug)]
enum LineEnd {
    Lf,
    CrLf,
    Cr,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_chunking_gives_the_same_events(
        items in proptest::collection::vec(
            prop_oneof![
                4 => arb_event().prop_map(Ok),
                1 => "[^\r\n]{0,10}".prop_map(Err),
            ],
            0..8,
        ),
        line_end in prop_oneof![Just(LineEnd::Lf), Just(LineEnd::CrLf), Just(LineEnd::Cr)],
        bom in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut encoded = Vec::new();
        let mut expected = Vec::new();
        for item in &items {
            match item {
                Ok(event) => {
                    event.encode_into(&mut encoded);
                    // The receiver sees line breaks in data as LF.
                    let mut want = Event::new(sse::normalize_line_ends(event.data()));
                    if let Some(t) = event.event() {
                        want = want.with_event(t).unwrap();
                    }
                    if let Some(id) = event.id() {
                        want = want.with_id(id).unwrap();
                    }
                    if let Some(r) = event.retry() {
                        want = want.with_retry(r);
                    }
                    expected.push(Ok(want));
                }
                Err(comment) => sse::encode_comment(comment, &mut encoded),
            }
        }
        // The encoder writes LF only, and no field value holds CR or LF, so every LF is a line end.
        let mut stream = if bom { b"\xEF\xBB\xBF".to_vec() } else { Vec::new() };
        for &b in &encoded {
            match (b, line_end) {
                (b'\n', LineEnd::CrLf) => stream.extend_from_slice(b"\r\n"),
                (b'\n', LineEnd::Cr) => stream.push(b'\r'),
                _ => stream.push(b),
            }
        }
        let chunks = split_at_points(&stream, &cuts);
        let mut decoder = SseDecoder::new();
        let got = decode_chunks(&mut decoder, chunks.iter().map(Vec::as_slice));
        prop_assert_eq!(&got, &expected);
        let last_id = items.iter().filter_map(|i| i.as_ref().ok()?.id()).next_back().unwrap_or("");
        prop_assert_eq!(decoder.last_event_id(), last_id);
        let last_retry = items.iter().filter_map(|i| i.as_ref().ok()?.retry()).next_back();
        prop_assert_eq!(decoder.retry(), last_retry);
        prop_assert_eq!(decoder.buffered_len(), 0);
    }

    #[test]
    fn oversized_events_do_not_disturb_their_neighbours(
        sizes in proptest::collection::vec(0usize..120, 1..8),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let limit = 64;
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            let event = Event::new("d".repeat(size)).with_id(i.to_string()).unwrap();
            event.encode_into(&mut stream);
            // Lines: "id: N" and "data: ddd".
            let lines = 4 + i.to_string().len() + if size == 0 { 5 } else { 6 + size };
            expected.push(lines <= limit);
        }
        let chunks = split_at_points(&stream, &cuts);
        let mut decoder = SseDecoder::new().with_max_event_size(limit);
        let got = decode_chunks(&mut decoder, chunks.iter().map(Vec::as_slice));
        prop_assert_eq!(got.len(), sizes.len());
        for (i, (result, fits)) in got.iter().zip(&expected).enumerate() {
            match result {
                Ok(event) => {
                    prop_assert!(*fits);
                    prop_assert_eq!(event.data().len(), sizes[i]);
                    let id = i.to_string();
                    prop_assert_eq!(event.id(), Some(id.as_str()));
                }
                Err(SseError::EventTooLarge { limit: l, size }) => {
                    prop_assert!(!*fits);
                    prop_assert_eq!(*l, limit);
                    prop_assert!(*size > limit);
                }
                Err(other) => prop_assert!(false, "unexpected error {other:?}"),
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut decoder = SseDecoder::new().with_max_event_size(32);
        let chunks = split_at_points(&bytes, &cuts);
        let got = decode_chunks(&mut decoder, chunks.iter().map(Vec::as_slice));
        let (whole, _) = {
            let mut d = SseDecoder::new().with_max_event_size(32);
            (decode_chunks(&mut d, [&bytes[..]]), d)
        };
        // Oversize sizes may differ with the chunking; the sequence of outcomes may not.
        let shape = |v: &[Result<Event, SseError>]| {
            v.iter().map(|r| r.as_ref().ok().cloned()).collect::<Vec<_>>()
        };
        prop_assert_eq!(shape(&got), shape(&whole));
    }
}

#[test]
fn invalid_utf8_counts_as_the_text_it_becomes() {
    // 20 invalid bytes are 26 bytes of line but 66 bytes of text (U+FFFD is three bytes):
    // within a limit of 40 as bytes, past it as held.
    let mut stream = b"data: ".to_vec();
    stream.extend_from_slice(&[0xFF; 20]);
    stream.extend_from_slice(b"\n\ndata: after\n\n");
    for chunk_size in [1, 5, 1000] {
        let mut decoder = SseDecoder::new().with_max_event_size(40);
        let got = decode_chunks(&mut decoder, stream.chunks(chunk_size));
        assert!(
            matches!(got[0], Err(SseError::EventTooLarge { limit: 40, size }) if size > 40),
            "chunk size {chunk_size}: {got:?}"
        );
        assert_eq!(got[1..], [Ok(ev("after"))]);
    }
    // Within the limit as text, the event arrives with its replacement characters.
    let mut decoder = SseDecoder::new().with_max_event_size(80);
    let got = decode_chunks(&mut decoder, [&stream[..]]);
    assert_eq!(got[0], Ok(ev(&"\u{FFFD}".repeat(20))));
}
