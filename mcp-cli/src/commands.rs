//! The commands: each connects, does one thing, prints it, and closes.

use std::time::Duration;

use tokio::time::Instant;

use futures::StreamExt;
use mcp_client::oauth::TokenStore as _;
use mcp_client::{
    CallOptions, Client, ListenEnd, Revision, StreamState, Subscriptions, TaskStatus, ToolCall,
};
use serde_json::{Map, Value, json};

use crate::args::{Sources, prompt_arguments, tool_arguments};
use crate::cli::{
    AuthCommand, CallArgs, Command, CompleteArgs, Global, ListenArgs, TransportChoice,
};
use crate::connect::{Session, Target};
use crate::error::{CliError, one_line};
use crate::interrupt::Interrupt;
use crate::output::{self, print, print_json, table, text_of};

/// The client's timeout of a call that may ask a person on the terminal: the command's own
/// deadline bounds such a call without counting the time the person takes, and this bounds a
/// person who never answers.
const HUMAN_BACKSTOP: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest one revision probe of `mcp discover` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs one command to completion.
pub(crate) async fn run(global: &Global, command: Command) -> Result<(), CliError> {
    match command {
        Command::Tools(r) => {
            let (session, words) = open(global, r.words)?;
            no_more(&words, "tools")?;
            with_client(&session, Bound::Whole, |c, _| tools(&session, c)).await
        }
        Command::Call(CallArgs { rest, args_json }) => {
            let (session, words) = open(global, rest.words)?;
            let Some((tool, rest)) = words.split_first() else {
                return Err(CliError::Usage("mcp call needs the tool's name".into()));
            };
            if args_json.as_deref() == Some("-") && global.interactive {
                return Err(CliError::Usage(
                    "--args-json - reads stdin, so --interactive cannot prompt on it: \
                     answer with --answer, or give the arguments in a file (--args-json @FILE)"
                        .into(),
                ));
            }
            let mut sources = Sources::default();
            let json = match &args_json {
                Some(given) => Some(sources.args_json(given)?),
                None => None,
            };
            let arguments = tool_arguments(rest, json, &mut sources)?;
            if sources.read_so_far() > 0 {
                // A long value from a file: a failure may be the server refusing its size.
                crate::error::note_request_size(arguments.to_string().len());
            }
            crate::auth::doing(tool);
            with_client(&session, Bound::Whole, |c, _| {
                call(&session, c, tool, arguments)
            })
            .await
        }
        Command::Resources(r) => {
            let (session, words) = open(global, r.words)?;
            no_more(&words, "resources")?;
            with_client(&session, Bound::Whole, |c, _| resources(&session, c)).await
        }
        Command::Read(r) => {
            let (session, words) = open(global, r.words)?;
            let [uri] = words.as_slice() else {
                return Err(CliError::Usage("mcp read needs exactly one URI".into()));
            };
            with_client(&session, Bound::Whole, |c, _| read(&session, c, uri)).await
        }
        Command::Prompts(r) => {
            let (session, words) = open(global, r.words)?;
            no_more(&words, "prompts")?;
            with_client(&session, Bound::Whole, |c, _| prompts(&session, c)).await
        }
        Command::Prompt(r) => {
            let (session, words) = open(global, r.words)?;
            let Some((name, rest)) = words.split_first() else {
                return Err(CliError::Usage("mcp prompt needs the prompt's name".into()));
            };
            let arguments = prompt_arguments(rest, &mut Sources::default())?;
            with_client(&session, Bound::Whole, |c, _| {
                prompt(&session, c, name, arguments)
            })
            .await
        }
        Command::Complete(CompleteArgs {
            rest,
            prompt,
            resource_template,
            args,
        }) => {
            let (session, words) = open(global, rest.words)?;
            no_more(&words, "complete")?;
            let reference = match (prompt, resource_template) {
                (Some(name), None) => json!({"type": "ref/prompt", "name": name}),
                (None, Some(uri)) => json!({"type": "ref/resource", "uri": uri}),
                _ => {
                    return Err(CliError::Usage(
                        "mcp complete needs --prompt NAME or --resource-template URI".into(),
                    ));
                }
            };
            let mut pairs = Vec::with_capacity(args.len());
            for arg in &args {
                let Some((name, value)) = arg.split_once('=') else {
                    return Err(CliError::Usage(format!(
                        "--arg is NAME=VALUE (the value may be empty: --arg name=), got {arg:?}"
                    )));
                };
                if name.is_empty() {
                    return Err(CliError::Usage(format!(
                        "--arg {arg:?} has no name before '='"
                    )));
                }
                pairs.push((name.to_owned(), value.to_owned()));
            }
            let Some((name, value)) = pairs.pop() else {
                return Err(CliError::Usage(
                    "mcp complete needs --arg NAME=VALUE: the argument to complete".into(),
                ));
            };
            let context = (!pairs.is_empty()).then(|| {
                let filled: Map<String, Value> = pairs
                    .into_iter()
                    .map(|(name, value)| (name, Value::String(value)))
                    .collect();
                json!({"arguments": filled})
            });
            with_client(&session, Bound::Whole, |c, _| {
                complete(&session, c, reference, name, value, context)
            })
            .await
        }
        Command::Discover(r) => {
            let (session, words) = open(global, r.words)?;
            no_more(&words, "discover")?;
            discover(&session).await
        }
        Command::Console(args) => crate::console::run(global, args).await,
        Command::Proxy(args) => crate::proxy::run(global, args).await,
        Command::Bench(args) => crate::bench::run(global, args).await,
        Command::Login(r) => {
            let mut words = r.words;
            let session = Session::new_for(global, &mut words, true)?;
            no_more(&words, "login")?;
            login(global, &session).await
        }
        Command::Logout(r) => {
            let (session, words) = open(global, r.words)?;
            no_more(&words, "logout")?;
            logout(global, &session)
        }
        Command::Auth(args) => match args.command {
            AuthCommand::Status => auth_status(global),
        },
        Command::Listen(args) => {
            let ListenArgs {
                rest,
                resources,
                count,
                reconnect_for,
            } = args;
            let (session, words) = open(global, rest.words)?;
            no_more(&words, "listen")?;
            let listened = listen_until_done(
                &session,
                &resources,
                count,
                Duration::from_secs(reconnect_for),
            )
            .await;
            match listened {
                // Ctrl-C is how a listen normally ends.
                Err(CliError::Interrupted) => {
                    session.ui.note("stopped listening");
                    Ok(())
                }
                other => other,
            }
        }
    }
}

