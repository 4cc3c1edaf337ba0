//! What each protocol revision is shown of a tool's `inputSchema` and `outputSchema`.
//!
//! [`project_input`] and [`project_output`] are pure functions of the declared schema and a
//! [`SchemaProfile`]. The server always validates arguments against the full, declared schema,
//! so a projection only has to be *sound for the client*: every argument valid under the
//! declared schema must be valid under the projection. Where the projection is wider, the
//! server's own check still rejects what the declaration forbids.
//!
//! # Rules
//!
//! Every rule is one function in this module (or in `merge`/`union`), with a doc comment saying
//! why. The legacy rules apply to [`InputSupport::Legacy`] (2024-11-05 to 2025-11-25) and to
//! object-root output schemas there; [`InputSupport::Full`] (2026-07-28) only gets the
//! object-root rule, and [`InputSupport::Dialect`] (2025-11-25 shown natively) the object-root
//! rule and `strip_header_annotations`.
//!
//! | Rule | Effect | Kind |
//! | --- | --- | --- |
//! | `inline_local_ref` | `$ref` to `#/$defs/…`, `#/definitions/…` (any local JSON Pointer) is replaced by its target, merged with its siblings | lossless; recursion is **not offered** |
//! | `merge_all_of` | `allOf` branches (and `$ref` siblings) are merged into one schema | lossless, or **not offered** on a conflict |
//! | `collapse_value_union` | `anyOf`/`oneOf` whose branches are all `const`/`enum`/`type: "null"` becomes one `enum` | lossless |
//! | `collapse_nullable_union` | `anyOf`/`oneOf` of one schema and `{"type": "null"}` becomes that schema with null re-admitted | lossless |
//! | `reject_real_union` | any other `anyOf`/`oneOf` with two or more non-null branches | **not offered** |
//! | `reject_unsupported_keyword` | `not`, `dependentSchemas`, `prefixItems` and tuple `items`, `unevaluatedItems`, `minContains`/`maxContains`, `$dynamicRef`/`$recursiveRef`, a nested `$id` | **not offered** |
//! | `strip_header_annotations` | `x-mcp-header` is removed | lossless (annotation) |
//! | `drop_conditionals` | `if`/`then`/`else` are removed | **widening** |
//! | `drop_dependent_required` | `dependentRequired` is removed | **widening** |
//! | `drop_non_portable_keywords` | `$schema`, `$defs`, `definitions`, root `$id`, anchors, `$comment`, `contentSchema`, and the draft-07-only `dependencies`/`additionalItems` (no effect in 2020-12) are removed | lossless |
//! | `unevaluated_to_additional` | `unevaluatedProperties` becomes `additionalProperties` once everything is merged | lossless, or **not offered** next to a dropped conditional |
//! | `object_property_schemas` | a boolean `properties` entry becomes `{}` (`true`) | lossless; `false` is **not offered** |
//! | `require_object_root` | the root gets `type: "object"` | lossless for arguments (always objects); a root that excludes objects is **not offered** |
//! | `check_dialect` | a `$schema` other than 2020-12 | **not offered** (the rules assume 2020-12 meaning) |
//! | [`ProjectionLimits`] | nesting deeper than `max_depth`, or more than `max_nodes` subschemas once inlined | **not offered** |
//!
//! The result is meant to read the same under draft-07 (the dialect of the 2024-11-05 to
//! 2025-06-18 `schema.json`) and under 2020-12 (2025-11-25): it only keeps keywords that both
//! dialects define identically. One caveat: `format` is kept as declared; 2020-12 treats it as
//! an annotation (and so does the server's [`Validator`](crate::Validator)), while a draft-07
//! client may choose to assert it.

mod merge;
mod union;

use std::fmt;

use serde_json::{Map, Value};

use crate::pointer;
use crate::profile::{Dialect, InputSupport, OutputSupport, SchemaProfile};

/// Bounds on the work one projection may do. Inlining `$ref`s can grow a schema
/// exponentially, so the output size is bounded, not only the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProjectionLimits {
    max_depth: usize,
    max_nodes: usize,
}

impl ProjectionLimits {
    /// The default limits: see [`max_depth`](Self::max_depth) and
    /// [`max_nodes`](Self::max_nodes).
    pub const DEFAULT: Self = Self {
        max_depth: 64,
        max_nodes: 20_000,
    };

