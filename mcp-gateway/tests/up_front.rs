//! Answers a downstream client gives before it is asked, and answers under keys nobody asked
//! (MRTR `inputResponses` on 2026-07-28, `mcpAnswers` on 2025-03-26), through the gateway on
//! real sockets on 127.0.0.1.
//!
//! The protocol asks a server to ignore `inputResponses` keys it does not recognise and to
//! complete (the official suite's `input-required-result-ignore-extra-params`). Through the
//! gateway the upstream decides: the answers the downstream call carried that no downstream
//! question asked for are passed upstream, so a question the upstream lets a client answer up
//! front is answered without a round trip, a question it does not (a confirmation) still
//! reaches the downstream client, and the extra keys change nothing.

mod support;

use support::serve_mcp;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_client::{Answer, Asks, CallOptions, Client, Revision};
use mcp_gateway::{Gateway, QuestionRelay};
use mcp_server::{Exchange, Question, Server, Tool, ToolError};
use serde_json::{Map, Value, json};

/// A bound on each step (not a synchronisation).
const STEP: Duration = Duration::from_secs(20);

fn name_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    })
}

/// Asks for a name, which a client may give up front.
async fn ask_name(ex: Exchange) -> Result<String, ToolError> {
    let question = Question::elicit_with("What is your name?", name_schema()).answerable_up_front();
    let answer = ex.ask("user_name", question).await?;
    let name = answer.get("name").and_then(Value::as_str).unwrap_or("?");
    Ok(format!("Hello, {name}!"))
}

/// Asks for a confirmation, which the user must see: answers given up front are not read.
async fn confirm(ex: Exchange) -> Result<String, ToolError> {
    let answer = ex.ask("sure", Question::elicit("Proceed?")).await?;
    Ok(if answer.accepted() {
        "confirmed".into()
    } else {
        "declined".into()
    })
}

/// The upstream (our server), a gateway in front of it whose client is pinned to `up`, and
/// the gateway's `/mcp` URL.
async fn gateway(up: Revision) -> (Gateway, String) {
    let upstream = Server::builder("upstream", "1.0")
        .tool(Tool::new("ask_name", ask_name))
        .tool(Tool::new("confirm", confirm))
        .build()
        .expect("the upstream builds");
    let upstream = serve_mcp(upstream).await;
    let relay = QuestionRelay::new();
    let client = relay
        .install(Client::builder().revision(up).timeout(STEP))
        .connect_http(&upstream)
        .await
        .expect("the gateway reaches the upstream");
    let gateway = Gateway::builder()
        .question_relay(relay)
        .start(client)
        .await
        .expect("the gateway starts");
    let url = serve_mcp(gateway.server().clone()).await;
    (gateway, url)
}

/// A downstream client on `down` that answers every question it is asked with
/// `{"name": "Bob"}`, counting them.
async fn downstream(url: &str, down: Revision) -> (Client, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let client = Client::builder()
        .revision(down)
        .timeout(STEP)
        .on_ask(Asks::none().elicitation(), move |_question| {
            counter.fetch_add(1, Ordering::Relaxed);
            async { Answer::accept(json!({"name": "Bob"})) }
        })
        .connect_http(url)
        .await
        .expect("the downstream client reaches the gateway");
    (client, asked)
}

/// Answers as the official suite's scenario sends them: the name, and two keys nobody asks.
fn with_extra_keys(name: Option<&str>) -> Map<String, Value> {
    let mut answers = json!({
        "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
        "another_unexpected": {"action": "accept", "content": {"baz": 123}},
    });
    if let Some(name) = name {
        answers["user_name"] = json!({"action": "accept", "content": {"name": name}});
    }
    answers.as_object().cloned().expect("an object")
}

async fn call(client: &Client, tool: &str, answers: Map<String, Value>) -> String {
    let options = CallOptions::new().answers_up_front(answers);
    let result = tokio::time::timeout(STEP, client.call_tool_with(tool, json!({}), options))
        .await
        .expect("an answer within the bound")
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert_ne!(result["isError"], true, "{tool}: {result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Every pairing of a downstream revision that carries answers with an upstream revision:
/// the upstream takes answers given up front where its revision carries them (MRTR, the
/// argument convention); one that pushes its questions (2025-11-25) asks, and the question
/// reaches the downstream client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_given_up_front_with_extra_keys_complete_the_call() {
    let ups = [
        (Revision::V2026_07_28, true),
        (Revision::V2025_03_26, true),
        (Revision::V2025_11_25, false),
    ];
    for (up, carries) in ups {
        let (_gateway, url) = gateway(up).await;
        for down in [Revision::V2026_07_28, Revision::V2025_03_26] {
            let cell = format!("upstream {up}, downstream {down}");
            let (client, asked) = downstream(&url, down).await;

            // The name given up front, with two unknown keys: no question, the result.
            let text = call(&client, "ask_name", with_extra_keys(Some("Alice"))).await;
            let asked_now = asked.swap(0, Ordering::Relaxed);
            if carries {
                assert_eq!(text, "Hello, Alice!", "{cell}");
                assert_eq!(asked_now, 0, "{cell}: asked although answered up front");
            } else {
                assert_eq!(text, "Hello, Bob!", "{cell}");
                assert_eq!(asked_now, 1, "{cell}");
            }

            // Only unknown keys: the question is asked, and the retry, which carries the
            // unknown keys besides the answer, completes.
            let text = call(&client, "ask_name", with_extra_keys(None)).await;
            assert_eq!(text, "Hello, Bob!", "{cell}");
            assert_eq!(asked.swap(0, Ordering::Relaxed), 1, "{cell}");

            // A confirmation answered up front is still asked: the upstream decides.
            let mut answers = with_extra_keys(None);
            answers.insert("sure".into(), json!({"action": "accept", "content": {}}));
            let text = call(&client, "confirm", answers).await;
            assert_eq!(text, "confirmed", "{cell}");
            assert_eq!(
                asked.swap(0, Ordering::Relaxed),
                1,
                "{cell}: the confirmation"
            );
        }
    }
}
