//! Access tokens as a resource server sees them: RFC 8707 resource identifiers, the claims a
//! verified token carries, and the rules every token must pass (issuer, audience = this
//! resource, expiry with leeway), whatever verified its signature or introspected it.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use url::Url;

use crate::ScopeSet;

/// A resource identifier that is not an absolute `http(s)` URI without a fragment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a resource identifier (RFC 8707 §2): {0}")]
pub struct ResourceError(String);

/// The canonical form of an RFC 8707 resource identifier, as MCP uses it: an absolute `https`
/// (or `http`, for loopback and tests) URI, scheme and host in lower case, no default port, no
/// fragment, and no trailing slash when the path is empty.
///
/// Tokens are issued for, and checked against, this form.
///
/// ```
/// use mcp_auth::canonical_resource;
///
/// assert_eq!(canonical_resource("HTTPS://MCP.Example.com:443/mcp").unwrap(), "https://mcp.example.com/mcp");
/// assert_eq!(canonical_resource("https://mcp.example.com/").unwrap(), "https://mcp.example.com");
/// assert!(canonical_resource("https://mcp.example.com/mcp#frag").is_err());
/// ```
pub fn canonical_resource(resource: &str) -> Result<String, ResourceError> {
    let url = Url::parse(resource).map_err(|e| ResourceError(format!("{resource}: {e}")))?;
    if !matches!(url.scheme(), "https" | "http") || url.host().is_none() {
        return Err(ResourceError(format!("{resource}: not an http(s) URL")));
    }
    if url.fragment().is_some() {
        return Err(ResourceError(format!("{resource}: has a fragment")));
    }
    let mut text = url.to_string();
    if url.path() == "/" && url.query().is_none() {
        text.pop();
    }
    Ok(text)
}

/// The `aud` claim: one audience or several.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    /// A single audience.
    One(String),
    /// Several audiences.
    Many(Vec<String>),
}

impl Audience {
    /// The audiences.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let (one, many) = match self {
            Self::One(one) => (Some(one.as_str()), &[][..]),
            Self::Many(many) => (None, many.as_slice()),
        };
        one.into_iter().chain(many.iter().map(String::as_str))
    }
}

/// The claims of a verified access token (a JWT's payload, or an RFC 7662 introspection
/// response), with the members MCP reads; the rest stays in `extra`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Claims {
    /// `iss`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// `sub`: the principal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// `aud`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aud: Option<Audience>,
    /// `exp`, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    /// `nbf`, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    /// `iat`, seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    /// `scope`, space-separated.
    #[serde(default, skip_serializing_if = "ScopeSet::is_empty")]
    pub scope: ScopeSet,
    /// `client_id` (RFC 9068, RFC 7662).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// `cnf`: the key a DPoP-bound token is bound to (`{"jkt": ...}`, RFC 9449 §6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Value>,
    /// `active` of an introspection response (RFC 7662 §2.2); absent in a JWT.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    /// Every other claim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Who a request acts for, once its token passed [`TokenRules::check`]: what handlers see, and
/// what every stateful thing of the request is bound to.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Principal {
    /// `sub`, or the client id for a token without a subject (`client_credentials`).
    pub subject: String,
    /// The client the token was issued to, when it says.
    pub client_id: Option<String>,
    /// The scopes granted.
    pub scopes: ScopeSet,
    /// The DPoP key thumbprint the token is bound to (`cnf.jkt`), if any.
    pub dpop_jkt: Option<String>,
    /// Every claim.
    pub claims: Claims,
}

impl Principal {
    /// A stable key for binding state to this principal: the issuer and the subject, so the
    /// same subject at two issuers never shares state.
    pub fn binding(&self) -> String {
        format!(
            "{}\u{0}{}",
            self.claims.iss.as_deref().unwrap_or_default(),
            self.subject
        )
    }

    /// Whether every scope of `needed` was granted; else the missing ones.
    pub fn require(&self, needed: &ScopeSet) -> Result<(), ScopeSet> {
        let missing = self.scopes.missing(needed);
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing)
        }
    }
}

