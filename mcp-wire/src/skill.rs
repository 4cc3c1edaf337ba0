//! Agent Skills served as MCP resources (SEP-2640, `io.modelcontextprotocol/skills`): the
//! names, the digest format and the `SKILL.md` frontmatter rules that servers and clients
//! share.
//!
//! A skill is a folder of files; its manifest `SKILL.md` starts with a YAML frontmatter block
//! holding at least `name` and `description`. Every file is a resource
//! `skill://<skill-path>/<file>`, the last segment of `<skill-path>` being the skill's name.
//! A skill entry (`skills/list`, `skills/get`) carries the manifest's URI, the frontmatter as
//! a JSON object and, for every file, its URI, its size in bytes and its digest
//! (`sha256:` and 64 lowercase hexadecimal digits of the file's raw bytes).
//!
//! ```
//! use mcp_wire::skill;
//!
//! let manifest = "---\nname: pdf-processing\ndescription: Fill PDF forms\n---\n\nBody.\n";
//! let frontmatter = skill::parse_frontmatter(manifest).unwrap();
//! assert_eq!(frontmatter["name"], "pdf-processing");
//! assert!(skill::digest(manifest.as_bytes()).starts_with("sha256:"));
//! assert_eq!(
//!     skill::name_of_manifest("skill://acme/pdf-processing/SKILL.md"),
//!     Some("pdf-processing")
//! );
//! ```

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// The method listing the skills a server serves.
pub const LIST_METHOD: &str = "skills/list";
/// The method returning the entry of one skill, named by its manifest's URI.
pub const GET_METHOD: &str = "skills/get";
/// The URI scheme of skill files.
pub const SCHEME: &str = "skill://";
/// The manifest's file name.
pub const MANIFEST: &str = "SKILL.md";
/// The largest frontmatter block [`parse_frontmatter`] reads, in bytes (64 KiB); a longer one
/// is refused before any YAML is parsed.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// The SEP's advice: at most this many files per skill, `SKILL.md` included.
pub const RECOMMENDED_MAX_FILES: usize = 512;
/// The SEP's advice: at most this many bytes per skill, over all its files (16 MiB).
pub const RECOMMENDED_MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;

/// Why a `SKILL.md` frontmatter could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontmatterError {
    /// The text does not start with a `---` line closed by another `---` line.
    #[error("SKILL.md does not start with a --- delimited YAML frontmatter block")]
    Missing,
    /// The block is longer than [`MAX_FRONTMATTER_BYTES`].
    #[error("the frontmatter block is longer than {MAX_FRONTMATTER_BYTES} bytes")]
    TooLarge,
    /// The block is not valid YAML (or exceeds the YAML parser's budgets).
    #[error("the frontmatter is not valid YAML: {0}")]
    Yaml(String),
    /// The block is YAML but not a mapping.
    #[error("the frontmatter is not a YAML mapping")]
    NotAMapping,
    /// A required member (`name`, `description`) is missing, empty or not a string.
    #[error("the frontmatter has no non-empty string `{0}`")]
    MissingField(&'static str),
}

/// The digest of `bytes` as the SEP formats it: `sha256:` and 64 lowercase hex digits.
///
/// ```
/// assert_eq!(
///     mcp_wire::skill::digest(b""),
///     "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
/// );
/// ```
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in hash {
        out.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(byte & 0xf)]));
    }
    out
}

/// Whether `digest` has the SEP's format (`sha256:` and 64 lowercase hex digits).
///
/// ```
/// use mcp_wire::skill;
/// assert!(skill::is_digest(&skill::digest(b"x")));
/// assert!(!skill::is_digest("sha256:ABC"));
/// ```
pub fn is_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 characters of lowercase
/// ASCII letters, digits and hyphens, with no leading, trailing or doubled hyphen.
///
/// ```
/// use mcp_wire::skill::valid_name;
/// assert!(valid_name("pdf-processing"));
/// assert!(!valid_name("PDF"));
/// assert!(!valid_name("a--b"));
/// ```
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The skill name a manifest URI names (the segment before `/SKILL.md`), if `uri` is a
/// `skill://` manifest URI.
///
/// ```
/// use mcp_wire::skill::name_of_manifest;
/// assert_eq!(name_of_manifest("skill://pdf/SKILL.md"), Some("pdf"));
/// assert_eq!(name_of_manifest("skill://pdf/notes.md"), None);
/// ```
pub fn name_of_manifest(uri: &str) -> Option<&str> {
    let rest = uri.strip_prefix(SCHEME)?;
    let dir = rest.strip_suffix(MANIFEST)?.strip_suffix('/')?;
    let name = dir.rsplit('/').next()?;
    (!name.is_empty()).then_some(name)
}

