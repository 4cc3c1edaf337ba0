//! DPoP proofs (RFC 9449): what a resource server or an authorization server checks of the
//! `DPoP` header a client sends with a request.
//!
//! A [`DpopVerifier`] checks one proof against the request it came with ([`DpopRequest`]),
//! in the order of RFC 9449 §4.3: a JWT of at most [`DpopVerifier::max_proof_len`] bytes,
//! `typ` `dpop+jwt`, an allowed asymmetric `alg` (never `HS*` or `none`), a public `jwk` in
//! the header (a private or symmetric key is refused), the signature by that key (checked by
//! `jsonwebtoken`), then the claims: `htm` equal to the method, `htu` equal to the request's
//! URI without query and fragment (after the normalisation of RFC 3986 §6.2.2 and §6.2.3 that
//! the `url` crate applies), `iat` within the window, `jti` present and at most
//! [`DpopVerifier::max_jti_len`] bytes, `ath` equal to the SHA-256 of the access token when
//! one is presented, and the server's `nonce` when it asks for one. The key's RFC 7638
//! thumbprint ([`VerifiedProof::jkt`]) must equal a bound token's `cnf.jkt`
//! ([`DpopRequest::bound_to`]).
//!
//! Replay is the caller's to stop: a proof's `jti` must not be accepted twice within the
//! `iat` window ([`VerifiedProof::replay_key`] and [`DpopVerifier::window`] give the key and
//! the time to live of a set-if-absent record).
//!
//! ```
//! use mcp_auth::dpop::{DpopError, DpopRequest, DpopVerifier};
//!
//! let verifier = DpopVerifier::new();
//! let request = DpopRequest::new("POST", "https://mcp.example.com/mcp", 1_700_000_000)
//!     .access_token("the-token")
//!     .bound_to("the-thumbprint");
//! // Anything that is not a signed proof is refused before a signature is checked.
//! assert!(matches!(verifier.verify("not.a.proof", &request), Err(DpopError::Malformed(_))));
//! assert!(verifier.algorithm_names().contains(&"ES256"));
//! ```

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, EllipticCurveKeyParameters, Jwk, ThumbprintHash,
};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Why a DPoP proof is refused. Every variant but [`UseNonce`](Self::UseNonce) is
/// `invalid_dpop_proof` at an authorization server and `invalid_token` at a resource server
/// (RFC 9449 §7.1); the text is for logs and says nothing a client could not see in its own
/// proof.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DpopError {
    /// No `DPoP` header, or more than one (RFC 9449 §4.3 step 1).
    #[error("a DPoP request needs exactly one DPoP proof")]
    Missing,
    /// Not a JWT, too long, or a required claim is missing or of the wrong type.
    #[error("the DPoP proof is malformed: {0}")]
    Malformed(&'static str),
    /// `typ` is not `dpop+jwt`.
    #[error("the DPoP proof's typ is not dpop+jwt")]
    Type,
    /// `alg` is symmetric, `none`, or not in the allowed list.
    #[error("the DPoP proof's algorithm is not accepted")]
    Algorithm,
    /// The header's `jwk` is absent, private, symmetric, or not usable with `alg`.
    #[error("the DPoP proof's key is not a public key for its algorithm")]
    Key,
    /// The signature does not verify with the header's key.
    #[error("the DPoP proof's signature does not verify")]
    Signature,
    /// `htm` is not the request's method.
    #[error("the DPoP proof is for another method")]
    Method,
    /// `htu` is not the request's URI.
    #[error("the DPoP proof is for another URI")]
    Uri,
    /// `iat` is outside the accepted window.
    #[error("the DPoP proof was not issued within the accepted window")]
    IssuedAt,
    /// `jti` is longer than allowed.
    #[error("the DPoP proof's jti is too long")]
    Jti,
    /// `ath` is missing or is not the hash of the presented access token.
    #[error("the DPoP proof is not for the presented access token")]
    AccessTokenHash,
    /// The key is not the one the access token is bound to (`cnf.jkt`).
    #[error("the DPoP proof is signed by another key than the token is bound to")]
    KeyMismatch,
    /// The server asks for a nonce and the proof has none, or an old one (`use_dpop_nonce`).
    #[error("the DPoP proof needs the server's current nonce")]
    UseNonce,
    /// The proof's `jti` was already used within the window.
    #[error("the DPoP proof was already used")]
    Replayed,
}

