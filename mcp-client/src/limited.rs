//! The retry contract's refusal as a client reads it: the JSON-RPC error code, the wait a
//! server asks for (`data.retryAfterMs`, `Retry-After`) and the limit's name. A leaf module:
//! the error type, the transports and the retry policy (`rate_limit`) read it.

use std::time::Duration;

use mcp_wire::jsonrpc::ErrorObject;
use serde_json::Value;

/// The JSON-RPC error code of a rate-limited call: outside JSON-RPC's reserved block
/// (-32768 to -32000), so no revision forbids it.
///
/// ```
/// assert_eq!(mcp_client::rate_limit::RATE_LIMITED, -31429);
/// ```
pub const RATE_LIMITED: i64 = mcp_adapters::codes::RATE_LIMITED;

/// The longest wait read from a server (a day): a larger `retryAfterMs` or `Retry-After` is
/// read as this, and the retry bounds turn it into [`ErrorKind::RateLimited`](crate::ErrorKind).
const MAX_READ_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest limit name kept from a refusal, in bytes.
const MAX_LIMIT_NAME: usize = 128;

/// What a refusal says about the limit: the wait the server asked for and the rule's name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Limited {
    pub(crate) retry_after: Option<Duration>,
    pub(crate) limit: Option<String>,
}

/// Whether a refusal is a rate limit, and what it says: a JSON-RPC error with code
/// [`RATE_LIMITED`] (its `data.retryAfterMs` and `data.limit`), or an HTTP 429 (its
/// `Retry-After`, or the error's `data.retryAfterMs` when both are there).
pub(crate) fn classify(
    error: Option<&ErrorObject>,
    status: Option<u16>,
    retry_after_header: Option<Duration>,
) -> Option<Limited> {
    let coded = error.filter(|e| e.code == RATE_LIMITED);
    if coded.is_none() && status != Some(429) {
        return None;
    }
    let data = error.and_then(|e| e.data.as_ref());
    let from_data = data
        .and_then(|d| d.get("retryAfterMs"))
        .and_then(Value::as_u64)
        .map(|ms| Duration::from_millis(ms).min(MAX_READ_WAIT));
    let limit = data
        .and_then(|d| d.get("limit"))
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty() && name.len() <= MAX_LIMIT_NAME)
        .map(str::to_owned);
    Some(Limited {
        retry_after: from_data.or(retry_after_header),
        limit,
    })
}

/// A `Retry-After` header's wait in delay-seconds (RFC 9110 §10.2.3), at most a day. An HTTP
/// date is not read (the wait is then unknown).
pub(crate) fn parse_retry_after(value: &str) -> Option<u32> {
    let value = value.trim();
    if value.is_empty() || value.len() > 12 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let seconds: u64 = value.parse().ok()?;
    u32::try_from(seconds.min(MAX_READ_WAIT.as_secs())).ok()
}

/// The wait of a `Retry-After` read by [`parse_retry_after`].
pub(crate) fn retry_after_wait(seconds: Option<u32>) -> Option<Duration> {
    seconds.map(|s| Duration::from_secs(u64::from(s)))
}

/// A wait as people read it: `250 ms` under a second, else whole seconds rounded up (`2 s`).
///
/// ```
/// use std::time::Duration;
/// use mcp_client::rate_limit::wait_text;
///
/// assert_eq!(wait_text(Duration::from_millis(1500)), "2 s");
/// assert_eq!(wait_text(Duration::from_millis(50)), "50 ms");
/// ```
pub fn wait_text(wait: Duration) -> String {
    if wait < Duration::from_secs(1) {
        format!("{} ms", wait.as_millis())
    } else {
        let whole = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        format!("{whole} s")
    }
}
