//! Runs every example as a user would: starts its binary (on `127.0.0.1:0`, reading the
//! address it prints, or as a stdio child), talks to it with `mcp-client` over real sockets
//! or pipes, and checks what it answers.
//!
//! The Redis example needs a Redis at `MCP_REDIS_URL` (default `redis://127.0.0.1:6379`):
//! without one its test prints why and passes, except with `CI=true`, where it fails.

use std::process::Stdio as ProcessStdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt as _;
use mcp_client::transport::{Stderr, Stdio};
use mcp_client::{
    Answer, Asks, CallOptions, Client, ClientBuilder, LogLevel, Notification, Question,
    QuestionKind, Revision, Subscriptions,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::sync::mpsc;

/// A guard against a hung example, never a synchronisation: every wait is for a real event.
const LIMIT: Duration = Duration::from_secs(30);

/// A running example server. The process is killed when this is dropped.
struct Running {
    /// Killed on drop (`kill_on_drop`).
    _child: Child,
    /// The rest of its stdout, kept open so that its later lines do not hit a closed pipe.
    stdout: Lines<BufReader<ChildStdout>>,
    /// The Streamable HTTP URL from the first line (`listening on http://127.0.0.1:PORT/mcp`).
    url: String,
}

impl Running {
    /// Starts `exe` on a free port with `envs` and waits for the line naming its address.
    async fn start(exe: &str, envs: &[(&str, &str)]) -> Self {
        let mut command = Command::new(exe);
        command
            .arg("127.0.0.1:0")
            .stdin(ProcessStdio::null())
            .stdout(ProcessStdio::piped())
            .stderr(ProcessStdio::inherit())
            .kill_on_drop(true);
        for (key, value) in envs {
            command.env(key, value);
        }
        let mut child = command.spawn().unwrap_or_else(|e| panic!("{exe}: {e}"));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let first = tokio::time::timeout(LIMIT, stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("{exe} printed no address within {LIMIT:?}"))
            .expect("stdout readable");
        let Some(first) = first else {
            let status = child.wait().await.expect("exit status");
            panic!("{exe} exited ({status}) before printing its address");
        };
        let url = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{exe}: unexpected first line {first:?}"))
            .to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        Self {
            _child: child,
            stdout,
            url,
        }
    }

    /// The next line the example printed after the first.
    async fn next_line(&mut self) -> String {
        tokio::time::timeout(LIMIT, self.stdout.next_line())
            .await
            .expect("a line in time")
            .expect("stdout readable")
            .expect("a line before the end")
    }

    /// `http://127.0.0.1:PORT` without the path.
    fn base(&self) -> &str {
        self.url.strip_suffix("/mcp").expect("the URL ends in /mcp")
    }
}

/// A client builder with the tests' name and time limit.
fn builder() -> ClientBuilder {
    Client::builder()
        .client_info("mcp-examples-tests", "1.0")
        .timeout(LIMIT)
}

async fn connect(url: &str, revision: Revision) -> Client {
    builder()
        .revision(revision)
        .connect_http(url)
        .await
        .unwrap_or_else(|e| panic!("connect {url} on {revision}: {e}"))
}

/// The text of a tool result's first content block.
fn text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {result}"))
}

fn names(items: &[Value], field: &str) -> Vec<String> {
    let mut names: Vec<String> = items
        .iter()
        .map(|item| item[field].as_str().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names
}

/// One plain HTTP/1.1 request (no MCP client), answered with the status line and the body.
async fn http_request(base: &str, request: &str) -> (String, String) {
    let host = base.strip_prefix("http://").expect("an http URL");
    let mut stream = tokio::net::TcpStream::connect(host).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    tokio::time::timeout(LIMIT, stream.read_to_string(&mut response))
        .await
        .expect("an answer in time")
        .expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.lines().next().unwrap_or_default().to_owned();
    (status, body.to_owned())
}

async fn http_get(base: &str, path: &str) -> (String, String) {
    let host = base.strip_prefix("http://").expect("an http URL");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    http_request(base, &request).await
}

/// Waits for the next item of a channel, within the limit.
async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>, what: &str) -> T {
    tokio::time::timeout(LIMIT, rx.recv())
        .await
        .unwrap_or_else(|_| panic!("no {what} within {LIMIT:?}"))
        .unwrap_or_else(|| panic!("the {what} channel closed"))
}

