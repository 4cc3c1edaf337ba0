//! What the console keeps between requests: the connections, the questions waiting for an
//! answer from the page, and the bounded log of events the page polls.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use mcp_client::{Answer, Client, Question};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

use super::Limits;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// One connected client.
#[derive(Debug, Clone)]
pub(crate) struct Connection {
    /// The client.
    pub(crate) client: Client,
    /// What it is connected to, for the page.
    pub(crate) summary: Value,
}

/// The network settings of URL connections.
#[derive(Debug, Clone)]
pub(crate) struct Net {
    /// OAuth when a server asks for it.
    pub(crate) oauth: mcp_client::oauth::OAuthConfig,
    /// TLS settings (`--cacert`).
    pub(crate) https: Option<mcp_client::transport::Https>,
}

/// The events the page has not necessarily seen: a ring bounded by count and by bytes.
#[derive(Debug, Default)]
struct Events {
    /// `(seq, serialized event)`, oldest first.
    ring: VecDeque<(u64, String)>,
    bytes: usize,
    next: u64,
    /// Events pushed out of the ring before anyone may have read them.
    evicted: u64,
}

/// One read of the events.
#[derive(Debug)]
pub(crate) struct EventsPage {
    /// `{"events": [...], "next": SEQ, "missed": N}`.
    pub(crate) text: String,
    /// The sequence number to read after next time.
    pub(crate) next: u64,
    /// No event and nothing missed.
    pub(crate) empty: bool,
}

/// A question waiting for the page.
#[derive(Debug)]
struct Pending {
    answer: oneshot::Sender<Answer>,
}

/// Everything shared by the console's requests.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) limits: Limits,
    /// What the command line named, for the page's connect form.
    pub(crate) initial: Value,
    started: Instant,
    events: Mutex<Events>,
    changed: Notify,
    connections: Mutex<HashMap<u64, Connection>>,
    /// Connections being set up: they hold a slot of [`Limits::max_connections`] too.
    connecting: Mutex<usize>,
    next_id: Mutex<u64>,
    asks: Mutex<HashMap<u64, Pending>>,
    /// The listeners (`Client::listen`), each drained by a task: `id -> (conn, task)`.
    listeners: Mutex<HashMap<u64, (u64, tokio::task::JoinHandle<()>)>>,
    /// How URL connections authorize when a server asks and which CAs they trust (set once,
    /// after the state exists: the login's redirect handler reports to the page through it).
    pub(crate) net: std::sync::OnceLock<Net>,
    /// Which commands the page may spawn.
    pub(crate) stdio: StdioPolicy,
    /// Actions of the page running as jobs (`?async=1`).
    jobs: Mutex<usize>,
    /// The latest results of jobs, newest last, at most [`Limits::max_actions`] and
    /// [`Limits::max_event_bytes`].
    results: Mutex<Results>,
    /// Logins waiting for the address the browser was sent to (`--no-browser`): `id -> sender`.
    logins: Mutex<HashMap<u64, oneshot::Sender<String>>>,
}

/// The latest results of jobs (their JSON text), for a page that missed their events.
#[derive(Debug, Default)]
struct Results {
    kept: VecDeque<(u64, String)>,
    bytes: usize,
}

/// Which commands `stdio` connections from the page may run.
#[derive(Debug, Clone, Default)]
pub(crate) struct StdioPolicy {
    /// The commands given with `mcp console --stdio CMD`, split into words.
    pub(crate) allowed: Vec<Vec<String>>,
    /// `--allow-any-stdio`: any command (unsafe: whoever holds the token runs commands).
    pub(crate) any: bool,
}

impl StdioPolicy {
    /// Whether the page may run `words`.
    pub(crate) fn allows(&self, words: &[String]) -> bool {
        self.any || self.allowed.iter().any(|allowed| allowed == words)
    }
}

