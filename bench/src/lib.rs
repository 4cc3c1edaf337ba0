//! The benchmark harness behind `cargo xtask bench`: a load generator, a bare hyper floor server,
//! and the rows that compare our server and client with them and with peer implementations.
//!
//! This crate is not published. It may depend on every workspace crate.
//!
//! Feature `client` (off by default, so that `cargo xtask bench --quick` builds quickly) adds
//! the client rows, which depend on `mcp-client`.
//!
//! # Binaries
//!
//! - `mcp-load`: the load generator ([`load`]). C workers, each on its own keep-alive HTTP/1.1
//!   connection (hyper's `client::conn::http1`, `TCP_NODELAY`), do the revision's handshake and
//!   then call `tools/call add {a: 2, b: 3}` in a loop; every reply is parsed (JSON or SSE) and
//!   its sum checked ([`reply`]). With `--transport stdio --command ...` it drives a child
//!   process over its pipes instead (one call at a time).
//!   It prints one JSON line ([`load::Report`]): calls/s, p50, p99, errors.
//! - `mcp-floor`: the floor ([`floor`]), a bare hyper 1 HTTP/1.1 server answering any POST with a
//!   fixed JSON-RPC result, and the 2024-11-05 HTTP+SSE shape on `GET /sse`; with `--stdio`, the
//!   stdio floor: a process answering every request line on stdin with that fixed line.
//! - `mcp-bench-client` (feature `client`): the same loop driven through our `mcp-client`
//!   (module `client_load`), for the client-overhead and stdio client+server rows.
//! - `mcp-bench-server`: our real HTTP server (mcp-server: Streamable HTTP at `/mcp`, HTTP+SSE
//!   at `/sse`) with an `add` tool and a `confirm` tool that asks the client once, for the
//!   harness's own rows; `--store memory|redis` or `--hub memory|redis://…|postgres://…|sqlite:PATH`,
//!   and `--auth-jwt TOKEN_FILE` for a JWT-protected server (the token for `mcp-load --bearer`
//!   is written to the file). With `mcp-load --ask` ([`ask`]) the harness measures a pushed
//!   question answered through the server's hub (with `--answer-url`, through a second worker
//!   sharing it). It also offers `add_task`, `add` as a task (the Tasks extension, memory or
//!   Redis task store): with `mcp-load --tasks` ([`tasks`]) the harness measures tasks created
//!   and completed per second.
//!
//! `cargo xtask bench` (in `xtask/src/bench.rs`) builds these in release mode, starts the servers
//! pinned to core 0 and the load generator pinned to core 1, alternates rounds across servers,
//! and writes `docs/benchmarks.md`.
//!
//! # Server contract
//!
//! Every server the harness measures takes `--port <port>`, listens on `127.0.0.1:<port>`, serves
//! Streamable HTTP at `/mcp`, and (where it has the 2024-11-05 transport) HTTP+SSE with the
//! stream at `GET /sse` and the POST endpoint named by its `endpoint` event.
//! Its `add` tool takes `{a, b}` integers and returns their sum either as structured content
//! (a number, or an object whose first numeric field is the sum) or as a text block holding
//! the number or such an object.

pub mod ask;
#[cfg(feature = "client")]
pub mod client_load;
mod dpop;
pub mod floor;
pub mod histogram;
pub mod load;
pub mod reply;
pub mod request;
pub mod tasks;

use std::{fmt, str::FromStr};

/// The exit code of a benchmark server binary that cannot serve yet (the harness then reports
/// its row as "not available" instead of failing).
pub const EXIT_NOT_AVAILABLE: i32 = 3;

/// The MCP protocol revisions the load generator speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Revision {
    /// 2024-11-05: `initialize` handshake, served over HTTP+SSE.
    V2024_11_05,
    /// 2025-03-26: handshake, `Mcp-Session-Id`.
    V2025_03_26,
    /// 2025-06-18: handshake, session, `MCP-Protocol-Version` after the handshake.
    V2025_06_18,
    /// 2025-11-25: as 2025-06-18.
    V2025_11_25,
    /// 2026-07-28: no handshake; per-request `_meta` and the `MCP-Protocol-Version`,
    /// `Mcp-Method` and `Mcp-Name` headers.
    V2026_07_28,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Self; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];

    /// The revision's date string, as sent on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether the revision opens with `initialize` and `notifications/initialized`.
    pub fn has_handshake(self) -> bool {
        self != Self::V2026_07_28
    }

    /// Whether requests after the handshake carry `MCP-Protocol-Version`.
    pub fn sends_version_header(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// The transport this revision is measured on by default: HTTP+SSE for 2024-11-05,
    /// Streamable HTTP otherwise.
    pub fn default_transport(self) -> Transport {
        if self == Self::V2024_11_05 {
            Transport::HttpSse
        } else {
            Transport::Streamable
        }
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Revision {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownName {
                kind: "revision",
                name: s.to_owned(),
            })
    }
}

/// The HTTP transports the load generator speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Transport {
    /// Streamable HTTP (2025-03-26 on): every message is a POST to one endpoint, answered with
    /// JSON or an SSE stream.
    Streamable,
    /// The 2024-11-05 HTTP+SSE transport: a `GET` SSE stream whose `endpoint` event names the
    /// POST URL; replies arrive as `message` events on the stream.
    HttpSse,
    /// stdio: newline-delimited JSON-RPC over a child process's stdin and stdout.
    Stdio,
}

impl Transport {
    /// The name used on the command line: `streamable`, `http+sse` or `stdio`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Streamable => "streamable",
            Self::HttpSse => "http+sse",
            Self::Stdio => "stdio",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Transport {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "streamable" => Ok(Self::Streamable),
            "http+sse" | "sse" => Ok(Self::HttpSse),
            "stdio" => Ok(Self::Stdio),
            _ => Err(UnknownName {
                kind: "transport",
                name: s.to_owned(),
            }),
        }
    }
}

/// A revision or transport name that is not known.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{name}`")]
pub struct UnknownName {
    kind: &'static str,
    name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for revision in Revision::ALL {
            assert_eq!(revision.as_str().parse::<Revision>(), Ok(revision));
        }
        for transport in [Transport::Streamable, Transport::HttpSse, Transport::Stdio] {
            assert_eq!(transport.as_str().parse::<Transport>(), Ok(transport));
        }
        assert!("2025-01-01".parse::<Revision>().is_err());
        assert!("ws".parse::<Transport>().is_err());
    }

    #[test]
    fn revision_traits() {
        let table = [
            (Revision::V2024_11_05, true, false, Transport::HttpSse),
            (Revision::V2025_03_26, true, false, Transport::Streamable),
            (Revision::V2025_06_18, true, true, Transport::Streamable),
            (Revision::V2025_11_25, true, true, Transport::Streamable),
            (Revision::V2026_07_28, false, true, Transport::Streamable),
        ];
        for (revision, handshake, header, transport) in table {
            assert_eq!(revision.has_handshake(), handshake, "{revision}");
            assert_eq!(revision.sends_version_header(), header, "{revision}");
            assert_eq!(revision.default_transport(), transport, "{revision}");
        }
    }
}
