//! Property tests for the JSON-RPC codec: ids, messages and batches round trip, and a batch with
//! invalid items mixed in yields exactly one outcome per item, in order.

use mcp_wire::jsonrpc::{
    self, Batch, DecodeError, Decoded, ErrorObject, Id, Message, Notification, Request, Response,
};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        any::<i64>().prop_map(Id::Number),
        any::<String>().prop_map(Id::String),
        // Strings that look like numbers must stay strings.
        any::<i64>().prop_map(|n| Id::String(n.to_string())),
    ]
}

/// JSON values without floats: serde_json's default float parsing is not guaranteed to round
/// trip to the last bit, and floats are not what this codec is about.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        prop::collection::btree_map(".{0,6}", json_value(), 0..4)
            .prop_map(|m| Some(Value::Object(m.into_iter().collect()))),
        prop::collection::vec(json_value(), 0..3).prop_map(|v| Some(Value::Array(v))),
    ]
}

fn error_object() -> impl Strategy<Value = ErrorObject> {
    (
        any::<i64>(),
        ".{0,16}",
        // `"data": null` reads back as absent, so generate only non-null data.
        prop::option::of(json_value().prop_filter("non-null data", |v| !v.is_null())),
    )
        .prop_map(|(code, message, data)| ErrorObject {
            code,
            message,
            data,
        })
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (id(), ".{0,16}", params()).prop_map(|(id, method, params)| Message::Request(Request {
            id,
            method: method.into(),
            params
        })),
        (".{0,16}", params()).prop_map(|(method, params)| Message::Notification(Notification {
            method: method.into(),
            params
        })),
        (id(), json_value())
            .prop_map(|(id, result)| Message::Response(Response::success(id, result))),
        (prop::option::of(id()), error_object())
            .prop_map(|(id, error)| Message::Response(Response::error(id, error))),
    ]
}

/// A batch item that is JSON but not a valid JSON-RPC message, with the id the decoder must keep.
fn invalid_item() -> impl Strategy<Value = (String, Option<Id>)> {
    let with_id = id().prop_flat_map(|id| {
        let text = serde_json::to_string(&id).unwrap();
        let kept = Some(id);
        prop_oneof![
            Just(format!(r#"{{"jsonrpc":"1.0","id":{text},"method":"m"}}"#)),
            Just(format!(r#"{{"id":{text},"method":"m"}}"#)),
            Just(format!(r#"{{"jsonrpc":"2.0","id":{text},"method":7}}"#)),
            Just(format!(
                r#"{{"jsonrpc":"2.0","id":{text},"method":"m","params":"p"}}"#
            )),
            Just(format!(r#"{{"jsonrpc":"2.0","id":{text}}}"#)),
            Just(format!(
                r#"{{"jsonrpc":"2.0","id":{text},"result":1,"error":{{"code":1,"message":""}}}}"#
            )),
            Just(format!(
                r#"{{"jsonrpc":"2.0","id":{text},"error":{{"message":"no code"}}}}"#
            )),
        ]
        .prop_map(move |body| (body, kept.clone()))
    });
    let without_id = prop_oneof![
        Just("1".to_owned()),
        Just("\"text\"".to_owned()),
        Just("null".to_owned()),
        Just("[]".to_owned()),
        Just("[1,{\"a\":[]}]".to_owned()),
        Just("{}".to_owned()),
        Just(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#.to_owned()),
        Just(r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#.to_owned()),
        Just(r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#.to_owned()),
        Just(r#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"m"}"#.to_owned()),
        Just(r#"{"jsonrpc":"2.0","result":{}}"#.to_owned()),
    ]
    .prop_map(|body| (body, None));
    prop_oneof![with_id, without_id]
}

#[derive(Debug)]
enum Expected {
    Valid(Message),
    Invalid(Option<Id>),
}

fn mixed_item() -> impl Strategy<Value = (String, Expected)> {
    prop_oneof![
        message().prop_map(|m| (
            String::from_utf8(jsonrpc::encode(&m)).unwrap(),
            Expected::Valid(m)
        )),
        invalid_item().prop_map(|(body, id)| (body, Expected::Invalid(id))),
    ]
}

proptest! {
    #[test]
    fn ids_round_trip(id in id()) {
        let text = serde_json::to_string(&id).unwrap();
        prop_assert_eq!(serde_json::from_str::<Id>(&text).unwrap(), id);
    }

    #[test]
    fn single_messages_round_trip(message in message()) {
        let bytes = jsonrpc::encode(&message);
        prop_assert_eq!(jsonrpc::decode(&bytes), Decoded::Single(Ok(message.clone())));
        // The strict serde path agrees with the decoder.
        prop_assert_eq!(serde_json::from_slice::<Message>(&bytes).unwrap(), message);
    }

    #[test]
    fn batches_round_trip(messages in prop::collection::vec(message(), 1..8)) {
        let bytes = jsonrpc::encode_batch(&messages);
        prop_assert_eq!(serde_json::to_vec(&Batch(messages.clone())).unwrap(), bytes.clone());
        let expected = messages.into_iter().map(Ok).collect();
        prop_assert_eq!(jsonrpc::decode(&bytes), Decoded::Batch(expected));
    }

    #[test]
    fn invalid_items_do_not_disturb_their_siblings(items in prop::collection::vec(mixed_item(), 1..10)) {
        let body = format!(
            "[{}]",
            items.iter().map(|(text, _)| text.as_str()).collect::<Vec<_>>().join(" , ")
        );
        let Decoded::Batch(outcomes) = jsonrpc::decode(body.as_bytes()) else {
            return Err(TestCaseError::fail(format!("not a batch: {body}")));
        };
        prop_assert_eq!(outcomes.len(), items.len());
        for ((text, expected), outcome) in items.iter().zip(outcomes) {
            match (expected, outcome) {
                (Expected::Valid(message), Ok(decoded)) => prop_assert_eq!(&decoded, message),
                (Expected::Invalid(id), Err(err @ DecodeError::Invalid { .. })) => {
                    prop_assert_eq!(err.id(), id.as_ref(), "{}", text);
                    prop_assert_eq!(err.code(), -32600);
                }
                (_, outcome) => {
                    return Err(TestCaseError::fail(format!("{text} decoded to {outcome:?}")));
                }
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = jsonrpc::decode(&bytes);
    }
}
