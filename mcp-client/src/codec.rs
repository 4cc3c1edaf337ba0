//! A push decoder for newline-delimited JSON, the stdio framing.
//!
//! Private shim: `mcp_wire::ndjson` was not yet written when this client was. The decoder is
//! push-based and bounded: bytes go in with `push`, complete lines come out with `next`, and a
//! line that outgrows the limit is an error, never unbounded memory.

/// Why a frame could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("frame larger than {limit} bytes")]
    TooLarge { limit: usize },
}

/// An incremental newline-delimited JSON decoder: one message per line.
#[derive(Debug)]
pub(crate) struct LineDecoder {
    buf: Vec<u8>,
    scanned: usize,
    limit: usize,
}

impl LineDecoder {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            buf: Vec::new(),
            scanned: 0,
            limit,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next non-empty line without its terminator, `Ok(None)` when more bytes are needed.
    pub(crate) fn next(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        loop {
            let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buf.len();
                if self.buf.len() > self.limit {
                    return Err(FrameError::TooLarge { limit: self.limit });
                }
                return Ok(None);
            };
            let end = self.scanned + pos;
            let mut line: Vec<u8> = self.buf.drain(..=end).collect();
            self.scanned = 0;
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.len() > self.limit {
                return Err(FrameError::TooLarge { limit: self.limit });
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn lines() {
        let mut d = LineDecoder::new(64);
        d.push(b"{\"a\":1}\r\n\n  \n{\"b\"");
        assert_eq!(d.next().unwrap().as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(d.next().unwrap(), None);
        d.push(b":2}\n");
        assert_eq!(d.next().unwrap().as_deref(), Some(&b"{\"b\":2}"[..]));
        let mut d = LineDecoder::new(4);
        d.push(b"123456");
        assert!(d.next().is_err());
    }

    proptest! {
        #[test]
        fn lines_any_split(lines in proptest::collection::vec("[a-z{}:0-9]{1,10}", 1..6), cut in 0usize..100) {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let cut = cut % (text.len() + 1);
            let mut d = LineDecoder::new(1024);
            d.push(&text.as_bytes()[..cut]);
            let mut got = Vec::new();
            while let Some(l) = d.next().unwrap() { got.push(String::from_utf8(l).unwrap()); }
            d.push(&text.as_bytes()[cut..]);
            while let Some(l) = d.next().unwrap() { got.push(String::from_utf8(l).unwrap()); }
            prop_assert_eq!(got, lines);
        }
    }
}