/// Waits for the next notification of a listener, within the limit.
async fn heard(listener: &mut mcp_client::Listener) -> Notification {
    tokio::time::timeout(LIMIT, listener.next())
        .await
        .expect("a notification in time")
        .expect("the listener goes on")
}

#[tokio::test]
async fn tools_take_typed_arguments_and_return_structured_output_or_errors() {
    let server = Running::start(env!("CARGO_BIN_EXE_tools"), &[]).await;
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let client = connect(&server.url, revision).await;
        let tools = client.list_tools().await.unwrap();
        assert_eq!(names(&tools, "name"), ["count", "divide", "shout"]);
        let divide = tools.iter().find(|t| t["name"] == "divide").unwrap();
        // The schemas come from the Rust types, doc comments included.
        assert_eq!(
            divide["inputSchema"]["required"],
            json!(["dividend", "divisor"])
        );
        assert_eq!(
            divide["inputSchema"]["properties"]["divisor"]["description"],
            "The number to divide by; must not be zero."
        );
        assert!(
            divide["outputSchema"]["properties"]["quotient"].is_object(),
            "{divide}"
        );
        assert_eq!(divide["annotations"]["readOnlyHint"], true, "{divide}");

        let result = client
            .call_tool("divide", json!({"dividend": 7, "divisor": 2}))
            .await
            .unwrap();
        assert_eq!(
            result["structuredContent"],
            json!({"quotient": 3, "remainder": 1})
        );
        assert_ne!(result["isError"], true);

        // A tool error is a result the model sees, not a protocol error.
        let by_zero = client
            .call_tool("divide", json!({"dividend": 7, "divisor": 0}))
            .await
            .unwrap();
        assert_eq!(by_zero["isError"], true, "{by_zero}");
        assert!(
            text(&by_zero).contains("cannot divide by zero"),
            "{by_zero}"
        );

        // Arguments that do not fit the schema never reach the handler.
        let wrong = client
            .call_tool("divide", json!({"dividend": 7, "divisor": "two"}))
            .await
            .unwrap();
        assert_eq!(wrong["isError"], true, "{wrong}");
        assert!(text(&wrong).contains("invalid arguments"), "{wrong}");

        let shout = client
            .call_tool("shout", json!({"text": "hello", "marks": 2}))
            .await
            .unwrap();
        assert_eq!(text(&shout), "HELLO!!");
        client.close().await.unwrap();
    }
    // The state is shared by every call of every client.
    let client = connect(&server.url, Revision::V2026_07_28).await;
    let first = client.call_tool("count", json!({})).await.unwrap();
    let second = client.call_tool("count", json!({})).await.unwrap();
    assert_eq!(text(&first), "count has been called 1 time(s)");
    assert_eq!(text(&second), "count has been called 2 time(s)");
}

