//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): Agent Skills served as
//! resources.
//!
//! A skill is a folder of files whose manifest `SKILL.md` starts with YAML frontmatter
//! (`name`, `description`). Each file is the resource `skill://<skill-path>/<file>`, the last
//! segment of `<skill-path>` being the skill's name. A server given a catalog with
//! [`ServerBuilder::skills`](crate::ServerBuilder::skills):
//!
//! - declares `capabilities.extensions["io.modelcontextprotocol/skills"]: {}` (in
//!   `server/discover`, and in `initialize` on the handshake revisions) and the `resources`
//!   capability;
//! - answers `skills/list` (paginated, `ttlMs`/`cacheScope` from [`SkillsBuilder::cache`]) and
//!   `skills/get {uri}` (an unknown URI is `-32602`) with entries carrying the manifest's URI,
//!   its frontmatter as a JSON object, and every file's `uri`, `size` and `digest`
//!   (`sha256:{64 lowercase hex}`);
//! - lists every file in `resources/list` and serves it through `resources/read` (the
//!   manifest as `text/markdown`, named and described from its frontmatter), so clients of a
//!   revision without extensions reach the skills as ordinary resources.
//!
//! The catalog is read once, when it is built, and kept in memory: requests never touch the
//! file system, so no URI a client sends can reach a file outside the catalog. Every limit
//! (skills, files per skill, bytes per file and per skill, folder depth) is a builder option
//! with a bounded default.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_wire::skill::{self as wire, FrontmatterError};
use serde_json::{Map, Value, json};

use crate::{
    CacheScope, Extension, ExtensionError, ExtensionRequest, Resource, ResourceContents,
    ResourceRequest,
};

/// The Skills extension's identifier.
pub const SKILLS_EXTENSION: &str = wire::EXTENSION;

/// Default of [`SkillsBuilder::max_files_per_skill`]: 512, the SEP's advice.
pub const DEFAULT_MAX_FILES_PER_SKILL: usize = wire::RECOMMENDED_MAX_FILES;
/// Default of [`SkillsBuilder::max_skill_bytes`]: 16 MiB, the SEP's advice.
pub const DEFAULT_MAX_SKILL_BYTES: u64 = wire::RECOMMENDED_MAX_TOTAL_BYTES;
/// Default of [`SkillsBuilder::max_file_bytes`]: 4 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Default of [`SkillsBuilder::max_skills`]: 256.
pub const DEFAULT_MAX_SKILLS: usize = 256;
/// Default of [`SkillsBuilder::max_depth`]: 8 folder levels inside a skill.
pub const DEFAULT_MAX_DEPTH: usize = 8;
/// Default of [`SkillsBuilder::page_size`]: 50 skills per `skills/list` page.
pub const DEFAULT_SKILLS_PAGE_SIZE: usize = 50;
/// The largest page [`SkillsBuilder::page_size`] accepts.
pub const MAX_SKILLS_PAGE_SIZE: usize = 1000;

/// Why a skills catalog could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillsError {
    /// Reading the catalog's folder failed.
    #[error("reading {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A symbolic link inside the catalog (refused: it could lead outside it).
    #[error("{0} is a symbolic link; skill folders may not contain links")]
    Symlink(PathBuf),
    /// A skill without a `SKILL.md` at its root.
    #[error("skill {0} has no SKILL.md")]
    NoManifest(String),
    /// A `SKILL.md` that is not UTF-8.
    #[error("the SKILL.md of skill {0} is not UTF-8")]
    ManifestNotUtf8(String),
    /// A `SKILL.md` whose frontmatter is missing or invalid.
    #[error("the SKILL.md of skill {skill}: {source}")]
    Frontmatter {
        /// The skill path.
        skill: String,
        /// What is wrong.
        source: FrontmatterError,
    },
    /// A skill path that is not `segment(/segment)*` of URI-safe characters, or whose last
    /// segment breaks the Agent Skills naming rules.
    #[error(
        "invalid skill path {0:?}: segments of A-Z a-z 0-9 . _ ~ -, the last a skill name (1-64 of a-z 0-9 and single inner hyphens)"
    )]
    InvalidSkillPath(String),
    /// The frontmatter `name` differs from the skill path's last segment.
    #[error("skill {skill}: the frontmatter name {name:?} differs from the folder name")]
    NameMismatch {
        /// The skill path.
        skill: String,
        /// The frontmatter's name.
        name: String,
    },
    /// A file path that is empty, absolute, has `.` or `..` segments or characters outside
    /// `A-Z a-z 0-9 . _ ~ - + @`.
    #[error("skill {skill}: invalid file path {path:?}")]
    InvalidFilePath {
        /// The skill path.
        skill: String,
        /// The file path, relative to the skill.
        path: String,
    },
    /// Two skills at the same path, or a file given twice.
    #[error("{0} is declared twice")]
    Duplicate(String),
    /// A limit was exceeded.
    #[error("{what}: more than the limit of {limit}")]
    Limit {
        /// What exceeded it (the skill, the file).
        what: String,
        /// The limit (count or bytes).
        limit: u64,
    },
    /// A builder setting out of range.
    #[error("invalid setting {setting}: {reason}")]
    InvalidSetting {
        /// The setting.
        setting: &'static str,
        /// Why it is refused.
        reason: String,
    },
}

