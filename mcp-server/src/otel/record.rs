//! A span as the export layer keeps it while it runs and hands it to the export thread when
//! it closes: ids, times, and its attributes with `&'static` keys (a `tracing` field's name)
//! and values whose text shares one buffer. Bounded: at most [`MAX_ATTRIBUTES`] attributes,
//! [`MAX_EVENTS`] events of [`MAX_EVENT_ATTRIBUTES`] attributes, [`MAX_LINKS`] links and
//! [`MAX_TEXT`] bytes of text; what does not fit is counted as dropped (text is cut at a
//! character boundary). [`Record::footprint`] is what a record holds in memory, for the
//! queue's byte bound.

use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};

/// Attributes kept per span and per event (OpenTelemetry's default limit).
pub(crate) const MAX_ATTRIBUTES: usize = 128;
/// Events kept per span.
pub(crate) const MAX_EVENTS: usize = 64;
/// Attributes kept per event (a log line's fields).
pub(crate) const MAX_EVENT_ATTRIBUTES: usize = 16;
/// Links kept per span.
pub(crate) const MAX_LINKS: usize = 128;
/// Bytes of text (names and string values) kept per span.
pub(crate) const MAX_TEXT: usize = 16 * 1024;

/// A string of a record: a static one, or a range of its text buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Text {
    Static(&'static str),
    At(u32, u32),
}

/// An attribute's value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value {
    Text(Text),
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// A span event (a `tracing` event inside the span).
#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) time: u64,
    pub(crate) name: Text,
    pub(crate) attributes: Vec<(&'static str, Value)>,
    pub(crate) dropped: u32,
}

/// A link to a span that caused this one.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) flags: u8,
}

/// One span.
#[derive(Debug)]
pub(crate) struct Record {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) parent_id: Option<[u8; 8]>,
    /// The parent came in with a request (another process's span).
    pub(crate) remote_parent: bool,
    /// The W3C trace flags (bit 0: sampled).
    pub(crate) flags: u8,
    pub(crate) tracestate: Option<Box<str>>,
    pub(crate) name: Text,
    /// The OTLP span kind (1 internal, 2 server, 3 client, 4 producer, 5 consumer).
    pub(crate) kind: i32,
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// The OTLP status code (0 unset, 1 ok, 2 error).
    pub(crate) status: i32,
    pub(crate) status_message: Option<Text>,
    pub(crate) attributes: Vec<(&'static str, Value)>,
    pub(crate) dropped_attributes: u32,
    pub(crate) events: Vec<Event>,
    pub(crate) dropped_events: u32,
    pub(crate) links: Vec<Link>,
    pub(crate) dropped_links: u32,
    text: String,
}

impl Record {
    /// A span with these ids, unnamed, internal, with no parent.
    pub(crate) fn new(trace_id: [u8; 16], span_id: [u8; 8], flags: u8) -> Self {
        Self {
            trace_id,
            span_id,
            parent_id: None,
            remote_parent: false,
            flags,
            tracestate: None,
            name: Text::Static(""),
            kind: 1,
            start: 0,
            end: 0,
            status: 0,
            status_message: None,
            attributes: Vec::new(),
            dropped_attributes: 0,
            events: Vec::new(),
            dropped_events: 0,
            links: Vec::new(),
            dropped_links: 0,
            text: String::new(),
        }
    }

