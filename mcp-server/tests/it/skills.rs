//! The Skills extension (SEP-2640) over real HTTP on 127.0.0.1 with our client: a catalog read
//! from a folder, `skills/list` paginated, `skills/get` (an unknown URI is -32602), files read
//! through `resources/read` and verified (size, digest, frontmatter) on 2026-07-28, and the
//! same files as plain resources on a 2025 revision. Also: URIs that try to leave a skill,
//! the catalog's limits, symbolic links, and a lying server whose files fail verification.
//! Core results are validated against the revision's official schema.

use crate::raw_http;
use crate::support;

use std::path::{Path, PathBuf};

use mcp_client::{Client, Revision, SKILLS_EXTENSION, SkillError, SkillResources};
use mcp_server::http::HttpConfig;
use mcp_server::{
    Extension, ExtensionError, Resource, ResourceRequest, Server, Skill, Skills, SkillsError,
};
use raw_http::{Running, WAIT};
use serde_json::{Value, json};

const PDF: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: \"2\"\n---\n\nRead references/FORMS.md for forms.\n";
const FORMS: &str = "Form fields live in the AcroForm dictionary.\n";
const GREETING: &str =
    "---\nname: greeting\ndescription: |\n  Greets people\n  politely\n---\n\nSay hello.\n";

/// A fresh folder under the system's temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("mcp-skills-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn write(&self, relative: &str, bytes: &[u8]) {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn catalog(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    dir.write("pdf-processing/SKILL.md", PDF.as_bytes());
    dir.write("pdf-processing/references/FORMS.md", FORMS.as_bytes());
    dir.write("pdf-processing/assets/logo.bin", &[0, 159, 146, 150]);
    dir.write("greeting/SKILL.md", GREETING.as_bytes());
    // Not a skill: no SKILL.md.
    dir.write("notes/README.md", b"ignored");
    dir
}

fn server(dir: &Path) -> Server {
    let skills = Skills::builder()
        .page_size(1)
        .directory_read(true)
        .dir(dir)
        .build()
        .unwrap();
    assert_eq!(skills.len(), 2);
    Server::builder("skills", "1.0")
        .skills(skills)
        .build()
        .unwrap()
}

async fn connect(running: &Running, revision: Revision) -> Client {
    Client::builder()
        .timeout(WAIT)
        .revision(revision)
        .extension(SKILLS_EXTENSION, json!({}))
        .connect_http(&running.url("/mcp"))
        .await
        .unwrap()
}

