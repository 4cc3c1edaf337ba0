//! Known gaps of the pairing suite: one checked-in file (`tests/known-gaps.toml`), one entry per
//! gap, each with a reason.
//!
//! ```toml
//! [[gap]]
//! transport = "streamable-http"   # optional: stdio, streamable-http, http-sse
//! store = "redis"                 # optional: memory, redis
//! revision = "2025-03-26"         # optional
//! feature = "subscriptions"       # optional
//! reason = "why this does not pass yet"
//! ```
//!
//! An absent key matches every value. A pairing that fails and matches a gap passes with a
//! notice; one that passes while it matches a gap fails, so the file stays honest.

use std::path::Path;

use mcp_adapters::Revision;
use toml_edit::{Document, Item};

use crate::pairing::{self, Binaries, Case, Feature, Store, TransportKind};

/// Why the gaps file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GapsError {
    /// The file could not be read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file is not TOML.
    #[error("not TOML: {0}")]
    Toml(String),
    /// An entry is malformed.
    #[error("gap #{index}: {reason}")]
    Entry {
        /// Its position in the file, from 1.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// One known gap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// The transport it concerns; `None` is every transport.
    pub transport: Option<TransportKind>,
    /// The hub backend; `None` is every backend.
    pub store: Option<Store>,
    /// The revision; `None` is every revision.
    pub revision: Option<Revision>,
    /// The feature; `None` is every feature.
    pub feature: Option<Feature>,
    /// Why it does not pass.
    pub reason: String,
}

impl Gap {
    /// Whether this gap covers `case`.
    pub fn covers(&self, case: &Case) -> bool {
        self.transport.is_none_or(|t| t == case.transport)
            && self.store.is_none_or(|s| s == case.store)
            && self.revision.is_none_or(|r| r == case.revision)
            && self.feature.is_none_or(|f| f == case.feature)
    }
}

/// Every gap in the file's text.
pub fn parse(text: &str) -> Result<Vec<Gap>, GapsError> {
    let doc: Document<String> =
        Document::parse(text.to_owned()).map_err(|e| GapsError::Toml(e.to_string()))?;
    let Some(item) = doc.get("gap") else {
        return Ok(Vec::new());
    };
    let Some(entries) = item.as_array_of_tables() else {
        return Err(GapsError::Toml(
            "`gap` must be an array of tables ([[gap]])".into(),
        ));
    };
    let mut gaps = Vec::new();
    for (i, table) in entries.iter().enumerate() {
        let index = i + 1;
        let fail = |reason: String| GapsError::Entry { index, reason };
        for (key, _) in table.iter() {
            if !["transport", "store", "revision", "feature", "reason"].contains(&key) {
                return Err(fail(format!("unknown key {key:?}")));
            }
        }
        let text = |key: &str| -> Result<Option<String>, GapsError> {
            match table.get(key) {
                None => Ok(None),
                Some(Item::Value(v)) => v
                    .as_str()
                    .map(|s| Some(s.to_owned()))
                    .ok_or_else(|| fail(format!("{key} must be a string"))),
                Some(_) => Err(fail(format!("{key} must be a string"))),
            }
        };
        let reason = text("reason")?
            .filter(|r| !r.trim().is_empty())
            .ok_or_else(|| fail("every gap needs a reason".into()))?;
        let transport = text("transport")?
            .map(|t| {
                TransportKind::parse(&t).ok_or_else(|| fail(format!("unknown transport {t:?}")))
            })
            .transpose()?;
        let store = text("store")?
            .map(|s| Store::parse(&s).ok_or_else(|| fail(format!("unknown store {s:?}"))))
            .transpose()?;
        let revision = text("revision")?
            .map(|r| Revision::parse(&r).ok_or_else(|| fail(format!("unknown revision {r:?}"))))
            .transpose()?;
        let feature = text("feature")?
            .map(|f| Feature::parse(&f).ok_or_else(|| fail(format!("unknown feature {f:?}"))))
            .transpose()?;
        gaps.push(Gap {
            transport,
            store,
            revision,
            feature,
            reason,
        });
    }
    Ok(gaps)
}

/// Every gap in `path`.
pub fn load(path: &Path) -> Result<Vec<Gap>, GapsError> {
    parse(&std::fs::read_to_string(path)?)
}

/// The gaps file of this crate, `tests/known-gaps.toml`, read once.
pub fn known() -> &'static [Gap] {
    static GAPS: std::sync::OnceLock<Vec<Gap>> = std::sync::OnceLock::new();
    GAPS.get_or_init(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("known-gaps.toml");
        load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    })
}

/// Runs `case` and applies the known gaps: panics when it fails and no gap covers it, or when
/// it passes and a gap still says it does not.
pub async fn check(case: Case, bins: &Binaries) {
    if case.store == Store::Redis && !pairing::redis_available().await {
        return;
    }
    if case.store == Store::Postgres && !pairing::postgres_available().await {
        return;
    }
    let gap = known().iter().find(|g| g.covers(&case));
    let outcome = pairing::run(case, bins).await;
    pairing::clean_up(case.store, &pairing::place(&case)).await;
    match (outcome, gap) {
        (Ok(()), None) => {}
        (Err(why), Some(gap)) => {
            eprintln!("known gap ({}): {case}: {why}", gap.reason);
        }
        (Ok(()), Some(gap)) => panic!(
            "{case} passes, but tests/known-gaps.toml still lists it ({}): remove the entry",
            gap.reason
        ),
        (Err(why), None) => panic!("{case}: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(transport: TransportKind, feature: Feature) -> Case {
        Case {
            transport,
            store: Store::Memory,
            revision: Revision::V2025_06_18,
            feature,
        }
    }

    #[test]
    fn absent_keys_match_everything_and_present_keys_narrow() {
        let gaps = parse(
            "[[gap]]\ntransport = \"http-sse\"\nfeature = \"cancellation\"\nreason = \"r\"\n",
        )
        .unwrap();
        assert_eq!(gaps.len(), 1);
        assert!(gaps[0].covers(&case(TransportKind::HttpSse, Feature::Cancellation)));
        assert!(!gaps[0].covers(&case(TransportKind::Stdio, Feature::Cancellation)));
        assert!(!gaps[0].covers(&case(TransportKind::HttpSse, Feature::Tools)));
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn every_entry_needs_a_reason_and_known_values() {
        for bad in [
            "[[gap]]\nfeature = \"tools\"\n",
            "[[gap]]\nreason = \"  \"\n",
            "[[gap]]\nreason = \"r\"\nfeature = \"teleport\"\n",
            "[[gap]]\nreason = \"r\"\nrevision = \"2099-01-01\"\n",
            "[[gap]]\nreason = \"r\"\ntransport = \"carrier-pigeon\"\n",
            "[[gap]]\nreason = \"r\"\nstore = \"disk\"\n",
            "[[gap]]\nreason = \"r\"\ntypo = \"x\"\n",
            "[[gap]]\nreason = 3\n",
            "gap = 1\n",
            "not toml at all [",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn the_checked_in_file_parses() {
        assert!(known().iter().all(|g| !g.reason.trim().is_empty()));
    }
}