    /// What the record holds in memory, in bytes: itself, its attributes, events, links and
    /// text (the capacities, which is what the allocator gave).
    pub(crate) fn footprint(&self) -> usize {
        let attribute = size_of::<(&'static str, Value)>();
        size_of::<Self>()
            + self.attributes.capacity() * attribute
            + self.events.capacity() * size_of::<Event>()
            + self
                .events
                .iter()
                .map(|e| e.attributes.capacity() * attribute)
                .sum::<usize>()
            + self.links.capacity() * size_of::<Link>()
            + self.text.capacity()
            + self.tracestate.as_ref().map_or(0, |s| s.len())
    }

    /// Whether the span is sampled (exported).
    pub(crate) fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The string `text` stands for.
    pub(crate) fn str(&self, text: Text) -> &str {
        match text {
            Text::Static(s) => s,
            Text::At(from, to) => self.text.get(from as usize..to as usize).unwrap_or(""),
        }
    }

    /// Keeps `s` (cut to what the text budget has left).
    pub(crate) fn push_text(&mut self, s: &str) -> Text {
        self.reserve();
        let from = self.text.len();
        self.text.push_str(fit(s, MAX_TEXT.saturating_sub(from)));
        Text::At(position(from), position(self.text.len()))
    }

    /// Keeps what `args` writes (cut to what the text budget has left).
    fn push_fmt(&mut self, args: fmt::Arguments<'_>) -> Text {
        self.reserve();
        let from = self.text.len();
        let mut bounded = Bounded {
            text: &mut self.text,
            limit: MAX_TEXT,
        };
        let _ = bounded.write_fmt(args);
        Text::At(position(from), position(self.text.len()))
    }

    /// The first text of a span takes room for a request span's (one allocation).
    fn reserve(&mut self) {
        if self.text.capacity() == 0 {
            self.text.reserve(256);
        }
    }

    /// Sets attribute `key` (replacing an earlier value of the same key).
    pub(crate) fn set(&mut self, key: &'static str, value: Value) {
        if self.attributes.capacity() == 0 {
            // A request span's fields, in one allocation.
            self.attributes.reserve(16);
        }
        set(
            &mut self.attributes,
            &mut self.dropped_attributes,
            key,
            value,
            MAX_ATTRIBUTES,
        );
    }

    /// Links the span to the span `trace_id`/`span_id`.
    pub(crate) fn link(&mut self, trace_id: [u8; 16], span_id: [u8; 8], flags: u8) {
        if self.links.len() < MAX_LINKS {
            self.links.push(Link {
                trace_id,
                span_id,
                flags,
            });
        } else {
            self.dropped_links = self.dropped_links.saturating_add(1);
        }
    }

    /// Records the fields of a span's creation.
    pub(crate) fn creation(&mut self) -> Visitor<SpanFields<'_>> {
        Visitor(SpanFields {
            record: self,
            fresh: true,
        })
    }

    /// Records the fields of a later `record` (a field recorded again replaces its value).
    pub(crate) fn fields(&mut self) -> Visitor<SpanFields<'_>> {
        Visitor(SpanFields {
            record: self,
            fresh: false,
        })
    }

    /// Adds an event at `time` with `level`, its fields visited by the caller.
    pub(crate) fn event(
        &mut self,
        time: u64,
        level: &'static str,
    ) -> Option<Visitor<EventFields<'_>>> {
        if self.events.len() >= MAX_EVENTS {
            self.dropped_events = self.dropped_events.saturating_add(1);
            return None;
        }
        Some(Visitor(EventFields {
            record: self,
            event: Event {
                time,
                name: Text::Static("event"),
                attributes: vec![("level", Value::Text(Text::Static(level)))],
                dropped: 0,
            },
        }))
    }
}

fn set(
    attributes: &mut Vec<(&'static str, Value)>,
    dropped: &mut u32,
    key: &'static str,
    value: Value,
    limit: usize,
) {
    if let Some(slot) = attributes.iter_mut().find(|(k, _)| *k == key) {
        slot.1 = value;
    } else if attributes.len() < limit {
        attributes.push((key, value));
    } else {
        *dropped = dropped.saturating_add(1);
    }
}

/// A text position (the text never exceeds [`MAX_TEXT`]).
fn position(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// The longest prefix of `s` of at most `room` bytes that ends at a character boundary.
fn fit(s: &str, room: usize) -> &str {
    if s.len() <= room {
        return s;
    }
    let mut end = room;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A writer that stops at `limit` bytes (cutting at a character boundary).
struct Bounded<'a> {
    text: &'a mut String,
    limit: usize,
}

impl fmt::Write for Bounded<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.limit.saturating_sub(self.text.len());
        self.text.push_str(fit(s, room));
        if s.len() > room {
            // The rest of the value would not fit either.
            return Err(fmt::Error);
        }
        Ok(())
    }
}