fn open(global: &Global, mut words: Vec<String>) -> Result<(Session, Vec<String>), CliError> {
    let session = Session::new(global, &mut words)?;
    Ok((session, words))
}

fn no_more(words: &[String], command: &str) -> Result<(), CliError> {
    match words.first() {
        None => Ok(()),
        Some(extra) => Err(CliError::Usage(format!(
            "mcp {command} takes no argument {extra:?}"
        ))),
    }
}

/// What `--timeout` bounds in a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// Everything: connecting, the request (every page of a list, the questions), closing.
    Whole,
    /// Connecting and setting up a subscription; listening itself is unbounded (Ctrl-C ends it).
    UntilListening,
}

/// Connects, runs `f`, closes (whatever `f` returned), and turns an unanswered question into
/// the error that explains the failure.
///
/// The whole operation has one deadline, `--timeout` from now: a server that hangs at any step
/// ends the command once, when it passes, not after a full timeout per step. `f` gets the
/// deadline (for what [`Bound::UntilListening`] still bounds). Closing gets what is left of it;
/// with nothing left the session is not closed (a stdio child is killed, an HTTP session is
/// left to expire on the server).
async fn with_client<'a, F, Fut>(session: &'a Session, bound: Bound, f: F) -> Result<(), CliError>
where
    F: FnOnce(Client, Instant) -> Fut,
    Fut: Future<Output = Result<(), CliError>> + 'a,
{
    let deadline = Instant::now() + session.timeout;
    // Installed before connecting, so a Ctrl-C from then on is always caught.
    let mut interrupt = Interrupt::install();
    let client = tokio::select! {
        connected = tokio::time::timeout_at(deadline, session.connect()) => {
            connected.map_err(|_| session.deadline_passed("connecting"))??
        }
        () = interrupt.wait() => return Err(CliError::Interrupted),
    };
    // Ctrl-C drops the command's future, which cancels its request on the server, and the
    // session is still closed below.
    // Time spent waiting for the person to answer a question is not counted: the deadline
    // moves later by it, and never passes while a prompt is on the screen.
    let command = async {
        match bound {
            Bound::Whole => tokio::select! {
                done = f(client.clone(), deadline) => done,
                () = session.asker.deadline(deadline) => Err(session.deadline_passed("the request")),
            },
            Bound::UntilListening => f(client.clone(), deadline).await,
        }
    };
    let outcome = tokio::select! {
        outcome = command => outcome,
        () = interrupt.wait() => Err(CliError::Interrupted),
    };
    session.ui.finish();
    let closing = match bound {
        Bound::Whole => session
            .asker
            .extended(deadline)
            .saturating_duration_since(Instant::now()),
        Bound::UntilListening => session.timeout,
    };
    if !closing.is_zero() {
        let closed = tokio::time::timeout(closing, client.close()).await;
        let failure = match closed {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(one_line(&e.to_string())),
            Err(_) => Some(format!("no answer within the {:?} left", closing)),
        };
        if let Some(failure) = failure {
            session.ui.note(&format!("closing: {failure}"));
        }
    }
    match (outcome, session.asker.unanswered()) {
        (Ok(()), None) => Ok(()),
        (_, Some(question)) => Err(CliError::Unanswered { question }),
        (Err(e), None) => Err(e),
    }
}

