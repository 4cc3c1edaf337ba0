"""Interop peer: an official Python SDK server (MCPServer) on stdio, with the tools the peer
clients call (`test_simple_text`, and `test_elicitation`, which asks through elicitation the
way every revision allows: an `elicitation/create` request on 2025 revisions and an
InputRequiredResult on 2026-07-28). For the `mcp proxy --stdio` rows of docs/gateway.md:

    mcp proxy --stdio "python py-stdio-server.py" --addr 127.0.0.1:0

then the peer clients (py-client.py, ts-v2-client.mjs) against the proxy's URL.
"""
from typing import Annotated

from pydantic import BaseModel
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Elicit, MCPServer, Resolve

server = MCPServer("interop-py-stdio")


class Identity(BaseModel):
    username: str = ""
    email: str = ""


def ask() -> Elicit[Identity]:
    return Elicit("Proceed?", Identity)


@server.tool()
def test_simple_text() -> str:
    """A fixed text."""
    return "This is a simple text response for testing."


@server.tool()
def test_elicitation(message: str, answer: Annotated[ElicitationResult[Identity], Resolve(ask)]) -> str:
    """Asks the user."""
    return f"User response: action={answer.action}"


if __name__ == "__main__":
    server.run("stdio")
