//! The state store contract: versioned records with a time to live.

use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;

use crate::{Key, StoreError};

/// A live record: its value and the version a [`save`](StateStore::save) must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The value as last created or saved. Cloning it is cheap (a reference count).
    pub value: Bytes,
    /// 1 after `create`, one more after each `save`.
    pub version: u64,
}

/// Versioned records with a time to live, shared by every worker: sessions and request state.
///
/// Every record expires `ttl` after it was created, saved or touched; an expired record is gone
/// for every operation, and its key can be created again. Writes are compare-and-set: of
/// concurrent `create`s of one key exactly one succeeds, and of concurrent `save`s naming the
/// same version exactly one succeeds and the others get [`StoreError::VersionConflict`].
///
/// TTLs are rounded up to whole milliseconds, and are at least 1 ms.
///
/// The trait is object safe (methods return boxed futures): servers hold an
/// `Arc<dyn StateStore>`.
pub trait StateStore: Send + Sync {
    /// Stores `value` under `key` if no live record is there, and returns its version (1).
    /// Fails with [`StoreError::AlreadyExists`] otherwise.
    fn create<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;

    /// The live record under `key`, if any. Does not renew its TTL.
    fn get<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<Option<Record>, StoreError>>;

    /// Replaces the value if the live record still has `expected_version`, renews the TTL, and
    /// returns the new version. Fails with [`StoreError::VersionConflict`] when the version
    /// moved on, and with [`StoreError::NotFound`] when there is no live record (a save never
    /// brings an expired record back).
    fn save<'a>(
        &'a self,
        key: &'a Key,
        value: Bytes,
        expected_version: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;

    /// Renews the TTL of the live record under `key`; [`StoreError::NotFound`] if there is none.
    fn touch<'a>(&'a self, key: &'a Key, ttl: Duration) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Removes the record under `key`. Returns whether a live record was there.
    fn delete<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<bool, StoreError>>;
}

/// A TTL as whole milliseconds, rounded up, at least 1.
pub(crate) fn ttl_millis(ttl: Duration) -> u64 {
    let millis = ttl.as_nanos().div_ceil(1_000_000).max(1);
    u64::try_from(millis).unwrap_or(u64::MAX)
}
