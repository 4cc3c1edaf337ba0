//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1), and the Bearer/DPoP view MCP uses.
//!
//! The parser takes whatever a peer sends and never panics: a value that is not a list of
//! challenges is a [`ChallengeError`]. The writer quotes every parameter value and drops the
//! characters a quoted string cannot carry (control characters other than tab), so what it
//! writes is always a valid header value.
//!
//! ```
//! use mcp_auth::{BearerChallenge, Challenge};
//!
//! let header = r#"Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp", scope="files:read""#;
//! let challenges = Challenge::parse_all(header).unwrap();
//! let bearer = BearerChallenge::find(&challenges).unwrap();
//! assert_eq!(bearer.scope.as_deref(), Some("files:read"));
//! assert_eq!(Challenge::parse_all(&bearer.to_challenge().to_string()).unwrap(), challenges);
//! ```

use std::fmt;

/// A `WWW-Authenticate` value that is not a list of challenges.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed WWW-Authenticate value at byte {at}: {what}")]
pub struct ChallengeError {
    /// Where the value stopped making sense.
    pub at: usize,
    /// What was expected there.
    pub what: &'static str,
}

/// One challenge: a scheme, then either a `token68` or a list of parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    /// The authentication scheme (`Bearer`, `DPoP`, `Basic`, ...), compared without case.
    pub scheme: String,
    /// A `token68` in place of parameters (as `Basic` and `Negotiate` use).
    pub token68: Option<String>,
    /// The parameters in order; names compared without case.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// A challenge of `scheme` with no parameters.
    pub fn new(scheme: impl Into<String>) -> Self {
        Self {
            scheme: scheme.into(),
            token68: None,
            params: Vec::new(),
        }
    }

    /// The same challenge with the parameter `name` set to `value`.
    #[must_use]
    pub fn with_param(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.push((name.into(), value.into()));
        self
    }

    /// The value of the first parameter named `name` (without case).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the scheme is `scheme` (without case).
    pub fn is(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }

    /// Every challenge of a `WWW-Authenticate` value (one header line; the values of several
    /// lines can be joined with `", "` first).
    pub fn parse_all(value: &str) -> Result<Vec<Self>, ChallengeError> {
        Parser {
            bytes: value.as_bytes(),
            at: 0,
        }
        .challenges()
    }

    /// Writes several challenges as one header value.
    pub fn join(challenges: &[Self]) -> String {
        challenges
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Challenge {
    /// The header form. A scheme, name or `token68` that is not a token keeps only its token
    /// characters; values are quoted strings without the control characters they cannot hold.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_token(f, &self.scheme, is_tchar)?;
        if let Some(token68) = &self.token68 {
            f.write_str(" ")?;
            return write_token(f, token68, |b| is_token68(b) || b == b'=');
        }
        for (i, (name, value)) in self.params.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { ", " })?;
            write_token(f, name, is_tchar)?;
            f.write_str("=\"")?;
            for c in value.chars() {
                match c {
                    '"' | '\\' => write!(f, "\\{c}")?,
                    '\t' => f.write_str("\t")?,
                    c if c.is_control() => {}
                    c => write!(f, "{c}")?,
                }
            }
            f.write_str("\"")?;
        }
        Ok(())
    }
}

