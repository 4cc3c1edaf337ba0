//! Declarations are checked when the server is built, with clear errors.

use mcp_server::{
    NoArgs, Prompt, RegistrationError, Resource, ResourceRequest, ResourceTemplate, Server,
    ServerBuilder, Tool,
};
use schemars::JsonSchema;
use serde::Deserialize;

async fn plain(_: NoArgs) -> String {
    String::new()
}

async fn text(_: ResourceRequest) -> String {
    String::new()
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only the derived schema matters here
struct Region {
    region: String,
    count: f64,
    nested: Nested,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only the derived schema matters here
struct Nested {
    zone: String,
}

async fn regional(_: Region) -> String {
    String::new()
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only the derived schema matters here
struct Annotated {
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    #[schemars(extend("x-mcp-header" = "region"))]
    other: String,
}

async fn annotated(_: Annotated) -> String {
    String::new()
}

async fn scalar(_: String) -> String {
    String::new()
}

async fn scalar_prompt(_: String) -> String {
    String::new()
}

fn builder() -> ServerBuilder {
    Server::builder("s", "1")
}

#[test]
fn refusals_name_the_problem() {
    type Case = (&'static str, ServerBuilder, fn(&RegistrationError) -> bool);
    let cases: Vec<Case> = vec![
        (
            "duplicate tool",
            builder()
                .tool(Tool::new("a", plain))
                .tool(Tool::new("a", plain)),
            |e| matches!(e, RegistrationError::Duplicate { kind: "tool", name } if name == "a"),
        ),
        (
            "empty tool name",
            builder().tool(Tool::new("", plain)),
            |e| matches!(e, RegistrationError::InvalidToolName { .. }),
        ),
        (
            "space in tool name",
            builder().tool(Tool::new("a b", plain)),
            |e| matches!(e, RegistrationError::InvalidToolName { .. }),
        ),
        (
            "long tool name",
            builder().tool(Tool::new("x".repeat(129), plain)),
            |e| matches!(e, RegistrationError::InvalidToolName { .. }),
        ),
        (
            "header on a number",
            builder().tool(Tool::new("r", regional).header("count", "Count")),
            |e| matches!(e, RegistrationError::InvalidHeader { .. }),
        ),
        (
            "header on a missing argument",
            builder().tool(Tool::new("r", regional).header("nope", "Nope")),
            |e| matches!(e, RegistrationError::InvalidHeader { .. }),
        ),
        (
            "header behind a $ref",
            builder().tool(Tool::new("r", regional).header("nested.zone", "Zone")),
            |e| matches!(e, RegistrationError::InvalidHeader { .. }),
        ),
        (
            "header that is not a token",
            builder().tool(Tool::new("r", regional).header("region", "Re gion")),
            |e| matches!(e, RegistrationError::InvalidHeader { .. }),
        ),
        (
            "headers equal ignoring case",
            builder().tool(Tool::new("a", annotated)),
            |e| matches!(e, RegistrationError::InvalidHeader { .. }),
        ),
        (
            "arguments that are not an object",
            builder().tool(Tool::new("s", scalar)),
            |e| matches!(e, RegistrationError::Schema { kind: "tool", .. }),
        ),
        (
            "prompt arguments that are not a struct",
            builder().prompt(Prompt::new("p", scalar_prompt)),
            |e| matches!(e, RegistrationError::Schema { kind: "prompt", .. }),
        ),
        (
            "duplicate prompt",
            builder()
                .prompt(Prompt::new("p", |_: NoArgs| async { String::new() }))
                .prompt(Prompt::new("p", |_: NoArgs| async { String::new() })),
            |e| matches!(e, RegistrationError::Duplicate { kind: "prompt", .. }),
        ),
        (
            "duplicate resource",
            builder()
                .resource(Resource::new("a://b", "b", text))
                .resource(Resource::new("a://b", "c", text)),
            |e| {
                matches!(
                    e,
                    RegistrationError::Duplicate {
                        kind: "resource",
                        ..
                    }
                )
            },
        ),
        (
            "resource without a scheme",
            builder().resource(Resource::new("nothing", "n", text)),
            |e| matches!(e, RegistrationError::InvalidUri { .. }),
        ),
        (
            "template beyond level 1",
            builder().resource_template(ResourceTemplate::new("a://{+path}", "p", text)),
            |e| matches!(e, RegistrationError::InvalidUri { .. }),
        ),
        (
            "duplicate template",
            builder()
                .resource_template(ResourceTemplate::new("a://{x}", "x", text))
                .resource_template(ResourceTemplate::new("a://{x}", "y", text)),
            |e| {
                matches!(
                    e,
                    RegistrationError::Duplicate {
                        kind: "resource template",
                        ..
                    }
                )
            },
        ),
        ("zero page size", builder().page_size(0), |e| {
            matches!(e, RegistrationError::InvalidSetting { .. })
        }),
    ];
    for (name, builder, expected) in cases {
        let error = builder.build().expect_err(name);
        assert!(expected(&error), "{name}: {error}");
        assert!(!error.to_string().is_empty());
    }
}

#[test]
fn valid_declarations_build_and_headers_land_in_the_schema() {
    let server = builder()
        .tool(Tool::new("r", regional).header("region", "Region"))
        .tool(Tool::new("x.y-z_1", plain))
        .resource(Resource::new("a://b", "b", text))
        .resource_template(ResourceTemplate::new("a://items/{id}", "item", text))
        .build();
    assert!(server.is_ok(), "{server:?}");
}
