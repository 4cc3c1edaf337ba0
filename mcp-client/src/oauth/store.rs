//! Where tokens and client registrations live between calls and between runs: the
//! [`TokenStore`] trait, an in-memory store and a file store (mode 0600).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::OAuthError;
use crate::transport::{BoxFuture, lock};

/// The tokens the client holds for one MCP server, and what it needs to refresh them without
/// discovering anything again (the token endpoint, the client registration).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The access token.
    pub access_token: String,
    /// The refresh token, when the authorization server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch (absolute, so a token
    /// read back after a restart is judged like a fresh one). `None`: the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// `DPoP` for a DPoP-bound token (RFC 9449; sent with a proof by a key held in memory
    /// only, so such a token is not reused after a restart), `None` for a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// The scopes granted (space-separated), or those requested when the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The MCP server's URL: the key the tokens are stored under.
    pub server: String,
    /// The resource identifier the tokens were issued for (RFC 8707 `resource`, from the
    /// protected resource metadata).
    pub resource: String,
    /// The issuer of the authorization server that issued them.
    pub issuer: String,
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The client registration the tokens were issued to.
    pub client: ClientRegistration,
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("token_type", &self.token_type)
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("server", &self.server)
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client", &self.client)
            .finish()
    }
}

/// A client's registration with one authorization server: pre-registered, a client ID
/// metadata document URL, or the answer of dynamic registration.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRegistration {
    /// The authorization server (issuer) the registration belongs to; credentials are never
    /// used with another one.
    pub issuer: String,
    /// The client ID.
    pub client_id: String,
    /// The client secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint: `client_secret_basic`,
    /// `client_secret_post` or `none`.
    pub token_endpoint_auth_method: String,
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .finish()
    }
}

/// Held while one client refreshes or replaces the tokens of a key: every other holder of the
/// same store (in this process, and for [`FileTokenStore`] in other processes) waits, then
/// reads what the winner saved instead of spending the same refresh token again.
pub struct StoreLock {
    _guard: Option<tokio::sync::OwnedMutexGuard<()>>,
    file: Option<PathBuf>,
}

impl StoreLock {
    /// A lock that excludes nothing (for a store that is not shared).
    pub fn none() -> Self {
        Self {
            _guard: None,
            file: None,
        }
    }
}

impl fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreLock").finish_non_exhaustive()
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        if let Some(path) = self.file.take() {
            // Not in the middle of a write of this process that relies on this lock.
            let _turn = lock(&WRITING);
            lock(held_lock_files()).retain(|p| *p != path);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The lock files this process holds now (through a [`StoreLock`]): a write while one is held
/// is already excluded from other processes, and only needs this process's turn.
fn held_lock_files() -> &'static Mutex<Vec<PathBuf>> {
    static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    &HELD
}

/// Keeps tokens (per MCP server) and client registrations (per authorization server).
///
/// Tokens are kept by MCP server URL (each [`TokenSet`] names the authorization server that
/// issued it, and is used only with that one), registrations by authorization server issuer. [`TokenStore::lock`] serialises refreshes
/// among everyone sharing the store.
///
/// The methods but [`lock`](TokenStore::lock) are synchronous and may wait (a
/// [`FileTokenStore`] writes under a lock file another process may hold, polling up to 90 s):
/// the OAuth client calls the ones that change the store (`save_tokens`, `remove_tokens`,
/// `save_client`) on the runtime's blocking pool, never on a runtime thread. Code of your own
/// that calls them from async code should do the same (`tokio::task::spawn_blocking`).
pub trait TokenStore: fmt::Debug + Send + Sync + 'static {
    /// The tokens saved for the MCP server at `resource` (its URL), if any.
    fn load_tokens(&self, resource: &str) -> Result<Option<TokenSet>, OAuthError>;
    /// Saves (replaces) the tokens of their server ([`TokenSet::server`]).
    fn save_tokens(&self, tokens: &TokenSet) -> Result<(), OAuthError>;
    /// Forgets the tokens of `resource`.
    fn remove_tokens(&self, resource: &str) -> Result<(), OAuthError>;
    /// The registration saved for the authorization server `issuer`, if any.
    fn load_client(&self, issuer: &str) -> Result<Option<ClientRegistration>, OAuthError>;
    /// Saves a registration under its issuer.
    fn save_client(&self, client: &ClientRegistration) -> Result<(), OAuthError>;
    /// Takes the exclusive lock for changing the tokens of `resource`.
    fn lock(&self, resource: &str) -> BoxFuture<'_, Result<StoreLock, OAuthError>>;
}