/// A skill given in code: its path and its files.
///
/// ```
/// use mcp_server::{Skill, Skills};
///
/// let skill = Skill::new("pdf-processing")
///     .file(
///         "SKILL.md",
///         "---\nname: pdf-processing\ndescription: Fill PDF forms\n---\n\nUse FORMS.md.\n",
///     )
///     .file("references/FORMS.md", "Form fields.\n");
/// let skills = Skills::builder().skill(skill).build().unwrap();
/// assert_eq!(skills.len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Skill {
    path: String,
    files: Vec<(String, Vec<u8>)>,
}

impl Skill {
    /// A skill at `path` (`pdf-processing`, or `acme/pdf-processing`: the last segment is its
    /// name), with no files yet.
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            files: Vec::new(),
        }
    }

    /// Adds the file `relative` (`SKILL.md`, `references/FORMS.md`) with these bytes.
    #[must_use]
    pub fn file(mut self, relative: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((relative.into(), bytes.into()));
        self
    }
}

/// Builds a [`Skills`] catalog from folders and skills given in code, within limits.
///
/// ```no_run
/// use mcp_server::Skills;
///
/// let skills = Skills::builder()
///     .max_files_per_skill(64)
///     .max_skill_bytes(1024 * 1024)
///     .dir("skills")
///     .build()
///     .unwrap();
/// # let _ = skills;
/// ```
#[derive(Clone, Debug)]
pub struct SkillsBuilder {
    dirs: Vec<PathBuf>,
    skills: Vec<Skill>,
    max_skills: usize,
    max_files: usize,
    max_file_bytes: u64,
    max_skill_bytes: u64,
    max_depth: usize,
    page_size: usize,
    cache: (u64, CacheScope),
    directory_read: bool,
}

impl Default for SkillsBuilder {
    fn default() -> Self {
        Self {
            dirs: Vec::new(),
            skills: Vec::new(),
            max_skills: DEFAULT_MAX_SKILLS,
            max_files: DEFAULT_MAX_FILES_PER_SKILL,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_skill_bytes: DEFAULT_MAX_SKILL_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
            page_size: DEFAULT_SKILLS_PAGE_SIZE,
            cache: (0, CacheScope::Private),
            directory_read: false,
        }
    }
}

