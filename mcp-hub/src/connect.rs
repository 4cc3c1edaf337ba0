//! One hub from one URL: the schemes every binary and test accepts, in one place.
//!
//! A new backend adds a row to [`BACKENDS`] and an arm to [`ConnectOptions::connect`]; the
//! binaries (`--hub URL`) and the multi-worker tests pick it up from there.

use std::sync::Arc;

use crate::{BackendError, Hub, HubConfig, MemoryHub};

/// One hub backend: its name, the URL forms that select it and the cargo feature that
/// compiles it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backend {
    /// Short name: `memory`, `redis`, `postgres`, `sqlite`.
    pub name: &'static str,
    /// The URL prefixes that select it (`redis://`, `sqlite:`...); `memory` is the whole URL
    /// of the in-memory hub.
    pub schemes: &'static [&'static str],
    /// The feature of this crate (and of `everymcp-server`) that compiles it; `None` when it
    /// is always compiled.
    pub feature: Option<&'static str>,
    /// Whether this build has it.
    pub compiled: bool,
    /// Whether it needs a server to connect to (Redis, PostgreSQL), as opposed to a process
    /// (memory) or a file (SQLite).
    pub networked: bool,
}

/// Every backend, in the order tests run them: memory, Redis, PostgreSQL, SQLite.
pub const BACKENDS: &[Backend] = &[
    Backend::MEMORY,
    Backend::REDIS,
    Backend::POSTGRES,
    Backend::SQLITE,
];

impl Backend {
    /// [`MemoryHub`]: `memory`.
    pub const MEMORY: Self = Self {
        name: "memory",
        schemes: &["memory"],
        feature: None,
        compiled: true,
        networked: false,
    };

    /// `RedisHub`: `redis://…` or `rediss://…` (TLS).
    pub const REDIS: Self = Self {
        name: "redis",
        schemes: &["redis://", "rediss://"],
        feature: Some("redis"),
        compiled: cfg!(feature = "redis"),
        networked: true,
    };

    /// `PostgresHub`: `postgres://…` or `postgresql://…`.
    pub const POSTGRES: Self = Self {
        name: "postgres",
        schemes: &["postgres://", "postgresql://"],
        feature: Some("postgres"),
        compiled: cfg!(feature = "postgres"),
        networked: true,
    };

    /// `SqliteHub`: `sqlite:PATH` (a file, created if absent).
    pub const SQLITE: Self = Self {
        name: "sqlite",
        schemes: &["sqlite:"],
        feature: Some("sqlite"),
        compiled: cfg!(feature = "sqlite"),
        networked: false,
    };

    /// The backend a hub URL names, or `None` for an unknown form.
    pub fn of(url: &str) -> Option<&'static Self> {
        BACKENDS.iter().find(|backend| {
            backend.schemes.iter().any(|scheme| {
                if backend.name == "memory" {
                    url == *scheme
                } else {
                    url.starts_with(scheme)
                }
            })
        })
    }
}

/// Why [`connect`] gave no hub.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL names no backend.
    #[error(
        "hub {url:?}: expected memory, redis://…, rediss://…, postgres://…, postgresql://… or sqlite:PATH"
    )]
    UnknownScheme {
        /// The URL as given, without its user information.
        url: String,
    },
    /// The backend exists but this build lacks its feature.
    #[error("hub {url:?}: built without the `{feature}` feature")]
    NotBuilt {
        /// The URL as given, without its user information.
        url: String,
        /// The feature that would compile the backend.
        feature: &'static str,
    },
    /// The backend refused or could not be reached.
    #[error("hub {url:?}: {source}")]
    Backend {
        /// The URL as given, without its user information.
        url: String,
        /// The backend's reason.
        #[source]
        source: BackendError,
    },
}

/// The hub `url` names, with default settings: `memory`, `redis://…`, `rediss://…`,
/// `postgres://…`, `postgresql://…` or `sqlite:PATH`.
///
/// A backend whose feature this build lacks is [`ConnectError::NotBuilt`]; the error texts
/// never show a password written in the URL.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), mcp_hub::ConnectError> {
/// let hub = mcp_hub::connect("memory").await?;
/// # let _ = hub;
/// assert!(matches!(
///     mcp_hub::connect("mysql://db").await,
///     Err(mcp_hub::ConnectError::UnknownScheme { .. })
/// ));
/// # Ok(())
/// # }
/// ```
pub async fn connect(url: &str) -> Result<Arc<dyn Hub>, ConnectError> {
    ConnectOptions::new().connect(url).await
}

/// Settings for [`ConnectOptions::connect`] that apply to whichever backend the URL names.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    prefix: Option<String>,
    pool_size: Option<usize>,
    hub: Option<HubConfig>,
}

impl ConnectOptions {
    /// The defaults of each backend.
    pub fn new() -> Self {
        Self::default()
    }

