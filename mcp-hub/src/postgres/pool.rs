//! A small bounded connection pool with per-connection prepared statements.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::{Client, NoTls, Statement};

use super::classify;
use crate::BackendError;

/// One connection and the statements prepared on it, by statement number.
struct Conn {
    client: Client,
    statements: HashMap<usize, Statement>,
}

pub(super) struct Pool {
    config: tokio_postgres::Config,
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
}

impl Pool {
    pub(super) fn new(config: tokio_postgres::Config, size: usize) -> Self {
        Self {
            config,
            idle: Mutex::new(Vec::with_capacity(size)),
            permits: Semaphore::new(size),
        }
    }

    /// A connection: an idle one, or a new one when none is idle and the pool is not full.
    /// Waits for a free slot otherwise; the caller bounds the wait.
    pub(super) async fn get(&self) -> Result<Lease<'_>, BackendError> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| BackendError::connection("the connection pool is closed"))?;
        loop {
            let conn = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            match conn {
                Some(conn) if conn.client.is_closed() => {}
                Some(conn) => {
                    return Ok(Lease {
                        pool: self,
                        conn: Some(conn),
                        healthy: false,
                        _permit: permit,
                    });
                }
                None => break,
            }
        }
        let client = connect(&self.config).await?;
        Ok(Lease {
            pool: self,
            conn: Some(Conn {
                client,
                statements: HashMap::new(),
            }),
            healthy: false,
            _permit: permit,
        })
    }
}

/// Opens a connection and drives it on its own task until the client is dropped.
pub(super) async fn connect(config: &tokio_postgres::Config) -> Result<Client, BackendError> {
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|err| classify("connecting", err))?;
    tokio::spawn(async move {
        // Ends when the client is dropped or the server goes away; the client then reports
        // `is_closed`, and the pool drops it.
        let _ = connection.await;
    });
    Ok(client)
}

/// A connection borrowed from the pool. It goes back only when the last command on it
/// completed ([`Lease::healthy`]); a connection whose command timed out or failed on the wire is
/// dropped, since its state is unknown.
pub(super) struct Lease<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
    healthy: bool,
    _permit: SemaphorePermit<'a>,
}

impl Lease<'_> {
    /// The client, with the statement `sql` (number `id`) prepared on it once.
    pub(super) async fn prepared(
        &mut self,
        id: usize,
        sql: &str,
    ) -> Result<(&Client, Statement), BackendError> {
        self.healthy = false;
        let conn = self.conn.as_mut().ok_or_else(released)?;
        let statement = match conn.statements.get(&id) {
            Some(statement) => statement.clone(),
            None => {
                let statement = conn
                    .client
                    .prepare(sql)
                    .await
                    .map_err(|err| classify("preparing a statement", err))?;
                conn.statements.insert(id, statement.clone());
                statement
            }
        };
        Ok((&conn.client, statement))
    }

    /// The raw client, for transactions.
    pub(super) fn client_mut(&mut self) -> Result<&mut Client, BackendError> {
        self.healthy = false;
        Ok(&mut self.conn.as_mut().ok_or_else(released)?.client)
    }

    /// Marks the connection fit to be reused: the last command completed (even with a SQL error).
    pub(super) fn healthy(&mut self) {
        self.healthy = true;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && self.healthy
            && !conn.client.is_closed()
        {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
        }
    }
}

fn released() -> BackendError {
    BackendError::connection("the pooled connection was already released")
}

/// Runs `run`, failing with a timeout after `timeout`.
pub(super) async fn bounded<T>(
    timeout: Duration,
    what: &str,
    run: impl Future<Output = Result<T, BackendError>>,
) -> Result<T, BackendError> {
    match tokio::time::timeout(timeout, run).await {
        Ok(result) => result,
        Err(_) => Err(BackendError::timeout(format!(
            "{what}: PostgreSQL did not answer within {timeout:?}"
        ))),
    }
}
