//! The README's library example is `examples/hello.rs` word for word (cargo builds the example
//! with the tests, so the README shows code that compiles).

#[test]
fn the_readme_shows_the_hello_example_verbatim() {
    let readme = include_str!("../../../README.md");
    let example = include_str!("../../examples/hello.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md's library example differs from mcp-server/examples/hello.rs"
    );
    assert!(
        example.lines().count() <= 30,
        "the README's example stays short"
    );
}
