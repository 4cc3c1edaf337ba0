//! Validation against the official `schema.json` of each revision.
//!
//! The schemas are read from `MCP_SPEC_SCHEMAS`, else from `../shared/spec-schemas` beside the
//! workspace. They are never copied into the repository. With `CI=true` a missing folder is an
//! error; otherwise validation is skipped with a notice.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use mcp_adapters::Revision;
use serde_json::Value;

/// Why a message could not be validated (not: why it is invalid).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The folder of schemas is missing and `CI=true`.
    #[error("the official schemas are missing at {0} (set MCP_SPEC_SCHEMAS)")]
    Missing(PathBuf),
    /// A `schema.json` could not be read or parsed.
    #[error("{path}: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The revision's schema has no such definition.
    #[error("{revision} schema.json has no definition {def}")]
    NoDefinition {
        /// The revision.
        revision: Revision,
        /// The definition asked for.
        def: String,
    },
    /// A definition did not compile.
    #[error("{revision} {def} does not compile: {reason}")]
    Compile {
        /// The revision.
        revision: Revision,
        /// The definition.
        def: String,
        /// The compiler's message.
        reason: String,
    },
}

/// The default folder: `MCP_SPEC_SCHEMAS`, else `../shared/spec-schemas` beside the workspace.
pub fn default_dir() -> PathBuf {
    std::env::var_os("MCP_SPEC_SCHEMAS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("..")
                .join("shared")
                .join("spec-schemas")
        })
}

/// Whether `CI=true` is set.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The compiled definitions of every revision's `schema.json`, compiled on first use.
pub struct Schemas {
    dir: PathBuf,
    docs: Mutex<HashMap<Revision, Arc<Value>>>,
    compiled: Mutex<HashMap<(Revision, String), Arc<jsonschema::Validator>>>,
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schemas")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Schemas {
    /// The schemas in `dir` (which holds one folder per revision). `Ok(None)` when the folder is
    /// missing outside CI (a notice is printed); an error when it is missing with `CI=true`.
    pub fn open(dir: PathBuf) -> Result<Option<Self>, SchemaError> {
        if dir
            .join(Revision::LATEST.as_str())
            .join("schema.json")
            .is_file()
        {
            return Ok(Some(Self {
                dir,
                docs: Mutex::default(),
                compiled: Mutex::default(),
            }));
        }
        if in_ci() {
            return Err(SchemaError::Missing(dir));
        }
        eprintln!(
            "notice: no official schemas at {}; schema validation skipped",
            dir.display()
        );
        Ok(None)
    }

    /// The process-wide schemas in [`default_dir`], opened once. Panics when they are missing
    /// with `CI=true` (tests only).
    pub fn shared() -> Option<&'static Self> {
        static SHARED: OnceLock<Option<Schemas>> = OnceLock::new();
        SHARED
            .get_or_init(|| Self::open(default_dir()).unwrap_or_else(|e| panic!("{e}")))
            .as_ref()
    }

    fn doc(&self, revision: Revision) -> Result<Arc<Value>, SchemaError> {
        let mut docs = self.docs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(doc) = docs.get(&revision) {
            return Ok(doc.clone());
        }
        let path = self.dir.join(revision.as_str()).join("schema.json");
        let unreadable = |reason: String| SchemaError::Unreadable {
            path: path.clone(),
            reason,
        };
        let text = std::fs::read_to_string(&path).map_err(|e| unreadable(e.to_string()))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))?;
        let doc = Arc::new(doc);
        docs.insert(revision, doc.clone());
        Ok(doc)
    }

    /// Whether the revision's schema defines `def`.
    pub fn has(&self, revision: Revision, def: &str) -> Result<bool, SchemaError> {
        let doc = self.doc(revision)?;
        Ok(doc
            .get("$defs")
            .or_else(|| doc.get("definitions"))
            .is_some_and(|d| d.get(def).is_some()))
    }

    fn validator(
        &self,
        revision: Revision,
        def: &str,
    ) -> Result<Arc<jsonschema::Validator>, SchemaError> {
        let key = (revision, def.to_owned());
        if let Some(v) = self
            .compiled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(v.clone());
        }
        if !self.has(revision, def)? {
            return Err(SchemaError::NoDefinition {
                revision,
                def: def.to_owned(),
            });
        }
        let doc = self.doc(revision)?;
        let mut root = (*doc).clone();
        let section = if doc.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        root["$ref"] = Value::String(format!("#/{section}/{def}"));
        let validator = jsonschema::validator_for(&root).map_err(|e| SchemaError::Compile {
            revision,
            def: def.to_owned(),
            reason: e.to_string(),
        })?;
        let validator = Arc::new(validator);
        self.compiled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, validator.clone());
        Ok(validator)
    }

    /// The violations of `instance` against the revision's definition `def` (empty: valid).
    pub fn check(
        &self,
        revision: Revision,
        def: &str,
        instance: &Value,
    ) -> Result<Vec<String>, SchemaError> {
        let validator = self.validator(revision, def)?;
        Ok(validator
            .iter_errors(instance)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    format!("{def}: {e} (at the root)")
                } else {
                    format!("{def}: {e} at {at}")
                }
            })
            .collect())
    }

    /// The violations of one JSON-RPC message against its revision's schema.
    ///
    /// `from_client` says who sent it. For a response, `method` is the method of the request it
    /// answers (when known), which selects the result type it must match.
    pub fn check_message(
        &self,
        revision: Revision,
        message: &Value,
        from_client: bool,
        method: Option<&str>,
    ) -> Result<Vec<String>, SchemaError> {
        let mut problems = Vec::new();
        let has_method = message.get("method").is_some();
        let has_id = message.get("id").is_some();
        let (envelope, union) = match (has_method, has_id, from_client) {
            (true, true, true) => ("JSONRPCRequest", Some("ClientRequest")),
            (true, true, false) => ("JSONRPCRequest", Some("ServerRequest")),
            (true, false, true) => ("JSONRPCNotification", Some("ClientNotification")),
            (true, false, false) => ("JSONRPCNotification", Some("ServerNotification")),
            (false, _, _) => ("JSONRPCMessage", None),
        };
        problems.extend(self.check(revision, envelope, message)?);
        if let Some(union) = union {
            if self.has(revision, union)? {
                problems.extend(self.check(revision, union, message)?);
            } else {
                problems.push(format!("{union} does not exist on {revision}"));
            }
        }
        if let Some(result) = message.get("result") {
            let def = if from_client {
                Some("ClientResult")
            } else {
                let input_required =
                    result.get("resultType").and_then(Value::as_str) == Some("input_required");
                if input_required {
                    Some("InputRequiredResult")
                } else {
                    method.and_then(result_definition)
                }
            };
            if let Some(def) = def {
                problems.extend(self.check(revision, def, result)?);
            }
        }
        Ok(problems)
    }
}

/// The result type that answers `method`, as the schemas name it.
pub fn result_definition(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResult",
        "server/discover" => "DiscoverResult",
        "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            "EmptyResult"
        }
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "completion/complete" => "CompleteResult",
        "subscriptions/listen" => "SubscriptionsListenResult",
        _ => return None,
    })
}