impl SkillsBuilder {
    /// Adds every skill of the folder `dir`: each subfolder holding a `SKILL.md` is a skill
    /// named after the subfolder, and every file under it (to [`max_depth`](Self::max_depth)
    /// levels) is one of its files. Other entries of `dir` are ignored; a symbolic link inside
    /// a skill is refused. The folder is read by [`build`](Self::build).
    #[must_use]
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dirs.push(dir.into());
        self
    }

    /// Adds a skill given in code.
    #[must_use]
    pub fn skill(mut self, skill: Skill) -> Self {
        self.skills.push(skill);
        self
    }

    /// The most skills the catalog holds. Default [`DEFAULT_MAX_SKILLS`] (256).
    #[must_use]
    pub fn max_skills(mut self, limit: usize) -> Self {
        self.max_skills = limit;
        self
    }

    /// The most files one skill holds, `SKILL.md` included. Default
    /// [`DEFAULT_MAX_FILES_PER_SKILL`] (512, the SEP's advice).
    #[must_use]
    pub fn max_files_per_skill(mut self, limit: usize) -> Self {
        self.max_files = limit;
        self
    }

    /// The largest file, in bytes. Default [`DEFAULT_MAX_FILE_BYTES`] (4 MiB).
    #[must_use]
    pub fn max_file_bytes(mut self, limit: u64) -> Self {
        self.max_file_bytes = limit;
        self
    }

    /// The most bytes one skill holds over all its files. Default
    /// [`DEFAULT_MAX_SKILL_BYTES`] (16 MiB, the SEP's advice).
    #[must_use]
    pub fn max_skill_bytes(mut self, limit: u64) -> Self {
        self.max_skill_bytes = limit;
        self
    }

    /// How many folder levels a skill's files may be nested. Default [`DEFAULT_MAX_DEPTH`]
    /// (8).
    #[must_use]
    pub fn max_depth(mut self, limit: usize) -> Self {
        self.max_depth = limit;
        self
    }

    /// How many skills one `skills/list` page holds, 1 to [`MAX_SKILLS_PAGE_SIZE`]. Default
    /// [`DEFAULT_SKILLS_PAGE_SIZE`] (50).
    #[must_use]
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size;
        self
    }

    /// The cache hint (`ttlMs`, `cacheScope`) of `skills/list` and `skills/get` results.
    /// Default `0` and `private`.
    #[must_use]
    pub fn cache(mut self, ttl_ms: u64, scope: CacheScope) -> Self {
        self.cache = (ttl_ms, scope);
        self
    }

    /// Serves `resources/directory/read {uri, cursor?}` and declares `directoryRead: true`
    /// in the extension's settings: a skill's folder (`skill://<skill-path>`, or one of its
    /// subfolders) lists its direct children, subfolders with the MIME type
    /// `inode/directory`, paginated like `skills/list`; any other URI is `-32602`. Default
    /// off (the method is optional in the SEP).
    #[must_use]
    pub fn directory_read(mut self, on: bool) -> Self {
        self.directory_read = on;
        self
    }

    /// Reads the folders, checks every skill and builds the catalog.
    pub fn build(self) -> Result<Skills, SkillsError> {
        if self.page_size == 0 || self.page_size > MAX_SKILLS_PAGE_SIZE {
            return Err(SkillsError::InvalidSetting {
                setting: "page_size",
                reason: format!("a page holds 1 to {MAX_SKILLS_PAGE_SIZE} skills"),
            });
        }
        let mut skills = self.skills.clone();
        for dir in &self.dirs {
            self.read_dir(dir, &mut skills)?;
        }
        if skills.len() > self.max_skills {
            return Err(SkillsError::Limit {
                what: "the catalog's skills".into(),
                limit: self.max_skills as u64,
            });
        }
        let mut entries = Vec::with_capacity(skills.len());
        for skill in skills {
            entries.push(self.check(skill)?);
        }
        entries.sort_by(|a, b| a.uri.cmp(&b.uri));
        let mut index = HashMap::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            if index.insert(entry.uri.clone(), i).is_some() {
                return Err(SkillsError::Duplicate(entry.uri.clone()));
            }
        }
        let directories = if self.directory_read {
            directories(&entries)
        } else {
            HashMap::new()
        };
        Ok(Skills {
            inner: Arc::new(Catalog {
                entries,
                index,
                page_size: self.page_size,
                cache: self.cache,
                directory_read: self.directory_read,
                directories,
            }),
        })
    }

    /// Adds the skills of `dir` (its subfolders holding a `SKILL.md`).
    fn read_dir(&self, dir: &Path, skills: &mut Vec<Skill>) -> Result<(), SkillsError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SkillsError::Io { path, source }
        };
        let mut children: Vec<_> = std::fs::read_dir(dir)
            .map_err(io(dir))?
            .collect::<Result<_, _>>()
            .map_err(io(dir))?;
        children.sort_by_key(std::fs::DirEntry::file_name);
        for child in children {
            let path = child.path();
            let kind = child.file_type().map_err(io(&path))?;
            if !kind.is_dir() || !path.join(wire::MANIFEST).is_file() {
                continue;
            }
            if skills.len() >= self.max_skills {
                return Err(SkillsError::Limit {
                    what: "the catalog's skills".into(),
                    limit: self.max_skills as u64,
                });
            }
            let name = child.file_name().to_string_lossy().into_owned();
            let mut skill = Skill::new(name.clone());
            let mut total = 0;
            self.read_files(&name, &path, "", 0, &mut skill, &mut total)?;
            skills.push(skill);
        }
        Ok(())
    }

    /// Adds the files under `dir` (at `prefix` inside the skill) to `skill`.
    fn read_files(
        &self,
        name: &str,
        dir: &Path,
        prefix: &str,
        depth: usize,
        skill: &mut Skill,
        total: &mut u64,
    ) -> Result<(), SkillsError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SkillsError::Io { path, source }
        };
        if depth > self.max_depth {
            return Err(SkillsError::Limit {
                what: format!("skill {name}: folder depth at {prefix}"),
                limit: self.max_depth as u64,
            });
        }
        let mut children: Vec<_> = std::fs::read_dir(dir)
            .map_err(io(dir))?
            .collect::<Result<_, _>>()
            .map_err(io(dir))?;
        children.sort_by_key(std::fs::DirEntry::file_name);
        for child in children {
            let path = child.path();
            let kind = child.file_type().map_err(io(&path))?;
            let file_name = child.file_name().to_string_lossy().into_owned();
            let relative = format!("{prefix}{file_name}");
            if kind.is_symlink() {
                return Err(SkillsError::Symlink(path));
            }
            if kind.is_dir() {
                self.read_files(
                    name,
                    &path,
                    &format!("{relative}/"),
                    depth + 1,
                    skill,
                    total,
                )?;
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            if skill.files.len() >= self.max_files {
                return Err(SkillsError::Limit {
                    what: format!("skill {name}: its files"),
                    limit: self.max_files as u64,
                });
            }
            let mut bytes = Vec::new();
            // Read at most one byte past the limit, whatever the file's size says (it may be
            // growing).
            std::fs::File::open(&path)
                .map_err(io(&path))?
                .take(self.max_file_bytes.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(io(&path))?;
            let size = bytes.len() as u64;
            if size > self.max_file_bytes {
                return Err(SkillsError::Limit {
                    what: format!("skill {name}: file {relative} in bytes"),
                    limit: self.max_file_bytes,
                });
            }
            *total = total.saturating_add(size);
            if *total > self.max_skill_bytes {
                return Err(SkillsError::Limit {
                    what: format!("skill {name}: its bytes"),
                    limit: self.max_skill_bytes,
                });
            }
            skill.files.push((relative, bytes));
        }
        Ok(())
    }

    /// Checks one skill against the rules and limits and computes its entry.
    fn check(&self, skill: Skill) -> Result<SkillEntry, SkillsError> {
        let Skill { path, files } = skill;
        let segments: Vec<&str> = path.split('/').collect();
        let name = segments.last().copied().unwrap_or_default();
        if !segments.iter().all(|s| valid_segment(s, false)) || !wire::valid_name(name) {
            return Err(SkillsError::InvalidSkillPath(path));
        }
        if files.len() > self.max_files {
            return Err(SkillsError::Limit {
                what: format!("skill {path}: its files"),
                limit: self.max_files as u64,
            });
        }
        let mut by_path = BTreeMap::new();
        let mut total: u64 = 0;
        for (relative, bytes) in files {
            let parts: Vec<&str> = relative.split('/').collect();
            if !parts.iter().all(|s| valid_segment(s, true)) {
                return Err(SkillsError::InvalidFilePath {
                    skill: path,
                    path: relative,
                });
            }
            if parts.len() > self.max_depth + 1 {
                return Err(SkillsError::Limit {
                    what: format!("skill {path}: folder depth of {relative}"),
                    limit: self.max_depth as u64,
                });
            }
            let size = bytes.len() as u64;
            if size > self.max_file_bytes {
                return Err(SkillsError::Limit {
                    what: format!("skill {path}: file {relative} in bytes"),
                    limit: self.max_file_bytes,
                });
            }
            total = total.saturating_add(size);
            if total > self.max_skill_bytes {
                return Err(SkillsError::Limit {
                    what: format!("skill {path}: its bytes"),
                    limit: self.max_skill_bytes,
                });
            }
            let uri = format!("{}{path}/{relative}", wire::SCHEME);
            if by_path.insert(relative, bytes).is_some() {
                return Err(SkillsError::Duplicate(uri));
            }
        }
        let Some(manifest) = by_path.get(wire::MANIFEST) else {
            return Err(SkillsError::NoManifest(path));
        };
        let Ok(text) = std::str::from_utf8(manifest) else {
            return Err(SkillsError::ManifestNotUtf8(path));
        };
        let frontmatter =
            wire::parse_frontmatter(text).map_err(|source| SkillsError::Frontmatter {
                skill: path.clone(),
                source,
            })?;
        let declared = frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if declared != name {
            return Err(SkillsError::NameMismatch {
                name: declared.to_owned(),
                skill: path,
            });
        }
        let uri = format!("{}{path}/{}", wire::SCHEME, wire::MANIFEST);
        // The manifest first, then the other files by path.
        let mut ordered: Vec<(String, Vec<u8>)> = Vec::with_capacity(by_path.len());
        if let Some(bytes) = by_path.remove(wire::MANIFEST) {
            ordered.push((wire::MANIFEST.to_owned(), bytes));
        }
        ordered.extend(by_path);
        let files: Vec<SkillFile> = ordered
            .into_iter()
            .map(|(relative, bytes)| SkillFile {
                uri: format!("{}{path}/{relative}", wire::SCHEME),
                mime_type: mime_type(&relative, &bytes),
                digest: wire::digest(&bytes),
                relative,
                bytes: Arc::from(bytes),
            })
            .collect();
        let resources: Vec<Value> = files
            .iter()
            .map(|f| json!({"uri": f.uri, "digest": f.digest, "size": f.bytes.len()}))
            .collect();
        let entry = json!({
            "uri": uri,
            "frontmatter": Value::Object(frontmatter.clone()),
            "resources": resources,
        });
        Ok(SkillEntry {
            uri,
            frontmatter,
            files,
            entry,
        })
    }
}

