//! Questions from the upstream (elicitation, sampling, roots), and its log messages, relayed
//! to the downstream client whose request (a tool call, `prompts/get`, `resources/read`)
//! caused them.
//!
//! The upstream client's `on_ask` callback is the relay's. A question is matched with the
//! downstream call it belongs to: the forwarded call runs inside the call's scope (a task-local
//! value), which the callback sees when the question arrives on the call itself (MRTR and the
//! argument convention, and a pushed request on the call's own Streamable HTTP stream). A
//! pushed request that comes on a shared stream (HTTP+SSE, stdio) is matched only when
//! exactly one forwarded call is in flight; otherwise it is refused, as a question with no
//! call in flight is.
//!
//! The downstream side asks with [`Exchange::ask`], so the question reaches the downstream
//! client by whatever mechanism its revision has. Where the question becomes the downstream
//! call's result (2026-07-28) or rides in its arguments (2025-03-26, 2024-11-05), the
//! forwarded call ends there (it is cancelled upstream) and runs again, from the start, when
//! the downstream client calls again with the answers: the upstream then asks again, and the
//! answer is given at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use mcp_client::{Answer, Asks, ClientBuilder, ErrorObject, Question, QuestionKind};
use mcp_server::{AnswerAction, Exchange, Interrupt, LogLevel};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

tokio::task_local! {
    /// The downstream request a forwarded request runs for (a tool call, `prompts/get`,
    /// `resources/read`): `None` for a forwarded `completion/complete`, which has no exchange
    /// to ask on (a question on it is refused rather than matched with another call).
    static CALL: Option<Arc<Call>>;
}

/// Runs `fut`, a forwarded request without a downstream exchange (a completion), outside every
/// call's scope.
pub(crate) async fn outside_calls<F: Future>(fut: F) -> F::Output {
    CALL.scope(None, fut).await
}

/// One forwarded request: its downstream exchange, the answers of its earlier attempts, and
/// how a question interrupted it.
#[derive(Debug)]
pub(crate) struct Call {
    ex: Exchange,
    /// Questions asked on this attempt without a key of the upstream's (pushed requests).
    asked: AtomicUsize,
    /// Every answer the downstream client gave this call, by key, kept in the call's saved
    /// state: where the question is the result (MRTR) the client sends only the latest
    /// round's answers, and the upstream, asked again from the start, asks the earlier ones
    /// again too.
    answers: Mutex<Map<String, Value>>,
    interrupted: Mutex<Option<Interrupt>>,
    wake: Notify,
}

/// The key of the answers in the call's saved state.
const ANSWERS_STATE: &str = "gatewayAnswers";

impl Call {
    pub(crate) fn new(ex: Exchange) -> Arc<Self> {
        let answers = ex
            .state()
            .and_then(|state| state.get(ANSWERS_STATE))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        Arc::new(Self {
            ex,
            asked: AtomicUsize::new(0),
            answers: Mutex::new(answers),
            interrupted: Mutex::new(None),
            wake: Notify::new(),
        })
    }

    /// The answer an earlier attempt got for `key`.
    fn earlier(&self, key: &str) -> Option<mcp_server::Answer> {
        let answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        let saved = answers.get(key)?;
        let action = match saved.get("action").and_then(Value::as_str)? {
            "accept" => AnswerAction::Accept,
            "decline" => AnswerAction::Decline,
            _ => AnswerAction::Cancel,
        };
        let content = saved.get("content").cloned().unwrap_or(Value::Null);
        Some(mcp_server::Answer::new(action, content))
    }

    /// Keeps `answer` to `key` for the later attempts of this call.
    fn remember(&self, key: &str, answer: &mcp_server::Answer) {
        let action = match answer.action() {
            AnswerAction::Accept => "accept",
            AnswerAction::Decline => "decline",
            _ => "cancel",
        };
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        answers.insert(
            key.to_owned(),
            json!({"action": action, "content": answer.content()}),
        );
        let state = json!({ ANSWERS_STATE: Value::Object(answers.clone()) });
        drop(answers);
        self.ex.save_state(state);
    }

    /// Runs `fut` (the forwarded call) in this call's scope.
    pub(crate) async fn scope<F: Future>(self: &Arc<Self>, fut: F) -> F::Output {
        CALL.scope(Some(self.clone()), fut).await
    }

    /// Resolves when a question interrupted the call (the downstream call must end with it).
    pub(crate) async fn interrupted(&self) -> Interrupt {
        loop {
            let woken = self.wake.notified();
            if let Some(interrupt) = self.interruption() {
                return interrupt;
            }
            woken.await;
        }
    }

    /// The interruption, if a question interrupted the call.
    pub(crate) fn interruption(&self) -> Option<Interrupt> {
        self.interrupted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn interrupt(&self, interrupt: Interrupt) {
        *self
            .interrupted
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(interrupt);
        self.wake.notify_waiters();
    }
}

/// The forwarded calls in flight, for questions that arrive outside any call's scope.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    calls: Mutex<Vec<Weak<Call>>>,
}

/// Keeps a call in [`InFlight`] while it runs.
#[derive(Debug)]
pub(crate) struct Registered {
    in_flight: Arc<InFlight>,
    call: Weak<Call>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut calls = self
            .in_flight
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        calls.retain(|c| !c.ptr_eq(&self.call) && c.strong_count() > 0);
    }
}

impl InFlight {
    pub(crate) fn register(self: &Arc<Self>, call: &Arc<Call>) -> Registered {
        let weak = Arc::downgrade(call);
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(weak.clone());
        Registered {
            in_flight: self.clone(),
            call: weak,
        }
    }