/// A running job's place among [`Limits::max_actions`]; given back when dropped.
#[derive(Debug)]
pub(crate) struct JobSlot {
    state: Arc<State>,
    /// The job's id.
    pub(crate) id: u64,
}

impl JobSlot {
    /// Keeps the job's `result` (`{"job", "status", "body"}`) and puts it on the event stream.
    pub(crate) fn finish(self, result: Value) {
        {
            // Bounded by count (--max-actions) and by bytes (--max-event-bytes), the newest
            // always kept.
            let text = result.to_string();
            let limits = &self.state.limits;
            let mut results = lock(&self.state.results);
            results.bytes += text.len();
            results.kept.push_back((self.id, text));
            while results.kept.len() > limits.max_actions
                || (results.bytes > limits.max_event_bytes && results.kept.len() > 1)
            {
                if let Some((_, old)) = results.kept.pop_front() {
                    results.bytes -= old.len();
                }
            }
        }
        let mut event = result;
        event["type"] = json!("result");
        self.state.push(event);
    }
}

impl Drop for JobSlot {
    fn drop(&mut self) {
        let mut jobs = lock(&self.state.jobs);
        *jobs = jobs.saturating_sub(1);
    }
}

/// A slot for one connection; given back when dropped unless [`Slot::fill`] used it.
#[derive(Debug)]
pub(crate) struct Slot {
    state: Arc<State>,
    /// The id the connection will have (known before connecting, for its events).
    pub(crate) id: u64,
}

impl Slot {
    /// Stores the connected client under this slot's id.
    pub(crate) fn fill(self, connection: Connection) {
        lock(&self.state.connections).insert(self.id, connection);
        // Drop gives the `connecting` count back.
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut connecting = lock(&self.state.connecting);
        *connecting = connecting.saturating_sub(1);
    }
}

impl State {
    pub(crate) fn new(limits: Limits, initial: Value, stdio: StdioPolicy) -> Arc<Self> {
        Arc::new(Self {
            limits,
            initial,
            started: Instant::now(),
            events: Mutex::new(Events::default()),
            changed: Notify::new(),
            connections: Mutex::new(HashMap::new()),
            connecting: Mutex::new(0),
            next_id: Mutex::new(1),
            asks: Mutex::new(HashMap::new()),
            listeners: Mutex::new(HashMap::new()),
            net: std::sync::OnceLock::new(),
            stdio,
            jobs: Mutex::new(0),
            results: Mutex::new(Results::default()),
            logins: Mutex::new(HashMap::new()),
        })
    }

    /// A place for one more job, or `None` at [`Limits::max_actions`].
    pub(crate) fn begin_job(self: &Arc<Self>) -> Option<JobSlot> {
        {
            let mut jobs = lock(&self.jobs);
            if *jobs >= self.limits.max_actions {
                return None;
            }
            *jobs += 1;
        }
        Some(JobSlot {
            state: self.clone(),
            id: self.next_id(),
        })
    }

    /// The result of job `id` (its JSON text), while it is among the latest kept.
    pub(crate) fn result(&self, id: u64) -> Option<String> {
        lock(&self.results)
            .kept
            .iter()
            .find(|(job, _)| *job == id)
            .map(|(_, result)| result.clone())
    }

    /// Waits (`--no-browser`) for the page to give the address the browser was sent to after
    /// the login `url`; `None` when the page gave up or more logins wait than connections
    /// may be open.
    pub(crate) async fn login_address(&self, url: &str) -> Option<String> {
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        {
            let mut logins = lock(&self.logins);
            logins.retain(|_, sender| !sender.is_closed());
            if logins.len() >= self.limits.max_connections {
                return None;
            }
            logins.insert(id, tx);
        }
        self.push(json!({"type": "authorize", "url": url, "login": id, "paste": true}));
        let forget = LoginGuard { state: self, id };
        let address = rx.await.ok();
        drop(forget);
        address
    }