/// One segment of a skill path or a file path: not `.` or `..`, of URI-safe characters.
fn valid_segment(segment: &str, file: bool) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && segment.len() <= 255
        && segment.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'.' | b'_' | b'~' | b'-')
                || (file && matches!(b, b'+' | b'@'))
        })
}

/// The MIME type of a folder in `resources/directory/read`.
const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// Every folder of every skill (`skill://<skill-path>` and its subfolders) with its direct
/// children as `resources/directory/read` lists them, subfolders first, each sorted by name.
fn directories(entries: &[SkillEntry]) -> HashMap<String, Vec<Value>> {
    type Children = (BTreeMap<String, Value>, BTreeMap<String, Value>);
    let mut folders: HashMap<String, Children> = HashMap::new();
    for entry in entries {
        let Some(root) = entry.uri.strip_suffix(wire::MANIFEST) else {
            continue;
        };
        let root = root.trim_end_matches('/');
        folders.entry(root.to_owned()).or_default();
        for file in &entry.files {
            let mut parent = root.to_owned();
            let mut parts = file.relative.split('/').peekable();
            while let Some(part) = parts.next() {
                let uri = format!("{parent}/{part}");
                let (subfolders, files) = folders.entry(parent.clone()).or_default();
                if parts.peek().is_some() {
                    subfolders.entry(part.to_owned()).or_insert_with(
                        || json!({"uri": uri, "name": part, "mimeType": DIRECTORY_MIME_TYPE}),
                    );
                    folders.entry(uri.clone()).or_default();
                } else {
                    files.insert(
                        part.to_owned(),
                        json!({
                            "uri": uri,
                            "name": part,
                            "mimeType": file.mime_type,
                            "size": file.bytes.len(),
                        }),
                    );
                }
                parent = uri;
            }
        }
    }
    folders
        .into_iter()
        .map(|(uri, (subfolders, files))| {
            (
                uri,
                subfolders
                    .into_values()
                    .chain(files.into_values())
                    .collect(),
            )
        })
        .collect()
}

