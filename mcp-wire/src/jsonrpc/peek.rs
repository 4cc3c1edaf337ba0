//! [`peek_method`]: the `method` of a message, found without decoding the message.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The `method` member of a JSON-RPC message's top-level object, found without decoding the
/// message: `Some` for a request or a notification, `None` for a response, a batch, or
/// anything that is not an object with a string `method`.
///
/// On JSON text whose top-level object has unique member names (as RFC 8259 asks), the answer
/// is what serde_json reads: `serde_json::from_slice::<Value>(message)`, then
/// `.get("method").and_then(Value::as_str)` on an object. On bytes that are not JSON the
/// answer is unspecified, but it is never a panic: the scan stops at the member it looks for
/// and checks nothing after it. So use it to route or schedule a message before it is decoded
/// (the stdio server decides with it which messages must be handled before the next line is
/// read), and [`decode`](super::decode) the message to act on it.
///
/// The members before `method` are skipped by counting brackets outside strings, and the
/// method is borrowed from `message`: nothing is allocated unless a member name before it or
/// the method itself holds an escape, or the method is not a string; then serde_json reads the
/// message.
///
/// ```
/// use mcp_wire::jsonrpc::peek_method;
///
/// let line = br#"{"jsonrpc":"2.0","id":1,"params":{"method":"x"},"method":"tools/call"}"#;
/// assert_eq!(peek_method(line).as_deref(), Some("tools/call"));
/// // Escapes are read as JSON reads them.
/// assert_eq!(peek_method(br#"{"me\u0074hod":"tools\/list"}"#).as_deref(), Some("tools/list"));
/// // A response, a batch, a method that is not a string: no method.
/// assert_eq!(peek_method(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None);
/// assert_eq!(peek_method(br#"[{"jsonrpc":"2.0","method":"ping"}]"#), None);
/// assert_eq!(peek_method(br#"{"method":1}"#), None);
/// ```
pub fn peek_method(message: &[u8]) -> Option<Cow<'_, str>> {
    match scan_method(message) {
        Scan::Method(method) => Some(Cow::Borrowed(method)),
        Scan::NoMethod => None,
        Scan::Unsure => serde_json::from_slice::<TopMethod<'_>>(message)
            .ok()
            .and_then(|top| top.0),
    }
}

/// What a quick scan of a message found at the top level of its object.
#[derive(Debug, PartialEq, Eq)]
enum Scan<'a> {
    /// A `method` member with a plain string value (no escapes).
    Method(&'a str),
    /// An object without a `method` member, or not an object at all (a reply, a batch,
    /// garbage).
    NoMethod,
    /// Anything the scan does not read (escapes in a name or in the method, a method that is
    /// not a string): serde_json reads it.
    Unsure,
}

/// Finds the top-level `method` of a message without parsing it: nested values are skipped by
/// counting brackets outside strings. (Parsing the whole message with serde only to read one
/// member cost as much as a tenth of a small call on the stdio server.)
fn scan_method(line: &[u8]) -> Scan<'_> {
    let mut i = skip_ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return Scan::NoMethod;
    }
    i += 1;
    loop {
        i = skip_ws(line, i);
        if line.get(i) != Some(&b'"') {
            return Scan::NoMethod;
        }
        let Some((key, end)) = plain_string(line, i) else {
            return Scan::Unsure;
        };
        i = skip_ws(line, end);
        if line.get(i) != Some(&b':') {
            return Scan::NoMethod;
        }
        i = skip_ws(line, i + 1);
        if key == b"method" {
            return match plain_string(line, i) {
                Some((value, _)) => std::str::from_utf8(value).map_or(Scan::Unsure, Scan::Method),
                None => Scan::Unsure,
            };
        }
        let Some(end) = skip_value(line, i) else {
            return Scan::NoMethod;
        };
        i = skip_ws(line, end);
        match line.get(i) {
            Some(b',') => i += 1,
            _ => return Scan::NoMethod,
        }
    }
}