    /// The one call in flight, if there is exactly one.
    fn only(&self) -> Option<Arc<Call>> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let mut live = calls.iter().filter_map(Weak::upgrade);
        let first = live.next()?;
        live.next().is_none().then_some(first)
    }
}

/// Relays the upstream's questions to the downstream clients: install it on the upstream
/// client's builder with [`install`](Self::install) (it becomes the client's `on_ask`,
/// declaring form and URL elicitation, sampling and roots), and give it to the gateway with
/// [`GatewayBuilder::question_relay`](crate::GatewayBuilder::question_relay).
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_client::Client;
/// use mcp_gateway::{Gateway, QuestionRelay};
///
/// let relay = QuestionRelay::new();
/// let upstream = relay.install(Client::builder()).connect_http("https://example.com/mcp").await?;
/// let gateway = Gateway::builder().question_relay(relay).start(upstream).await?;
/// # let _ = gateway;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct QuestionRelay {
    pub(crate) in_flight: Arc<InFlight>,
}

impl QuestionRelay {
    /// A relay with no call in flight.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `builder`'s `on_ask` and `on_notification` to this relay: the upstream's
    /// questions, and the log messages (`notifications/message`) it sends while a request (a
    /// tool call, `prompts/get`, `resources/read`) is forwarded, go to the downstream client of
    /// that request (a log message at the level that
    /// client asked for, or none). Log messages are matched with their call as questions are;
    /// those that match no call are dropped.
    pub fn install(&self, builder: ClientBuilder) -> ClientBuilder {
        let logs = self.in_flight.clone();
        let builder = builder.on_notification(move |notification| {
            if notification.method == "notifications/message" {
                relay_log(current_call(&logs), notification.params.as_ref());
            }
        });
        let in_flight = self.in_flight.clone();
        builder.on_ask(Asks::all(), move |question| {
            // Read here, in the scope of the call the question came on (when it did).
            relay(current_call(&in_flight), question)
        })
    }
}

/// The call a question or log message belongs to: the scope it arrived in, or, outside any
/// scope (a shared stream), the one call in flight.
fn current_call(in_flight: &InFlight) -> Option<Arc<Call>> {
    match CALL.try_with(Option::clone) {
        Ok(scoped) => scoped,
        Err(_) => in_flight.only(),
    }
}

/// Passes an upstream log message on to the downstream client of `call`.
fn relay_log(call: Option<Arc<Call>>, params: Option<&Value>) {
    let (Some(call), Some(params)) = (call, params) else {
        return;
    };
    let Some(level) = params
        .get("level")
        .and_then(|level| serde_json::from_value::<LogLevel>(level.clone()).ok())
    else {
        return;
    };
    let logger = params.get("logger").and_then(Value::as_str);
    let data = params.get("data").cloned().unwrap_or(Value::Null);
    call.ex.log_to(level, logger, data);
}

/// Asks the downstream client `question` on `call` and translates the answer back.
async fn relay(call: Option<Arc<Call>>, question: Question) -> Answer {
    let Some(call) = call else {
        return Answer::error(ErrorObject::internal_error(
            "the gateway cannot tell which downstream call this question belongs to",
        ));
    };
    let Some(asked) = downstream_question(&question) else {
        return Answer::error(ErrorObject::method_not_found(question.method()));
    };
    // The upstream's own key (the downstream client sees it, on MRTR); a numbered one for a
    // pushed request, stable as long as the upstream asks in the same order each attempt.
    let key = match question.key() {
        Some(key) => key.to_owned(),
        None => format!(
            "upstream-{}",
            call.asked.fetch_add(1, Ordering::Relaxed) + 1
        ),
    };
    if let Some(answer) = call.earlier(&key) {
        return upstream_answer(question.kind(), &answer);
    }
    match call.ex.ask(&key, asked).await {
        Ok(answer) => {
            call.remember(&key, &answer);
            upstream_answer(question.kind(), &answer)
        }
        Err(interrupt @ (Interrupt::NeedsInput | Interrupt::Cancelled)) => {
            // The downstream call ends with the question (or was cancelled); the forwarded
            // call is dropped, so this answer is not used.
            call.interrupt(interrupt);
            Answer::cancel()
        }
        Err(other) => Answer::error(ErrorObject::internal_error(format!(
            "the downstream client: {other}"
        ))),
    }
}

/// The upstream's question as the downstream server asks it.
fn downstream_question(question: &Question) -> Option<mcp_server::Question> {
    let message = question.message().unwrap_or_default().to_owned();
    Some(match question.kind() {
        QuestionKind::Elicitation => mcp_server::Question::elicit_with(
            message,
            question
                .requested_schema()
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
        ),
        QuestionKind::UrlElicitation => {
            mcp_server::Question::elicit_url(message, question.url().unwrap_or_default())
        }
        QuestionKind::Sampling => {
            mcp_server::Question::create_message(question.params().as_object()?.clone())
        }
        QuestionKind::Roots => mcp_server::Question::list_roots(),
        _ => return None,
    })
}

/// The downstream answer as the upstream client gives it.
fn upstream_answer(kind: QuestionKind, answer: &mcp_server::Answer) -> Answer {
    match (kind, answer.action()) {
        (QuestionKind::Elicitation, AnswerAction::Accept) => {
            Answer::accept(answer.content().clone())
        }
        (QuestionKind::UrlElicitation, AnswerAction::Accept) => Answer::accept_url(),
        (QuestionKind::Elicitation | QuestionKind::UrlElicitation, AnswerAction::Decline) => {
            Answer::decline()
        }
        (QuestionKind::Elicitation | QuestionKind::UrlElicitation, _) => Answer::cancel(),
        (_, AnswerAction::Accept) => Answer::result(answer.content().clone()),
        (_, _) => Answer::error(ErrorObject::internal_error(
            "the downstream client refused the request",
        )),
    }
}