    /// Default limits.
    pub const fn new() -> Self {
        Self::DEFAULT
    }

    /// The deepest nesting of subschemas (counting through inlined `$ref`s) that is projected;
    /// deeper schemas are not offered.
    ///
    /// Default is `64`.
    #[must_use]
    pub const fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// The largest number of subschemas visited while projecting one schema, inlined copies
    /// included; larger schemas are not offered.
    ///
    /// Default is `20_000`.
    #[must_use]
    pub const fn max_nodes(mut self, nodes: usize) -> Self {
        self.max_nodes = nodes;
        self
    }
}

impl Default for ProjectionLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The `inputSchema` one revision is shown, or why the tool is absent from it.
#[derive(Clone, Debug, PartialEq)]
pub enum Projection {
    /// The tool is listed with this `inputSchema`.
    Offered(Value),
    /// The tool is not listed on this revision.
    NotOffered(NotOffered),
}

impl Projection {
    /// The projected schema, if the tool is offered.
    pub fn offered(&self) -> Option<&Value> {
        match self {
            Self::Offered(schema) => Some(schema),
            Self::NotOffered(_) => None,
        }
    }

    /// Whether the tool is offered.
    pub fn is_offered(&self) -> bool {
        matches!(self, Self::Offered(_))
    }

    /// Why the tool is not offered, if it is not.
    pub fn not_offered(&self) -> Option<&NotOffered> {
        match self {
            Self::Offered(_) => None,
            Self::NotOffered(reason) => Some(reason),
        }
    }
}

/// Why a schema cannot be shown to a revision, and where in the declared schema.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason} (at {})", display_path(path))]
pub struct NotOffered {
    reason: NotOfferedReason,
    path: String,
}

impl NotOffered {
    /// What could not be projected.
    pub fn reason(&self) -> &NotOfferedReason {
        &self.reason
    }

    /// The JSON Pointer, into the declared schema, of the subschema that could not be
    /// projected (`""` for the root). Inside an inlined `$ref` target it points into the
    /// target's definition.
    pub fn path(&self) -> &str {
        &self.path
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() { "the root" } else { path }
}

/// What made a schema impossible to project losslessly.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotOfferedReason {
    /// A `$ref` reaches itself again: a recursive schema cannot be inlined.
    RecursiveRef {
        /// The `$ref` value that closes the cycle.
        reference: String,
    },
    /// A `$ref` that is not a local JSON Pointer into this schema, or that points nowhere.
    /// Nothing is ever fetched.
    UnresolvedRef {
        /// The `$ref` value.
        reference: String,
    },
    /// `anyOf`/`oneOf` with several branches that are not all values or null.
    Union {
        /// `anyOf` or `oneOf`.
        keyword: &'static str,
        /// How many branches it has.
        branches: usize,
    },
    /// A keyword the legacy subset cannot express without changing which arguments are valid.
    UnsupportedKeyword {
        /// The keyword.
        keyword: String,
    },
    /// Two combined subschemas (through `allOf` or a `$ref` with siblings) constrain the same
    /// keyword in a way that cannot be merged into one.
    Conflict {
        /// The keyword.
        keyword: String,
    },
    /// A property whose schema is `false` (it must be absent), which a legacy `properties`
    /// entry cannot say.
    ForbiddenProperty {
        /// The property name.
        name: String,
    },
    /// The root does not describe a JSON object (or accepts nothing).
    NonObjectRoot,
    /// A keyword whose value has the wrong JSON type, or a subschema that is neither an object
    /// nor a boolean.
    Malformed {
        /// The keyword (`"schema"` for a subschema of the wrong type).
        keyword: String,
    },
    /// `$schema` names a dialect other than 2020-12: the rules assume 2020-12 semantics.
    UnsupportedDialect {
        /// The `$schema` value.
        uri: String,
    },
    /// Nesting deeper than [`ProjectionLimits::max_depth`].
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// More subschemas than [`ProjectionLimits::max_nodes`].
    TooLarge {
        /// The limit.
        limit: usize,
    },
}

