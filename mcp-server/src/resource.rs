//! Resources: fixed URIs and RFC 6570 level 1 URI templates.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use mcp_adapters::{CacheHint, CacheScope};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{RegistrationError, ResourceError};
use crate::exchange::Exchange;
use crate::handler::{Handler, Token};
use crate::icon::{Icon, icons_value};
use mcp_wire::model::ResourceContents;

/// What a resource read receives: the URI asked for and, for a template, its variables
/// (percent-decoded).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct ResourceRequest {
    /// The URI the client asked for.
    pub uri: String,
    /// The template's variables (empty for a fixed resource).
    pub vars: BTreeMap<String, String>,
}

impl ResourceRequest {
    /// One variable.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The variables as a typed value (field names are variable names).
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ResourceError> {
        let map: Map<String, Value> = self
            .vars
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        serde_json::from_value(Value::Object(map))
            .map_err(|e| ResourceError::NotFound(format!("{}: {e}", self.uri)))
    }
}

/// What a resource handler may return: `String` (text), `Vec<u8>` (binary),
/// [`ResourceContents`], `Vec<ResourceContents>`, or `Result<T, E>` of these where
/// `E: Into<ResourceError>`.
pub trait IntoResourceContents: Send + 'static {
    /// The contents read from `uri`.
    fn into_contents(self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError>;
}

impl IntoResourceContents for String {
    fn into_contents(self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(vec![ResourceContents::text(uri, self)])
    }
}

impl IntoResourceContents for &'static str {
    fn into_contents(self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(vec![ResourceContents::text(uri, self)])
    }
}

impl IntoResourceContents for Vec<u8> {
    fn into_contents(self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(vec![ResourceContents::blob(uri, self)])
    }
}

impl IntoResourceContents for ResourceContents {
    fn into_contents(self, _: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(vec![self])
    }
}

impl IntoResourceContents for Vec<ResourceContents> {
    fn into_contents(self, _: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(self)
    }
}

impl<T: IntoResourceContents, E: Into<ResourceError> + Send + 'static> IntoResourceContents
    for Result<T, E>
{
    fn into_contents(self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        self.map_err(Into::into)?.into_contents(uri)
    }
}

pub(crate) type ErasedReader = Arc<
    dyn Fn(
            ResourceRequest,
            Exchange,
        ) -> BoxFuture<'static, Result<Vec<ResourceContents>, ResourceError>>
        + Send
        + Sync,
>;

fn erase<H, M>(handler: H) -> ErasedReader
where
    H: Handler<M, Input = ResourceRequest>,
    H::Output: IntoResourceContents,
{
    let handler = Arc::new(handler);
    Arc::new(move |request: ResourceRequest, ex: Exchange| {
        let uri = request.uri.clone();
        let fut = handler.start(request, &mut || ex.clone(), |out| out, Token(()));
        async move { fut.await.into_contents(&uri) }.boxed()
    })
}

/// Metadata shared by fixed resources and templates.
#[derive(Clone, Debug, Default)]
pub(crate) struct ResourceMeta {
    pub(crate) name: String,
    /// The types of the shared state the handler's parts take (none, one, or a conflict the
    /// build reports).
    pub(crate) state_types: Vec<(std::any::TypeId, &'static str)>,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) size: Option<u64>,
    pub(crate) icons: Vec<Icon>,
    pub(crate) cache: CacheHint,
}

impl ResourceMeta {
    fn write(&self, out: &mut Map<String, Value>) {
        out.insert("name".into(), Value::String(self.name.clone()));
        if let Some(title) = &self.title {
            out.insert("title".into(), Value::String(title.clone()));
        }
        if let Some(description) = &self.description {
            out.insert("description".into(), Value::String(description.clone()));
        }
        if let Some(mime) = &self.mime_type {
            out.insert("mimeType".into(), Value::String(mime.clone()));
        }
        if let Some(size) = self.size {
            out.insert("size".into(), Value::from(size));
        }
        if let Some(icons) = icons_value(&self.icons) {
            out.insert("icons".into(), icons);
        }
    }
}

macro_rules! resource_setters {
    () => {
        /// Sets the display title (not shown before 2025-06-18). Default is none.
        #[must_use]
        pub fn title(mut self, title: impl Into<String>) -> Self {
            self.meta.title = Some(title.into());
            self
        }

        /// Sets the description. Default is none.
        #[must_use]
        pub fn description(mut self, description: impl Into<String>) -> Self {
            self.meta.description = Some(description.into());
            self
        }

        /// Sets the MIME type, also used for contents that name none. Default is none.
        #[must_use]
        pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
            self.meta.mime_type = Some(mime_type.into());
            self
        }

        /// Adds an icon (shown from 2025-11-25). Default is none.
        #[must_use]
        pub fn icon(mut self, icon: Icon) -> Self {
            self.meta.icons.push(icon);
            self
        }

        /// Sets the cache hint of `resources/read` results (2026-07-28). Default is
        /// `ttlMs: 0`, `cacheScope: "private"`.
        #[must_use]
        pub fn cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
            self.meta.cache = CacheHint { ttl_ms, scope };
            self
        }
    };
}

