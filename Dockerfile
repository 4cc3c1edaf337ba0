# The demo server, mcp-demo, as a container image: the worker of docs/deploy/compose.yaml.
#
#   docker build -t mcp-demo .
#   docker run --rm -p 8080:8080 mcp-demo
#
# Built with the everymcp-demo package's default features: every hub (memory, Redis,
# PostgreSQL, SQLite), the logging (RUST_LOG, --log-format json) and --metrics.
# mcp-demo/tests/it/deploy_example.rs checks this file against the workspace (package, binary,
# rust-version) and that compose.yaml builds it.

# The workspace's rust-version (Cargo.toml).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --locked --release -p everymcp-demo --bin mcp-demo

FROM debian:bookworm-slim
RUN useradd --system --no-create-home --uid 10001 mcp
COPY --from=build /src/target/release/mcp-demo /usr/local/bin/mcp-demo
USER mcp
EXPOSE 8080
# Listens on every interface of the container; behind a load balancer, give the workers the
# address clients use (--public-url) and a shared hub (--hub), as compose.yaml does.
CMD ["mcp-demo", "--addr", "0.0.0.0:8080"]
