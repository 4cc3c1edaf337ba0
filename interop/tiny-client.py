"""Interop peer: the aiohttp-tiny-mcp client (the Python reference system) against one of our
servers.

usage: python tiny-client.py <url> <streamable> <accept|decline|none> <revision>

The package's client speaks one revision, the one it is given (it does not negotiate), and only
Streamable HTTP (it has no HTTP+SSE client). It answers questions through `on_ask` whatever
mechanism the revision uses: MRTR on 2026-07-28, a pushed `elicitation/create` on 2025-11-25 and
2025-06-18. `none` skips the elicitation step. Prints one JSON line {ok, revision, detail}; exit
status 0 when every step behaved.
"""

import asyncio
import json
import sys

from aiohttp_tiny_mcp import AdapterSet, Client, elicit_accept, elicit_decline


def report(ok: bool, revision: str, detail: str) -> None:
    print(json.dumps({"ok": ok, "revision": revision, "detail": detail}))
    sys.exit(0 if ok else 1)


def text_of(result) -> str:
    content = getattr(result, "content", None) or []
    return getattr(content[0], "text", "") if content else ""


async def main() -> tuple[bool, str, str]:
    url, transport, answer, revision = sys.argv[1:5]
    if transport != "streamable":
        return False, revision, f"the aiohttp-tiny-mcp client has no {transport} transport"
    adapter = AdapterSet.default().by_version[revision]

    async def on_ask(request):
        if answer == "accept":
            return elicit_accept({"username": "interop", "email": "interop@example.com"})
        return elicit_decline()

    async with Client(url, adapter, on_ask=on_ask) as client:
        described = await client.initialize()
        # initialize echoes the revision; server/discover lists the ones the server speaks.
        spoken = described.get("protocolVersion") or (
            revision if revision in described.get("supportedVersions", []) else "?"
        )
        tools = [tool.name for tool in await client.list_tools()]
        if "test_simple_text" not in tools:
            return False, spoken, f"no test_simple_text in {tools}"
        said = text_of(await client.call_tool("test_simple_text", {}))
        if said != "This is a simple text response for testing.":
            return False, spoken, f"unexpected test_simple_text result {said!r}"
        if answer == "none":
            return True, spoken, "test_simple_text answered"
        said = text_of(await client.call_tool("test_elicitation", {"message": "Proceed?"}))
        if f"action={answer}" not in said:
            return False, spoken, f"the server did not see the {answer}: {said}"
        return True, spoken, said


if __name__ == "__main__":
    try:
        outcome = asyncio.run(main())
    except BaseException as error:  # noqa: BLE001 - any failure is a failed cell
        outcome = (False, "unknown", repr(error))
    report(*outcome)
