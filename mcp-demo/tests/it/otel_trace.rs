//! One trace from the client to the tool, across workers (issue 49): the demo servers export
//! their request spans over OTLP/HTTP (`--otlp-endpoint`) to a receiver in this test, which
//! decodes the collector protocol's protobuf messages.
//!
//! - Our client with a parent context, over Streamable HTTP: the server's span is the child
//!   of the client's span, with the semantic-convention attributes (stdio: `mcp-server`'s
//!   `otel_stdio` test).
//! - A bare `traceparent` header (no `_meta`) parents the span too.
//! - An MRTR round trip across two workers on Redis: each round's span is in the client's
//!   trace, and a retry's span links to the span that asked, on the other worker.
//! - A cancellation POSTed to the other worker is a span on the worker that ran the call, the
//!   child of the span that sent it; a change published by a call on one worker is sent by
//!   the other to a client's stream in a span that is the call's child.
//! - A collector that stops answering: calls go on, and what reaches it afterwards is bounded
//!   by the export queue, not by the number of calls.

#![cfg(all(feature = "redis", feature = "otel"))]

use mcp_client::trace::{TraceContext, TraceParent};
use mcp_client::{Client, Revision, TracePropagation};
use serde_json::{Value, json};

use crate::backends::{Backend, Place};
use crate::demo_process::DemoProcess;
use crate::otlp::{Got, Receiver, assert_call_span, client_span, in_trace};
use crate::raw_http::{RawRequest, WAIT};

#[tokio::test]
async fn our_clients_context_parents_the_servers_span_over_http() {
    let receiver = Receiver::start().await;
    let worker = worker(None, &receiver).await;
    let url = format!("http://{}/mcp", worker.addr);

    // Streamable HTTP, on a revision with sessions and on the stateless one.
    for (tag, revision) in [(1, Revision::V2025_11_25), (2, Revision::V2026_07_28)] {
        let parent = client_span(tag);
        let client = Client::builder()
            .timeout(WAIT)
            .revision(revision)
            .trace_context(TracePropagation::Context(TraceContext::new(parent)))
            .connect_http(&url)
            .await
            .unwrap();
        client
            .call_tool("add", json!({"a": 1, "b": 2}))
            .await
            .unwrap();
        let spans = receiver
            .wait_for(1, |g| in_trace(parent)(g) && g.name == "tools/call add")
            .await;
        assert_call_span(&spans[0], parent, "add", revision.as_str());
        assert_eq!(spans[0].service, "mcp-demo");
        if revision == Revision::V2025_11_25 {
            assert_eq!(
                spans[0].attributes["mcp.session.id"].len(),
                8,
                "{:#?}",
                spans[0]
            );
        }
        client.close().await.unwrap();
    }

    // A bare `traceparent` header, no `_meta` context: the header parents the span.
    let parent = client_span(3);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}},
        "name": "add", "arguments": {"a": 2, "b": 2}}});
    let answered = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "add")
        .header("traceparent", &parent.to_string())
        .json(&body)
        .send(worker.addr)
        .await;
    assert_eq!(answered.status, 200);
    let spans = receiver
        .wait_for(1, |g| in_trace(parent)(g) && g.name == "tools/call add")
        .await;
    assert_call_span(&spans[0], parent, "add", "2026-07-28");
}

/// One `mcp-demo` (on the hub `hub`, else in memory) exporting to `receiver`.
async fn worker(hub: Option<&str>, receiver: &Receiver) -> DemoProcess {
    let endpoint = receiver.endpoint();
    let mut args = vec!["--addr", "127.0.0.1:0", "--otlp-endpoint", &endpoint];
    if let Some(hub) = hub {
        args.extend(["--hub", hub]);
    }
    DemoProcess::start(
        &args,
        &[
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ],
    )
    .await
}

