//! The Skills extension (SEP-2640) through the gateway, on real sockets on 127.0.0.1: the
//! upstream's declaration, `skills/list`, `skills/get` (an unknown skill stays invalid params)
//! and the skills' files, read as the upstream's resources, reach a downstream client on every
//! revision that has extensions; a gateway in front of an upstream without skills declares
//! none.

mod support;

use support::serve_mcp;

use std::time::Duration;

use mcp_client::{Client, Revision, SkillError};
use mcp_gateway::Gateway;
use mcp_server::{SKILLS_EXTENSION, Server, Skill, Skills};

/// A bound on each step (not a synchronisation).
const STEP: Duration = Duration::from_secs(20);

const GREETING: &str =
    "---\nname: greeting\ndescription: Greets people politely\n---\n\nSay hello.\n";

/// A gateway in front of `upstream`; its `/mcp` URL.
async fn gateway(upstream: Server) -> (Gateway, String) {
    let upstream = serve_mcp(upstream).await;
    let client = Client::builder()
        .timeout(STEP)
        .connect_http(&upstream)
        .await
        .expect("the gateway reaches the upstream");
    let gateway = Gateway::builder()
        .start(client)
        .await
        .expect("the gateway starts");
    let url = serve_mcp(gateway.server().clone()).await;
    (gateway, url)
}

fn declares_skills(client: &Client) -> bool {
    client
        .server()
        .and_then(|server| server.capabilities.pointer("/extensions").cloned())
        .is_some_and(|extensions| extensions.get(SKILLS_EXTENSION).is_some())
}

#[tokio::test]
async fn the_upstreams_skills_are_the_gateways() {
    let skills = Skills::builder()
        .skill(
            Skill::new("acme/greeting")
                .file("SKILL.md", GREETING)
                .file("references/STYLE.md", "Be brief.\n"),
        )
        .build()
        .expect("the catalog builds");
    let upstream = Server::builder("upstream", "1.0")
        .skills(skills)
        .build()
        .expect("the upstream builds");
    let (_gateway, url) = gateway(upstream).await;
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let client = Client::builder()
            .revision(revision)
            .timeout(STEP)
            .connect_http(&url)
            .await
            .expect("the downstream client reaches the gateway");
        assert!(declares_skills(&client), "{revision:?}");
        let page = tokio::time::timeout(STEP, client.list_skills(None))
            .await
            .expect("in time")
            .expect("skills/list");
        assert_eq!(page.skills.len(), 1, "{revision:?}");
        let listed = &page.skills[0];
        assert_eq!(listed.uri, "skill://acme/greeting/SKILL.md");
        assert_eq!(listed.name(), "greeting");
        let skill = client.get_skill(&listed.uri).await.expect("skills/get");
        // Read through the gateway and checked against the upstream's size and digest.
        let manifest = client
            .read_skill_file(&skill, &skill.uri)
            .await
            .expect("the manifest");
        assert_eq!(manifest.text(), Some(GREETING));
        let style = client
            .read_skill_file(&skill, "skill://acme/greeting/references/STYLE.md")
            .await
            .expect("a file of the skill");
        assert_eq!(style.text(), Some("Be brief.\n"));
        let unknown = client
            .get_skill("skill://nothing/SKILL.md")
            .await
            .expect_err("no such skill");
        match unknown {
            SkillError::Request(e) => assert_eq!(e.code(), Some(-32602), "{e}"),
            other => panic!("{other}"),
        }
    }
}

#[tokio::test]
async fn an_upstream_without_skills_gives_a_gateway_without_skills() {
    let upstream = Server::builder("upstream", "1.0")
        .build()
        .expect("the upstream builds");
    let (_gateway, url) = gateway(upstream).await;
    let client = Client::builder()
        .timeout(STEP)
        .connect_http(&url)
        .await
        .expect("the downstream client reaches the gateway");
    assert!(!declares_skills(&client));
}
