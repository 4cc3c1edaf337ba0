//! How the client follows a task: [`TaskPolling`] (public as `mcp_client::TaskPolling` and
//! `mcp_client::task::TaskPolling`), kept apart from the task calls so that the client's
//! settings name it without depending on them.

use std::time::Duration;

/// How the client follows a task ([`ClientBuilder::tasks`](crate::ClientBuilder::tasks)).
///
/// ```
/// use std::time::Duration;
/// use mcp_client::TaskPolling;
///
/// let polling = TaskPolling::new()
///     .interval_bounds(Duration::from_millis(200), Duration::from_secs(10))
///     .max_wait(Duration::from_secs(600))
///     .max_questions(8);
/// let builder = mcp_client::Client::builder().tasks(polling);
/// # let _ = builder;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskPolling {
    pub(crate) min_interval: Duration,
    pub(crate) max_interval: Duration,
    pub(crate) default_interval: Duration,
    pub(crate) max_wait: Duration,
    pub(crate) max_questions: usize,
    pub(crate) cancel_on_drop: bool,
    pub(crate) answer_together: bool,
}

impl Default for TaskPolling {
    fn default() -> Self {
        Self::new()
    }
}

impl TaskPolling {
    /// The default of [`TaskPolling::max_questions`]: 64 questions per task.
    pub const DEFAULT_MAX_QUESTIONS: usize = 64;

    /// How long past its `ttlMs` the client still follows a task: 1 s. The client counts the
    /// ttl from when it received the `CreateTaskResult`, after the server created the task, so
    /// a server that keeps its word has forgotten the task by then; the grace only covers a
    /// server whose expiry runs a little late.
    pub const TTL_GRACE: Duration = Duration::from_secs(1);

    /// The defaults: the server's `pollIntervalMs` clamped to 50 ms ..= 5 s (1 s when it
    /// suggests none), at most one hour of waiting for one task, at most
    /// [64](Self::DEFAULT_MAX_QUESTIONS) questions answered per task, `tasks/cancel` when the
    /// caller drops the call.
    pub fn new() -> Self {
        Self {
            min_interval: Duration::from_millis(50),
            max_interval: Duration::from_secs(5),
            default_interval: Duration::from_secs(1),
            max_wait: Duration::from_secs(3600),
            max_questions: Self::DEFAULT_MAX_QUESTIONS,
            cancel_on_drop: true,
            answer_together: false,
        }
    }

    /// The bounds of the polling interval: the server's `pollIntervalMs` is clamped to them (a
    /// server cannot make the client poll faster than `min`, nor slower than `max`).
    #[must_use]
    pub fn interval_bounds(mut self, min: Duration, max: Duration) -> Self {
        self.min_interval = min;
        self.max_interval = max.max(min);
        self
    }

    /// The interval when the server suggests none. Default 1 s.
    #[must_use]
    pub fn default_interval(mut self, interval: Duration) -> Self {
        self.default_interval = interval;
        self
    }

    /// The longest the client follows one task before it gives up with
    /// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) (and cancels the task). Default one hour.
    #[must_use]
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// The most questions (distinct `inputRequests` keys) the client answers for one task.
    /// A task asking one more is no longer followed: [`TaskHandle::wait`](crate::TaskHandle::wait) (and
    /// [`Client::call_tool`](crate::Client::call_tool) on a task) fails with [`ErrorKind::Task`](crate::ErrorKind::Task), naming this bound,
    /// without asking the [`on_ask`](crate::ClientBuilder::on_ask) callback, and sends
    /// `tasks/cancel` for the task (unless [`TaskPolling::cancel_on_drop`] is off). The keys
    /// the client remembers as answered are bounded by the same number. `0` answers none.
    /// Default [64](Self::DEFAULT_MAX_QUESTIONS).
    ///
    /// ```
    /// use mcp_client::TaskPolling;
    ///
    /// // A client whose tasks may ask for a confirmation or two, never a stream of questions.
    /// let builder = mcp_client::Client::builder().tasks(TaskPolling::new().max_questions(4));
    /// # let _ = builder;
    /// assert_eq!(TaskPolling::DEFAULT_MAX_QUESTIONS, 64);
    /// ```
    #[must_use]
    pub fn max_questions(mut self, max: usize) -> Self {
        self.max_questions = max;
        self
    }

    /// Whether dropping a call (or a [`TaskHandle`](crate::TaskHandle)) before the task ended sends
    /// `tasks/cancel`; also whether the client cancels a task it stops following past
    /// [`TaskPolling::max_questions`] or the task's ttl. Default `true`.
    #[must_use]
    pub fn cancel_on_drop(mut self, cancel: bool) -> Self {
        self.cancel_on_drop = cancel;
        self
    }

    /// Whether the questions a task asks at once (several `inputRequests` in one status) are
    /// put to the [`on_ask`](crate::ClientBuilder::on_ask) callback together, concurrently,
    /// rather than one after another in the order the server lists them; either way their
    /// answers go back in one `tasks/update`. For a callback that relays them elsewhere (a
    /// gateway passing them to its own client, who sees them as the task's) or shows them as
    /// one form. Default `false`: a terminal asks one question at a time.
    ///
    /// ```
    /// use mcp_client::TaskPolling;
    ///
    /// let builder = mcp_client::Client::builder().tasks(TaskPolling::new().answer_together(true));
    /// # let _ = builder;
    /// ```
    #[must_use]
    pub fn answer_together(mut self, together: bool) -> Self {
        self.answer_together = together;
        self
    }

    pub(crate) fn interval(&self, suggested: Option<u64>) -> Duration {
        suggested
            .map_or(self.default_interval, Duration::from_millis)
            .clamp(self.min_interval, self.max_interval)
    }
}