#[tokio::test]
async fn skills_are_listed_got_and_read_verified_on_2026_07_28() {
    let dir = catalog("serve");
    let running = Running::start(server(dir.path()), HttpConfig::new()).await;
    let client = connect(&running, Revision::V2026_07_28).await;
    let described = client.server().expect("described");
    assert_eq!(
        described.capabilities["extensions"][SKILLS_EXTENSION],
        json!({"directoryRead": true})
    );
    assert!(described.capabilities["resources"].is_object());
    let discover = client.request("server/discover", None).await.unwrap();
    support::check(Revision::V2026_07_28, "DiscoverResult", &discover);

    // Two pages of one skill each, sorted by URI.
    let first = client.list_skills(None).await.unwrap();
    assert_eq!(first.skills.len(), 1);
    let cursor = first.next_cursor.clone().expect("a second page");
    let second = client.list_skills(Some(&cursor)).await.unwrap();
    assert_eq!(second.next_cursor, None);
    let greeting = &first.skills[0];
    let pdf = &second.skills[0];
    assert_eq!(greeting.uri, "skill://greeting/SKILL.md");
    assert_eq!(greeting.description(), "Greets people\npolitely\n");
    assert_eq!(pdf.uri, "skill://pdf-processing/SKILL.md");
    assert_eq!(pdf.frontmatter["metadata"], json!({"version": "2"}));
    let SkillResources::Files(files) = &pdf.resources else {
        panic!("a file manifest");
    };
    let uris: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/assets/logo.bin",
            "skill://pdf-processing/references/FORMS.md",
        ]
    );
    assert_eq!(files[0].size, PDF.len() as u64);
    assert_eq!(files[0].digest, mcp_wire::skill::digest(PDF.as_bytes()));

    // The raw result carries the cache hint; a bad cursor is invalid params.
    let raw = client
        .request("skills/list", Some(json!({})))
        .await
        .unwrap();
    assert_eq!(raw["ttlMs"], 0);
    assert_eq!(raw["cacheScope"], "private");
    for bad in [
        json!({"cursor": "99"}),
        json!({"cursor": "x"}),
        json!({"cursor": 1}),
    ] {
        let err = client.request("skills/list", Some(bad)).await.unwrap_err();
        assert_eq!(err.code(), Some(-32602), "{err}");
    }

    // skills/get answers the same entry; unknown and missing URIs are -32602.
    let got = client.get_skill(&pdf.uri).await.unwrap();
    assert_eq!(&got, pdf);
    let raw = client
        .request("skills/get", Some(json!({"uri": pdf.uri})))
        .await
        .unwrap();
    assert!(raw.get("nextCursor").is_none());
    for unknown in [
        json!({"uri": "skill://nothing/SKILL.md"}),
        json!({"uri": "skill://pdf-processing/references/FORMS.md"}),
        json!({}),
        json!({"uri": 3}),
    ] {
        match client.request("skills/get", Some(unknown.clone())).await {
            Err(err) => assert_eq!(err.code(), Some(-32602), "{unknown}: {err}"),
            Ok(value) => panic!("{unknown} answered {value}"),
        }
    }
    let err = client
        .get_skill("skill://nothing/SKILL.md")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SkillError::Request(e) if e.code() == Some(-32602)),
        "{err}"
    );

    // Files are read on demand and verified.
    let manifest = client.read_skill_file(pdf, &pdf.uri).await.unwrap();
    assert_eq!(manifest.text(), Some(PDF));
    assert_eq!(manifest.mime_type.as_deref(), Some("text/markdown"));
    let forms = client
        .read_skill_file(pdf, "skill://pdf-processing/references/FORMS.md")
        .await
        .unwrap();
    assert_eq!(forms.text(), Some(FORMS));
    let logo = client
        .read_skill_file(pdf, "skill://pdf-processing/assets/logo.bin")
        .await
        .unwrap();
    assert_eq!(logo.bytes, [0, 159, 146, 150]);
    let err = client
        .read_skill_file(pdf, "skill://greeting/SKILL.md")
        .await
        .unwrap_err();
    assert!(matches!(err, SkillError::NotInSkill { .. }), "{err}");

    // The files are ordinary resources too, named and described from the frontmatter.
    let listed = client.request("resources/list", None).await.unwrap();
    support::check(Revision::V2026_07_28, "ListResourcesResult", &listed);
    let manifest = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "skill://pdf-processing/SKILL.md")
        .expect("listed");
    assert_eq!(manifest["name"], "pdf-processing");
    assert_eq!(
        manifest["description"],
        "Extract, fill, and assemble PDF documents"
    );
    assert_eq!(manifest["mimeType"], "text/markdown");
    let read = client
        .request(
            "resources/read",
            Some(json!({"uri": "skill://pdf-processing/assets/logo.bin"})),
        )
        .await
        .unwrap();
    support::check(Revision::V2026_07_28, "ReadResourceResult", &read);
    client.close().await.unwrap();
    running.stop().await;
}