/// The MIME type a file is served with, from its extension (text when it is UTF-8).
fn mime_type(relative: &str, bytes: &[u8]) -> &'static str {
    let extension = relative
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase());
    let text = std::str::from_utf8(bytes).is_ok();
    match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js") => "text/javascript",
        Some("html" | "htm") => "text/html",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        _ if text => "text/plain",
        _ => "application/octet-stream",
    }
}

/// A file of a skill.
struct SkillFile {
    uri: String,
    relative: String,
    mime_type: &'static str,
    digest: String,
    bytes: Arc<[u8]>,
}

/// A checked skill and its precomputed entry.
struct SkillEntry {
    uri: String,
    frontmatter: Map<String, Value>,
    files: Vec<SkillFile>,
    entry: Value,
}

struct Catalog {
    entries: Vec<SkillEntry>,
    index: HashMap<String, usize>,
    page_size: usize,
    cache: (u64, CacheScope),
    directory_read: bool,
    /// Each folder's children, when `directory_read` is on.
    directories: HashMap<String, Vec<Value>>,
}

/// A catalog of skills, served by [`ServerBuilder::skills`](crate::ServerBuilder::skills).
/// Cheap to clone (shared).
///
/// ```no_run
/// use mcp_server::{Server, Skills};
///
/// let server = Server::builder("docs", "1.0")
///     .skills(Skills::from_dir("skills").unwrap())
///     .build()
///     .unwrap();
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct Skills {
    inner: Arc<Catalog>,
}