    /// A name that keeps this hub's data apart from others' on the same server: the key
    /// prefix on Redis, the table prefix on PostgreSQL and SQLite (lowercase letters, digits
    /// and `_`); ignored in memory. Default: each backend's own (`mcp`).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// The connection pool's size on PostgreSQL; ignored elsewhere. Default: the backend's.
    #[must_use]
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = Some(size);
        self
    }

    /// Retention and the other settings every backend shares. Default:
    /// [`HubConfig::default`].
    #[must_use]
    pub fn hub(mut self, hub: HubConfig) -> Self {
        self.hub = Some(hub);
        self
    }

    /// The hub `url` names, with these settings (see [`connect`]).
    pub async fn connect(&self, url: &str) -> Result<Arc<dyn Hub>, ConnectError> {
        let shown = redacted(url);
        let Some(backend) = Backend::of(url) else {
            return Err(ConnectError::UnknownScheme { url: shown });
        };
        if let (false, Some(feature)) = (backend.compiled, backend.feature) {
            return Err(ConnectError::NotBuilt {
                url: shown,
                feature,
            });
        }
        match backend.name {
            "memory" => Ok(Arc::new(MemoryHub::new(
                self.hub.clone().unwrap_or_default(),
            ))),
            #[cfg(feature = "redis")]
            "redis" => {
                let mut config = crate::RedisConfig::new();
                if let Some(prefix) = &self.prefix {
                    config = config.key_prefix(prefix.clone());
                }
                if let Some(hub) = &self.hub {
                    config = config.hub(hub.clone());
                }
                let hub = crate::RedisHub::connect(url, config)
                    .await
                    .map_err(|source| failed(url, source))?;
                Ok(Arc::new(hub))
            }
            #[cfg(feature = "postgres")]
            "postgres" => {
                let mut config = crate::PostgresConfig::new();
                if let Some(prefix) = &self.prefix {
                    config = config.table_prefix(prefix.clone());
                }
                if let Some(size) = self.pool_size {
                    config = config.pool_size(size);
                }
                if let Some(hub) = &self.hub {
                    config = config.hub(hub.clone());
                }
                let hub = crate::PostgresHub::connect(url, config)
                    .await
                    .map_err(|source| failed(url, source))?;
                Ok(Arc::new(hub))
            }
            #[cfg(feature = "sqlite")]
            "sqlite" => {
                let path = url.strip_prefix("sqlite:").unwrap_or(url);
                let mut config = crate::SqliteConfig::new();
                if let Some(prefix) = &self.prefix {
                    config = config.table_prefix(prefix.clone());
                }
                if let Some(hub) = &self.hub {
                    config = config.hub(hub.clone());
                }
                let hub = crate::SqliteHub::open(path, config)
                    .await
                    .map_err(|source| failed(url, source))?;
                Ok(Arc::new(hub))
            }
            _ => Err(ConnectError::UnknownScheme { url: shown }),
        }
    }
}

/// The backend behind `url` refused.
#[cfg(any(feature = "redis", feature = "postgres", feature = "sqlite"))]
fn failed(url: &str, source: BackendError) -> ConnectError {
    ConnectError::Backend {
        url: redacted(url),
        source,
    }
}

/// `url` without the user information of its authority (`user:password@`), for messages.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://…@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_url_form_names_one_backend() {
        assert_eq!(Backend::of("memory"), Some(&Backend::MEMORY));
        assert_eq!(Backend::of("memory:x"), None);
        assert_eq!(Backend::of("redis://127.0.0.1"), Some(&Backend::REDIS));
        assert_eq!(Backend::of("rediss://h:6380/0"), Some(&Backend::REDIS));
        assert_eq!(Backend::of("postgres://u@h/db"), Some(&Backend::POSTGRES));
        assert_eq!(Backend::of("postgresql://u@h/db"), Some(&Backend::POSTGRES));
        assert_eq!(Backend::of("sqlite:/tmp/hub.db"), Some(&Backend::SQLITE));
        assert_eq!(Backend::of("mysql://h"), None);
        assert_eq!(Backend::of(""), None);
        let names: Vec<_> = BACKENDS.iter().map(|b| b.name).collect();
        assert_eq!(names, ["memory", "redis", "postgres", "sqlite"]);
    }

    #[test]
    fn messages_hide_passwords() {
        assert_eq!(
            redacted("postgres://app:s3cret@db:5432/x?sslmode=require"),
            "postgres://…@db:5432/x?sslmode=require"
        );
        assert_eq!(redacted("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redacted("rediss://:pw@h/0"), "rediss://…@h/0");
        assert_eq!(redacted("sqlite:/a@b"), "sqlite:/a@b");
    }

    #[tokio::test]
    async fn unknown_and_missing_backends_are_named() {
        let err = connect("mysql://root:pw@h").await.err().unwrap();
        assert!(matches!(err, ConnectError::UnknownScheme { .. }), "{err}");
        assert!(!err.to_string().contains("pw"), "{err}");
        for backend in BACKENDS.iter().filter(|b| !b.compiled) {
            let url = format!("{}x", backend.schemes[0]);
            let err = connect(&url).await.err().unwrap();
            let feature = backend.feature.unwrap();
            assert!(
                matches!(&err, ConnectError::NotBuilt { feature: f, .. } if *f == feature),
                "{err}"
            );
            assert!(err.to_string().contains("built without"), "{err}");
        }
        assert!(connect("memory").await.is_ok());
    }
}
