//! `cargo xtask interop`: our server and client against real SDK peers, both directions.
//!
//! 1. Installs the pinned peers into `$MCP_CACHE_DIR/interop` (default
//!    `<workspace>/../.mcp-cache/interop`): the TypeScript SDK v1 (`@modelcontextprotocol/sdk`),
//!    the TypeScript SDK v2 client and server (`@modelcontextprotocol/client`, `/server`,
//!    `/node`) and Node 22 with npm, the Python SDK (`mcp`) and the Python reference system
//!    (`aiohttp-tiny-mcp`), each in its own virtual environment with pip. When an install fails
//!    the task (or that Python peer) is skipped with a warning, except under `CI=true` where that
//!    is a failure.
//! 2. Copies the peer scripts kept in `interop/` next to the installed packages and builds
//!    `conformance-target`, `conformance-client` and `mcp-conformance`.
//! 3. Runs the peer clients against our server (`conformance-target`) and our client against the
//!    peer servers, over Streamable HTTP and HTTP+SSE (the TypeScript v2 server and the
//!    aiohttp-tiny-mcp client: Streamable HTTP only), once accepting and once declining an
//!    elicitation (on revisions that have it). The dual-era clients (TypeScript v2, Python) run in
//!    `auto` mode (probing `server/discover`), pinned to 2026-07-28, and in `legacy` mode; the
//!    aiohttp-tiny-mcp client, which does not negotiate, is pinned to each revision; our client
//!    negotiates against the Python servers, then is pinned to each older revision.
//!    Then the peer clients complete OAuth with their SDK's own OAuth client against
//!    `mcp-demo --auth --auth-auto-approve` (our resource server and development authorization
//!    server): a 401, discovery, dynamic registration, PKCE, a token, a protected tool, and a 403
//!    `insufficient_scope` with a step-up to a wider scope ([`oauth_cells`]).
//!    The gateway's rows (issue 48): the TypeScript SDK v2 and Python SDK clients through
//!    `mcp proxy --stdio` to the Python SDK's stdio server (`interop/py-stdio-server.py`), and
//!    our client through `mcp proxy --upstream` to the TypeScript SDK v2 server (every
//!    revision, both transports) and to rmcp (the Tasks fixtures) ([`gateway_cells`]).
//! 4. Runs `mcp-conformance` against the aiohttp-tiny-mcp server (Streamable HTTP and HTTP+SSE):
//!    the step passes when the checker ends without crashing and prints its `N passed, M failed`
//!    line; the failed checks are the peer's differences, listed with what each one is.
//! 5. Prints the matrix (peer, direction, revision, transport, elicitation: pass/fail), writes it
//!    and the checker's report to `docs/interop.md`, and fails when a cell fails. A cell that
//!    fails because of a documented defect of the peer ([`tiny_server_defect`]) is shown as such
//!    and does not fail the run; if it passes, the run fails so the note gets removed.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::conformance::{self, NODE, NODE_MAJOR};

/// The TypeScript SDK v2 client and server, pinned, and the server's node:http adapter.
const TS_V2_CLIENT: &str = "@modelcontextprotocol/client";
const TS_V2_SERVER: &str = "@modelcontextprotocol/server";
const TS_V2_VERSION: &str = "2.4.0";
const TS_V2_NODE: &str = "@modelcontextprotocol/node";
const TS_V2_NODE_VERSION: &str = "2.1.2";
/// The TypeScript SDK v1, pinned.
const TS_V1: &str = "@modelcontextprotocol/sdk";
const TS_V1_VERSION: &str = "1.32.2";
/// The schema library the TypeScript v1 peer server declares its tool arguments with.
const ZOD: &str = "zod";
const ZOD_MAJOR: &str = "3";
/// The official Python SDK, pinned.
const PY_MCP: &str = "mcp";
const PY_MCP_VERSION: &str = "2.3.0";
/// The Python reference system, pinned.
pub(crate) const TINY: &str = "aiohttp-tiny-mcp";
pub(crate) const TINY_VERSION: &str = "0.5.8";
/// The scripts copied from `interop/`.
const SCRIPTS: [&str; 16] = [
    "py-stdio-server.py",
    "ts-v1-client.mjs",
    "ts-v2-client.mjs",
    "ts-v2-trace.mjs",
    "ts-v2-server.mjs",
    "ts-v1-server.mjs",
    "py-client.py",
    "py-server.py",
    "tiny-client.py",
    "tiny-server.py",
    "oauth-common.mjs",
    "ts-v1-oauth-client.mjs",
    "ts-v2-oauth-client.mjs",
    "py-oauth-client.py",
    "py-oauth-server.py",
    "ts-v1-oauth-server.mjs",
];
/// The revisions the TypeScript SDK v1 client is pinned to for OAuth: those with authorization.
const TS_V1_OAUTH_REVISIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
/// The negotiation modes the dual-era peer clients (TypeScript v2, Python) run OAuth in.
const OAUTH_MODES: [&str; 3] = ["auto", "2026-07-28", "legacy"];
/// The direction column of the OAuth cells.
const OAUTH_DIRECTION: &str = "peer client → our server with OAuth (mcp-demo --auth)";
/// The direction column of the cells of our client against the peers' protected servers.
const OAUTH_SERVER_DIRECTION: &str = "our client (mcp) → peer server with OAuth";
/// Every revision, newest first: the aiohttp-tiny-mcp client is pinned to each.
const ALL_REVISIONS: [&str; 5] = [
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];
/// The revisions our client is pinned to against the dual-era peer servers (`None`: negotiate).
const DUAL_ERA_SERVER_REVISIONS: [Option<&str>; 5] = [
    None,
    Some("2025-11-25"),
    Some("2025-06-18"),
    Some("2025-03-26"),
    Some("2024-11-05"),
];
/// How the dual-era peer clients (TypeScript v2, Python) run against our server: their version
/// negotiation mode and the transport.
const DUAL_ERA_MODES: [(&str, &str); 4] = [
    ("auto", "Streamable HTTP"),
    ("2026-07-28", "Streamable HTTP"),
    ("legacy", "Streamable HTTP"),
    ("legacy", "HTTP+SSE"),
];
/// The revisions the TypeScript SDK v1 speaks (it has no 2026-07-28).
const TS_V1_REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The elicitation answers tried on `revision`: none before elicitation existed (2025-06-18).
fn answers(revision: &str) -> &'static [&'static str] {
    if matches!(revision, "2024-11-05" | "2025-03-26") {
        &["none"]
    } else {
        &["accept", "decline"]
    }
}

/// The revision column: the one offered, and the one negotiated when they differ.
fn revision_cell(offered: &str, negotiated: &str) -> String {
    if offered == negotiated {
        offered.to_owned()
    } else {
        format!("{offered} (negotiated {negotiated})")
    }
}

/// How long one peer run may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the `mcp-conformance` checker may take against a peer server.
const CHECKER_TIMEOUT: Duration = Duration::from_secs(300);

/// aiohttp-tiny-mcp 0.5.8's `SseEndpoint` stores only the negotiated version of an HTTP+SSE
/// session, not the capabilities the client declared at `initialize`.
const TINY_SSE_FORGETS_CAPABILITIES: &str = "aiohttp-tiny-mcp 0.5.8's HTTP+SSE transport \
    (`SseEndpoint`) does not keep the capabilities the client declared at `initialize` (it \
    stores only the negotiated version), so on 2025-06-18 and 2025-11-25 it believes the client \
    cannot be asked: `confirm` fails with -32603 \"... cannot ask the user\" before any \
    `elicitation/create` is sent, whatever the client answers. Our client declared \
    `elicitation` (the same client passes these cells against the Python SDK server over \
    HTTP+SSE and against the same peer over Streamable HTTP). The `none` cells of those legs \
    (initialize, `echo`) pass.";