impl fmt::Display for NotOfferedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RecursiveRef { reference } => {
                write!(f, "recursive `$ref` {reference:?} cannot be inlined")
            }
            Self::UnresolvedRef { reference } => write!(
                f,
                "`$ref` {reference:?} is not a local JSON Pointer into this schema"
            ),
            Self::Union { keyword, branches } => write!(
                f,
                "`{keyword}` with {branches} branches is a union that older revisions cannot show"
            ),
            Self::UnsupportedKeyword { keyword } => {
                write!(f, "`{keyword}` cannot be expressed for this revision")
            }
            Self::Conflict { keyword } => {
                write!(f, "combined subschemas disagree on `{keyword}`")
            }
            Self::ForbiddenProperty { name } => {
                write!(f, "property {name:?} is forbidden by a `false` schema")
            }
            Self::NonObjectRoot => f.write_str("the root schema does not describe a JSON object"),
            Self::Malformed { keyword } => {
                write!(f, "`{keyword}` has a value of the wrong JSON type")
            }
            Self::UnsupportedDialect { uri } => write!(
                f,
                "`$schema` {uri:?} is not JSON Schema 2020-12, the dialect projection assumes"
            ),
            Self::TooDeep { limit } => write!(f, "subschemas nest deeper than {limit}"),
            Self::TooLarge { limit } => write!(f, "more than {limit} subschemas"),
        }
    }
}

/// What one revision is shown of a tool's declared `outputSchema`.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputProjection {
    /// Show this `outputSchema`; `structuredContent` is sent.
    Shown(Value),
    /// Show no `outputSchema`, because the declared one could not be simplified, but
    /// `structuredContent` (always an object here, since the root is `type: "object"`) may still
    /// be sent: the revision allows it without a schema.
    SchemaHidden(NotOffered),
    /// Neither an `outputSchema` nor `structuredContent`: the tool's result carries its
    /// content blocks only.
    Dropped(OutputDrop),
}

impl OutputProjection {
    /// The `outputSchema` to show, if any.
    pub fn schema(&self) -> Option<&Value> {
        match self {
            Self::Shown(schema) => Some(schema),
            Self::SchemaHidden(_) | Self::Dropped(_) => None,
        }
    }

    /// Whether the adapter may send `structuredContent` on this revision.
    pub fn allows_structured_content(&self) -> bool {
        !matches!(self, Self::Dropped(_))
    }
}

/// Why a revision gets neither `outputSchema` nor `structuredContent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutputDrop {
    /// The revision has no structured output (2024-11-05, 2025-03-26).
    #[error("this revision has no structured tool output")]
    NotInRevision,
    /// The revision needs an object-root output schema (2025-06-18, 2025-11-25), and the
    /// declared root is not `type: "object"`, so the structured content may not be an object.
    #[error("the output schema root is not `type: \"object\"`")]
    NonObjectRoot,
}

/// Projects a declared `inputSchema` onto a revision, with [`ProjectionLimits::DEFAULT`].
///
/// ```
/// use mcp_schema::{project_input, Projection, SchemaProfile};
/// use serde_json::json;
///
/// let declared = json!({
///     "type": "object",
///     "properties": {"when": {"anyOf": [{"$ref": "#/$defs/Day"}, {"type": "null"}]}},
///     "$defs": {"Day": {"type": "string", "enum": ["mon", "tue"]}},
/// });
/// let legacy = project_input(&declared, &SchemaProfile::V2025_03_26);
/// assert_eq!(
///     legacy,
///     Projection::Offered(json!({
///         "type": "object",
///         "properties": {"when": {"type": ["string", "null"], "enum": ["mon", "tue", null]}},
///     }))
/// );
/// ```
pub fn project_input(schema: &Value, profile: &SchemaProfile) -> Projection {
    project_input_with(schema, profile, &ProjectionLimits::DEFAULT)
}

/// Projects a declared `inputSchema` onto a revision, with explicit limits.
pub fn project_input_with(
    schema: &Value,
    profile: &SchemaProfile,
    limits: &ProjectionLimits,
) -> Projection {
    let projected = match profile.input {
        InputSupport::Full => Ok(schema.clone()),
        InputSupport::Legacy => Simplifier::new(schema, limits).run(),
        InputSupport::Dialect => as_declared(schema, limits),
    };
    match projected.and_then(require_object_root) {
        Ok(schema) => Projection::Offered(schema),
        Err(reason) => Projection::NotOffered(reason),
    }
}

