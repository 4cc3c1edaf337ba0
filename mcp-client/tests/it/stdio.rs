//! The client over stdio: against our own server (every revision and the negotiation from
//! both starting points, over in-memory pipes, with every message validated against the
//! official schema), and the transport against a real child process.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_adapters::AdapterSet;
use mcp_client::transport::{Delivery, Outbound, OutboundKind, Stderr, Stdio, Transport};
use mcp_client::{Answer, Asks, CallOptions, Client, ErrorKind, QuestionKind, Revision};
use mcp_server::{
    Completer, CompletionRequest, Exchange, NoArgs, Prompt, Question, Resource, ResourceRequest,
    Server, StdioConfig, Tool, ToolError, serve_stdio_with,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use support::{Recorded, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

async fn echo(args: EchoArgs) -> String {
    args.text
}

#[derive(Deserialize, JsonSchema)]
struct DeployArgs {
    service: String,
}

async fn deploy(args: DeployArgs, ex: Exchange) -> Result<String, ToolError> {
    let answer = ex
        .ask(
            "confirm",
            Question::elicit(format!("Deploy {}?", args.service)),
        )
        .await?;
    Ok(if answer.accepted() {
        format!("deployed {}", args.service)
    } else {
        format!("kept {}", args.service)
    })
}

async fn count(_: NoArgs, ex: Exchange) -> String {
    for i in 1..=3 {
        ex.progress(f64::from(i), Some(3.0), None);
    }
    "counted".into()
}

async fn boom(_: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::new("boom"))
}

/// Set when the `wait` tool's call is cancelled (its future dropped or told so).
struct Watch {
    cancelled: AtomicBool,
    notify: Notify,
}

static WATCH: Watch = Watch {
    cancelled: AtomicBool::new(false),
    notify: Notify::const_new(),
};

struct OnDrop;

impl Drop for OnDrop {
    fn drop(&mut self) {
        WATCH.cancelled.store(true, Ordering::SeqCst);
        WATCH.notify.notify_waiters();
    }
}

async fn wait(_: NoArgs, ex: Exchange) -> String {
    let _guard = OnDrop;
    ex.cancelled().await;
    "cancelled".into()
}

async fn config(_: ResourceRequest) -> String {
    "{}".into()
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    name: String,
}

async fn greet(args: GreetArgs) -> String {
    format!("greet {}", args.name)
}

async fn complete(request: CompletionRequest) -> Vec<String> {
    ["Alice", "Bob"]
        .iter()
        .filter(|n| n.starts_with(&request.value))
        .map(|n| (*n).to_owned())
        .collect()
}

fn server(revisions: AdapterSet) -> Server {
    Server::builder("stdio-test", "1")
        .tool(Tool::new("echo", echo))
        .tool(Tool::new("deploy", deploy))
        .tool(Tool::new("count", count))
        .tool(Tool::new("boom", boom))
        .tool(Tool::new("wait", wait))
        .resource(Resource::new("config://app", "config", config))
        .prompt(Prompt::new("greet", greet))
        .completion(Completer::new(complete))
        .revisions(revisions)
        .build()
        .unwrap()
}

/// Runs `server` on in-memory pipes and records every line the client writes.
fn pipes(server: Server) -> (Stdio, Arc<Mutex<Vec<Value>>>) {
    let (client_out, mut tee_in) = tokio::io::duplex(1 << 16);
    let (mut tee_out, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_in) = tokio::io::duplex(1 << 16);
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let sink = recorded.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        let mut line = Vec::new();
        while let Ok(n) = tee_in.read(&mut buf).await {
            if n == 0 {
                break;
            }
            for &b in &buf[..n] {
                if b == b'\n' {
                    sink.lock()
                        .unwrap()
                        .push(serde_json::from_slice(&line).unwrap());
                    line.clear();
                } else {
                    line.push(b);
                }
            }
            if tee_out.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    });
    tokio::spawn(serve_stdio_with(
        server,
        server_in,
        server_out,
        StdioConfig::new(),
    ));
    (Stdio::from_pipes(client_in, client_out, 1 << 20), recorded)
}