fn failed(what: impl Into<String>) -> impl FnOnce(mcp_client::Error) -> CliError {
    let what = what.into();
    move |source| CliError::Request { what, source }
}

async fn tools(session: &Session, client: Client) -> Result<(), CliError> {
    let list = client.list_tools().await.map_err(failed("tools/list"))?;
    if session.json {
        return print_json(&json!({"tools": list}));
    }
    if list.is_empty() {
        return print("(no tools)\n");
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|tool| {
            vec![
                text_of(tool, "name").to_owned(),
                output::tool_arguments(tool),
                output::describe(tool),
            ]
        })
        .collect();
    print(&table(&["NAME", "ARGUMENTS", "DESCRIPTION"], &rows))
}

async fn call(
    session: &Session,
    client: Client,
    tool: &str,
    arguments: Value,
) -> Result<(), CliError> {
    let ui = session.ui.clone();
    let mut options = CallOptions::new().on_progress(move |p| ui.progress(&p));
    if session.asker.asks_a_person() {
        // A person may be asked and take their time: the client's own per-call timeout is
        // then only a backstop, and the command's deadline (which does not count the time
        // spent answering) bounds the call.
        options = options.timeout(HUMAN_BACKSTOP);
    }
    let call = client
        .call_tool_as_task_with(tool, arguments, options)
        .await
        .map_err(failed(format!("tools/call {tool:?}")))?;
    let result = match call {
        ToolCall::Done(result) => result,
        // A task (the server runs the call as one): its status on stderr as it changes;
        // Ctrl-C drops the handle, which cancels the task on the server.
        ToolCall::Task(handle) => {
            let ui = session.ui.clone();
            let mut last = String::new();
            handle
                .wait_with(move |task| {
                    let mut line = format!("task {}: {}", task.id(), status_word(&task.status()));
                    if let Some(message) = task.status_message() {
                        line.push_str(&format!(" ({})", one_line(message)));
                    }
                    if line != last {
                        ui.note(&line);
                        last = line;
                    }
                })
                .await
                .map_err(failed(format!("tools/call {tool:?} (task)")))?
        }
        _ => return Err(CliError::Usage("an unknown kind of tool call".into())),
    };
    session.ui.finish();
    let blocks: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    if session.json {
        print_json(&result)?;
    } else if !is_error {
        let structured = result.get("structuredContent");
        match structured {
            Some(value) if blocks.is_empty() => print_json(value)?,
            _ => print(&output::content(blocks))?,
        }
    }
    if is_error {
        return Err(CliError::ToolFailed {
            tool: tool.to_owned(),
            message: one_line(&output::content(blocks)),
        });
    }
    Ok(())
}

