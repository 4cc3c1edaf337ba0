//! The rate-limit retry contract (issue 50): how a refusal for "not now" is recognised, and how
//! long and how often the client waits and tries again.
//!
//! A server that limits its callers refuses a call, on every revision and transport, with the
//! JSON-RPC error [`RATE_LIMITED`]:
//!
//! ```json
//! {"code": -31429, "message": "rate limited: ...", "data": {"retryAfterMs": 2000, "limit": "tools/call"}}
//! ```
//!
//! On Streamable HTTP and HTTP+SSE the refusal of a POST also has the HTTP status 429 and a
//! `Retry-After` header in whole seconds. A 429 without that JSON-RPC error (a proxy's) is
//! understood too: the wait is `Retry-After`'s, the limit unknown. Either way the client's
//! [`crate::Error`] is [`crate::ErrorKind::RateLimited`], with [`crate::Error::retry_after`]
//! and [`crate::Error::rate_limit`].

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::Error;

pub use crate::limited::{RATE_LIMITED, wait_text};

type RetryFn = Arc<dyn Fn(&Error, Duration) + Send + Sync>;

/// How the client waits and retries a rate-limited request
/// ([`ClientBuilder::rate_limit_retry`](crate::ClientBuilder::rate_limit_retry)).
///
/// A rate-limited request is sent again after the wait the server asked for (plus jitter), as
/// long as it has been sent fewer than [`max_attempts`](Self::max_attempts) times, the waits so
/// far plus this one stay within [`max_wait`](Self::max_wait), and the call's timeout leaves
/// room for it. Otherwise the call returns [`ErrorKind::RateLimited`](crate::ErrorKind) with the
/// wait the server asked for.
///
/// Only idempotent requests are retried: every request but `tools/call`, and the `tools/call`
/// of a tool whose annotations (in the client's last `tools/list`) say `idempotentHint` or
/// `readOnlyHint`. Other tool calls are retried only with
/// [`retry_tool_calls(true)`](Self::retry_tool_calls): the server ran no handler for a refused
/// call, but only the caller knows whether sending it again is what they want.
///
/// The defaults: 3 attempts, 30 s of waiting in all, up to 10% jitter, a 1 s wait when the
/// server names none, tool calls of unannotated tools not retried.
///
/// ```
/// use std::time::Duration;
/// use mcp_client::{Client, RateLimitRetry};
///
/// let builder = Client::builder().rate_limit_retry(
///     RateLimitRetry::new()
///         .max_attempts(5)
///         .max_wait(Duration::from_secs(60))
///         .jitter(0.2)
///         .on_retry(|error, wait| eprintln!("{error}; retrying in {wait:?}")),
/// );
/// // Never retry: every rate-limited call returns `ErrorKind::RateLimited`.
/// let strict = Client::builder().rate_limit_retry(RateLimitRetry::off());
/// # let _ = (builder, strict);
/// ```
#[derive(Clone)]
pub struct RateLimitRetry {
    pub(crate) max_attempts: u32,
    pub(crate) max_wait: Duration,
    pub(crate) jitter: f64,
    pub(crate) default_wait: Duration,
    pub(crate) retry_tool_calls: bool,
    pub(crate) on_retry: Option<RetryFn>,
}

impl fmt::Debug for RateLimitRetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitRetry")
            .field("max_attempts", &self.max_attempts)
            .field("max_wait", &self.max_wait)
            .field("jitter", &self.jitter)
            .field("default_wait", &self.default_wait)
            .field("retry_tool_calls", &self.retry_tool_calls)
            .field("on_retry", &self.on_retry.is_some())
            .finish()
    }
}

impl Default for RateLimitRetry {
    fn default() -> Self {
        Self::new()
    }
}

impl RateLimitRetry {
    /// The defaults: 3 attempts, 30 s of waiting, 10% jitter, idempotent requests only.
    ///
    /// ```
    /// let retry = mcp_client::RateLimitRetry::new();
    /// # let _ = retry;
    /// ```
    pub fn new() -> Self {
        Self {
            max_attempts: 3,
            max_wait: Duration::from_secs(30),
            jitter: 0.1,
            default_wait: Duration::from_secs(1),
            retry_tool_calls: false,
            on_retry: None,
        }
    }

    /// No retries: a rate-limited call returns [`ErrorKind::RateLimited`](crate::ErrorKind) at
    /// once.
    ///
    /// ```
    /// let retry = mcp_client::RateLimitRetry::off();
    /// # let _ = retry;
    /// ```
    pub fn off() -> Self {
        Self::new().max_attempts(1)
    }

