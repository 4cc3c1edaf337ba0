//! Property tests of the `WWW-Authenticate` parser and writer: the parser never panics on any
//! input, and what the writer writes parses back to the same challenges.

use mcp_auth::{BearerChallenge, Challenge};
use proptest::prelude::*;

fn token() -> impl Strategy<Value = String> {
    "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,12}"
}

/// Any value a quoted string can carry: printable text, tabs, quotes and backslashes, and
/// non-ASCII text.
fn value() -> impl Strategy<Value = String> {
    "[ -~\t\u{e9}\u{4e2d}]{0,24}"
}

fn challenge() -> impl Strategy<Value = Challenge> {
    (
        token(),
        prop_oneof![
            proptest::collection::vec((token(), value()), 0..4).prop_map(Err),
            "[A-Za-z0-9._~+/-]{1,16}={0,2}".prop_map(Ok),
        ],
    )
        .prop_map(|(scheme, rest)| match rest {
            Ok(token68) => Challenge {
                scheme,
                token68: Some(token68),
                params: Vec::new(),
            },
            Err(params) => Challenge {
                scheme,
                token68: None,
                params,
            },
        })
}

proptest! {
    #[test]
    fn the_parser_never_panics(input in any::<String>()) {
        let _ = Challenge::parse_all(&input);
    }

    #[test]
    fn the_parser_never_panics_on_header_like_bytes(input in "[ -~\t]{0,80}") {
        if let Ok(challenges) = Challenge::parse_all(&input) {
            // What parses also writes, and the written form parses to the same challenges.
            let written = Challenge::join(&challenges);
            prop_assert_eq!(Challenge::parse_all(&written).unwrap(), challenges);
        }
    }

    #[test]
    fn what_the_writer_writes_parses_back(challenges in proptest::collection::vec(challenge(), 1..4)) {
        let written = Challenge::join(&challenges);
        prop_assert!(!written.contains(['\r', '\n']));
        prop_assert_eq!(Challenge::parse_all(&written).unwrap(), challenges);
    }

    #[test]
    fn the_bearer_view_round_trips(
        metadata in proptest::option::of(value()),
        scope in proptest::option::of(value()),
        error in proptest::option::of(value()),
    ) {
        let mut challenge = BearerChallenge::default();
        challenge.resource_metadata = metadata;
        challenge.scope = scope;
        challenge.error = error;
        let parsed = Challenge::parse_all(&challenge.to_string()).unwrap();
        prop_assert_eq!(BearerChallenge::find(&parsed).unwrap(), challenge);
    }
}