fn skip_ws(line: &[u8], mut i: usize) -> usize {
    while matches!(line.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// The contents of the string starting at `line[start]` (a quote) and the index after it, when
/// it has no escapes.
fn plain_string(line: &[u8], start: usize) -> Option<(&[u8], usize)> {
    if line.get(start) != Some(&b'"') {
        return None;
    }
    let rest = line.get(start + 1..)?;
    let len = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[len] == b'"').then(|| (&rest[..len], start + 1 + len + 1))
}

/// The index after the value starting at `line[start]`, or `None` at the end of the line.
fn skip_value(line: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut i = start;
    while let Some(&b) = line.get(i) {
        i += 1;
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => {
                    in_string = false;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return Some(i - 1),
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b',' | b' ' | b'\t' | b'\r' | b'\n' if depth == 0 => return Some(i - 1),
            _ => {}
        }
    }
    (depth == 0 && !in_string && i > start).then_some(i)
}

/// The slow reading, by serde_json: the last top-level `method` member when it is a string
/// (as a `Value` map keeps the last of equal names), for a message that is an object.
struct TopMethod<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for TopMethod<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TopMethodVisitor)
    }
}

struct TopMethodVisitor;

impl<'de> Visitor<'de> for TopMethodVisitor {
    type Value = TopMethod<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopMethod<'de>, A::Error> {
        let mut method = None;
        while let Some(MaybeText(name)) = map.next_key()? {
            if name.as_deref() == Some("method") {
                method = map.next_value::<MaybeText<'de>>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(TopMethod(method))
    }
}

/// Any JSON value (or member name): its text when it is a string, borrowed when it has no
/// escapes.
struct MaybeText<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for MaybeText<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = MaybeText<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(MaybeText(Some(Cow::Borrowed(v))))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(MaybeText(Some(Cow::Owned(v.to_owned()))))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(MaybeText(Some(Cow::Owned(v))))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(MaybeText(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MaybeText(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(MaybeText(None))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;

    /// serde_json's reading: `None` when it rejects the bytes, else the `method` it reads.
    fn by_serde(message: &[u8]) -> Option<Option<String>> {
        let value: Value = serde_json::from_slice(message).ok()?;
        Some(
            value
                .get("method")
                .and_then(Value::as_str)
                .map(str::to_owned),
        )
    }

    /// How many top-level members are named `method` (0 for anything but an object).
    fn methods(message: &[u8]) -> usize {
        struct Count(usize);
        impl<'de> Deserialize<'de> for Count {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_map(CountVisitor)
            }
        }
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
                let mut count = 0;
                while let Some(MaybeText(name)) = map.next_key()? {
                    count += usize::from(name.as_deref() == Some("method"));
                    map.next_value::<IgnoredAny>()?;
                }
                Ok(Count(count))
            }
        }
        serde_json::from_slice::<Count>(message).map_or(0, |count| count.0)
    }

    /// `peek_method` never panics, and on JSON whose top-level names are unique it reads what
    /// serde_json reads.
    fn check(message: &[u8]) -> Result<(), TestCaseError> {
        let peeked = peek_method(message);
        if let Some(want) = by_serde(message)
            && methods(message) <= 1
        {
            prop_assert_eq!(
                peeked.as_deref(),
                want.as_deref(),
                "{}",
                String::from_utf8_lossy(message)
            );
        }
        Ok(())
    }

