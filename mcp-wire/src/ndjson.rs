//! Newline-delimited JSON framing, the message framing of the stdio transport.
//!
//! Every revision's stdio transport sends one JSON-RPC message per line: messages are delimited
//! by newlines and MUST NOT contain embedded newlines.
//! The encoder writes one compact JSON value followed by `\n`; compact `serde_json` output never
//! contains a raw newline, since newlines inside strings are escaped.
//!
//! The decoder is sans-IO and splits bytes into lines; it does **not** parse JSON.
//! It yields each line as a `Vec<u8>` and leaves parsing to the caller (the JSON-RPC layer
//! decides what an unparsable line means, for example a `-32700` Parse error reply).
//!
//! # Example
//!
//! ```
//! use mcp_wire::ndjson::{self, NdjsonDecoder};
//! use serde_json::json;
//!
//! let mut wire = Vec::new();
//! ndjson::encode(&json!({"jsonrpc": "2.0", "method": "ping", "id": 1}), &mut wire)?;
//! ndjson::encode(&json!({"text": "two\nlines"}), &mut wire)?;
//! assert_eq!(wire.iter().filter(|&&b| b == b'\n').count(), 2);
//!
//! let mut decoder = NdjsonDecoder::new();
//! let mut lines = Vec::new();
//! for chunk in wire.chunks(7) {
//!     decoder.push(chunk);
//!     lines.extend(&mut decoder);
//! }
//! let second: serde_json::Value = serde_json::from_slice(lines[1].as_ref().unwrap())?;
//! assert_eq!(second["text"], "two\nlines");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;

use serde::Serialize;

/// The default of [`NdjsonDecoder::max_line_length`]: 4 MiB.
pub const DEFAULT_MAX_LINE_LENGTH: usize = 4 * 1024 * 1024;

/// Why a value cannot be written as one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NdjsonEncodeError {
    /// The value could not be serialized to JSON.
    #[error("cannot serialize the message as JSON: {0}")]
    Serialize(#[from] serde_json::Error),
    /// A pre-serialized line contains a newline byte.
    #[error("a line must not contain a newline (found at byte {index})")]
    EmbeddedNewline {
        /// Offset of the first `\n`.
        index: usize,
    },
}

/// An error found while splitting input into lines.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NdjsonError {
    /// A line grew past the length limit; its bytes were dropped up to the next newline.
    #[error("line of at least {length} bytes exceeds the limit of {limit} bytes")]
    LineTooLong {
        /// The length of the line when the limit was crossed (at least `limit + 1`).
        length: usize,
        /// The limit in force.
        limit: usize,
    },
}

/// Appends `value` as compact JSON followed by `\n` to `out`.
///
/// On error `out` is left as it was.
pub fn encode<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), NdjsonEncodeError> {
    let before = out.len();
    if let Err(e) = serde_json::to_writer(&mut *out, value) {
        out.truncate(before);
        return Err(e.into());
    }
    out.push(b'\n');
    Ok(())
}

/// Returns `value` as compact JSON followed by `\n`; see [`encode`].
pub fn to_line<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, NdjsonEncodeError> {
    let mut out = Vec::new();
    encode(value, &mut out)?;
    Ok(out)
}

/// Appends an already serialized JSON text followed by `\n` to `out`.
///
/// Fails, leaving `out` unchanged, if `json` contains a newline byte.
/// `json` is not otherwise checked.
pub fn encode_raw(json: &[u8], out: &mut Vec<u8>) -> Result<(), NdjsonEncodeError> {
    if let Some(index) = json.iter().position(|&b| b == b'\n') {
        return Err(NdjsonEncodeError::EmbeddedNewline { index });
    }
    out.reserve(json.len() + 1);
    out.extend_from_slice(json);
    out.push(b'\n');
    Ok(())
}

/// A sans-IO push decoder splitting a byte stream into lines.
///
/// Call [`push`](Self::push) with bytes as they arrive, split anywhere, then take lines with
/// [`next`](Iterator::next) until it returns `None` ("need more bytes").
/// At end of input call [`finish`](Self::finish) so that a last line without a newline is
/// yielded too.
///
/// # Lines
///
/// - A line ends at `\n`; one `\r` before it is removed, so `\r\n` is accepted.
/// - A line that is empty or holds only JSON whitespace (space, tab, CR) is skipped.
/// - The bytes are returned as they are, without UTF-8 or JSON validation.
///
/// # Length limit
///
/// A line longer than [`max_line_length`](Self::max_line_length) bytes (not counting its
/// `\r\n` or `\n`) yields one [`NdjsonError::LineTooLong`], reported as soon as the limit is
/// crossed; the decoder then drops bytes up to the next newline and carries on with the line
/// after it.
/// The incomplete line the decoder holds is never longer than `max_line_length + 1` bytes (the
/// extra byte being a `\r` that may start a `\r\n`).
/// Complete lines wait in a queue until taken with `next`.
#[derive(Clone, Debug)]
pub struct NdjsonDecoder {
    /// The incomplete line so far.
    partial: Vec<u8>,
    /// An over-long line is being skipped up to its newline.
    discarding: bool,
    /// Complete lines and errors not yet taken.
    ready: VecDeque<Result<Vec<u8>, NdjsonError>>,
    /// The longest line accepted.
    max_line_length: usize,
}

