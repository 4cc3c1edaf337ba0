//! Server-Sent Events framing: an encoder and a sans-IO push decoder.
//!
//! MCP uses SSE on HTTP in every revision: the `endpoint` and `message` events of the 2024-11-05
//! HTTP+SSE transport, the POST and GET streams of Streamable HTTP (2025-03-26 to 2025-11-25,
//! with `id`-based resumption through `Last-Event-ID`, and on 2025-11-25 a priming event with an
//! id, empty data and a `retry` field), and the per-request response stream of 2026-07-28.
//!
//! The decoder follows the parsing rules of the WHATWG HTML standard, section "Server-sent
//! events", "Interpreting an event stream":
//!
//! - lines end in LF, CRLF or CR; a single byte order mark at the start of the stream is skipped;
//! - a line starting with `:` is a comment; a blank line dispatches the event;
//! - `field:value` lines, with one space after the colon removed; a line without a colon is a
//!   field name with an empty value;
//! - `data` appends its value and a LF to the data buffer; `event` sets the event type; `id` sets
//!   the last event id unless the value contains NUL; `retry` sets the reconnection time when the
//!   value is only ASCII digits; other fields are ignored;
//! - on dispatch the last event id is kept for later events; a block whose data buffer is empty
//!   dispatches nothing (but still updates the last event id);
//! - the stream is UTF-8; invalid sequences become U+FFFD.
//!
//! On top of that the decoder bounds memory: an event larger than
//! [`SseDecoder::max_event_size`] is reported as [`SseError::EventTooLarge`] and skipped up to
//! the next blank line.
//!
//! # Example
//!
//! ```
//! use mcp_wire::sse::{Event, SseDecoder};
//!
//! let mut wire = Vec::new();
//! Event::new("{\"jsonrpc\":\"2.0\"}").with_id("7")?.encode_into(&mut wire);
//!
//! let mut decoder = SseDecoder::new();
//! for chunk in wire.chunks(5) {
//!     decoder.push(chunk);
//!     for event in &mut decoder {
//!         let event = event.expect("small event");
//!         assert_eq!(event.data(), "{\"jsonrpc\":\"2.0\"}");
//!     }
//! }
//! assert_eq!(decoder.last_event_id(), "7");
//! # Ok::<(), mcp_wire::sse::SseEncodeError>(())
//! ```

use std::borrow::Cow;

/// The default of [`SseDecoder::max_event_size`]: 4 MiB.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 4 * 1024 * 1024;

/// The UTF-8 byte order mark, skipped once at the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One Server-Sent Event.
///
/// Built with [`Event::new`] and the `with_*` methods for sending, and produced by
/// [`SseDecoder`] when receiving.
/// The event type and id never contain CR or LF, and the id never contains NUL: the setters
/// refuse such values, since they could not be framed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Event {
    /// The types MCP uses (`message`, `endpoint`) are borrowed from static text when decoded:
    /// no allocation per event for them.
    event: Option<Cow<'static, str>>,
    id: Option<String>,
    retry: Option<u64>,
    data: String,
}