    #[test]
    fn the_scan_agrees_with_serde_on_well_formed_lines() {
        let lines: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"params":{"method":"initialize","x":[1,{"y":"}"}]},"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
            br#" { "id" : "a\"b" , "method" : "server/discover" } "#,
            br#"{"jsonrpc":"2.0","id":2,"result":{"method":"tools/call"}}"#,
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#,
            br#"{"id":true,"n":null,"f":-1.5e3,"method":"logging/setLevel"}"#,
            br#"{"me\u0074hod":"tools/call"}"#,
            br#"{"method":"tools\/call"}"#,
            br#"{"method":"a\"b"}"#,
            br#"{"method":null}"#,
            br#"{"method":{"method":"x"}}"#,
            br#"{"x\n":1,"method":"ping"}"#,
            br#""method""#,
            br#"{}"#,
            b"42",
        ];
        for line in lines {
            check(line).unwrap();
            assert!(
                by_serde(line).is_some(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(
            scan_method(br#"{"id":1,"params":{"a":"]"},"method":"tools/call"}"#),
            Scan::Method("tools/call")
        );
        assert_eq!(scan_method(br#"{"id":1,"result":{}}"#), Scan::NoMethod);
        assert_eq!(scan_method(br#"{"method":"a\"b"}"#), Scan::Unsure);
        assert_eq!(
            peek_method(br#"{"method":"a\"b"}"#).as_deref(),
            Some("a\"b")
        );
        // The plain path borrows.
        assert!(matches!(
            peek_method(br#"{"id":1,"method":"ping"}"#),
            Some(Cow::Borrowed("ping"))
        ));
    }

    /// Writes JSON text for a value with the freedom JSON allows: whitespace between tokens,
    /// members in any order, and any character of a string (member names included) escaped,
    /// `\uXXXX` or short, or not. Choices come from a small xorshift generator.
    struct Writer {
        state: u64,
        out: String,
    }

    impl Writer {
        fn write(seed: u64, value: &Value) -> String {
            let mut writer = Self {
                state: seed | 1,
                out: String::new(),
            };
            writer.value(value);
            writer.out
        }

        fn next(&mut self) -> u64 {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            self.state
        }

        fn ws(&mut self) {
            match self.next() % 8 {
                0 => self.out.push(' '),
                1 => self.out.push_str("\n\t "),
                2 => self.out.push_str("\r\n"),
                _ => {}
            }
        }

        fn string(&mut self, text: &str) {
            self.out.push('"');
            for c in text.chars() {
                let escape = self.next().is_multiple_of(4);
                match c {
                    _ if escape => {
                        let mut units = [0u16; 2];
                        for unit in c.encode_utf16(&mut units) {
                            self.out.push_str(&format!("\\u{unit:04x}"));
                        }
                    }
                    '"' => self.out.push_str("\\\""),
                    '\\' => self.out.push_str("\\\\"),
                    '/' if self.next().is_multiple_of(2) => self.out.push_str("\\/"),
                    '\n' => self.out.push_str("\\n"),
                    c if u32::from(c) < 0x20 => {
                        self.out.push_str(&format!("\\u{:04X}", u32::from(c)))
                    }
                    c => self.out.push(c),
                }
            }
            self.out.push('"');
        }

        fn value(&mut self, value: &Value) {
            self.ws();
            match value {
                Value::String(text) => self.string(text),
                Value::Array(items) => {
                    self.out.push('[');
                    for (n, item) in items.iter().enumerate() {
                        if n > 0 {
                            self.out.push(',');
                        }
                        self.value(item);
                    }
                    self.ws();
                    self.out.push(']');
                }
                Value::Object(members) => {
                    let mut members: Vec<_> = members.iter().collect();
                    if !members.is_empty() {
                        let by = usize::try_from(self.next()).unwrap_or(0) % members.len();
                        members.rotate_left(by);
                    }
                    self.out.push('{');
                    for (n, (name, member)) in members.into_iter().enumerate() {
                        if n > 0 {
                            self.out.push(',');
                        }
                        self.ws();
                        self.string(name);
                        self.ws();
                        self.out.push(':');
                        self.value(member);
                    }
                    self.ws();
                    self.out.push('}');
                }
                other => self.out.push_str(&other.to_string()),
            }
            self.ws();
        }
    }

    /// Strings that often matter here (`method`, method names), and any characters.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("method".to_owned()),
            Just("tools/call".to_owned()),
            Just("initialize".to_owned()),
            "[a-z/\"\\\\{}\\[\\]:, ]{0,8}",
            proptest::collection::vec(any::<char>(), 0..6).prop_map(String::from_iter),
        ]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<i32>().prop_map(|n| Value::from(f64::from(n) / 8.0)),
            text().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((text(), inner), 0..4)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    /// Any value, and often an object with a `method` member (a string, or anything).
    fn message() -> impl Strategy<Value = Value> {
        prop_oneof![
            value(),
            (
                proptest::collection::vec((text(), value()), 0..5),
                prop_oneof![text().prop_map(Value::from), value()],
            )
                .prop_map(|(members, method)| {
                    let mut object: serde_json::Map<String, Value> = members.into_iter().collect();
                    object.insert("method".to_owned(), method);
                    Value::Object(object)
                }),
        ]
    }

    proptest! {
        #[test]
        fn peek_method_reads_what_serde_reads(value in message(), seed in any::<u64>()) {
            let text = Writer::write(seed, &value);
            prop_assert!(by_serde(text.as_bytes()).is_some(), "not JSON: {}", text);
            check(text.as_bytes())?;
            // And through the plain path: serde_json's own compact text.
            check(&serde_json::to_vec(&value).unwrap())?;
        }

        #[test]
        fn peek_method_survives_any_change(
            value in message(),
            seed in any::<u64>(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<bool>(),
        ) {
            let mut bytes = Writer::write(seed, &value).into_bytes();
            let at = at.index(bytes.len().max(1)).min(bytes.len());
            if cut {
                bytes.truncate(at);
            } else if at < bytes.len() {
                bytes[at] = byte;
            }
            check(&bytes)?;
        }

        #[test]
        fn peek_method_survives_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            check(&bytes)?;
        }
    }
}