/// A process-wide table of in-process locks, by name.
fn local_lock(name: String) -> BoxFuture<'static, StoreLock> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let mutex = {
        let mut table = lock(LOCKS.get_or_init(Default::default));
        // Drop the entries nobody holds, so the table stays small.
        table.retain(|_, m| Arc::strong_count(m) > 1);
        table.entry(name).or_default().clone()
    };
    Box::pin(async move {
        StoreLock {
            _guard: Some(mutex.lock_owned().await),
            file: None,
        }
    })
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Entries {
    #[serde(default)]
    tokens: HashMap<String, TokenSet>,
    #[serde(default)]
    clients: HashMap<String, ClientRegistration>,
}

/// Tokens in memory, gone with the process. Clones share the same entries.
#[derive(Clone, Default)]
pub struct MemoryTokenStore {
    entries: Arc<Mutex<Entries>>,
    id: Arc<()>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries = lock(&self.entries);
        f.debug_struct("MemoryTokenStore")
            .field("tokens", &entries.tokens.len())
            .field("clients", &entries.clients.len())
            .finish()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load_tokens(&self, resource: &str) -> Result<Option<TokenSet>, OAuthError> {
        Ok(lock(&self.entries).tokens.get(resource).cloned())
    }
    fn save_tokens(&self, tokens: &TokenSet) -> Result<(), OAuthError> {
        // Keyed by the server's URL, as `load_tokens` and `remove_tokens` (and the file
        // store) look them up; never by the metadata's `resource`, which several servers of
        // one origin may share.
        lock(&self.entries)
            .tokens
            .insert(tokens.server.clone(), tokens.clone());
        Ok(())
    }
    fn remove_tokens(&self, resource: &str) -> Result<(), OAuthError> {
        lock(&self.entries).tokens.remove(resource);
        Ok(())
    }
    fn load_client(&self, issuer: &str) -> Result<Option<ClientRegistration>, OAuthError> {
        Ok(lock(&self.entries).clients.get(issuer).cloned())
    }
    fn save_client(&self, client: &ClientRegistration) -> Result<(), OAuthError> {
        lock(&self.entries)
            .clients
            .insert(client.issuer.clone(), client.clone());
        Ok(())
    }
    fn lock(&self, resource: &str) -> BoxFuture<'_, Result<StoreLock, OAuthError>> {
        let name = format!("memory {:p} {resource}", Arc::as_ptr(&self.id));
        Box::pin(async move { Ok(local_lock(name).await) })
    }
}

/// The largest token file read.
const MAX_FILE: u64 = 4 * 1024 * 1024;
/// A lock file older than this is left over from a process that died holding it.
const STALE_LOCK: Duration = Duration::from_secs(60);
/// How long [`FileTokenStore::lock`] (and a write) waits for another process's lock.
const LOCK_WAIT: Duration = Duration::from_secs(90);
/// How often a waiter looks whether another process's lock file is gone.
const LOCK_POLL: Duration = Duration::from_millis(20);

/// Writers of a token file in this process take turns.
static WRITING: Mutex<()> = Mutex::new(());

/// A lock file taken for one write, removed when dropped.
struct LockFile(PathBuf);

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Tokens in a JSON file readable by its owner only (mode 0600 on Unix), keyed by MCP server
/// and authorization server. Every write replaces the file atomically: a temporary file with a
/// random name, created exclusively (never through a symbolic link or into a file someone
/// else made), then renamed over it. Several clients and processes may share one file:
/// refreshes and every write are serialised by a lock file next to it (`<file>.lock`), so a
/// rotated refresh token is never spent twice and no write loses another's.
///
/// On Unix the folder must not be writable by the group or others (where anyone could plant
/// or swap files): such a folder is refused with [`OAuthError::Store`] naming it. A folder the
/// store creates is made with mode 0700.
#[derive(Debug, Clone)]
pub struct FileTokenStore {
    path: PathBuf,
}