impl Event {
    /// An event of the default type (`message`) carrying `data`.
    ///
    /// `data` may contain line breaks; it is sent as several `data:` lines.
    /// A receiver sees every line break (LF, CRLF or CR) as LF.
    pub fn new(data: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            ..Self::default()
        }
    }

    /// Sets the event type (the `event:` field).
    ///
    /// An empty type is the default type, the same as not setting one.
    /// Fails if `event` contains CR or LF.
    pub fn with_event(mut self, event: impl Into<String>) -> Result<Self, SseEncodeError> {
        let event = event.into();
        if event.contains(['\r', '\n']) {
            return Err(SseEncodeError::InvalidEventType);
        }
        self.event = (!event.is_empty()).then_some(Cow::Owned(event));
        Ok(self)
    }

    /// Sets the event id (the `id:` field), which the receiver remembers as its last event id.
    ///
    /// An empty id resets the receiver's last event id.
    /// Fails if `id` contains CR, LF or NUL (a receiver ignores an id containing NUL).
    pub fn with_id(mut self, id: impl Into<String>) -> Result<Self, SseEncodeError> {
        let id = id.into();
        if id.contains(['\r', '\n', '\0']) {
            return Err(SseEncodeError::InvalidId);
        }
        self.id = Some(id);
        Ok(self)
    }

    /// Sets the reconnection time in milliseconds (the `retry:` field).
    pub fn with_retry(mut self, millis: u64) -> Self {
        self.retry = Some(millis);
        self
    }

    /// The event type, `None` for the default type `message`.
    pub fn event(&self) -> Option<&str> {
        self.event.as_deref()
    }

    /// The id this event carries, if it has an `id` field.
    ///
    /// On a decoded event this is the event's own field; the id that persists across events is
    /// [`SseDecoder::last_event_id`].
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The reconnection time in milliseconds this event carries, if it has a valid `retry` field.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// The data, lines joined with LF.
    pub fn data(&self) -> &str {
        &self.data
    }

    /// Consumes the event and returns its data.
    pub fn into_data(self) -> String {
        self.data
    }

    /// Appends the encoded event, ending with the blank line that dispatches it, to `out`.
    ///
    /// Fields are written in the order `event`, `id`, `retry`, then one `data:` line per line of
    /// data (at least one, so an event with empty data is still dispatched).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        if let Some(event) = &self.event {
            write_field(out, "event", event);
        }
        if let Some(id) = &self.id {
            write_field(out, "id", id);
        }
        if let Some(retry) = self.retry {
            write_field(out, "retry", &retry.to_string());
        }
        for line in Lines::new(&self.data) {
            write_field(out, "data", line);
        }
        out.push(b'\n');
    }

    /// Returns the encoded event as bytes; see [`Event::encode_into`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data.len() + 16);
        self.encode_into(&mut out);
        out
    }
}

/// Appends a comment to `out`, one `:` line per line of `text`.
///
/// Receivers ignore comments; servers send them as keep-alives (2026-07-28 encourages SSE
/// comment keep-alives).
/// An empty `text` gives the single line `:`.
pub fn encode_comment(text: &str, out: &mut Vec<u8>) {
    for line in Lines::new(text) {
        out.push(b':');
        if !line.is_empty() {
            out.push(b' ');
            out.extend_from_slice(line.as_bytes());
        }
        out.push(b'\n');
    }
}

/// Why an [`Event`] field cannot be set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseEncodeError {
    /// The event type contains CR or LF.
    #[error("an SSE event type must not contain CR or LF")]
    InvalidEventType,
    /// The id contains CR, LF or NUL.
    #[error("an SSE event id must not contain CR, LF or NUL")]
    InvalidId,
}

/// An error found while decoding an event stream.
///
/// Malformed syntax is not an error in SSE (unknown fields and bad `retry` values are ignored);
/// only the size limit is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// An event grew past the size limit; it was dropped, and decoding resumes after the next
    /// blank line.
    #[error("SSE event of at least {size} bytes exceeds the limit of {limit} bytes")]
    EventTooLarge {
        /// The size of the event when the limit was crossed.
        size: usize,
        /// The limit in force.
        limit: usize,
    },
}