impl DpopError {
    /// The OAuth error code a resource server sends for it (RFC 9449 §7.1): `use_dpop_nonce`
    /// or `invalid_token`.
    pub fn resource_error_code(&self) -> &'static str {
        match self {
            Self::UseNonce => "use_dpop_nonce",
            _ => "invalid_token",
        }
    }

    /// The OAuth error code an authorization server sends for it (RFC 9449 §5, §8):
    /// `use_dpop_nonce` or `invalid_dpop_proof`.
    pub fn token_endpoint_error_code(&self) -> &'static str {
        match self {
            Self::UseNonce => "use_dpop_nonce",
            _ => "invalid_dpop_proof",
        }
    }
}

/// The request a proof must match.
#[derive(Clone, Debug)]
pub struct DpopRequest<'a> {
    method: &'a str,
    uri: &'a str,
    now: i64,
    access_token: Option<&'a str>,
    bound_to: Option<&'a str>,
    nonces: Option<&'a [&'a str]>,
}

impl<'a> DpopRequest<'a> {
    /// A request of `method` (as sent: `POST`, `GET`) to `uri` (the absolute URI the server
    /// is known by, not one built from a `Host` header an attacker chooses; a query and a
    /// fragment are ignored), checked at `now` (seconds since the epoch).
    pub fn new(method: &'a str, uri: &'a str, now: i64) -> Self {
        Self {
            method,
            uri,
            now,
            access_token: None,
            bound_to: None,
            nonces: None,
        }
    }

    /// The access token the request presents: the proof's `ath` must be its hash.
    #[must_use]
    pub fn access_token(mut self, token: &'a str) -> Self {
        self.access_token = Some(token);
        self
    }

    /// The thumbprint (`cnf.jkt`) the access token is bound to: the proof's key must have it.
    #[must_use]
    pub fn bound_to(mut self, jkt: &'a str) -> Self {
        self.bound_to = Some(jkt);
        self
    }

    /// The nonces the server accepts now: a proof without one of them is
    /// [`DpopError::UseNonce`]. Default: the server gives no nonces.
    #[must_use]
    pub fn nonces(mut self, nonces: &'a [&'a str]) -> Self {
        self.nonces = Some(nonces);
        self
    }
}

/// A proof that passed every check: the key's thumbprint and what a replay check needs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifiedProof {
    /// The RFC 7638 SHA-256 thumbprint of the proof's key (base64url): what a bound token's
    /// `cnf.jkt` holds.
    pub jkt: String,
    /// The proof's `jti`.
    pub jti: String,
    /// The proof's `iat`.
    pub iat: i64,
}

impl VerifiedProof {
    /// A fixed-length key for a replay record (lowercase hex of SHA-256 over the thumbprint
    /// and the `jti`): one key's `jti`s never collide with another key's, and what is stored
    /// has a bounded size whatever the proof holds.
    pub fn replay_key(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(self.jkt.as_bytes());
        hash.update([0]);
        hash.update(self.jti.as_bytes());
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The key of a resource server's stateless DPoP nonces (RFC 9449 §8): an HMAC-SHA-256 key
/// (ring's), so a nonce is a tag of a time window that any worker with the key can check.
#[derive(Clone)]
pub struct NonceKey(ring::hmac::Key);

impl NonceKey {
    /// A key from `secret` (any length; 32 random bytes is enough).
    pub fn new(secret: &[u8]) -> Self {
        Self(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret))
    }

    /// The HMAC-SHA-256 tag of `data`.
    pub fn tag(&self, data: &[u8]) -> [u8; 32] {
        let mut tag = [0; 32];
        tag.copy_from_slice(ring::hmac::sign(&self.0, data).as_ref());
        tag
    }
}

impl std::fmt::Debug for NonceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("NonceKey").finish_non_exhaustive()
    }
}

