//! Reading HTTP request headers without copying them, and the 2026-07-28 mirroring checks.

use http::{HeaderMap, HeaderName};
use mcp_wire::header::{self, HeaderMismatch};
use mcp_wire::names::headers as names;
use serde_json::{Map, Value};

use mcp_schema::HeaderBinding;

use crate::failure::Failure;

/// What a header lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// No such header.
    Missing,
    /// Exactly one value, as raw bytes.
    One(&'a [u8]),
    /// The header appears more than once (never valid for the MCP headers).
    Repeated,
}

/// Read access to a request's headers. Names are matched case-insensitively.
///
/// Implemented for [`http::HeaderMap`] (what hyper hands the server, borrowed, never copied)
/// and for slices of `(name, value)` pairs (tests, and transports without `http` types).
pub trait HeaderSource {
    /// The header `name`.
    fn lookup(&self, name: &str) -> Lookup<'_>;

    /// The header `name`, given as an [`http::HeaderName`]: the same answer as
    /// [`lookup`](Self::lookup) with `name.as_str()`. A [`HeaderMap`] answers it without
    /// parsing the name again.
    fn lookup_name(&self, name: &HeaderName) -> Lookup<'_> {
        self.lookup(name.as_str())
    }

    /// Calls `f` with the name of every header whose name starts with `Mcp-Param-`
    /// (case-insensitively), once per distinct name.
    fn for_each_param_header(&self, f: &mut dyn FnMut(&str));
}

fn is_param_header(name: &str) -> bool {
    name.len() > names::PARAM_PREFIX.len()
        && name.as_bytes()[..names::PARAM_PREFIX.len()]
            .eq_ignore_ascii_case(names::PARAM_PREFIX.as_bytes())
}

fn lookup_all(values: http::header::GetAll<'_, http::HeaderValue>) -> Lookup<'_> {
    let mut values = values.iter();
    match (values.next(), values.next()) {
        (None, _) => Lookup::Missing,
        (Some(v), None) => Lookup::One(v.as_bytes()),
        (Some(_), Some(_)) => Lookup::Repeated,
    }
}

impl HeaderSource for HeaderMap {
    fn lookup(&self, name: &str) -> Lookup<'_> {
        lookup_all(self.get_all(name))
    }

    fn lookup_name(&self, name: &HeaderName) -> Lookup<'_> {
        lookup_all(self.get_all(name))
    }

    fn for_each_param_header(&self, f: &mut dyn FnMut(&str)) {
        for name in self.keys() {
            if is_param_header(name.as_str()) {
                f(name.as_str());
            }
        }
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderSource for [(N, V)] {
    fn lookup(&self, name: &str) -> Lookup<'_> {
        let mut values = self
            .iter()
            .filter(|(n, _)| n.as_ref().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_ref());
        match (values.next(), values.next()) {
            (None, _) => Lookup::Missing,
            (Some(v), None) => Lookup::One(v),
            (Some(_), Some(_)) => Lookup::Repeated,
        }
    }

    fn for_each_param_header(&self, f: &mut dyn FnMut(&str)) {
        let mut seen: Vec<&str> = Vec::new();
        for (name, _) in self {
            let name = name.as_ref();
            if is_param_header(name) && !seen.iter().any(|s| s.eq_ignore_ascii_case(name)) {
                seen.push(name);
                f(name);
            }
        }
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderSource for Vec<(N, V)> {
    fn lookup(&self, name: &str) -> Lookup<'_> {
        self.as_slice().lookup(name)
    }

    fn lookup_name(&self, name: &HeaderName) -> Lookup<'_> {
        self.as_slice().lookup_name(name)
    }

    fn for_each_param_header(&self, f: &mut dyn FnMut(&str)) {
        self.as_slice().for_each_param_header(f);
    }
}

/// The `x-mcp-header` bindings of the tools a server knows, for the `Mcp-Param-*` check.
pub trait ToolHeaders {
    /// The bindings of the tool `name`, or `None` when there is no such tool (the check is then
    /// skipped; the call fails later as an unknown tool).
    fn header_bindings(&self, name: &str) -> Option<&[HeaderBinding]>;
}