/// Two demo workers on one Redis place, exporting to `receiver`, and the place (its keys go
/// when it is dropped); `None` without Redis (outside CI, where it is a failure).
async fn two_workers(receiver: &Receiver) -> Option<(Place, DemoProcess, DemoProcess)> {
    let place = Backend::REDIS.place().await?;
    let a = worker(Some(&place.demo_hub()), receiver).await;
    let b = worker(Some(&place.demo_hub()), receiver).await;
    Some((place, a, b))
}

/// A 2026-07-28 `tools/call rename` in the trace of `parent`, with `extra` params.
fn rename(id: i64, parent: TraceParent, extra: Value) -> Value {
    let mut params = json!({
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "traceparent": parent.to_string(),
        },
        "name": "rename",
        "arguments": {"path": "a.txt"},
    });
    params
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

async fn post(worker: &DemoProcess, body: &Value) -> Value {
    let response = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "rename")
        .json(body)
        .send(worker.addr)
        .await;
    assert_eq!(response.status, 200, "{response:?}");
    response.messages().pop().expect("one answer")
}

#[tokio::test]
async fn an_mrtr_round_trip_across_workers_is_one_trace_linked_to_the_asking_span() {
    let receiver = Receiver::start().await;
    let Some((_place, a, b)) = two_workers(&receiver).await else {
        return;
    };
    let parent = client_span(5);
    // Round 1 on A asks; round 2 on B answers the first question and is asked the second;
    // round 3 on A finishes.
    let first = post(&a, &rename(1, parent, json!({}))).await;
    let mut answers = json!({"confirm": {"action": "accept", "content": {}}});
    let second = post(
        &b,
        &rename(
            2,
            parent,
            json!({"inputResponses": answers, "requestState": first["result"]["requestState"]}),
        ),
    )
    .await;
    answers["name"] = json!({"action": "accept", "content": {"name": "b.txt"}});
    let third = post(
        &a,
        &rename(
            3,
            parent,
            json!({"inputResponses": answers, "requestState": second["result"]["requestState"]}),
        ),
    )
    .await;
    assert_eq!(
        third["result"]["content"][0]["text"], "renamed a.txt to b.txt",
        "{third}"
    );

    let mut spans = receiver.wait_for(3, in_trace(parent)).await;
    let id = |g: &Got| g.attributes["jsonrpc.request.id"].clone();
    spans.sort_by_key(id);
    let rounds: Vec<&str> = spans
        .iter()
        .map(|g| g.attributes["outcome"].as_str())
        .collect();
    assert_eq!(
        rounds,
        ["input_required", "input_required", "ok"],
        "{spans:#?}"
    );
    for span in &spans {
        assert_eq!(span.name, "tools/call rename", "{span:#?}");
        // Every round is a child of the client's span, in its trace.
        assert_eq!(span.parent_span_id, parent.parent_id(), "{span:#?}");
        assert_eq!(span.attributes["mcp.protocol.version"], "2026-07-28");
    }
    // Two workers: A's rounds share an instance, B's is another.
    assert_eq!(spans[0].instance, spans[2].instance);
    assert_ne!(spans[0].instance, spans[1].instance);
    // Each retry links to the span that asked it, on the other worker.
    assert!(spans[0].links.is_empty(), "{:#?}", spans[0]);
    for (retry, asked) in [(1, 0), (2, 1)] {
        assert_eq!(
            spans[retry].links,
            [(spans[asked].trace_id.clone(), spans[asked].span_id.clone())],
            "round {} links to round {}: {spans:#?}",
            retry + 1,
            asked + 1
        );
    }
}

