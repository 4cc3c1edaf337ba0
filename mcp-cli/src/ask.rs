//! Answering the server's questions: from `--answer`, or by asking the person at the terminal
//! one prompt per field of the requested schema.

use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use mcp_client::{Answer, ErrorObject, Question, QuestionKind};
use serde_json::{Map, Number, Value};

use crate::args::Canned;
use crate::ui::Ui;

/// The JSON-RPC error sent back when nobody can answer (internal error: the client could not
/// produce an answer).
const NO_ANSWER_CODE: i64 = -32603;

/// Where answers come from, in order of preference.
#[derive(Debug)]
pub(crate) struct Asker {
    /// `--answer` values: the n-th question gets the n-th, later ones the last.
    canned: Vec<Canned>,
    next: AtomicUsize,
    /// Whether to prompt on stdin (a terminal, or `--interactive`).
    interactive: bool,
    /// Say nothing per question (`mcp bench`: a question on every call).
    quiet: bool,
    ui: Arc<Ui>,
    /// The message of the first question nobody could answer.
    unanswered: Mutex<Option<String>>,
    /// The time spent waiting for the person at the terminal, which `--timeout` does not count.
    clock: tokio::sync::watch::Sender<HumanClock>,
}

/// The time a person spent answering prompts: `--timeout` bounds the machines, not the human.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HumanClock {
    /// Prompts finished: their time in all.
    waited: Duration,
    /// Prompts on the screen now, and since when the first of them waits.
    prompting: usize,
    since: Option<Instant>,
}

impl HumanClock {
    /// Everything waited so far, the prompt on the screen included.
    fn total(&self) -> Duration {
        self.waited + self.since.map_or(Duration::ZERO, |since| since.elapsed())
    }
}

impl Asker {
    pub(crate) fn new(canned: Vec<Canned>, interactive: bool, ui: Arc<Ui>) -> Self {
        Self {
            canned,
            next: AtomicUsize::new(0),
            interactive,
            quiet: false,
            ui,
            unanswered: Mutex::new(None),
            clock: tokio::sync::watch::Sender::new(HumanClock::default()),
        }
    }

    /// An asker for many calls at once (`mcp bench`): answers only from `--answer`, never on
    /// the terminal, and notes nothing per question.
    pub(crate) fn quiet(canned: Vec<Canned>, ui: Arc<Ui>) -> Self {
        Self {
            quiet: true,
            ..Self::new(canned, false, ui)
        }
    }

    /// Whether a person may be asked on the terminal (the call then waits for them).
    pub(crate) fn asks_a_person(&self) -> bool {
        self.canned.is_empty() && self.interactive
    }

    /// `deadline` moved later by the time spent waiting for the person so far.
    pub(crate) fn extended(&self, deadline: Instant) -> Instant {
        deadline + self.clock.borrow().total()
    }

    /// Resolves when `deadline`, moved later by every moment a prompt waited for the person,
    /// has passed; never while a prompt is on the screen.
    pub(crate) async fn deadline(&self, deadline: Instant) {
        let mut clock = self.clock.subscribe();
        loop {
            let now = *clock.borrow_and_update();
            if now.since.is_some() {
                // A person is reading: the clock stands still until the prompt ends.
                if clock.changed().await.is_err() {
                    return std::future::pending().await;
                }
                continue;
            }
            tokio::select! {
                () = tokio::time::sleep_until(deadline + now.waited) => return,
                changed = clock.changed() => {
                    if changed.is_err() {
                        return std::future::pending().await;
                    }
                }
            }
        }
    }

    /// Marks a prompt on the screen (the clock stops) until the returned guard is dropped.
    fn prompting(self: &Arc<Self>) -> Prompting {
        self.clock.send_modify(|clock| {
            if clock.prompting == 0 {
                clock.since = Some(Instant::now());
            }
            clock.prompting += 1;
        });
        Prompting(self.clone())
    }