/// A sans-IO push decoder for an SSE byte stream.
///
/// Call [`push`](Self::push) with bytes as they arrive, split anywhere (inside a CRLF pair or a
/// UTF-8 character is fine), then call [`next`](Iterator::next) until it returns `None`, which
/// means "need more bytes".
/// The decoder is an [`Iterator`] that can resume yielding after `None` once more bytes are
/// pushed.
/// Decoding is lazy: `next` parses only up to the event it returns, so
/// [`last_event_id`](Self::last_event_id) and [`retry`](Self::retry) describe the stream up to
/// and including the last event returned.
///
/// # Memory
///
/// The size of an event is the total length of its non-comment lines, line ends excluded.
/// When it exceeds [`max_event_size`](Self::max_event_size) (even before the event is complete),
/// `next` returns [`SseError::EventTooLarge`] once, drops what it holds of that event (including
/// its `id` and later fields), and discards input up to the next blank line.
/// Comment lines are skipped without being buffered.
/// The decoder therefore holds at most `max_event_size` bytes of an event plus the bytes pushed
/// and not yet consumed by `next`: drain it after each push.
#[derive(Clone, Debug)]
pub struct SseDecoder {
    /// Bytes pushed; `buf[start..]` is not yet consumed.
    buf: Vec<u8>,
    /// Offset of the first unconsumed byte.
    start: usize,
    /// `buf[start..scanned]` is known to contain no line end.
    scanned: usize,
    /// What the next unconsumed byte belongs to.
    mode: Mode,
    /// The stream start has not been seen yet, so a BOM may follow.
    at_stream_start: bool,
    /// The last line ended with CR, so a LF that follows belongs to it.
    skip_lf: bool,
    /// The event being built and the state that persists across events.
    builder: Builder,
    /// The size limit of one event.
    max_event_size: usize,
}

/// What the unconsumed input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Ordinary lines.
    Lines,
    /// The rest of a comment line, skipped.
    Comment,
    /// The rest of an oversized event, skipped up to a blank line.
    Discard {
        /// The last byte seen ended a line.
        at_line_start: bool,
    },
}

/// The event under construction and the decoder's persistent state.
#[derive(Clone, Debug, Default)]
struct Builder {
    /// The data lines so far, joined by LF (no LF after the last).
    data: String,
    /// A data line was seen (the data may still be empty: `data:` alone is an empty event).
    has_data: bool,
    event: String,
    event_id: Option<String>,
    event_retry: Option<u64>,
    /// Bytes of non-comment lines of this event so far.
    size: usize,
    last_event_id: String,
    reconnection_time: Option<u64>,
}

/// What a complete line did.
enum LineOutcome {
    Nothing,
    Dispatch(Event),
    TooLarge(usize),
}