    /// Gives login `id` the address the browser was sent to; false when no such login waits.
    pub(crate) fn give_login_address(&self, id: u64, address: String) -> bool {
        match lock(&self.logins).remove(&id) {
            Some(sender) => sender.send(address).is_ok(),
            None => false,
        }
    }

    fn next_id(&self) -> u64 {
        let mut next = lock(&self.next_id);
        let id = *next;
        *next += 1;
        id
    }

    /// Reserves a connection slot, or `None` at [`Limits::max_connections`].
    pub(crate) fn reserve(self: &Arc<Self>) -> Option<Slot> {
        let connections = lock(&self.connections);
        let mut connecting = lock(&self.connecting);
        if connections.len() + *connecting >= self.limits.max_connections {
            return None;
        }
        *connecting += 1;
        drop((connections, connecting));
        Some(Slot {
            state: self.clone(),
            id: self.next_id(),
        })
    }

    /// The connection `id`.
    pub(crate) fn connection(&self, id: u64) -> Option<Connection> {
        lock(&self.connections).get(&id).cloned()
    }

    /// Forgets the connection `id` and returns it (to be closed).
    pub(crate) fn remove(&self, id: u64) -> Option<Connection> {
        lock(&self.connections).remove(&id)
    }

    /// Every connection, removed (to be closed on exit).
    pub(crate) fn take_all(&self) -> Vec<Connection> {
        lock(&self.connections).drain().map(|(_, c)| c).collect()
    }

    /// The open connections, for the page.
    pub(crate) fn summaries(&self) -> Vec<Value> {
        let connections = lock(&self.connections);
        let mut ids: Vec<&u64> = connections.keys().collect();
        ids.sort();
        ids.iter()
            .map(|id| connections[id].summary.clone())
            .collect()
    }

    /// Appends an event (`type` and its fields; `seq` and `t` are added), evicting the oldest
    /// beyond [`Limits::max_events`] or [`Limits::max_event_bytes`].
    pub(crate) fn push(&self, mut event: Value) {
        let t = self.started.elapsed().as_millis() as u64;
        let mut events = lock(&self.events);
        let seq = events.next + 1;
        events.next = seq;
        if let Value::Object(map) = &mut event {
            map.insert("seq".into(), json!(seq));
            map.insert("t".into(), json!(t));
        }
        let text = event.to_string();
        events.bytes += text.len();
        events.ring.push_back((seq, text));
        while events.ring.len() > self.limits.max_events
            || (events.bytes > self.limits.max_event_bytes && events.ring.len() > 1)
        {
            if let Some((_, old)) = events.ring.pop_front() {
                events.bytes -= old.len();
                events.evicted += 1;
            }
        }
        drop(events);
        self.changed.notify_waiters();
    }

    /// The events after `after`, as a JSON document `{"events": [...], "next": SEQ,
    /// "missed": N}` (`missed`: events after `after` that were evicted before this read).
    /// Waits up to `wait` for one when there are none.
    pub(crate) async fn events_after(&self, after: u64, wait: std::time::Duration) -> String {
        self.events_page(after, wait).await.text
    }