#[tokio::test]
async fn a_collector_that_stops_answering_costs_calls_nothing_and_the_queue_bounds_what_waits() {
    let receiver = Receiver::start().await;
    let worker = worker(None, &receiver).await;
    let url = format!("http://{}/mcp", worker.addr);
    let parent = client_span(6);
    let client = Client::builder()
        .timeout(WAIT)
        .revision(Revision::V2026_07_28)
        .trace_context(TracePropagation::Context(TraceContext::new(parent)))
        .connect_http(&url)
        .await
        .unwrap();
    client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    receiver.wait_for(1, in_trace(parent)).await;
    // The collector hangs: every call is still answered. (How long calls take is measured by
    // the bench, not here: `docs/benchmarks.md`.)
    receiver.hold.send_replace(true);
    let calls: u64 = 10_000;
    for n in 0..calls {
        let sum = client
            .call_tool("add", json!({"a": n, "b": 1}))
            .await
            .unwrap();
        assert_eq!(sum["structuredContent"]["sum"], n + 1, "{sum}");
    }
    // Answering again, the collector gets what the bounded queue kept (2048 spans, plus the
    // batch of 512 that was in flight while it hung), not one span per call. A marker call
    // of another trace, made once exports flow again, is queued behind everything kept: when
    // it arrives, all of that has arrived. A marker made while the queue is still full is
    // dropped like any span then, so the marker is called again until one arrives.
    receiver.hold.send_replace(false);
    let flowing = receiver.wait_for(2, in_trace(parent)).await.len();
    let marker = client_span(7);
    let marked = Client::builder()
        .timeout(WAIT)
        .revision(Revision::V2026_07_28)
        .trace_context(TracePropagation::Context(TraceContext::new(marker)))
        .connect_http(&url)
        .await
        .unwrap();
    let marker_call = |g: &Got| in_trace(marker)(g) && g.name == "tools/call add";
    let mut tries = 0;
    loop {
        marked
            .call_tool("add", json!({"a": 0, "b": 0}))
            .await
            .unwrap();
        // The export thread sends a partial batch at most a batch delay (1 s) after the last.
        if receiver
            .within(std::time::Duration::from_secs(5), 1, marker_call)
            .await
            .is_some()
        {
            break;
        }
        tries += 1;
        assert!(tries < 10, "no marker span arrived");
    }
    let settled = receiver.wait_for(flowing, in_trace(parent)).await.len();
    eprintln!(
        "{settled} spans of {} calls reached the collector",
        calls + 1
    );
    assert!(
        settled < usize::try_from(calls / 2).unwrap(),
        "{settled} spans of {calls} calls reached the collector"
    );
}

/// A 2026-07-28 request in the trace of `parent` that declares the Tasks extension; its
/// result.
async fn task_rpc(
    worker: &DemoProcess,
    parent: TraceParent,
    method: &str,
    mut params: Value,
) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}},
        "traceparent": parent.to_string(),
    });
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let response = RawRequest::new("POST", "/mcp")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method)
        .header("Mcp-Name", &name)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send(worker.addr)
        .await;
    let message = response.messages().pop().expect("one answer");
    message["result"].clone()
}

#[tokio::test]
async fn a_task_created_on_one_worker_and_polled_on_another_is_one_trace() {
    let receiver = Receiver::start().await;
    let Some((_place, a, b)) = two_workers(&receiver).await else {
        return;
    };
    let parent = client_span(8);
    let created = task_rpc(
        &a,
        parent,
        "tools/call",
        json!({"name": "slow", "arguments": {"seconds": 0}}),
    )
    .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let polled = task_rpc(&b, parent, "tasks/get", json!({"taskId": id})).await;
    assert!(polled["status"].is_string(), "{polled}");

    let spans = receiver.wait_for(3, in_trace(parent)).await;
    let named = |name: &str| {
        spans
            .iter()
            .find(|g| g.name == name)
            .unwrap_or_else(|| panic!("no span {name}: {spans:#?}"))
    };
    let call = named("tools/call slow");
    let get = named("tasks/get");
    let task = named("task");
    // The call and the poll are children of the client's span, on two workers.
    for span in [call, get] {
        assert_eq!(span.parent_span_id, parent.parent_id(), "{span:#?}");
    }
    assert_ne!(call.instance, get.instance);
    // The handler's run is the call's child (it outlives the call), on the worker running it.
    assert_eq!(task.parent_span_id, call.span_id, "{task:#?}");
    assert_eq!(task.instance, call.instance);
    assert_eq!(task.attributes["mcp.task.id"], id);
    // The poll on the other worker links to the span that created the task.
    assert_eq!(
        get.links,
        [(call.trace_id.clone(), call.span_id.clone())],
        "{get:#?}"
    );
}