/// The frontmatter block of `text`: what lies between a first line `---` and the next line
/// `---` (trailing spaces or tabs allowed, `\r\n` accepted, a leading byte order mark
/// skipped), without the final line break. `None` when there is none.
///
/// ```
/// use mcp_wire::skill::frontmatter_block;
/// assert_eq!(frontmatter_block("---\nname: a\n---\nbody"), Some("name: a"));
/// assert_eq!(frontmatter_block("no frontmatter"), None);
/// ```
pub fn frontmatter_block(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n').trim_end_matches('\r');
        if offset > 0 && bare.trim_end_matches([' ', '\t']) == "---" {
            // The block ends before the line break that precedes this line.
            let block = &rest[..offset];
            let block = block.strip_suffix('\n').unwrap_or(block);
            return Some(block.strip_suffix('\r').unwrap_or(block));
        }
        offset += line.len();
    }
    None
}

/// Parses the YAML frontmatter of a `SKILL.md` into a JSON object and checks that `name` and
/// `description` are non-empty strings. The block is at most [`MAX_FRONTMATTER_BYTES`] and
/// parsed within the YAML parser's default budgets (anchors, aliases, depth), so a hostile
/// manifest costs bounded time and memory.
///
/// ```
/// use mcp_wire::skill::{FrontmatterError, parse_frontmatter};
///
/// let text = "---\nname: a\ndescription: |\n  two\n  lines\nmetadata:\n  version: 2\n---\n";
/// let frontmatter = parse_frontmatter(text).unwrap();
/// assert_eq!(frontmatter["description"], "two\nlines\n");
/// assert_eq!(frontmatter["metadata"]["version"], 2);
/// assert_eq!(
///     parse_frontmatter("---\nname: a\n---\n"),
///     Err(FrontmatterError::MissingField("description"))
/// );
/// ```
pub fn parse_frontmatter(text: &str) -> Result<Map<String, Value>, FrontmatterError> {
    let block = frontmatter_block(text).ok_or(FrontmatterError::Missing)?;
    if block.len() > MAX_FRONTMATTER_BYTES {
        return Err(FrontmatterError::TooLarge);
    }
    let value: Value =
        serde_saphyr::from_str(block).map_err(|e| FrontmatterError::Yaml(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(FrontmatterError::NotAMapping);
    };
    for field in ["name", "description"] {
        match map.get(field) {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => return Err(FrontmatterError::MissingField(field)),
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn digest_is_lowercase_hex_of_the_bytes() {
        let d = digest(b"abc");
        assert_eq!(
            d,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_digest(&d));
    }

    #[test]
    fn blocks_with_crlf_bom_and_trailing_spaces() {
        assert_eq!(
            frontmatter_block("\u{feff}---\r\na: 1\r\n--- \r\nx"),
            Some("a: 1")
        );
        assert_eq!(frontmatter_block("---\na: 1\n---"), Some("a: 1"));
        assert_eq!(frontmatter_block("---\na: 1\n"), None);
        assert_eq!(frontmatter_block("---\n---\n"), None);
    }

    #[test]
    fn hostile_frontmatter_is_an_error_not_a_panic() {
        let big = format!(
            "---\nname: a\nx: {}\n---\n",
            "y".repeat(MAX_FRONTMATTER_BYTES)
        );
        assert_eq!(parse_frontmatter(&big), Err(FrontmatterError::TooLarge));
        let laughs = "---\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n\
                      c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n\
                      e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n\
                      g: [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n---\n";
        assert!(parse_frontmatter(laughs).is_err());
        assert_eq!(
            parse_frontmatter("---\n- a\n---\n"),
            Err(FrontmatterError::NotAMapping)
        );
        assert!(matches!(
            parse_frontmatter("---\na: [\n---\n"),
            Err(FrontmatterError::Yaml(_))
        ));
    }

    proptest! {
        #[test]
        fn any_text_is_handled_without_panicking(text in ".{0,400}") {
            let _ = frontmatter_block(&text);
            let _ = parse_frontmatter(&text);
        }

        #[test]
        fn a_block_is_found_as_written(
            lines in proptest::collection::vec("[a-z0-9 :#\"'-]{0,30}", 1..8),
            body in ".{0,50}",
        ) {
            prop_assume!(lines.iter().all(|l| l.trim_end() != "---"));
            let block = lines.join("\n");
            let text = format!("---\n{block}\n---\n{body}");
            prop_assert_eq!(frontmatter_block(&text), Some(block.as_str()));
        }

        #[test]
        fn names_and_strings_round_trip(name in "[a-z0-9]{1,10}(-[a-z0-9]{1,10}){0,3}",
                                        description in "[A-Za-z0-9 ,.]{1,60}") {
            prop_assume!(!description.trim().is_empty());
            let text = format!("---\nname: '{name}'\ndescription: \"{description}\"\n---\n");
            let map = parse_frontmatter(&text);
            prop_assert!(map.is_ok(), "{map:?}");
            let map = map.unwrap_or_default();
            prop_assert!(valid_name(&name));
            prop_assert_eq!(map["name"].as_str(), Some(name.as_str()));
            prop_assert_eq!(map["description"].as_str(), Some(description.as_str()));
        }
    }
}