impl SseDecoder {
    /// A decoder with the default limits.
    pub fn new() -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            mode: Mode::Lines,
            at_stream_start: true,
            skip_lf: false,
            builder: Builder::default(),
            max_event_size: DEFAULT_MAX_EVENT_SIZE,
        }
    }

    /// Sets the largest event accepted, in bytes (see the type docs for how size is counted).
    ///
    /// Default is 4 MiB ([`DEFAULT_MAX_EVENT_SIZE`]).
    pub fn with_max_event_size(mut self, bytes: usize) -> Self {
        self.max_event_size = bytes;
        self
    }

    /// The largest event accepted, in bytes.
    pub fn max_event_size(&self) -> usize {
        self.max_event_size
    }

    /// The last event id: the value of the latest `id` field of a dispatched block, `""` if
    /// none yet.
    ///
    /// This is what a client sends as `Last-Event-ID` when it resumes (2025-03-26 to
    /// 2025-11-25).
    /// It persists across events and across [`reset_stream`](Self::reset_stream).
    pub fn last_event_id(&self) -> &str {
        &self.builder.last_event_id
    }

    /// The reconnection time in milliseconds from the latest valid `retry` field, if any.
    ///
    /// 2025-11-25: the client MUST respect `retry` before reconnecting.
    /// It persists across events and across [`reset_stream`](Self::reset_stream).
    pub fn retry(&self) -> Option<u64> {
        self.builder.reconnection_time
    }

    /// Bytes currently held: pushed input not yet consumed plus the event being built.
    pub fn buffered_len(&self) -> usize {
        let b = &self.builder;
        (self.buf.len() - self.start)
            + b.data.len()
            + b.event.len()
            + b.event_id.as_ref().map_or(0, String::len)
    }

    /// Appends bytes received from the peer.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Prepares for a new stream on the same logical connection, after a reconnect.
    ///
    /// Drops unconsumed input and the partial event (the spec discards an incomplete event at
    /// the end of a stream) and expects a possible BOM again; keeps
    /// [`last_event_id`](Self::last_event_id) and [`retry`](Self::retry).
    pub fn reset_stream(&mut self) {
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        self.mode = Mode::Lines;
        self.at_stream_start = true;
        self.skip_lf = false;
        self.builder.reset_event();
    }

    /// Returns the index just past the line end at `pos` (a CR or LF byte), and records a CR
    /// at the very end of the buffer so a LF arriving later is not read as a blank line.
    fn line_end(&mut self, pos: usize) -> usize {
        if self.buf[pos] == b'\r' {
            match self.buf.get(pos + 1) {
                Some(b'\n') => pos + 2,
                Some(_) => pos + 1,
                None => {
                    self.skip_lf = true;
                    pos + 1
                }
            }
        } else {
            pos + 1
        }
    }

    /// The offset of the first CR or LF in `buf[from..]`.
    fn find_line_end(&self, from: usize) -> Option<usize> {
        find_cr_or_lf(&self.buf[from..]).map(|i| from + i)
    }

    fn decode_next(&mut self) -> Option<Result<Event, SseError>> {
        loop {
            let avail = &self.buf[self.start..];
            if self.at_stream_start {
                if avail.len() < BOM.len() && BOM.starts_with(avail) {
                    return None;
                }
                if avail.starts_with(BOM) {
                    self.start += BOM.len();
                    self.scanned = self.start;
                }
                self.at_stream_start = false;
                continue;
            }
            if self.skip_lf {
                match avail.first() {
                    None => return None,
                    Some(b'\n') => {
                        self.start += 1;
                        self.scanned = self.start;
                    }
                    Some(_) => {}
                }
                self.skip_lf = false;
                continue;
            }
            match self.mode {
                Mode::Discard { at_line_start } => {
                    let mut at_line_start = at_line_start;
                    let mut i = self.start;
                    let mut boundary = false;
                    while i < self.buf.len() {
                        if matches!(self.buf[i], b'\n' | b'\r') {
                            i = self.line_end(i);
                            if at_line_start {
                                boundary = true;
                                break;
                            }
                            at_line_start = true;
                        } else {
                            at_line_start = false;
                            i += 1;
                        }
                    }
                    self.start = i;
                    self.scanned = i;
                    if !boundary {
                        self.mode = Mode::Discard { at_line_start };
                        return None;
                    }
                    self.mode = Mode::Lines;
                    self.builder.reset_event();
                }
                Mode::Comment => {
                    let Some(pos) = self.find_line_end(self.start) else {
                        self.start = self.buf.len();
                        self.scanned = self.start;
                        return None;
                    };
                    self.start = self.line_end(pos);
                    self.scanned = self.start;
                    self.mode = Mode::Lines;
                }
                Mode::Lines => {
                    let Some(pos) = self.find_line_end(self.scanned.max(self.start)) else {
                        let partial = self.buf.len() - self.start;
                        if partial > 0 && self.buf[self.start] == b':' {
                            self.mode = Mode::Comment;
                            self.start = self.buf.len();
                            self.scanned = self.start;
                            return None;
                        }
                        let size = self.builder.size + partial;
                        if size > self.max_event_size {
                            return Some(Err(self.start_discard(size, false)));
                        }
                        self.scanned = self.buf.len();
                        return None;
                    };
                    let line_start = self.start;
                    let next = self.line_end(pos);
                    self.start = next;
                    self.scanned = next;
                    match self
                        .builder
                        .line(&self.buf[line_start..pos], self.max_event_size)
                    {
                        LineOutcome::Nothing => {}
                        LineOutcome::Dispatch(event) => return Some(Ok(event)),
                        LineOutcome::TooLarge(size) => {
                            return Some(Err(self.start_discard(size, true)));
                        }
                    }
                }
            }
        }
    }

    /// Drops the current event and skips input up to the next blank line.
    fn start_discard(&mut self, size: usize, at_line_start: bool) -> SseError {
        self.builder.reset_event();
        if !at_line_start {
            self.start = self.buf.len();
            self.scanned = self.start;
        }
        self.mode = Mode::Discard { at_line_start };
        SseError::EventTooLarge {
            size,
            limit: self.max_event_size,
        }
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Iterator for SseDecoder {
    type Item = Result<Event, SseError>;

    /// Returns the next event or error, or `None` when more input is needed.
    fn next(&mut self) -> Option<Self::Item> {
        self.decode_next()
    }
}

impl Builder {
    /// Applies one complete line (without its line end).
    fn line(&mut self, line: &[u8], limit: usize) -> LineOutcome {
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return LineOutcome::Nothing;
        }
        self.size += line.len();
        if self.size > limit {
            return LineOutcome::TooLarge(self.size);
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                let raw = value.len();
                let value = lossy(value);
                // Each invalid byte becomes a three-byte U+FFFD: the event's size counts the
                // text as held, so invalid input cannot hold three times the limit.
                if let Some(size) = self.grown(raw, &value, limit) {
                    return LineOutcome::TooLarge(size);
                }
                // The LF goes before every line but the first, so the data of a one-line event
                // fills its buffer exactly (handed on as `Bytes` without another allocation).
                if std::mem::replace(&mut self.has_data, true) {
                    self.data.reserve(value.len() + 1);
                    self.data.push('\n');
                } else {
                    self.data.reserve_exact(value.len());
                }
                self.data.push_str(&value);
            }
            b"event" => {
                // Into the buffer kept across events; handed on at dispatch.
                self.event.clear();
                self.event.push_str(&lossy(value));
            }
            b"id" if !value.contains(&0) => {
                self.event_id = Some(lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // All digits, so only overflow can fail; an overflowing value is ignored.
                if let Some(millis) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                    self.event_retry = Some(millis);
                    self.reconnection_time = Some(millis);
                }
            }
            _ => {}
        }
        LineOutcome::Nothing
    }

    /// Handles a blank line.
    fn dispatch(&mut self) -> LineOutcome {
        if let Some(id) = &self.event_id {
            self.last_event_id.clone_from(id);
        }
        if !self.has_data {
            self.reset_event();
            return LineOutcome::Nothing;
        }
        let event = Event {
            event: self.event_type(),
            id: self.event_id.take(),
            retry: self.event_retry,
            data: std::mem::take(&mut self.data),
        };
        self.reset_event();
        LineOutcome::Dispatch(event)
    }

    /// The event type of the event being dispatched: `None` when it has none, the common types
    /// as static text (the buffer stays for the next event), any other type moved out.
    fn event_type(&mut self) -> Option<Cow<'static, str>> {
        match self.event.as_str() {
            "" => None,
            "message" => Some(Cow::Borrowed("message")),
            "endpoint" => Some(Cow::Borrowed("endpoint")),
            _ => Some(Cow::Owned(std::mem::take(&mut self.event))),
        }
    }

    /// Adds to the event's size what replacing invalid UTF-8 added to `text` (read from `raw`
    /// bytes; nothing when it was valid); the size when that takes the event past `limit`.
    fn grown(&mut self, raw: usize, text: &str, limit: usize) -> Option<usize> {
        let growth = text.len().saturating_sub(raw);
        if growth > 0 {
            self.size += growth;
            if self.size > limit {
                return Some(self.size);
            }
        }
        None
    }

    /// Forgets the event under construction, keeping the persistent state.
    fn reset_event(&mut self) {
        self.data.clear();
        self.has_data = false;
        self.event.clear();
        self.event_id = None;
        self.event_retry = None;
        self.size = 0;
    }
}

