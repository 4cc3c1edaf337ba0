//! What a protocol revision can hold of a tool's schemas.
//!
//! Projection is keyed on a [`SchemaProfile`], not on a version string: the adapter for a
//! revision owns its profile and passes it in, and revisions that can hold the same things share
//! one profile (and so one cached projection).

/// A JSON Schema dialect this crate validates with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// JSON Schema draft-07 (`http://json-schema.org/draft-07/schema#`), the dialect of the
    /// 2024-11-05, 2025-03-26 and 2025-06-18 `schema.json` files.
    Draft7,
    /// JSON Schema 2020-12 (`https://json-schema.org/draft/2020-12/schema`), the default dialect
    /// of tool schemas from 2025-11-25 on.
    Draft202012,
}

impl Dialect {
    /// The canonical meta-schema URI of this dialect, as written in `$schema`.
    pub const fn uri(self) -> &'static str {
        match self {
            Self::Draft7 => "http://json-schema.org/draft-07/schema#",
            Self::Draft202012 => "https://json-schema.org/draft/2020-12/schema",
        }
    }

    /// The dialect a `$schema` value names, or `None` for any other dialect.
    ///
    /// The scheme (`http` or `https`) and a trailing empty fragment (`#`) are not significant.
    pub fn from_uri(uri: &str) -> Option<Self> {
        let rest = uri
            .strip_prefix("https://")
            .or_else(|| uri.strip_prefix("http://"))?;
        let rest = rest.strip_suffix('#').unwrap_or(rest);
        match rest {
            "json-schema.org/draft-07/schema" => Some(Self::Draft7),
            "json-schema.org/draft/2020-12/schema" => Some(Self::Draft202012),
            _ => None,
        }
    }
}

/// How much of a declared `inputSchema` a revision can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputSupport {
    /// Any JSON Schema 2020-12 keyword, `$ref`/`$defs` and `x-mcp-header` annotations
    /// (2026-07-28). Only the object-root rule applies.
    Full,
    /// The legacy subset: no `$ref`, no unions, no annotations the revision does not define
    /// (2024-11-05 to 2025-11-25). The schema is simplified by the rules in
    /// [`projection`](crate::projection), or the tool is not offered.
    Legacy,
    /// Every keyword of the profile's [`Dialect`] as declared (`$schema`, `$defs` and `$ref`,
    /// `additionalProperties`, composition and conditionals), without the `x-mcp-header`
    /// annotations the revision does not define. What [`SchemaProfile::native`] gives
    /// 2025-11-25, whose default dialect is 2020-12 (SEP-1613), for servers whose clients
    /// read full 2020-12 schemas.
    Dialect,
}

/// How much of a declared `outputSchema` a revision can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputSupport {
    /// The revision has no `outputSchema` and no `structuredContent` (2024-11-05, 2025-03-26).
    None,
    /// An `outputSchema` whose root is `type: "object"`, and object-valued `structuredContent`
    /// only (2025-06-18, 2025-11-25).
    ObjectRoot,
    /// Any schema, and `structuredContent` of any JSON type (2026-07-28).
    Any,
}

/// What one protocol revision can hold of a tool's schemas.
///
/// Build one with [`SchemaProfile::new`] or use a ready-made constant such as
/// [`SchemaProfile::V2025_06_18`]. Profiles are small `Copy` values, compared and hashed by
/// content: two revisions with equal profiles share cached projections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SchemaProfile {
    /// What the revision's `inputSchema` can hold.
    pub input: InputSupport,
    /// What the revision's `outputSchema` can hold.
    pub output: OutputSupport,
    /// The dialect a client of this revision reads a schema without `$schema` in.
    pub dialect: Dialect,
}

impl SchemaProfile {
    /// 2024-11-05: legacy input, no structured output, draft-07.
    pub const V2024_11_05: Self =
        Self::new(InputSupport::Legacy, OutputSupport::None, Dialect::Draft7);
    /// 2025-03-26: legacy input, no structured output, draft-07.
    pub const V2025_03_26: Self =
        Self::new(InputSupport::Legacy, OutputSupport::None, Dialect::Draft7);
    /// 2025-06-18: legacy input, object-root output, draft-07.
    pub const V2025_06_18: Self = Self::new(
        InputSupport::Legacy,
        OutputSupport::ObjectRoot,
        Dialect::Draft7,
    );
    /// 2025-11-25: legacy input, object-root output, 2020-12 by default.
    pub const V2025_11_25: Self = Self::new(
        InputSupport::Legacy,
        OutputSupport::ObjectRoot,
        Dialect::Draft202012,
    );
    /// 2026-07-28: full input (with `x-mcp-header`), any output, 2020-12.
    pub const V2026_07_28: Self =
        Self::new(InputSupport::Full, OutputSupport::Any, Dialect::Draft202012);

    /// A profile from its three parts.
    pub const fn new(input: InputSupport, output: OutputSupport, dialect: Dialect) -> Self {
        Self {
            input,
            output,
            dialect,
        }
    }

    /// This profile with schemas shown in its own dialect as declared: a [`InputSupport::Legacy`]
    /// profile whose dialect is 2020-12 (2025-11-25) becomes [`InputSupport::Dialect`]; any
    /// other profile is returned unchanged (draft-07 revisions cannot read 2020-12 schemas,
    /// and 2026-07-28 already shows them in full).
    ///
    /// ```
    /// use mcp_schema::{InputSupport, SchemaProfile};
    ///
    /// assert_eq!(SchemaProfile::V2025_11_25.native().input, InputSupport::Dialect);
    /// assert_eq!(SchemaProfile::V2025_06_18.native(), SchemaProfile::V2025_06_18);
    /// assert_eq!(SchemaProfile::V2026_07_28.native(), SchemaProfile::V2026_07_28);
    /// ```
    pub const fn native(self) -> Self {
        match (self.input, self.dialect) {
            (InputSupport::Legacy, Dialect::Draft202012) => Self {
                input: InputSupport::Dialect,
                ..self
            },
            _ => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_uris_round_trip_and_tolerate_scheme_and_fragment() {
        for dialect in [Dialect::Draft7, Dialect::Draft202012] {
            assert_eq!(Dialect::from_uri(dialect.uri()), Some(dialect));
        }
        assert_eq!(
            Dialect::from_uri("https://json-schema.org/draft-07/schema"),
            Some(Dialect::Draft7)
        );
        assert_eq!(
            Dialect::from_uri("https://json-schema.org/draft/2020-12/schema#"),
            Some(Dialect::Draft202012)
        );
        assert_eq!(
            Dialect::from_uri("https://json-schema.org/draft/2019-09/schema"),
            None
        );
        assert_eq!(Dialect::from_uri("json-schema.org/draft-07/schema"), None);
    }

    #[test]
    fn revisions_that_hold_the_same_share_a_profile() {
        // Revisions that can hold the same things share one profile, hence one cache entry.
        assert_eq!(SchemaProfile::V2024_11_05, SchemaProfile::V2025_03_26);
        assert_ne!(SchemaProfile::V2025_06_18, SchemaProfile::V2025_11_25);
    }
}