fn write_token(f: &mut fmt::Formatter<'_>, text: &str, keep: fn(u8) -> bool) -> fmt::Result {
    for b in text.bytes().filter(|&b| keep(b)) {
        f.write_str(std::str::from_utf8(&[b]).unwrap_or_default())?;
    }
    Ok(())
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 9110 `token68` characters, before its `=` padding.
fn is_token68(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn fail<T>(&self, what: &'static str) -> Result<T, ChallengeError> {
        Err(ChallengeError { at: self.at, what })
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    /// Skips whitespace and empty list elements.
    fn skip_separators(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.at += 1;
        }
    }

    fn token(&mut self) -> Option<&str> {
        let start = self.at;
        while self.peek().is_some_and(is_tchar) {
            self.at += 1;
        }
        // Token characters are ASCII, so the slice is UTF-8.
        (self.at > start).then(|| std::str::from_utf8(&self.bytes[start..self.at]).unwrap_or(""))
    }

    fn challenges(mut self) -> Result<Vec<Challenge>, ChallengeError> {
        let mut out = Vec::new();
        loop {
            self.skip_separators();
            if self.peek().is_none() {
                return Ok(out);
            }
            let Some(scheme) = self.token() else {
                return self.fail("an authentication scheme");
            };
            let mut challenge = Challenge::new(scheme);
            let spaced = matches!(self.peek(), Some(b' ' | b'\t'));
            self.skip_ows();
            if spaced && !matches!(self.peek(), None | Some(b',')) {
                if let Some(token68) = self.token68() {
                    challenge.token68 = Some(token68);
                } else {
                    self.params(&mut challenge.params)?;
                }
            }
            self.skip_ows();
            match self.peek() {
                None | Some(b',') => out.push(challenge),
                Some(_) => return self.fail("a comma between challenges"),
            }
        }
    }

    /// A `token68` that makes up the rest of the challenge (followed by the end or a comma),
    /// or `None` with nothing consumed.
    fn token68(&mut self) -> Option<String> {
        let start = self.at;
        let mut end = start;
        while self.bytes.get(end).copied().is_some_and(is_token68) {
            end += 1;
        }
        if end == start {
            return None;
        }
        while self.bytes.get(end) == Some(&b'=') {
            end += 1;
        }
        let mut after = end;
        while matches!(self.bytes.get(after), Some(b' ' | b'\t')) {
            after += 1;
        }
        if !matches!(self.bytes.get(after), None | Some(b',')) {
            return None;
        }
        self.at = end;
        std::str::from_utf8(&self.bytes[start..end])
            .ok()
            .map(str::to_owned)
    }

    /// `#auth-param`: parameters until the next challenge's scheme or the end.
    fn params(&mut self, params: &mut Vec<(String, String)>) -> Result<(), ChallengeError> {
        loop {
            let Some(name) = self.token().map(str::to_owned) else {
                return self.fail("a parameter name");
            };
            self.skip_ows();
            if self.peek() != Some(b'=') {
                return self.fail("'=' after a parameter name");
            }
            self.at += 1;
            self.skip_ows();
            let value = match self.peek() {
                Some(b'"') => self.quoted()?,
                _ => match self.token() {
                    Some(token) => token.to_owned(),
                    None => return self.fail("a token or a quoted string"),
                },
            };
            params.push((name, value));
            // After a parameter: a comma and another parameter of this challenge, or not (the
            // next challenge's scheme, the end, or an error the caller reports).
            let resume = self.at;
            self.skip_ows();
            if self.peek() != Some(b',') {
                self.at = resume;
                return Ok(());
            }
            self.skip_separators();
            let item = self.at;
            let is_param = self.token().is_some() && {
                self.skip_ows();
                self.peek() == Some(b'=')
            };
            if !is_param {
                self.at = resume;
                return Ok(());
            }
            self.at = item;
        }
    }

    fn quoted(&mut self) -> Result<String, ChallengeError> {
        self.at += 1;
        let mut value = Vec::new();
        loop {
            match self.peek() {
                None => return self.fail("the end of a quoted string"),
                Some(b'"') => {
                    self.at += 1;
                    return String::from_utf8(value).or_else(|_| self.fail("UTF-8 text"));
                }
                Some(b'\\') => {
                    self.at += 1;
                    match self.peek() {
                        Some(b) if b == b'\t' || b >= 0x20 && b != 0x7f => {
                            value.push(b);
                            self.at += 1;
                        }
                        _ => return self.fail("a quoted character"),
                    }
                }
                Some(b) if b == b'\t' || b >= 0x20 && b != 0x7f => {
                    value.push(b);
                    self.at += 1;
                }
                Some(_) => return self.fail("a character a quoted string may hold"),
            }
        }
    }
}

/// The parameters of a `Bearer` (or `DPoP`) challenge that MCP uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BearerChallenge {
    /// `Bearer` or `DPoP`.
    pub scheme: BearerScheme,
    /// `realm`, if any.
    pub realm: Option<String>,
    /// The URL of the protected resource metadata (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// The scopes needed, space-separated (RFC 6750 §3).
    pub scope: Option<String>,
    /// `invalid_request`, `invalid_token`, `insufficient_scope` (RFC 6750 §3.1), or a DPoP
    /// error (`use_dpop_nonce`, `invalid_dpop_proof`).
    pub error: Option<String>,
    /// A sentence for people.
    pub error_description: Option<String>,
    /// `algs` of a DPoP challenge (RFC 9449 §7.1).
    pub algs: Option<String>,
}