#[tokio::test]
async fn skill_folders_are_read_with_directory_read() {
    let dir = catalog("directory");
    let running = Running::start(server(dir.path()), HttpConfig::new()).await;
    let client = connect(&running, Revision::V2026_07_28).await;
    let described = client.server().expect("described");
    assert_eq!(
        described.capabilities["extensions"][SKILLS_EXTENSION],
        json!({"directoryRead": true})
    );
    // Page size 1: three pages (two folders, then SKILL.md).
    let mut children = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = json!({"uri": "skill://pdf-processing"});
        if let Some(cursor) = &cursor {
            params["cursor"] = json!(cursor);
        }
        let page = client
            .request("resources/directory/read", Some(params))
            .await
            .unwrap();
        children.extend(page["resources"].as_array().unwrap().clone());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let listed: Vec<(&str, &str)> = children
        .iter()
        .map(|c| (c["uri"].as_str().unwrap(), c["mimeType"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            ("skill://pdf-processing/assets", "inode/directory"),
            ("skill://pdf-processing/references", "inode/directory"),
            ("skill://pdf-processing/SKILL.md", "text/markdown"),
        ]
    );
    let sub = client
        .request(
            "resources/directory/read",
            Some(json!({"uri": "skill://pdf-processing/references/"})),
        )
        .await
        .unwrap();
    assert_eq!(
        sub["resources"][0]["uri"],
        "skill://pdf-processing/references/FORMS.md"
    );
    assert_eq!(sub["resources"][0]["size"], FORMS.len());
    for not_a_folder in [
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/..",
        "skill://notes",
        "skill://",
    ] {
        let err = client
            .request(
                "resources/directory/read",
                Some(json!({"uri": not_a_folder})),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(-32602), "{not_a_folder}: {err}");
    }
    client.close().await.unwrap();
    running.stop().await;
}

#[tokio::test]
async fn skills_are_plain_resources_on_2025_revisions() {
    let dir = catalog("legacy");
    let running = Running::start(server(dir.path()), HttpConfig::new()).await;
    for revision in [Revision::V2025_11_25, Revision::V2025_03_26] {
        let client = Client::builder()
            .timeout(WAIT)
            .revision(revision)
            .connect_http(&running.url("/mcp"))
            .await
            .unwrap();
        let listed = client.request("resources/list", None).await.unwrap();
        support::check(revision, "ListResourcesResult", &listed);
        let uris: Vec<&str> = listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["uri"].as_str())
            .collect();
        for uri in [
            "skill://greeting/SKILL.md",
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references/FORMS.md",
        ] {
            assert!(uris.contains(&uri), "{revision}: {uri} in {uris:?}");
        }
        let read = client
            .read_resource("skill://pdf-processing/SKILL.md")
            .await
            .unwrap();
        support::check(revision, "ReadResourceResult", &read);
        assert_eq!(read["contents"][0]["text"], PDF, "{revision}");
        client.close().await.unwrap();
    }
    running.stop().await;
}

#[tokio::test]
async fn uris_cannot_leave_the_catalog() {
    let dir = catalog("traversal");
    // A file beside the catalog that a traversal would reach.
    let outside = TempDir::new("traversal-outside");
    outside.write("secret.txt", b"secret");
    let running = Running::start(server(dir.path()), HttpConfig::new()).await;
    let client = connect(&running, Revision::V2026_07_28).await;
    for uri in [
        "skill://pdf-processing/../greeting/SKILL.md",
        "skill://pdf-processing/references/../SKILL.md",
        "skill://pdf-processing/%2e%2e/%2e%2e/secret.txt",
        "skill://../traversal-outside/secret.txt",
        "skill:///etc/passwd",
        "skill://pdf-processing//SKILL.md",
        "skill://pdf-processing/./SKILL.md",
        "skill://notes/README.md",
    ] {
        let err = client.read_resource(uri).await.unwrap_err();
        assert!(err.is_rpc(), "{uri}: {err}");
        let err = client
            .request("skills/get", Some(json!({"uri": uri})))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(-32602), "{uri}: {err}");
    }
    client.close().await.unwrap();
    running.stop().await;
}

#[cfg(unix)]
#[test]
fn symbolic_links_in_a_skill_are_refused() {
    let dir = catalog("symlink");
    let outside = TempDir::new("symlink-outside");
    outside.write("secret.txt", b"secret");
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("pdf-processing/secret.txt"),
    )
    .unwrap();
    let err = Skills::from_dir(dir.path()).unwrap_err();
    assert!(matches!(err, SkillsError::Symlink(_)), "{err}");
}

#[test]
fn folder_limits_are_enforced() {
    let dir = catalog("limits");
    let err = Skills::builder()
        .max_files_per_skill(2)
        .dir(dir.path())
        .build()
        .unwrap_err();
    assert!(matches!(err, SkillsError::Limit { limit: 2, .. }), "{err}");
    let err = Skills::builder()
        .max_file_bytes(64)
        .dir(dir.path())
        .build()
        .unwrap_err();
    assert!(matches!(err, SkillsError::Limit { limit: 64, .. }), "{err}");
    let err = Skills::builder()
        .max_skill_bytes(PDF.len() as u64 + 4)
        .dir(dir.path())
        .build()
        .unwrap_err();
    assert!(matches!(err, SkillsError::Limit { .. }), "{err}");
    let err = Skills::builder()
        .max_skills(1)
        .dir(dir.path())
        .build()
        .unwrap_err();
    assert!(matches!(err, SkillsError::Limit { limit: 1, .. }), "{err}");
    let err = Skills::builder()
        .max_depth(0)
        .dir(dir.path())
        .build()
        .unwrap_err();
    assert!(matches!(err, SkillsError::Limit { limit: 0, .. }), "{err}");
    assert!(Skills::builder().page_size(1001).build().is_err());
    // The defaults take the whole catalog.
    assert_eq!(Skills::from_dir(dir.path()).unwrap().len(), 2);
    assert!(matches!(
        Skills::from_dir(dir.path().join("missing")),
        Err(SkillsError::Io { .. })
    ));
}