/// No tool is known: `Mcp-Param-*` headers are not checked.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTools;

impl ToolHeaders for NoTools {
    fn header_bindings(&self, _name: &str) -> Option<&[HeaderBinding]> {
        None
    }
}

impl<S: std::hash::BuildHasher> ToolHeaders
    for std::collections::HashMap<String, Vec<HeaderBinding>, S>
{
    fn header_bindings(&self, name: &str) -> Option<&[HeaderBinding]> {
        self.get(name).map(Vec::as_slice)
    }
}

impl ToolHeaders for std::collections::BTreeMap<String, Vec<HeaderBinding>> {
    fn header_bindings(&self, name: &str) -> Option<&[HeaderBinding]> {
        self.get(name).map(Vec::as_slice)
    }
}

/// The argument value a binding mirrors: read at its property path; `None` when absent or
/// `null`.
pub(crate) fn bound_value<'a>(
    binding: &HeaderBinding,
    arguments: &'a Map<String, Value>,
) -> Option<&'a Value> {
    let (first, rest) = binding.property_path().split_first()?;
    let mut value = arguments.get(first)?;
    for name in rest {
        value = value.as_object()?.get(name)?;
    }
    (!value.is_null()).then_some(value)
}

/// An MCP header: its name as the messages spell it, and as a parsed [`HeaderName`] for the
/// lookup (built at compile time, so a [`HeaderMap`] lookup does not parse the name).
pub(crate) struct Known {
    /// As in [`mcp_wire::names::headers`] (used in messages).
    pub(crate) text: &'static str,
    /// The same name, lower case.
    pub(crate) name: HeaderName,
}

impl Known {
    /// The header in `headers`.
    pub(crate) fn lookup<'a>(&self, headers: &'a (impl HeaderSource + ?Sized)) -> Lookup<'a> {
        headers.lookup_name(&self.name)
    }
}

/// `MCP-Protocol-Version`.
pub(crate) static PROTOCOL_VERSION: Known = Known {
    text: names::PROTOCOL_VERSION,
    name: HeaderName::from_static("mcp-protocol-version"),
};

/// `Mcp-Method`.
pub(crate) static METHOD: Known = Known {
    text: names::METHOD,
    name: HeaderName::from_static("mcp-method"),
};

/// `Mcp-Name`.
pub(crate) static NAME: Known = Known {
    text: names::NAME,
    name: HeaderName::from_static("mcp-name"),
};

/// A required, single, plain header value as text.
pub(crate) fn required<'a>(
    headers: &'a (impl HeaderSource + ?Sized),
    header: &Known,
) -> Result<&'a [u8], Failure> {
    let name = header.text;
    match header.lookup(headers) {
        Lookup::One(v) => Ok(v),
        Lookup::Missing => Err(Failure::header_mismatch(format!("missing {name} header"))),
        Lookup::Repeated => Err(Failure::header_mismatch(format!(
            "{name} header appears more than once"
        ))),
    }
}

/// `MCP-Protocol-Version` is present and equals the body's `_meta` version (when the body has
/// one; a missing `_meta` version is reported later as `MissingMeta`).
pub(crate) fn check_version(
    headers: &(impl HeaderSource + ?Sized),
    meta_version: Option<&str>,
) -> Result<(), Failure> {
    let raw = required(headers, &PROTOCOL_VERSION)?;
    match meta_version {
        Some(body) if raw != body.as_bytes() => Err(Failure::header_mismatch(format!(
            "MCP-Protocol-Version header {:?} does not match _meta protocolVersion {body:?}",
            String::from_utf8_lossy(raw)
        ))),
        _ => Ok(()),
    }
}

/// `Mcp-Method` is present and equals the body's method, byte for byte (values are
/// case-sensitive).
pub(crate) fn check_method(
    headers: &(impl HeaderSource + ?Sized),
    method: &str,
) -> Result<(), Failure> {
    let raw = required(headers, &METHOD)?;
    if raw == method.as_bytes() {
        Ok(())
    } else {
        Err(Failure::header_mismatch(format!(
            "Mcp-Method header {:?} does not match body method {method:?}",
            String::from_utf8_lossy(raw)
        )))
    }
}

