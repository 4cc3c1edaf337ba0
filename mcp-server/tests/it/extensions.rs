//! Protocol extensions (SEP-2133) on every revision, over real HTTP with our client: the
//! server advertises them (per request on 2026-07-28, at `initialize` before), serves their
//! methods with the client's declared settings, refuses a required one the client did not
//! declare with the revision's missing-capability error, and answers -32601 for a method no
//! extension adds. Registration refuses bad identifiers, duplicates and core method names.

use crate::raw_http;

use mcp_client::{Client, ErrorKind, Revision};
use mcp_server::http::HttpConfig;
use mcp_server::{Extension, ExtensionError, ExtensionRequest, RegistrationError, Server};
use raw_http::{Running, WAIT};
use serde_json::{Value, json};

async fn search(request: ExtensionRequest) -> Result<Value, ExtensionError> {
    let Some(query) = request.params().get("query").and_then(Value::as_str) else {
        return Err(ExtensionError::InvalidParams("search needs a query".into()));
    };
    Ok(json!({
        "hits": [format!("found {query}")],
        "clientSettings": request.client_settings().cloned().unwrap_or(Value::Null),
    }))
}

async fn reset(_: ExtensionRequest) -> Result<Value, ExtensionError> {
    Ok(json!({"reset": true}))
}

fn server() -> Server {
    Server::builder("extensions", "1.0")
        .extension(
            Extension::new("com.example/search")
                .settings(json!({"maxHits": 10}))
                .method("com.example/search", search),
        )
        .extension(
            Extension::new("com.example/admin")
                .required()
                .method("com.example/admin/reset", reset),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn extensions_are_negotiated_and_served_on_every_revision() {
    let running = Running::start(server(), HttpConfig::new()).await;
    for revision in Revision::ALL {
        let builder = Client::builder()
            .timeout(WAIT)
            .revision(revision)
            .extension("com.example/search", json!({"fuzzy": true}));
        let client = if revision == Revision::V2024_11_05 {
            builder.connect_sse(&running.url("/sse")).await
        } else {
            builder.connect_http(&running.url("/mcp")).await
        }
        .unwrap();
        let server = client.server().expect("described");
        assert_eq!(
            server.capabilities["extensions"],
            json!({"com.example/search": {"maxHits": 10}, "com.example/admin": {}}),
            "{revision}"
        );
        let found = client
            .request("com.example/search", Some(json!({"query": "x"})))
            .await
            .unwrap();
        assert_eq!(found["hits"], json!(["found x"]), "{revision}");
        assert_eq!(
            found["clientSettings"],
            json!({"fuzzy": true}),
            "{revision}"
        );

        let invalid = client
            .request("com.example/search", Some(json!({})))
            .await
            .unwrap_err();
        assert_eq!(invalid.code(), Some(-32602), "{revision}: {invalid}");

        let refused = client
            .request("com.example/admin/reset", None)
            .await
            .unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::Rpc, "{revision}: {refused}");
        if revision == Revision::V2026_07_28 {
            assert_eq!(refused.code(), Some(-32021), "{refused}");
            assert_eq!(
                refused.data().expect("data")["requiredCapabilities"]["extensions"],
                json!({"com.example/admin": {}})
            );
        } else {
            assert_eq!(refused.code(), Some(-32603), "{revision}: {refused}");
        }

        let unknown = client
            .request("com.example/nothing", None)
            .await
            .unwrap_err();
        assert_eq!(unknown.code(), Some(-32601), "{revision}: {unknown}");
        client.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_client_that_declares_a_required_extension_may_call_it() {
    let running = Running::start(server(), HttpConfig::new()).await;
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let client = Client::builder()
            .timeout(WAIT)
            .revision(revision)
            .extension("com.example/admin", json!({}))
            .connect_http(&running.url("/mcp"))
            .await
            .unwrap();
        let reset = client
            .request("com.example/admin/reset", None)
            .await
            .unwrap();
        assert_eq!(reset["reset"], true, "{revision}");
        client.close().await.unwrap();
    }
}

#[test]
fn registration_refuses_bad_extensions() {
    let build = |extensions: Vec<Extension>| {
        let mut builder = Server::builder("x", "1");
        for extension in extensions {
            builder = builder.extension(extension);
        }
        builder.build().map(|_| ())
    };
    assert!(matches!(
        build(vec![Extension::new("no-slash")]),
        Err(RegistrationError::InvalidSetting { .. })
    ));
    assert!(matches!(
        build(vec![Extension::new("a.b/c"), Extension::new("a.b/c")]),
        Err(RegistrationError::Duplicate {
            kind: "extension",
            ..
        })
    ));
    assert!(matches!(
        build(vec![Extension::new("a.b/c").settings(json!([1]))]),
        Err(RegistrationError::InvalidSetting { .. })
    ));
    assert!(matches!(
        build(vec![Extension::new("a.b/c").method("tools/list", reset)]),
        Err(RegistrationError::InvalidSetting { .. })
    ));
    assert!(matches!(
        build(vec![
            Extension::new("a.b/c").method("a.b/c/go", reset),
            Extension::new("a.b/d").method("a.b/c/go", reset),
        ]),
        Err(RegistrationError::Duplicate {
            kind: "extension method",
            ..
        })
    ));
    assert!(build(vec![Extension::new("a.b/c").method("a.b/c/go", reset)]).is_ok());
}