/// The SHA-256 of an access token as a proof's `ath` carries it (base64url, no padding).
pub fn access_token_hash(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

/// The RFC 7638 SHA-256 thumbprint of a public JWK (base64url), `None` for a key type it
/// does not cover.
pub fn thumbprint(jwk: &Jwk) -> Option<String> {
    jwk.thumbprint(ThumbprintHash::SHA256).ok()
}

/// The longest proof accepted by default (8 KiB: an RSA-4096 key and its signature fit).
const DEFAULT_MAX_PROOF: usize = 8 << 10;
/// The longest `jti` accepted by default.
const DEFAULT_MAX_JTI: usize = 256;

/// The checks of a DPoP proof: see the [module docs](self).
#[derive(Clone, Debug)]
pub struct DpopVerifier {
    algorithms: Vec<Algorithm>,
    max_age: Duration,
    max_skew: Duration,
    max_proof_len: usize,
    max_jti_len: usize,
}

impl Default for DpopVerifier {
    fn default() -> Self {
        Self::new()
    }
}

/// The `DPoP` header and claims, as far as the checks need them.
#[derive(Deserialize)]
struct ProofClaims {
    jti: String,
    htm: String,
    htu: String,
    iat: serde_json::Number,
    #[serde(default)]
    ath: Option<String>,
    #[serde(default)]
    nonce: Option<String>,
}

/// JWK members that only a private or symmetric key has (RFC 7518 §6.2.2, §6.3.2, §6.4).
const PRIVATE_MEMBERS: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

impl DpopVerifier {
    /// The defaults: every asymmetric algorithm `jsonwebtoken` verifies (ES256, ES384,
    /// RS256/384/512, PS256/384/512, EdDSA), `iat` at most 60 s old and 5 s ahead, proofs of
    /// at most 8 KiB, `jti` of at most 256 bytes.
    pub fn new() -> Self {
        Self {
            algorithms: vec![
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::EdDSA,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
            ],
            max_age: Duration::from_secs(60),
            max_skew: Duration::from_secs(5),
            max_proof_len: DEFAULT_MAX_PROOF,
            max_jti_len: DEFAULT_MAX_JTI,
        }
    }

    /// Accepts only `algorithms`; symmetric ones (`HS*`) are dropped whatever is given.
    #[must_use]
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms
            .into_iter()
            .filter(|a| !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
            .collect();
        self
    }

    /// How old (`max_age`) and how far ahead of the clock (`max_skew`) a proof's `iat` may
    /// be. Defaults: 60 s and 5 s. A replay record must live [`window`](Self::window).
    #[must_use]
    pub fn iat_window(mut self, max_age: Duration, max_skew: Duration) -> Self {
        self.max_age = max_age;
        self.max_skew = max_skew;
        self
    }

    /// The longest proof (default 8 KiB) and `jti` (default 256 bytes) accepted; a longer one
    /// is [`DpopError::Malformed`] or [`DpopError::Jti`].
    #[must_use]
    pub fn limits(mut self, max_proof_len: usize, max_jti_len: usize) -> Self {
        self.max_proof_len = max_proof_len;
        self.max_jti_len = max_jti_len;
        self
    }

    /// The longest proof accepted.
    pub fn max_proof_len(&self) -> usize {
        self.max_proof_len
    }

    /// The longest `jti` accepted.
    pub fn max_jti_len(&self) -> usize {
        self.max_jti_len
    }

    /// How long a proof stays acceptable (its age limit plus the skew allowed): a replay
    /// record of its `jti` must live this long.
    pub fn window(&self) -> Duration {
        self.max_age.saturating_add(self.max_skew)
    }

    /// The accepted algorithms' names, for `dpop_signing_alg_values_supported` and a
    /// challenge's `algs`.
    pub fn algorithm_names(&self) -> Vec<&'static str> {
        self.algorithms.iter().map(|a| algorithm_name(*a)).collect()
    }

    /// Checks `proof` (the `DPoP` header's value) against `request`.
    pub fn verify(
        &self,
        proof: &str,
        request: &DpopRequest<'_>,
    ) -> Result<VerifiedProof, DpopError> {
        if proof.len() > self.max_proof_len {
            return Err(DpopError::Malformed("the proof is too long"));
        }
        let mut parts = proof.split('.');
        let (Some(header), Some(_), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(DpopError::Malformed("not a signed JWT"));
        };
        // The header as JSON: `typ`, `alg` and the key's members as sent (jsonwebtoken's
        // `Jwk` drops members it does not know, such as a private key's `d`).
        let raw: Value = URL_SAFE_NO_PAD
            .decode(header)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(DpopError::Malformed("the header is not base64url JSON"))?;
        if raw.get("typ").and_then(Value::as_str) != Some("dpop+jwt") {
            return Err(DpopError::Type);
        }
        let alg = raw
            .get("alg")
            .cloned()
            .and_then(|a| serde_json::from_value::<Algorithm>(a).ok())
            .filter(|a| self.algorithms.contains(a))
            .ok_or(DpopError::Algorithm)?;
        let raw_jwk = raw
            .get("jwk")
            .and_then(Value::as_object)
            .ok_or(DpopError::Key)?;
        if PRIVATE_MEMBERS.iter().any(|m| raw_jwk.contains_key(*m)) {
            return Err(DpopError::Key);
        }
        let jwk: Jwk =
            serde_json::from_value(Value::Object(raw_jwk.clone())).map_err(|_| DpopError::Key)?;
        if matches!(
            jwk.algorithm,
            AlgorithmParameters::OctetKey(_) | AlgorithmParameters::Other(_)
        ) {
            return Err(DpopError::Key);
        }
        let claims = match (alg, &jwk.algorithm) {
            // ES256, what clients sign with: checked by ring, several times faster than the
            // pure-Rust backend jsonwebtoken is built with here (one check per request).
            (Algorithm::ES256, AlgorithmParameters::EllipticCurve(ec))
                if ec.curve == EllipticCurve::P256 =>
            {
                verify_es256(proof, ec)?
            }
            _ => self.verify_jwt(proof, alg, &jwk)?,
        };
        self.check_claims(claims, &jwk, request)
    }

    /// The claims of `proof` once its signature by `jwk` verified, by jsonwebtoken.
    fn verify_jwt(&self, proof: &str, alg: Algorithm, jwk: &Jwk) -> Result<ProofClaims, DpopError> {
        let key = DecodingKey::from_jwk(jwk).map_err(|_| DpopError::Key)?;
        let mut validation = Validation::new(alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        match jsonwebtoken::decode::<ProofClaims>(proof, &key, &validation) {
            Ok(data) => Ok(data.claims),
            Err(e) => {
                use jsonwebtoken::errors::ErrorKind;
                Err(match e.kind() {
                    ErrorKind::InvalidSignature => DpopError::Signature,
                    ErrorKind::Json(_) => DpopError::Malformed("a required claim is missing"),
                    ErrorKind::InvalidAlgorithm
                    | ErrorKind::InvalidKeyFormat
                    | ErrorKind::InvalidEcdsaKey
                    | ErrorKind::InvalidEddsaKey
                    | ErrorKind::InvalidRsaKey(_) => DpopError::Key,
                    _ => DpopError::Signature,
                })
            }
        }
    }

    /// The checks of a proof's claims, once its signature verified.
    fn check_claims(
        &self,
        claims: ProofClaims,
        jwk: &Jwk,
        request: &DpopRequest<'_>,
    ) -> Result<VerifiedProof, DpopError> {
        if claims.htm != request.method {
            return Err(DpopError::Method);
        }
        if !same_uri(&claims.htu, request.uri) {
            return Err(DpopError::Uri);
        }
        if let Some(nonces) = request.nonces
            && !claims.nonce.as_deref().is_some_and(|n| nonces.contains(&n))
        {
            return Err(DpopError::UseNonce);
        }
        let iat = claims
            .iat
            .as_i64()
            .or_else(|| claims.iat.as_f64().map(|f| f.floor() as i64))
            .ok_or(DpopError::Malformed("iat is not a number"))?;
        let age = i64::try_from(self.max_age.as_secs()).unwrap_or(i64::MAX);
        let skew = i64::try_from(self.max_skew.as_secs()).unwrap_or(i64::MAX);
        if iat < request.now.saturating_sub(age) || iat > request.now.saturating_add(skew) {
            return Err(DpopError::IssuedAt);
        }
        if claims.jti.is_empty() {
            return Err(DpopError::Malformed("jti is empty"));
        }
        if claims.jti.len() > self.max_jti_len {
            return Err(DpopError::Jti);
        }
        if let Some(token) = request.access_token
            && claims.ath.as_deref() != Some(access_token_hash(token).as_str())
        {
            return Err(DpopError::AccessTokenHash);
        }
        let jkt = thumbprint(jwk).ok_or(DpopError::Key)?;
        if let Some(bound) = request.bound_to
            && bound != jkt
        {
            return Err(DpopError::KeyMismatch);
        }
        Ok(VerifiedProof {
            jkt,
            jti: claims.jti,
            iat,
        })
    }
}

/// The claims of an ES256 `proof` once its signature by the P-256 key `ec` verified (ring).
fn verify_es256(proof: &str, ec: &EllipticCurveKeyParameters) -> Result<ProofClaims, DpopError> {
    let (message, signature) = proof
        .rsplit_once('.')
        .ok_or(DpopError::Malformed("not a signed JWT"))?;
    let (_, payload) = message
        .split_once('.')
        .ok_or(DpopError::Malformed("not a signed JWT"))?;
    let coordinate = |text: &str| {
        URL_SAFE_NO_PAD
            .decode(text)
            .ok()
            .filter(|c| c.len() == 32)
            .ok_or(DpopError::Key)
    };
    let mut point = Vec::with_capacity(65);
    point.push(4);
    point.extend_from_slice(&coordinate(&ec.x)?);
    point.extend_from_slice(&coordinate(&ec.y)?);
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| DpopError::Signature)?;
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &point)
        .verify(message.as_bytes(), &signature)
        .map_err(|_| DpopError::Signature)?;
    let claims = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| DpopError::Malformed("the claims are not base64url"))?;
    serde_json::from_slice(&claims).map_err(|_| DpopError::Malformed("a required claim is missing"))
}