fn answering() -> mcp_client::ClientBuilder {
    Client::builder()
        .timeout(Duration::from_secs(10))
        .on_ask(Asks::all(), |q| async move {
            match q.kind() {
                QuestionKind::Roots => Answer::result(json!({"roots": []})),
                _ => Answer::accept(json!({})),
            }
        })
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn every_call_and_the_ask_on_every_revision() {
    for revision in Revision::ALL {
        let (transport, recorded) = pipes(server(AdapterSet::all()));
        let client = within(answering().revision(revision).connect(transport))
            .await
            .unwrap();
        assert_eq!(client.revision(), revision);
        let tools = within(client.list_tools()).await.unwrap();
        assert_eq!(tools.len(), 5, "{revision}");
        assert_eq!(
            text(
                &within(client.call_tool("echo", json!({"text": "hi"})))
                    .await
                    .unwrap()
            ),
            "hi"
        );
        let deployed = within(client.call_tool("deploy", json!({"service": "web"})))
            .await
            .unwrap();
        assert_eq!(text(&deployed), "deployed web", "{revision}: {deployed}");
        let failed = within(client.call_tool("boom", json!({}))).await.unwrap();
        assert_eq!(failed["isError"], true);
        let progress = Arc::new(Mutex::new(Vec::new()));
        let sink = progress.clone();
        let options =
            CallOptions::new().on_progress(move |p| sink.lock().unwrap().push(p.progress));
        within(client.call_tool_with("count", json!({}), options))
            .await
            .unwrap();
        assert_eq!(*progress.lock().unwrap(), vec![1.0, 2.0, 3.0], "{revision}");
        let read = within(client.read_resource("config://app")).await.unwrap();
        assert_eq!(read["contents"][0]["text"], "{}");
        let prompt = within(client.get_prompt("greet", json!({"name": "Ann"})))
            .await
            .unwrap();
        assert!(
            prompt["messages"][0]["content"]["text"]
                .as_str()
                .unwrap()
                .contains("greet Ann")
        );
        let done = within(client.complete(
            json!({"type": "ref/prompt", "name": "greet"}),
            "name",
            "A",
            None,
        ))
        .await
        .unwrap();
        assert_eq!(done["completion"]["values"], json!(["Alice"]));
        within(client.close()).await.unwrap();
        let recorded: Vec<Recorded> = recorded
            .lock()
            .unwrap()
            .iter()
            .map(|body| Recorded {
                revision: revision.as_str().into(),
                headers: Default::default(),
                body: body.clone(),
            })
            .collect();
        support::schema::validate(&recorded);
    }
}

#[tokio::test]
async fn negotiates_modern_and_falls_back_to_initialize() {
    let (transport, recorded) = pipes(server(AdapterSet::all()));
    let client = within(answering().connect(transport)).await.unwrap();
    assert_eq!(client.revision(), Revision::V2026_07_28);
    assert_eq!(recorded.lock().unwrap()[0]["method"], "server/discover");

    let legacy = AdapterSet::new([Revision::V2025_11_25, Revision::V2025_06_18]).unwrap();
    let (transport, recorded) = pipes(server(legacy));
    let client = within(answering().connect(transport)).await.unwrap();
    assert_eq!(client.revision(), Revision::V2025_11_25);
    let deployed = within(client.call_tool("deploy", json!({"service": "db"})))
        .await
        .unwrap();
    assert_eq!(text(&deployed), "deployed db");
    // Everything before the call's answer has gone through the recording pipe by now.
    let methods: Vec<Value> = recorded
        .lock()
        .unwrap()
        .iter()
        .map(|m| m["method"].clone())
        .collect();
    assert_eq!(
        methods[..3],
        [
            json!("server/discover"),
            json!("initialize"),
            json!("notifications/initialized")
        ]
    );
}

#[tokio::test]
async fn dropping_a_call_sends_cancelled_on_stdio() {
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        WATCH.cancelled.store(false, Ordering::SeqCst);
        let (transport, recorded) = pipes(server(AdapterSet::all()));
        let client = within(answering().revision(revision).connect(transport))
            .await
            .unwrap();
        let notified = WATCH.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let options = CallOptions::new().timeout(Duration::from_millis(200));
        let error = within(client.call_tool_with("wait", json!({}), options))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Timeout);
        within(notified).await;
        assert!(WATCH.cancelled.load(Ordering::SeqCst));
        let sent = recorded.lock().unwrap().clone();
        let cancel = sent
            .iter()
            .find(|m| m["method"] == "notifications/cancelled")
            .expect("cancelled sent");
        let call = sent.iter().find(|m| m["method"] == "tools/call").unwrap();
        assert_eq!(cancel["params"]["requestId"], call["id"], "{revision}");
    }
}