/// Why a token is refused. Every kind is a 401 `invalid_token` on the wire; the kinds are for
/// logs and tests (and never carry the token).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The token could not be read or verified (signature, format, unknown key).
    #[error("the token is not valid: {0}")]
    Invalid(String),
    /// An introspection response said `active: false`.
    #[error("the token is not active")]
    Inactive,
    /// `exp` has passed (beyond the leeway).
    #[error("the token expired")]
    Expired,
    /// The token has no `exp` and the rules require one.
    #[error("the token has no expiry")]
    NoExpiry,
    /// `nbf` is still ahead (beyond the leeway).
    #[error("the token is not valid yet")]
    NotYetValid,
    /// `iss` is not one of the accepted issuers.
    #[error("the token's issuer is not accepted")]
    WrongIssuer,
    /// `aud` does not name this resource (RFC 8707): a token for another resource is never
    /// accepted, nor passed on.
    #[error("the token was issued for another resource")]
    WrongAudience,
    /// The token has no subject and no client id.
    #[error("the token names no principal")]
    NoPrincipal,
}

/// The checks every access token must pass at this resource server.
///
/// ```
/// use std::time::Duration;
/// use mcp_auth::{Claims, TokenRules, token::Audience};
///
/// let rules = TokenRules::new("https://mcp.example.com/mcp", ["https://auth.example.com"]).unwrap();
/// let claims = Claims {
///     iss: Some("https://auth.example.com".into()),
///     sub: Some("alice".into()),
///     aud: Some(Audience::One("https://mcp.example.com/mcp".into())),
///     exp: Some(1_000_100),
///     ..Claims::default()
/// };
/// assert_eq!(rules.check(claims.clone(), 1_000_000).unwrap().subject, "alice");
/// assert!(rules.check(claims, 1_000_200).is_err());
/// ```
#[derive(Clone, Debug)]
pub struct TokenRules {
    audience: String,
    issuers: Vec<String>,
    leeway: Duration,
    require_expiry: bool,
}