    /// [`State::events_after`], with the `next` to read after and whether it is empty.
    pub(crate) async fn events_page(&self, after: u64, wait: std::time::Duration) -> EventsPage {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let events = lock(&self.events);
                let first = events.ring.front().map_or(events.next + 1, |(s, _)| *s);
                let missed = first.saturating_sub(after.saturating_add(1));
                let fresh: Vec<&str> = events
                    .ring
                    .iter()
                    .filter(|(seq, _)| *seq > after)
                    .map(|(_, text)| text.as_str())
                    .collect();
                let empty = fresh.is_empty() && missed == 0;
                if !empty || tokio::time::Instant::now() >= deadline {
                    return EventsPage {
                        text: format!(
                            "{{\"events\":[{}],\"next\":{},\"missed\":{}}}",
                            fresh.join(","),
                            events.next,
                            missed
                        ),
                        // A reader from the future (a console restarted) starts over at `next`.
                        next: events.next,
                        empty,
                    };
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                continue; // one last look, then the deadline answers
            }
        }
    }

    /// Puts `question` from connection `conn` before the page and waits for its answer.
    /// Beyond [`Limits::max_asks`] waiting questions the new one is cancelled at once.
    pub(crate) async fn ask(self: Arc<Self>, conn: u64, question: Question) -> Answer {
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        {
            let mut asks = lock(&self.asks);
            if asks.len() >= self.limits.max_asks {
                drop(asks);
                self.push(json!({"type": "ask-refused", "conn": conn,
                    "method": question.method(), "reason": "too many questions are waiting"}));
                return refusal(&question);
            }
            asks.insert(id, Pending { answer: tx });
        }
        self.push(
            json!({"type": "ask", "conn": conn, "ask": id, "method": question.method(),
            "params": question.params(), "key": question.key()}),
        );
        // When the call is abandoned (timeout, disconnect) this future is dropped: the guard
        // takes the question off the page.
        let guard = AskGuard {
            state: self.clone(),
            id,
            conn,
        };
        let answer = rx.await.unwrap_or_else(|_| refusal(&question));
        drop(guard);
        answer
    }

    /// Answers question `id` with `answer`; false when no such question waits.
    pub(crate) fn answer(&self, id: u64, answer: Answer) -> bool {
        let pending = lock(&self.asks).remove(&id);
        match pending {
            Some(pending) => pending.answer.send(answer).is_ok(),
            None => false,
        }
    }

    /// Keeps `listener` of connection `conn` alive, its notifications going to the events;
    /// `None` at [`Limits::max_listeners`].
    pub(crate) fn add_listener(
        self: &Arc<Self>,
        conn: u64,
        listener: mcp_client::Listener,
    ) -> Option<u64> {
        use futures::StreamExt;
        let mut listeners = lock(&self.listeners);
        listeners.retain(|_, (_, task)| !task.is_finished());
        if listeners.len() >= self.limits.max_listeners {
            return None;
        }
        let id = self.next_id();
        let state = self.clone();
        let task = tokio::spawn(async move {
            let mut listener = listener;
            while let Some(n) = listener.next().await {
                state.push(json!({"type": "listened", "conn": conn, "listener": id,
                    "method": n.method, "params": n.params}));
            }
            state.push(json!({"type": "listen-ended", "conn": conn, "listener": id}));
        });
        listeners.insert(id, (conn, task));
        Some(id)
    }

    /// Ends listener `id` (dropping it ends the subscription); false when there is none.
    pub(crate) fn remove_listener(&self, id: u64) -> bool {
        match lock(&self.listeners).remove(&id) {
            Some((_, task)) => {
                task.abort();
                true
            }
            None => false,
        }
    }

    /// Ends every listener of connection `conn`.
    pub(crate) fn remove_listeners_of(&self, conn: u64) {
        lock(&self.listeners).retain(|_, (c, task)| {
            if *c == conn {
                task.abort();
            }
            *c != conn
        });
    }

    /// How many questions wait.
    pub(crate) fn waiting_asks(&self) -> usize {
        lock(&self.asks).len()
    }
}

/// The answer given when nobody can answer: cancel for elicitation, an error otherwise.
fn refusal(question: &Question) -> Answer {
    match question.kind() {
        mcp_client::QuestionKind::Elicitation | mcp_client::QuestionKind::UrlElicitation => {
            Answer::cancel()
        }
        _ => Answer::error(mcp_client::ErrorObject::new(
            -32603,
            "the console could not put the question to anyone",
        )),
    }
}

/// Forgets an abandoned login.
struct LoginGuard<'a> {
    state: &'a State,
    id: u64,
}

impl Drop for LoginGuard<'_> {
    fn drop(&mut self) {
        lock(&self.state.logins).remove(&self.id);
    }
}