impl fmt::Debug for Skills {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Skills")
            .field(
                "skills",
                &self
                    .inner
                    .entries
                    .iter()
                    .map(|e| &e.uri)
                    .collect::<Vec<_>>(),
            )
            .field("page_size", &self.inner.page_size)
            .finish()
    }
}

impl Skills {
    /// A builder, with the default limits and no skills yet.
    ///
    /// ```
    /// let skills = mcp_server::Skills::builder().build().unwrap();
    /// assert!(skills.is_empty());
    /// ```
    pub fn builder() -> SkillsBuilder {
        SkillsBuilder::default()
    }

    /// The skills of the folder `dir` with the default limits (see [`SkillsBuilder::dir`]).
    ///
    /// ```no_run
    /// let skills = mcp_server::Skills::from_dir("skills").unwrap();
    /// # let _ = skills;
    /// ```
    pub fn from_dir(dir: impl Into<PathBuf>) -> Result<Self, SkillsError> {
        Self::builder().dir(dir).build()
    }

    /// How many skills the catalog holds.
    ///
    /// ```
    /// use mcp_server::{Skill, Skills};
    ///
    /// let manifest = "---\nname: notes\ndescription: Takes notes\n---\n";
    /// let skills = Skills::builder()
    ///     .skill(Skill::new("acme/notes").file("SKILL.md", manifest))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(skills.len(), 1);
    /// assert!(!skills.is_empty());
    /// assert_eq!(skills.uris().collect::<Vec<_>>(), ["skill://acme/notes/SKILL.md"]);
    /// ```
    pub fn len(&self) -> usize {
        self.inner.entries.len()
    }

    /// Whether the catalog holds no skill.
    pub fn is_empty(&self) -> bool {
        self.inner.entries.is_empty()
    }

    /// The manifest URIs (`skill://<skill-path>/SKILL.md`), sorted.
    pub fn uris(&self) -> impl Iterator<Item = &str> {
        self.inner.entries.iter().map(|e| e.uri.as_str())
    }

    /// Every file as a resource: listed by `resources/list`, read by `resources/read`.
    pub(crate) fn resources(&self) -> Vec<Resource> {
        let mut out = Vec::new();
        for entry in &self.inner.entries {
            for file in &entry.files {
                let contents = match std::str::from_utf8(&file.bytes) {
                    Ok(text) => ResourceContents::text(&file.uri, text),
                    Err(_) => ResourceContents::blob(&file.uri, &file.bytes),
                }
                .with_mime_type(file.mime_type);
                let read = move |_: ResourceRequest| {
                    let contents = contents.clone();
                    async move { contents }
                };
                let manifest = file.relative == wire::MANIFEST;
                let name = if manifest {
                    entry.frontmatter["name"].as_str().unwrap_or_default()
                } else {
                    file.relative.as_str()
                };
                let mut resource = Resource::new(&file.uri, name, read)
                    .mime_type(file.mime_type)
                    .size(file.bytes.len() as u64);
                let skill_name = entry.frontmatter["name"].as_str().unwrap_or_default();
                resource = match entry.frontmatter.get("description").and_then(Value::as_str) {
                    Some(description) if manifest => resource.description(description),
                    _ => resource
                        .description(format!("File {} of the skill {skill_name}.", file.relative)),
                };
                out.push(resource);
            }
        }
        out
    }

