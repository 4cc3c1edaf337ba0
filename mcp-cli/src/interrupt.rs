//! Ctrl-C, as the commands that can be interrupted wait for it.

/// Ctrl-C (SIGINT), caught from the moment it is installed.
pub(crate) struct Interrupt {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Interrupt {
    /// Catches Ctrl-C from now on.
    pub(crate) fn install() -> Self {
        Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok(),
        }
    }

    /// Resolves on Ctrl-C (never, when no handler could be installed).
    pub(crate) async fn wait(&mut self) {
        #[cfg(unix)]
        let caught = match &mut self.signal {
            Some(signal) => signal.recv().await.is_some(),
            None => false,
        };
        #[cfg(not(unix))]
        let caught = tokio::signal::ctrl_c().await.is_ok();
        if !caught {
            std::future::pending::<()>().await;
        }
    }
}
