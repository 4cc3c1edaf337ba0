//! DPoP (RFC 9449, SEP-1932): a key pair of the client's, a fresh signed proof on every token
//! request and every request to the MCP server, and the nonces servers ask for.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

use super::OAuthError;
use crate::transport::lock;

/// The only DPoP algorithm the client signs with.
pub(crate) const ES256: &str = "ES256";
/// The most nonces remembered (one per server origin).
const MAX_NONCES: usize = 32;

/// The client's DPoP key (ES256, made when first needed, kept in memory only) and the last
/// nonce each server gave.
pub(crate) struct DpopKey {
    encoding: EncodingKey,
    jwk: Jwk,
    nonces: Mutex<HashMap<String, String>>,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey").finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A fresh ES256 key pair.
    pub(crate) fn generate() -> Result<Self, OAuthError> {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &rng,
        )
        .map_err(|_| OAuthError::Config("no randomness for a DPoP key".into()))?;
        let encoding = EncodingKey::from_ec_der(pkcs8.as_ref());
        let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256)
            .map_err(|e| OAuthError::Config(format!("DPoP key: {e}")))?;
        Ok(Self {
            encoding,
            jwk,
            nonces: Mutex::new(HashMap::new()),
        })
    }

    /// Remembers the nonce the server at `url`'s origin asked for.
    pub(crate) fn remember_nonce(&self, url: &str, nonce: &str) {
        let Some(origin) = origin(url) else { return };
        let mut nonces = lock(&self.nonces);
        if nonces.len() >= MAX_NONCES && !nonces.contains_key(&origin) {
            nonces.clear();
        }
        nonces.insert(origin, nonce.to_owned());
    }

    /// A proof for `method url` (RFC 9449 §4.2): `htu` without query or fragment, a fresh
    /// `jti`, `ath` when presenting `access_token`, the origin's nonce when it gave one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        now: u64,
    ) -> Result<String, OAuthError> {
        let mut htu = url::Url::parse(url)
            .map_err(|e| OAuthError::Config(format!("DPoP htu {url:?}: {e}")))?;
        htu.set_query(None);
        htu.set_fragment(None);
        let jti =
            mcp_auth::pkce::random_token(16).map_err(|e| OAuthError::Config(e.to_string()))?;
        let mut claims = json!({
            "jti": jti,
            "htm": method,
            "htu": htu.as_str(),
            "iat": now,
        });
        if let Some(token) = access_token {
            let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(digest.as_ref()));
        }
        if let Some(nonce) = origin(url).and_then(|o| lock(&self.nonces).get(&o).cloned()) {
            claims["nonce"] = json!(nonce);
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.encoding)
            .map_err(|e| OAuthError::Config(format!("signing a DPoP proof: {e}")))
    }
}

fn origin(url: &str) -> Option<String> {
    Some(url::Url::parse(url).ok()?.origin().ascii_serialization())
}
