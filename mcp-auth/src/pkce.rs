//! PKCE (RFC 7636) with `S256` only: the only method OAuth 2.1 and MCP allow.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// The only PKCE method this crate issues or accepts.
pub const S256: &str = "S256";

/// A PKCE code verifier: 43 to 128 unreserved characters, kept by the client until the token
/// request.
///
/// ```
/// use mcp_auth::{PkceVerifier, pkce};
///
/// let verifier = PkceVerifier::generate().unwrap();
/// let challenge = verifier.challenge();
/// assert!(pkce::verify_s256(verifier.as_str(), &challenge));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct PkceVerifier(String);

/// The operating system gave no random bytes.
#[derive(Debug, thiserror::Error)]
#[error("no randomness available: {0}")]
pub struct RandomnessError(String);

impl PkceVerifier {
    /// A fresh verifier from 32 random bytes (43 characters).
    pub fn generate() -> Result<Self, RandomnessError> {
        random_token(32).map(Self)
    }

    /// A verifier the caller already has, if it is one (RFC 7636 §4.1).
    pub fn from_string(verifier: String) -> Option<Self> {
        is_verifier(&verifier).then_some(Self(verifier))
    }

    /// The verifier, for the token request.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `BASE64URL(SHA256(verifier))`, for the authorization request.
    pub fn challenge(&self) -> String {
        s256(&self.0)
    }
}

impl std::fmt::Debug for PkceVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A secret until the token request: never in logs.
        f.write_str("PkceVerifier(..)")
    }
}

fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Whether `verifier` is a valid verifier whose S256 challenge is `challenge` (the
/// authorization server's check at the token endpoint).
pub fn verify_s256(verifier: &str, challenge: &str) -> bool {
    is_verifier(verifier) && s256(verifier) == challenge
}

/// RFC 7636 §4.1: 43 to 128 characters of `[A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~"`.
pub fn is_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// `bytes` random bytes, base64url without padding: for `state`, verifiers, codes and ids.
pub fn random_token(bytes: usize) -> Result<String, RandomnessError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| RandomnessError(e.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_base64url_of_the_sha256() {
        // Computed independently (Python's hashlib and base64.urlsafe_b64encode).
        let verifier = "dBjftJeZ4CVP-mJ92K-2ZVmnMJvuTV0zxDMQzsYyxYU";
        assert!(verify_s256(
            verifier,
            "lRIXSjPBkywRU96nc_W2DzUWW-WgIm0ZeIv2sJfeyt8"
        ));
        assert!(!verify_s256(
            verifier,
            "lRIXSjPBkywRU96nc_W2DzUWW-WgIm0ZeIv2sJfeyt9"
        ));
    }

    #[test]
    fn verifiers_are_checked_for_length_and_characters() {
        let generated = PkceVerifier::generate().unwrap();
        assert_eq!(generated.as_str().len(), 43);
        assert!(is_verifier(generated.as_str()));
        assert_ne!(generated, PkceVerifier::generate().unwrap());
        assert!(!is_verifier(&"a".repeat(42)));
        assert!(is_verifier(&"a".repeat(128)));
        assert!(!is_verifier(&"a".repeat(129)));
        assert!(!is_verifier(&format!("{}+", "a".repeat(43))));
        assert!(PkceVerifier::from_string("short".into()).is_none());
        assert_eq!(format!("{generated:?}"), "PkceVerifier(..)");
    }
}