/// Projects a declared `outputSchema` onto a revision, with [`ProjectionLimits::DEFAULT`].
///
/// On [`OutputSupport::ObjectRoot`] the schema is simplified as an input schema is (for
/// [`InputSupport::Legacy`]), then its root must say `type: "object"`.
pub fn project_output(schema: &Value, profile: &SchemaProfile) -> OutputProjection {
    project_output_with(schema, profile, &ProjectionLimits::DEFAULT)
}

/// Projects a declared `outputSchema` onto a revision, with explicit limits.
pub fn project_output_with(
    schema: &Value,
    profile: &SchemaProfile,
    limits: &ProjectionLimits,
) -> OutputProjection {
    match profile.output {
        OutputSupport::None => OutputProjection::Dropped(OutputDrop::NotInRevision),
        OutputSupport::Any => OutputProjection::Shown(schema.clone()),
        OutputSupport::ObjectRoot => {
            if !declares_object_root(schema, schema, 0) {
                return OutputProjection::Dropped(OutputDrop::NonObjectRoot);
            }
            let projected = match profile.input {
                InputSupport::Full => Ok(schema.clone()),
                InputSupport::Legacy => Simplifier::new(schema, limits).run(),
                InputSupport::Dialect => as_declared(schema, limits),
            };
            match projected {
                Ok(projected) if root_type_is_object(&projected) => {
                    OutputProjection::Shown(projected)
                }
                Ok(_) => OutputProjection::Dropped(OutputDrop::NonObjectRoot),
                Err(reason) => OutputProjection::SchemaHidden(reason),
            }
        }
    }
}

/// Whether the declared output root says `type: "object"`, directly or through a root `$ref`
/// or `allOf` branch. Decided before simplifying, so that a recursive object schema still lets
/// object `structuredContent` through.
fn declares_object_root(root: &Value, node: &Value, hops: usize) -> bool {
    if root_type_is_object(node) {
        return true;
    }
    if hops > 16 {
        return false;
    }
    let Value::Object(map) = node else {
        return false;
    };
    let via_ref = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| pointer::resolve_local(root, r))
        .is_some_and(|(target, _)| declares_object_root(root, target, hops + 1));
    let via_all_of = map
        .get("allOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| {
            branches
                .iter()
                .any(|b| declares_object_root(root, b, hops + 1))
        });
    via_ref || via_all_of
}

fn root_type_is_object(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.len() == 1 && types[0] == "object",
        _ => false,
    }
}

/// Rule `require_object_root`: the root gets `type: "object"`.
///
/// Every revision's `Tool.inputSchema` requires `type: "object"` at the root. Tool arguments
/// are always JSON objects, so replacing an absent `type`, or a list that includes `"object"`,
/// by `"object"` changes nothing for any argument a client can send. A root that excludes
/// objects (or accepts nothing) cannot describe arguments: not offered.
fn require_object_root(schema: Value) -> Result<Value, NotOffered> {
    let non_object = || NotOffered {
        reason: NotOfferedReason::NonObjectRoot,
        path: String::new(),
    };
    let mut map = match schema {
        Value::Object(map) => map,
        Value::Bool(true) => Map::new(),
        _ => return Err(non_object()),
    };
    let admits_object = match map.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    if !admits_object {
        return Err(non_object());
    }
    map.insert("type".to_owned(), Value::String("object".to_owned()));
    Ok(Value::Object(map))
}

/// A simplified subschema, with whether a conditional was dropped in place (on this instance
/// location, directly or in a merged `$ref`/`allOf`/union branch). `unevaluatedProperties`
/// needs to know: properties a dropped `then` evaluated would otherwise be rejected.
struct Simplified {
    schema: Value,
    dropped_conditional: bool,
}

/// The legacy simplification of one declared schema (a root document).
struct Simplifier<'a> {
    root: &'a Value,
    limits: ProjectionLimits,
    /// JSON Pointers of the `$ref` targets being inlined, outermost first.
    expanding: Vec<String>,
    /// Subschemas visited so far.
    nodes: usize,
    /// JSON Pointer of the subschema being simplified.
    path: String,
}

impl<'a> Simplifier<'a> {
    fn new(root: &'a Value, limits: &ProjectionLimits) -> Self {
        Self {
            root,
            limits: *limits,
            expanding: Vec::new(),
            nodes: 0,
            path: String::new(),
        }
    }

    fn run(mut self) -> Result<Value, NotOffered> {
        let root = self.root;
        self.schema(root, 0).map(|s| s.schema)
    }