/// A resource at one fixed URI, listed by `resources/list`.
///
/// ```
/// use mcp_server::{Resource, ResourceRequest, Server};
///
/// async fn config(_: ResourceRequest) -> String {
///     r#"{"mode":"production"}"#.to_owned()
/// }
///
/// let server = Server::builder("demo", "1.0")
///     .resource(Resource::new("config://app", "config", config).mime_type("application/json"))
///     .build()
///     .unwrap();
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct Resource {
    pub(crate) uri: String,
    pub(crate) meta: ResourceMeta,
    pub(crate) read: ErasedReader,
}

impl fmt::Debug for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.uri)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl Resource {
    /// A resource at `uri`, named `name`, read by `handler`.
    ///
    /// The handler is an async function of one of the [handler shapes](crate::Handler) whose
    /// input is the [`ResourceRequest`] and whose output is an [`IntoResourceContents`].
    pub fn new<H, M>(uri: impl Into<String>, name: impl Into<String>, handler: H) -> Self
    where
        H: Handler<M, Input = ResourceRequest>,
        H::Output: IntoResourceContents,
    {
        Self {
            uri: uri.into(),
            meta: ResourceMeta {
                name: name.into(),
                state_types: H::state_types(),
                ..ResourceMeta::default()
            },
            read: erase(handler),
        }
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    resource_setters!();

    /// Sets the size in bytes, if known. Default is none.
    #[must_use]
    pub fn size(mut self, size: u64) -> Self {
        self.meta.size = Some(size);
        self
    }

    pub(crate) fn definition(&self) -> Value {
        let mut out = Map::new();
        out.insert("uri".into(), Value::String(self.uri.clone()));
        self.meta.write(&mut out);
        Value::Object(out)
    }
}

/// Resources addressed by a URI template, listed by `resources/templates/list`.
#[derive(Clone)]
pub struct ResourceTemplate {
    pub(crate) template: String,
    pub(crate) meta: ResourceMeta,
    pub(crate) read: ErasedReader,
}

impl fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceTemplate")
            .field("template", &self.template)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl ResourceTemplate {
    /// Resources matching `template` (RFC 6570 level 1: `{var}` expressions, each matching
    /// one non-empty run of characters without `/`), named `name`, read by `handler`.
    ///
    /// The handler is as for [`Resource::new`].
    pub fn new<H, M>(template: impl Into<String>, name: impl Into<String>, handler: H) -> Self
    where
        H: Handler<M, Input = ResourceRequest>,
        H::Output: IntoResourceContents,
    {
        Self {
            template: template.into(),
            meta: ResourceMeta {
                name: name.into(),
                state_types: H::state_types(),
                ..ResourceMeta::default()
            },
            read: erase(handler),
        }
    }

    /// The template text.
    pub fn uri_template(&self) -> &str {
        &self.template
    }

    resource_setters!();

    pub(crate) fn definition(&self) -> Value {
        let mut out = Map::new();
        out.insert("uriTemplate".into(), Value::String(self.template.clone()));
        self.meta.write(&mut out);
        Value::Object(out)
    }
}

/// A parsed RFC 6570 level 1 URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

impl UriTemplate {
    /// Parses `template`; operators (`+#./;?&`), modifiers, adjacent expressions and repeated
    /// names are refused.
    pub(crate) fn parse(template: &str) -> Result<Self, RegistrationError> {
        let fail = |reason: &str| RegistrationError::InvalidUri {
            uri: template.to_owned(),
            reason: reason.to_owned(),
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                Some(at) if rest.as_bytes()[at] == b'}' => return Err(fail("unbalanced '}'")),
                Some(at) => {
                    if at > 0 {
                        parts.push(Part::Literal(rest[..at].to_owned()));
                    }
                    let Some(end) = rest[at..].find('}') else {
                        return Err(fail("unclosed '{'"));
                    };
                    let name = &rest[at + 1..at + end];
                    if name.is_empty() {
                        return Err(fail("empty expression '{}'"));
                    }
                    if !name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                    {
                        return Err(fail(
                            "only level 1 expressions '{name}' are supported (letters, digits, '_' and '.')",
                        ));
                    }
                    if matches!(parts.last(), Some(Part::Var(_))) {
                        return Err(fail("two expressions in a row cannot be told apart"));
                    }
                    if parts.iter().any(|p| matches!(p, Part::Var(v) if v == name)) {
                        return Err(fail("a variable appears twice"));
                    }
                    parts.push(Part::Var(name.to_owned()));
                    rest = &rest[at + end + 1..];
                }
                None => {
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        if !parts.iter().any(|p| matches!(p, Part::Var(_))) {
            return Err(fail(
                "a template needs at least one '{var}'; use a fixed resource",
            ));
        }
        Ok(Self { parts })
    }

    /// The number of literal characters: more literal text means a more specific template.
    pub(crate) fn literal_len(&self) -> usize {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Literal(l) => l.len(),
                Part::Var(_) => 0,
            })
            .sum()
    }

