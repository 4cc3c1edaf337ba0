//! A stdio server (a real child process) that floods the client with notifications during the
//! handshake, while the client handles them slowly: what the client holds is bounded by its
//! queue, the excess is dropped and counted, and the response to `initialize` is never lost
//! (issue 27).
//!
//! Nothing here is timed: the client's handler of notifications is held still until the child
//! says (on its stderr) that it wrote the whole flood, and released then.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::transport::{Stderr, Stdio};
use mcp_client::{Client, Revision};
use tokio::io::AsyncBufReadExt;

/// How many notifications the child writes before it answers `initialize`.
const FLOOD: usize = 50_000;

/// Reads `initialize`, floods, answers it (with its id), says so on stderr, then reads on.
fn script() -> String {
    format!(
        r#"read line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
yes '{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"flood flood flood"}}}}' | head -n {FLOOD}
printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-06-18","capabilities":{{}},"serverInfo":{{"name":"flood","version":"1"}}}}}}\n' "$id"
echo flooded >&2
cat >/dev/null"#
    )
}

/// A guard against hangs, far longer than the test needs.
async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the test hung")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_during_the_handshake_is_bounded_and_the_response_still_arrives() {
    let transport = Stdio::builder("sh")
        .arg("-c")
        .arg(script())
        .stderr(Stderr::Capture)
        .spawn()
        .unwrap();
    let stderr = transport.take_stderr().unwrap();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = Mutex::new(released);
    let handled = Arc::new(AtomicUsize::new(0));
    let counted = handled.clone();
    let connecting = tokio::spawn(
        Client::builder()
            .revision(Revision::V2025_06_18)
            .timeout(Duration::from_secs(60))
            .on_notification(move |_| {
                // The first notification holds the client's handler until the child has
                // written everything: meanwhile the transport reads on, and must not keep it all.
                // (`block_in_place`: the rest of the runtime, the transport's reader included,
                // goes on on other threads.)
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    tokio::task::block_in_place(|| {
                        let _ = released
                            .lock()
                            .unwrap()
                            .recv_timeout(Duration::from_secs(60));
                    });
                }
            })
            .connect(transport),
    );
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    within(async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line == "flooded" {
                return;
            }
        }
        panic!("the child ended without flooding");
    })
    .await;
    release.send(()).unwrap();
    let client = within(connecting).await.unwrap().expect("connects");
    let handled = handled.load(Ordering::SeqCst);
    // At most the queue (1,024 by default), the one being handled, and what the pipe still held
    // when the child finished writing (64 KiB, some 700 lines).
    assert!(
        handled < FLOOD / 10,
        "the client kept {handled} of {FLOOD} notifications"
    );
    let dropped = client.dropped_messages();
    assert_eq!(
        handled as u64 + dropped,
        FLOOD as u64,
        "every notification was either handled or counted as dropped"
    );
    within(client.close()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_bound_is_a_builder_option() {
    // With room for the whole flood, nothing is dropped (and the handler is never held).
    let transport = Stdio::builder("sh")
        .arg("-c")
        .arg(script())
        .stderr(Stderr::Null)
        .max_queued(FLOOD)
        .max_queued_bytes(usize::MAX);
    let handled = Arc::new(AtomicUsize::new(0));
    let counted = handled.clone();
    let client = within(
        Client::builder()
            .revision(Revision::V2025_06_18)
            .max_queued(FLOOD)
            .max_queued_bytes(usize::MAX)
            .on_notification(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
            })
            .connect_stdio(transport),
    )
    .await
    .unwrap();
    assert_eq!(client.dropped_messages(), 0);
    assert_eq!(handled.load(Ordering::SeqCst), FLOOD);
    within(client.close()).await.unwrap();
}

/// Answers the 2025-06-18 handshake, then waits for a `ping`, floods `LIST_CHANGED` list-changed
/// notifications, and answers the ping.
fn listed_flood_script() -> String {
    format!(
        r#"read line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{"listChanged":true}}}},"serverInfo":{{"name":"flood","version":"1"}}}}}}\n' "$id"
read line
read line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
yes '{{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}}' | head -n {LIST_CHANGED}
printf '{{"jsonrpc":"2.0","id":%s,"result":{{}}}}\n' "$id"
cat >/dev/null"#
    )
}

const LIST_CHANGED: usize = 5_000;

#[tokio::test]
async fn a_listener_that_falls_behind_keeps_its_bound_and_counts_the_rest() {
    use futures::FutureExt;
    use futures::StreamExt;
    const ROOM: usize = 64;
    // The transport's queue has room for the whole flood: only the listener's bound is at play.
    let transport = Stdio::builder("sh")
        .arg("-c")
        .arg(listed_flood_script())
        .stderr(Stderr::Null)
        .max_queued(LIST_CHANGED * 2)
        .spawn()
        .unwrap();
    let client = within(
        Client::builder()
            .revision(Revision::V2025_06_18)
            .max_queued(ROOM)
            .connect(transport),
    )
    .await
    .unwrap();
    let mut listener = within(client.listen(mcp_client::Subscriptions::new().tools_changed()))
        .await
        .unwrap();
    // Every notification sent before the ping's answer is handled by the time the ping returns,
    // and nobody read the listener meanwhile.
    within(client.ping()).await.unwrap();
    assert_eq!(client.dropped_messages(), 0);
    let mut received = 0;
    // (`unconstrained`: the runtime's cooperative budget must not cut the count short.)
    while let Some(Some(n)) = tokio::task::unconstrained(listener.next()).now_or_never() {
        assert_eq!(n.method.as_ref(), "notifications/tools/list_changed");
        received += 1;
    }
    assert_eq!(received, ROOM, "the listener holds at most its bound");
    assert_eq!(listener.dropped(), (LIST_CHANGED - ROOM) as u64);
    within(client.close()).await.unwrap();
}
