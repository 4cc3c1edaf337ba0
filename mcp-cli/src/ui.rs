//! What the person sees on stderr while a command runs: progress (a bar on a terminal, lines
//! otherwise), the server's log messages with their level, and notes.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_client::{Notification, Progress};
use serde_json::Value;

/// Progress values are fractional; the bar counts in thousandths of the total.
const SCALE: f64 = 1000.0;

/// The stderr side of the CLI. Shared by the client's callbacks and the command.
#[derive(Debug)]
pub(crate) struct Ui {
    /// stderr is a terminal: draw a bar rather than print lines.
    terminal: bool,
    bar: Mutex<Option<ProgressBar>>,
}

impl Ui {
    pub(crate) fn new() -> Self {
        Self {
            terminal: std::io::stderr().is_terminal(),
            bar: Mutex::new(None),
        }
    }

    fn bar(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        self.bar.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shows one progress notification.
    pub(crate) fn progress(&self, progress: &Progress) {
        if !self.terminal {
            let mut line = match progress.total {
                Some(total) => format!("progress {}/{}", progress.progress, total),
                None => format!("progress {}", progress.progress),
            };
            if let Some(message) = &progress.message {
                line.push(' ');
                line.push_str(message);
            }
            self.line(&line);
            return;
        }
        let mut slot = self.bar();
        let bar = slot.get_or_insert_with(|| {
            let bar = match progress.total {
                Some(_) => ProgressBar::new(0),
                None => ProgressBar::new_spinner(),
            };
            bar.set_draw_target(ProgressDrawTarget::stderr());
            let style = match progress.total {
                Some(_) => ProgressStyle::with_template("{bar:30} {percent:>3}% {msg}"),
                None => ProgressStyle::with_template("{spinner} {msg}"),
            };
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        if let Some(total) = progress.total {
            bar.set_length((total.max(0.0) * SCALE) as u64);
            bar.set_position((progress.progress.max(0.0) * SCALE) as u64);
        }
        let message = match (&progress.message, progress.total) {
            (Some(m), _) => m.clone(),
            (None, Some(total)) => format!("{}/{}", progress.progress, total),
            (None, None) => progress.progress.to_string(),
        };
        bar.set_message(message);
    }

    /// Shows a notification the command did not ask for: log messages with their level.
    pub(crate) fn notification(&self, notification: &Notification) {
        if notification.method != "notifications/message" {
            return;
        }
        let params = notification.params.as_ref();
        let level = params
            .and_then(|p| p.get("level"))
            .and_then(Value::as_str)
            .unwrap_or("info");
        let logger = params.and_then(|p| p.get("logger")).and_then(Value::as_str);
        let data = match params.and_then(|p| p.get("data")) {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let line = match logger {
            Some(logger) => format!("[{level}] {logger}: {data}"),
            None => format!("[{level}] {data}"),
        };
        self.line(&line);
    }

    /// A note from the CLI itself.
    pub(crate) fn note(&self, text: &str) {
        self.line(&format!("mcp: {text}"));
    }

    /// Prints a line on stderr without tearing the bar.
    fn line(&self, text: &str) {
        let slot = self.bar();
        match slot.as_ref() {
            Some(bar) => bar.suspend(|| eprintln_ignoring_errors(text)),
            None => eprintln_ignoring_errors(text),
        }
    }

    /// Runs `f` (a prompt) with the bar hidden.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        let bar = self.bar().clone();
        match bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Removes the bar, if one was drawn.
    pub(crate) fn finish(&self) {
        if let Some(bar) = self.bar().take() {
            bar.finish_and_clear();
        }
    }
}

fn eprintln_ignoring_errors(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{text}");
}