    fn fail<T>(&self, reason: NotOfferedReason) -> Result<T, NotOffered> {
        Err(NotOffered {
            reason,
            path: self.path.clone(),
        })
    }

    /// Runs `f` with `token` appended to the current path.
    fn at<T>(&mut self, token: &str, f: impl FnOnce(&mut Self) -> T) -> T {
        let len = self.path.len();
        pointer::push_token(&mut self.path, token);
        let out = f(self);
        self.path.truncate(len);
        out
    }

    /// Simplifies one subschema at `depth` (the root is at 0).
    fn schema(&mut self, node: &'a Value, depth: usize) -> Result<Simplified, NotOffered> {
        if depth > self.limits.max_depth {
            return self.fail(NotOfferedReason::TooDeep {
                limit: self.limits.max_depth,
            });
        }
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return self.fail(NotOfferedReason::TooLarge {
                limit: self.limits.max_nodes,
            });
        }
        match node {
            Value::Bool(_) => Ok(Simplified {
                schema: node.clone(),
                dropped_conditional: false,
            }),
            Value::Object(map) => self.object(map, depth),
            _ => self.fail(NotOfferedReason::Malformed {
                keyword: "schema".to_owned(),
            }),
        }
    }

    /// Simplifies an object schema: its own keywords first, then every in-place part (`$ref`
    /// target, `allOf` branches, collapsed union) merged in, siblings' annotations first.
    fn object(
        &mut self,
        map: &'a Map<String, Value>,
        depth: usize,
    ) -> Result<Simplified, NotOffered> {
        let is_document_root = self
            .root
            .as_object()
            .is_some_and(|root| std::ptr::eq(root, map));
        let mut own = Map::new();
        let mut parts: Vec<Value> = Vec::new();
        let mut dropped_conditional = false;
        let mut unevaluated: Option<Value> = None;
        for (key, value) in map {
            let keyword = key.as_str();
            match keyword {
                "$ref" => {
                    let part = self.at(keyword, |s| s.inline_local_ref(value, depth))?;
                    dropped_conditional |= part.dropped_conditional;
                    parts.push(part.schema);
                }
                "allOf" => {
                    let branches = self.at(keyword, |s| s.branches(keyword, value, depth))?;
                    for branch in branches {
                        dropped_conditional |= branch.dropped_conditional;
                        parts.push(branch.schema);
                    }
                }
                "anyOf" | "oneOf" => {
                    let keyword = if keyword == "anyOf" { "anyOf" } else { "oneOf" };
                    let part = self.at(keyword, |s| s.union(keyword, value, depth))?;
                    dropped_conditional |= part.dropped_conditional;
                    parts.push(part.schema);
                }
                "if" | "then" | "else" => dropped_conditional = drop_conditionals(),
                "dependentRequired" => drop_dependent_required(),
                "x-mcp-header" => strip_header_annotations(),
                "$schema" => self.at(keyword, |s| s.check_dialect(value))?,
                "$id" if !is_document_root => {
                    return self.at(keyword, |s| s.reject_unsupported_keyword(keyword));
                }
                _ if is_unsupported_keyword(keyword, value) => {
                    return self.at(keyword, |s| s.reject_unsupported_keyword(keyword));
                }
                _ if is_non_portable_keyword(keyword) => drop_non_portable_keywords(),
                "unevaluatedProperties" => {
                    let sub = self.at(keyword, |s| s.schema(value, depth + 1))?;
                    unevaluated = Some(sub.schema);
                }
                "properties" => {
                    let props = self.at(keyword, |s| s.schema_map(keyword, value, depth))?;
                    let props = self.at(keyword, |s| s.object_property_schemas(props))?;
                    own.insert(key.clone(), Value::Object(props));
                }
                "patternProperties" => {
                    let props = self.at(keyword, |s| s.schema_map(keyword, value, depth))?;
                    own.insert(key.clone(), Value::Object(props));
                }
                "items" | "additionalProperties" | "propertyNames" | "contains" => {
                    let sub = self.at(keyword, |s| s.schema(value, depth + 1))?;
                    own.insert(key.clone(), sub.schema);
                }
                "type" | "required" | "enum" if !well_formed(keyword, value) => {
                    return self.at(keyword, |s| {
                        s.fail(NotOfferedReason::Malformed {
                            keyword: keyword.to_owned(),
                        })
                    });
                }
                _ => {
                    own.insert(key.clone(), value.clone());
                }
            }
        }
        let mut schema = Value::Object(own);
        for part in parts {
            schema = merge::merge_all_of(schema, part).or_else(|reason| self.fail(reason))?;
        }
        if let Some(unevaluated) = unevaluated {
            schema = self.unevaluated_to_additional(schema, unevaluated, dropped_conditional)?;
        }
        Ok(Simplified {
            schema,
            dropped_conditional,
        })
    }

    /// Rule `inline_local_ref`: a `$ref` to a local JSON Pointer (`#/$defs/Name`,
    /// `#/definitions/Name`, or any other place in the document) is replaced by its simplified
    /// target, which the caller merges with the `$ref`'s siblings (in 2020-12 `$ref` is an
    /// in-place applicator, like a one-branch `allOf`).
    ///
    /// Why: legacy clients commonly do not resolve `$ref`, and the legacy `Tool.inputSchema`
    /// has nowhere to keep `$defs`. A recursive schema has no finite inlining, so it is not
    /// offered; a reference outside the document is never fetched, so it is not offered either.
    fn inline_local_ref(
        &mut self,
        value: &'a Value,
        depth: usize,
    ) -> Result<Simplified, NotOffered> {
        let Value::String(reference) = value else {
            return self.fail(NotOfferedReason::Malformed {
                keyword: "$ref".to_owned(),
            });
        };
        let Some((target, target_path)) = pointer::resolve_local(self.root, reference) else {
            return self.fail(NotOfferedReason::UnresolvedRef {
                reference: reference.clone(),
            });
        };
        if self.expanding.contains(&target_path) {
            return self.fail(NotOfferedReason::RecursiveRef {
                reference: reference.clone(),
            });
        }
        self.expanding.push(target_path.clone());
        let site = std::mem::replace(&mut self.path, target_path);
        let out = self.schema(target, depth + 1);
        self.path = site;
        self.expanding.pop();
        out
    }

    /// The simplified branches of `allOf`/`anyOf`/`oneOf` (a non-empty array).
    fn branches(
        &mut self,
        keyword: &str,
        value: &'a Value,
        depth: usize,
    ) -> Result<Vec<Simplified>, NotOffered> {
        let Value::Array(items) = value else {
            return self.fail(NotOfferedReason::Malformed {
                keyword: keyword.to_owned(),
            });
        };
        if items.is_empty() {
            return self.fail(NotOfferedReason::Malformed {
                keyword: keyword.to_owned(),
            });
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.push(self.at(&i.to_string(), |s| s.schema(item, depth + 1))?);
        }
        Ok(out)
    }

    /// `anyOf`/`oneOf`: see [`union::collapse`] for the rules.
    fn union(
        &mut self,
        keyword: &'static str,
        value: &'a Value,
        depth: usize,
    ) -> Result<Simplified, NotOffered> {
        let branches = self.branches(keyword, value, depth)?;
        let dropped_conditional = branches.iter().any(|b| b.dropped_conditional);
        let count = branches.len();
        let schemas = branches.into_iter().map(|b| b.schema).collect();
        match union::collapse(keyword, schemas) {
            Some(schema) => Ok(Simplified {
                schema,
                dropped_conditional,
            }),
            None => self.fail(NotOfferedReason::Union {
                keyword,
                branches: count,
            }),
        }
    }

    /// The simplified values of a name-to-subschema map (`properties`, `patternProperties`).
    fn schema_map(
        &mut self,
        keyword: &str,
        value: &'a Value,
        depth: usize,
    ) -> Result<Map<String, Value>, NotOffered> {
        let Value::Object(entries) = value else {
            return self.fail(NotOfferedReason::Malformed {
                keyword: keyword.to_owned(),
            });
        };
        let mut out = Map::new();
        for (name, sub) in entries {
            let sub = self.at(name, |s| s.schema(sub, depth + 1))?;
            out.insert(name.clone(), sub.schema);
        }
        Ok(out)
    }

    /// Rule `object_property_schemas`: a boolean `properties` entry becomes an object.
    ///
    /// Why: the legacy `Tool.inputSchema` types each `properties` value as an object, so a
    /// client may reject `true`. `true` is `{}`. `false` ("this property must be absent") has
    /// no object form without `not`, so it is not offered.
    fn object_property_schemas(
        &self,
        props: Map<String, Value>,
    ) -> Result<Map<String, Value>, NotOffered> {
        merge::object_property_schemas(props).or_else(|reason| self.fail(reason))
    }

    /// Rule `check_dialect`: a `$schema` must name 2020-12; rule `drop_non_portable_keywords`
    /// then removes it.
    ///
    /// Why: every other rule reads keywords with their 2020-12 meaning (`$ref` with siblings,
    /// `items`, `dependencies`…). A schema declared in another dialect would be projected
    /// wrongly, so it is not offered rather than guessed at.
    fn check_dialect(&self, value: &Value) -> Result<(), NotOffered> {
        match unsupported_dialect(value) {
            None => Ok(()),
            Some(reason) => self.fail(reason),
        }
    }

    /// Rule `reject_unsupported_keyword`: the tool is not offered.
    ///
    /// Why: each of these keywords either has no draft-07 equivalent that a legacy client
    /// would enforce the same way (`prefixItems`, `unevaluatedItems`, `minContains`,
    /// `maxContains`, `dependentSchemas`, `$dynamicRef`, `$recursiveRef`, a nested `$id` that
    /// moves the base of `$ref`s, draft-07 tuple `items` which 2020-12 forbids), or needs a
    /// client to reason about negation (`not`). Dropping them would not be sound in every case
    /// (for example `minContains: 0` relaxes `contains`, which a draft-07 client would still
    /// enforce), and rewriting them is out of reach, so the tool is absent from the revision.
    fn reject_unsupported_keyword<T>(&self, keyword: &str) -> Result<T, NotOffered> {
        self.fail(NotOfferedReason::UnsupportedKeyword {
            keyword: keyword.to_owned(),
        })
    }

    /// Rule `unevaluated_to_additional`: `unevaluatedProperties` becomes `additionalProperties`.
    ///
    /// Why: draft-07 clients ignore `unevaluatedProperties`. Once every in-place applicator is
    /// merged into one flat schema, "not evaluated" means exactly "not matched by `properties`
    /// or `patternProperties`", which is what `additionalProperties` says; if the merged schema
    /// already has `additionalProperties`, every property is evaluated and the keyword has no
    /// effect. The one exception is a dropped `if`/`then`/`else` on the same instance: the
    /// properties a `then` evaluated would become "additional", which is narrowing, so that
    /// combination is not offered.
    fn unevaluated_to_additional(
        &self,
        schema: Value,
        unevaluated: Value,
        dropped_conditional: bool,
    ) -> Result<Value, NotOffered> {
        if unevaluated == Value::Bool(true) {
            return Ok(schema);
        }
        if dropped_conditional {
            return self.at_keyword("unevaluatedProperties");
        }
        match schema {
            Value::Bool(false) => Ok(schema),
            Value::Bool(true) => {
                let mut map = Map::new();
                map.insert("additionalProperties".to_owned(), unevaluated);
                Ok(Value::Object(map))
            }
            Value::Object(mut map) => {
                if !map.contains_key("additionalProperties") {
                    map.insert("additionalProperties".to_owned(), unevaluated);
                }
                Ok(Value::Object(map))
            }
            _ => Ok(schema),
        }
    }

    fn at_keyword<T>(&self, keyword: &str) -> Result<T, NotOffered> {
        let mut path = self.path.clone();
        pointer::push_token(&mut path, keyword);
        Err(NotOffered {
            reason: NotOfferedReason::UnsupportedKeyword {
                keyword: keyword.to_owned(),
            },
            path,
        })
    }
}