/// Takes an abandoned question off the page.
struct AskGuard {
    state: Arc<State>,
    id: u64,
    conn: u64,
}

impl Drop for AskGuard {
    fn drop(&mut self) {
        lock(&self.state.asks).remove(&self.id);
        self.state
            .push(json!({"type": "ask-done", "conn": self.conn, "ask": self.id}));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn limits(max_events: usize, max_event_bytes: usize, max_connections: usize) -> Limits {
        Limits {
            max_connections,
            max_events,
            max_event_bytes,
            max_asks: 1,
            max_listeners: 1,
            max_http_connections: 2,
            max_actions: 2,
            max_body: 4096,
            timeout: Duration::from_secs(1),
        }
    }

    fn read(state: &State, after: u64) -> Value {
        let text = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(state.events_after(after, Duration::ZERO));
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn the_event_ring_is_bounded_by_count_and_reports_what_was_missed() {
        let state = State::new(limits(3, 1 << 20, 1), Value::Null, StdioPolicy::default());
        for i in 0..5 {
            state.push(json!({"type": "x", "i": i}));
        }
        let page = read(&state, 0);
        let seqs: Vec<u64> = page["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, [3, 4, 5]);
        assert_eq!(page["missed"], 2);
        assert_eq!(page["next"], 5);
        // A reader that is up to date missed nothing and gets nothing.
        let page = read(&state, 5);
        assert_eq!(page["events"], json!([]));
        assert_eq!(page["missed"], 0);
        // One that read up to 3 missed nothing either.
        assert_eq!(read(&state, 3)["missed"], 0);
    }

    #[test]
    fn the_event_ring_is_bounded_by_bytes_but_keeps_the_newest() {
        let state = State::new(limits(100, 200, 1), Value::Null, StdioPolicy::default());
        for _ in 0..10 {
            state.push(json!({"type": "x", "pad": "y".repeat(60)}));
        }
        let page = read(&state, 0);
        let kept = page["events"].as_array().unwrap().len();
        assert!((1..=2).contains(&kept), "{kept}");
        // One event larger than the whole budget is still kept (alone).
        state.push(json!({"type": "x", "pad": "z".repeat(1000)}));
        let page = read(&state, 0);
        assert_eq!(page["events"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn connection_slots_are_bounded_and_given_back() {
        let state = State::new(limits(10, 1 << 20, 2), Value::Null, StdioPolicy::default());
        let a = state.reserve().expect("first slot");
        let b = state.reserve().expect("second slot");
        assert!(state.reserve().is_none(), "the limit is 2");
        assert_ne!(a.id, b.id);
        drop(a);
        assert!(state.reserve().is_some(), "a dropped slot is given back");
    }

    #[test]
    fn jobs_are_bounded_and_their_results_kept_by_count_and_bytes() {
        // At most two jobs at once (max_actions 2), results within 200 bytes.
        let state = State::new(limits(100, 200, 1), Value::Null, StdioPolicy::default());
        let a = state.begin_job().expect("a first job");
        let b = state.begin_job().expect("a second job");
        assert!(state.begin_job().is_none(), "the limit is 2");
        let (ida, idb) = (a.id, b.id);
        a.finish(json!({"job": ida, "status": 200, "body": "small"}));
        let c = state.begin_job().expect("a finished job frees its place");
        assert!(state.result(ida).unwrap().contains("small"));
        // A large result pushes the older ones out by bytes; the newest stays.
        b.finish(json!({"job": idb, "status": 200, "body": "x".repeat(300)}));
        assert!(state.result(ida).is_none());
        assert!(state.result(idb).is_some());
        let idc = c.id;
        c.finish(json!({"job": idc, "status": 200, "body": "small"}));
        assert!(state.result(idb).is_none() && state.result(idc).is_some());
        // The results went to the events too (the newest kept there as well).
        let page = read(&state, 0);
        let last = page["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["type"], "result");
        assert_eq!(last["job"], idc);
    }
}
