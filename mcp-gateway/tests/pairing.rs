//! The gateway between our server (upstream) and our client (downstream), on real sockets on
//! 127.0.0.1: every downstream revision and transport against an upstream on every revision
//! and transport, for listing, a call with progress, a tool error, an upstream question
//! answered downstream, a resource, a template, a prompt, a completion, a list change, a
//! resource subscription and a cancellation.
//!
//! One test per upstream cell runs every downstream cell; the cells that cannot work are in
//! the tables as [`Cell::Impossible`] with their reason, and the test checks that they are
//! refused rather than skipping them silently.

mod support;

use support::serve;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use mcp_client::{
    Answer, Asks, CallOptions, Client, ErrorObject, LogLevel, Progress, QuestionKind, Revision,
    Subscriptions,
};
use mcp_gateway::{Gateway, QuestionRelay};
use mcp_server::http::{HttpConfig, HttpEndpoint};
use mcp_server::{
    Completer, CompletionRef, Exchange, Json, Prompt, Question, Resource, ResourceRequest,
    ResourceTemplate, Server, Tool, ToolError,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// How long any one step may take before the test fails (a bound, not a synchronisation).
const STEP: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Streamable,
    Sse,
}

/// One side of the gateway: a transport and a revision.
#[derive(Clone, Copy, Debug)]
enum Cell {
    Works(Transport, Revision),
    /// A pairing that cannot exist, and why.
    Impossible(Transport, Revision, &'static str),
}

/// Every downstream cell: Streamable HTTP on every revision, HTTP+SSE on every revision that
/// has a handshake.
const DOWNSTREAM: [Cell; 10] = [
    Cell::Works(Transport::Streamable, Revision::V2026_07_28),
    Cell::Works(Transport::Streamable, Revision::V2025_11_25),
    Cell::Works(Transport::Streamable, Revision::V2025_06_18),
    Cell::Works(Transport::Streamable, Revision::V2025_03_26),
    Cell::Works(Transport::Streamable, Revision::V2024_11_05),
    Cell::Impossible(
        Transport::Sse,
        Revision::V2026_07_28,
        "HTTP+SSE carries only the revisions with an initialize handshake; 2026-07-28 has none",
    ),
    Cell::Works(Transport::Sse, Revision::V2025_11_25),
    Cell::Works(Transport::Sse, Revision::V2025_06_18),
    Cell::Works(Transport::Sse, Revision::V2025_03_26),
    Cell::Works(Transport::Sse, Revision::V2024_11_05),
];

// ---- the upstream: our own server, one per cell (the list-change step changes it) ----

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

async fn add(args: AddArgs) -> Json<Sum> {
    Json(Sum {
        sum: args.a + args.b,
    })
}

async fn steps(ex: Exchange) -> String {
    ex.log(LogLevel::Info, "stepping");
    ex.progress(1.0, Some(2.0), Some("half"));
    ex.progress(2.0, Some(2.0), Some("all"));
    "done".into()
}

async fn fail() -> Result<String, String> {
    Err("it broke".into())
}

/// Asks the user (elicitation) and reports the answer.
async fn confirm(ex: Exchange) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
    });
    let answer = ex
        .ask("sure", Question::elicit_with("Proceed?", schema))
        .await?;
    Ok(match answer.get("ok") {
        Some(ok) if answer.accepted() => format!("confirmed {ok}"),
        _ => "declined".to_owned(),
    })
}

/// Asks twice, keeping the first answer in its state (on MRTR the client sends only the
/// latest round's answers).
async fn two_rounds(ex: Exchange) -> Result<String, ToolError> {
    let remembered = ex.state().and_then(|s| s["first"].as_bool());
    let first = match remembered {
        Some(first) => first,
        None => {
            let answer = ex.ask("first", Question::elicit("First?")).await?;
            answer.accepted()
        }
    };
    ex.save_state(json!({"first": first}));
    let second = ex.ask("second", Question::elicit("Second?")).await?;
    Ok(format!("{first} {}", second.accepted()))
}

/// Needs sampling, which the downstream test client does not offer.
async fn needs_sampling(ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("sample", Question::sample("Say hi", 10)).await?;
    Ok(answer.content().to_string())
}

/// Announces a tool list change without changing the list.
async fn announce(notifier: mcp_server::Notifier) -> Result<String, ToolError> {
    notifier
        .tools_changed()
        .await
        .map_err(|e| ToolError::new(e.to_string()))?;
    Ok("announced".into())
}

/// A prompt that asks before it renders.
async fn careful(_: mcp_server::NoArgs, ex: Exchange) -> Result<String, mcp_server::PromptError> {
    let answer = ex.ask("go", Question::elicit("Render?")).await?;
    Ok(format!("rendered {}", answer.accepted()))
}