/// `@modelcontextprotocol/sdk` 1.32.2 answers a 403 `insufficient_scope` by running `auth()`
/// with the challenged scope, and `auth()` refreshes whenever it holds a refresh token.
const TS_V1_STEP_UP_REFRESHES: &str = "`@modelcontextprotocol/sdk` 1.32.2 cannot step up while \
    it holds a refresh token. On a 403 `insufficient_scope` its Streamable HTTP transport \
    (`client/streamableHttp.js`, `send`) calls `auth()` with the challenged scope \
    (`mcp:read mcp:deploy`); `auth()` (`client/auth.js`, `authInternal`) refreshes whenever the \
    stored tokens have a `refresh_token`, and `refreshAuthorization` sends no `scope` (it never \
    reaches `startAuthorization`, which would have used it). A refresh cannot widen the grant \
    (RFC 6749 §6: a scope not originally granted MUST NOT be requested; omitted means the \
    original scope), so the development authorization server rightly issues `mcp:read` again, \
    the retried call gets the same 403, and the transport gives up with \"Server returned 403 \
    after trying upscoping\". The exchanges the peer records: `POST /mcp 403, POST /token 200, \
    POST /mcp 403`, with no second `GET /authorize`. The TypeScript SDK v2 (2.4.0) forces a new \
    authorization when the union of scopes is wider than the token's (`isStrictScopeSuperset`) \
    (typescript-sdk pull request #2346, SEP-2350) and passes these cells; the root cause is \
    reported upstream as typescript-sdk issue #2255. The `none` cells of the same revisions \
    (401, discovery, registration, PKCE, token, `add`) pass.";

/// The TypeScript SDK v2 HTTP+SSE transport does not step up on a 403.
const TS_V2_SSE_NO_STEP_UP: &str = "`@modelcontextprotocol/client` 2.4.0's HTTP+SSE transport \
    (`SSEClientTransport`) handles 401 on a POST (it authorizes again and retries) but not 403 \
    `insufficient_scope`: it throws \"Error POSTing to endpoint (HTTP 403)\" instead of \
    authorizing again with the wider scope, as its Streamable HTTP transport does. Up to the \
    403 the cell's exchanges are the whole OAuth flow over HTTP+SSE: `GET /sse 401`, the `/sse` \
    resource's metadata, the authorization server's, `POST /register`, `GET /authorize`, \
    `POST /token`, `GET /sse 200`, the session's messages, then the `deploy` call's \
    `POST /messages 403` with the challenge naming `mcp:deploy`.";

/// The SDKs' OAuth servers publish one protected resource, the Streamable HTTP endpoint.
const SDK_SSE_RESOURCE_IS_MCP: &str = "the SDK's authorization support publishes one protected \
    resource, its Streamable HTTP endpoint (`AuthSettings.resource_server_url` in the Python SDK \
    2.3.0, `mcpAuthRouter`'s `resourceServerUrl` in `@modelcontextprotocol/sdk` 1.32.2). Its \
    `/sse` endpoint answers 401 with a challenge naming that resource's metadata \
    (`/.well-known/oauth-protected-resource/mcp`), whose `resource` is `…/mcp`, not the `…/sse` \
    URL the client connects to. A client that checks the metadata's `resource` against the \
    server it is accessing (RFC 9728 §3.3; the MCP authorization spec from 2025-06-18) must \
    refuse it, and ours does (\"the protected resource metadata is for …/mcp, not this server \
    (…/sse)\"); it never sends a token meant for `/mcp` to `/sse`. Our server publishes `/sse` \
    as a resource of its own, and our client passes OAuth over HTTP+SSE against it.";

/// Defects of our side that cells are expected to show until they are fixed.
/// None is known now: OAuth over HTTP+SSE, once one (the resource server published `…/mcp`
/// for both endpoints), passes since `/sse` is a resource of its own.
const OUR_DEFECTS: [&str; 0] = [];

/// Why a cell of our client against the aiohttp-tiny-mcp server fails although our side is
/// right: the peer's documented defect on that leg, if it has one.
fn tiny_server_defect(transport: &str, pinned: Option<&str>, answer: &str) -> Option<&'static str> {
    (transport == "HTTP+SSE"
        && matches!(pinned, Some("2025-06-18" | "2025-11-25"))
        && answer != "none")
        .then_some(TINY_SSE_FORGETS_CAPABILITIES)
}

/// The elicitation answers tried against the aiohttp-tiny-mcp server: those of the revision, and
/// on the HTTP+SSE legs where [`tiny_server_defect`] makes asking fail, also `none`, so the
/// matrix shows what works there.
fn tiny_server_answers(transport: &str, pinned: Option<&str>) -> &'static [&'static str] {
    match pinned {
        None => &["accept", "decline"],
        Some(_) if tiny_server_defect(transport, pinned, "accept").is_some() => {
            &["none", "accept", "decline"]
        }
        Some(revision) => answers(revision),
    }
}

/// No known peer defect on any leg.
fn no_defect(_: &str, _: Option<&str>, _: &str) -> Option<&'static str> {
    None
}

/// One cell of the matrix.
struct Cell {
    peer: &'static str,
    direction: &'static str,
    revision: String,
    transport: &'static str,
    elicitation: &'static str,
    ok: bool,
    /// The peer's documented defect that makes this cell fail, if any.
    defect: Option<&'static str>,
    detail: String,
}

impl Cell {
    /// Whether the cell is as expected: passing, or failing by the peer's documented defect.
    fn expected(&self) -> bool {
        self.ok != self.defect.is_some()
    }
}