#[tokio::test]
async fn resources_are_listed_and_read_as_text_and_blobs() {
    let server = Running::start(env!("CARGO_BIN_EXE_resources"), &[]).await;
    for revision in [Revision::V2026_07_28, Revision::V2025_06_18] {
        let client = connect(&server.url, revision).await;
        let resources = client.list_resources().await.unwrap();
        assert_eq!(
            names(&resources, "uri"),
            [
                "config://settings",
                "docs://bundle",
                "docs://readme",
                "images://logo",
                "status://flaky"
            ]
        );
        let logo = resources
            .iter()
            .find(|r| r["uri"] == "images://logo")
            .unwrap();
        assert_eq!(logo["mimeType"], "image/gif");
        assert_eq!(logo["size"], 43);

        let readme = client.read_resource("docs://readme").await.unwrap();
        assert!(
            readme["contents"][0]["text"]
                .as_str()
                .unwrap()
                .starts_with("This server shows resources"),
            "{readme}"
        );
        let settings = client.read_resource("config://settings").await.unwrap();
        let parsed: Value =
            serde_json::from_str(settings["contents"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(parsed["theme"], "dark");
        assert_eq!(settings["contents"][0]["mimeType"], "application/json");

        let gif = client.read_resource("images://logo").await.unwrap();
        assert_eq!(
            gif["contents"][0]["blob"],
            "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAICRAEAOw=="
        );
        assert_eq!(gif["contents"][0]["mimeType"], "image/gif");

        let bundle = client.read_resource("docs://bundle").await.unwrap();
        let parts = bundle["contents"].as_array().unwrap();
        assert_eq!(parts.len(), 2, "{bundle}");
        assert_eq!(parts[0]["mimeType"], "text/markdown");
        assert_eq!(parts[1]["mimeType"], "image/gif");

        let flaky = client.read_resource("status://flaky").await.unwrap_err();
        assert!(
            flaky
                .message()
                .unwrap_or_default()
                .contains("backing service is down"),
            "{flaky}"
        );
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn templates_match_uris_and_answer_not_found() {
    let server = Running::start(env!("CARGO_BIN_EXE_templates"), &[]).await;
    for revision in [Revision::V2026_07_28, Revision::V2025_03_26] {
        let client = connect(&server.url, revision).await;
        let templates = client.list_resource_templates().await.unwrap();
        assert_eq!(
            names(&templates, "uriTemplate"),
            ["users://{id}/profile", "weather://{city}/{day}"]
        );
        let ada = client.read_resource("users://1/profile").await.unwrap();
        assert_eq!(ada["contents"][0]["text"], "Ada Lovelace <ada@example.com>");
        assert_eq!(ada["contents"][0]["uri"], "users://1/profile");

        let nobody = client
            .read_resource("users://99/profile")
            .await
            .unwrap_err();
        assert!(nobody.is_rpc(), "{revision}: {nobody}");

        // Variables are percent-decoded.
        let weather = client
            .read_resource("weather://New%20York/monday")
            .await
            .unwrap();
        assert_eq!(
            weather["contents"][0]["text"],
            "New York on monday: sunny, 21 °C"
        );
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn prompts_render_messages_from_typed_arguments() {
    let server = Running::start(env!("CARGO_BIN_EXE_prompts"), &[]).await;
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let client = connect(&server.url, revision).await;
        let prompts = client.list_prompts().await.unwrap();
        assert_eq!(names(&prompts, "name"), ["code_review", "daily_summary"]);
        let review = prompts.iter().find(|p| p["name"] == "code_review").unwrap();
        let arguments = review["arguments"].as_array().unwrap();
        let required: Vec<(&str, bool)> = arguments
            .iter()
            .map(|a| {
                (
                    a["name"].as_str().unwrap(),
                    a["required"].as_bool().unwrap_or(false),
                )
            })
            .collect();
        assert!(required.contains(&("code", true)), "{review}");
        assert!(required.contains(&("language", false)), "{review}");
        assert!(required.contains(&("tone", false)), "{review}");

        let rendered = client
            .get_prompt(
                "code_review",
                json!({"code": "fn main() {}", "language": "Rust", "tone": "strict"}),
            )
            .await
            .unwrap();
        assert_eq!(rendered["description"], "A strict review of code in Rust");
        let messages = rendered["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["role"], "user");
        assert!(
            messages[0]["content"]["text"]
                .as_str()
                .unwrap()
                .ends_with("fn main() {}")
        );
        assert_eq!(messages[1]["role"], "assistant");

        let refused = client
            .get_prompt("code_review", json!({"code": "x", "tone": "rude"}))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Some(-32602), "{refused}");

        let summary = client.get_prompt("daily_summary", json!({})).await.unwrap();
        assert_eq!(
            summary["messages"][0]["content"]["text"],
            "Summarise what happened today in three bullet points."
        );
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn completion_suggests_prompt_arguments_and_template_variables() {
    let server = Running::start(env!("CARGO_BIN_EXE_completion"), &[]).await;
    for revision in [Revision::V2026_07_28, Revision::V2025_03_26] {
        let client = connect(&server.url, revision).await;
        let capabilities = client.server().unwrap().capabilities;
        assert!(capabilities["completions"].is_object(), "{capabilities}");
        let prompt = json!({"type": "ref/prompt", "name": "translate"});
        let g = client
            .complete(prompt.clone(), "language", "g", None)
            .await
            .unwrap();
        assert_eq!(g["completion"]["values"], json!(["German", "Greek"]));
        assert_eq!(g["completion"]["total"], 2);

        let template = json!({"type": "ref/resource", "uri": "cities://{country}/{city}"});
        let country = client
            .complete(template.clone(), "country", "Sp", None)
            .await
            .unwrap();
        assert_eq!(country["completion"]["values"], json!(["Spain"]));

        // Without a country there is nothing to suggest; with one, its cities.
        let no_country = client
            .complete(template.clone(), "city", "", None)
            .await
            .unwrap();
        assert_eq!(no_country["completion"]["values"], json!([]));
        if revision != Revision::V2025_03_26 {
            // `context.arguments` came with 2025-06-18.
            let cities = client
                .complete(
                    template.clone(),
                    "city",
                    "",
                    Some(json!({"arguments": {"country": "France"}})),
                )
                .await
                .unwrap();
            assert_eq!(
                cities["completion"]["values"],
                json!(["Paris", "Lyon", "Marseille"])
            );
        }
        client.close().await.unwrap();
    }
}

/// A client that answers every question: forms with a reason, samples with a fixed text. It
/// records the questions' messages.
fn answering_client(questions: Arc<Mutex<Vec<String>>>) -> ClientBuilder {
    builder().on_ask(
        Asks::none().elicitation().sampling(),
        move |question: Question| {
            let questions = questions.clone();
            async move {
                let asked = match question.kind() {
                    QuestionKind::Sampling => "sampling".to_owned(),
                    _ => question.message().unwrap_or_default().to_owned(),
                };
                questions
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(asked);
                match question.kind() {
                    QuestionKind::Sampling => Answer::result(json!({
                        "role": "assistant",
                        "content": {"type": "text", "text": "A short summary."},
                        "model": "test-model",
                        "stopReason": "endTurn"
                    })),
                    _ if question
                        .requested_schema()
                        .is_some_and(|s| s["properties"].get("reason").is_some()) =>
                    {
                        Answer::accept(json!({"reason": "tests", "notify": false}))
                    }
                    _ => Answer::accept(json!({})),
                }
            }
        },
    )
}

#[tokio::test]
async fn asking_works_on_every_way_a_revision_asks() {
    let server = Running::start(env!("CARGO_BIN_EXE_asking"), &[]).await;
    // Input-required results, pushed requests, and the argument convention.
    let revisions = [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_03_26,
    ];
    for (number, revision) in (1..).zip(revisions) {
        let questions = Arc::new(Mutex::new(Vec::new()));
        let client = answering_client(questions.clone())
            .revision(revision)
            .connect_http(&server.url)
            .await
            .unwrap();
        let deployed = client
            .call_tool("deploy", json!({"service": "web"}))
            .await
            .unwrap();
        // The irreversible part ran once per call, however often the handler ran.
        assert_eq!(
            text(&deployed),
            format!("deployment #{number}: web deployed (tests)"),
            "{revision}"
        );
        let summary = client
            .call_tool(
                "summarize",
                json!({"text": "a long text about many things"}),
            )
            .await
            .unwrap();
        assert_eq!(text(&summary), "summary: A short summary.", "{revision}");
        let asked = questions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        assert_eq!(
            asked,
            [
                "Deploy web to production?",
                "Deployment details",
                "sampling"
            ],
            "{revision}"
        );
        client.close().await.unwrap();
    }

    // A user who says no: an answer, not an error.
    let declining = builder()
        .on_ask(Asks::none().elicitation(), |_| async { Answer::decline() })
        .connect_http(&server.url)
        .await
        .unwrap();
    let kept = declining
        .call_tool("deploy", json!({"service": "db"}))
        .await
        .unwrap();
    assert_eq!(text(&kept), "db was not deployed");
    // This client declared no sampling: the tool falls back instead of failing.
    let fallback = declining
        .call_tool(
            "summarize",
            json!({"text": "one two three four five six seven"}),
        )
        .await
        .unwrap();
    assert_eq!(
        text(&fallback),
        "summary (no model available): one two three four five..."
    );
}

#[tokio::test]
async fn notifications_report_progress_logs_updates_and_list_changes() {
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        // A fresh server each time: `unlock` changes the registry once.
        let server = Running::start(env!("CARGO_BIN_EXE_notifications"), &[]).await;
        let (logs_tx, mut logs) = mpsc::unbounded_channel();
        let client = builder()
            .revision(revision)
            .log_level(LogLevel::Info)
            .on_notification(move |n| {
                if n.method == "notifications/message" {
                    let data = n.params.as_ref().map(|p| p["data"].clone());
                    let _ = logs_tx.send(data.unwrap_or_default());
                }
            })
            .connect_http(&server.url)
            .await
            .unwrap();

        // Progress and logs of one call.
        let (progress_tx, mut progress) = mpsc::unbounded_channel();
        let options = CallOptions::new().on_progress(move |p| {
            let _ = progress_tx.send((p.progress, p.total, p.message));
        });
        let reported = client
            .call_tool_with("report", json!({"steps": 3}), options)
            .await
            .unwrap();
        assert_eq!(text(&reported), "reported 3 steps", "{revision}");
        for step in 1..=3 {
            let (done, total, message) = next(&mut progress, "progress").await;
            assert_eq!(done, f64::from(step), "{revision}");
            assert_eq!(total, Some(3.0));
            assert_eq!(message, Some(format!("step {step} of 3")));
            // Info messages only: the debug one is not sent to this client.
            let log = next(&mut logs, "log message").await;
            assert_eq!(log, json!(format!("finished step {step}")), "{revision}");
        }

        // Resource updates, to the subscribers of the URI, and list changes.
        let mut listener = client
            .listen(
                Subscriptions::new()
                    .resource("status://current")
                    .tools_changed(),
            )
            .await
            .unwrap();
        let before = client.read_resource("status://current").await.unwrap();
        assert_eq!(before["contents"][0]["text"], "idle");
        let set = client
            .call_tool("set_status", json!({"text": "busy"}))
            .await
            .unwrap();
        assert_eq!(text(&set), "status is now \"busy\"");
        let updated = heard(&mut listener).await;
        assert_eq!(
            updated.method, "notifications/resources/updated",
            "{revision}"
        );
        assert_eq!(updated.params.as_ref().unwrap()["uri"], "status://current");
        let after = client.read_resource("status://current").await.unwrap();
        assert_eq!(after["contents"][0]["text"], "busy");

        let tools = client.list_tools().await.unwrap();
        assert!(!names(&tools, "name").contains(&"secret".to_owned()));
        let unlocked = client.call_tool("unlock", json!({})).await.unwrap();
        assert_eq!(text(&unlocked), "unlocked the tool `secret`");
        let changed = heard(&mut listener).await;
        assert_eq!(
            changed.method, "notifications/tools/list_changed",
            "{revision}"
        );
        let tools = client.list_tools().await.unwrap();
        assert!(names(&tools, "name").contains(&"secret".to_owned()));
        let secret = client.call_tool("secret", json!({})).await.unwrap();
        assert_eq!(text(&secret), "the secret is 42");
        drop(listener);
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn the_stdio_server_answers_a_client_that_spawned_it() {
    for revision in [Revision::V2026_07_28, Revision::V2025_06_18] {
        let command = Stdio::builder(env!("CARGO_BIN_EXE_stdio_server")).stderr(Stderr::Null);
        let client = builder()
            .revision(revision)
            .connect_stdio(command)
            .await
            .unwrap_or_else(|e| panic!("{revision}: {e}"));
        let server = client.server().unwrap();
        assert_eq!(server.server_info.unwrap()["name"], "stdio-example");
        assert!(server.instructions.unwrap().starts_with("Takes notes"));
        let first = client
            .call_tool("add_note", json!({"text": "buy milk"}))
            .await
            .unwrap();
        assert_eq!(text(&first), "1 note(s)");
        let second = client
            .call_tool("add_note", json!({"text": "call Ada"}))
            .await
            .unwrap();
        assert_eq!(text(&second), "2 note(s)");
        let notes = client.read_resource("notes://all").await.unwrap();
        assert_eq!(notes["contents"][0]["text"], "buy milk\ncall Ada");
        let prompt = client.get_prompt("review", json!({})).await.unwrap();
        assert_eq!(
            prompt["messages"][0]["content"]["text"],
            "Here are my notes:\n- buy milk\n- call Ada\nWhich should I do first?"
        );
        // Closing the client closes the child's stdin; the server then exits.
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn the_http_server_serves_every_revision_on_both_transports() {
    let mut server = Running::start(env!("CARGO_BIN_EXE_http_server"), &[]).await;
    let sse = server.next_line().await;
    assert_eq!(
        sse,
        format!("HTTP+SSE (2024-11-05) on {}/sse", server.base())
    );

    // Negotiated: the newest revision.
    let client = builder().connect_http(&server.url).await.unwrap();
    assert_eq!(client.revision(), Revision::V2026_07_28);
    let sum = client
        .call_tool("add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(sum["structuredContent"], json!({"sum": 42}));
    let who = client.call_tool("whoami", json!({})).await.unwrap();
    assert_eq!(text(&who), "mcp-examples-tests on revision 2026-07-28");
    client.close().await.unwrap();

    // Pinned, with a handshake and a session.
    for revision in [Revision::V2025_11_25, Revision::V2025_03_26] {
        let client = connect(&server.url, revision).await;
        assert!(client.session_id().is_some(), "{revision}");
        let who = client.call_tool("whoami", json!({})).await.unwrap();
        assert_eq!(
            text(&who),
            format!("mcp-examples-tests on revision {revision}")
        );
        client.close().await.unwrap();
    }

    // HTTP+SSE, the 2024-11-05 transport.
    let legacy = builder()
        .revision(Revision::V2024_11_05)
        .connect_sse(&format!("{}/sse", server.base()))
        .await
        .unwrap();
    let who = legacy.call_tool("whoami", json!({})).await.unwrap();
    assert_eq!(text(&who), "mcp-examples-tests on revision 2024-11-05");
    legacy.close().await.unwrap();
}

#[tokio::test]
async fn the_axum_app_serves_mcp_beside_its_own_routes() {
    let server = Running::start(env!("CARGO_BIN_EXE_axum_app"), &[]).await;
    let (status, body) = http_get(server.base(), "/").await;
    assert!(status.contains(" 200 "), "{status}");
    assert!(body.starts_with("an axum app"), "{body}");

    let client = connect(&server.url, Revision::V2026_07_28).await;
    for item in ["rust", "tea", "rust"] {
        client
            .call_tool("like", json!({"item": item}))
            .await
            .unwrap();
    }
    client.close().await.unwrap();
    let legacy = builder()
        .revision(Revision::V2024_11_05)
        .connect_sse(&format!("{}/sse", server.base()))
        .await
        .unwrap();
    let liked = legacy
        .call_tool("like", json!({"item": "tea"}))
        .await
        .unwrap();
    assert_eq!(text(&liked), "tea has 2 like(s)");
    legacy.close().await.unwrap();

    // The application's own route reads what the MCP tool wrote.
    let (status, body) = http_get(server.base(), "/likes").await;
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(body, "rust: 2\ntea: 2\n");
}

/// Runs the `client` example with `args`; its exit status and stdout.
async fn run_client(args: &[&str]) -> (bool, String) {
    let output = tokio::time::timeout(
        LIMIT,
        Command::new(env!("CARGO_BIN_EXE_client"))
            .args(args)
            .stdin(ProcessStdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the client finishes in time")
    .expect("the client runs");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        eprintln!("client {args:?} failed: {stderr}");
    }
    (output.status.success(), stdout)
}

#[tokio::test]
async fn the_client_example_lists_calls_reads_and_answers() {
    let http = Running::start(env!("CARGO_BIN_EXE_http_server"), &[]).await;
    let (ok, out) = run_client(&[&http.url]).await;
    assert!(ok, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "connected to http-example on revision 2026-07-28");
    assert!(
        lines.contains(&"tool \"add\": \"Adds two integers.\""),
        "{out}"
    );
    let (ok, out) = run_client(&[&http.url, "call", "add", r#"{"a":2,"b":3}"#]).await;
    assert!(ok, "{out}");
    assert_eq!(out.lines().last(), Some(r#"{"sum":5}"#), "{out}");
    // An unknown tool fails the command.
    let (ok, _) = run_client(&[&http.url, "call", "nope"]).await;
    assert!(!ok);

    let resources = Running::start(env!("CARGO_BIN_EXE_resources"), &[]).await;
    let (ok, out) = run_client(&[&resources.url, "read", "docs://readme"]).await;
    assert!(ok, "{out}");
    assert!(out.contains("This server shows resources"), "{out}");

    // Questions answered from --answer, filling in only the fields each asks for.
    let asking = Running::start(env!("CARGO_BIN_EXE_asking"), &[]).await;
    let (ok, out) = run_client(&[
        "--answer",
        r#"{"reason":"hotfix","notify":true}"#,
        &asking.url,
        "call",
        "deploy",
        r#"{"service":"web"}"#,
    ])
    .await;
    assert!(ok, "{out}");
    assert!(
        out.contains("question: Deploy web to production?\n"),
        "{out}"
    );
    assert!(out.contains("question: Deployment details\n"), "{out}");
    assert!(
        out.ends_with("deployment #1: web deployed (hotfix), team notified\n"),
        "{out}"
    );
    // Without --answer it declines.
    let (ok, out) = run_client(&[&asking.url, "call", "deploy", r#"{"service":"web"}"#]).await;
    assert!(ok, "{out}");
    assert!(out.ends_with("web was not deployed\n"), "{out}");
}

/// A unique Redis key prefix, so that runs sharing a Redis stay apart.
fn unique_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos();
    format!("mcp-examples-test-{}-{nanos}", std::process::id())
}

#[tokio::test]
async fn redis_workers_share_sessions_state_and_notifications() {
    let url =
        std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    if let Err(err) = mcp_hub::RedisHub::connect(&url, mcp_hub::RedisConfig::new()).await {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("Redis at MCP_REDIS_URL does not answer, and CI=true: {err}");
        }
        eprintln!("notice: Redis does not answer ({err}); skipping the Redis example");
        return;
    }
    let prefix = unique_prefix();
    let envs = [
        ("MCP_REDIS_URL", url.as_str()),
        ("MCP_REDIS_PREFIX", prefix.as_str()),
    ];
    let mut one = Running::start(env!("CARGO_BIN_EXE_redis_workers"), &envs).await;
    let mut two = Running::start(env!("CARGO_BIN_EXE_redis_workers"), &envs).await;
    let name_one = one.next_line().await.replace(" on Redis", "");
    let name_two = two.next_line().await.replace(" on Redis", "");
    assert_ne!(name_one, name_two);

    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        // A listener on worker one, a poster on worker two.
        let listening = connect(&one.url, revision).await;
        let posting = connect(&two.url, revision).await;
        let who = posting.call_tool("whoami", json!({})).await.unwrap();
        assert_eq!(text(&who), name_two);
        let mut listener = listening
            .listen(Subscriptions::new().resource("board://latest"))
            .await
            .unwrap();
        let message = format!("hello on {revision}");
        let posted = posting
            .call_tool("post", json!({"text": message}))
            .await
            .unwrap();
        assert_eq!(text(&posted), format!("posted {message:?} on {name_two}"));
        // Announced on worker two, heard on worker one.
        let heard = heard(&mut listener).await;
        assert_eq!(heard.method, "notifications/resources/updated");
        assert_eq!(heard.params.as_ref().unwrap()["uri"], "board://latest");
        // Written on worker two, read on worker one.
        let board = listening.read_resource("board://latest").await.unwrap();
        assert_eq!(board["contents"][0]["text"], message.as_str());
        drop(listener);

        // A session minted by worker one, used on worker two (a plain HTTP request with its
        // session id): worker two finds it in Redis and answers.
        if let Some(session) = listening.session_id() {
            let body = r#"{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;
            let host = two.base().strip_prefix("http://").unwrap().to_owned();
            let request = format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\
                 Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
                 MCP-Protocol-Version: {revision}\r\nMcp-Session-Id: {session}\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let (status, answer) = http_request(two.base(), &request).await;
            assert!(status.contains(" 200 "), "{status}: {answer}");
            assert!(
                answer.contains(&format!("\"text\":\"{name_two}\"")),
                "{answer}"
            );
        } else {
            assert_eq!(
                revision,
                Revision::V2026_07_28,
                "only 2026-07-28 has no session"
            );
        }
        listening.close().await.unwrap();
        posting.close().await.unwrap();
    }
}
