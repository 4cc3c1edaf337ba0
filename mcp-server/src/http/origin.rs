//! `Origin` and `Host` validation: allow-lists with `*` (one label) and `**` (several).

use std::borrow::Cow;

use http::HeaderMap;
use http::header::{HOST, ORIGIN};

use crate::http::config::HttpConfig;

/// One allowed origin (`scheme://host[:port]`) or host (`host[:port]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pattern {
    /// Lowercase scheme; `None` for a host pattern.
    scheme: Option<String>,
    /// Lowercase labels; `*` and `**` are wildcards. An IPv6 literal is one label.
    labels: Vec<String>,
    port: PortPattern,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum PortPattern {
    /// No port given: an origin must have none; a host may have any.
    Unspecified,
    /// `:*`.
    Any,
    /// A literal port.
    Exact(String),
}

/// `s` in ASCII lowercase, borrowed when it already is (the common case: no allocation per
/// request).
fn ascii_lowercase(s: &str) -> Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(s.to_ascii_lowercase())
    } else {
        Cow::Borrowed(s)
    }
}

/// `host[:port]` split, the host lowercased. `None` when it is empty or malformed.
fn split_authority(authority: &str) -> Option<(Cow<'_, str>, Option<&str>)> {
    let authority = authority.trim();
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let host = &authority[..end + 2];
        let after = &rest[end + 1..];
        match after.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if after.is_empty() => (host, None),
            None => return None,
        }
    } else {
        // The last ':' found by a plain backward scan: the port is a few bytes from the end,
        // and `rsplit_once`'s searcher costs more than the whole scan on every request.
        match authority.bytes().rposition(|b| b == b':') {
            Some(colon) => (&authority[..colon], Some(&authority[colon + 1..])),
            None => (authority, None),
        }
    };
    if host.is_empty() || port.is_some_and(str::is_empty) {
        return None;
    }
    Some((ascii_lowercase(host), port))
}

fn labels_of(host: &str) -> Vec<String> {
    if host.starts_with('[') {
        vec![host.to_owned()]
    } else {
        host.split('.').map(str::to_owned).collect()
    }
}

fn port_pattern(port: Option<&str>) -> PortPattern {
    match port {
        None => PortPattern::Unspecified,
        Some("*") => PortPattern::Any,
        Some(p) => PortPattern::Exact(p.to_owned()),
    }
}

impl Pattern {
    /// An origin pattern. A malformed one matches nothing.
    pub(crate) fn origin(text: &str) -> Self {
        let (scheme, rest) = text.split_once("://").unwrap_or(("", text));
        let (host, port) = split_authority(rest.trim_end_matches('/')).unwrap_or_default();
        Self {
            scheme: Some(scheme.to_ascii_lowercase()),
            labels: labels_of(&host),
            port: port_pattern(port),
        }
    }

    /// A host pattern. A malformed one matches nothing.
    pub(crate) fn host(text: &str) -> Self {
        let (host, port) = split_authority(text).unwrap_or_default();
        Self {
            scheme: None,
            labels: labels_of(&host),
            port: port_pattern(port),
        }
    }

    fn matches_host(&self, host: &str, port: Option<&str>) -> bool {
        let port_ok = match &self.port {
            PortPattern::Any => true,
            PortPattern::Unspecified => self.scheme.is_none() || port.is_none(),
            PortPattern::Exact(p) => port == Some(p.as_str()),
        };
        let labels = labels_of(host);
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        let pattern: Vec<&str> = self.labels.iter().map(String::as_str).collect();
        port_ok && !pattern.is_empty() && labels_match(&pattern, &labels)
    }

    fn matches_origin(&self, origin: &Origin<'_>) -> bool {
        self.scheme.as_deref() == Some(&*origin.scheme)
            && self.matches_host(&origin.host, origin.port)
    }
}

/// `*` matches one label, `**` one or more; other labels match exactly.
fn labels_match(pattern: &[&str], labels: &[&str]) -> bool {
    match (pattern.split_first(), labels.split_first()) {
        (None, None) => true,
        (None, Some(_)) | (Some(_), None) => false,
        (Some((&"**", rest)), Some(_)) => {
            (1..=labels.len()).any(|taken| labels_match(rest, &labels[taken..]))
        }
        (Some((&"*", rest)), Some((_, tail))) => labels_match(rest, tail),
        (Some((first, rest)), Some((label, tail))) => first == label && labels_match(rest, tail),
    }
}

