//! The hub backends the multi-worker tests run on, one row each (issue 32): Redis at
//! `MCP_REDIS_URL` (default `redis://127.0.0.1:6379`), PostgreSQL at `MCP_POSTGRES_URL`
//! (default `postgres://postgres@127.0.0.1:5432/test`) and SQLite (a file in the temporary
//! folder, opened once per worker as separate processes would).
//!
//! With `CI=true` an unreachable Redis or PostgreSQL is a failure; otherwise the row prints a
//! notice and is skipped. SQLite needs no server and is never skipped.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_hub::{ConnectOptions, Hub};

/// One hub backend that workers can share (every one of [`mcp_hub::BACKENDS`] but memory).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Backend(&'static mcp_hub::Backend);

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

impl Backend {
    /// `RedisHub`.
    pub const REDIS: Self = Self(&mcp_hub::Backend::REDIS);

    /// Every backend workers can share, in `mcp_hub::BACKENDS`' order. A backend added there
    /// runs here too (and panics in [`Place::url`] until it says where its test server is).
    pub fn all() -> impl Iterator<Item = Self> {
        mcp_hub::BACKENDS
            .iter()
            .filter(|backend| backend.name != mcp_hub::Backend::MEMORY.name)
            .map(Self)
    }

    /// A fresh shared place on this backend (its own key prefix, table prefix or file), or
    /// `None` after a notice when its server is unreachable outside CI.
    pub async fn place(self) -> Option<Place> {
        let unique = unique();
        let place = Place {
            backend: self,
            prefix: format!("mcpsrvtest_{unique}"),
            path: std::env::temp_dir().join(format!("mcp-server-test-{unique}.sqlite")),
        };
        match place.try_hub().await {
            Ok(_) => Some(place),
            Err(err) if std::env::var("CI").as_deref() != Ok("true") => {
                eprintln!("notice: {self:?} is unreachable ({err}); skipping this row");
                None
            }
            Err(err) => panic!("{self:?} is unreachable with CI=true: {err}"),
        }
    }
}

/// Where the workers of one test meet: a key prefix (Redis), a table prefix (PostgreSQL) or
/// a file (SQLite). Removes what it made (tables, files) when dropped.
pub struct Place {
    pub backend: Backend,
    prefix: String,
    path: PathBuf,
}

impl Place {
    /// A new hub on this place, with its own connection(s), as a separate worker has.
    pub async fn hub(&self) -> Arc<dyn Hub> {
        self.try_hub()
            .await
            .unwrap_or_else(|err| panic!("{:?} answered once, then: {err}", self.backend))
    }

    async fn try_hub(&self) -> Result<Arc<dyn Hub>, String> {
        let mut options = ConnectOptions::new().pool_size(4);
        if self.backend.0.networked {
            options = options.prefix(self.prefix.clone());
        }
        options
            .connect(&self.url())
            .await
            .map_err(|e| e.to_string())
    }

    /// The hub URL of this place.
    fn url(&self) -> String {
        match self.backend.0.name {
            "redis" => redis_url(),
            "postgres" => postgres_url(),
            "sqlite" => format!("sqlite:{}", self.path.display()),
            other => panic!("no test server for the {other} backend: add it to backends.rs"),
        }
    }

    /// The key prefix (Redis) or table prefix (PostgreSQL) of this place, for a worker in
    /// another process to meet the test's own.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The `--hub` argument of an `mcp-demo` process on this backend. The demo uses the
    /// default key or table prefix on Redis and PostgreSQL (shared by every run, its session
    /// ids are random); on SQLite it uses this place's file.
    pub fn demo_hub(&self) -> String {
        self.url()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        match self.backend.0.name {
            "sqlite" => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut file = self.path.clone().into_os_string();
                    file.push(suffix);
                    let _ = std::fs::remove_file(file);
                }
            }
            "postgres" => {
                let prefix = self.prefix.clone();
                // Dropped inside the test's runtime: clean up on a thread with its own.
                let cleanup = std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    runtime.block_on(drop_tables(&prefix));
                });
                let _ = cleanup.join();
            }
            _ => {}
        }
    }
}

async fn drop_tables(prefix: &str) {
    let Ok((client, connection)) =
        tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls).await
    else {
        return;
    };
    let driver = tokio::spawn(connection);
    let _ = client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {prefix}_topics, {prefix}_events, {prefix}_records"
        ))
        .await;
    drop(client);
    let _ = driver.await;
}

/// `MCP_REDIS_URL`, or the local default.
pub fn redis_url() -> String {
    std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// `MCP_POSTGRES_URL`, or the local default.
pub fn postgres_url() -> String {
    std::env::var("MCP_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Lowercase letters, digits and `_` only (a valid table prefix), unique per call.
fn unique() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000,
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}
