//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) on the client side:
//! listing skills, getting one, and reading a skill's files verified against its entry.
//!
//! Nothing is fetched ahead of need: [`Client::list_skills`] and [`Client::get_skill`] return
//! entries only, and a file is read when [`Client::read_skill_file`] is called for it. Every
//! file read is checked against the entry: its size, then its `sha256:` digest, and for the
//! manifest (`SKILL.md`) its YAML frontmatter against the entry's, field by field. A mismatch
//! is a [`SkillError`] and the content is not returned.

use base64::Engine as _;
use mcp_wire::skill as wire;
use serde_json::{Map, Value, json};

use crate::{Client, Error};

/// The Skills extension's identifier, to declare with
/// [`ClientBuilder::extension`](crate::ClientBuilder::extension).
pub const SKILLS_EXTENSION: &str = wire::EXTENSION;

/// Why a skills call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The request failed (transport, protocol, or the server's error such as `-32602` for an
    /// unknown skill).
    #[error(transparent)]
    Request(#[from] Error),
    /// The server's answer does not have the extension's shape.
    #[error("malformed skills answer: {0}")]
    Malformed(String),
    /// The file is not one of the entry's files.
    #[error("{uri} is not a file of skill {skill}")]
    NotInSkill {
        /// The skill's manifest URI.
        skill: String,
        /// The file asked for.
        uri: String,
    },
    /// The file read has another size than the entry says.
    #[error("{uri}: read {actual} bytes, the skill entry says {expected}")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The entry's size.
        expected: u64,
        /// The size read.
        actual: u64,
    },
    /// The file read has another digest than the entry says.
    #[error("{uri}: content digest {actual} differs from the skill entry's {expected}")]
    DigestMismatch {
        /// The file.
        uri: String,
        /// The entry's digest.
        expected: String,
        /// The digest of what was read.
        actual: String,
    },
    /// The manifest read has no valid frontmatter.
    #[error("{uri}: {source}")]
    Frontmatter {
        /// The manifest.
        uri: String,
        /// What is wrong.
        source: wire::FrontmatterError,
    },
    /// The manifest's frontmatter differs from the entry's.
    #[error("{uri}: frontmatter field {field:?} differs from the skill entry's")]
    FrontmatterMismatch {
        /// The manifest.
        uri: String,
        /// The first field that differs.
        field: String,
    },
}

/// The files of a skill entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkillResources {
    /// Every file, with its size and digest.
    Files(Vec<SkillFileRef>),
    /// `"dynamic"`: the server publishes no manifest of files (they cannot be verified).
    Dynamic,
}

/// A file of a skill, as its entry lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFileRef {
    /// The file's URI (`skill://<skill-path>/<file>`).
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits of its bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// A skill entry from `skills/list` or `skills/get`.
///
/// ```
/// use mcp_client::{SkillEntry, SkillResources};
/// use serde_json::json;
///
/// let entry = SkillEntry {
///     uri: "skill://notes/SKILL.md".into(),
///     frontmatter: json!({"name": "notes", "description": "Takes notes"})
///         .as_object()
///         .cloned()
///         .unwrap_or_default(),
///     resources: SkillResources::Dynamic,
/// };
/// assert_eq!(entry.name(), "notes");
/// assert_eq!(entry.description(), "Takes notes");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SkillEntry {
    /// The manifest's URI (`skill://<skill-path>/SKILL.md`).
    pub uri: String,
    /// The manifest's frontmatter, as the server states it.
    pub frontmatter: Map<String, Value>,
    /// Its files.
    pub resources: SkillResources,
}

impl SkillEntry {
    /// The skill's name (`frontmatter.name`).
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The skill's description (`frontmatter.description`).
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    fn from_value(value: &Value) -> Result<Self, SkillError> {
        let malformed = |what: &str| SkillError::Malformed(what.to_owned());
        let uri = value["uri"]
            .as_str()
            .ok_or_else(|| malformed("an entry without a uri"))?
            .to_owned();
        let frontmatter = value["frontmatter"]
            .as_object()
            .ok_or_else(|| malformed("an entry without a frontmatter object"))?
            .clone();
        let resources = match &value["resources"] {
            Value::String(s) if s == "dynamic" => SkillResources::Dynamic,
            Value::Array(files) => SkillResources::Files(
                files
                    .iter()
                    .map(|f| {
                        Ok(SkillFileRef {
                            uri: f["uri"]
                                .as_str()
                                .ok_or_else(|| malformed("a resource without a uri"))?
                                .to_owned(),
                            digest: f["digest"]
                                .as_str()
                                .filter(|d| wire::is_digest(d))
                                .ok_or_else(|| malformed("a resource without a sha256 digest"))?
                                .to_owned(),
                            size: f["size"]
                                .as_u64()
                                .ok_or_else(|| malformed("a resource without a size"))?,
                        })
                    })
                    .collect::<Result<_, SkillError>>()?,
            ),
            _ => return Err(malformed("an entry without resources")),
        };
        Ok(Self {
            uri,
            frontmatter,
            resources,
        })
    }
}