/// The span kind an `otel.kind` value names.
fn kind(value: &str) -> i32 {
    [
        ("server", 2),
        ("client", 3),
        ("producer", 4),
        ("consumer", 5),
    ]
    .into_iter()
    .find_map(|(name, kind)| value.eq_ignore_ascii_case(name).then_some(kind))
    .unwrap_or(1)
}

/// The status code an `otel.status_code` value names.
fn status(value: &str) -> i32 {
    if value.eq_ignore_ascii_case("ok") {
        1
    } else if value.eq_ignore_ascii_case("error") {
        2
    } else {
        0
    }
}

/// Visits a span's fields: `otel.name`, `otel.kind`, `otel.status_code` and
/// `otel.status_message` set the span's name, kind and status; other `otel.` fields are
/// not exported; every other field is an attribute.
pub(crate) struct SpanFields<'a> {
    record: &'a mut Record,
    /// The span is being created: its fields are distinct, so none replaces another.
    fresh: bool,
}

/// What an `otel.` field sets.
enum Special {
    Name,
    Kind,
    Status,
    StatusMessage,
    Ignored,
}

/// The `otel.` field `name` is, if it is one.
fn special(name: &str) -> Option<Special> {
    let rest = name.strip_prefix("otel.")?;
    Some(match rest {
        "name" => Special::Name,
        "kind" => Special::Kind,
        "status_code" => Special::Status,
        "status_message" => Special::StatusMessage,
        _ => Special::Ignored,
    })
}

impl SpanFields<'_> {
    fn value(&mut self, field: &Field, value: Value) {
        let name = field.name();
        if name.starts_with("otel.") {
            return;
        }
        if self.fresh && self.record.attributes.len() < MAX_ATTRIBUTES {
            if self.record.attributes.capacity() == 0 {
                self.record.attributes.reserve(16);
            }
            self.record.attributes.push((name, value));
        } else {
            self.record.set(name, value);
        }
    }

    fn special(&mut self, which: Special, text: Text) {
        let record = &mut *self.record;
        match which {
            Special::Name => record.name = text,
            Special::Kind => record.kind = kind(record.str(text)),
            Special::Status => record.status = status(record.str(text)),
            Special::StatusMessage => record.status_message = Some(text),
            Special::Ignored => {}
        }
    }
}

impl Target for SpanFields<'_> {
    fn value(&mut self, field: &Field, value: Value) {
        SpanFields::value(self, field, value);
    }

    fn str(&mut self, field: &Field, value: &str) {
        match special(field.name()) {
            // Kind and status are read at once and keep no text.
            Some(Special::Kind) => self.record.kind = kind(value),
            Some(Special::Status) => self.record.status = status(value),
            Some(which) => {
                let text = self.record.push_text(value);
                self.special(which, text);
            }
            None => {
                let text = self.record.push_text(value);
                self.value(field, Value::Text(text));
            }
        }
    }

    fn debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // A `Display` name given as `%name`, and the like, is written where it is kept.
        let text = self.record.push_fmt(format_args!("{value:?}"));
        match special(field.name()) {
            Some(which) => self.special(which, text),
            None => self.value(field, Value::Text(text)),
        }
    }
}

/// What a visitor of fields feeds: typed values, text, and `Debug` values.
pub(crate) trait Target {
    fn value(&mut self, field: &Field, value: Value);
    fn str(&mut self, field: &Field, value: &str);
    fn debug(&mut self, field: &Field, value: &dyn fmt::Debug);
}

/// A `tracing` field visitor feeding `T`.
pub(crate) struct Visitor<T>(pub(crate) T);

