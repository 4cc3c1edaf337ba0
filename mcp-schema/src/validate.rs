//! Argument validation with validators compiled once.
//!
//! A [`Validator`] is compiled when a tool is registered (or a server's tool list is read) and
//! then validates every call. Schemas are draft-07 or 2020-12; no `$ref` outside the schema
//! document is ever fetched, and the schema's nesting depth and size are bounded before the
//! compiler sees it. `format` is an annotation, as 2020-12 says by default, in both dialects.

use std::fmt;

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use crate::profile::Dialect;

/// How a [`Validator`] is compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValidatorOptions {
    default_dialect: Dialect,
    max_depth: usize,
    max_nodes: usize,
    max_issues: usize,
}

impl ValidatorOptions {
    /// The default options; see each setter.
    pub const DEFAULT: Self = Self {
        default_dialect: Dialect::Draft202012,
        max_depth: 128,
        max_nodes: 100_000,
        max_issues: 16,
    };

    /// Default options.
    pub const fn new() -> Self {
        Self::DEFAULT
    }

    /// The dialect of a schema without `$schema`. A `$schema` naming draft-07 or 2020-12
    /// always wins.
    ///
    /// Default is [`Dialect::Draft202012`], the dialect of a declared tool schema. A client
    /// validating a legacy server's `outputSchema` passes its revision's
    /// [`SchemaProfile::dialect`](crate::SchemaProfile).
    #[must_use]
    pub const fn default_dialect(mut self, dialect: Dialect) -> Self {
        self.default_dialect = dialect;
        self
    }

    /// The deepest JSON nesting a schema may have (an object or array inside another is one
    /// level deeper). Deeper schemas are refused with [`SchemaError::TooDeep`].
    ///
    /// Default is `128`.
    #[must_use]
    pub const fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// The largest number of JSON values (objects, arrays, strings, numbers, booleans, nulls)
    /// a schema may hold. Larger schemas are refused with [`SchemaError::TooLarge`].
    ///
    /// Default is `100_000`.
    #[must_use]
    pub const fn max_nodes(mut self, nodes: usize) -> Self {
        self.max_nodes = nodes;
        self
    }

    /// The most issues one failed validation reports; the rest are not computed.
    ///
    /// Default is `16`.
    #[must_use]
    pub const fn max_issues(mut self, issues: usize) -> Self {
        self.max_issues = issues;
        self
    }

    /// Compiles `schema` with these options.
    ///
    /// # Errors
    ///
    /// [`SchemaError`] when the schema exceeds a limit, names another dialect, has a `$ref` that
    /// does not resolve inside the document, or is not a valid schema of its dialect.
    pub fn compile(&self, schema: &Value) -> Result<Validator, SchemaError> {
        check_size(schema, self.max_depth, self.max_nodes)?;
        let dialect = match schema.get("$schema") {
            None => self.default_dialect,
            Some(uri) => uri.as_str().and_then(Dialect::from_uri).ok_or_else(|| {
                SchemaError::UnsupportedDialect {
                    uri: uri.as_str().map_or_else(|| uri.to_string(), str::to_owned),
                }
            })?,
        };
        let draft = match dialect {
            Dialect::Draft7 => jsonschema::Draft::Draft7,
            Dialect::Draft202012 => jsonschema::Draft::Draft202012,
        };
        let inner = jsonschema::options()
            .with_draft(draft)
            .offline()
            .should_validate_formats(false)
            .build(schema)
            .map_err(|error| match error.kind() {
                ValidationErrorKind::Referencing(reason) => SchemaError::UnresolvedRef {
                    message: reason.to_string(),
                },
                _ => SchemaError::Invalid {
                    message: error.to_string(),
                },
            })?;
        Ok(Validator {
            inner,
            dialect,
            max_issues: self.max_issues,
        })
    }
}

impl Default for ValidatorOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A compiled JSON Schema. Cheap to share behind an `Arc`; validation takes `&self`.
#[derive(Clone, Debug)]
pub struct Validator {
    inner: jsonschema::Validator,
    dialect: Dialect,
    max_issues: usize,
}

