"""Interop peer: an official Python SDK server (MCPServer): Streamable HTTP at /mcp (both eras)
and HTTP+SSE at /sse (with /messages/), in one Starlette application on uvicorn.

Prints `listening on http://127.0.0.1:PORT` once the socket is bound, then serves until killed.
Tools: `echo` (returns its text), `confirm` (asks the user through elicitation, as an
`elicitation/create` request on 2025 revisions and an InputRequiredResult on 2026-07-28, and
reports the action the client chose) and `trace_id` (the trace its handler runs in: the SDK's
OpenTelemetry middleware parents each request's span on the `_meta.traceparent` it carries).
"""

import socket
from typing import Annotated

import uvicorn
from pydantic import BaseModel
from starlette.applications import Starlette

from opentelemetry.trace import get_current_span

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Elicit, MCPServer, Resolve

server = MCPServer("interop-py-server")


class Confirmation(BaseModel):
    ok: bool = True


def ask_confirmation() -> Elicit[Confirmation]:
    return Elicit("Proceed?", Confirmation)


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


@server.tool()
def confirm(answer: Annotated[ElicitationResult[Confirmation], Resolve(ask_confirmation)]) -> str:
    """Asks the user to confirm and reports what they chose."""
    return f"action={answer.action}"


@server.tool()
def trace_id() -> str:
    """The trace id the handler runs in (32 hex digits), or `none`."""
    context = get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else "none"


if __name__ == "__main__":
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before uvicorn starts, so a client that connects at once waits in the backlog.
    sock.listen(128)
    port = sock.getsockname()[1]
    print(f"listening on http://127.0.0.1:{port}", flush=True)
    streamable = server.streamable_http_app()
    sse = server.sse_app()
    app = Starlette(
        routes=list(streamable.routes) + list(sse.routes),
        lifespan=streamable.router.lifespan_context,
    )
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