/// Runs the task from the workspace root `root`.
pub(crate) fn run(root: &Path) -> Result<()> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let prefix = conformance::cache_dir(root).join("interop");
    let node = match install(&prefix) {
        Ok(node) => node,
        Err(err) if !ci => {
            eprintln!("xtask interop: skipped, the peers could not be installed: {err:#}");
            return Ok(());
        }
        Err(err) => return Err(err.context("installing the interop peers (CI=true)")),
    };
    let venv = |dir: &str, package: &str, version: &str| match install_venv(
        &prefix, dir, package, version,
    ) {
        Ok(python) => Ok(python),
        Err(err) if !ci => {
            eprintln!(
                "xtask interop: the {package} peer is skipped, it could not be installed: {err:#}"
            );
            Ok(PathBuf::new())
        }
        Err(err) => Err(err.context(format!("installing the {package} peer (CI=true)"))),
    };
    let python = venv("py", PY_MCP, PY_MCP_VERSION)?;
    let tiny = venv("py-tiny", TINY, TINY_VERSION)?;
    for script in SCRIPTS {
        std::fs::copy(root.join("interop").join(script), prefix.join(script))
            .with_context(|| format!("copying interop/{script}"))?;
    }
    let peers = conformance::build_peers()?;
    let mut cells = Vec::new();

    let target = conformance::Target::start(&peers.target)?;
    let base = target.url.trim_end_matches("/mcp").to_owned();
    for revision in TS_V1_REVISIONS {
        for (transport, url) in [
            ("Streamable HTTP", target.url.clone()),
            ("HTTP+SSE", format!("{base}/sse")),
        ] {
            for answer in answers(revision) {
                let kind = if transport == "HTTP+SSE" {
                    "sse"
                } else {
                    "streamable"
                };
                cells.push(client_cell(
                    (&node, "ts-v1-client.mjs", &prefix),
                    [url.as_str(), kind, answer, revision],
                    "TypeScript SDK v1 client",
                    transport,
                    answer,
                    |negotiated| revision_cell(revision, negotiated),
                )?);
            }
        }
    }
    cells.extend(mode_cells(
        &node,
        "ts-v2-client.mjs",
        "TypeScript SDK v2 client",
        &target.url,
        &prefix,
    )?);
    // Trace context (issue 49): the SDK v2 client's `_meta.traceparent` reaches our handler
    // (`test_trace_context` answers with the trace id `Exchange::trace_context` gives it).
    for mode in ["2026-07-28", "legacy"] {
        cells.push(client_cell(
            (&node, "ts-v2-trace.mjs", &prefix),
            [target.url.as_str(), mode],
            "TypeScript SDK v2 client, `_meta.traceparent`",
            "Streamable HTTP",
            "none",
            |negotiated| format!("{negotiated} (mode {mode})"),
        )?);
    }
    if python.exists() {
        cells.extend(mode_cells(
            &python,
            "py-client.py",
            "Python SDK client",
            &target.url,
            &prefix,
        )?);
    }
    if tiny.exists() {
        // It speaks one revision at a time (no negotiation), over Streamable HTTP only.
        for revision in ALL_REVISIONS {
            for answer in answers(revision) {
                cells.push(client_cell(
                    (&tiny, "tiny-client.py", &prefix),
                    [target.url.as_str(), "streamable", answer, revision],
                    "aiohttp-tiny-mcp client",
                    "Streamable HTTP",
                    answer,
                    |negotiated| revision_cell(revision, negotiated),
                )?);
            }
        }
    }
    // The Tasks extension: our client drives every task fixture against our server and rmcp's.
    let driver = build_binary("mcp-conformance-peers", "tasks-interop")?;
    cells.extend(task_cells(&driver, &target.url, "our conformance-target")?);
    drop(target);
    let rmcp = build_rmcp_tasks_peer(root, &prefix)?;
    let rmcp_server = PeerServer::start(&rmcp, "", &prefix)?;
    let rmcp_url = format!("{}/mcp", rmcp_server.base);
    cells.extend(task_cells(
        &driver,
        &rmcp_url,
        "rmcp 3.11.0 server (Tasks fixtures)",
    )?);
    // `mcp console` against peers, through the API its page uses.
    let mcp = build_binary("everymcp-cli", "mcp")?;
    cells.extend(console_cells(
        &mcp,
        &rmcp_url,
        "rmcp 3.11.0 server (Tasks fixtures)",
        &[],
        &[
            ("greet", serde_json::json!({"name": "Ada"}), "Hello, Ada!"),
            (
                "slow_compute",
                serde_json::json!({"seconds": 0.2}),
                "Computed",
            ),
        ],
    )?);
    drop(rmcp_server);
    if python.exists() {
        let server = PeerServer::start(&python, "py-server.py", &prefix)?;
        cells.extend(console_cells(
            &mcp,
            &format!("{}/mcp", server.base),
            "Python SDK server",
            &["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
            &[(
                "echo",
                serde_json::json!({"text": "from the console"}),
                "from the console",
            )],
        )?);
    }
    if python.exists() {
        // Trace context (issue 49): our client's `_meta.traceparent` (`mcp --traceparent`)
        // parents the Python SDK server's span, which its handler runs in.
        let server = PeerServer::start(&python, "py-server.py", &prefix)?;
        cells.extend(trace_cells(
            &mcp,
            &format!("{}/mcp", server.base),
            "Python SDK server, `_meta.traceparent`",
            &["2025-11-25", "2026-07-28"],
        )?);
    }
    cells.extend(oauth_cells(&node, &python, &prefix)?);

    let mcp = build_binary("everymcp-cli", "mcp")?;
    let mut protected = vec![(
        node.as_path(),
        "ts-v1-oauth-server.mjs",
        "TypeScript SDK v1 server",
        &TS_V1_OAUTH_REVISIONS[..],
    )];
    if python.exists() {
        protected.push((
            python.as_path(),
            "py-oauth-server.py",
            "Python SDK server",
            &OAUTH_SERVER_REVISIONS[..],
        ));
    }
    for (program, script, peer, revisions) in protected {
        cells.extend(oauth_server_cells(
            &mcp,
            (program, script, &prefix),
            peer,
            revisions,
        )?);
    }

    let server = PeerServer::start(&node, "ts-v1-server.mjs", &prefix)?;
    for revision in TS_V1_REVISIONS {
        for (transport, path) in [("Streamable HTTP", "/mcp"), ("HTTP+SSE", "/sse")] {
            cells.extend(pinned_cell(
                &peers.client,
                &server.base,
                ("TypeScript SDK v1 server", transport, path),
                Some(revision),
                answers(revision),
                no_defect,
            )?);
        }
    }
    drop(server);

    // The SDK v2 server's 2025-era leg is stateless: it cannot ask the client anything there.
    cells.extend(pinned_cells(
        (&node, "ts-v2-server.mjs", &prefix),
        "TypeScript SDK v2 server",
        &peers.client,
        |_, pinned| match pinned {
            None => &["accept", "decline"],
            Some(_) => &["none"],
        },
        &[("Streamable HTTP", "/mcp")],
        no_defect,
    )?);
    if python.exists() {
        cells.extend(pinned_cells(
            (&python, "py-server.py", &prefix),
            "Python SDK server",
            &peers.client,
            |_, pinned| pinned.map_or(&["accept", "decline"][..], answers),
            &[("Streamable HTTP", "/mcp"), ("HTTP+SSE", "/sse")],
            no_defect,
        )?);
    }
    cells.extend(gateway_cells(
        &peers,
        (&node, &python, &prefix),
        &driver,
        &rmcp,
    )?);
    let mut checked = None;
    if tiny.exists() {
        cells.extend(pinned_cells(
            (&tiny, "tiny-server.py", &prefix),
            "aiohttp-tiny-mcp server",
            &peers.client,
            tiny_server_answers,
            &[("Streamable HTTP", "/mcp"), ("HTTP+SSE", "/sse")],
            tiny_server_defect,
        )?);
        let checker = build_checker()?;
        let server = PeerServer::start(&tiny, "tiny-server.py", &prefix)?;
        checked = Some(run_checker(&checker, &server.base)?);
    }

    let table = table(&cells);
    println!("\n{table}");
    let mut doc = format!(
        "# Interoperability\n\nWritten by `cargo xtask interop`: our server and client against \
         real peers ({TS_V1}@{TS_V1_VERSION}, {TS_V2_CLIENT} and {TS_V2_SERVER} \
         {TS_V2_VERSION} on Node {NODE_MAJOR}, Python {PY_MCP}=={PY_MCP_VERSION}, and the \
         Python reference system {TINY}=={TINY_VERSION}), over Streamable HTTP and HTTP+SSE, \
         with an accepted and a declined elicitation (`none`: no elicitation on that leg, \
         because the revision has none or the TypeScript v2 server's stateless 2025 fallback \
         cannot ask, or next to a leg's elicitation cells when a peer defect stops its asking), \
         the peer clients with their SDKs' OAuth support against `mcp-demo --auth`, and our \
         client against the peers' own protected servers (the rows `with OAuth`, see the \
         notes), and the rows through `mcp proxy` (peer clients in front of it, peer servers \
         behind it). The peer scripts are in \
         [`interop/`](../interop); our server is `conformance-target`, our client \
         `conformance-client`.\n\n{table}\n{}",
        notes(&cells)
    );
    if let Some(checked) = &checked {
        doc.push_str(&checked.markdown());
    }
    std::fs::write(root.join("docs").join("interop.md"), doc).context("writing docs/interop.md")?;
    let mut failures = 0;
    for cell in cells.iter().filter(|c| !c.expected()) {
        failures += 1;
        let why = if cell.ok {
            "passes, but a defect is recorded for it: remove it from xtask/src/interop.rs"
        } else {
            cell.detail.as_str()
        };
        eprintln!(
            "xtask interop: {} / {} / {} / {} / {}: {why}",
            cell.peer, cell.direction, cell.revision, cell.transport, cell.elicitation
        );
    }
    if let Some(checked) = checked.as_ref().filter(|c| !c.completed) {
        failures += 1;
        eprintln!(
            "xtask interop: mcp-conformance against {TINY} did not complete: {}",
            checked.detail
        );
    }
    if failures > 0 {
        bail!("{failures} interop step(s) failed");
    }
    Ok(())
}