/// `bytes` as text, invalid sequences replaced by U+FFFD. Valid UTF-8 (nearly every line) is
/// checked by the plain validation, which is cheaper than the replacing one.
fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The offset of the first CR or LF in `bytes`, looked for eight bytes at a time.
fn find_cr_or_lf(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const LF: u64 = u64::from_ne_bytes([b'\n'; 8]);
    const CR: u64 = u64::from_ne_bytes([b'\r'; 8]);
    // Whether a word has a zero byte (the classic test: exact on whether, not on where).
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS != 0;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_ne_bytes(word);
        if has_zero(word ^ LF) || has_zero(word ^ CR) {
            break;
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map(|i| at + i)
}

/// Writes `name: value\n`, or `name:\n` for an empty value.
fn write_field(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.push(b':');
    if !value.is_empty() {
        out.push(b' ');
        out.extend_from_slice(value.as_bytes());
    }
    out.push(b'\n');
}

/// Splits text at LF, CRLF and CR; always yields at least one (possibly empty) line, and an
/// empty last line after a trailing line end.
struct Lines<'a> {
    rest: Option<&'a str>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Self { rest: Some(text) }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        match rest.find(['\r', '\n']) {
            Some(i) => {
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                self.rest = Some(&rest[i + skip..]);
                Some(&rest[..i])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// Replaces every CRLF and CR in `text` with LF, as a receiver sees data line breaks.
///
/// Useful to predict what [`SseDecoder`] yields for data given to [`Event::new`].
pub fn normalize_line_ends(text: &str) -> Cow<'_, str> {
    if text.contains('\r') {
        Cow::Owned(Lines::new(text).collect::<Vec<_>>().join("\n"))
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_search_finds_the_first_line_end() {
        for len in 0..40 {
            for at in 0..=len {
                for end in [b'\n', b'\r'] {
                    let mut bytes = vec![b'x'; len];
                    // Bytes next to the line ends' values, which a word test must not take.
                    bytes.iter_mut().step_by(3).for_each(|b| *b = 0x0c);
                    if at < len {
                        bytes[at] = end;
                        if at + 2 < len {
                            bytes[at + 2] = b'\n';
                        }
                    }
                    let naive = bytes.iter().position(|&b| b == b'\n' || b == b'\r');
                    assert_eq!(find_cr_or_lf(&bytes), naive, "{len} {at} {end}");
                }
            }
        }
    }

    #[test]
    fn lines_split_like_the_decoder() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[""]),
            ("a", &["a"]),
            ("a\n", &["a", ""]),
            ("a\r\nb\rc\nd", &["a", "b", "c", "d"]),
            ("\r\r\n", &["", "", ""]),
        ];
        for (text, lines) in cases {
            assert_eq!(Lines::new(text).collect::<Vec<_>>(), *lines, "{text:?}");
        }
    }

    #[test]
    fn empty_data_lines_still_make_an_event() {
        let cases: &[(&str, &[&str])] = &[
            ("data\n\n", &[""]),
            ("data:\n\n", &[""]),
            ("data:\ndata:\n\n", &["\n"]),
            ("data: a\ndata:\n\n", &["a\n"]),
            ("data:\ndata: b\n\n", &["\nb"]),
            ("id: 1\n\nevent: x\n\n: c\n\n", &[]),
            ("data: a\n\ndata: b\n\n", &["a", "b"]),
        ];
        for (text, expected) in cases {
            let mut decoder = SseDecoder::new();
            decoder.push(text.as_bytes());
            let data: Vec<String> = decoder.map(|e| e.unwrap().into_data()).collect();
            assert_eq!(data, *expected, "{text:?}");
        }
    }

    #[test]
    fn cr_at_chunk_end_is_not_a_blank_line() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: a\r");
        assert_eq!(decoder.next(), None);
        decoder.push(b"\ndata: b\r\n\r\n");
        assert_eq!(decoder.next(), Some(Ok(Event::new("a\nb"))));
        assert_eq!(decoder.next(), None);
    }

    #[test]
    fn compaction_keeps_partial_line() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: first\n\ndata: sec");
        assert_eq!(decoder.next(), Some(Ok(Event::new("first"))));
        assert_eq!(decoder.next(), None);
        decoder.push(b"ond\n\n");
        assert_eq!(decoder.next(), Some(Ok(Event::new("second"))));
        assert_eq!(decoder.buffered_len(), 0);
    }
}