/// Rule `drop_conditionals`: `if`/`then`/`else` are removed. Returns `true` ("a conditional was
/// dropped here").
///
/// Why: a legacy client that does not evaluate conditionals would otherwise see constraints it
/// cannot apply, and most tools that use them only refine otherwise-valid shapes. Removing them
/// only widens the schema (an argument the conditional rejects is still rejected by the server,
/// which validates against the declared schema), so the tool stays offered.
fn drop_conditionals() -> bool {
    true
}

/// Rule `drop_dependent_required`: `dependentRequired` is removed.
///
/// Why: draft-07 has no `dependentRequired` (its `dependencies` would mean the same, but
/// 2020-12 clients of 2025-11-25 ignore `dependencies`), so no single keyword says it to every
/// legacy client. Removing it only widens the schema; the server's validation against the
/// declared schema still enforces it.
fn drop_dependent_required() {}

/// A schema shown in its own dialect ([`InputSupport::Dialect`]): as declared, with
/// `strip_header_annotations` applied, and a `$schema` other than 2020-12 not offered (the
/// revision reads schemas as 2020-12). Nesting deeper than the limits is not offered.
fn as_declared(schema: &Value, limits: &ProjectionLimits) -> Result<Value, NotOffered> {
    if let Some(reason) = schema.get("$schema").and_then(unsupported_dialect) {
        return Err(NotOffered {
            reason,
            path: "/$schema".into(),
        });
    }
    let mut shown = schema.clone();
    let mut nodes = 0;
    strip_headers(&mut shown, 0, limits, &mut nodes)?;
    Ok(shown)
}