#[tokio::test]
async fn spawns_a_child_reads_its_lines_and_captures_stderr() {
    let script = r#"echo 'starting' >&2
printf '%s\n' 'not json at all' '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}'
read line
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'
cat >/dev/null
echo 'bye' >&2"#;
    let transport = Stdio::builder("sh")
        .arg("-c")
        .arg(script)
        .stderr(Stderr::Capture)
        .spawn()
        .unwrap();
    let mut stderr = transport.take_stderr().unwrap();
    let mut incoming = transport.incoming().unwrap();
    let outbound = Outbound::new(
        OutboundKind::Request(mcp_wire::jsonrpc::Id::Number(1)),
        bytes::Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
        Default::default(),
    );
    let Delivery::Stream(mut stream) = within(transport.send(outbound)).await.unwrap() else {
        panic!("a request gets a stream")
    };
    use futures::StreamExt;
    // The notification came first; the response is handed over once the incoming stream's
    // reader polled past it, so the incoming stream is polled while waiting for it.
    let note = within(incoming.next()).await.unwrap().unwrap();
    let response = within(async {
        tokio::select! {
            response = stream.next() => response,
            other = incoming.next() => panic!("unexpected incoming {other:?}"),
        }
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        response.message.id(),
        Some(&mcp_wire::jsonrpc::Id::Number(1))
    );
    assert_eq!(note.message.method(), Some("notifications/message"));
    within(transport.close()).await.unwrap();
    let mut err = String::new();
    within(stderr.read_to_string(&mut err)).await.unwrap();
    assert_eq!(err, "starting\nbye\n");
}

#[tokio::test]
async fn a_child_that_exits_fails_waiting_calls() {
    let transport = Stdio::builder("sh")
        .arg("-c")
        .arg("read line; exit 3")
        .stderr(Stderr::Null)
        .spawn()
        .unwrap();
    let client = Client::builder()
        .timeout(Duration::from_secs(10))
        .revision(Revision::V2025_06_18)
        .connect(transport);
    let error = within(client).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Closed | ErrorKind::Transport),
        "{error:?}"
    );
}

/// A legacy stdio server that ignores requests it does not know (no answer at all).
async fn silent_legacy_server(
    reader: tokio::io::DuplexStream,
    mut writer: tokio::io::DuplexStream,
) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(reader).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).unwrap();
        let reply = match message["method"].as_str() {
            Some("initialize") => json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}}),
            Some("tools/list") => {
                json!({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
            }
            _ => continue,
        };
        let mut bytes = serde_json::to_vec(&reply).unwrap();
        bytes.push(b'\n');
        writer.write_all(&bytes).await.unwrap();
    }
}

#[tokio::test]
async fn a_probe_the_server_ignores_falls_back_after_the_probe_timeout() {
    let (client_out, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_in) = tokio::io::duplex(1 << 16);
    tokio::spawn(silent_legacy_server(server_in, server_out));
    let transport = Stdio::from_pipes(client_in, client_out, 1 << 20);
    let client = Client::builder()
        .probe_timeout(Duration::from_millis(100))
        .timeout(Duration::from_secs(10))
        .connect(transport);
    let client = within(client).await.unwrap();
    assert_eq!(client.revision(), Revision::V2025_06_18);
    assert!(within(client.list_tools()).await.unwrap().is_empty());
}