/// A 2025-11-25 POST to `worker` in `session`.
fn post_1125(session: Option<&str>, body: &Value) -> RawRequest<'static> {
    let mut request =
        RawRequest::new("POST", "/mcp").header("Accept", "application/json, text/event-stream");
    if body["method"] != "initialize" {
        request = request.header("MCP-Protocol-Version", "2025-11-25");
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    request.json(body)
}

/// A 2025-11-25 session (with elicitation) initialized on `worker`: its id.
async fn session_on(worker: &DemoProcess) -> String {
    let init = post_1125(
        None,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .send(worker.addr)
    .await;
    let session = init.header("mcp-session-id").unwrap().to_owned();
    let done = post_1125(
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .send(worker.addr)
    .await;
    assert_eq!(done.status, 202);
    session
}

#[tokio::test]
async fn a_cancellation_posted_to_another_worker_is_a_span_where_it_cancelled_the_call() {
    let receiver = Receiver::start().await;
    let Some((_place, a, b)) = two_workers(&receiver).await else {
        return;
    };
    let session = session_on(&b).await;
    // A long count on A, running once its first progress arrived.
    let call_parent = client_span(11);
    let call = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "_meta": {"traceparent": call_parent.to_string(), "progressToken": "p"},
        "name": "count", "arguments": {"n": 600, "step_ms": 100}}});
    let mut stream = post_1125(Some(&session), &call).open(a.addr).await;
    let progress = stream.message().await.expect("progress");
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    // Cancelled through B, in another trace.
    let cancel_parent = client_span(12);
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
        "requestId": 8, "reason": "enough",
        "_meta": {"traceparent": cancel_parent.to_string()}}});
    assert_eq!(
        post_1125(Some(&session), &cancel).send(b.addr).await.status,
        202
    );

    let spans = receiver
        .wait_for(1, |g| {
            in_trace(cancel_parent)(g) && g.name == "notifications/cancelled"
        })
        .await;
    let cancelled = &spans[0];
    // A's span, the child of the span that sent the cancellation to B.
    assert_eq!(
        cancelled.parent_span_id,
        cancel_parent.parent_id(),
        "{cancelled:#?}"
    );
    assert_eq!(cancelled.kind, crate::otlp::SERVER);
    assert_eq!(cancelled.attributes["jsonrpc.request.id"], "8");
    assert_eq!(
        cancelled.attributes["mcp.method.name"],
        "notifications/cancelled"
    );
    assert_eq!(
        cancelled.attributes["mcp.session.id"],
        session[..8],
        "{cancelled:#?}"
    );
    let call = receiver
        .wait_for(1, |g| {
            in_trace(call_parent)(g) && g.name == "tools/call count"
        })
        .await;
    assert_eq!(call[0].instance, cancelled.instance, "where the call ran");
    assert_eq!(call[0].attributes["outcome"], "cancelled", "{:#?}", call[0]);
}