#[tokio::test]
async fn an_empty_catalog_still_declares_resources() {
    let server = Server::builder("empty", "1.0")
        .skills(Skills::builder().build().unwrap())
        .build()
        .unwrap();
    let running = Running::start(server, HttpConfig::new()).await;
    let client = connect(&running, Revision::V2026_07_28).await;
    let described = client.server().expect("described");
    assert!(described.capabilities["resources"].is_object());
    let page = client.list_skills(None).await.unwrap();
    assert!(page.skills.is_empty() && page.next_cursor.is_none());
    client.close().await.unwrap();
    running.stop().await;
}

/// A server whose skill entry lies about its manifest in the way `mode` says.
fn lying_server(mode: &'static str) -> Server {
    const SERVED: &str = "---\nname: liar\ndescription: Honest\n---\n\nBody.\n";
    let entry_manifest = match mode {
        "frontmatter" => "---\nname: liar\ndescription: Different\n---\n\nBody.\n",
        _ => SERVED,
    };
    let (digest, size) = match mode {
        "digest" => (mcp_wire::skill::digest(b"something else"), SERVED.len()),
        "size" => (mcp_wire::skill::digest(SERVED.as_bytes()), SERVED.len() + 1),
        _ => (mcp_wire::skill::digest(SERVED.as_bytes()), SERVED.len()),
    };
    let entry = json!({
        "uri": "skill://liar/SKILL.md",
        "frontmatter": Value::Object(mcp_wire::skill::parse_frontmatter(entry_manifest).unwrap()),
        "resources": [{"uri": "skill://liar/SKILL.md", "digest": digest, "size": size}],
    });
    Server::builder("liar", "1.0")
        .resource(Resource::new(
            "skill://liar/SKILL.md",
            "liar",
            |_: ResourceRequest| async { SERVED },
        ))
        .extension(
            Extension::new(SKILLS_EXTENSION).method("skills/get", move |_| {
                let entry = entry.clone();
                async move { Ok::<_, ExtensionError>(json!({"skill": entry})) }
            }),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn files_that_fail_verification_are_refused() {
    for mode in ["honest", "digest", "size", "frontmatter"] {
        let running = Running::start(lying_server(mode), HttpConfig::new()).await;
        let client = connect(&running, Revision::V2026_07_28).await;
        let skill = client.get_skill("skill://liar/SKILL.md").await.unwrap();
        let read = client.read_skill_file(&skill, &skill.uri).await;
        match (mode, read) {
            ("honest", Ok(file)) => assert!(file.text().unwrap().contains("Body.")),
            ("digest", Err(SkillError::DigestMismatch { .. }))
            | ("size", Err(SkillError::SizeMismatch { .. })) => {}
            ("frontmatter", Err(SkillError::FrontmatterMismatch { field, .. })) => {
                assert_eq!(field, "description");
            }
            (mode, other) => panic!("{mode}: {other:?}"),
        }
        client.close().await.unwrap();
        running.stop().await;
    }
}

#[test]
fn skills_given_in_code_are_served_like_folders() {
    let skills = Skills::builder()
        .skill(Skill::new("acme/greeting").file("SKILL.md", GREETING))
        .build()
        .unwrap();
    assert_eq!(
        skills.uris().collect::<Vec<_>>(),
        ["skill://acme/greeting/SKILL.md"]
    );
    let duplicate = Skills::builder()
        .skill(Skill::new("greeting").file("SKILL.md", GREETING))
        .skill(Skill::new("greeting").file("SKILL.md", GREETING))
        .build()
        .unwrap_err();
    assert!(
        matches!(duplicate, SkillsError::Duplicate(_)),
        "{duplicate}"
    );
}