#[tokio::test]
async fn bounded_rounds_of_questions() {
    async fn nag(_: NoArgs, ex: Exchange) -> Result<String, ToolError> {
        // A new question every round, forever.
        let round = (0..).find(|i| !ex.answered(&format!("q{i}"))).unwrap_or(0);
        for i in 0..=round {
            ex.ask(&format!("q{i}"), Question::elicit("again?")).await?;
        }
        Ok("never".into())
    }
    let server = Server::builder("nag", "1")
        .tool(Tool::new("nag", nag))
        .build()
        .unwrap();
    let (transport, _) = pipes(server);
    let client = within(
        answering()
            .max_rounds(3)
            .revision(Revision::V2026_07_28)
            .connect(transport),
    )
    .await
    .unwrap();
    let error = within(client.call_tool("nag", json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::TooManyRounds, "{error}");
}

#[tokio::test]
async fn a_question_the_client_cannot_answer_is_the_servers_typed_refusal() {
    let (transport, _) = pipes(server(AdapterSet::all()));
    let client = Client::builder()
        .revision(Revision::V2026_07_28)
        .connect(transport);
    let client = within(client).await.unwrap();
    let error = within(client.call_tool("deploy", json!({"service": "web"})))
        .await
        .unwrap_err();
    assert!(error.is_rpc(), "{error}");
    assert_eq!(error.code(), Some(-32021));
    assert!(
        error.data().unwrap()["requiredCapabilities"]["elicitation"].is_object(),
        "{error:?}"
    );
}

/// A legacy stdio server that answers `tools/call` with `count` progress notifications for
/// the call's token and log messages, then the result, all in one write.
async fn chatty_server(reader: tokio::io::DuplexStream, mut writer: tokio::io::DuplexStream) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(reader).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let message: Value = serde_json::from_str(&line).unwrap();
        let mut out = Vec::new();
        let mut push = |v: Value| {
            out.extend(serde_json::to_vec(&v).unwrap());
            out.push(b'\n');
        };
        match message["method"].as_str() {
            Some("initialize") => push(json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "chatty", "version": "1"}}})),
            Some("tools/call") => {
                let token = message["params"]["_meta"]["progressToken"].clone();
                for i in 1..=CHATTY_STEPS {
                    push(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": i, "total": CHATTY_STEPS}}));
                    push(json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": i}}));
                }
                push(json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"content": [{"type": "text", "text": "done"}]}}));
            }
            _ => continue,
        }
        writer.write_all(&out).await.unwrap();
    }
}

const CHATTY_STEPS: u64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_notification_before_a_response_is_dispatched_before_the_call_returns() {
    let (client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_in) = tokio::io::duplex(1 << 20);
    tokio::spawn(chatty_server(server_in, server_out));
    let logs = Arc::new(Mutex::new(Vec::new()));
    let sink = logs.clone();
    let client = Client::builder()
        .revision(Revision::V2025_06_18)
        .timeout(Duration::from_secs(10))
        .on_notification(move |n| {
            if n.method == "notifications/message" {
                sink.lock()
                    .unwrap()
                    .push(n.params.clone().unwrap()["data"].clone());
            }
        })
        .connect(Stdio::from_pipes(client_in, client_out, 1 << 20));
    let client = within(client).await.unwrap();
    let expected: Vec<f64> = (1..=CHATTY_STEPS).map(|i| i as f64).collect();
    for round in 0..20 {
        logs.lock().unwrap().clear();
        let progress = Arc::new(Mutex::new(Vec::new()));
        let sink = progress.clone();
        let options =
            CallOptions::new().on_progress(move |p| sink.lock().unwrap().push(p.progress));
        let result = within(client.call_tool_with("count", json!({}), options))
            .await
            .unwrap();
        assert_eq!(text(&result), "done");
        // Checked the moment the call returns: nothing may still be on its way.
        assert_eq!(
            *progress.lock().unwrap(),
            expected,
            "round {round}: progress"
        );
        let logged: Vec<Value> = (1..=CHATTY_STEPS).map(|i| json!(i)).collect();
        assert_eq!(*logs.lock().unwrap(), logged, "round {round}: log messages");
    }
}
