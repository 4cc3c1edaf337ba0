//! The shared event log and state store that lets several MCP server workers act as one.
//!
//! When a server runs as several workers, nothing pins a message to the worker that waits for
//! it: the answer to a pushed question, a resource update, a resumed GET stream can all arrive
//! anywhere. Workers share them through the hub. The hub knows nothing about MCP: it stores
//! opaque bytes under topics and keys.
//!
//! **Layering:** depends on no workspace crate. Only `mcp-server` uses it.
//!
//! ```text
//!   worker A ──publish(topic, bytes)──►┌──────────────┐◄──poll(topic, cursor)── worker B
//!                                       │  EventLog    │   (waits, woken by publish)
//!   worker A ──save(key, v, version)──►│  StateStore  │◄──get(key)───────────── worker B
//!                                       └──────┬───────┘
//!        MemoryHub (one process) | RedisHub | PostgresHub | SqliteHub (features `redis`,
//!                                                  `postgres`, `sqlite`)
//! ```
//!
//! # Contracts
//!
//! - [`EventLog`]: per-topic ordered log with [`Cursor`]s; `publish`, `position`, `poll`,
//!   `delete`, and [`Subscription`] as a stream that keeps its own place. Reading consumes
//!   nothing. A cursor the log did not issue is [`LogError::UnknownCursor`]; one whose following
//!   events fell out of retention is [`LogError::CursorExpired`].
//! - [`StateStore`]: records with a TTL and a version; `create` if absent, `get`, `save` with
//!   compare-and-set, `touch`, `delete`.
//! - [`Namespace`]: every [`Topic`] and [`Key`] is built from one, so tenants never see each
//!   other's events or records.
//! - [`RetentionConfig`]: how much of each topic is kept (count and age).
//!
//! Both traits are object safe: a server holds `Arc<dyn EventLog>` and `Arc<dyn StateStore>`,
//! or one `Arc<dyn Hub>` (which upcasts to either).
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use bytes::Bytes;
//! use mcp_hub::{EventLog, HubConfig, MemoryHub, Namespace};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), mcp_hub::LogError> {
//! let log: Arc<dyn EventLog> = Arc::new(MemoryHub::new(HubConfig::default()));
//! let topic = Namespace::new("tenant-1").topic("ask/7");
//!
//! // Take the position before the question goes out...
//! let asked_at = log.position(&topic).await?;
//! // ...so an answer published by any worker in the meantime is still delivered.
//! log.publish(&topic, Bytes::from_static(b"{\"action\":\"accept\"}")).await?;
//! let answers = log.poll(&topic, asked_at, Duration::from_secs(30)).await?;
//! assert_eq!(answers[0].payload, "{\"action\":\"accept\"}");
//! log.delete(&topic).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Backends
//!
//! - [`MemoryHub`] (always available): one process; no background task; waits are woken by
//!   the publish itself.
//! - `RedisHub` (feature `redis`): one Redis Stream per topic, a Lua compare-and-set for
//!   records, key expiry for TTLs; reconnects by itself.
//! - `PostgresHub` (feature `postgres`): a topic row and numbered event rows per topic (commit
//!   order equals cursor order), `LISTEN/NOTIFY` wake-ups on one connection per hub,
//!   compare-and-set records with TTLs on the database clock, a sweep any worker may run.
//! - `SqliteHub` (feature `sqlite`): the same tables in one file in WAL mode; survives restarts
//!   and is shared by the processes of one machine.
//!
//! [`connect`] opens whichever of them a URL names (`memory`, `redis://…`, `rediss://…`,
//! `postgres://…`, `postgresql://…`, `sqlite:PATH`), and [`BACKENDS`] lists them with the
//! feature each needs: binaries take a `--hub URL` and tests iterate the list, so a new backend
//! is one row there and one arm in [`ConnectOptions::connect`].
//!
//! # Feature flags
//!
//! - `redis` (off by default): the Redis backend. Turning it on changes nothing in the memory
//!   backend.
//! - `postgres` (off by default): the PostgreSQL backend (tokio-postgres).
//! - `sqlite` (off by default): the SQLite backend (rusqlite, SQLite compiled in).

#![cfg_attr(not(test), warn(unused_crate_dependencies))]
// Feature badges on docs.rs (nightly rustdoc, `--cfg docsrs`) for feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]
mod config;
mod connect;
mod cursor;
mod error;
mod log;
mod memory;
mod namespace;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis_hub;
#[cfg(any(feature = "postgres", feature = "sqlite"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;

pub use config::{HubConfig, RetentionConfig};
pub use connect::{BACKENDS, Backend, ConnectError, ConnectOptions, connect};
pub use cursor::{Cursor, CursorParseError};
pub use error::{BackendError, LogError, StoreError};
pub use log::{Event, EventLog, Subscription};
pub use memory::MemoryHub;
pub use namespace::{Key, Namespace, Topic};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresConfig, PostgresHub};
#[cfg(feature = "redis")]
pub use redis_hub::{RedisConfig, RedisHub};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteConfig, SqliteHub};
pub use store::{Record, StateStore};

/// An event log and a state store in one backend, as a server usually holds them.
///
/// Implemented for every type that implements both; an `Arc<dyn Hub>` upcasts to
/// `Arc<dyn EventLog>` and `Arc<dyn StateStore>`.
pub trait Hub: EventLog + StateStore {}

impl<T: EventLog + StateStore + ?Sized> Hub for T {}

// The README's examples compile and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