/// The gateway's cells (issue 48): the peer clients (TypeScript SDK v2, Python SDK) through
/// `mcp proxy --stdio` to the Python SDK's stdio server; our client through `mcp proxy
/// --upstream` to the TypeScript SDK v2 server (negotiating, then pinned to every older
/// revision, on both transports: the proxy serves every revision whatever the upstream speaks,
/// and its question reaches our client on each, by the argument convention on 2025-03-26 and
/// 2024-11-05) and to rmcp (the Tasks fixtures, passed on as the proxy's own tasks).
fn gateway_cells(
    peers: &conformance::Peers,
    (node, python, prefix): (&Path, &Path, &Path),
    driver: &Path,
    rmcp: &Path,
) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    if python.exists() {
        let child = format!(
            "{} {}",
            python.display(),
            prefix.join("py-stdio-server.py").display()
        );
        // A child per downstream session: room for every session of the rows below.
        let proxy = conformance::Proxy::start_with(
            &peers.proxy,
            &["--stdio", &child, "--max-children", "64"],
        )?;
        cells.extend(mode_cells(
            node,
            "ts-v2-client.mjs",
            "TypeScript SDK v2 client → `mcp proxy --stdio` → Python SDK stdio server",
            &proxy.url,
            prefix,
        )?);
        cells.extend(mode_cells(
            python,
            "py-client.py",
            "Python SDK client → `mcp proxy --stdio` → Python SDK stdio server",
            &proxy.url,
            prefix,
        )?);
    }
    let server = PeerServer::start(node, "ts-v2-server.mjs", prefix)?;
    let proxy = conformance::Proxy::start(&peers.proxy, &format!("{}/mcp", server.base))?;
    let base = proxy.url.trim_end_matches("/mcp").to_owned();
    for (transport, path) in [("Streamable HTTP", "/mcp"), ("HTTP+SSE", "/sse")] {
        for pinned in DUAL_ERA_SERVER_REVISIONS {
            // HTTP+SSE carries the revisions with a handshake only: no negotiation to 2026-07-28.
            if transport == "HTTP+SSE" && pinned.is_none() {
                continue;
            }
            cells.extend(pinned_cell(
                &peers.client,
                &base,
                (
                    "`mcp proxy --upstream` → TypeScript SDK v2 server",
                    transport,
                    path,
                ),
                pinned,
                &["accept", "decline"],
                no_defect,
            )?);
        }
    }
    drop(proxy);
    drop(server);
    let rmcp_server = PeerServer::start(rmcp, "", prefix)?;
    let proxy = conformance::Proxy::start(&peers.proxy, &format!("{}/mcp", rmcp_server.base))?;
    cells.extend(task_cells(
        driver,
        &proxy.url,
        "`mcp proxy --upstream` → rmcp 3.11.0 server (Tasks fixtures)",
    )?);
    Ok(cells)
}

/// The cell of one peer client run (`script` run by `program` in the cache `prefix`, with
/// `args`), read from the JSON line `{ok, revision, detail}` it prints last; `revision` makes
/// the revision column from the revision the peer reports.
fn client_cell<const N: usize>(
    (program, script, prefix): (&Path, &str, &Path),
    args: [&str; N],
    peer: &'static str,
    transport: &'static str,
    answer: &'static str,
    revision: impl FnOnce(&str) -> String,
) -> Result<Cell> {
    let mut command = Command::new(program);
    command.arg(script).args(args).current_dir(prefix);
    let (ok, stdout, stderr) = run_bounded(command, RUN_TIMEOUT)?;
    let report: serde_json::Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_default();
    Ok(Cell {
        peer,
        direction: "peer client → our server",
        revision: revision(report["revision"].as_str().unwrap_or("?")),
        transport,
        elicitation: answer,
        ok: ok && report["ok"] == true,
        defect: None,
        detail: report["detail"]
            .as_str()
            .map_or_else(|| stderr.trim().to_owned(), str::to_owned),
    })
}

/// The OAuth cells: each peer client completes OAuth (discovery from a 401, dynamic
/// registration, PKCE, token, a 403 `insufficient_scope` and a step-up to `mcp:deploy`) against
/// `mcp-demo --auth --auth-auto-approve` with its SDK's own OAuth client, over Streamable HTTP.
/// `python` is empty when the Python SDK peer is skipped.
fn oauth_cells(node: &Path, python: &Path, prefix: &Path) -> Result<Vec<Cell>> {
    let demo = AuthDemo::start(&build_binary("everymcp-demo", "mcp-demo")?)?;
    let url = demo.url.as_str();
    let mut cells = Vec::new();
    let mut push = |cell: Cell| {
        cells.push(Cell {
            direction: OAUTH_DIRECTION,
            ..cell
        });
    };
    // Two legs: up to `add` (no step-up), and the step-up to `deploy` (with its confirmation).
    for revision in TS_V1_OAUTH_REVISIONS {
        for (leg, answer, defect) in [
            ("read", "none", None),
            ("step-up", "accept", Some(TS_V1_STEP_UP_REFRESHES)),
        ] {
            let cell = client_cell(
                (node, "ts-v1-oauth-client.mjs", prefix),
                [url, revision, leg],
                "TypeScript SDK v1 client",
                "Streamable HTTP",
                answer,
                |negotiated| revision_cell(revision, negotiated),
            )?;
            // The defect only explains the failure it causes.
            let defect =
                defect.filter(|_| cell.ok || cell.detail.contains("after trying upscoping"));
            push(Cell { defect, ..cell });
        }
    }
    let mut dual_era = vec![(node, "ts-v2-oauth-client.mjs", "TypeScript SDK v2 client")];
    if python.exists() {
        dual_era.push((python, "py-oauth-client.py", "Python SDK client"));
    }
    let sse = format!("{}/sse", url.trim_end_matches("/mcp"));
    for (program, script, peer) in dual_era {
        for mode in OAUTH_MODES {
            push(client_cell(
                (program, script, prefix),
                [url, "streamable", mode],
                peer,
                "Streamable HTTP",
                "accept",
                |negotiated| format!("{negotiated} (mode {mode})"),
            )?);
        }
        // HTTP+SSE carries the 2025 revisions only (`legacy`).
        let cell = client_cell(
            (program, script, prefix),
            [&sse, "sse", "legacy"],
            peer,
            "HTTP+SSE",
            "accept",
            |negotiated| format!("{negotiated} (mode legacy)"),
        )?;
        // The defect only explains the failure it causes.
        let defect = (script == "ts-v2-oauth-client.mjs"
            && (cell.ok || cell.detail.contains("Error POSTing to endpoint (HTTP 403)")))
        .then_some(TS_V2_SSE_NO_STEP_UP);
        push(Cell { defect, ..cell });
    }
    Ok(cells)
}

/// The direction column of the console cells.
const CONSOLE_DIRECTION: &str = "mcp console (its API) → peer server";

/// A running `mcp console --no-open`; killed when dropped.
struct ConsoleRun {
    child: Child,
    /// `127.0.0.1:PORT`.
    addr: String,
    token: String,
}