/// Why a `$schema` value cannot be read as JSON Schema 2020-12, if it cannot (rule
/// `check_dialect`).
fn unsupported_dialect(value: &Value) -> Option<NotOfferedReason> {
    match value.as_str().map(Dialect::from_uri) {
        Some(Some(Dialect::Draft202012)) => None,
        _ => Some(NotOfferedReason::UnsupportedDialect {
            uri: value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned),
        }),
    }
}

/// `strip_header_annotations` over every subschema, within `limits`.
fn strip_headers(
    schema: &mut Value,
    depth: usize,
    limits: &ProjectionLimits,
    nodes: &mut usize,
) -> Result<(), NotOffered> {
    *nodes += 1;
    let reason = if depth > limits.max_depth {
        Some(NotOfferedReason::TooDeep {
            limit: limits.max_depth,
        })
    } else if *nodes > limits.max_nodes {
        Some(NotOfferedReason::TooLarge {
            limit: limits.max_nodes,
        })
    } else {
        None
    };
    if let Some(reason) = reason {
        return Err(NotOffered {
            reason,
            path: String::new(),
        });
    }
    if let Value::Object(map) = schema {
        map.remove("x-mcp-header");
    }
    let mut result = Ok(());
    crate::keywords::for_each_subschema_mut(schema, |sub| {
        if result.is_ok() {
            result = strip_headers(sub, depth + 1, limits, nodes);
        }
    });
    result
}

