"""Interop peer: an aiohttp-tiny-mcp server (the Python reference system). Streamable HTTP at
/mcp (every revision it speaks: 2024-11-05 to 2026-07-28) and HTTP+SSE at /sse with /messages,
in one aiohttp application.

Prints `listening on http://127.0.0.1:PORT` once the socket is bound, then serves until killed.
Tools: `echo` (returns its text) and `confirm` (asks the user through elicitation by whatever
mechanism the revision has: an InputRequiredResult on 2026-07-28, a pushed
`elicitation/create` on 2025-11-25 and 2025-06-18, the package's `mcpAnswers`/`mcpState`
arguments on 2025-03-26 and 2024-11-05; then reports the action the client chose).
"""

import asyncio
import logging
import socket

from aiohttp import web
from pydantic import BaseModel

from aiohttp_tiny_mcp import Endpoint, Exchange, Registry, SseEndpoint, elicit


class EchoArgs(BaseModel):
    text: str


class NoArgs(BaseModel):
    pass


CONFIRMATION = {
    "type": "object",
    "properties": {"ok": {"type": "boolean", "description": "Go ahead", "default": True}},
}


def build_app() -> web.Application:
    registry = Registry("interop-tiny-server", "0.5.8")

    async def echo(args: EchoArgs) -> str:
        """Returns its text."""
        return args.text

    async def confirm(args: NoArgs, ex: Exchange) -> str:
        """Asks the user to confirm and reports what they chose."""
        answer = await ex.ask("confirm", elicit("Proceed?", CONFIRMATION))
        return f"action={answer.action.value}"

    registry.tool(echo, name="echo")
    registry.tool(confirm, name="confirm")
    app = web.Application()
    Endpoint(registry).setup(app, "/mcp")
    SseEndpoint(registry).setup(app, "/sse", "/messages")
    return app


async def serve(sock: socket.socket) -> None:
    runner = web.AppRunner(build_app(), access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    asyncio.run(serve(sock))