impl ConsoleRun {
    fn start(mcp: &Path) -> Result<Self> {
        let mut child = Command::new(mcp)
            .args(["console", "--no-open", "--timeout", "30"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting mcp console")?;
        let stdout = child.stdout.take().context("the console's stdout")?;
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        let parsed = line
            .trim()
            .strip_prefix("mcp console listening on http://")
            .and_then(|rest| rest.split_once("/#token="));
        match (read, parsed) {
            (Ok(_), Some((addr, token))) => Ok(Self {
                addr: addr.to_owned(),
                token: token.to_owned(),
                child,
            }),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("mcp console did not print its URL (printed {line:?})")
            }
        }
    }

    /// A POST to the console's JSON API, as its page sends it: the answer's status and body.
    fn post(&self, path: &str, body: &serde_json::Value) -> Result<(u16, serde_json::Value)> {
        use std::io::{Read as _, Write as _};
        let body = body.to_string();
        let mut stream = std::net::TcpStream::connect(&self.addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nX-Mcp-Console-Token: {}\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            self.token,
            body.len()
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let (head, payload) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let value = serde_json::from_str(payload.trim()).unwrap_or(serde_json::Value::Null);
        Ok((status, value))
    }
}

impl Drop for ConsoleRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The console against a peer server through the API its page uses: connect (negotiating,
/// then pinned to each of `pinned`), list the tools, and call each of `calls` (`(tool,
/// arguments, text the result must hold)`).
fn console_cells(
    mcp: &Path,
    url: &str,
    peer: &'static str,
    pinned: &[&str],
    calls: &[(&str, serde_json::Value, &str)],
) -> Result<Vec<Cell>> {
    let console = ConsoleRun::start(mcp)?;
    let mut cells = Vec::new();
    let legs = std::iter::once("auto").chain(pinned.iter().copied());
    for revision in legs {
        let mut detail = String::new();
        let outcome = (|| -> Result<String> {
            let (status, connected) = console.post(
                "/api/connect",
                &serde_json::json!({"url": url, "revision": revision, "transport": "streamable"}),
            )?;
            if status != 200 {
                bail!("connect answered {status}: {connected}");
            }
            let conn = connected["conn"].clone();
            let negotiated = connected["revision"].as_str().unwrap_or("?").to_owned();
            let (status, tools) = console.post(
                "/api/list",
                &serde_json::json!({"conn": conn, "kind": "tools"}),
            )?;
            let listed = tools["items"].as_array().map_or(0, Vec::len);
            if status != 200 || listed == 0 {
                bail!("tools listing answered {status}: {tools}");
            }
            let mut said = Vec::new();
            for (tool, arguments, needle) in calls {
                let (status, result) = console.post(
                    "/api/call",
                    &serde_json::json!({"conn": conn, "name": tool, "arguments": arguments}),
                )?;
                let text = result["content"][0]["text"].as_str().unwrap_or_default();
                if status != 200 || !text.contains(needle) {
                    bail!("{tool} answered {status}: {result}");
                }
                said.push(format!("{tool}: {text}"));
            }
            let _ = console.post("/api/disconnect", &serde_json::json!({"conn": conn}));
            Ok(format!("{negotiated}; {listed} tools; {}", said.join("; ")))
        })();
        let ok = match outcome {
            Ok(said) => {
                detail = said;
                true
            }
            Err(e) => {
                let _ = write!(detail, "{e:#}");
                false
            }
        };
        let negotiated = detail.split(';').next().unwrap_or("?").to_owned();
        cells.push(Cell {
            peer,
            direction: CONSOLE_DIRECTION,
            revision: if revision == "auto" {
                format!(
                    "{} (negotiated)",
                    if ok { negotiated.as_str() } else { "?" }
                )
            } else {
                revision.to_owned()
            },
            transport: "Streamable HTTP",
            elicitation: "none",
            ok,
            defect: None,
            detail,
        });
    }
    Ok(cells)
}

/// The direction column of the task cells.
const TASKS_DIRECTION: &str = "our client → server, Tasks extension";

/// Our client's task cells against the server at `url`: `tasks-interop` drives every fixture
/// of the suite's `tasks-*` scenarios on 2026-07-28 and prints a JSON line per fixture.
/// The trace our client sends with `mcp call URL trace_id --traceparent TP`, pinned to each of
/// `revisions`: the peer's `trace_id` tool must answer with that trace id.
fn trace_cells(mcp: &Path, url: &str, peer: &'static str, revisions: &[&str]) -> Result<Vec<Cell>> {
    const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
    let traceparent = format!("00-{TRACE_ID}-b7ad6b7169203331-01");
    let mut cells = Vec::new();
    for revision in revisions {
        let mut command = Command::new(mcp);
        command.args([
            "call",
            url,
            "trace_id",
            "--revision",
            revision,
            "--traceparent",
            &traceparent,
            "--timeout",
            "30",
        ]);
        let (ok, stdout, stderr) = run_bounded(command, RUN_TIMEOUT)?;
        let seen = stdout.trim();
        let ok = ok && seen == TRACE_ID;
        cells.push(Cell {
            peer,
            direction: "our client → peer server",
            revision: (*revision).to_owned(),
            transport: "Streamable HTTP",
            elicitation: "none",
            ok,
            defect: None,
            detail: if ok {
                format!("the handler ran in trace {seen}")
            } else {
                format!("the handler answered {seen:?}: {}", stderr.trim())
            },
        });
    }
    Ok(cells)
}

fn task_cells(driver: &Path, url: &str, peer: &'static str) -> Result<Vec<Cell>> {
    let mut command = Command::new(driver);
    command.arg(url);
    let (_, stdout, stderr) = run_bounded(command, RUN_TIMEOUT)?;
    let mut cells = Vec::new();
    for line in stdout.lines() {
        let Ok(report) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let fixture = report["fixture"].as_str().unwrap_or("?");
        let elicitation = match fixture {
            "confirm_delete" | "multi_input" | "test_tool_with_task" => "accept",
            _ => "none",
        };
        cells.push(Cell {
            peer,
            direction: TASKS_DIRECTION,
            revision: format!("2026-07-28 (fixture {fixture})"),
            transport: "Streamable HTTP",
            elicitation,
            ok: report["ok"] == true,
            defect: None,
            detail: report["detail"].as_str().unwrap_or_default().to_owned(),
        });
    }
    if cells.is_empty() {
        cells.push(Cell {
            peer,
            direction: TASKS_DIRECTION,
            revision: "2026-07-28".into(),
            transport: "Streamable HTTP",
            elicitation: "none",
            ok: false,
            defect: None,
            detail: stderr.trim().to_owned(),
        });
    }
    Ok(cells)
}

/// Builds `interop/rmcp-tasks-peer` (rmcp with the Tasks extension's fixtures) in the interop
/// cache `prefix`, outside our workspace and with its own target folder, so rmcp never reaches
/// our Cargo.lock; returns its binary.
fn build_rmcp_tasks_peer(root: &Path, prefix: &Path) -> Result<PathBuf> {
    let source = root.join("interop").join("rmcp-tasks-peer");
    let dir = prefix.join("rmcp-tasks-peer");
    for file in ["Cargo.toml", "Cargo.lock", "src/main.rs"] {
        let to = dir.join(file);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let wanted = std::fs::read(source.join(file))
            .with_context(|| format!("reading interop/rmcp-tasks-peer/{file}"))?;
        if std::fs::read(&to).ok().as_deref() != Some(&wanted[..]) {
            std::fs::write(&to, wanted).with_context(|| format!("writing {}", to.display()))?;
        }
    }
    println!(
        "xtask interop: building the rmcp tasks peer in {}",
        dir.display()
    );
    let status = crate::cargo_command()
        .args(["build", "--locked"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .status()
        .context("running cargo build for the rmcp tasks peer")?;
    if !status.success() {
        bail!("cargo build of the rmcp tasks peer failed ({status})");
    }
    Ok(dir.join("target").join("debug").join("rmcp-tasks-peer"))
}

/// The revisions our client is pinned to against the Python SDK's protected server (it speaks
/// 2026-07-28 too).
const OAUTH_SERVER_REVISIONS: [&str; 4] = ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// Our client (the `mcp` command, following the authorization server's redirect in place of a
/// browser) against a peer's protected server and its authorization server: each cell starts
/// with no tokens, so it is the whole flow (401, protected resource and authorization server
/// metadata, dynamic registration, PKCE S256 with `resource`, token, the `echo` call). First
/// negotiating, then pinned to each of `revisions` over Streamable HTTP, then over HTTP+SSE.
fn oauth_server_cells(
    mcp: &Path,
    (program, script, prefix): (&Path, &str, &Path),
    peer: &'static str,
    revisions: &[&str],
) -> Result<Vec<Cell>> {
    let server = PeerServer::start(program, script, prefix)?;
    let mut cells = Vec::new();
    let legs = std::iter::once((None, "Streamable HTTP"))
        .chain(revisions.iter().map(|r| (Some(*r), "Streamable HTTP")))
        .chain(std::iter::once((None, "HTTP+SSE")));
    for (n, (pinned, transport)) in legs.enumerate() {
        let tokens = prefix.join(format!("tokens-{script}-{n}.json"));
        let _ = std::fs::remove_file(&tokens);
        let sse = transport == "HTTP+SSE";
        let url = format!("{}{}", server.base, if sse { "/sse" } else { "/mcp" });
        let mut command = Command::new(mcp);
        command
            .args([
                "call",
                &url,
                "echo",
                "text=interop-oauth",
                "--auth-follow-redirect",
            ])
            .arg("--token-file")
            .arg(&tokens)
            .args(["--timeout", "30", "--json"]);
        if let Some(revision) = pinned {
            command.args(["--revision", revision]);
        }
        if sse {
            command.args(["--transport", "sse"]);
        }
        let (ok, stdout, stderr) = run_bounded(command, RUN_TIMEOUT)?;
        let ok = ok && stdout.contains("interop-oauth");
        let revision = match (pinned, sse) {
            (Some(revision), _) => revision.to_owned(),
            (None, true) => "2024-11-05".to_owned(),
            (None, false) if ok => {
                let mut discover = Command::new(mcp);
                discover
                    .args(["discover", &url, "--json", "--timeout", "30"])
                    .arg("--token-file")
                    .arg(&tokens);
                let (_, found, _) = run_bounded(discover, RUN_TIMEOUT)?;
                let negotiated = serde_json::from_str::<serde_json::Value>(&found)
                    .ok()
                    .and_then(|v| v["negotiated"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "?".into());
                format!("{negotiated} (negotiated)")
            }
            (None, false) => "? (negotiated)".to_owned(),
        };
        // The defect only explains the refusal it causes.
        let defect = (sse && (ok || stderr.contains("the protected resource metadata is for")))
            .then_some(SDK_SSE_RESOURCE_IS_MCP);
        let _ = std::fs::remove_file(&tokens);
        cells.push(Cell {
            peer,
            direction: OAUTH_SERVER_DIRECTION,
            revision,
            transport,
            elicitation: "none",
            ok,
            defect,
            detail: if ok {
                stdout.trim().to_owned()
            } else {
                stderr.trim().to_owned()
            },
        });
    }
    Ok(cells)
}

/// `mcp-demo --auth --auth-auto-approve` on a free port of 127.0.0.1; killed when dropped.
struct AuthDemo {
    child: Child,
    /// Its MCP endpoint.
    url: String,
}

impl AuthDemo {
    fn start(binary: &Path) -> Result<Self> {
        let mut child = Command::new(binary)
            .args(["--addr", "127.0.0.1:0", "--auth", "--auth-auto-approve"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let stdout = child.stdout.take().context("the demo's stdout")?;
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        match (read, line.trim().strip_prefix("mcp-demo listening on ")) {
            (Ok(_), Some(base)) => Ok(Self {
                url: format!("{base}/mcp"),
                child,
            }),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("mcp-demo did not report its address (printed {line:?})")
            }
        }
    }
}

impl Drop for AuthDemo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn table(cells: &[Cell]) -> String {
    let mut out = String::from(
        "| peer | direction | revision | transport | elicitation | result |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    let defects = defects(cells);
    for c in cells {
        let result = match (c.ok, c.defect) {
            (true, None) => "pass".to_owned(),
            (false, None) => "FAIL".to_owned(),
            (false, Some(defect)) => format!(
                "fails: {} {}",
                defect_kind(defect),
                note_number(&defects, defect)
            ),
            (true, Some(defect)) => format!(
                "pass ({} {} not seen)",
                defect_kind(defect),
                note_number(&defects, defect)
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {result} |",
            c.peer, c.direction, c.revision, c.transport, c.elicitation,
        );
    }
    out
}

/// What a defect is called in the matrix: ours (a known defect of our side, see
/// [`OUR_DEFECTS`]) or the peer's.
fn defect_kind(defect: &str) -> &'static str {
    if OUR_DEFECTS.contains(&defect) {
        "our defect"
    } else {
        "peer defect"
    }
}

/// The defects (peer's or ours) the cells name, each once, in order of first appearance.
fn defects(cells: &[Cell]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for defect in cells.iter().filter_map(|c| c.defect) {
        if !out.contains(&defect) {
            out.push(defect);
        }
    }
    out
}

/// The note number (from 1) of `defect` in `defects`.
fn note_number(defects: &[&str], defect: &str) -> usize {
    defects
        .iter()
        .position(|d| *d == defect)
        .map_or(0, |i| i + 1)
}

/// The notes under the matrix: the peer defects cells are marked with, and how asking works on
/// the revisions without elicitation.
fn notes(cells: &[Cell]) -> String {
    let mut out = String::from("## Notes\n\n");
    for (i, defect) in defects(cells).iter().enumerate() {
        let kind = if OUR_DEFECTS.contains(defect) {
            "Our defect"
        } else {
            "Peer defect"
        };
        let _ = writeln!(out, "- {kind} {}: {defect}", i + 1);
    }
    out.push_str(
        "- 2025-03-26 and 2024-11-05 have no elicitation in the spec. Our server and \
         aiohttp-tiny-mcp both ask there through a result that tells the caller to call the tool \
         again with `mcpAnswers`/`mcpState` arguments, each under its own `_meta` key \
         (`rs.mcp-adapters/inputRequired`, `dev.aiohttp-tiny-mcp/inputRequired`), so neither \
         client recognises the other's questions: an application (or a model reading the \
         result's text) answers them. Those legs are `none`.\n",
    );
    if cells.iter().any(|c| c.direction == CONSOLE_DIRECTION) {
        out.push_str(
            "- Rows `mcp console (its API) → peer server`: `mcp console --no-open` runs as a \
             user starts it, and the run drives it through the JSON API its page calls (with \
             the console's token): `connect` (negotiating, then pinned), `list` of the tools, \
             `call` of the peer's tools (on the rmcp server `slow_compute` runs as a task the \
             console follows), `disconnect`. The page itself is driven in a real Chromium by \
             `mcp-cli/tests/it/browser.rs` against our demo and the conformance target.\n",
        );
    }
    if cells.iter().any(|c| c.direction == TASKS_DIRECTION) {
        out.push_str(
            "- Rows `our client → server, Tasks extension`: `tasks-interop` (package \
             `mcp-conformance-peers`) connects on 2026-07-28 with the library's task support \
             (`ClientBuilder::tasks`) and drives each fixture of the suite's `tasks-*` \
             scenarios: `greet` (no task), `slow_compute` (a task followed to its result), \
             `failing_job` (a task ending in a tool error), `protocol_error_job` (a failed \
             task: `ErrorKind::Task` with its error), `confirm_delete` and `multi_input` \
             (questions inside the task answered through `on_ask` and `tasks/update`), \
             `test_tool_with_task` (a question on the call itself, then a task), and `cancel` \
             (`tasks/cancel` through the handle; the task ends `cancelled`). The rmcp server \
             is `interop/rmcp-tasks-peer` (rmcp's own `TaskManager`), built outside the \
             workspace.\n",
        );
    }
    if cells.iter().any(|c| c.direction == OAUTH_SERVER_DIRECTION) {
        out.push_str(
            "- Rows `our client (mcp) → peer server with OAuth` (`interop/*-oauth-server.*`): the \
             peer's own OAuth support (the Python SDK's `auth_server_provider` routes and bearer \
             middleware; the TypeScript SDK v1's `mcpAuthRouter` and `requireBearerAuth`) as \
             resource server and authorization server on one address, over an in-memory \
             provider in the peer script that approves at once. Our `mcp call URL echo \
             --auth-follow-redirect` starts each row with no tokens: the 401, the protected \
             resource metadata, the authorization server metadata, dynamic registration, \
             authorization with PKCE S256 and `resource`, the token request \
             (`client_secret_basic` as registered), then the call with the token.\n",
        );
    }
    if cells.iter().any(|c| c.direction == OAUTH_DIRECTION) {
        out.push_str(
            "- OAuth rows (`interop/*-oauth-client.*`): the peer client, with its SDK's own OAuth \
             client (the TypeScript `OAuthClientProvider` with `finishAuth`, the Python \
             `OAuthClientProvider` httpx2 auth), runs against `mcp-demo --auth \
             --auth-auto-approve` (our resource server and development authorization server on \
             one address). Its browser fetches the authorization URL without following the \
             redirect and hands the redirect's `code` (and `state`, `iss`) back to the SDK. A row \
             passes when the client got a 401, read the protected resource and authorization \
             server metadata, registered dynamically, authorized with PKCE S256 and a `resource`, \
             took a token, listed the tools, called `add` (needs `mcp:read`), then called \
             `deploy` (needs `mcp:deploy`): 403 `insufficient_scope`, a second authorization with \
             `mcp:read mcp:deploy`, and the retried call answered `deployed web` after its \
             confirmation was accepted (the `accept` column); the TypeScript v1 rows with `none` \
             stop after `add`, without the step-up. The HTTP+SSE rows run the same steps over \
             `/sse` (their revision is `unknown` while they stop before connecting).\n",
        );
    }
    if cells.iter().any(|c| c.peer == "aiohttp-tiny-mcp client") {
        out.push_str(
            "- The aiohttp-tiny-mcp client does not negotiate (it is given one revision) and has \
             no HTTP+SSE transport, so it runs pinned to each revision over Streamable HTTP \
             only.\n",
        );
    }
    out
}

/// Installs the peers into `prefix` unless they are there at the pinned versions; returns the
/// Node 22 binary.
fn install(prefix: &Path) -> Result<PathBuf> {
    let pinned = |prefix: &Path| {
        conformance::installed_version(prefix, NODE)
            .is_some_and(|v| v.split('.').next() == Some(NODE_MAJOR))
            && conformance::installed_version(prefix, TS_V1).as_deref() == Some(TS_V1_VERSION)
            && conformance::installed_version(prefix, TS_V2_CLIENT).as_deref()
                == Some(TS_V2_VERSION)
            && conformance::installed_version(prefix, TS_V2_SERVER).as_deref()
                == Some(TS_V2_VERSION)
            && conformance::installed_version(prefix, TS_V2_NODE).as_deref()
                == Some(TS_V2_NODE_VERSION)
            && conformance::installed_version(prefix, ZOD)
                .is_some_and(|v| v.split('.').next() == Some(ZOD_MAJOR))
    };
    if !pinned(prefix) {
        std::fs::create_dir_all(prefix)?;
        println!(
            "xtask interop: installing {TS_V1}@{TS_V1_VERSION} and {NODE}@{NODE_MAJOR} into {}",
            prefix.display()
        );
        let status = Command::new("npm")
            .arg("install")
            .arg("--prefix")
            .arg(prefix)
            .args([
                "--no-audit",
                "--no-fund",
                "--save-exact",
                "--loglevel=error",
            ])
            .arg(format!("{NODE}@{NODE_MAJOR}"))
            .arg(format!("{TS_V1}@{TS_V1_VERSION}"))
            .arg(format!("{TS_V2_CLIENT}@{TS_V2_VERSION}"))
            .arg(format!("{TS_V2_SERVER}@{TS_V2_VERSION}"))
            .arg(format!("{TS_V2_NODE}@{TS_V2_NODE_VERSION}"))
            .arg(format!("{ZOD}@{ZOD_MAJOR}"))
            .status()
            .context("running npm (is Node.js installed?)")?;
        if !status.success() {
            bail!("npm install failed ({status})");
        }
        if !pinned(prefix) {
            bail!("npm install finished but the pinned versions are not in place");
        }
    }
    let node = prefix
        .join("node_modules")
        .join(NODE)
        .join("bin")
        .join("node");
    if !node.exists() {
        bail!("{} is missing", node.display());
    }
    Ok(node)
}

/// The cells of a dual-era peer client (`script`, run by `program`) against our server at `url`:
/// every mode of [`DUAL_ERA_MODES`], accepting and declining an elicitation.
fn mode_cells(
    program: &Path,
    script: &str,
    peer: &'static str,
    url: &str,
    prefix: &Path,
) -> Result<Vec<Cell>> {
    let sse = format!("{}/sse", url.trim_end_matches("/mcp"));
    let mut cells = Vec::new();
    for (mode, transport) in DUAL_ERA_MODES {
        let (kind, url) = if transport == "HTTP+SSE" {
            ("sse", sse.as_str())
        } else {
            ("streamable", url)
        };
        for answer in ["accept", "decline"] {
            cells.push(client_cell(
                (program, script, prefix),
                [url, kind, answer, mode],
                peer,
                transport,
                answer,
                |negotiated| format!("{negotiated} (mode {mode})"),
            )?);
        }
    }
    Ok(cells)
}

/// A known defect of a peer on one leg: given the transport, the revision our client is pinned
/// to (`None`: negotiating) and the elicitation answer, the defect that makes the cell fail.
type DefectOf = fn(&str, Option<&str>, &str) -> Option<&'static str>;

/// The cells of our client against a dual-era peer server (`script`, run by `program` in the
/// cache `prefix`): negotiating, then pinned to each older revision, with the elicitation
/// answers `answers_for` gives for that transport and pin, on each of `transports` (name, path).
fn pinned_cells(
    (program, script, prefix): (&Path, &str, &Path),
    peer: &'static str,
    client: &Path,
    answers_for: fn(&str, Option<&str>) -> &'static [&'static str],
    transports: &[(&'static str, &str)],
    defect: DefectOf,
) -> Result<Vec<Cell>> {
    let server = PeerServer::start(program, script, prefix)?;
    let mut cells = Vec::new();
    for &(transport, path) in transports {
        for pinned in DUAL_ERA_SERVER_REVISIONS {
            // HTTP+SSE carries the revisions with a handshake only: no negotiation to 2026-07-28.
            if transport == "HTTP+SSE" && pinned.is_none() {
                continue;
            }
            cells.extend(pinned_cell(
                client,
                &server.base,
                (peer, transport, path),
                pinned,
                answers_for(transport, pinned),
                defect,
            )?);
        }
    }
    Ok(cells)
}

/// The cells of our client pinned to `pinned` (or negotiating) against `base` + `path`.
fn pinned_cell(
    client: &Path,
    base: &str,
    (peer, transport, path): (&'static str, &'static str, &str),
    pinned: Option<&str>,
    answers: &[&'static str],
    defect: DefectOf,
) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    for &answer in answers {
        let mut command = Command::new(client);
        command
            .arg(format!("{base}{path}"))
            .env("MCP_CONFORMANCE_SCENARIO", format!("interop-{answer}"));
        match pinned {
            Some(revision) => command.env("MCP_CONFORMANCE_PROTOCOL_VERSION", revision),
            None => command.env_remove("MCP_CONFORMANCE_PROTOCOL_VERSION"),
        };
        let (ok, stdout, stderr) = run_bounded(command, RUN_TIMEOUT)?;
        let negotiated = stdout
            .lines()
            .find_map(|l| l.strip_prefix("revision "))
            .unwrap_or("?");
        cells.push(Cell {
            peer,
            direction: "our client → peer server",
            revision: match pinned {
                Some(revision) => revision_cell(revision, negotiated),
                None => format!("{negotiated} (negotiated)"),
            },
            transport,
            elicitation: answer,
            ok,
            defect: defect(transport, pinned, answer),
            detail: if ok {
                stdout.trim().to_owned()
            } else {
                stderr.trim().to_owned()
            },
        });
    }
    Ok(cells)
}

/// Whether the interpreter `python` (of a virtual environment) has `package` at `version`.
pub(crate) fn venv_has(python: &Path, package: &str, version: &str) -> bool {
    Command::new(python)
        .arg("-c")
        .arg(format!(
            "import importlib.metadata as m; print(m.version({package:?}))"
        ))
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == version)
}

/// Makes a virtual environment with `package`=`version` in `prefix/dir` unless it is there;
/// returns its interpreter.
pub(crate) fn install_venv(
    prefix: &Path,
    dir: &str,
    package: &str,
    version: &str,
) -> Result<PathBuf> {
    let venv = prefix.join(dir);
    let python = venv.join("bin").join("python");
    let installed = || venv_has(&python, package, version);
    if installed() {
        return Ok(python);
    }
    println!(
        "xtask: installing {package}=={version} into {}",
        venv.display()
    );
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .context("running python3 -m venv")?;
    if !status.success() {
        bail!("python3 -m venv failed ({status})");
    }
    let status = Command::new(venv.join("bin").join("pip"))
        .args(["install", "--quiet", &format!("{package}=={version}")])
        .status()
        .context("running pip")?;
    if !status.success() || !installed() {
        bail!("pip could not install {package}=={version}");
    }
    Ok(python)
}

/// Builds the tests crate's `mcp-conformance` checker; returns the binary.
fn build_checker() -> Result<PathBuf> {
    build_binary("mcp-tests", "mcp-conformance")
}

/// The binary `bin` of `package`, from the shared debug build (`crate::build::debug_binary`).
fn build_binary(_package: &str, bin: &str) -> Result<PathBuf> {
    crate::build::debug_binary(bin)
}

/// What is known about a difference `mcp-conformance` reports against aiohttp-tiny-mcp: a
/// fragment of the failed check's line, and what the difference is (checked against the
/// revision's text and `schema.json`).
const TINY_DIFFERENCES: &[(&str, &str)] = &[
    (
        "no MCP-Protocol-Version header: every message is valid",
        "The peer's -32020 reply has `\"id\": null` although the request had an id: it \
         renders every failure found before dispatch (header checks included) with a null id. \
         The 2026-07-28 `JSONRPCErrorResponse` allows the id to be omitted, never null (its \
         `RequestId` is a string or an integer), and the request's id was known. The status and \
         code are right (their own checks pass).",
    ),
    (
        "unsupported version: every message is valid",
        "The same null id, on the -32022 reply to an unsupported `_meta` protocol version; its \
         status, code and `data` are right.",
    ),
    (
        "request without _meta: 400 + -32602",
        "A 2026-07-28 request whose `params` lack `_meta` is malformed and the revision says \
         -32602 (Invalid params) with 400; the peer answers 400 with -32600 (Invalid Request), \
         again with a null id.",
    ),
    (
        "a notification gets 202 Accepted",
        "The checker POSTs `notifications/cancelled` with `MCP-Protocol-Version: 2026-07-28` \
         and no `_meta`. A notification's `_meta` is optional on 2026-07-28 \
         (`NotificationParams._meta` is a `NotificationMetaObject` with no required key; only \
         requests must carry `io.modelcontextprotocol/protocolVersion`), so the notification is \
         valid and the transport says an accepted notification gets 202 without a body; the \
         peer applies the request rule to notifications and answers 400 + -32600 \"missing \
         protocol version in request _meta\".",
    ),
];

/// One run of `mcp-conformance` against a peer server.
struct Checked {
    /// The checker ended by itself and printed its closing line.
    completed: bool,
    /// The closing `N passed, M failed` line.
    total: String,
    /// The `FAIL` lines.
    failed: Vec<String>,
    /// What went wrong when it did not complete.
    detail: String,
}

/// Runs `mcp-conformance` against the peer server at `base` (`/mcp` and `/sse`).
fn run_checker(checker: &Path, base: &str) -> Result<Checked> {
    let mut command = Command::new(checker);
    command
        .arg("--url")
        .arg(format!("{base}/mcp"))
        .arg("--sse-url")
        .arg(format!("{base}/sse"));
    let (_, stdout, stderr) = run_bounded(command, CHECKER_TIMEOUT)?;
    Ok(checked(&stdout, &stderr))
}

/// Reads the checker's output: it completed when it printed its closing line and did not panic.
fn checked(stdout: &str, stderr: &str) -> Checked {
    let total = stdout
        .lines()
        .rev()
        .find(|l| l.ends_with(" failed") && l.contains(" passed, "))
        .unwrap_or_default()
        .to_owned();
    let panicked = stderr.contains("panicked");
    Checked {
        completed: !total.is_empty() && !panicked,
        total,
        failed: stdout
            .lines()
            .filter(|l| l.starts_with("FAIL "))
            .map(str::to_owned)
            .collect(),
        detail: stderr.trim().to_owned(),
    }
}

impl Checked {
    /// The section of `docs/interop.md`: the totals, each failed check and what it is.
    fn markdown(&self) -> String {
        let mut out = format!(
            "\n## mcp-conformance against {TINY} {TINY_VERSION}\n\n`mcp-conformance --url \
             .../mcp --sse-url .../sse` (the tests crate's checker) against \
             `interop/tiny-server.py`: `{}`.\n",
            if self.completed {
                self.total.as_str()
            } else {
                "did not complete"
            }
        );
        if self.failed.is_empty() {
            return out;
        }
        out.push_str(
            "\nThe failed checks are the peer's differences from the spec, each with what it \
             is:\n\n",
        );
        for line in &self.failed {
            let what = TINY_DIFFERENCES
                .iter()
                .find(|(fragment, _)| line.contains(fragment))
                .map_or("not explained yet.", |(_, what)| what);
            let _ = writeln!(out, "- `{}`\n  {what}", line.trim_end().replace('`', "'"));
        }
        out
    }
}

/// Runs `command` to its end (killed after `timeout`); returns success, stdout, stderr.
fn run_bounded(mut command: Command, timeout: Duration) -> Result<(bool, String, String)> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting a peer")?;
    let mut stdout = child.stdout.take().context("stdout")?;
    let mut stderr = child.stderr.take().context("stderr")?;
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = out.join().unwrap_or_default();
    let mut stderr = err.join().unwrap_or_default();
    if status.is_none() {
        stderr.push_str(&format!("\n(killed after {timeout:?})"));
    }
    Ok((status.is_some_and(|s| s.success()), stdout, stderr))
}

/// A peer server script; killed when dropped.
struct PeerServer {
    child: Child,
    base: String,
}

impl PeerServer {
    fn start(program: &Path, script: &str, prefix: &Path) -> Result<Self> {
        let mut command = Command::new(program);
        // A binary peer has no script.
        if !script.is_empty() {
            command.arg(script);
        }
        let mut child = command
            .current_dir(prefix)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting the peer server {script}"))?;
        let stdout = child.stdout.take().context("the peer server's stdout")?;
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line);
        match (read, line.trim().strip_prefix("listening on ")) {
            (Ok(_), Some(base)) => Ok(Self {
                base: base.to_owned(),
                child,
            }),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the peer server did not report its address (printed {line:?})")
            }
        }
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elicitation_is_tried_only_where_it_exists() {
        assert_eq!(answers("2024-11-05"), ["none"]);
        assert_eq!(answers("2025-03-26"), ["none"]);
        assert_eq!(answers("2025-06-18"), ["accept", "decline"]);
        assert_eq!(answers("2025-11-25"), ["accept", "decline"]);
    }

    #[test]
    fn the_table_shows_each_cell_and_a_negotiated_revision() {
        let cell = |ok| Cell {
            peer: "p",
            direction: "d",
            revision: revision_cell("2025-06-18", if ok { "2025-06-18" } else { "2025-03-26" }),
            transport: "HTTP+SSE",
            elicitation: "accept",
            ok,
            defect: None,
            detail: String::new(),
        };
        let table = table(&[cell(true), cell(false)]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[2],
            "| p | d | 2025-06-18 | HTTP+SSE | accept | pass |"
        );
        assert_eq!(
            lines[3],
            "| p | d | 2025-06-18 (negotiated 2025-03-26) | HTTP+SSE | accept | FAIL |"
        );
    }

    #[test]
    fn a_peer_defect_is_shown_with_its_note_and_only_an_unexpected_outcome_counts() {
        let cell = |ok, defect| Cell {
            peer: "p",
            direction: "d",
            revision: "2025-11-25".into(),
            transport: "HTTP+SSE",
            elicitation: "decline",
            ok,
            defect,
            detail: String::new(),
        };
        let cells = [
            cell(true, None),
            cell(false, Some("it forgets")),
            cell(true, Some("it forgets")),
            cell(false, None),
        ];
        let expected: Vec<bool> = cells.iter().map(Cell::expected).collect();
        assert_eq!(expected, [true, true, false, false]);
        let table = table(&cells);
        let results: Vec<&str> = table
            .lines()
            .skip(2)
            .map(|l| l.rsplit(" | ").next().unwrap_or_default())
            .collect();
        assert_eq!(
            results,
            [
                "pass |",
                "fails: peer defect 1 |",
                "pass (peer defect 1 not seen) |",
                "FAIL |"
            ]
        );
        assert!(notes(&cells).contains("- Peer defect 1: it forgets\n"));
    }

    #[test]
    fn the_tiny_server_defect_covers_asking_over_http_sse_only() {
        for pinned in ["2025-06-18", "2025-11-25"] {
            for answer in ["accept", "decline"] {
                assert!(tiny_server_defect("HTTP+SSE", Some(pinned), answer).is_some());
                assert!(tiny_server_defect("Streamable HTTP", Some(pinned), answer).is_none());
            }
        }
        assert!(tiny_server_defect("HTTP+SSE", Some("2024-11-05"), "none").is_none());
        assert!(tiny_server_defect("HTTP+SSE", Some("2025-11-25"), "none").is_none());
        assert_eq!(
            tiny_server_answers("HTTP+SSE", Some("2025-06-18")),
            ["none", "accept", "decline"]
        );
        assert_eq!(
            tiny_server_answers("Streamable HTTP", Some("2025-06-18")),
            ["accept", "decline"]
        );
        assert_eq!(
            tiny_server_answers("HTTP+SSE", Some("2024-11-05")),
            ["none"]
        );
        assert!(tiny_server_defect("Streamable HTTP", None, "accept").is_none());
    }

    #[test]
    fn the_checker_completes_with_its_closing_line_and_lists_its_failures() {
        let stdout = "PASS 2025-11-25 initialize\nFAIL 2026-07-28 GET: 200\n1 passed, 1 failed\n";
        let done = checked(stdout, "");
        assert!(done.completed);
        assert_eq!(done.total, "1 passed, 1 failed");
        assert_eq!(done.failed, ["FAIL 2026-07-28 GET: 200"]);
        assert!(done.markdown().contains("`1 passed, 1 failed`"));
        assert!(done.markdown().contains("- `FAIL 2026-07-28 GET: 200`"));
        let crashed = checked("PASS x\n", "thread 'main' panicked at src/lib.rs");
        assert!(!crashed.completed);
        assert!(crashed.markdown().contains("did not complete"));
        assert!(!checked(stdout, "thread 'main' panicked").completed);
    }
}