    /// The extension: settings `{}`, methods `skills/list` and `skills/get`.
    pub(crate) fn extension(&self) -> Extension {
        let list = self.clone();
        let get = self.clone();
        let extension = Extension::new(SKILLS_EXTENSION)
            .method(wire::LIST_METHOD, move |request| {
                let skills = list.clone();
                async move { skills.list(&request) }
            })
            .method(wire::GET_METHOD, move |request| {
                let skills = get.clone();
                async move { skills.get(&request) }
            });
        if !self.inner.directory_read {
            return extension;
        }
        let read = self.clone();
        extension.settings(json!({"directoryRead": true})).method(
            DIRECTORY_READ_METHOD,
            move |request| {
                let skills = read.clone();
                async move { skills.read_directory(&request) }
            },
        )
    }

    fn cached(&self, mut result: Map<String, Value>) -> Value {
        let (ttl_ms, scope) = self.inner.cache;
        result.insert("ttlMs".into(), Value::from(ttl_ms));
        result.insert("cacheScope".into(), Value::from(scope.as_str()));
        Value::Object(result)
    }

    /// `skills/list {cursor?}`: the cursor is the decimal index of the page's first skill.
    fn list(&self, request: &ExtensionRequest) -> Result<Value, ExtensionError> {
        let catalog = &*self.inner;
        let entries: Vec<&Value> = catalog.entries.iter().map(|e| &e.entry).collect();
        let (page, next) = page(request, &entries, catalog.page_size)?;
        let mut result = Map::new();
        result.insert("skills".into(), Value::Array(page));
        if let Some(next) = next {
            result.insert("nextCursor".into(), Value::String(next));
        }
        Ok(self.cached(result))
    }

    /// `resources/directory/read {uri, cursor?}`: the direct children of a skill's folder.
    fn read_directory(&self, request: &ExtensionRequest) -> Result<Value, ExtensionError> {
        let Some(uri) = request.params().get("uri").and_then(Value::as_str) else {
            return Err(ExtensionError::InvalidParams(
                "resources/directory/read needs a uri".into(),
            ));
        };
        let Some(children) = self.inner.directories.get(uri.trim_end_matches('/')) else {
            return Err(ExtensionError::InvalidParams(format!(
                "{} is not a directory",
                truncate(uri, 200)
            )));
        };
        let children: Vec<&Value> = children.iter().collect();
        let (page, next) = page(request, &children, self.inner.page_size)?;
        let mut result = Map::new();
        result.insert("resources".into(), Value::Array(page));
        if let Some(next) = next {
            result.insert("nextCursor".into(), Value::String(next));
        }
        Ok(Value::Object(result))
    }

    /// `skills/get {uri}`: the entry of the skill whose manifest is `uri`.
    fn get(&self, request: &ExtensionRequest) -> Result<Value, ExtensionError> {
        let Some(uri) = request.params().get("uri").and_then(Value::as_str) else {
            return Err(ExtensionError::InvalidParams(
                "skills/get needs the skill's uri".into(),
            ));
        };
        let Some(&index) = self.inner.index.get(uri) else {
            return Err(ExtensionError::InvalidParams(format!(
                "no skill at {}",
                truncate(uri, 200)
            )));
        };
        let mut result = Map::new();
        result.insert("skill".into(), self.inner.entries[index].entry.clone());
        Ok(self.cached(result))
    }
}

/// The method listing a skill folder's children.
const DIRECTORY_READ_METHOD: &str = "resources/directory/read";

