"""Interop peer: the official Python SDK client against one of our servers.

usage: python py-client.py <url> <streamable|sse> <accept|decline|none> <mode>

`mode` is the SDK's `mode=`: `auto` (its default: probe server/discover, fall back to
initialize), `legacy` (initialize), or a modern version such as `2026-07-28`. `none` skips the
elicitation step. Prints one JSON line {ok, revision, detail}; exit status 0 when every step
behaved.
"""

import asyncio
import json
import sys

from mcp import Client, types
from mcp.client.sse import sse_client


def report(ok: bool, revision: str, detail: str) -> None:
    print(json.dumps({"ok": ok, "revision": revision, "detail": detail}))
    sys.exit(0 if ok else 1)


async def main() -> tuple[bool, str, str]:
    url, transport, answer, mode = sys.argv[1:5]

    async def elicit(context, params):
        if answer == "accept":
            return types.ElicitResult(
                action="accept",
                content={"username": "interop", "email": "interop@example.com"},
            )
        return types.ElicitResult(action="decline")

    server = sse_client(url) if transport == "sse" else url
    async with Client(server, mode=mode, elicitation_callback=elicit) as client:
        revision = client.protocol_version
        tools = [tool.name for tool in (await client.list_tools()).tools]
        if "test_simple_text" not in tools:
            return False, revision, f"no test_simple_text in {tools}"
        text = await client.call_tool("test_simple_text", {})
        said = text.content[0].text if text.content else ""
        if said != "This is a simple text response for testing.":
            return False, revision, f"unexpected test_simple_text result {text}"
        if answer == "none":
            return True, revision, "test_simple_text answered"
        asked = await client.call_tool("test_elicitation", {"message": "Proceed?"})
        said = asked.content[0].text if asked.content else ""
        if f"action={answer}" not in said:
            return False, revision, f"the server did not see the {answer}: {said}"
        return True, revision, said


if __name__ == "__main__":
    try:
        outcome = asyncio.run(main())
    except BaseException as error:  # noqa: BLE001 - any failure is a failed cell
        outcome = (False, "unknown", repr(error))
    report(*outcome)