impl NdjsonDecoder {
    /// A decoder with the default limit.
    pub fn new() -> Self {
        Self {
            partial: Vec::new(),
            discarding: false,
            ready: VecDeque::new(),
            max_line_length: DEFAULT_MAX_LINE_LENGTH,
        }
    }

    /// Sets the longest line accepted, in bytes, not counting the line end.
    ///
    /// Default is 4 MiB ([`DEFAULT_MAX_LINE_LENGTH`]).
    pub fn with_max_line_length(mut self, bytes: usize) -> Self {
        self.max_line_length = bytes;
        self
    }

    /// The longest line accepted, in bytes.
    pub fn max_line_length(&self) -> usize {
        self.max_line_length
    }

    /// Bytes currently held: the incomplete line plus the complete lines not yet taken.
    pub fn buffered_len(&self) -> usize {
        self.partial.len()
            + self
                .ready
                .iter()
                .map(|r| r.as_ref().map_or(0, Vec::len))
                .sum::<usize>()
    }

    /// Splits `bytes` into lines, queueing complete lines and errors for [`next`](Iterator::next).
    pub fn push(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
            let segment = &rest[..newline];
            rest = &rest[newline + 1..];
            if self.discarding {
                self.discarding = false;
            } else if self.partial.is_empty() {
                self.complete_line(segment);
            } else {
                let length = self.partial.len() + segment.len();
                if self.too_long(length, segment.last().or(self.partial.last())) {
                    self.partial.clear();
                    self.too_long_error(length);
                } else {
                    let mut line = std::mem::take(&mut self.partial);
                    line.extend_from_slice(segment);
                    self.complete_line(&line);
                    // Keep the allocation for the next partial line.
                    line.clear();
                    self.partial = line;
                }
            }
        }
        if self.discarding || rest.is_empty() {
            return;
        }
        let length = self.partial.len() + rest.len();
        // An incomplete line may hold one byte more than the limit if that byte is a `\r`,
        // which could be the start of its `\r\n`.
        if length > self.max_line_length
            && !(length == self.max_line_length + 1 && rest.last() == Some(&b'\r'))
        {
            self.partial.clear();
            self.too_long_error(length);
            self.discarding = true;
        } else {
            self.partial.extend_from_slice(rest);
        }
    }

    /// Signals the end of input: an incomplete last line becomes available from
    /// [`next`](Iterator::next), as if it ended with a newline.
    ///
    /// The decoder can be reused afterwards for a new stream.
    pub fn finish(&mut self) {
        if self.discarding {
            self.discarding = false;
        } else if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.complete_line(&line);
        }
    }

    /// Whether a complete line of `length` bytes, with `last` as its last byte, is too long.
    fn too_long(&self, length: usize, last: Option<&u8>) -> bool {
        let content = if last == Some(&b'\r') {
            length - 1
        } else {
            length
        };
        content > self.max_line_length
    }

    fn too_long_error(&mut self, length: usize) {
        self.ready.push_back(Err(NdjsonError::LineTooLong {
            length,
            limit: self.max_line_length,
        }));
    }

    /// Queues a complete line given without its `\n`.
    fn complete_line(&mut self, line: &[u8]) {
        if self.too_long(line.len(), line.last()) {
            self.too_long_error(line.len());
            return;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            return;
        }
        self.ready.push_back(Ok(line.to_vec()));
    }
}

impl Default for NdjsonDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Iterator for NdjsonDecoder {
    type Item = Result<Vec<u8>, NdjsonError>;

    /// Returns the next line or error, or `None` when more input is needed.
    fn next(&mut self) -> Option<Self::Item> {
        self.ready.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_may_hold_a_trailing_cr_beyond_the_limit() {
        let mut decoder = NdjsonDecoder::new().with_max_line_length(3);
        decoder.push(b"abc\r");
        assert_eq!(decoder.next(), None);
        assert_eq!(decoder.buffered_len(), 4);
        decoder.push(b"\n");
        assert_eq!(decoder.next(), Some(Ok(b"abc".to_vec())));
    }

    #[test]
    fn too_long_partial_is_dropped_at_once() {
        let mut decoder = NdjsonDecoder::new().with_max_line_length(3);
        decoder.push(b"ab");
        decoder.push(b"cd");
        assert_eq!(
            decoder.next(),
            Some(Err(NdjsonError::LineTooLong {
                length: 4,
                limit: 3
            }))
        );
        assert_eq!(decoder.buffered_len(), 0);
        decoder.push(b"efgh\nok\n");
        assert_eq!(decoder.next(), Some(Ok(b"ok".to_vec())));
        assert_eq!(decoder.next(), None);
    }
}
