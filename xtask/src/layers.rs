//! The layering matrix and its check over `cargo metadata` output.
//!
//! Only normal dependencies count: dev-dependencies may cross layers (tests often need a peer).

use std::fmt;

use anyhow::{Context, Result};
use serde_json::Value;

/// What one workspace crate may depend on.
struct Layer {
    /// The crate's package name.
    name: &'static str,
    /// The workspace crates it may depend on.
    allowed_internal: &'static [&'static str],
    /// External crates it must never depend on.
    forbidden_external: &'static [&'static str],
}

/// Runtime, network and storage crates: none of them may appear in the sans-IO layers.
const RUNTIME_AND_IO: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "mio",
    "hyper",
    "hyper-util",
    "http",
    "http-body",
    "http-body-util",
    "reqwest",
    "redis",
    "tower",
];

/// Runtime and network crates, with `http` allowed (header types are plain data).
const RUNTIME_AND_NETWORK: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "mio",
    "hyper",
    "hyper-util",
    "reqwest",
    "redis",
    "tower",
];

const MATRIX: &[Layer] = &[
    Layer {
        name: "everymcp-wire",
        allowed_internal: &[],
        forbidden_external: RUNTIME_AND_IO,
    },
    Layer {
        name: "everymcp-schema",
        allowed_internal: &["everymcp-wire"],
        forbidden_external: RUNTIME_AND_IO,
    },
    Layer {
        name: "everymcp-adapters",
        allowed_internal: &["everymcp-wire", "everymcp-schema"],
        forbidden_external: RUNTIME_AND_NETWORK,
    },
    Layer {
        name: "everymcp-hub",
        allowed_internal: &[],
        forbidden_external: &[],
    },
    Layer {
        name: "everymcp-auth",
        allowed_internal: &[],
        forbidden_external: RUNTIME_AND_IO,
    },
    Layer {
        name: "everymcp-server",
        allowed_internal: &[
            "everymcp-wire",
            "everymcp-schema",
            "everymcp-adapters",
            "everymcp-hub",
            "everymcp-auth",
        ],
        forbidden_external: &[],
    },
    // The development authorization server: mounted on the server's listener (its `Routes`
    // seam) and verifying its own tokens as the server's `TokenVerifier`.
    Layer {
        name: "everymcp-dev-auth",
        allowed_internal: &["everymcp-hub", "everymcp-auth", "everymcp-server"],
        forbidden_external: &[],
    },
    // The `mcp-demo` binary: the demo server, with the development authorization server
    // behind `--auth`.
    Layer {
        name: "everymcp-demo",
        allowed_internal: &["everymcp-hub", "everymcp-server", "everymcp-dev-auth"],
        forbidden_external: &[],
    },
    Layer {
        name: "everymcp-client",
        allowed_internal: &[
            "everymcp-wire",
            "everymcp-schema",
            "everymcp-adapters",
            "everymcp-auth",
        ],
        forbidden_external: &[],
    },
    // The gateway (`mcp proxy`): an upstream reached with the client, served downstream by
    // the server, sessions in a hub.
    Layer {
        name: "everymcp-gateway",
        allowed_internal: &[
            "everymcp-wire",
            "everymcp-adapters",
            "everymcp-hub",
            "everymcp-server",
            "everymcp-client",
        ],
        forbidden_external: &[],
    },
    Layer {
        name: "everymcp-cli",
        allowed_internal: &[
            "everymcp-wire",
            "everymcp-schema",
            "everymcp-adapters",
            "everymcp-client",
            // `mcp proxy`; the server itself stays out of reach (the gateway serves).
            "everymcp-gateway",
        ],
        forbidden_external: &[],
    },
    Layer {
        name: "xtask",
        allowed_internal: &[],
        forbidden_external: &[],
    },
    Layer {
        name: "mcp-tests",
        allowed_internal: &[
            "everymcp-wire",
            "everymcp-schema",
            "everymcp-adapters",
            "everymcp-hub",
            "everymcp-server",
            "everymcp-client",
        ],
        forbidden_external: &[],
    },
    Layer {
        name: "mcp-fuzz-harness",
        allowed_internal: &[
            "everymcp-wire",
            "everymcp-schema",
            "everymcp-adapters",
            "everymcp-client",
        ],
        forbidden_external: &[],
    },
    Layer {
        name: "mcp-conformance-peers",
        allowed_internal: &[
            "everymcp-wire",
            "everymcp-schema",
            "everymcp-adapters",
            "everymcp-hub",
            "everymcp-server",
            "everymcp-client",
        ],
        forbidden_external: &[],
    },
    // The examples package (examples/): runnable programs that use the public API of the server
    // and the client, as an application would.
    Layer {
        name: "mcp-examples",
        allowed_internal: &["everymcp-hub", "everymcp-server", "everymcp-client"],
        forbidden_external: &[],
    },
    Layer {
        name: "mcp-bench",
        allowed_internal: &[
            "everymcp-wire",
            "everymcp-schema",
            "everymcp-adapters",
            "everymcp-hub",
            "everymcp-server",
            "everymcp-client",
        ],
        forbidden_external: &[],
    },
];

/// One broken rule.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Violation {
    /// A workspace crate depends on a workspace crate outside its allowed set.
    Internal { from: String, to: String },
    /// A crate depends on an external crate its layer forbids.
    External { from: String, to: String },
    /// A workspace crate the matrix does not know: every new crate needs a row.
    UnknownCrate { name: String },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Internal { from, to } => {
                write!(f, "{from} must not depend on the workspace crate {to}")
            }
            Self::External { from, to } => {
                write!(f, "{from} must not depend on {to} (a runtime or I/O crate)")
            }
            Self::UnknownCrate { name } => write!(
                f,
                "{name} is a workspace crate with no row in the layering matrix (xtask/src/layers.rs)"
            ),
        }
    }
}