async fn late() -> String {
    "late".into()
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Whom to greet.
    name: String,
}

async fn greet(args: GreetArgs) -> String {
    format!("Please greet {}.", args.name)
}

async fn memo(_: ResourceRequest) -> String {
    "remember".into()
}

async fn item(request: ResourceRequest) -> String {
    format!("item {}", request.var("id").unwrap_or("?"))
}

/// What the upstream's `wait` tool reports: it started, and it ended (it ends only when
/// cancelled).
#[derive(Default)]
struct Signals {
    started: Notify,
    cancelled: Notify,
}

/// Reports the end of the upstream `wait` call, however it ends.
struct Ended(Arc<Signals>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.cancelled.notify_one();
    }
}

struct Upstream {
    server: Server,
    base: String,
    signals: Arc<Signals>,
}

async fn upstream() -> Upstream {
    let signals = Arc::new(Signals::default());
    let waiting = signals.clone();
    let wait = move |ex: Exchange| {
        let signals = waiting.clone();
        async move {
            // The server either wakes `cancelled()` or drops the handler: both end it here.
            let _ended = Ended(signals.clone());
            signals.started.notify_one();
            ex.cancelled().await;
            "cancelled".to_owned()
        }
    };
    let completer = Completer::new(|request: mcp_server::CompletionRequest| async move {
        match request.reference {
            CompletionRef::Prompt(_) => vec![format!("{}da", request.value)],
            _ => Vec::new(),
        }
    });
    let server = Server::builder("upstream", "1.0")
        .instructions("Add numbers.")
        .tool(Tool::new("add", add).title("Add").read_only())
        .tool(Tool::new("steps", steps))
        .tool(Tool::new("fail", fail))
        .tool(Tool::new("wait", wait))
        .tool(Tool::new("confirm", confirm))
        .resource(Resource::new("memo://one", "memo", memo).mime_type("text/plain"))
        .resource_template(ResourceTemplate::new("item://{id}", "item", item))
        .prompt(Prompt::new("greet", greet).description("A greeting."))
        .prompt(Prompt::new("careful", careful))
        .tool(Tool::new("two_rounds", two_rounds))
        .tool(Tool::new("needs_sampling", needs_sampling))
        .tool(Tool::new("announce", announce))
        .completion(completer)
        .build()
        .expect("the upstream builds");
    let base = serve(HttpEndpoint::new(server.clone(), HttpConfig::new())).await;
    Upstream {
        server,
        base,
        signals,
    }
}

/// The log messages a downstream client received (their `data`).
type Logs = Arc<std::sync::Mutex<Vec<Value>>>;

/// Connects on `revision` over `transport`, asking for log messages: the gateway's upstream
/// client with the relay, the downstream client answering every elicitation with
/// `{"ok": true}` and keeping the log messages in `logs`.
async fn connect(
    base: &str,
    transport: Transport,
    revision: Revision,
    relay: Option<&QuestionRelay>,
    logs: Option<&Logs>,
) -> Result<Client, String> {
    let builder = Client::builder()
        .revision(revision)
        .timeout(STEP)
        .client_info("gateway-test", "1.0")
        .log_level(LogLevel::Info);
    let builder = match relay {
        Some(relay) => relay.install(builder),
        // Only elicitation: on the argument convention the client is handed every question
        // the server puts, declared or not.
        None => builder.on_ask(Asks::none().elicitation(), |question| async move {
            match question.kind() {
                QuestionKind::Elicitation => Answer::accept(json!({"ok": true})),
                _ => Answer::error(ErrorObject::new(-32601, "only elicitation is answered")),
            }
        }),
    };
    let builder = match logs {
        Some(logs) => {
            let logs = logs.clone();
            builder.on_notification(move |n| {
                if n.method == "notifications/message" {
                    let data = n.params.as_ref().map(|p| p["data"].clone());
                    logs.lock().expect("lock").extend(data);
                }
            })
        }
        None => builder,
    };
    let connected = match transport {
        Transport::Streamable => builder.connect_http(&format!("{base}/mcp")).await,
        Transport::Sse => builder.connect_sse(&format!("{base}/sse")).await,
    };
    connected.map_err(|e| format!("connect {transport:?} {revision}: {e}"))
}

async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {STEP:?}"))
}

/// Questions outside tool calls (during `prompts/get`, `resources/read`) exist from this
/// revision; on 2025-03-26 and 2024-11-05 only a tool call can ask (the argument convention),
/// so the prompt that asks is checked only where both sides are at least this revision.
const ASKS_OUTSIDE_TOOLS: Revision = Revision::V2025_06_18;