impl FileTokenStore {
    /// A store in `path` (created on the first save, with its folder).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every token set in the file, by server URL (for a status listing).
    pub fn all_tokens(&self) -> Result<Vec<TokenSet>, OAuthError> {
        let mut all: Vec<TokenSet> = self.read()?.tokens.into_values().collect();
        all.sort_by(|a, b| a.server.cmp(&b.server));
        Ok(all)
    }

    /// The folder of the file, if the path has one.
    fn folder(&self) -> Option<&Path> {
        self.path.parent().filter(|d| !d.as_os_str().is_empty())
    }

    /// Refuses a folder that others may write to (Unix); a missing folder passes.
    fn check_folder(&self) -> Result<(), OAuthError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let folder = self.folder().unwrap_or(Path::new("."));
            match std::fs::metadata(folder) {
                Ok(meta) if meta.permissions().mode() & 0o022 != 0 => {
                    return Err(OAuthError::Store(format!(
                        "{}: the token folder {} is writable by other users (mode {:o}); \
                         make it private (chmod 700) or choose another token file",
                        self.path.display(),
                        folder.display(),
                        meta.permissions().mode() & 0o7777
                    )));
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.error(e)),
            }
        }
        Ok(())
    }

    /// Creates the folder (mode 0700 on Unix) when missing, then checks it.
    fn make_folder(&self) -> Result<(), OAuthError> {
        if let Some(dir) = self.folder() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt as _;
                builder.mode(0o700);
            }
            builder.create(dir).map_err(|e| self.error(e))?;
        }
        self.check_folder()
    }

    fn read(&self) -> Result<Entries, OAuthError> {
        use std::io::Read as _;
        self.check_folder()?;
        let file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Entries::default()),
            Err(e) => return Err(self.error(e)),
        };
        let mut text = Vec::new();
        file.take(MAX_FILE + 1)
            .read_to_end(&mut text)
            .map_err(|e| self.error(e))?;
        if text.len() as u64 > MAX_FILE {
            return Err(OAuthError::Store(format!(
                "{}: larger than {MAX_FILE} bytes",
                self.path.display()
            )));
        }
        if text.is_empty() {
            return Ok(Entries::default());
        }
        serde_json::from_slice(&text)
            .map_err(|e| OAuthError::Store(format!("{}: {e}", self.path.display())))
    }

    fn write(&self, entries: &Entries) -> Result<(), OAuthError> {
        use std::io::Write as _;
        self.make_folder()?;
        let text = serde_json::to_vec_pretty(entries).unwrap_or_default();
        // A random name, created exclusively and without following a symbolic link: nobody
        // can make it in advance (a link to clobber a file, or a file of their own that would
        // receive the tokens).
        let random =
            mcp_auth::pkce::random_token(12).map_err(|e| OAuthError::Store(e.to_string()))?;
        let mut temp = self.path.clone().into_os_string();
        temp.push(format!(".{random}.tmp"));
        let temp = PathBuf::from(temp);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        let mut file = options.open(&temp).map_err(|e| self.error(e))?;
        let written = file
            .write_all(&text)
            .and_then(|()| file.sync_all())
            .and_then(|()| {
                drop(file);
                std::fs::rename(&temp, &self.path)
            });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(self.error(e));
        }
        Ok(())
    }

    /// A read-modify-write of the file: this process's writers take turns, and unless this
    /// process already holds the lock file (a refresh in progress), it is taken for the
    /// change, so no other process writes in between.
    fn update(&self, change: impl FnOnce(&mut Entries)) -> Result<(), OAuthError> {
        self.make_folder()?;
        let lock_path = self.lock_path();
        let started = std::time::Instant::now();
        loop {
            {
                // Writers of the same file in this process take turns.
                let _turn = lock(&WRITING);
                let held = lock(held_lock_files()).contains(&lock_path);
                let file_lock = if held {
                    None
                } else if self.try_lock_file(&lock_path, started)? {
                    Some(LockFile(lock_path.clone()))
                } else {
                    None
                };
                if held || file_lock.is_some() {
                    let mut entries = self.read()?;
                    change(&mut entries);
                    return self.write(&entries);
                }
            }
            // Another process writes or refreshes: poll for its lock file to go (without this
            // process's turn, which a refresh here may need).
            std::thread::sleep(LOCK_POLL);
        }
    }

    /// One attempt at creating the lock file: `Ok(true)` when created (a stale one is taken
    /// over), `Ok(false)` when another process holds it, an error after [`LOCK_WAIT`].
    fn try_lock_file(
        &self,
        lock_path: &Path,
        started: std::time::Instant,
    ) -> Result<bool, OAuthError> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
        }
        match options.open(lock_path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let stale = std::fs::symlink_metadata(lock_path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > STALE_LOCK);
                if stale {
                    let _ = std::fs::remove_file(lock_path);
                    return self.try_lock_file(lock_path, started);
                }
                if started.elapsed() > LOCK_WAIT {
                    return Err(OAuthError::Store(format!(
                        "{} is held by another process",
                        lock_path.display()
                    )));
                }
                Ok(false)
            }
            Err(e) => Err(self.error(e)),
        }
    }

    fn error(&self, e: std::io::Error) -> OAuthError {
        OAuthError::Store(format!("{}: {e}", self.path.display()))
    }

    fn lock_path(&self) -> PathBuf {
        let mut path = self.path.clone().into_os_string();
        path.push(".lock");
        PathBuf::from(path)
    }
}