impl<T: Target> Visit for Visitor<T> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.str(field, value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.value(field, Value::Int(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        match i64::try_from(value) {
            Ok(v) => self.0.value(field, Value::Int(v)),
            Err(_) => self.0.debug(field, &value),
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.value(field, Value::Float(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.value(field, Value::Bool(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.debug(field, value);
    }
}

/// Visits an event's fields: `message` names the event, the others are its attributes.
/// [`EventFields::finish`] adds the event to its span.
pub(crate) struct EventFields<'a> {
    record: &'a mut Record,
    event: Event,
}

impl EventFields<'_> {
    /// Adds the visited event to the span.
    pub(crate) fn finish(self) {
        self.record.events.push(self.event);
    }

    /// `message` names the event; other text is an attribute.
    fn text(&mut self, field: &Field, text: Text) {
        if field.name() == "message" {
            self.event.name = text;
        } else {
            Target::value(self, field, Value::Text(text));
        }
    }
}

impl Target for EventFields<'_> {
    fn value(&mut self, field: &Field, value: Value) {
        let Event {
            attributes,
            dropped,
            ..
        } = &mut self.event;
        set(
            attributes,
            dropped,
            field.name(),
            value,
            MAX_EVENT_ATTRIBUTES,
        );
    }

    fn str(&mut self, field: &Field, value: &str) {
        let text = self.record.push_text(value);
        self.text(field, text);
    }

    fn debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = self.record.push_fmt(format_args!("{value:?}"));
        self.text(field, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_the_budget_on_a_character_boundary() {
        let mut record = Record::new([1; 16], [1; 8], 1);
        let first = record.push_text(&"a".repeat(MAX_TEXT - 1));
        assert_eq!(record.str(first).len(), MAX_TEXT - 1);
        // Two bytes do not fit in the one left: the character is left out whole.
        let second = record.push_text("é");
        assert_eq!(record.str(second), "");
        let third = record.push_fmt(format_args!("{}", "xyz"));
        assert_eq!(record.str(third), "x");
        assert_eq!(record.text.len(), MAX_TEXT);
    }

    #[test]
    fn attributes_events_and_links_are_bounded_and_counted() {
        let mut record = Record::new([1; 16], [1; 8], 1);
        let keys: Vec<&'static str> = (0..MAX_ATTRIBUTES + 3)
            .map(|i| &*Box::leak(format!("k{i}").into_boxed_str()))
            .collect();
        for key in &keys {
            record.set(key, Value::Int(1));
        }
        // A key set again replaces its value and takes no new slot.
        record.set(keys[0], Value::Int(2));
        assert_eq!(record.attributes.len(), MAX_ATTRIBUTES);
        assert_eq!(record.dropped_attributes, 3);
        assert!(matches!(record.attributes[0].1, Value::Int(2)));
        for _ in 0..MAX_EVENTS + 2 {
            if let Some(event) = record.event(0, "INFO") {
                event.0.finish();
            }
        }
        assert_eq!(
            (record.events.len(), record.dropped_events),
            (MAX_EVENTS, 2)
        );
        for _ in 0..MAX_LINKS + 1 {
            record.link([2; 16], [2; 8], 1);
        }
        assert_eq!((record.links.len(), record.dropped_links), (MAX_LINKS, 1));

        // An event keeps at most its own number of attributes (its level among them).
        let mut fresh = Record::new([1; 16], [1; 8], 1);
        let mut event = fresh.event(0, "INFO").unwrap();
        let Event {
            attributes,
            dropped,
            ..
        } = &mut event.0.event;
        for key in &keys[..MAX_EVENT_ATTRIBUTES + 4] {
            set(
                attributes,
                dropped,
                key,
                Value::Int(1),
                MAX_EVENT_ATTRIBUTES,
            );
        }
        assert_eq!((attributes.len(), *dropped), (MAX_EVENT_ATTRIBUTES, 5));
        event.0.finish();

        // The footprint counts what the record holds.
        let before = record.footprint();
        assert!(before > MAX_ATTRIBUTES * 40 + MAX_EVENTS * 40, "{before}");
        record.push_text(&"x".repeat(MAX_TEXT));
        assert!(record.footprint() >= before + MAX_TEXT - 256);
    }

    #[test]
    fn otel_fields_name_kind_and_status() {
        assert_eq!(
            ["server", "CLIENT", "producer", "consumer", "internal", "x"].map(kind),
            [2, 3, 4, 5, 1, 1]
        );
        assert_eq!(["ok", "ERROR", "unset", ""].map(status), [1, 2, 0, 0]);
    }
}