/// A task status as the protocol spells it.
fn status_word(status: &TaskStatus) -> &str {
    match status {
        TaskStatus::Working => "working",
        TaskStatus::InputRequired => "input_required",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
        TaskStatus::Other(other) => other,
        _ => "unknown",
    }
}

async fn resources(session: &Session, client: Client) -> Result<(), CliError> {
    let list = client
        .list_resources()
        .await
        .map_err(failed("resources/list"))?;
    let templates = client
        .list_resource_templates()
        .await
        .map_err(failed("resources/templates/list"))?;
    if session.json {
        return print_json(&json!({"resources": list, "resourceTemplates": templates}));
    }
    let mut rows: Vec<Vec<String>> = list
        .iter()
        .map(|r| {
            vec![
                text_of(r, "uri").to_owned(),
                text_of(r, "name").to_owned(),
                text_of(r, "mimeType").to_owned(),
                output::describe(r),
            ]
        })
        .collect();
    rows.extend(templates.iter().map(|t| {
        vec![
            text_of(t, "uriTemplate").to_owned(),
            text_of(t, "name").to_owned(),
            text_of(t, "mimeType").to_owned(),
            output::describe(t),
        ]
    }));
    if rows.is_empty() {
        return print("(no resources)\n");
    }
    print(&table(&["URI", "NAME", "MIME", "DESCRIPTION"], &rows))
}

async fn read(session: &Session, client: Client, uri: &str) -> Result<(), CliError> {
    let result = client
        .read_resource(uri)
        .await
        .map_err(failed(format!("resources/read {uri:?}")))?;
    if session.json {
        return print_json(&result);
    }
    let contents: &[Value] = result
        .get("contents")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    print(&output::resource_contents(contents))
}

async fn prompts(session: &Session, client: Client) -> Result<(), CliError> {
    let list = client
        .list_prompts()
        .await
        .map_err(failed("prompts/list"))?;
    if session.json {
        return print_json(&json!({"prompts": list}));
    }
    if list.is_empty() {
        return print("(no prompts)\n");
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|p| {
            vec![
                text_of(p, "name").to_owned(),
                output::prompt_arguments(p),
                output::describe(p),
            ]
        })
        .collect();
    print(&table(&["NAME", "ARGUMENTS", "DESCRIPTION"], &rows))
}

async fn prompt(
    session: &Session,
    client: Client,
    name: &str,
    arguments: Value,
) -> Result<(), CliError> {
    let result = client
        .get_prompt(name, arguments)
        .await
        .map_err(failed(format!("prompts/get {name:?}")))?;
    if session.json {
        return print_json(&result);
    }
    print(&output::prompt_messages(&result))
}