/// A parsed `Origin` header.
struct Origin<'a> {
    scheme: Cow<'a, str>,
    host: Cow<'a, str>,
    port: Option<&'a str>,
}

fn parse_origin(text: &str) -> Option<Origin<'_>> {
    let (scheme, rest) = text.split_once("://")?;
    if rest.contains('/') {
        return None;
    }
    let (host, port) = split_authority(rest)?;
    Some(Origin {
        scheme: ascii_lowercase(scheme),
        host,
        port,
    })
}

fn is_localhost(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

/// The host the request names: the request target's authority when it has one (an
/// absolute-form target in HTTP/1.1, `:authority` in HTTP/2; RFC 9112 3.2.2 says the `Host`
/// header is then ignored), else the one `Host` header. More than one `Host` header is a bad
/// request (RFC 9112 3.2).
fn request_host<'a>(
    headers: &'a HeaderMap,
    uri: &'a http::Uri,
) -> Result<Option<&'a str>, Refusal> {
    let mut hosts = headers.get_all(HOST).iter();
    let first = hosts.next();
    if hosts.next().is_some() {
        return Err(Refusal::BadHost);
    }
    if let Some(authority) = uri.authority() {
        // Without userinfo (`user@host`): only the host and port name the server.
        let text = authority.as_str();
        return Ok(Some(text.rsplit_once('@').map_or(text, |(_, host)| host)));
    }
    Ok(first.and_then(|value| value.to_str().ok()))
}

/// Why a request was refused before anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The `Origin` is not allowed (403).
    Origin,
    /// The host the request names is not allowed (403).
    Host,
    /// The request names its host ambiguously: several `Host` headers (400).
    BadHost,
}