/// One page of `skills/list`.
#[derive(Clone, Debug, PartialEq)]
pub struct SkillsPage {
    /// The entries.
    pub skills: Vec<SkillEntry>,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

/// A skill file read and verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFile {
    /// The file's URI.
    pub uri: String,
    /// The MIME type the server gave, if any.
    pub mime_type: Option<String>,
    /// The file's bytes (verified against the entry).
    pub bytes: Vec<u8>,
}

impl SkillFile {
    /// The content as text, if it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

impl Client {
    /// One page of `skills/list` (`cursor` from the previous page's
    /// [`next_cursor`](SkillsPage::next_cursor)). Only entries: no file is read.
    ///
    /// ```no_run
    /// # async fn run(client: mcp_client::Client) -> Result<(), mcp_client::SkillError> {
    /// let mut cursor = None;
    /// loop {
    ///     let page = client.list_skills(cursor.as_deref()).await?;
    ///     for skill in &page.skills {
    ///         println!("{}: {}", skill.name(), skill.description());
    ///     }
    ///     match page.next_cursor {
    ///         Some(next) => cursor = Some(next),
    ///         None => break,
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_skills(&self, cursor: Option<&str>) -> Result<SkillsPage, SkillError> {
        let params = match cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let result = self.request(wire::LIST_METHOD, Some(params)).await?;
        let skills = result["skills"]
            .as_array()
            .ok_or_else(|| SkillError::Malformed("skills/list without skills".into()))?
            .iter()
            .map(SkillEntry::from_value)
            .collect::<Result<_, _>>()?;
        let next_cursor = result["nextCursor"]
            .as_str()
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        Ok(SkillsPage {
            skills,
            next_cursor,
        })
    }

    /// The entry of the skill whose manifest is `uri` (`skills/get`). A skill the server does
    /// not serve is the server's `-32602`, as [`SkillError::Request`].
    ///
    /// ```no_run
    /// # async fn run(client: mcp_client::Client) -> Result<(), mcp_client::SkillError> {
    /// let skill = client.get_skill("skill://pdf-processing/SKILL.md").await?;
    /// println!("{}", skill.description());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, SkillError> {
        let result = self
            .request(wire::GET_METHOD, Some(json!({"uri": uri})))
            .await?;
        SkillEntry::from_value(&result["skill"])
    }

    /// Reads the file `uri` of `skill` with `resources/read` and verifies it against the
    /// entry: its size, its digest and, for the manifest, its frontmatter. Content that fails
    /// any check is not returned. A file of a `"dynamic"` skill is checked for its
    /// frontmatter only (there is nothing else to check against).
    ///
    /// ```no_run
    /// # async fn run(client: mcp_client::Client) -> Result<(), mcp_client::SkillError> {
    /// let skill = client.get_skill("skill://pdf-processing/SKILL.md").await?;
    /// let manifest = client.read_skill_file(&skill, &skill.uri).await?;
    /// println!("{}", manifest.text().unwrap_or_default());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn read_skill_file(
        &self,
        skill: &SkillEntry,
        uri: &str,
    ) -> Result<SkillFile, SkillError> {
        let expected = match &skill.resources {
            SkillResources::Files(files) => Some(files.iter().find(|f| f.uri == uri).ok_or_else(
                || SkillError::NotInSkill {
                    skill: skill.uri.clone(),
                    uri: uri.to_owned(),
                },
            )?),
            SkillResources::Dynamic => {
                let dir = skill.uri.strip_suffix(wire::MANIFEST).unwrap_or_default();
                if dir.is_empty() || !uri.starts_with(dir) {
                    return Err(SkillError::NotInSkill {
                        skill: skill.uri.clone(),
                        uri: uri.to_owned(),
                    });
                }
                None
            }
        };
        let read = self.read_resource(uri).await?;
        let file = file_of(&read, uri)?;
        if let Some(expected) = expected {
            let actual = file.bytes.len() as u64;
            if actual != expected.size {
                return Err(SkillError::SizeMismatch {
                    uri: uri.to_owned(),
                    expected: expected.size,
                    actual,
                });
            }
            let digest = wire::digest(&file.bytes);
            if digest != expected.digest {
                return Err(SkillError::DigestMismatch {
                    uri: uri.to_owned(),
                    expected: expected.digest.clone(),
                    actual: digest,
                });
            }
        }
        if uri == skill.uri {
            verify_frontmatter(skill, &file)?;
        }
        Ok(file)
    }
}