/// Whether both revisions have a feature that arrived in `since`.
fn both_have(up: Revision, down: Revision, since: Revision) -> bool {
    let order = |r: Revision| Revision::ALL.iter().rev().position(|x| *x == r);
    order(up) >= order(since) && order(down) >= order(since)
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

/// Runs every downstream cell against a fresh upstream on `up`.
async fn pair_with_upstream(up: Cell) {
    let (up_transport, up_revision) = match up {
        Cell::Works(transport, revision) => (transport, revision),
        Cell::Impossible(transport, revision, why) => {
            let origin = upstream().await;
            let refused = connect(&origin.base, transport, revision, None, None).await;
            assert!(refused.is_err(), "{up:?} connected, but: {why}");
            return;
        }
    };
    for down in DOWNSTREAM {
        let origin = upstream().await;
        let relay = QuestionRelay::new();
        let client = connect(&origin.base, up_transport, up_revision, Some(&relay), None)
            .await
            .expect("the gateway reaches the upstream");
        let gateway = Arc::new(
            Gateway::builder()
                .question_relay(relay)
                .start(client)
                .await
                .expect("the gateway starts"),
        );
        assert_eq!(gateway.skipped(), Vec::new(), "every declaration is served");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let serving = gateway.clone();
        tokio::spawn(async move {
            serving
                .serve_http(listener, std::future::pending::<()>())
                .await
        });
        match down {
            Cell::Works(transport, revision) => {
                let logs = Logs::default();
                let client = connect(&base, transport, revision, None, Some(&logs))
                    .await
                    .unwrap_or_else(|e| panic!("up {up:?}: {e}"));
                check(&origin, &client, &logs, up_revision, revision)
                    .await
                    .unwrap_or_else(|e| panic!("up {up:?}, down {down:?}: {e}"));
                let _ = client.close().await;
            }
            Cell::Impossible(transport, revision, why) => {
                let refused = connect(&base, transport, revision, None, None).await;
                assert!(refused.is_err(), "down {down:?} connected, but: {why}");
            }
        }
    }
}

/// One downstream client through the gateway.
async fn check(
    origin: &Upstream,
    client: &Client,
    logs: &Logs,
    up: Revision,
    down: Revision,
) -> Result<(), String> {
    // Listing, with what the two revisions both carry.
    let tools = within("tools/list", client.list_tools())
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    let mut listed = names(&tools);
    listed.sort_unstable();
    let expected = [
        "add",
        "announce",
        "confirm",
        "fail",
        "needs_sampling",
        "steps",
        "two_rounds",
        "wait",
    ];
    if listed != expected {
        return Err(format!("tools/list: {listed:?}"));
    }
    let add = tools.iter().find(|t| t["name"] == "add").expect("listed");
    if add["inputSchema"]["properties"]["a"]["type"] != "integer" {
        return Err(format!("add's input schema: {}", add["inputSchema"]));
    }
    if both_have(up, down, Revision::V2025_03_26) && add["annotations"]["readOnlyHint"] != true {
        return Err(format!("add's annotations: {add}"));
    }
    if both_have(up, down, Revision::V2025_06_18) {
        if add["title"] != "Add" {
            return Err(format!("add's title: {add}"));
        }
        if add["outputSchema"]["properties"]["sum"]["type"] != "integer" {
            return Err(format!("add's output schema: {add}"));
        }
    }

    // A call, its structured output where both sides have it.
    let sum = within(
        "tools/call add",
        client.call_tool("add", json!({"a": 2, "b": 3})),
    )
    .await
    .map_err(|e| format!("tools/call add: {e}"))?;
    if !sum["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains('5'))
    {
        return Err(format!("add's result: {sum}"));
    }
    if both_have(up, down, Revision::V2025_06_18) && sum["structuredContent"] != json!({"sum": 5}) {
        return Err(format!("add's structured result: {sum}"));
    }

    // A call with progress: the upstream's progress reaches the downstream caller.
    let seen = Arc::new(std::sync::Mutex::new(Vec::<Progress>::new()));
    let into = seen.clone();
    let options = CallOptions::new().on_progress(move |p| into.lock().expect("lock").push(p));
    let done = within(
        "tools/call steps",
        client.call_tool_with("steps", json!({}), options),
    )
    .await
    .map_err(|e| format!("tools/call steps: {e}"))?;
    if done["content"][0]["text"] != "done" {
        return Err(format!("steps' result: {done}"));
    }
    let progress = seen.lock().expect("lock").clone();
    if progress.is_empty() || progress.iter().any(|p| p.total != Some(2.0)) {
        return Err(format!("steps' progress: {progress:?}"));
    }
    // Its log message too, before its result.
    let logged = logs.lock().expect("lock").clone();
    if !logged.contains(&json!("stepping")) {
        return Err(format!("steps' log messages: {logged:?}"));
    }

    // A tool error stays a tool error.
    let failed = within("tools/call fail", client.call_tool("fail", json!({})))
        .await
        .map_err(|e| format!("tools/call fail: {e}"))?;
    if failed["isError"] != true || failed["content"][0]["text"] != "it broke" {
        return Err(format!("fail's result: {failed}"));
    }

    // An upstream question reaches the downstream client, and its answer goes back.
    let confirmed = within("tools/call confirm", client.call_tool("confirm", json!({})))
        .await
        .map_err(|e| format!("tools/call confirm: {e}"))?;
    if confirmed["content"][0]["text"] != "confirmed true" {
        return Err(format!("confirm's result: {confirmed}"));
    }

    // Two rounds of questions: the first answer is not lost on the way.
    let twice = within(
        "tools/call two_rounds",
        client.call_tool("two_rounds", json!({})),
    )
    .await
    .map_err(|e| format!("tools/call two_rounds: {e}"))?;
    if twice["content"][0]["text"] != "true true" {
        return Err(format!("two_rounds' result: {twice}"));
    }

    // A question the downstream client cannot answer fails the call, never reaching a user;
    // where both sides take capabilities per request it is the revision's own -32021.
    let refused = within(
        "tools/call needs_sampling",
        client.call_tool("needs_sampling", json!({})),
    )
    .await;
    match refused {
        Ok(result) if result["isError"] == true => {}
        Ok(result) => return Err(format!("needs_sampling answered: {result}")),
        Err(e) => {
            let per_request = Revision::V2026_07_28;
            if up == per_request && down == per_request && e.code() != Some(-32021) {
                return Err(format!("needs_sampling: {e}, not -32021"));
            }
        }
    }

    // A question during prompts/get, where both revisions can ask outside tool calls.
    if both_have(up, down, ASKS_OUTSIDE_TOOLS) {
        let prompt = within(
            "prompts/get careful",
            client.get_prompt("careful", json!({})),
        )
        .await
        .map_err(|e| format!("prompts/get careful: {e}"))?;
        if prompt["messages"][0]["content"]["text"] != "rendered true" {
            return Err(format!("prompts/get careful: {prompt}"));
        }
    }

    // Resources, templates, prompts, completions.
    let read = within("resources/read", client.read_resource("memo://one"))
        .await
        .map_err(|e| format!("resources/read: {e}"))?;
    if read["contents"][0]["text"] != "remember" {
        return Err(format!("resources/read: {read}"));
    }
    let read = within("resources/read template", client.read_resource("item://7"))
        .await
        .map_err(|e| format!("resources/read item://7: {e}"))?;
    if read["contents"][0]["text"] != "item 7" {
        return Err(format!("resources/read item://7: {read}"));
    }
    let prompt = within(
        "prompts/get",
        client.get_prompt("greet", json!({"name": "Ada"})),
    )
    .await
    .map_err(|e| format!("prompts/get: {e}"))?;
    if prompt["messages"][0]["content"]["text"] != "Please greet Ada." {
        return Err(format!("prompts/get: {prompt}"));
    }
    let completion = within(
        "completion/complete",
        client.complete(
            json!({"type": "ref/prompt", "name": "greet"}),
            "name",
            "A",
            None,
        ),
    )
    .await
    .map_err(|e| format!("completion/complete: {e}"))?;
    if completion["completion"]["values"] != json!(["Ada"]) {
        return Err(format!("completion/complete: {completion}"));
    }

    // A list change upstream reaches the downstream listener, and the new tool is listed.
    let mut listener = within(
        "listen",
        client.listen(Subscriptions::new().tools_changed()),
    )
    .await
    .map_err(|e| format!("listen: {e}"))?;
    origin
        .server
        .add_tool(Tool::new("late", late))
        .await
        .map_err(|e| format!("add_tool upstream: {e}"))?;
    within("tools/list_changed", async {
        while let Some(notification) = listener.next().await {
            if notification.method == "notifications/tools/list_changed" {
                return Ok(());
            }
        }
        Err(format!("the listener ended: {:?}", listener.end()))
    })
    .await?;
    let tools = within("tools/list again", client.list_tools())
        .await
        .map_err(|e| format!("tools/list after the change: {e}"))?;
    if !names(&tools).contains(&"late") {
        return Err(format!("tools/list after the change: {:?}", names(&tools)));
    }
    drop(listener);

    // A list change the upstream announces without a visible difference is passed on.
    let mut listener = within(
        "listen",
        client.listen(Subscriptions::new().tools_changed()),
    )
    .await
    .map_err(|e| format!("listen: {e}"))?;
    within(
        "tools/call announce",
        client.call_tool("announce", json!({})),
    )
    .await
    .map_err(|e| format!("tools/call announce: {e}"))?;
    within("the announced tools/list_changed", async {
        while let Some(notification) = listener.next().await {
            if notification.method == "notifications/tools/list_changed" {
                return Ok(());
            }
        }
        Err(format!("the listener ended: {:?}", listener.end()))
    })
    .await?;
    drop(listener);

    // An upstream resource update reaches the downstream session subscribed to it.
    let mut listener = within(
        "listen to memo://one",
        client.listen(Subscriptions::new().resource("memo://one")),
    )
    .await
    .map_err(|e| format!("subscribing to memo://one: {e}"))?;
    origin
        .server
        .notifier()
        .resource_updated("memo://one")
        .await
        .map_err(|e| format!("publishing the update upstream: {e}"))?;
    within("resources/updated", async {
        while let Some(notification) = listener.next().await {
            if notification.method == "notifications/resources/updated" {
                let uri = notification.params.as_ref().and_then(|p| p.get("uri"));
                return match uri {
                    Some(uri) if uri == "memo://one" => Ok(()),
                    other => Err(format!("an update of {other:?}")),
                };
            }
        }
        Err(format!("the listener ended: {:?}", listener.end()))
    })
    .await?;
    drop(listener);

    // A resource added upstream later is served, and its updates reach its subscribers.
    let mut listener = within(
        "listen to the resource list",
        client.listen(Subscriptions::new().resources_changed()),
    )
    .await
    .map_err(|e| format!("listen: {e}"))?;
    origin
        .server
        .add_resource(Resource::new("memo://two", "memo two", memo))
        .await
        .map_err(|e| format!("add_resource upstream: {e}"))?;
    within("resources/list_changed", async {
        while let Some(notification) = listener.next().await {
            if notification.method == "notifications/resources/list_changed" {
                return Ok(());
            }
        }
        Err(format!("the listener ended: {:?}", listener.end()))
    })
    .await?;
    drop(listener);
    let mut listener = within(
        "listen to memo://two",
        client.listen(Subscriptions::new().resource("memo://two")),
    )
    .await
    .map_err(|e| format!("subscribing to memo://two: {e}"))?;
    origin
        .server
        .notifier()
        .resource_updated("memo://two")
        .await
        .map_err(|e| format!("publishing the update upstream: {e}"))?;
    within("resources/updated of memo://two", async {
        while let Some(notification) = listener.next().await {
            if notification.method == "notifications/resources/updated" {
                return Ok(());
            }
        }
        Err(format!("the listener ended: {:?}", listener.end()))
    })
    .await?;
    drop(listener);

    // A downstream cancellation cancels the upstream call.
    let caller = client.clone();
    let call = tokio::spawn(async move { caller.call_tool("wait", json!({})).await });
    within(
        "the upstream call starts",
        origin.signals.started.notified(),
    )
    .await;
    call.abort();
    within(
        "the upstream call is cancelled",
        origin.signals.cancelled.notified(),
    )
    .await;
    Ok(())
}

macro_rules! upstream_cells {
    ($($name:ident => $cell:expr,)+) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                pair_with_upstream($cell).await;
            }
        )+
    };
}

upstream_cells! {
    upstream_streamable_2026_07_28 => Cell::Works(Transport::Streamable, Revision::V2026_07_28),
    upstream_streamable_2025_11_25 => Cell::Works(Transport::Streamable, Revision::V2025_11_25),
    upstream_streamable_2025_06_18 => Cell::Works(Transport::Streamable, Revision::V2025_06_18),
    upstream_streamable_2025_03_26 => Cell::Works(Transport::Streamable, Revision::V2025_03_26),
    upstream_streamable_2024_11_05 => Cell::Works(Transport::Streamable, Revision::V2024_11_05),
    upstream_sse_2026_07_28 => Cell::Impossible(
        Transport::Sse,
        Revision::V2026_07_28,
        "HTTP+SSE carries only the revisions with an initialize handshake; 2026-07-28 has none",
    ),
    upstream_sse_2025_11_25 => Cell::Works(Transport::Sse, Revision::V2025_11_25),
    upstream_sse_2024_11_05 => Cell::Works(Transport::Sse, Revision::V2024_11_05),
}