    /// The first question nobody could answer, if any.
    pub(crate) fn unanswered(&self) -> Option<String> {
        self.unanswered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Answers one question.
    pub(crate) async fn answer(self: Arc<Self>, question: Question) -> Answer {
        if !self.canned.is_empty() {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let canned = &self.canned[n.min(self.canned.len() - 1)];
            if !self.quiet {
                self.ui.note(&format!(
                    "answering {:?} with --answer",
                    question.message().unwrap_or(question.method())
                ));
            }
            return from_canned(canned, question.kind());
        }
        if self.interactive && is_elicitation(question.kind()) {
            let me = self.clone();
            let asked = Asked::from_question(&question);
            let _prompting = self.prompting();
            let prompted = tokio::task::spawn_blocking(move || {
                me.ui.suspend(|| {
                    let stdin = io::stdin();
                    let mut input = stdin.lock();
                    let mut output = io::stderr();
                    prompt(&asked, &mut input, &mut output)
                })
            })
            .await;
            if let Ok(Ok(answer)) = prompted {
                return answer;
            }
        }
        let message = question.message().unwrap_or(question.method()).to_owned();
        let mut slot = self.unanswered.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert(message);
        Answer::error(ErrorObject::new(
            NO_ANSWER_CODE,
            "the user could not be asked (no terminal and no --answer)",
        ))
    }
}

/// A prompt on the screen; dropped when it is answered (or the wait for it is dropped).
struct Prompting(Arc<Asker>);

impl Drop for Prompting {
    fn drop(&mut self) {
        self.0.clock.send_modify(|clock| {
            clock.prompting = clock.prompting.saturating_sub(1);
            if clock.prompting == 0
                && let Some(since) = clock.since.take()
            {
                clock.waited += since.elapsed();
            }
        });
    }
}

fn is_elicitation(kind: QuestionKind) -> bool {
    matches!(
        kind,
        QuestionKind::Elicitation | QuestionKind::UrlElicitation
    )
}

fn from_canned(canned: &Canned, kind: QuestionKind) -> Answer {
    match canned {
        Canned::Accept(_) if kind == QuestionKind::UrlElicitation => Answer::accept_url(),
        Canned::Accept(content) => Answer::accept(Value::Object(content.clone())),
        Canned::Decline => Answer::decline(),
        Canned::Cancel => Answer::cancel(),
        Canned::Result(result) => Answer::result(result.clone()),
    }
}

/// What a prompt shows: an elicitation's message, URL and requested schema.
#[derive(Debug, Clone, Default)]
pub(crate) struct Asked {
    message: Option<String>,
    /// The URL to open, for URL-mode elicitation.
    url: Option<String>,
    schema: Option<Value>,
}

impl Asked {
    fn from_question(question: &Question) -> Self {
        let url_mode = question.kind() == QuestionKind::UrlElicitation;
        Self {
            message: question.message().map(str::to_owned),
            url: url_mode.then(|| question.url().unwrap_or("(no URL)").to_owned()),
            schema: question.requested_schema().cloned(),
        }
    }
}

/// Asks the person: the message, accept/decline/cancel, then (on accept) one prompt per field
/// of the requested schema. End of input at any point cancels.
pub(crate) fn prompt(
    question: &Asked,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> io::Result<Answer> {
    let message = question.message.as_deref().unwrap_or("(no message)");
    writeln!(output, "? The server asks: {message}")?;
    let url = question.url.is_some();
    if let Some(link) = &question.url {
        writeln!(output, "  Open: {link}")?;
    }
    let action = loop {
        write!(output, "  accept, decline or cancel? [a/d/c] ")?;
        output.flush()?;
        let Some(line) = read_line(input)? else {
            writeln!(output)?;
            return Ok(Answer::cancel());
        };
        match line.to_ascii_lowercase().as_str() {
            "a" | "accept" | "y" | "yes" => break Action::Accept,
            "d" | "decline" | "n" | "no" => break Action::Decline,
            "c" | "cancel" => break Action::Cancel,
            _ => writeln!(output, "  ! type a, d or c")?,
        }
    };
    match action {
        Action::Decline => return Ok(Answer::decline()),
        Action::Cancel => return Ok(Answer::cancel()),
        Action::Accept if url => return Ok(Answer::accept_url()),
        Action::Accept => {}
    }
    let empty = Map::new();
    let schema = question.schema.as_ref();
    let properties = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    for (name, field) in properties {
        match ask_field(
            name,
            field,
            required.contains(&name.as_str()),
            input,
            output,
        )? {
            Field::Value(value) => {
                content.insert(name.clone(), value);
            }
            Field::Skipped => {}
            Field::Ended => {
                writeln!(output)?;
                return Ok(Answer::cancel());
            }
        }
    }
    Ok(Answer::accept(Value::Object(content)))
}

enum Action {
    Accept,
    Decline,
    Cancel,
}

enum Field {
    Value(Value),
    Skipped,
    Ended,
}

/// One choice of an enum field: the value sent, and the label shown.
struct Choice {
    value: Value,
    label: String,
}

/// The choices of a single-select enum (`enum` with optional `enumNames`, or `oneOf` of
/// `const`s with titles).
fn choices(schema: &Value) -> Option<Vec<Choice>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, value)| Choice {
                    value: value.clone(),
                    label: names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| plain(value), str::to_owned),
                })
                .collect(),
        );
    }
    let options = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    let list: Vec<Choice> = options
        .iter()
        .filter_map(|option| {
            let value = option.get("const")?.clone();
            let label = option
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| plain(&value), str::to_owned);
            Some(Choice { value, label })
        })
        .collect();
    (!list.is_empty()).then_some(list)
}