/// The scheme of a [`BearerChallenge`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BearerScheme {
    /// RFC 6750.
    #[default]
    Bearer,
    /// RFC 9449.
    DPoP,
}

impl BearerScheme {
    /// The scheme's name in a header.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bearer => "Bearer",
            Self::DPoP => "DPoP",
        }
    }
}

impl BearerChallenge {
    /// A `Bearer` challenge pointing at the resource's metadata.
    pub fn new(resource_metadata: impl Into<String>) -> Self {
        Self {
            resource_metadata: Some(resource_metadata.into()),
            ..Self::default()
        }
    }

    /// The first `Bearer` challenge of a list, else the first `DPoP` one.
    pub fn find(challenges: &[Challenge]) -> Option<Self> {
        challenges
            .iter()
            .find(|c| c.is("Bearer"))
            .or_else(|| challenges.iter().find(|c| c.is("DPoP")))
            .map(Self::from_challenge)
    }

    /// The view of one challenge (its scheme decides `scheme`; unknown parameters are ignored).
    pub fn from_challenge(challenge: &Challenge) -> Self {
        let get = |name| challenge.param(name).map(str::to_owned);
        Self {
            scheme: if challenge.is("DPoP") {
                BearerScheme::DPoP
            } else {
                BearerScheme::Bearer
            },
            realm: get("realm"),
            resource_metadata: get("resource_metadata"),
            scope: get("scope"),
            error: get("error"),
            error_description: get("error_description"),
            algs: get("algs"),
        }
    }

    /// The challenge, parameters in a fixed order.
    pub fn to_challenge(&self) -> Challenge {
        let mut challenge = Challenge::new(self.scheme.as_str());
        for (name, value) in [
            ("realm", &self.realm),
            ("resource_metadata", &self.resource_metadata),
            ("scope", &self.scope),
            ("error", &self.error),
            ("error_description", &self.error_description),
            ("algs", &self.algs),
        ] {
            if let Some(value) = value {
                challenge.params.push((name.to_owned(), value.clone()));
            }
        }
        challenge
    }

    /// The same challenge with `scope` set.
    #[must_use]
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// The same challenge with `error` (and an optional description) set.
    #[must_use]
    pub fn error(mut self, error: impl Into<String>, description: Option<&str>) -> Self {
        self.error = Some(error.into());
        self.error_description = description.map(str::to_owned);
        self
    }

    /// The same challenge with the `DPoP` scheme and its `algs`.
    #[must_use]
    pub fn dpop(mut self, algs: impl Into<String>) -> Self {
        self.scheme = BearerScheme::DPoP;
        self.algs = Some(algs.into());
        self
    }
}