/// The page of `items` the request's `cursor` (the decimal index of its first item) names,
/// and the next page's cursor. A cursor this server did not hand out is `-32602`.
fn page(
    request: &ExtensionRequest,
    items: &[&Value],
    page_size: usize,
) -> Result<(Vec<Value>, Option<String>), ExtensionError> {
    let start = match request.params().get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => cursor
            .parse::<usize>()
            .ok()
            .filter(|&i| i < items.len() && cursor.len() <= 20)
            .ok_or_else(|| ExtensionError::InvalidParams("unknown cursor".into()))?,
        Some(_) => {
            return Err(ExtensionError::InvalidParams(
                "the cursor is a string".into(),
            ));
        }
    };
    let end = start.saturating_add(page_size).min(items.len());
    let page = items[start..end].iter().map(|v| (*v).clone()).collect();
    Ok((page, (end < items.len()).then(|| end.to_string())))
}

/// At most `max` bytes of `text`, cut at a character boundary (peer input echoed in errors).
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(name: &str) -> String {
        format!("---\nname: {name}\ndescription: A skill\n---\n\nBody.\n")
    }

    #[test]
    fn file_paths_cannot_leave_the_skill() {
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a//b",
            "./x",
            "a\\b",
            "",
            "a/",
            "%2e%2e/x",
        ] {
            let skill = Skill::new("s")
                .file("SKILL.md", manifest("s"))
                .file(bad, "x");
            let err = Skills::builder().skill(skill).build().unwrap_err();
            assert!(
                matches!(err, SkillsError::InvalidFilePath { .. }),
                "{bad}: {err}"
            );
        }
        for bad in ["..", "a/..", "UPPER", "a b", "-x", ""] {
            let skill = Skill::new(bad).file("SKILL.md", manifest("x"));
            assert!(Skills::builder().skill(skill).build().is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        /// Whatever file path a skill declares, it is refused or it stays inside its skill:
        /// no `.`/`..` segment, no empty segment, no escape characters in the served URI.
        #[test]
        fn any_declared_path_stays_inside_its_skill(path in "[a-z./\\\\%~+@ -]{0,24}") {
            let skill = Skill::new("s").file("SKILL.md", manifest("s")).file(path.clone(), "x");
            if let Ok(skills) = Skills::builder().skill(skill).build() {
                for resource in skills.resources() {
                    let uri = resource.uri();
                    let rest = uri.strip_prefix("skill://s/");
                    proptest::prop_assert!(rest.is_some(), "{uri}");
                    for segment in rest.unwrap_or_default().split('/') {
                        proptest::prop_assert!(
                            !segment.is_empty() && segment != "." && segment != "..",
                            "{path:?} served as {uri}"
                        );
                        proptest::prop_assert!(
                            !segment.contains(['%', '\\', ' ']),
                            "{path:?} served as {uri}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn limits_are_enforced() {
        let two = Skill::new("s")
            .file("SKILL.md", manifest("s"))
            .file("b", "x");
        let err = Skills::builder()
            .max_files_per_skill(1)
            .skill(two.clone())
            .build()
            .unwrap_err();
        assert!(matches!(err, SkillsError::Limit { limit: 1, .. }), "{err}");
        let err = Skills::builder()
            .max_file_bytes(10)
            .skill(two.clone())
            .build()
            .unwrap_err();
        assert!(matches!(err, SkillsError::Limit { limit: 10, .. }), "{err}");
        let size = manifest("s").len() as u64;
        let err = Skills::builder()
            .max_skill_bytes(size)
            .skill(two.clone())
            .build()
            .unwrap_err();
        assert!(matches!(err, SkillsError::Limit { .. }), "{err}");
        let err = Skills::builder()
            .max_skills(0)
            .skill(two)
            .build()
            .unwrap_err();
        assert!(matches!(err, SkillsError::Limit { limit: 0, .. }), "{err}");
        assert!(Skills::builder().page_size(0).build().is_err());
    }

    #[test]
    fn names_must_match_and_manifests_must_exist() {
        let err = Skills::builder()
            .skill(Skill::new("s").file("SKILL.md", manifest("t")))
            .build()
            .unwrap_err();
        assert!(matches!(err, SkillsError::NameMismatch { .. }), "{err}");
        let err = Skills::builder()
            .skill(Skill::new("s").file("README.md", "x"))
            .build()
            .unwrap_err();
        assert!(matches!(err, SkillsError::NoManifest(_)), "{err}");
        let err = Skills::builder()
            .skill(Skill::new("s").file("SKILL.md", "no frontmatter"))
            .build()
            .unwrap_err();
        assert!(matches!(err, SkillsError::Frontmatter { .. }), "{err}");
    }
}