/// A value as a person would type it: strings without quotes.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn ask_field(
    name: &str,
    schema: &Value,
    required: bool,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> io::Result<Field> {
    let title = schema.get("title").and_then(Value::as_str).unwrap_or(name);
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let single = choices(schema);
    let multi = (kind == "array")
        .then(|| schema.get("items").and_then(choices))
        .flatten();
    let shown = single.as_ref().or(multi.as_ref());
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        writeln!(output, "  {title}: {description}")?;
    }
    if let Some(list) = shown {
        for (i, choice) in list.iter().enumerate() {
            writeln!(output, "    {}) {}", i + 1, choice.label)?;
        }
    }
    let default = schema.get("default");
    loop {
        let mut hint = match (&single, &multi) {
            (Some(_), _) => "choose a number".to_owned(),
            (_, Some(_)) => "numbers, comma-separated".to_owned(),
            _ => match kind {
                "boolean" => "y/n".to_owned(),
                other => other.to_owned(),
            },
        };
        if !required {
            hint.push_str(", optional");
        }
        if let Some(default) = default {
            hint.push_str(&format!(", default {}", plain(default)));
        }
        write!(output, "  {title} ({hint}): ")?;
        output.flush()?;
        let Some(line) = read_line(input)? else {
            return Ok(Field::Ended);
        };
        if line.is_empty() {
            if let Some(default) = default {
                return Ok(Field::Value(default.clone()));
            }
            if !required {
                return Ok(Field::Skipped);
            }
            writeln!(output, "  ! {title} is required")?;
            continue;
        }
        let parsed = if let Some(list) = &single {
            pick(list, &line)
        } else if let Some(list) = &multi {
            line.split(',')
                .map(|part| pick(list, part.trim()))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        } else {
            typed(kind, &line)
        };
        match parsed {
            Ok(value) => return Ok(Field::Value(value)),
            Err(problem) => writeln!(output, "  ! {problem}")?,
        }
    }
}

/// A choice by its number or its exact value.
fn pick(list: &[Choice], typed: &str) -> Result<Value, String> {
    if let Ok(n) = typed.parse::<usize>()
        && (1..=list.len()).contains(&n)
    {
        return Ok(list[n - 1].value.clone());
    }
    list.iter()
        .find(|c| plain(&c.value) == typed || c.label == typed)
        .map(|c| c.value.clone())
        .ok_or_else(|| format!("choose 1 to {}", list.len()))
}

/// A typed value of a primitive field.
fn typed(kind: &str, text: &str) -> Result<Value, String> {
    match kind {
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "expected a whole number".to_owned()),
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| "expected a number".to_owned()),
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("expected y or n".to_owned()),
        },
        _ => Ok(Value::String(text.to_owned())),
    }
}

/// One line without its line ending; `None` at end of input.
fn read_line(input: &mut dyn BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn question(schema: Value) -> Asked {
        Asked {
            message: Some("Who are you?".into()),
            url: None,
            schema: Some(schema),
        }
    }

    fn run(q: &Asked, typed: &str) -> (Answer, String) {
        let mut input = typed.as_bytes();
        let mut output = Vec::new();
        let answer = prompt(q, &mut input, &mut output).unwrap();
        (answer, String::from_utf8(output).unwrap())
    }

    #[test]
    fn fields_are_prompted_typed_and_validated() {
        let q = question(json!({
            "type": "object",
            "properties": {
                "age": {"type": "integer", "description": "In years"},
                "color": {"type": "string", "enum": ["red", "green"], "enumNames": ["Red", "Green"]},
                "name": {"type": "string"},
                "nick": {"type": "string"},
                "ok": {"type": "boolean"},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}},
                "weight": {"type": "number", "default": 1.5}
            },
            "required": ["age", "name", "ok"]
        }));
        let (answer, shown) = run(
            &q,
            "x\na\nold\n42\n9\n2\n\nAda\n\nmaybe\nyes\nLarge\n1, c\n\n",
        );
        assert_eq!(
            answer,
            Answer::accept(
                json!({"age": 42, "color": "green", "name": "Ada", "ok": true,
                                  "size": "l", "tags": ["a", "c"], "weight": 1.5})
            )
        );
        assert!(shown.contains("? The server asks: Who are you?"));
        assert!(shown.contains("! type a, d or c"));
        assert!(shown.contains("! expected a whole number"));
        assert!(shown.contains("! choose 1 to 2"));
        assert!(shown.contains("! name is required"));
        assert!(shown.contains("! expected y or n"));
        assert!(shown.contains("1) Red"));
        assert!(shown.contains("age: In years"));
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        let q = question(
            json!({"type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}),
        );
        assert_eq!(run(&q, "d\n").0, Answer::decline());
        assert_eq!(run(&q, "cancel\n").0, Answer::cancel());
        assert_eq!(run(&q, "").0, Answer::cancel());
        assert_eq!(run(&q, "a\n").0, Answer::cancel());
        let none = question(json!({"type": "object", "properties": {}}));
        assert_eq!(run(&none, "yes\n").0, Answer::accept(json!({})));
    }

    #[test]
    fn url_mode_asks_consent_only() {
        let q = Asked {
            message: Some("Sign in".into()),
            url: Some("https://example.invalid/auth".into()),
            schema: None,
        };
        let (answer, shown) = run(&q, "a\n");
        assert_eq!(answer, Answer::accept_url());
        assert!(shown.contains("Open: https://example.invalid/auth"));
    }

    #[test]
    fn canned_answers_fit_the_question() {
        assert_eq!(
            from_canned(&Canned::Accept(Map::new()), QuestionKind::UrlElicitation),
            Answer::accept_url()
        );
        assert_eq!(
            from_canned(&Canned::Decline, QuestionKind::Elicitation),
            Answer::decline()
        );
    }
}