/// `Mcp-Name` is present and, after base64-sentinel decoding, equals `name`.
pub(crate) fn check_name(
    headers: &(impl HeaderSource + ?Sized),
    name: &str,
) -> Result<(), Failure> {
    let raw = required(headers, &NAME)?;
    match header::decode(raw) {
        Ok(decoded) if decoded == name => Ok(()),
        Ok(decoded) => Err(Failure::header_mismatch(format!(
            "Mcp-Name header {decoded:?} does not match body value {name:?}"
        ))),
        Err(e) => Err(Failure::header_mismatch(format!(
            "malformed Mcp-Name header: {e}"
        ))),
    }
}

/// Every `Mcp-Param-*` header mirrors the tool's bound arguments: present exactly when the
/// argument has a non-null value, equal after decoding, and no header for an unbound name.
pub(crate) fn check_params(
    headers: &(impl HeaderSource + ?Sized),
    bindings: &[HeaderBinding],
    arguments: &Map<String, Value>,
) -> Result<(), Failure> {
    for binding in bindings {
        let header_name = binding.header_name();
        let raw = match headers.lookup(&header_name) {
            Lookup::Missing => None,
            Lookup::One(v) => Some(v),
            Lookup::Repeated => {
                return Err(Failure::header_mismatch(format!(
                    "{header_name} header appears more than once"
                )));
            }
        };
        let value = bound_value(binding, arguments);
        header::check_header(raw, value).map_err(|e| {
            let why = match e {
                HeaderMismatch::Missing => "is missing but the argument has a value".to_owned(),
                HeaderMismatch::Unexpected => "is present but the argument has no value".to_owned(),
                HeaderMismatch::NotEqual => "does not match the argument".to_owned(),
                other => format!("is malformed: {other}"),
            };
            Failure::header_mismatch(format!("{header_name} header {why}"))
        })?;
    }
    let mut extra = None;
    headers.for_each_param_header(&mut |name| {
        let suffix = &name[names::PARAM_PREFIX.len()..];
        if extra.is_none()
            && !bindings
                .iter()
                .any(|b| b.name().eq_ignore_ascii_case(suffix))
        {
            extra = Some(name.to_owned());
        }
    });
    match extra {
        Some(name) => Err(Failure::header_mismatch(format!(
            "{name} header does not mirror any x-mcp-header argument of this tool"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_are_the_wire_names() {
        for known in [&PROTOCOL_VERSION, &METHOD, &NAME] {
            assert!(known.name.as_str().eq_ignore_ascii_case(known.text));
        }
    }

    #[test]
    fn lookup_name_agrees_with_lookup() {
        let mut map = HeaderMap::new();
        map.insert("MCP-Protocol-Version", "2026-07-28".parse().unwrap());
        map.append("Mcp-Method", "a".parse().unwrap());
        map.append("mcp-method", "b".parse().unwrap());
        let pairs = vec![
            ("mcp-PROTOCOL-version", "2026-07-28"),
            ("Mcp-Method", "a"),
            ("MCP-METHOD", "b"),
        ];
        for known in [&PROTOCOL_VERSION, &METHOD, &NAME] {
            assert_eq!(known.lookup(&map), map.lookup(known.text), "{}", known.text);
            assert_eq!(
                known.lookup(&pairs),
                pairs.lookup(known.text),
                "{}",
                known.text
            );
            assert_eq!(
                known.lookup(pairs.as_slice()),
                pairs.as_slice().lookup(known.text)
            );
        }
        assert_eq!(PROTOCOL_VERSION.lookup(&map), Lookup::One(b"2026-07-28"));
        assert_eq!(METHOD.lookup(&map), Lookup::Repeated);
        assert_eq!(NAME.lookup(&pairs), Lookup::Missing);
    }
}
