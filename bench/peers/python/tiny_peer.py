"""The Python reference peer of `cargo xtask bench`: aiohttp-tiny-mcp with an `add` tool.

Serves Streamable HTTP at /mcp (2025-03-26 to 2026-07-28) and the 2024-11-05 HTTP+SSE transport
at /sse (GET) and /messages (POST). Every logger is set to ERROR and the access log is off.

Usage: python tiny_peer.py --port <port>
"""

import argparse
import logging

from aiohttp import web
from pydantic import BaseModel

from aiohttp_tiny_mcp import Endpoint, Registry, SseEndpoint


class AddArgs(BaseModel):
    a: int
    b: int


class AddResult(BaseModel):
    sum: int


def build_app() -> web.Application:
    registry = Registry("tiny-peer", "0.0.0")

    async def add(args: AddArgs) -> AddResult:
        """Add two integers."""
        return AddResult(sum=args.a + args.b)

    registry.tool(add, name="add")
    app = web.Application()
    Endpoint(registry).setup(app, "/mcp")
    SseEndpoint(registry, compress=False).setup(app, "/sse", "/messages")
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)
    web.run_app(
        build_app(),
        host="127.0.0.1",
        port=args.port,
        access_log=None,
        print=None,
    )


if __name__ == "__main__":
    main()