    /// How many times one request is sent in all, the first included (at least 1; 1 means no
    /// retry). Default 3.
    ///
    /// ```
    /// let retry = mcp_client::RateLimitRetry::new().max_attempts(5);
    /// # let _ = retry;
    /// ```
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The most one request waits in all across its retries. A wait that would go past it is
    /// not started: the call returns [`ErrorKind::RateLimited`](crate::ErrorKind). Default 30 s.
    ///
    /// ```
    /// let retry = mcp_client::RateLimitRetry::new().max_wait(std::time::Duration::from_secs(5));
    /// # let _ = retry;
    /// ```
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// The jitter, as a fraction of the server's wait (0 to 1): each wait is lengthened by a
    /// random part of up to `fraction` of it, so clients refused together do not come back
    /// together. Default 0.1.
    ///
    /// ```
    /// let retry = mcp_client::RateLimitRetry::new().jitter(0.0); // waits exactly as asked
    /// # let _ = retry;
    /// ```
    pub fn jitter(mut self, fraction: f64) -> Self {
        self.jitter = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// The wait when the server names none (a 429 without `Retry-After`, an error without
    /// `retryAfterMs`). Default 1 s.
    ///
    /// ```
    /// let retry = mcp_client::RateLimitRetry::new().default_wait(std::time::Duration::from_millis(500));
    /// # let _ = retry;
    /// ```
    pub fn default_wait(mut self, wait: Duration) -> Self {
        self.default_wait = wait;
        self
    }

    /// Retries every `tools/call`, not only those of tools annotated `idempotentHint` or
    /// `readOnlyHint`. Default off.
    ///
    /// ```
    /// let retry = mcp_client::RateLimitRetry::new().retry_tool_calls(true);
    /// # let _ = retry;
    /// ```
    pub fn retry_tool_calls(mut self, retry: bool) -> Self {
        self.retry_tool_calls = retry;
        self
    }

    /// Called before each wait with the refusal ([`ErrorKind::RateLimited`](crate::ErrorKind))
    /// and how long the client will wait: to tell a person, or count retries.
    ///
    /// ```
    /// let retry = mcp_client::RateLimitRetry::new().on_retry(|error, wait| {
    ///     eprintln!("rate limited ({:?}), retrying in {wait:?}", error.rate_limit());
    /// });
    /// # let _ = retry;
    /// ```
    pub fn on_retry(mut self, f: impl Fn(&Error, Duration) + Send + Sync + 'static) -> Self {
        self.on_retry = Some(Arc::new(f));
        self
    }

    /// The wait before the next attempt after a refusal that asked for `asked`, jitter
    /// included; `None` when the bounds forbid another attempt (`attempts` sent so far,
    /// `waited` in all so far, `left` until the call's timeout).
    pub(crate) fn next_wait(
        &self,
        asked: Option<Duration>,
        attempts: u32,
        waited: Duration,
        left: Duration,
    ) -> Option<Duration> {
        if attempts >= self.max_attempts {
            return None;
        }
        let base = asked.unwrap_or(self.default_wait);
        let wait = base.saturating_add(base.mul_f64(self.jitter * unit_random()));
        let total = waited.saturating_add(wait);
        // Jitter never pushes a wait that fits past the bound: it is cut, not refused.
        let wait = if total > self.max_wait && waited.saturating_add(base) <= self.max_wait {
            self.max_wait - waited
        } else if total > self.max_wait {
            return None;
        } else {
            wait
        };
        (wait < left).then_some(wait)
    }
}

/// A number in [0, 1), different per call (jitter needs no better randomness).
fn unit_random() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    // 53 bits: exactly representable.
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether a tool's annotations say calling it twice does no harm.
pub(crate) fn tool_is_retry_safe(tool: &Value) -> bool {
    let annotations = tool.get("annotations");
    let hint = |name: &str| {
        annotations
            .and_then(|a| a.get(name))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    hint("idempotentHint") || hint("readOnlyHint")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limited::{Limited, classify, parse_retry_after};
    use mcp_wire::jsonrpc::ErrorObject;
    use serde_json::json;

    fn rpc(code: i64, data: Option<Value>) -> ErrorObject {
        let mut e = ErrorObject::new(code, "rate limited: too many calls");
        e.data = data;
        e
    }

    #[test]
    fn the_json_rpc_error_alone_is_understood_as_over_stdio() {
        let e = rpc(
            RATE_LIMITED,
            Some(json!({"retryAfterMs": 1500, "limit": "tools/call"})),
        );
        let limited = classify(Some(&e), None, None).unwrap();
        assert_eq!(limited.retry_after, Some(Duration::from_millis(1500)));
        assert_eq!(limited.limit.as_deref(), Some("tools/call"));
        // Without data: rate limited, wait and limit unknown.
        let bare = classify(Some(&rpc(RATE_LIMITED, None)), None, None).unwrap();
        assert_eq!(bare, Limited::default());
        // Another code is not a rate limit.
        assert!(classify(Some(&rpc(-32603, None)), None, None).is_none());
    }

    #[test]
    fn a_stdio_refusal_becomes_a_rate_limited_error() {
        // Over stdio the JSON-RPC error is all there is: no status, no header.
        let e = rpc(
            RATE_LIMITED,
            Some(json!({"retryAfterMs": 2000, "limit": "tools/call"})),
        );
        let error = Error::refused(Some(e), None, None, None);
        assert_eq!(error.kind(), crate::ErrorKind::RateLimited);
        assert!(error.is_rate_limited());
        assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(error.rate_limit(), Some("tools/call"));
        assert_eq!(error.code(), Some(RATE_LIMITED));
        assert_eq!(error.http_status(), None);
        let text = error.to_string();
        assert!(text.starts_with("rate limited by the server"), "{text}");
        assert!(text.contains("(limit tools/call)"), "{text}");
        assert!(text.contains("the server asked to wait 2 s"), "{text}");
        // Another error is not.
        let other = Error::refused(Some(rpc(-32603, None)), None, None, None);
        assert_eq!(other.kind(), crate::ErrorKind::Rpc);
        assert_eq!(other.retry_after(), None);
    }

    #[test]
    fn a_429_is_understood_with_or_without_a_body() {
        let header = Some(Duration::from_secs(2));
        let bare = classify(None, Some(429), header).unwrap();
        assert_eq!(bare.retry_after, header);
        assert_eq!(bare.limit, None);
        // The error's milliseconds are more precise than the header's rounded seconds.
        let e = rpc(
            RATE_LIMITED,
            Some(json!({"retryAfterMs": 1200, "limit": "deploy"})),
        );
        let both = classify(Some(&e), Some(429), header).unwrap();
        assert_eq!(both.retry_after, Some(Duration::from_millis(1200)));
        assert_eq!(both.limit.as_deref(), Some("deploy"));
        assert!(classify(None, Some(503), header).is_none());
    }

    #[test]
    fn odd_values_are_bounded_or_ignored() {
        assert_eq!(parse_retry_after(" 3 "), Some(3));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("99999999999"), Some(24 * 60 * 60));
        let e = rpc(
            RATE_LIMITED,
            Some(json!({"retryAfterMs": "soon", "limit": "x".repeat(500)})),
        );
        assert_eq!(classify(Some(&e), None, None).unwrap(), Limited::default());
    }

    #[test]
    fn waits_respect_attempts_total_and_timeout() {
        let retry = RateLimitRetry::new()
            .max_attempts(3)
            .max_wait(Duration::from_secs(5))
            .jitter(0.0);
        let asked = Some(Duration::from_secs(2));
        let long = Duration::from_secs(60);
        assert_eq!(retry.next_wait(asked, 1, Duration::ZERO, long), asked);
        assert_eq!(
            retry.next_wait(asked, 2, Duration::from_secs(2), long),
            asked
        );
        assert_eq!(
            retry.next_wait(asked, 3, Duration::from_secs(4), long),
            None
        );
        // Past the total wait, or past the call's timeout.
        assert_eq!(
            retry.next_wait(asked, 1, Duration::from_secs(4), long),
            None
        );
        assert_eq!(
            retry.next_wait(asked, 1, Duration::ZERO, Duration::from_secs(1)),
            None
        );
        // No wait named: the default one.
        assert_eq!(
            retry.next_wait(None, 1, Duration::ZERO, long),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            RateLimitRetry::off().next_wait(asked, 1, Duration::ZERO, long),
            None
        );
    }

    #[test]
    fn jitter_lengthens_within_its_fraction_and_never_past_the_bound() {
        let retry = RateLimitRetry::new()
            .jitter(0.5)
            .max_wait(Duration::from_millis(1100));
        for _ in 0..100 {
            let wait = retry
                .next_wait(
                    Some(Duration::from_secs(1)),
                    1,
                    Duration::ZERO,
                    Duration::from_secs(60),
                )
                .unwrap();
            assert!(wait >= Duration::from_secs(1) && wait <= Duration::from_millis(1100));
        }
    }

    #[test]
    fn annotated_tools_are_retry_safe() {
        assert!(tool_is_retry_safe(
            &json!({"name": "a", "annotations": {"readOnlyHint": true}})
        ));
        assert!(tool_is_retry_safe(
            &json!({"name": "a", "annotations": {"idempotentHint": true}})
        ));
        assert!(!tool_is_retry_safe(
            &json!({"name": "a", "annotations": {"destructiveHint": false}})
        ));
        assert!(!tool_is_retry_safe(&json!({"name": "a"})));
    }
}