/// `mcp complete`: the values, one per line (at most [`output::MAX_COMPLETIONS`]), and a note
/// of how many more the server has.
async fn complete(
    session: &Session,
    client: Client,
    reference: Value,
    argument: String,
    value: String,
    context: Option<Value>,
) -> Result<(), CliError> {
    let what = match reference.get("name").or_else(|| reference.get("uri")) {
        Some(Value::String(of)) => format!("completion/complete {of:?} {argument:?}"),
        _ => "completion/complete".to_owned(),
    };
    let mut result = client
        .complete(reference, &argument, &value, context)
        .await
        .map_err(failed(what))?;
    output::bound_completion(&mut result);
    if session.json {
        return print_json(&result);
    }
    let completion = result.get("completion").cloned().unwrap_or(Value::Null);
    let values: Vec<&str> = completion
        .get("values")
        .and_then(Value::as_array)
        .map(|values| values.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut text = String::new();
    for value in &values {
        text.push_str(&one_line(value));
        text.push('\n');
    }
    print(&text)?;
    let total = completion.get("total").and_then(Value::as_u64);
    let has_more = completion.get("hasMore").and_then(Value::as_bool) == Some(true);
    let shown = values.len() as u64;
    match total {
        Some(total) if total > shown => session
            .ui
            .note(&format!("{} more (total {total})", total - shown)),
        _ if has_more => session.ui.note("the server has more"),
        _ if values.is_empty() => session.ui.note("no completions"),
        _ => {}
    }
    Ok(())
}

/// How one connection's listen ended.
enum Listened {
    /// Done: the count was reached.
    Done,
    /// The connection was lost: reconnect and listen again.
    Lost(String),
    /// The server ended the subscription cleanly while the user had not asked to stop: a
    /// server shutting down (a SIGTERM drain, a rolling restart) does this. Reconnect and
    /// listen again, as after a loss (a stdio server's end is final).
    Ended,
}

/// How long a reconnected listen must stay up (or deliver a notification) before a later loss
/// opens a fresh `--reconnect-for` window: a server that ends every subscription at once is
/// given up on when the first window passes, instead of being reconnected to forever.
const RECOVERED_AFTER: Duration = Duration::from_secs(10);

/// `mcp listen`: listens, and when the server goes away, reconnects (a new session, subscribed
/// again) for up to `reconnect_for` before giving up. `--count` counts across reconnections.
async fn listen_until_done(
    session: &Session,
    resources: &[String],
    count: Option<u64>,
    reconnect_for: Duration,
) -> Result<(), CliError> {
    let seen = std::cell::Cell::new(0u64);
    // While reconnecting: when it began, why, and the pause before the next try.
    let mut lost: Option<(Instant, String, Duration)> = None;
    loop {
        let outcome = std::cell::RefCell::new(Listened::Done);
        let (started, seen_before) = (Instant::now(), seen.get());
        let attempt = with_client(session, Bound::UntilListening, |c, deadline| {
            let reconnected = lost.is_some();
            let (seen, outcome) = (&seen, &outcome);
            async move {
                let ended =
                    listen(session, c, resources, count, deadline, seen, reconnected).await?;
                *outcome.borrow_mut() = ended;
                Ok(())
            }
        })
        .await;
        match (attempt, outcome.into_inner()) {
            (Ok(()), Listened::Done) => return Ok(()),
            // A stdio server that exited is not started again behind the user's back.
            (Ok(()), Listened::Lost(why)) if matches!(session.target, Target::Stdio(_)) => {
                return Err(CliError::Lost {
                    target: session.target.name(),
                    reason: why,
                    tried: Duration::ZERO,
                });
            }
            (Ok(()), Listened::Ended) if matches!(session.target, Target::Stdio(_)) => {
                session.ui.note("the server ended the subscription");
                return Ok(());
            }
            (Ok(()), ended) => {
                let why = match ended {
                    Listened::Lost(why) => {
                        session.ui.note(&format!(
                            "lost the connection to the server ({why}); reconnecting"
                        ));
                        why
                    }
                    _ => {
                        session.ui.note(
                            "the server ended the subscription (shutting down or restarting?); \
                             reconnecting",
                        );
                        "the server ended the subscription".to_owned()
                    }
                };
                // A connection that held (or delivered something) recovered: a fresh window.
                // One that ended at once keeps the window of the first loss.
                let recovered = seen.get() > seen_before || started.elapsed() >= RECOVERED_AFTER;
                if recovered || lost.is_none() {
                    lost = Some((Instant::now(), why, Duration::from_millis(200)));
                }
            }
            // Still away: try again while the window lasts.
            (Err(CliError::Connect { .. } | CliError::Deadline { .. }), _) if lost.is_some() => {}
            (Err(e), _) => return Err(e),
        }
        let Some((since, first, pause)) = lost.as_mut() else {
            return Ok(());
        };
        if since.elapsed() + *pause > reconnect_for {
            return Err(CliError::Lost {
                target: session.target.name(),
                reason: first.clone(),
                tried: reconnect_for,
            });
        }
        let mut interrupt = Interrupt::install();
        tokio::select! {
            () = tokio::time::sleep(*pause) => {}
            () = interrupt.wait() => return Err(CliError::Interrupted),
        }
        *pause = (*pause * 2).min(Duration::from_secs(5));
    }
}

async fn listen(
    session: &Session,
    client: Client,
    resources: &[String],
    count: Option<u64>,
    deadline: Instant,
    seen: &std::cell::Cell<u64>,
    reconnected: bool,
) -> Result<Listened, CliError> {
    let mut subscriptions = Subscriptions::new()
        .tools_changed()
        .prompts_changed()
        .resources_changed();
    let can_subscribe = client.server().is_some_and(|d| {
        d.capabilities
            .pointer("/resources/subscribe")
            .and_then(Value::as_bool)
            == Some(true)
    });
    let resources = if can_subscribe || resources.is_empty() {
        resources
    } else {
        if !reconnected {
            session.ui.note(
                "the server does not offer resource subscriptions (capabilities.resources.subscribe); \
                 listening for list changes only",
            );
        }
        &[]
    };
    for uri in resources {
        subscriptions = subscriptions.resource(uri.clone());
    }
    let mut listener = tokio::time::timeout_at(deadline, client.listen(subscriptions))
        .await
        .map_err(|_| session.deadline_passed("subscribing"))?
        .map_err(failed("listen"))?;
    let mut what = vec!["tools, prompts and resources list changes".to_owned()];
    what.extend(resources.iter().map(|uri| format!("updates of {uri}")));
    let accepted = match listener.accepted() {
        Some(Value::Object(map)) if map.is_empty() => {
            "; the server accepted none of them".to_owned()
        }
        Some(Value::Object(map)) => {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            format!("; the server accepted {}", keys.join(", "))
        }
        _ => String::new(),
    };
    let again = if reconnected { "reconnected; " } else { "" };
    session.ui.note(&format!(
        "{again}listening for {}{accepted} (Ctrl-C to stop)",
        what.join(", ")
    ));
    if count.is_some_and(|n| seen.get() >= n) {
        return Ok(Listened::Done);
    }
    // The standalone stream of a Streamable HTTP session (handshake revisions) is reopened by
    // the client itself, in a new session when the server forgot the old one: say so.
    let mut stream = listener.stream_state();
    let mut was_open = stream
        .as_ref()
        .is_some_and(|s| matches!(*s.borrow(), StreamState::Open));
    loop {
        let notification = tokio::select! {
            n = listener.next() => n,
            changed = async {
                match stream.as_mut() {
                    Some(s) => s.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            } => {
                if !changed {
                    stream = None;
                    continue;
                }
                let open = stream
                    .as_mut()
                    .is_some_and(|s| matches!(*s.borrow_and_update(), StreamState::Open));
                match (was_open, open) {
                    (true, false) => session
                        .ui
                        .note("the notification stream closed; reconnecting"),
                    (false, true) => session.ui.note(&format!(
                        "reconnected; listening again for {}",
                        what.join(", ")
                    )),
                    _ => {}
                }
                was_open = open;
                continue;
            }
        };
        let Some(notification) = notification else {
            break;
        };
        let params = notification.params.clone().unwrap_or(Value::Null);
        if session.json {
            let line = json!({"method": notification.method, "params": params});
            print(&format!("{line}\n"))?;
        } else {
            let short = notification
                .method
                .strip_prefix("notifications/")
                .unwrap_or(&notification.method);
            match params.get("uri").and_then(Value::as_str) {
                Some(uri) => print(&format!("{short} {uri}\n"))?,
                None => print(&format!("{short}\n"))?,
            }
        }
        seen.set(seen.get() + 1);
        if count.is_some_and(|n| seen.get() >= n) {
            return Ok(Listened::Done);
        }
    }
    match listener.end() {
        Some(ListenEnd::Lost(why)) => Ok(Listened::Lost(one_line(why))),
        // The user did not ask to stop (no --count reached, no Ctrl-C): a clean end is a
        // server going away on purpose.
        _ => Ok(Listened::Ended),
    }
}

/// One probed revision.
struct Probe {
    revision: Revision,
    transport: &'static str,
    outcome: Result<(), String>,
}

async fn discover(session: &Session) -> Result<(), CliError> {
    // First the connection the other commands would make: it says what the server is.
    let client = session.connect().await?;
    let description = client.server();
    let negotiated = client.revision();
    let _ = client.close().await;
    let transports: Vec<(TransportChoice, &'static str)> =
        match (&session.target, session.transport) {
            (Target::Stdio(_), _) => vec![(TransportChoice::Auto, "stdio")],
            (Target::Url(_), TransportChoice::Sse) => vec![(TransportChoice::Sse, "http+sse")],
            (Target::Url(_), _) => vec![(TransportChoice::Streamable, "streamable-http")],
        };
    let mut probes = Vec::new();
    for (transport, label) in transports {
        for revision in Revision::ALL {
            // Each probe is one operation, with one deadline.
            let limit = PROBE_TIMEOUT.min(session.timeout);
            let probe = tokio::time::timeout(limit, probe(session, revision, transport));
            let outcome = match probe.await {
                Ok(outcome) => outcome,
                Err(_) => Err(format!("no answer within {limit:?}")),
            };
            probes.push(Probe {
                revision,
                transport: label,
                outcome,
            });
        }
    }
    let server_info = description
        .as_ref()
        .and_then(|d| d.server_info.clone())
        .unwrap_or(Value::Null);
    let capabilities = description
        .as_ref()
        .map(|d| d.capabilities.clone())
        .unwrap_or(Value::Null);
    let instructions = description.as_ref().and_then(|d| d.instructions.clone());
    if session.json {
        let revisions: Vec<Value> = probes
            .iter()
            .map(|p| {
                let mut row = Map::new();
                row.insert("revision".into(), json!(p.revision.as_str()));
                row.insert("transport".into(), json!(p.transport));
                row.insert("speaks".into(), json!(p.outcome.is_ok()));
                if let Err(reason) = &p.outcome {
                    row.insert("error".into(), json!(reason));
                }
                Value::Object(row)
            })
            .collect();
        return print_json(&json!({
            "target": session.target.name(),
            "negotiated": negotiated.as_str(),
            "serverInfo": server_info,
            "capabilities": capabilities,
            "instructions": instructions,
            "supportedVersions": description.as_ref().map(|d| d.supported_versions.clone()).unwrap_or_default(),
            "revisions": revisions,
        }));
    }
    let mut text = String::new();
    let name = text_of(&server_info, "name");
    let version = text_of(&server_info, "version");
    let title = text_of(&server_info, "title");
    let mut about = vec![
        vec![
            "server".to_owned(),
            match title {
                "" => format!("{name} {version}"),
                t => format!("{name} {version} ({t})"),
            },
        ],
        vec!["negotiated".to_owned(), negotiated.as_str().to_owned()],
    ];
    let listed = description
        .as_ref()
        .map(|d| d.supported_versions.join(", "))
        .unwrap_or_default();
    if !listed.is_empty() {
        about.push(vec!["lists".to_owned(), listed]);
    }
    let offers: Vec<&str> = capabilities
        .as_object()
        .map(|c| c.keys().map(String::as_str).collect())
        .unwrap_or_default();
    about.push(vec!["offers".to_owned(), offers.join(", ")]);
    if let Some(instructions) = &instructions {
        about.push(vec!["instructions".to_owned(), one_line(instructions)]);
    }
    for row in &about {
        text.push_str(&format!("{:<13}{}\n", row[0], row[1]));
    }
    text.push('\n');
    let rows: Vec<Vec<String>> = probes
        .iter()
        .map(|p| {
            let (speaks, note) = match &p.outcome {
                Ok(()) => ("yes".to_owned(), String::new()),
                Err(reason) => ("no".to_owned(), one_line(reason)),
            };
            vec![
                p.revision.as_str().to_owned(),
                p.transport.to_owned(),
                speaks,
                note,
            ]
        })
        .collect();
    text.push_str(&table(&["REVISION", "TRANSPORT", "SPEAKS", "NOTE"], &rows));
    print(&text)
}

/// Connects pinned to `revision` and lists the tools (or pings, for a server without tools):
/// the revision is spoken when the connection holds and a request goes through on it.
async fn probe(
    session: &Session,
    revision: Revision,
    transport: TransportChoice,
) -> Result<(), String> {
    let client = session
        .connect_as(Some(revision), transport, false)
        .await
        .map_err(|e| match e {
            CliError::Connect { source, .. } => source.to_string(),
            other => other.to_string(),
        })?;
    let outcome = if client.revision() != revision {
        Err(format!("the server answered with {}", client.revision()))
    } else {
        let has_tools = client
            .server()
            .is_some_and(|d| d.capabilities.get("tools").is_some());
        let checked = if has_tools {
            client.list_tools().await.map(|_| ())
        } else {
            Ok(())
        };
        checked.map_err(|e| e.to_string())
    };
    let _ = client.close().await;
    outcome
}

/// `mcp login URL`: connects (the server's challenge starts the authorization) and reports
/// what was kept.
async fn login(global: &Global, session: &Session) -> Result<(), CliError> {
    let Target::Url(url) = &session.target else {
        return Err(CliError::Usage("mcp login needs a URL".into()));
    };
    with_client(session, Bound::Whole, |c, _| async move {
        c.list_tools().await.map_err(failed("tools/list"))?;
        Ok(())
    })
    .await?;
    let store = mcp_client::oauth::FileTokenStore::new(crate::auth::token_file(global)?);
    match store.load_tokens(url).map_err(auth_usage)? {
        Some(tokens) => {
            if session.json {
                print_json(&status_json(&tokens))?;
            } else {
                println!(
                    "logged in to {url} (authorization server {}; scopes {})",
                    tokens.issuer,
                    tokens.scope.as_deref().unwrap_or("none")
                );
            }
        }
        None => {
            if session.json {
                print_json(&json!({"server": url, "authorization": null}))?;
            } else {
                println!("{url} did not ask for authorization: nothing to keep");
            }
        }
    }
    Ok(())
}

/// `mcp logout URL`: forgets the server's tokens.
fn logout(global: &Global, session: &Session) -> Result<(), CliError> {
    let Target::Url(url) = &session.target else {
        return Err(CliError::Usage("mcp logout needs a URL".into()));
    };
    let store = mcp_client::oauth::FileTokenStore::new(crate::auth::token_file(global)?);
    let had = store.load_tokens(url).map_err(auth_usage)?.is_some();
    store.remove_tokens(url).map_err(auth_usage)?;
    if session.json {
        print_json(&json!({"server": url, "removed": had}))?;
    } else if had {
        println!("logged out of {url}");
    } else {
        println!("no tokens were kept for {url}");
    }
    Ok(())
}

/// `mcp auth status`: the servers with kept tokens.
fn auth_status(global: &Global) -> Result<(), CliError> {
    let path = crate::auth::token_file(global)?;
    let store = mcp_client::oauth::FileTokenStore::new(&path);
    let all = store.all_tokens().map_err(auth_usage)?;
    if global.json {
        let list: Vec<Value> = all.iter().map(status_json).collect();
        return print_json(&json!({"file": path.display().to_string(), "servers": list}));
    }
    if all.is_empty() {
        println!("no tokens kept (in {})", path.display());
        return Ok(());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for tokens in &all {
        let expiry = match tokens.expires_at {
            Some(at) if at > now => format!("expires in {}s", at - now),
            Some(_) => "expired".to_owned(),
            None => "no expiry given".to_owned(),
        };
        let refresh = if tokens.refresh_token.is_some() {
            ", refreshable"
        } else {
            ""
        };
        println!(
            "{}: authorization server {}, scopes {}, {expiry}{refresh}",
            tokens.server,
            tokens.issuer,
            tokens.scope.as_deref().unwrap_or("none")
        );
    }
    Ok(())
}

fn status_json(tokens: &mcp_client::oauth::TokenSet) -> Value {
    json!({
        "server": tokens.server,
        "issuer": tokens.issuer,
        "scope": tokens.scope,
        "expires_at": tokens.expires_at,
        "refreshable": tokens.refresh_token.is_some(),
    })
}

fn auth_usage(error: mcp_client::oauth::OAuthError) -> CliError {
    CliError::Usage(error.to_string())
}
