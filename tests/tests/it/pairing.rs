//! The cross-pairing suite: our client against our server on every transport, hub backend,
//! revision and feature, every message validated against the official schema.
//!
//! The checks are written once (`mcp_tests::pairing`, run with the known gaps by `mcp_tests::gaps::check`); the macros below instantiate them per
//! axis, so a new revision, backend or transport is one more line here. Known gaps are in
//! `tests/known-gaps.toml`.

use mcp_adapters::Revision;
use mcp_tests::gaps::check;
use mcp_tests::pairing::{Binaries, Case, Feature, Store, TransportKind};

fn bins() -> Binaries {
    Binaries {
        pairing_server: env!("CARGO_BIN_EXE_pairing-server").into(),
    }
}

/// One test per feature for one (transport, store, revision).
macro_rules! features {
    ($transport:expr, $store:expr, $revision:expr; $($feature:ident => $variant:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $feature() {
                let case = Case {
                    transport: $transport,
                    store: $store,
                    revision: $revision,
                    feature: Feature::$variant,
                };
                check(case, &bins()).await;
            }
        )*
    };
}

/// Every feature on one (transport, store, revision).
macro_rules! revision {
    ($transport:expr, $store:expr, $revision:expr) => {
        use super::*;
        features!($transport, $store, $revision;
            discover => Discover,
            tools => Tools,
            structured_output => StructuredOutput,
            resources => Resources,
            prompts => Prompts,
            completion => Completion,
            pagination => Pagination,
            ask_elicitation => AskElicitation,
            ask_sampling => AskSampling,
            ask_roots => AskRoots,
            progress => Progress,
            logging => Logging,
            cancellation => Cancellation,
            subscriptions => Subscriptions,
            errors => Errors,
        );
    };
}

/// A row: one (transport, store) on each of the listed revisions.
macro_rules! row {
    ($name:ident, $transport:expr, $store:expr; $($rev:ident => $revision:expr),* $(,)?) => {
        mod $name {
            use super::*;
            $(
                mod $rev {
                    revision!($transport, $store, $revision);
                }
            )*
        }
    };
}

macro_rules! every_revision {
    ($name:ident, $transport:expr, $store:expr) => {
        row!($name, $transport, $store;
            v2026_07_28 => Revision::V2026_07_28,
            v2025_11_25 => Revision::V2025_11_25,
            v2025_06_18 => Revision::V2025_06_18,
            v2025_03_26 => Revision::V2025_03_26,
            v2024_11_05 => Revision::V2024_11_05,
        );
    };
}

/// The revisions Streamable HTTP carries (2024-11-05 is HTTP+SSE only).
macro_rules! streamable_revisions {
    ($name:ident, $transport:expr, $store:expr) => {
        row!($name, $transport, $store;
            v2026_07_28 => Revision::V2026_07_28,
            v2025_11_25 => Revision::V2025_11_25,
            v2025_06_18 => Revision::V2025_06_18,
            v2025_03_26 => Revision::V2025_03_26,
        );
    };
}

/// The revisions HTTP+SSE carries (every revision with a handshake).
macro_rules! sse_revisions {
    ($name:ident, $transport:expr, $store:expr) => {
        row!($name, $transport, $store;
            v2025_11_25 => Revision::V2025_11_25,
            v2025_06_18 => Revision::V2025_06_18,
            v2025_03_26 => Revision::V2025_03_26,
            v2024_11_05 => Revision::V2024_11_05,
        );
    };
}

every_revision!(stdio_memory, TransportKind::Stdio, Store::Memory);
every_revision!(stdio_redis, TransportKind::Stdio, Store::Redis);
streamable_revisions!(
    streamable_http_memory,
    TransportKind::StreamableHttp,
    Store::Memory
);
streamable_revisions!(
    streamable_http_redis,
    TransportKind::StreamableHttp,
    Store::Redis
);
sse_revisions!(http_sse_memory, TransportKind::HttpSse, Store::Memory);
sse_revisions!(http_sse_redis, TransportKind::HttpSse, Store::Redis);
every_revision!(stdio_postgres, TransportKind::Stdio, Store::Postgres);
streamable_revisions!(
    streamable_http_postgres,
    TransportKind::StreamableHttp,
    Store::Postgres
);
sse_revisions!(http_sse_postgres, TransportKind::HttpSse, Store::Postgres);
every_revision!(stdio_sqlite, TransportKind::Stdio, Store::Sqlite);
streamable_revisions!(
    streamable_http_sqlite,
    TransportKind::StreamableHttp,
    Store::Sqlite
);
sse_revisions!(http_sse_sqlite, TransportKind::HttpSse, Store::Sqlite);

#[test]
fn the_gaps_file_parses_and_every_entry_has_a_reason() {
    let gaps = mcp_tests::gaps::known();
    assert!(gaps.iter().all(|g| !g.reason.trim().is_empty()));
}
