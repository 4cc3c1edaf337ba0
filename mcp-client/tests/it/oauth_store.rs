//! The token stores' hardening (issue 44, review findings 10 and 11): the file store's
//! temporary file cannot be planted, a folder others may write to is refused, and every write
//! waits for another process's lock; the memory store finds tokens by the server they were
//! saved for.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use mcp_client::oauth::{
    ClientRegistration, FileTokenStore, MemoryTokenStore, OAuthError, TokenSet, TokenStore,
};

/// A fresh private folder (mode 0700) for one test.
fn folder(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!(
        "mcp-oauth-store-{name}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    dir
}

fn registration(issuer: &str) -> ClientRegistration {
    ClientRegistration {
        issuer: issuer.into(),
        client_id: "app".into(),
        client_secret: None,
        token_endpoint_auth_method: "none".into(),
    }
}

fn tokens(server: &str, resource: &str, access: &str) -> TokenSet {
    TokenSet {
        access_token: access.into(),
        refresh_token: Some(format!("{access}-refresh")),
        token_type: None,
        expires_at: None,
        scope: Some("mcp:read".into()),
        server: server.into(),
        resource: resource.into(),
        issuer: "https://as.example".into(),
        token_endpoint: "https://as.example/token".into(),
        client: registration("https://as.example"),
    }
}

#[test]
fn the_memory_store_keys_tokens_by_their_server() {
    // Two servers of one origin whose metadata names the same `resource` (the origin).
    let store = MemoryTokenStore::new();
    let a = "https://mcp.example/a/mcp";
    let b = "https://mcp.example/b/mcp";
    store
        .save_tokens(&tokens(a, "https://mcp.example", "token-a"))
        .unwrap();
    store
        .save_tokens(&tokens(b, "https://mcp.example", "token-b"))
        .unwrap();
    assert_eq!(
        store.load_tokens(a).unwrap().map(|t| t.access_token),
        Some("token-a".into())
    );
    assert_eq!(
        store.load_tokens(b).unwrap().map(|t| t.access_token),
        Some("token-b".into())
    );
    store.remove_tokens(a).unwrap();
    assert!(store.load_tokens(a).unwrap().is_none());
    assert!(store.load_tokens(b).unwrap().is_some());
}

#[cfg(unix)]
#[test]
fn a_planted_temporary_file_receives_nothing() {
    let dir = folder("planted");
    let file = dir.join("tokens.json");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    // The name the store used to write through: `<file>.<pid>.tmp`, made in advance as a
    // link to another file (and a second one as a file of "another user").
    let predictable = dir.join(format!("tokens.json.{}.tmp", std::process::id()));
    std::os::unix::fs::symlink(&victim, &predictable).unwrap();
    let store = FileTokenStore::new(&file);
    store
        .save_tokens(&tokens("https://s/mcp", "https://s/mcp", "secret-token"))
        .unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let meta = std::fs::symlink_metadata(&file).unwrap();
    assert!(meta.file_type().is_file(), "the token file is not a link");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("secret-token")
    );
    // No temporary file is left behind but the planted one.
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert_eq!(
        left,
        [predictable.file_name().unwrap().to_string_lossy()],
        "{left:?}"
    );
}

#[cfg(unix)]
#[test]
fn a_folder_others_may_write_to_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    for mode in [0o777, 0o1777, 0o770] {
        let dir = folder("shared");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let file = dir.join("tokens.json");
        let store = FileTokenStore::new(&file);
        let saved = store.save_tokens(&tokens("https://s/mcp", "https://s/mcp", "t"));
        let Err(OAuthError::Store(message)) = saved else {
            panic!("mode {mode:o}: {saved:?}");
        };
        assert!(message.contains("writable by other users"), "{message}");
        assert!(message.contains(&dir.display().to_string()), "{message}");
        assert!(!file.exists(), "nothing written");
        assert!(matches!(
            store.load_tokens("https://s/mcp"),
            Err(OAuthError::Store(_))
        ));
    }
}

#[cfg(unix)]
#[test]
fn a_folder_the_store_creates_is_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = folder("creates").join("deeper");
    let store = FileTokenStore::new(dir.join("tokens.json"));
    store
        .save_client(&registration("https://as.example"))
        .unwrap();
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

/// Every write (a registration saved, tokens removed) waits while another process holds the
/// lock file, so it never overwrites what that process saves meanwhile (a rotated refresh
/// token).
#[test]
fn writes_wait_for_another_processs_lock() {
    let dir = folder("locked");
    let file = dir.join("tokens.json");
    let store = FileTokenStore::new(&file);
    store
        .save_tokens(&tokens("https://s/mcp", "https://s/mcp", "first"))
        .unwrap();
    // Another process takes the lock (as `FileTokenStore::lock` does there).
    let lock_file = dir.join("tokens.json.lock");
    std::fs::write(&lock_file, "").unwrap();

    let writers: Vec<mpsc::Receiver<Result<(), OAuthError>>> = [0, 1]
        .into_iter()
        .map(|which| {
            let (done, finished) = mpsc::channel();
            let store = store.clone();
            std::thread::spawn(move || {
                let result = if which == 0 {
                    store.save_client(&registration("https://as.example"))
                } else {
                    store.remove_tokens("https://other/mcp")
                };
                let _ = done.send(result);
            });
            finished
        })
        .collect();
    // Neither finishes while the lock is held.
    for finished in &writers {
        assert_eq!(
            finished.recv_timeout(Duration::from_millis(300)).err(),
            Some(mpsc::RecvTimeoutError::Timeout),
            "a write went ahead under another process's lock"
        );
    }
    // The other process rotates the tokens, then lets go.
    let mut text: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    text["tokens"]["https://s/mcp"]["access_token"] = "rotated".into();
    std::fs::write(&file, serde_json::to_vec(&text).unwrap()).unwrap();
    std::fs::remove_file(&lock_file).unwrap();
    for finished in writers {
        finished
            .recv_timeout(Duration::from_secs(30))
            .expect("the write finishes once the lock is gone")
            .unwrap();
    }
    assert_eq!(
        store
            .load_tokens("https://s/mcp")
            .unwrap()
            .map(|t| t.access_token),
        Some("rotated".into()),
        "the other process's rotation survives"
    );
    assert!(store.load_client("https://as.example").unwrap().is_some());
    assert!(!lock_file.exists());
}

/// A write while this process holds the lock (during its own refresh) does not wait for
/// itself.
#[tokio::test]
async fn a_write_under_this_processs_own_lock_goes_ahead() {
    let dir = folder("own");
    let store = FileTokenStore::new(dir.join("tokens.json"));
    let held = store.lock("https://s/mcp").await.unwrap();
    store
        .save_tokens(&tokens("https://s/mcp", "https://s/mcp", "during"))
        .unwrap();
    store
        .save_client(&registration("https://as.example"))
        .unwrap();
    drop(held);
    assert!(!dir.join("tokens.json.lock").exists());
    assert!(store.load_tokens("https://s/mcp").unwrap().is_some());
}