/// Whether two `htu` values name the same resource (RFC 9449 §4.3 step 9): both absolute
/// URIs, equal after normalisation without their query and fragment.
pub fn same_uri(proof: &str, expected: &str) -> bool {
    let normal = |text: &str| {
        let mut url = url::Url::parse(text).ok()?;
        url.set_query(None);
        url.set_fragment(None);
        Some(url)
    };
    match (normal(proof), normal(expected)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::HS256 => "HS256",
        Algorithm::HS384 => "HS384",
        Algorithm::HS512 => "HS512",
        Algorithm::ES256 => "ES256",
        Algorithm::ES384 => "ES384",
        Algorithm::RS256 => "RS256",
        Algorithm::RS384 => "RS384",
        Algorithm::RS512 => "RS512",
        Algorithm::PS256 => "PS256",
        Algorithm::PS384 => "PS384",
        Algorithm::PS512 => "PS512",
        Algorithm::EdDSA => "EdDSA",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{EncodingKey, Header};
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const NOW: i64 = 1_700_000_000;
    const URI: &str = "https://mcp.example.com/mcp";

    struct Key {
        encoding: EncodingKey,
        jwk: Jwk,
    }

    fn es256() -> Key {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &rng,
        )
        .unwrap();
        let encoding = EncodingKey::from_ec_der(pkcs8.as_ref());
        let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).unwrap();
        Key { encoding, jwk }
    }

    fn claims() -> Value {
        json!({
            "jti": "j-1",
            "htm": "POST",
            "htu": URI,
            "iat": NOW,
            "ath": access_token_hash("tok"),
        })
    }

    fn sign(key: &Key, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(key.jwk.clone());
        jsonwebtoken::encode(&header, claims, &key.encoding).unwrap()
    }

    /// A proof with `header` (JSON) as its header and a real signature of it by `key`.
    fn sign_raw(key: &Key, header: &Value, claims: &Value) -> String {
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(header).unwrap()),
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).unwrap())
        );
        let signature =
            jsonwebtoken::crypto::sign(message.as_bytes(), &key.encoding, Algorithm::ES256)
                .unwrap();
        format!("{message}.{signature}")
    }

    fn request(jkt: &str) -> DpopRequest<'_> {
        DpopRequest::new("POST", URI, NOW)
            .access_token("tok")
            .bound_to(jkt)
    }

    #[test]
    fn a_valid_proof_passes_and_gives_the_thumbprint() {
        let key = es256();
        let jkt = thumbprint(&key.jwk).unwrap();
        let verified = DpopVerifier::new()
            .verify(&sign(&key, &claims()), &request(&jkt))
            .unwrap();
        assert_eq!(verified.jkt, jkt);
        assert_eq!(verified.jti, "j-1");
        assert_eq!(verified.replay_key().len(), 64);
        // htu compared after normalisation, without query and fragment.
        for htu in [
            "HTTPS://MCP.example.com:443/mcp",
            "https://mcp.example.com/mcp?x=1#f",
            "https://mcp.example.com/a/../mcp",
        ] {
            let mut c = claims();
            c["htu"] = json!(htu);
            assert!(
                DpopVerifier::new()
                    .verify(&sign(&key, &c), &request(&jkt))
                    .is_ok(),
                "{htu}"
            );
        }
        // Without a token, no ath is needed (a token request).
        let mut c = claims();
        c.as_object_mut().unwrap().remove("ath");
        assert!(
            DpopVerifier::new()
                .verify(&sign(&key, &c), &DpopRequest::new("POST", URI, NOW))
                .is_ok()
        );
    }

    #[test]
    fn each_claim_is_checked() {
        let key = es256();
        let jkt = thumbprint(&key.jwk).unwrap();
        let verifier = DpopVerifier::new();
        let with = |name: &str, value: Value| {
            let mut c = claims();
            c[name] = value;
            sign(&key, &c)
        };
        let without = |name: &str| {
            let mut c = claims();
            c.as_object_mut().unwrap().remove(name);
            sign(&key, &c)
        };
        let cases: Vec<(String, DpopError)> = vec![
            (with("htm", json!("GET")), DpopError::Method),
            (with("htm", json!("post")), DpopError::Method),
            (
                with("htu", json!("https://mcp.example.com/other")),
                DpopError::Uri,
            ),
            (
                with("htu", json!("http://mcp.example.com/mcp")),
                DpopError::Uri,
            ),
            (
                with("htu", json!("https://evil.example/mcp")),
                DpopError::Uri,
            ),
            (with("htu", json!("/mcp")), DpopError::Uri),
            (with("iat", json!(NOW - 61)), DpopError::IssuedAt),
            (with("iat", json!(NOW + 6)), DpopError::IssuedAt),
            (
                with("ath", json!(access_token_hash("other"))),
                DpopError::AccessTokenHash,
            ),
            (without("ath"), DpopError::AccessTokenHash),
            (with("jti", json!("x".repeat(257))), DpopError::Jti),
            (with("jti", json!("")), DpopError::Malformed("jti is empty")),
            (
                without("jti"),
                DpopError::Malformed("a required claim is missing"),
            ),
            (
                without("iat"),
                DpopError::Malformed("a required claim is missing"),
            ),
            (
                with("iat", json!("now")),
                DpopError::Malformed("a required claim is missing"),
            ),
        ];
        for (proof, expected) in cases {
            assert_eq!(verifier.verify(&proof, &request(&jkt)), Err(expected));
        }
        // Edges of the iat window are inside it.
        for iat in [NOW - 60, NOW + 5] {
            assert!(
                verifier
                    .verify(&with("iat", json!(iat)), &request(&jkt))
                    .is_ok()
            );
        }
        // Another key than the token's.
        let other = thumbprint(&es256().jwk).unwrap();
        assert_eq!(
            verifier.verify(&sign(&key, &claims()), &request(&other)),
            Err(DpopError::KeyMismatch)
        );
        // Nonces: none, an old one, the current one.
        let nonces = ["n-2", "n-1"];
        let asked = request(&jkt).nonces(&nonces);
        assert_eq!(
            verifier.verify(&sign(&key, &claims()), &asked),
            Err(DpopError::UseNonce)
        );
        assert_eq!(
            verifier.verify(&with("nonce", json!("n-0")), &asked),
            Err(DpopError::UseNonce)
        );
        assert!(
            verifier
                .verify(&with("nonce", json!("n-1")), &asked)
                .is_ok()
        );
        assert_eq!(DpopError::UseNonce.resource_error_code(), "use_dpop_nonce");
        assert_eq!(DpopError::Uri.resource_error_code(), "invalid_token");
        assert_eq!(
            DpopError::Uri.token_endpoint_error_code(),
            "invalid_dpop_proof"
        );
    }

    #[test]
    fn the_header_is_checked() {
        let key = es256();
        let jkt = thumbprint(&key.jwk).unwrap();
        let verifier = DpopVerifier::new();
        let jwk = serde_json::to_value(&key.jwk).unwrap();
        let header = |typ: &str, alg: &str, jwk: Value| json!({"typ": typ, "alg": alg, "jwk": jwk});
        // A correct raw header passes (the helper itself is sound).
        let good = sign_raw(&key, &header("dpop+jwt", "ES256", jwk.clone()), &claims());
        assert!(verifier.verify(&good, &request(&jkt)).is_ok());
        let mut private = jwk.clone();
        private["d"] = json!("AAAA");
        let symmetric = json!({"kty": "oct", "k": "c2VjcmV0"});
        let cases = [
            (header("JWT", "ES256", jwk.clone()), DpopError::Type),
            (
                header("dpop+jwt", "HS256", jwk.clone()),
                DpopError::Algorithm,
            ),
            (
                header("dpop+jwt", "none", jwk.clone()),
                DpopError::Algorithm,
            ),
            (header("dpop+jwt", "ES256", private), DpopError::Key),
            (header("dpop+jwt", "ES256", symmetric), DpopError::Key),
            (json!({"typ": "dpop+jwt", "alg": "ES256"}), DpopError::Key),
            (header("dpop+jwt", "RS256", jwk.clone()), DpopError::Key),
        ];
        for (h, expected) in cases {
            let proof = sign_raw(&key, &h, &claims());
            assert_eq!(
                verifier.verify(&proof, &request(&jkt)),
                Err(expected),
                "{h}"
            );
        }
        // Another key's signature under this key's header.
        let other = es256();
        let forged = sign_raw(&other, &header("dpop+jwt", "ES256", jwk), &claims());
        assert_eq!(
            verifier.verify(&forged, &request(&jkt)),
            Err(DpopError::Signature)
        );
        // An algorithm taken off the list.
        let only_eddsa = DpopVerifier::new().algorithms([Algorithm::EdDSA, Algorithm::HS256]);
        assert_eq!(only_eddsa.algorithm_names(), ["EdDSA"]);
        assert_eq!(
            only_eddsa.verify(&good, &request(&jkt)),
            Err(DpopError::Algorithm)
        );
        // Too long.
        let short = DpopVerifier::new().limits(good.len() - 1, 256);
        assert_eq!(
            short.verify(&good, &request(&jkt)),
            Err(DpopError::Malformed("the proof is too long"))
        );
    }

    #[test]
    fn es384_proofs_and_bad_p256_keys() {
        // ES384 goes through jsonwebtoken, ES256 through ring: both give the same answers.
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
            &ring::signature::ECDSA_P384_SHA384_FIXED_SIGNING,
            &rng,
        )
        .unwrap();
        let encoding = EncodingKey::from_ec_der(pkcs8.as_ref());
        let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES384).unwrap();
        let jkt = thumbprint(&jwk).unwrap();
        let mut header = Header::new(Algorithm::ES384);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(jwk);
        let proof = jsonwebtoken::encode(&header, &claims(), &encoding).unwrap();
        let verifier = DpopVerifier::new();
        assert_eq!(verifier.verify(&proof, &request(&jkt)).unwrap().jkt, jkt);
        let mut other = claims();
        other["htm"] = json!("GET");
        let wrong = jsonwebtoken::encode(&header, &other, &encoding).unwrap();
        assert_eq!(
            verifier.verify(&wrong, &request(&jkt)),
            Err(DpopError::Method)
        );
        // A P-256 key whose coordinates are not 32 bytes.
        let key = es256();
        let mut short = serde_json::to_value(&key.jwk).unwrap();
        short["x"] = json!("AAAA");
        let h = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": short});
        assert_eq!(
            verifier.verify(&sign_raw(&key, &h, &claims()), &request(&jkt)),
            Err(DpopError::Key)
        );
    }

    proptest! {
        /// Whatever a peer sends as a proof, the verifier answers without panicking, and
        /// nothing but a signed proof passes.
        #[test]
        fn arbitrary_proofs_are_refused(text in "\\PC{0,300}", dots in "[A-Za-z0-9_.-]{0,300}") {
            let verifier = DpopVerifier::new();
            let req = DpopRequest::new("POST", URI, NOW);
            prop_assert!(verifier.verify(&text, &req).is_err());
            prop_assert!(verifier.verify(&dots, &req).is_err());
        }

        /// A valid proof with any one byte changed is refused.
        #[test]
        fn a_changed_byte_is_refused(at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            use std::sync::OnceLock;
            static FIXTURE: OnceLock<(String, String)> = OnceLock::new();
            let (proof, jkt) = FIXTURE.get_or_init(|| {
                let key = es256();
                (sign(&key, &claims()), thumbprint(&key.jwk).unwrap())
            });
            let mut bytes = proof.clone().into_bytes();
            let i = at.index(bytes.len());
            prop_assume!(bytes[i] != byte);
            bytes[i] = byte;
            let changed = String::from_utf8_lossy(&bytes).into_owned();
            // Base64url's last character can carry unused bits: a change there may decode to
            // the same bytes, which is not a change of the proof.
            let same = changed.split('.').map(|p| URL_SAFE_NO_PAD.decode(p).ok()).collect::<Vec<_>>()
                == proof.split('.').map(|p| URL_SAFE_NO_PAD.decode(p).ok()).collect::<Vec<_>>();
            prop_assume!(!same);
            prop_assert!(DpopVerifier::new().verify(&changed, &request(jkt)).is_err());
        }
    }

    #[test]
    fn nonce_keys_are_hmac_sha256() {
        // RFC 4231, test case 2.
        let tag = NonceKey::new(b"Jefe").tag(b"what do ya want for nothing?");
        let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(!format!("{:?}", NonceKey::new(b"Jefe")).contains("Jefe"));
    }
}
