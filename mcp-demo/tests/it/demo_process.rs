//! An `mcp-demo` process for the tests that run the demo as a worker: started on
//! `127.0.0.1:0` with the given flags, its address read from its first line, killed when
//! dropped.

use std::net::SocketAddr;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};

use crate::raw_http::WAIT;

/// One running `mcp-demo`; killed when dropped.
pub(crate) struct DemoProcess {
    pub(crate) addr: SocketAddr,
    _child: tokio::process::Child,
}

impl DemoProcess {
    /// Starts `mcp-demo ARGS` (the arguments should bind `127.0.0.1:0`) without the
    /// environment variables named in `unset`, and waits for the line that gives its address.
    pub(crate) async fn start<S: AsRef<std::ffi::OsStr>>(args: &[S], unset: &[&str]) -> Self {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-demo"));
        command.args(args);
        for name in unset {
            command.env_remove(name);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("mcp-demo starts");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("mcp-demo prints its address in time")
            .unwrap()
            .expect("a first line");
        let addr = line
            .strip_prefix("mcp-demo listening on http://")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .unwrap();
        // Keep reading stdout so the process never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            addr,
            _child: child,
        }
    }

    /// One request to `/mcp` on a connection of its own (2025-06-18 headers with a session):
    /// the status, the `Mcp-Session-Id` header and the body.
    pub(crate) async fn send(
        &self,
        method: &str,
        session: Option<&str>,
        body: &str,
    ) -> (u16, Option<String>, String) {
        let mut request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            self.addr,
            body.len()
        );
        if let Some(session) = session {
            request.push_str(&format!(
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n"
            ));
        }
        request.push_str("\r\n");
        request.push_str(body);
        let mut stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        tokio::time::timeout(WAIT, stream.read_to_string(&mut response))
            .await
            .expect("the demo answers in time")
            .unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        let session = head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        });
        (status, session, body.to_owned())
    }
}