impl fmt::Display for BearerChallenge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_challenge().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(value: &str) -> Vec<Challenge> {
        Challenge::parse_all(value).unwrap_or_else(|e| panic!("{value:?}: {e}"))
    }

    #[test]
    fn the_forms_of_rfc_9110_parse() {
        // (value, [(scheme, token68, params)])
        type Row = (
            &'static str,
            &'static [(
                &'static str,
                Option<&'static str>,
                &'static [(&'static str, &'static str)],
            )],
        );
        let table: &[Row] = &[
            ("Bearer", &[("Bearer", None, &[])]),
            (
                r#"Bearer realm="example", error="invalid_token""#,
                &[(
                    "Bearer",
                    None,
                    &[("realm", "example"), ("error", "invalid_token")],
                )],
            ),
            (
                "Basic YWxhZGRpbjpvcGVuc2VzYW1l",
                &[("Basic", Some("YWxhZGRpbjpvcGVuc2VzYW1l"), &[])],
            ),
            ("Negotiate abc==", &[("Negotiate", Some("abc=="), &[])]),
            (
                r#"Basic realm="a", Bearer scope=files.read , error = "x\"y""#,
                &[
                    ("Basic", None, &[("realm", "a")]),
                    (
                        "Bearer",
                        None,
                        &[("scope", "files.read"), ("error", "x\"y")],
                    ),
                ],
            ),
            (
                "Newauth realm=\"apps\", type=1, title=\"Login to \\\"apps\\\"\", Basic realm=\"simple\"",
                &[
                    (
                        "Newauth",
                        None,
                        &[
                            ("realm", "apps"),
                            ("type", "1"),
                            ("title", "Login to \"apps\""),
                        ],
                    ),
                    ("Basic", None, &[("realm", "simple")]),
                ],
            ),
            (
                ", ,Bearer ,, DPoP algs=\"ES256\"",
                &[("Bearer", None, &[]), ("DPoP", None, &[("algs", "ES256")])],
            ),
        ];
        for (value, expected) in table {
            let got = parsed(value);
            let want: Vec<Challenge> = expected
                .iter()
                .map(|(scheme, token68, params)| Challenge {
                    scheme: (*scheme).to_owned(),
                    token68: token68.map(str::to_owned),
                    params: params
                        .iter()
                        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                        .collect(),
                })
                .collect();
            assert_eq!(got, want, "{value}");
        }
    }

    #[test]
    fn what_is_not_a_challenge_list_is_an_error() {
        for value in [
            "=",
            "Bearer realm=\"x\",, =",
            "Bearer scope=files:read",
            "Bearer realm=\"open",
            "Bearer realm=\"a\" junk",
            "Bearer a=b c",
            "\"quoted\"",
            "Bearer realm=\"\u{1}\"",
        ] {
            assert!(Challenge::parse_all(value).is_err(), "{value:?}");
        }
    }

    #[test]
    fn the_bearer_view_reads_and_writes_mcp_parameters() {
        let challenge = BearerChallenge::new("https://h/.well-known/oauth-protected-resource/mcp")
            .scope("mcp:read mcp:deploy")
            .error("insufficient_scope", Some("needs \"mcp:deploy\""));
        let text = challenge.to_string();
        assert_eq!(
            text,
            r#"Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", scope="mcp:read mcp:deploy", error="insufficient_scope", error_description="needs \"mcp:deploy\"""#
        );
        let back = BearerChallenge::find(&parsed(&text)).unwrap();
        assert_eq!(back, challenge);
        // A DPoP challenge is found when there is no Bearer one.
        let dpop =
            BearerChallenge::find(&parsed(r#"DPoP algs="ES256", error="use_dpop_nonce""#)).unwrap();
        assert_eq!(dpop.scheme, BearerScheme::DPoP);
        assert_eq!(dpop.error.as_deref(), Some("use_dpop_nonce"));
    }

    #[test]
    fn the_writer_never_emits_a_line_break() {
        let challenge = Challenge::new("Bear\r\ner").with_param("x\ny", "a\r\nSet-Cookie: b\u{7f}");
        let text = challenge.to_string();
        assert!(!text.contains(['\r', '\n', '\u{7f}']), "{text:?}");
        assert_eq!(text, "Bearer xy=\"aSet-Cookie: b\"");
    }
}
