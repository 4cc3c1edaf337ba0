//! The transport wrapper that puts the token on every request and answers the server's
//! challenges.

use std::sync::Arc;

use http::HeaderMap;

use super::{OAuth, OAuthError};
use crate::transport::{
    BoxFuture, Delivery, MessageStream, Outbound, Transport, TransportError, TransportInfo,
};

/// How many times one message is sent again after a challenge: a refresh or authorization,
/// then a step-up, then one more for a token replaced by a concurrent caller.
pub(crate) const MAX_ROUNDS: usize = 3;

/// A [`Transport`] that sends `Authorization: Bearer` with every message and, when the server
/// answers `401` or `403 insufficient_scope`, gets a token through its [`OAuth`] and sends
/// the message again (a bounded number of times).
#[derive(Debug, Clone)]
pub struct OAuthTransport {
    inner: Arc<dyn Transport>,
    oauth: OAuth,
}

impl OAuthTransport {
    /// Wraps `inner` (a Streamable HTTP transport to the server `oauth` is for).
    pub fn new(inner: Arc<dyn Transport>, oauth: OAuth) -> Self {
        Self { inner, oauth }
    }

    /// The OAuth state (tokens, logout).
    pub fn oauth(&self) -> &OAuth {
        &self.oauth
    }

    async fn with_token(
        &self,
        headers: &mut HeaderMap,
        method: &str,
        uri: Option<&str>,
    ) -> Result<Option<String>, TransportError> {
        self.oauth
            .authorize_request(headers, method, uri)
            .await
            .map_err(auth_error)
    }

    /// After a refusal: whether to try again.
    async fn answer(
        &self,
        error: &TransportError,
        sent: Option<&str>,
    ) -> Result<bool, TransportError> {
        answer(&self.oauth, error, sent).await
    }
}

/// After `error` refused a request that carried `sent` (or no token): whether a new token was
/// got and the request is worth sending again. Not an error when nobody can log in now: the
/// server's refusal stands.
pub(crate) async fn answer(
    oauth: &OAuth,
    error: &TransportError,
    sent: Option<&str>,
) -> Result<bool, TransportError> {
    let TransportError::Status {
        status: status @ (401 | 403),
        www_authenticate,
        dpop_nonce,
        ..
    } = error
    else {
        return Ok(false);
    };
    match oauth
        .challenged(
            *status,
            www_authenticate.as_deref(),
            dpop_nonce.as_deref(),
            sent,
        )
        .await
    {
        Err(OAuthError::LoginRequired(_)) => Ok(false),
        other => other.map_err(auth_error),
    }
}

pub(crate) fn auth_error(error: OAuthError) -> TransportError {
    TransportError::Authorization(Box::new(error))
}

impl Transport for OAuthTransport {
    fn send(&self, message: Outbound) -> BoxFuture<'_, Result<Delivery, TransportError>> {
        Box::pin(async move {
            let mut round = 0;
            loop {
                let mut attempt = message.clone();
                // A DPoP proof names the URI the message goes to (HTTP+SSE: its endpoint).
                let uri = self.inner.send_uri();
                let sent = self
                    .with_token(&mut attempt.headers, "POST", uri.as_deref())
                    .await?;
                match self.inner.send(attempt).await {
                    Err(e) if round < MAX_ROUNDS => {
                        round += 1;
                        if !self.answer(&e, sent.as_deref()).await? {
                            return Err(e);
                        }
                    }
                    other => return other,
                }
            }
        })
    }

    fn incoming(&self) -> Option<MessageStream> {
        self.inner.incoming()
    }

    fn open_stream(
        &self,
        headers: HeaderMap,
        last_event_id: Option<String>,
    ) -> BoxFuture<'_, Result<MessageStream, TransportError>> {
        Box::pin(async move {
            let mut round = 0;
            loop {
                let mut attempt = headers.clone();
                let sent = self.with_token(&mut attempt, "GET", None).await?;
                match self.inner.open_stream(attempt, last_event_id.clone()).await {
                    Err(e) if round < MAX_ROUNDS => {
                        round += 1;
                        if !self.answer(&e, sent.as_deref()).await? {
                            return Err(e);
                        }
                    }
                    other => return other,
                }
            }
        })
    }

    fn info(&self) -> TransportInfo {
        self.inner.info()
    }

    fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }

    fn dropped(&self) -> u64 {
        self.inner.dropped()
    }

    fn reset_session(&self) {
        self.inner.reset_session();
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            // The inner transport's DELETE carries no token: a protected server that refuses
            // it ends the session by its own expiry instead.
            match self.inner.close().await {
                Err(TransportError::Status {
                    status: 401 | 403, ..
                }) => Ok(()),
                other => other,
            }
        })
    }
}
