//! `mcp-demo --auth`: what the demo refuses on its command line (issue 44, review findings 2
//! and 15; moved from mcp-server's auth_dev tests with the binary).

use crate::raw_http;

/// Finding 15 and 2: the demo takes no client secret on its command line (a file instead),
/// and refuses `--auth` on an address that is not loopback unless told it is unsafe.
#[tokio::test]
async fn the_demo_keeps_secrets_off_its_command_line_and_auth_on_loopback() {
    // Each must end by itself, refusing to start: one that serves instead fails the test
    // after the bound (and is killed), rather than hanging it.
    let refused = |args: &'static [&'static str]| async move {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-demo"))
            .args(args)
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(raw_http::WAIT, output)
            .await
            .unwrap_or_else(|_| panic!("mcp-demo {args:?} started instead of refusing"))
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).is_empty(),
            "{args:?}"
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let stderr = refused(&[
        "--addr",
        "127.0.0.1:0",
        "--auth",
        "--auth-client",
        "script:s3cret=http://127.0.0.1/unused",
    ])
    .await;
    assert!(stderr.contains("--auth-client-file"), "{stderr}");
    let stderr = refused(&["--addr", "0.0.0.0:0", "--auth"]).await;
    assert!(stderr.contains("--auth-allow-remote"), "{stderr}");
}