impl Validator {
    /// Compiles `schema` with [`ValidatorOptions::DEFAULT`] (2020-12 unless `$schema` says
    /// draft-07).
    ///
    /// ```
    /// use mcp_schema::Validator;
    /// use serde_json::json;
    ///
    /// let validator = Validator::compile(&json!({
    ///     "type": "object",
    ///     "properties": {"n": {"type": "integer"}},
    ///     "required": ["n"],
    /// }))?;
    /// assert!(validator.validate(&json!({"n": 3})).is_ok());
    /// let issues = validator.validate(&json!({"n": "three"})).unwrap_err();
    /// assert_eq!(issues[0].instance_path(), "/n");
    /// # Ok::<(), mcp_schema::SchemaError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// See [`ValidatorOptions::compile`].
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        ValidatorOptions::DEFAULT.compile(schema)
    }

    /// The dialect the schema was compiled as.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Whether `instance` is valid.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.inner.is_valid(instance)
    }

    /// Validates `instance`.
    ///
    /// # Errors
    ///
    /// The issues found, at least one and at most
    /// [`max_issues`](ValidatorOptions::max_issues), in the validator's order.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<ValidationIssue>> {
        if self.inner.is_valid(instance) {
            return Ok(());
        }
        let issues: Vec<ValidationIssue> = self
            .inner
            .iter_errors(instance)
            .take(self.max_issues.max(1))
            .map(|error| ValidationIssue {
                instance_path: error.instance_path().as_str().to_owned(),
                message: error.masked().to_string(),
            })
            .collect();
        if issues.is_empty() {
            // `is_valid` and `iter_errors` disagree only if the validator is broken; still
            // report something rather than accept the instance.
            return Err(vec![ValidationIssue {
                instance_path: String::new(),
                message: "value is not valid".to_owned(),
            }]);
        }
        Err(issues)
    }
}

/// One reason an instance is invalid.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValidationIssue {
    instance_path: String,
    message: String,
}

impl ValidationIssue {
    /// The JSON Pointer of the offending value inside the instance (`""` for the instance
    /// itself, `/items/0/name` for a nested one).
    pub fn instance_path(&self) -> &str {
        &self.instance_path
    }

    /// What is wrong, in English. The offending value itself is not quoted (it may be large
    /// or sensitive); the wording is not stable and is meant for people and models.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ValidationIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.instance_path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.instance_path, self.message)
        }
    }
}

/// Why a schema cannot be compiled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema nests deeper than [`ValidatorOptions::max_depth`].
    #[error("schema nests deeper than {limit} levels")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// The schema has more JSON values than [`ValidatorOptions::max_nodes`].
    #[error("schema has more than {limit} JSON values")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// `$schema` names a dialect other than draft-07 and 2020-12.
    #[error("`$schema` {uri:?} is neither draft-07 nor 2020-12")]
    UnsupportedDialect {
        /// The `$schema` value.
        uri: String,
    },
    /// A `$ref` does not resolve inside the schema document. Remote references are never
    /// fetched.
    #[error("unresolved `$ref` (remote references are never fetched): {message}")]
    UnresolvedRef {
        /// The compiler's description.
        message: String,
    },
    /// The schema is not valid in its dialect (for example `"type": 5` or a bad `pattern`).
    #[error("invalid schema: {message}")]
    Invalid {
        /// The compiler's description.
        message: String,
    },
}