/// Checks `cargo metadata --format-version 1` output against the matrix.
pub(crate) fn check(metadata: &Value) -> Result<Vec<Violation>> {
    let packages = metadata["packages"]
        .as_array()
        .context("cargo metadata has no `packages` array")?;
    let members: Vec<&str> = packages
        .iter()
        .filter_map(|package| package["name"].as_str())
        .collect();
    let mut violations = Vec::new();
    for package in packages {
        let name = package["name"].as_str().context("a package has no name")?;
        let Some(layer) = MATRIX.iter().find(|layer| layer.name == name) else {
            violations.push(Violation::UnknownCrate {
                name: name.to_owned(),
            });
            continue;
        };
        let dependencies = package["dependencies"]
            .as_array()
            .with_context(|| format!("{name} has no `dependencies` array"))?;
        for dependency in dependencies {
            // `kind` is null for normal dependencies, "dev" or "build" otherwise.
            if !dependency["kind"].is_null() {
                continue;
            }
            let to = dependency["name"]
                .as_str()
                .with_context(|| format!("a dependency of {name} has no name"))?;
            if members.contains(&to) {
                if !layer.allowed_internal.contains(&to) {
                    violations.push(Violation::Internal {
                        from: name.to_owned(),
                        to: to.to_owned(),
                    });
                }
            } else if layer.forbidden_external.contains(&to) {
                violations.push(Violation::External {
                    from: name.to_owned(),
                    to: to.to_owned(),
                });
            }
        }
    }
    Ok(violations)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn package(name: &str, deps: &[(&str, Option<&str>)]) -> Value {
        let deps: Vec<Value> = deps
            .iter()
            .map(|(dep, kind)| json!({"name": dep, "kind": kind}))
            .collect();
        json!({"name": name, "dependencies": deps})
    }

    fn valid_workspace() -> Vec<Value> {
        vec![
            package(
                "everymcp-wire",
                &[("serde", None), ("proptest", Some("dev"))],
            ),
            package(
                "everymcp-schema",
                &[("everymcp-wire", None), ("jsonschema", None)],
            ),
            package(
                "everymcp-adapters",
                &[
                    ("everymcp-wire", None),
                    ("everymcp-schema", None),
                    ("http", None),
                ],
            ),
            package("everymcp-hub", &[("tokio", None), ("redis", None)]),
            package(
                "everymcp-server",
                &[
                    ("everymcp-wire", None),
                    ("everymcp-schema", None),
                    ("everymcp-adapters", None),
                    ("everymcp-hub", None),
                    ("tokio", None),
                ],
            ),
            package(
                "everymcp-client",
                &[
                    ("everymcp-wire", None),
                    ("everymcp-adapters", None),
                    ("everymcp-server", Some("dev")),
                ],
            ),
        ]
    }

    #[test]
    fn the_real_workspace_respects_the_matrix() {
        let output = super::super::cargo_command()
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .output()
            .expect("cargo metadata runs");
        let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
        assert_eq!(check(&metadata).expect("well-formed metadata"), vec![]);
    }

    #[test]
    fn a_valid_sample_passes() {
        let metadata = json!({"packages": valid_workspace()});
        assert_eq!(check(&metadata).unwrap(), vec![]);
    }

    #[test]
    fn violating_samples_fail() {
        let cases = [
            (
                package("everymcp-client", &[("everymcp-server", None)]),
                Violation::Internal {
                    from: "everymcp-client".into(),
                    to: "everymcp-server".into(),
                },
            ),
            (
                package("everymcp-client", &[("everymcp-hub", None)]),
                Violation::Internal {
                    from: "everymcp-client".into(),
                    to: "everymcp-hub".into(),
                },
            ),
            (
                package("everymcp-wire", &[("tokio", None)]),
                Violation::External {
                    from: "everymcp-wire".into(),
                    to: "tokio".into(),
                },
            ),
            (
                package("everymcp-wire", &[("http", None)]),
                Violation::External {
                    from: "everymcp-wire".into(),
                    to: "http".into(),
                },
            ),
            (
                package("everymcp-schema", &[("everymcp-adapters", None)]),
                Violation::Internal {
                    from: "everymcp-schema".into(),
                    to: "everymcp-adapters".into(),
                },
            ),
            (
                package("everymcp-adapters", &[("hyper", None)]),
                Violation::External {
                    from: "everymcp-adapters".into(),
                    to: "hyper".into(),
                },
            ),
            (
                package("everymcp-hub", &[("everymcp-wire", None)]),
                Violation::Internal {
                    from: "everymcp-hub".into(),
                    to: "everymcp-wire".into(),
                },
            ),
            (
                package(
                    "everymcp-cli",
                    &[("everymcp-client", None), ("everymcp-server", None)],
                ),
                Violation::Internal {
                    from: "everymcp-cli".into(),
                    to: "everymcp-server".into(),
                },
            ),
            (
                package("mcp-extra", &[]),
                Violation::UnknownCrate {
                    name: "mcp-extra".into(),
                },
            ),
        ];
        for (violating, expected) in cases {
            let mut packages = valid_workspace();
            let name = violating["name"].clone();
            packages.retain(|package| package["name"] != name);
            packages.push(violating);
            let metadata = json!({"packages": packages});
            assert_eq!(check(&metadata).unwrap(), vec![expected]);
        }
    }

    #[test]
    fn malformed_metadata_is_an_error() {
        assert!(check(&json!({})).is_err());
    }
}
