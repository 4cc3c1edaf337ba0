//! A handler that panics (a tool called plainly or as a task, a resource, a prompt) fails its
//! request with a message naming what failed and nothing of the panic's text: over Streamable
//! HTTP on 127.0.0.1, on 2025-06-18 and 2026-07-28, no byte the client receives holds the
//! panic's message, while the server's log has it at ERROR.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::transport::Direction;
use mcp_client::{Client, ErrorKind, Revision, TaskPolling};
use mcp_server::http::{HttpConfig, HttpEndpoint};
use mcp_server::{NoArgs, Prompt, Resource, ResourceRequest, Server, TaskSupport, Tasks, Tool};
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context as LayerContext;

/// What every handler below panics with: an internal detail no client may see.
const SECRET: &str = "db password hunter2 in /srv/internal/config.toml";

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("timed out")
}

async fn explodes(_: NoArgs) -> String {
    panic!("{SECRET}")
}

async fn explodes_reading(_: ResourceRequest) -> String {
    panic!("{SECRET}")
}

async fn explodes_prompting(_: NoArgs) -> String {
    panic!("{SECRET}")
}

/// The fields of one ERROR event.
#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// Keeps the fields of every ERROR event of the server in `ERRORS`.
pub(crate) struct Capture;

static ERRORS: Mutex<Vec<BTreeMap<String, String>>> = Mutex::new(Vec::new());

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: LayerContext<'_, S>) {
        if *event.metadata().level() == tracing::Level::ERROR {
            let mut fields = Fields::default();
            event.record(&mut fields);
            ERRORS.lock().unwrap().push(fields.0);
        }
    }
}

/// Installs this binary's capturing subscriber (shared with `tracing_spans`, see
/// `crate::install_capture`).
fn capture() {
    crate::install_capture();
}

/// The ERROR events naming `handler`, with the panic's text.
fn logged(handler: &str) -> usize {
    ERRORS
        .lock()
        .unwrap()
        .iter()
        .filter(|f| {
            f.get("handler").map(String::as_str) == Some(handler)
                && f.get("panic").is_some_and(|p| p.contains(SECRET))
        })
        .count()
}

async fn start() -> String {
    let server = Server::builder("panics", "1.0")
        .tasks(Tasks::new().poll_interval(Duration::from_millis(20)))
        .tool(Tool::new("explodes", explodes).task_support(TaskSupport::Optional))
        .resource(Resource::new(
            "test://explodes",
            "explodes",
            explodes_reading,
        ))
        .prompt(Prompt::new("explodes", explodes_prompting))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let endpoint = HttpEndpoint::new(server, HttpConfig::new());
    tokio::spawn(mcp_server::http::serve_with_shutdown(
        listener,
        endpoint,
        std::future::pending::<()>(),
    ));
    url
}

/// A client keeping every message it receives, as sent.
async fn client(url: &str, revision: Revision, tasks: bool) -> (Client, Arc<Mutex<Vec<Value>>>) {
    let received = Arc::new(Mutex::new(Vec::new()));
    let mut builder = Client::builder().revision(revision).on_message({
        let received = received.clone();
        move |seen| {
            if seen.direction() == Direction::Received {
                received.lock().unwrap().push(seen.message().clone());
            }
        }
    });
    if tasks {
        builder = builder.tasks(TaskPolling::new());
    }
    (builder.connect_http(url).await.unwrap(), received)
}

#[tokio::test]
async fn a_panic_reaches_the_log_never_the_client() {
    capture();
    let url = start().await;
    for (revision, tasks) in [
        (Revision::V2025_06_18, false),
        (Revision::V2026_07_28, false),
        (Revision::V2026_07_28, true),
    ] {
        let case = format!("{revision}, tasks {tasks}");
        let (client, received) = client(&url, revision, tasks).await;
        let before = logged("tool \"explodes\"");
        let error = within(client.call_tool("explodes", json!({})))
            .await
            .unwrap_err();
        if tasks {
            // The task failed with the tool's failure as its error.
            assert_eq!(error.kind(), ErrorKind::Task, "{case}: {error}");
        } else {
            assert_eq!(error.kind(), ErrorKind::Rpc, "{case}: {error}");
        }
        assert_eq!(error.code(), Some(-32603), "{case}: {error}");
        assert_eq!(
            error.message(),
            Some("tool \"explodes\" failed unexpectedly"),
            "{case}"
        );
        // The failure is logged before it is sent, so it is there by now.
        assert_eq!(logged("tool \"explodes\""), before + 1, "{case}");

        let error = within(client.read_resource("test://explodes"))
            .await
            .unwrap_err();
        assert_eq!(
            error.message(),
            Some("reading test://explodes failed unexpectedly"),
            "{case}"
        );
        let error = within(client.get_prompt("explodes", json!({})))
            .await
            .unwrap_err();
        assert_eq!(
            error.message(),
            Some("prompt \"explodes\" failed unexpectedly"),
            "{case}"
        );

        let received = received.lock().unwrap().clone();
        assert!(!received.is_empty(), "{case}");
        for message in &received {
            let text = message.to_string();
            assert!(!text.contains("hunter2"), "{case}: the client got {text}");
            assert!(
                !text.contains("/srv/internal"),
                "{case}: the client got {text}"
            );
        }
        client.close().await.unwrap();
    }
    assert!(logged("reading test://explodes") >= 3);
    assert!(logged("prompt \"explodes\"") >= 3);
}