/// Checks nesting depth and value count without recursion.
fn check_size(schema: &Value, max_depth: usize, max_nodes: usize) -> Result<(), SchemaError> {
    let mut stack: Vec<(&Value, usize)> = vec![(schema, 0)];
    let mut nodes = 0usize;
    while let Some((value, depth)) = stack.pop() {
        nodes += 1;
        if nodes > max_nodes {
            return Err(SchemaError::TooLarge { limit: max_nodes });
        }
        if depth > max_depth {
            return Err(SchemaError::TooDeep { limit: max_depth });
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn compiles_both_dialects_by_default_or_by_schema_keyword() {
        // Tuple `items` is draft-07 only; in 2020-12 `items` must be one schema.
        let tuple = json!({"items": [{"type": "integer"}], "additionalItems": false});
        let d7 = ValidatorOptions::new()
            .default_dialect(Dialect::Draft7)
            .compile(&tuple)
            .unwrap();
        assert_eq!(d7.dialect(), Dialect::Draft7);
        assert!(d7.is_valid(&json!([1])));
        assert!(!d7.is_valid(&json!([1, 2])));
        let mut declared = tuple.clone();
        declared["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        assert_eq!(
            Validator::compile(&declared).unwrap().dialect(),
            Dialect::Draft7
        );

        let modern = json!({"prefixItems": [{"type": "integer"}], "items": false});
        let v = Validator::compile(&modern).unwrap();
        assert_eq!(v.dialect(), Dialect::Draft202012);
        assert!(v.is_valid(&json!([1])));
        assert!(!v.is_valid(&json!([1, 2])));
        // 2020-12 `$ref` with siblings applies both.
        let v = Validator::compile(&json!({
            "$defs": {"S": {"type": "string"}}, "$ref": "#/$defs/S", "minLength": 2
        }))
        .unwrap();
        assert!(v.is_valid(&json!("ab")));
        assert!(!v.is_valid(&json!("a")));
    }

    #[test]
    fn reports_issues_with_instance_paths_and_no_values() {
        let v = Validator::compile(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["name"],
            "additionalProperties": false
        }))
        .unwrap();
        assert_eq!(v.validate(&json!({"name": "x", "tags": [1, 2]})), Ok(()));
        let issues = v
            .validate(&json!({"tags": [1, "secret-value"], "extra": true}))
            .unwrap_err();
        let mut paths: Vec<&str> = issues.iter().map(ValidationIssue::instance_path).collect();
        paths.sort_unstable();
        assert_eq!(paths, ["", "", "/tags/1"]);
        assert!(
            issues.iter().all(|i| !i.message().contains("secret-value")),
            "{issues:?}"
        );
        assert!(
            issues
                .iter()
                .any(|i| i.to_string().starts_with("/tags/1: "))
        );
    }

    #[test]
    fn bounds_the_number_of_issues() {
        let v = ValidatorOptions::new()
            .max_issues(2)
            .compile(&json!({"type": "array", "items": {"type": "string"}}))
            .unwrap();
        assert_eq!(v.validate(&json!([1, 2, 3, 4])).unwrap_err().len(), 2);
    }

    #[test]
    fn refuses_schemas_it_must_not_compile() {
        let deep = (0..10).fold(
            json!({"type": "string"}),
            |inner, _| json!({"items": inner}),
        );
        let cases = [
            (
                ValidatorOptions::new().max_depth(8),
                deep.clone(),
                SchemaError::TooDeep { limit: 8 },
            ),
            (
                ValidatorOptions::new().max_nodes(5),
                deep,
                SchemaError::TooLarge { limit: 5 },
            ),
            (
                ValidatorOptions::new(),
                json!({"$schema": "https://json-schema.org/draft/2019-09/schema"}),
                SchemaError::UnsupportedDialect {
                    uri: "https://json-schema.org/draft/2019-09/schema".into(),
                },
            ),
            (
                ValidatorOptions::new(),
                json!({"$schema": 7}),
                SchemaError::UnsupportedDialect { uri: "7".into() },
            ),
        ];
        for (options, schema, expected) in cases {
            assert_eq!(options.compile(&schema).unwrap_err(), expected, "{schema}");
        }
        for remote in [
            json!({"$ref": "https://example.com/schema.json"}),
            json!({"properties": {"a": {"$ref": "other.json#/x"}}}),
            json!({"$ref": "#/$defs/missing"}),
        ] {
            let err = Validator::compile(&remote).unwrap_err();
            assert!(
                matches!(err, SchemaError::UnresolvedRef { .. }),
                "{remote}: {err:?}"
            );
        }
        let err = Validator::compile(&json!({"type": 5})).unwrap_err();
        assert!(matches!(err, SchemaError::Invalid { .. }), "{err:?}");
    }
}