/// The file `uri` in a `resources/read` result: its text as UTF-8 bytes, or its blob decoded.
fn file_of(read: &Value, uri: &str) -> Result<SkillFile, SkillError> {
    let contents = read["contents"]
        .as_array()
        .ok_or_else(|| SkillError::Malformed("resources/read without contents".into()))?;
    let content = contents
        .iter()
        .find(|c| c["uri"].as_str() == Some(uri))
        .or_else(|| contents.first())
        .ok_or_else(|| SkillError::Malformed(format!("resources/read of {uri} is empty")))?;
    let bytes = if let Some(text) = content["text"].as_str() {
        text.as_bytes().to_vec()
    } else if let Some(blob) = content["blob"].as_str() {
        base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|_| SkillError::Malformed(format!("{uri}: a blob that is not base64")))?
    } else {
        return Err(SkillError::Malformed(format!(
            "{uri}: contents with neither text nor blob"
        )));
    };
    Ok(SkillFile {
        uri: uri.to_owned(),
        mime_type: content["mimeType"].as_str().map(str::to_owned),
        bytes,
    })
}

/// The manifest's frontmatter must equal the entry's, field by field.
fn verify_frontmatter(skill: &SkillEntry, file: &SkillFile) -> Result<(), SkillError> {
    let text = std::str::from_utf8(&file.bytes).map_err(|_| SkillError::Frontmatter {
        uri: file.uri.clone(),
        source: wire::FrontmatterError::Missing,
    })?;
    let parsed = wire::parse_frontmatter(text).map_err(|source| SkillError::Frontmatter {
        uri: file.uri.clone(),
        source,
    })?;
    let differing = parsed
        .keys()
        .chain(skill.frontmatter.keys())
        .find(|field| parsed.get(*field) != skill.frontmatter.get(*field));
    match differing {
        Some(field) => Err(SkillError::FrontmatterMismatch {
            uri: file.uri.clone(),
            field: field.clone(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(manifest: &str) -> SkillEntry {
        SkillEntry {
            uri: "skill://s/SKILL.md".into(),
            frontmatter: wire::parse_frontmatter(manifest).unwrap(),
            resources: SkillResources::Files(vec![SkillFileRef {
                uri: "skill://s/SKILL.md".into(),
                digest: wire::digest(manifest.as_bytes()),
                size: manifest.len() as u64,
            }]),
        }
    }

    #[test]
    fn frontmatter_differences_are_found_in_either_direction() {
        let manifest = "---\nname: s\ndescription: d\n---\n";
        let skill = entry(manifest);
        let file = |text: &str| SkillFile {
            uri: skill.uri.clone(),
            mime_type: None,
            bytes: text.as_bytes().to_vec(),
        };
        assert!(verify_frontmatter(&skill, &file(manifest)).is_ok());
        let err = verify_frontmatter(&skill, &file("---\nname: s\ndescription: e\n---\n"));
        assert!(
            matches!(err, Err(SkillError::FrontmatterMismatch { ref field, .. }) if field == "description")
        );
        let err = verify_frontmatter(&skill, &file("---\nname: s\ndescription: d\nx: 1\n---\n"));
        assert!(
            matches!(err, Err(SkillError::FrontmatterMismatch { ref field, .. }) if field == "x")
        );
        let err = verify_frontmatter(&skill, &file("no frontmatter"));
        assert!(matches!(err, Err(SkillError::Frontmatter { .. })));
    }

    #[test]
    fn malformed_entries_are_errors() {
        for bad in [
            json!({}),
            json!({"uri": "skill://s/SKILL.md"}),
            json!({"uri": "skill://s/SKILL.md", "frontmatter": {}, "resources": 3}),
            json!({"uri": "skill://s/SKILL.md", "frontmatter": {},
                   "resources": [{"uri": "x", "digest": "md5:00", "size": 1}]}),
            json!({"uri": "skill://s/SKILL.md", "frontmatter": {},
                   "resources": [{"uri": "x", "digest": wire::digest(b""), "size": -1}]}),
        ] {
            assert!(matches!(
                SkillEntry::from_value(&bad),
                Err(SkillError::Malformed(_))
            ));
        }
        let file = file_of(&json!({"contents": [{"uri": "u", "blob": "AAE="}]}), "u").unwrap();
        assert_eq!(file.bytes, vec![0, 1]);
        assert!(file_of(&json!({"contents": [{"uri": "u", "blob": "!"}]}), "u").is_err());
        assert!(file_of(&json!({"contents": []}), "u").is_err());
    }
}