#[tokio::test]
async fn a_change_published_on_one_worker_is_delivered_in_its_trace_on_another() {
    let receiver = Receiver::start().await;
    let Some((_place, a, b)) = two_workers(&receiver).await else {
        return;
    };
    let session = session_on(&b).await;
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
        "params": {"uri": "config://app"}});
    let subscribed = post_1125(Some(&session), &subscribe).send(b.addr).await;
    assert_eq!(subscribed.status, 200, "{subscribed:?}");
    // The session's GET stream on B; the change is published by a call on A.
    let mut stream = RawRequest::new("GET", "/mcp")
        .header("Accept", "text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", &session)
        .open(b.addr)
        .await;
    let parent = client_span(13);
    let touch = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "_meta": {"traceparent": parent.to_string()}, "name": "touch", "arguments": {}}});
    assert_eq!(
        post_1125(Some(&session), &touch).send(a.addr).await.status,
        200
    );
    let updated = stream.message().await.expect("the update");
    assert_eq!(
        updated["method"], "notifications/resources/updated",
        "{updated}"
    );
    // What reaches the client is the notification alone: the trace context stays on the hub.
    assert_eq!(updated["params"], json!({"uri": "config://app"}));

    let spans = receiver
        .wait_for(2, |g| {
            in_trace(parent)(g)
                && ["tools/call touch", "notifications/resources/updated"]
                    .contains(&g.name.as_str())
        })
        .await;
    let named = |name: &str| spans.iter().find(|g| g.name == name).unwrap();
    let (call, sent) = (
        named("tools/call touch"),
        named("notifications/resources/updated"),
    );
    // Sent from B, the child of the call on A that published the change.
    assert_eq!(sent.parent_span_id, call.span_id, "{sent:#?}");
    assert_eq!(sent.kind, crate::otlp::PRODUCER);
    assert_ne!(
        sent.instance, call.instance,
        "delivered by the other worker"
    );
    assert_eq!(
        sent.attributes["mcp.method.name"],
        "notifications/resources/updated"
    );
}

#[tokio::test]
async fn a_pushed_question_is_a_client_span_whose_context_the_question_carries() {
    let receiver = Receiver::start().await;
    let Some((_place, a, b)) = two_workers(&receiver).await else {
        return;
    };
    let parent = client_span(9);
    let session = session_on(&b).await;
    // The call on A; its question is answered through B.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "_meta": {"traceparent": parent.to_string()},
        "name": "deploy", "arguments": {"service": "web"}}});
    let mut stream = post_1125(Some(&session), &call).open(a.addr).await;
    let question = stream.message().await.expect("a question");
    assert_eq!(question["method"], "elicitation/create", "{question}");
    // Still a valid question with the context in its `_meta`.
    crate::support::check(Revision::V2025_11_25, "ElicitRequest", &question);
    let carried = question["params"]["_meta"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("the question carries no trace context: {question}"));
    let carried = TraceParent::parse(carried).unwrap();
    assert_eq!(carried.trace_id(), parent.trace_id());
    let reply = json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {}}});
    assert_eq!(
        post_1125(Some(&session), &reply).send(b.addr).await.status,
        202
    );
    let result = stream.message().await.expect("the result");
    assert_eq!(
        result["result"]["content"][0]["text"], "deployed web",
        "{result}"
    );

    let spans = receiver
        .wait_for(2, |g| {
            in_trace(parent)(g)
                && ["tools/call deploy", "elicitation/create"].contains(&g.name.as_str())
        })
        .await;
    let named = |name: &str| spans.iter().find(|g| g.name == name).unwrap();
    let (call, ask) = (named("tools/call deploy"), named("elicitation/create"));
    assert_eq!(call.parent_span_id, parent.parent_id(), "{call:#?}");
    // The question is a client span of the call, on A, and the question names it.
    assert_eq!(ask.parent_span_id, call.span_id, "{ask:#?}");
    assert_eq!(ask.instance, call.instance);
    assert_eq!(
        (call.kind, ask.kind),
        (crate::otlp::SERVER, crate::otlp::CLIENT)
    );
    assert_eq!(ask.span_id, carried.parent_id());
    assert_eq!(ask.attributes["mcp.method.name"], "elicitation/create");
    assert_eq!(
        ask.attributes["jsonrpc.request.id"],
        question["id"].as_str().unwrap()
    );
    // The answer, POSTed to B, is a server span on B: the child of the question's span on A.
    let answer = receiver
        .wait_for(1, |g| in_trace(parent)(g) && g.name == "answer")
        .await;
    let answer = &answer[0];
    assert_eq!(answer.parent_span_id, ask.span_id, "{answer:#?}");
    assert_eq!(answer.kind, crate::otlp::SERVER);
    assert_ne!(
        answer.instance, ask.instance,
        "answered on the other worker"
    );
    assert_eq!(
        answer.attributes["jsonrpc.request.id"],
        question["id"].as_str().unwrap()
    );
}