impl TokenRules {
    /// Tokens for `resource` (canonicalized) issued by one of `issuers` (compared as plain
    /// strings). Leeway 60 s; `exp` required.
    pub fn new(
        resource: &str,
        issuers: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<Self, ResourceError> {
        Ok(Self {
            audience: canonical_resource(resource)?,
            issuers: issuers.into_iter().map(Into::into).collect(),
            leeway: Duration::from_secs(60),
            require_expiry: true,
        })
    }

    /// Sets the clock skew allowed on `exp` and `nbf`. Default is 60 s.
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Accepts tokens without `exp` (not recommended). Default is to refuse them.
    #[must_use]
    pub fn allow_tokens_without_expiry(mut self) -> Self {
        self.require_expiry = false;
        self
    }

    /// The canonical resource tokens must be issued for.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// The same rules for tokens issued for another `resource` of the same server (say its
    /// HTTP+SSE endpoint next to its Streamable HTTP one): same issuers, leeway and expiry rule.
    pub fn for_resource(&self, resource: &str) -> Result<Self, ResourceError> {
        Ok(Self {
            audience: canonical_resource(resource)?,
            ..self.clone()
        })
    }

    /// The accepted issuers.
    pub fn issuers(&self) -> &[String] {
        &self.issuers
    }

    /// Checks verified `claims` at `now` (seconds since the epoch).
    pub fn check(&self, claims: Claims, now: i64) -> Result<Principal, TokenError> {
        if claims.active == Some(false) {
            return Err(TokenError::Inactive);
        }
        let leeway = i64::try_from(self.leeway.as_secs()).unwrap_or(i64::MAX);
        match claims.exp {
            Some(exp) if now > exp.saturating_add(leeway) => return Err(TokenError::Expired),
            None if self.require_expiry => return Err(TokenError::NoExpiry),
            _ => {}
        }
        if claims
            .nbf
            .is_some_and(|nbf| now.saturating_add(leeway) < nbf)
        {
            return Err(TokenError::NotYetValid);
        }
        if !claims
            .iss
            .as_deref()
            .is_some_and(|iss| self.issuers.iter().any(|i| i == iss))
        {
            return Err(TokenError::WrongIssuer);
        }
        let for_us = claims.aud.as_ref().is_some_and(|aud| {
            aud.iter().any(|a| {
                a == self.audience || canonical_resource(a).is_ok_and(|a| a == self.audience)
            })
        });
        if !for_us {
            return Err(TokenError::WrongAudience);
        }
        let subject = claims
            .sub
            .clone()
            .or_else(|| claims.client_id.clone())
            .ok_or(TokenError::NoPrincipal)?;
        let dpop_jkt = claims
            .cnf
            .as_ref()
            .and_then(|cnf| cnf.get("jkt"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(Principal {
            subject,
            client_id: claims.client_id.clone(),
            scopes: claims.scope.clone(),
            dpop_jkt,
            claims,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            iss: Some("https://as".into()),
            sub: Some("alice".into()),
            aud: Some(Audience::Many(vec![
                "other".into(),
                "https://rs/mcp".into(),
            ])),
            exp: Some(1_000),
            scope: ScopeSet::parse("a b"),
            ..Claims::default()
        }
    }

    #[test]
    fn every_rule_refuses_its_case() {
        let rules = TokenRules::new("https://RS/mcp", ["https://as"]).unwrap();
        let cases: Vec<(Claims, i64, Result<&str, TokenError>)> = vec![
            (claims(), 900, Ok("alice")),
            (claims(), 1_060, Ok("alice")),
            (claims(), 1_061, Err(TokenError::Expired)),
            (
                Claims {
                    exp: None,
                    ..claims()
                },
                0,
                Err(TokenError::NoExpiry),
            ),
            (
                Claims {
                    nbf: Some(2_000),
                    ..claims()
                },
                1_000,
                Err(TokenError::NotYetValid),
            ),
            (
                Claims {
                    iss: Some("https://as/".into()),
                    ..claims()
                },
                0,
                Err(TokenError::WrongIssuer),
            ),
            (
                Claims {
                    iss: None,
                    ..claims()
                },
                0,
                Err(TokenError::WrongIssuer),
            ),
            (
                Claims {
                    aud: Some(Audience::One("https://rs/other".into())),
                    ..claims()
                },
                0,
                Err(TokenError::WrongAudience),
            ),
            (
                Claims {
                    aud: None,
                    ..claims()
                },
                0,
                Err(TokenError::WrongAudience),
            ),
            (
                Claims {
                    aud: Some(Audience::One("HTTPS://rs:443/mcp".into())),
                    ..claims()
                },
                0,
                Ok("alice"),
            ),
            (
                Claims {
                    active: Some(false),
                    ..claims()
                },
                0,
                Err(TokenError::Inactive),
            ),
            (
                Claims {
                    sub: None,
                    client_id: Some("svc".into()),
                    ..claims()
                },
                0,
                Ok("svc"),
            ),
            (
                Claims {
                    sub: None,
                    ..claims()
                },
                0,
                Err(TokenError::NoPrincipal),
            ),
        ];
        for (claims, now, expected) in cases {
            let got = rules.check(claims.clone(), now);
            match (got, expected) {
                (Ok(p), Ok(subject)) => assert_eq!(p.subject, subject),
                (Err(e), Err(expected)) => assert_eq!(e, expected, "{claims:?}"),
                (got, expected) => panic!("{claims:?} at {now}: {got:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn scopes_and_bindings() {
        let rules = TokenRules::new("https://rs/mcp", ["https://as"]).unwrap();
        let principal = rules
            .check(
                Claims {
                    cnf: Some(serde_json::json!({"jkt": "thumb"})),
                    ..claims()
                },
                0,
            )
            .unwrap();
        assert_eq!(principal.require(&ScopeSet::parse("a")), Ok(()));
        assert_eq!(
            principal.require(&ScopeSet::parse("a c")),
            Err(ScopeSet::parse("c"))
        );
        assert_eq!(principal.dpop_jkt.as_deref(), Some("thumb"));
        assert_eq!(principal.binding(), "https://as\u{0}alice");
    }

    #[test]
    fn claims_read_jwt_payloads_and_introspection_responses() {
        let jwt: Claims = serde_json::from_str(
            r#"{"iss":"https://as","sub":"a","aud":"https://rs","exp":5,"scope":"x y","custom":1}"#,
        )
        .unwrap();
        assert_eq!(jwt.scope.to_string(), "x y");
        assert_eq!(jwt.extra["custom"], 1);
        let introspected: Claims = serde_json::from_str(r#"{"active":false}"#).unwrap();
        assert_eq!(introspected.active, Some(false));
    }
}
