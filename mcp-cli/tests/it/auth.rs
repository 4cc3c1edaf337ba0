//! `mcp login`, `mcp tools` with the kept tokens, `mcp auth status` and `mcp logout` against
//! the demo with its development authorization server (auto-approving; the browser replaced by
//! following the redirect).

use crate::support;

use support::{Demo, mcp, scratch};

#[test]
fn login_tools_status_and_logout() {
    let demo = Demo::start_with(&["--auth", "--auth-auto-approve"]);
    let url = demo.mcp();
    let file = scratch("auth-tokens").with_extension("json");
    let file = file.display().to_string();
    let common = [
        "--token-file",
        &file,
        "--auth-follow-redirect",
        "--timeout",
        "30",
    ];
    let run = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend_from_slice(&common);
        mcp(&all)
    };

    let login = run(&["login", &url]);
    assert!(login.ok().contains("logged in to"), "{}", login.stdout);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let tokens = std::fs::read_to_string(&file).unwrap();

    let tools = run(&["tools", &url]);
    assert!(tools.ok().contains("add"), "{}", tools.stdout);
    // The kept token was used: no new login rotated the file.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), tokens);

    let status = run(&["auth", "status", "--json"]);
    let status = status.json();
    assert_eq!(status["servers"][0]["server"], url.as_str());
    assert_eq!(status["servers"][0]["refreshable"], true);
    assert!(!status.to_string().contains("access_token"), "{status}");

    let logout = run(&["logout", &url]);
    assert!(logout.ok().contains("logged out"), "{}", logout.stdout);
    let status = run(&["auth", "status"]);
    assert!(status.ok().contains("no tokens kept"), "{}", status.stdout);
}