/// Checks `Host` (and the request target's authority), then `Origin`.
pub(crate) fn check(
    config: &HttpConfig,
    headers: &HeaderMap,
    uri: &http::Uri,
) -> Result<(), Refusal> {
    let host = request_host(headers, uri)?;
    let parsed_host = host.and_then(split_authority);
    let restricted = !config.hosts.is_empty() || config.bound_loopback;
    if restricted {
        let Some((name, port)) = &parsed_host else {
            return Err(Refusal::Host);
        };
        let listed = config.hosts.iter().any(|p| p.matches_host(name, *port));
        let local = is_localhost(name)
            && (config.trusts_localhost() || (config.hosts.is_empty() && config.bound_loopback));
        if !listed && !local {
            return Err(Refusal::Host);
        }
    }
    let Some(origin) = headers.get(ORIGIN) else {
        return Ok(());
    };
    let Some(origin) = origin.to_str().ok().and_then(parse_origin) else {
        return Err(Refusal::Origin);
    };
    let same_origin = parsed_host
        .as_ref()
        .is_some_and(|(name, port)| *name == origin.host && *port == origin.port);
    let local = config.trusts_localhost() && is_localhost(&origin.host);
    if same_origin || local || config.origins.iter().any(|p| p.matches_origin(&origin)) {
        Ok(())
    } else {
        Err(Refusal::Origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin_ok(pattern: &str, origin: &str) -> bool {
        Pattern::origin(pattern).matches_origin(&parse_origin(origin).unwrap())
    }

    #[test]
    fn authorities_split_at_their_last_colon() {
        type Split<'a> = Option<(&'a str, Option<&'a str>)>;
        let rows: [(&str, Split<'_>); 10] = [
            ("127.0.0.1:8080", Some(("127.0.0.1", Some("8080")))),
            ("Example.COM", Some(("example.com", None))),
            (" localhost:1 ", Some(("localhost", Some("1")))),
            ("[::1]:443", Some(("[::1]", Some("443")))),
            ("[::1]", Some(("[::1]", None))),
            ("a:b:c", Some(("a:b", Some("c")))),
            ("host:", None),
            (":80", None),
            ("", None),
            ("[::1]x", None),
        ];
        for (authority, expected) in rows {
            let split = split_authority(authority);
            let split = split.as_ref().map(|(host, port)| (host.as_ref(), *port));
            assert_eq!(split, expected, "{authority:?}");
        }
    }

    #[test]
    fn origin_wildcards() {
        let rows = [
            ("https://*.example.com", "https://a.example.com", true),
            ("https://*.example.com", "https://a.b.example.com", false),
            ("https://*.example.com", "https://example.com", false),
            ("https://**.example.com", "https://a.b.example.com", true),
            ("https://**.example.com", "https://a.example.com", true),
            ("https://**.example.com", "https://example.com", false),
            ("https://*.example.com", "http://a.example.com", false),
            ("https://app.example.com", "https://APP.example.com", true),
            (
                "https://app.example.com",
                "https://app.example.com:8443",
                false,
            ),
            (
                "https://app.example.com:8443",
                "https://app.example.com:8443",
                true,
            ),
            ("http://localhost:*", "http://localhost:3000", true),
            ("http://localhost:*", "http://localhost", true),
            ("http://[::1]:*", "http://[::1]:9", true),
        ];
        for (pattern, origin, expected) in rows {
            assert_eq!(origin_ok(pattern, origin), expected, "{pattern} {origin}");
        }
    }

    fn check_with(config: &HttpConfig, host: &str, origin: Option<&str>) -> Result<(), Refusal> {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, host.parse().unwrap());
        if let Some(origin) = origin {
            headers.insert(ORIGIN, origin.parse().unwrap());
        }
        check(config, &headers, &http::Uri::from_static("/mcp"))
    }

    #[test]
    fn loopback_defaults() {
        let mut config = HttpConfig::new();
        config.bound_loopback = true;
        assert_eq!(check_with(&config, "127.0.0.1:8080", None), Ok(()));
        assert_eq!(check_with(&config, "localhost:8080", None), Ok(()));
        assert_eq!(
            check_with(&config, "evil.example:8080", None),
            Err(Refusal::Host)
        );
        assert_eq!(
            check_with(&config, "127.0.0.1:8080", Some("http://localhost:5173")),
            Ok(())
        );
        assert_eq!(
            check_with(&config, "127.0.0.1:8080", Some("https://evil.example")),
            Err(Refusal::Origin)
        );
        assert_eq!(
            check_with(&config, "127.0.0.1:8080", Some("null")),
            Err(Refusal::Origin)
        );
    }

    #[test]
    fn two_host_headers_are_a_bad_request() {
        let mut headers = HeaderMap::new();
        headers.append(HOST, "localhost".parse().unwrap());
        headers.append(HOST, "evil.example".parse().unwrap());
        for config in [
            HttpConfig::new(),
            HttpConfig::new().allowed_host("localhost"),
        ] {
            assert_eq!(
                check(&config, &headers, &http::Uri::from_static("/mcp")),
                Err(Refusal::BadHost)
            );
        }
    }

    #[test]
    fn an_absolute_target_names_the_host() {
        let mut config = HttpConfig::new();
        config.bound_loopback = true;
        let mut headers = HeaderMap::new();
        headers.insert(HOST, "127.0.0.1:8080".parse().unwrap());
        let check_uri = |uri: &'static str| check(&config, &headers, &http::Uri::from_static(uri));
        assert_eq!(
            check_uri("http://evil.example:8080/mcp"),
            Err(Refusal::Host)
        );
        assert_eq!(
            check_uri("http://127.0.0.1@evil.example/mcp"),
            Err(Refusal::Host),
            "userinfo is not the host"
        );
        assert_eq!(check_uri("http://localhost:8080/mcp"), Ok(()));
        assert_eq!(check_uri("/mcp"), Ok(()));
    }

    #[test]
    fn listed_hosts_and_origins() {
        let config = HttpConfig::new()
            .allowed_host("**.example.com")
            .allowed_origin("https://*.example.com");
        assert_eq!(check_with(&config, "mcp.example.com:443", None), Ok(()));
        assert_eq!(check_with(&config, "localhost", None), Err(Refusal::Host));
        assert_eq!(
            check_with(&config, "mcp.example.com", Some("https://app.example.com")),
            Ok(())
        );
        assert_eq!(
            check_with(&config, "mcp.example.com", Some("https://mcp.example.com")),
            Ok(()),
            "same origin"
        );
        assert_eq!(
            check_with(&config, "mcp.example.com", Some("https://x.evil.com")),
            Err(Refusal::Origin)
        );
        let open = HttpConfig::new();
        assert_eq!(check_with(&open, "anything:1", None), Ok(()));
        assert_eq!(
            check_with(&open, "anything:1", Some("http://localhost:1")),
            Err(Refusal::Origin),
            "a mounted endpoint does not trust localhost origins by default"
        );
    }
}