impl TokenStore for FileTokenStore {
    fn load_tokens(&self, resource: &str) -> Result<Option<TokenSet>, OAuthError> {
        Ok(self.read()?.tokens.remove(resource))
    }
    fn save_tokens(&self, tokens: &TokenSet) -> Result<(), OAuthError> {
        self.update(|e| {
            e.tokens.insert(tokens.server.clone(), tokens.clone());
        })
    }
    fn remove_tokens(&self, resource: &str) -> Result<(), OAuthError> {
        self.update(|e| {
            e.tokens.remove(resource);
        })
    }
    fn load_client(&self, issuer: &str) -> Result<Option<ClientRegistration>, OAuthError> {
        Ok(self.read()?.clients.remove(issuer))
    }
    fn save_client(&self, client: &ClientRegistration) -> Result<(), OAuthError> {
        self.update(|e| {
            e.clients.insert(client.issuer.clone(), client.clone());
        })
    }
    fn lock(&self, _resource: &str) -> BoxFuture<'_, Result<StoreLock, OAuthError>> {
        Box::pin(async move {
            // In this process: a lock per file. Across processes: a lock file created
            // exclusively, taken over when older than `STALE_LOCK`.
            let mut held = local_lock(format!("file {}", self.path.display())).await;
            let lock_path = self.lock_path();
            self.make_folder()?;
            let started = std::time::Instant::now();
            loop {
                let taken = self.try_lock_file(&lock_path, started)?;
                if taken {
                    lock(held_lock_files()).push(lock_path.clone());
                }
                if taken {
                    held.file = Some(lock_path);
                    return Ok(held);
                }
                // Another process refreshes: poll for its lock file to go.
                tokio::time::sleep(LOCK_POLL).await;
            }
        })
    }
}

/// Tells the OAuth client what time it is (injectable for tests).
pub trait Clock: fmt::Debug + Send + Sync + 'static {
    /// Seconds since the Unix epoch.
    fn now(&self) -> u64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}

/// A clock that moves only when told to (tests). Clones share the time.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<std::sync::atomic::AtomicU64>);

impl ManualClock {
    /// A clock at the system's present time.
    pub fn new() -> Self {
        Self(Arc::new(SystemClock.now().into()))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.0
            .fetch_add(by.as_secs(), std::sync::atomic::Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}