/// Rule `strip_header_annotations`: `x-mcp-header` is removed everywhere.
///
/// Why: legacy clients do not mirror annotated arguments into `Mcp-Param-*` headers, and a
/// server that saw the annotation and then required the header would deadlock with them. The
/// adapter of a legacy revision never expects those headers.
fn strip_header_annotations() {}

/// Rule `drop_non_portable_keywords`: keywords that only organise or identify a schema, or
/// that draft-07 would enforce although the declared 2020-12 schema gives them no effect.
///
/// Why: after inlining, `$defs`/`definitions` are dead weight; `$schema` would name 2020-12 to
/// a draft-07 client; anchors and `$comment`, `contentSchema` are annotations; the root `$id`
/// only names the document. `dependencies` and `additionalItems` are not 2020-12 keywords (a
/// 2020-12 validator ignores them), but a draft-07 client would enforce them, which would be
/// narrowing.
fn drop_non_portable_keywords() {}

fn is_non_portable_keyword(keyword: &str) -> bool {
    matches!(
        keyword,
        "$id"
            | "$defs"
            | "definitions"
            | "$anchor"
            | "$dynamicAnchor"
            | "$recursiveAnchor"
            | "$comment"
            | "$vocabulary"
            | "contentSchema"
            | "dependencies"
            | "additionalItems"
    )
}

fn is_unsupported_keyword(keyword: &str, value: &Value) -> bool {
    match keyword {
        "not" | "dependentSchemas" | "prefixItems" | "unevaluatedItems" | "minContains"
        | "maxContains" | "$dynamicRef" | "$recursiveRef" => true,
        "items" => value.is_array(),
        _ => false,
    }
}

/// Whether `type`, `required` or `enum` has the JSON shape its keyword needs.
fn well_formed(keyword: &str, value: &Value) -> bool {
    match (keyword, value) {
        ("type", Value::String(_)) | ("enum", Value::Array(_)) => true,
        ("type", Value::Array(items)) => items.iter().all(Value::is_string),
        ("required", Value::Array(items)) => items.iter().all(Value::is_string),
        _ => false,
    }
}
