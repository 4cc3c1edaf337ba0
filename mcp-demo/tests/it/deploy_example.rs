//! The multi-worker example of `docs/deploying.md`: the three workers of
//! `docs/deploy/compose.yaml`, started as processes with the commands that file gives (on the
//! Redis at `MCP_REDIS_URL` and free ports instead of the compose network), serve one session
//! between them: created on the first, used on the second and third, ended on the third, gone
//! on the first.
#![cfg(feature = "redis")]

use std::time::Duration;

use crate::demo_process::DemoProcess;

/// The `command:` arrays of the worker services of the compose file.
fn worker_commands() -> Vec<Vec<String>> {
    let compose = include_str!("../../../docs/deploy/compose.yaml");
    compose
        .lines()
        .map(str::trim)
        .filter_map(|line| line.strip_prefix("command: "))
        .filter_map(|array| serde_json::from_str::<Vec<String>>(array).ok())
        .filter(|command| command.first().map(String::as_str) == Some("mcp-demo"))
        .collect()
}

/// A worker started from its compose command, killed when dropped.
async fn worker(command: &[String], redis: &str) -> DemoProcess {
    let args: Vec<String> = command[1..]
        .iter()
        .map(|arg| match arg.as_str() {
            "0.0.0.0:8080" => "127.0.0.1:0".to_owned(),
            "redis://redis:6379" => redis.to_owned(),
            other => other.to_owned(),
        })
        .collect();
    DemoProcess::start(&args, &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_of_the_compose_example_share_a_session() {
    let redis = std::env::var("MCP_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let commands = worker_commands();
    assert_eq!(
        commands.len(),
        3,
        "three workers in docs/deploy/compose.yaml"
    );
    let mut workers = Vec::new();
    for command in &commands {
        assert!(command.iter().any(|a| a == "--hub"), "{command:?}");
        workers.push(worker(command, &redis).await);
    }
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"deploy-test","version":"1"}}}"#;
    let (status, session, body) = workers[0].send("POST", None, initialize).await;
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _, body) = workers[1].send("POST", Some(&session), initialized).await;
    assert_eq!(status, 202, "{body}");
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":40,"b":2}}}"#;
    for worker in &workers[1..] {
        let (status, _, body) = worker.send("POST", Some(&session), call).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("42"), "{body}");
    }
    let (status, _, _) = workers[2].send("DELETE", Some(&session), "").await;
    assert_eq!(status, 204);
    // The first worker holds a trusted copy of the session it created for at most
    // `HttpConfig::session_cache` (1 s) after the change is published: within that window
    // (and a margin) its requests are refused too.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    loop {
        let (status, _, body) = workers[0].send("POST", Some(&session), call).await;
        if status == 404 {
            break;
        }
        assert_eq!(status, 200, "{body}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ended session is still served by the first worker after 3 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The compose file builds its workers' image from the Dockerfile at the repository root, and
/// that Dockerfile builds this package's binary with the workspace's toolchain: a renamed
/// package, binary or a raised rust-version fails here rather than in someone's `docker
/// compose up` (Docker itself is not needed).
#[test]
fn the_compose_file_builds_the_dockerfile_of_this_workspace() {
    let compose = include_str!("../../../docs/deploy/compose.yaml");
    let dockerfile = include_str!("../../../Dockerfile");
    let workspace = include_str!("../../../Cargo.toml");
    let package = include_str!("../../Cargo.toml");
    // Every mcp-demo worker is built, from the repository root (two folders up from
    // docs/deploy) with its Dockerfile.
    // The services: each starts at a line indented by two spaces.
    let mut services: Vec<String> = Vec::new();
    for line in compose.lines() {
        if line.starts_with("  ") && !line.starts_with("   ") {
            services.push(String::new());
        }
        if let Some(service) = services.last_mut() {
            service.push_str(line);
            service.push('\n');
        }
    }
    let workers: Vec<&String> = services
        .iter()
        .filter(|service| service.contains(r#"command: ["mcp-demo""#))
        .collect();
    assert_eq!(workers.len(), 3, "{compose}");
    for worker in workers {
        assert!(
            worker.contains("build: {context: ../.., dockerfile: Dockerfile}"),
            "{worker}"
        );
    }
    // The package and binary the Dockerfile builds are this package and its binary.
    let field = |toml: &str, key: &str| {
        toml.lines()
            .find_map(|line| {
                line.strip_prefix(key)?
                    .trim()
                    .strip_prefix('=')?
                    .trim()
                    .strip_prefix('"')?
                    .strip_suffix('"')
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| panic!("no {key} in {toml}"))
    };
    assert_eq!(field(package, "name"), "everymcp-demo");
    assert!(
        package.contains("[[bin]]\nname = \"mcp-demo\""),
        "{package}"
    );
    assert!(
        dockerfile.contains("cargo build --locked --release -p everymcp-demo --bin mcp-demo"),
        "{dockerfile}"
    );
    assert!(
        dockerfile
            .contains("COPY --from=build /src/target/release/mcp-demo /usr/local/bin/mcp-demo"),
        "{dockerfile}"
    );
    // The builder image is the workspace's rust-version (an older one cannot build it).
    let rust_version = field(workspace, "rust-version");
    assert!(
        dockerfile.contains(&format!("FROM rust:{rust_version}-")),
        "the Dockerfile's builder is not rust {rust_version}: {dockerfile}"
    );
    // The image's command is the binary the compose commands run.
    assert!(dockerfile.contains(r#"CMD ["mcp-demo""#), "{dockerfile}");
}
