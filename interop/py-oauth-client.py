"""Interop peer: the official Python SDK client completes OAuth against our server.

usage: python py-oauth-client.py <url> <streamable|sse> <mode>

Runs against `mcp-demo --auth --auth-auto-approve` (our resource server and development
authorization server) with the SDK's own `OAuthClientProvider` (an httpx2 auth flow). Its browser
fetches the authorization URL without following the redirect and hands the redirect's `code`,
`state` and `iss` to the SDK. `mode` is the SDK's `mode=` as in py-client.py. Steps: connect (401),
discovery, dynamic registration, PKCE authorization, token, list tools, call `add` (needs
mcp:read), call `deploy` (needs mcp:deploy: 403 insufficient_scope, step-up, then its confirmation
is accepted). Prints one JSON line {ok, revision, detail}; exit status 0 when every step behaved.
"""

import asyncio
import json
import re
import sys
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import Client, types
from mcp.client.auth import OAuthClientProvider
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URL = "http://127.0.0.1/callback"

exchanges: list[str] = []
authorizations: list[str] = []
revision = "unknown"


class MemoryStorage:
    """Tokens and client information, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class HeadlessBrowser:
    """Asks the authorization endpoint (auto-approve) and keeps the redirect's query."""

    def __init__(self) -> None:
        self.pending: AuthorizationCodeResult | None = None

    async def redirect(self, url: str) -> None:
        query = parse_qs(urlparse(url).query)
        authorizations.append(query.get("scope", [""])[0])
        for name in ("code_challenge", "resource"):
            if not query.get(name):
                raise RuntimeError(f"authorization request without {name}: {url}")
        if query.get("code_challenge_method") != ["S256"]:
            raise RuntimeError(f"authorization request without S256 PKCE: {url}")
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            response = await http.get(url)
        exchanges.append(f"GET {urlparse(url).path} {response.status_code}")
        location = response.headers.get("location")
        if not 300 <= response.status_code < 400 or not location:
            raise RuntimeError(f"the authorization endpoint answered {response.status_code}: {response.text}")
        back = urlparse(location)
        if f"{back.scheme}://{back.netloc}{back.path}" != REDIRECT_URL:
            raise RuntimeError(f"redirected to {location}")
        params = parse_qs(back.query)
        if not params.get("code"):
            raise RuntimeError(f"no code in {location}")
        self.pending = AuthorizationCodeResult(
            code=params["code"][0],
            state=params.get("state", [None])[0],
            iss=params.get("iss", [None])[0],
        )

    async def callback(self) -> AuthorizationCodeResult:
        pending, self.pending = self.pending, None
        if pending is None:
            raise RuntimeError("no authorization redirect is pending")
        return pending


async def record(response: httpx2.Response) -> None:
    exchanges.append(f"{response.request.method} {response.request.url.path} {response.status_code}")


def check_flow() -> str | None:
    """What the exchanges and authorizations lack, if anything."""
    expected = [
        (r"^(GET|POST) /(mcp|sse)\S* 401$", "a 401 from the MCP endpoint"),
        (r"^GET /\.well-known/oauth-protected-resource\S* 200$", "protected resource metadata"),
        (r"^GET /\.well-known/(oauth-authorization-server|openid-configuration)\S* 200$", "authorization server metadata"),
        (r"^POST /register 201$", "dynamic client registration"),
        (r"^GET /authorize 30\d$", "an authorization redirect"),
        (r"^POST /token 200$", "a token"),
        (r"^POST /\S* 403$", "a 403 insufficient_scope"),
    ]
    missing = [what for pattern, what in expected if not any(re.match(pattern, e) for e in exchanges)]
    if missing:
        return "missing from the exchanges: " + ", ".join(missing)
    first, later = (authorizations[0].split() if authorizations else []), [s.split() for s in authorizations[1:]]
    if "mcp:read" not in first or not any({"mcp:read", "mcp:deploy"} <= set(s) for s in later):
        return f"scopes requested {authorizations}: expected mcp:read, then a step-up with mcp:read and mcp:deploy"
    return None


async def main() -> tuple[bool, str]:
    global revision
    url, transport, mode = sys.argv[1:4]
    browser = HeadlessBrowser()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="interop-py-oauth",
            redirect_uris=[REDIRECT_URL],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=MemoryStorage(),
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
    )

    async def elicit(context, params):
        return types.ElicitResult(action="accept", content={})

    def http_client(headers=None, timeout=None, auth=None):
        http = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
        http.event_hooks = {"response": [record]}
        return http

    if transport == "sse":
        server = sse_client(url, httpx_client_factory=http_client, auth=provider)
    else:
        server = streamable_http_client(url, http_client=http_client(auth=provider))
    async with Client(server, mode=mode, elicitation_callback=elicit) as client:
        revision = client.protocol_version
        tools = [tool.name for tool in (await client.list_tools()).tools]
        for name in ("add", "deploy"):
            if name not in tools:
                return False, f"no tool {name} in {tools}"
        total = await client.call_tool("add", {"a": 2, "b": 3})
        if total.is_error or "5" not in json.dumps([c.model_dump() for c in total.content]):
            return False, f"add: {total}"
        deployed = await client.call_tool("deploy", {"service": "web"})
        said = deployed.content[0].text if deployed.content else ""
        if deployed.is_error or said != "deployed web":
            return False, f"deploy: {deployed}"
    wrong = check_flow()
    if wrong:
        return False, f"{wrong}; exchanges: {', '.join(exchanges)}"
    scopes = ", then ".join(f'"{s}"' for s in authorizations)
    return True, f"add and deploy answered after {len(authorizations)} authorizations (scopes {scopes})"


if __name__ == "__main__":
    try:
        ok, detail = asyncio.run(main())
    except BaseException as error:  # noqa: BLE001 - any failure is a failed cell
        ok, detail = False, f"{error!r}; exchanges: {', '.join(exchanges)}"
    print(json.dumps({"ok": ok, "revision": revision, "detail": detail}))
    sys.exit(0 if ok else 1)