    /// The variables, when `uri` matches.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        match_parts(&self.parts, uri, &mut vars).then_some(vars)
    }
}

fn match_parts(parts: &[Part], uri: &str, vars: &mut BTreeMap<String, String>) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(lit), rest)) => uri
            .strip_prefix(lit.as_str())
            .is_some_and(|tail| match_parts(rest, tail, vars)),
        Some((Part::Var(name), rest)) => {
            // A value is a non-empty run without '/', so try each possible end in turn.
            let limit = uri.find('/').unwrap_or(uri.len());
            for end in (1..=limit).filter(|&e| uri.is_char_boundary(e)) {
                let Some(value) = percent_decode(&uri[..end]) else {
                    continue;
                };
                if match_parts(rest, &uri[end..], vars) {
                    vars.insert(name.clone(), value);
                    return true;
                }
            }
            false
        }
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A fixed resource URI must have a scheme (`scheme:rest`, RFC 3986) and no braces.
pub(crate) fn check_fixed_uri(uri: &str) -> Result<(), RegistrationError> {
    let fail = |reason: &str| RegistrationError::InvalidUri {
        uri: uri.to_owned(),
        reason: reason.to_owned(),
    };
    if uri.contains(['{', '}']) {
        return Err(fail("braces make it a template; use ResourceTemplate"));
    }
    check_scheme(uri).map_err(fail)
}

pub(crate) fn check_scheme(uri: &str) -> Result<(), &'static str> {
    let Some((scheme, _)) = uri.split_once(':') else {
        return Err("a URI needs a scheme ('scheme:...')");
    };
    let mut chars = scheme.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) {
        return Err("the scheme must be a letter followed by letters, digits, '+', '-' or '.'");
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a URI has no whitespace or control characters");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_one_templates_match_and_decode() {
        type Case<'a> = (&'a str, &'a str, Option<&'a [(&'a str, &'a str)]>);
        let cases: &[Case<'_>] = &[
            ("res://items/{id}", "res://items/42", Some(&[("id", "42")])),
            (
                "res://items/{id}",
                "res://items/a%20b",
                Some(&[("id", "a b")]),
            ),
            ("res://items/{id}", "res://items/", None),
            ("res://items/{id}", "res://items/4/2", None),
            ("res://items/{id}", "res://other/4", None),
            (
                "res://{kind}/{id}.json",
                "res://a/b.c.json",
                Some(&[("kind", "a"), ("id", "b.c")]),
            ),
            ("res://{kind}/{id}.json", "res://a/b.txt", None),
            ("file:///{name}", "file:///x", Some(&[("name", "x")])),
            ("res://items/{id}", "res://items/%zz", None),
        ];
        for (template, uri, expected) in cases {
            let parsed = UriTemplate::parse(template).unwrap();
            let got = parsed.matches(uri);
            let expected = expected.map(|pairs| {
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>()
            });
            assert_eq!(got, expected, "{template} against {uri}");
        }
    }

    #[test]
    fn templates_beyond_level_one_are_refused() {
        for bad in [
            "res://{+path}",
            "res://{#frag}",
            "res://{a,b}",
            "res://{id*}",
            "res://{}",
            "res://{a}{b}",
            "res://{a}/{a}",
            "res://{open",
            "res://close}",
            "res://fixed",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fixed_uris_need_a_scheme() {
        assert!(check_fixed_uri("config://app").is_ok());
        assert!(check_fixed_uri("urn:x").is_ok());
        for bad in ["no-scheme", "1x://a", "a b://c", "x://{id}", "x://a b"] {
            assert!(check_fixed_uri(bad).is_err(), "{bad}");
        }
    }
}
