//! DPoP proofs for `mcp-load --dpop-key` (RFC 9449): one ES256 signature per request, as a
//! DPoP client pays; the server's side (one signature check per request on a cached token) is
//! what the `ours-dpop` row measures.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderValue;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};

/// Signs a fresh proof for `POST` to one URL, presenting one access token (ES256 by ring, so
/// the load generator's core is not what limits the row).
pub(crate) struct Prover {
    key: EcdsaKeyPair,
    rng: ring::rand::SystemRandom,
    /// The encoded header (with the public key), the same for every proof.
    header: String,
    htu: String,
    /// The access token's hash (`ath`), once [`authorization`](Self::authorization) saw it.
    ath: Option<String>,
    /// Makes `jti`s unique across runs; a counter makes them unique within one.
    prefix: String,
    count: AtomicU64,
}

impl fmt::Debug for Prover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prover")
            .field("htu", &self.htu)
            .finish_non_exhaustive()
    }
}

impl Prover {
    /// The key in `file` (PKCS#8 DER, base64url), for requests to `url`.
    pub(crate) fn load(file: &str, url: &str) -> Result<Self, String> {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
        let der = URL_SAFE_NO_PAD
            .decode(text.trim())
            .map_err(|e| format!("{file}: {e}"))?;
        let rng = ring::rand::SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
            .map_err(|e| format!("{file}: {e}"))?;
        let jwk = Jwk::from_encoding_key(&EncodingKey::from_ec_der(&der), Algorithm::ES256)
            .map_err(|e| e.to_string())?;
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(jwk);
        let header =
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).map_err(|e| e.to_string())?);
        let htu = url.split(['?', '#']).next().unwrap_or(url).to_owned();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Ok(Self {
            key,
            rng,
            header,
            htu,
            ath: None,
            prefix: format!("{}-{nanos}", std::process::id()),
            count: AtomicU64::new(0),
        })
    }

    /// `Authorization: Bearer TOKEN` as `DPoP TOKEN`; remembers the token's hash for `ath`.
    pub(crate) fn authorization(&mut self, value: &HeaderValue) -> Result<HeaderValue, String> {
        let text = value.to_str().map_err(|e| e.to_string())?;
        let token = text
            .strip_prefix("Bearer ")
            .ok_or("--dpop-key needs --bearer TOKEN")?;
        self.ath = Some(URL_SAFE_NO_PAD.encode(ring::digest::digest(
            &ring::digest::SHA256,
            token.as_bytes(),
        )));
        HeaderValue::from_str(&format!("DPoP {token}")).map_err(|e| e.to_string())
    }

    /// A fresh proof (an empty header value if signing fails: the server then refuses the
    /// request, which the run counts as an error).
    pub(crate) fn proof(&self) -> HeaderValue {
        let n = self.count.fetch_add(1, Ordering::Relaxed);
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut claims = serde_json::json!({
            "jti": format!("{}-{n}", self.prefix),
            "htm": "POST",
            "htu": self.htu,
            "iat": iat,
        });
        if let Some(ath) = &self.ath {
            claims["ath"] = serde_json::json!(ath);
        }
        let message = format!(
            "{}.{}",
            self.header,
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        self.key
            .sign(&self.rng, message.as_bytes())
            .ok()
            .and_then(|signature| {
                let proof = format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()));
                HeaderValue::from_str(&proof).ok()
            })
            .unwrap_or_else(|| HeaderValue::from_static(""))
    }
}
