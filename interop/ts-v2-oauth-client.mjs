// Interop peer: the TypeScript SDK v2 client completes OAuth against `mcp-demo --auth
// --auth-auto-approve` (our resource server and development authorization server) with the SDK's
// own `OAuthClientProvider` support, then calls protected tools.
// usage: node ts-v2-oauth-client.mjs <url> <streamable|sse> <legacy|auto|VERSION>
// The last argument is the SDK's `versionNegotiation.mode`, as in ts-v2-client.mjs.
// Steps: connect (401), discovery, dynamic registration, PKCE authorization, token, list tools,
// call `add` (needs mcp:read), call `deploy` (needs mcp:deploy: 403 insufficient_scope, step-up to
// mcp:read + mcp:deploy, then its confirmation is accepted). Prints one JSON line
// {ok, revision, detail}; exit status 0 when every step behaved.
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { HeadlessOAuthProvider, checkFlow, exchanges, recordingFetch, withAuthorization } from './oauth-common.mjs';

const [url, transportKind, mode] = process.argv.slice(2);
let revision = 'unknown';

function report(ok, detail) {
  console.log(JSON.stringify({ ok, revision, detail }));
  process.exit(ok ? 0 : 1);
}

try {
  const provider = new HeadlessOAuthProvider('interop-ts-v2-oauth');
  const negotiation = mode === 'legacy' || mode === 'auto' ? { mode } : { mode: { pin: mode } };
  const client = new Client(
    { name: 'interop-ts-v2-oauth', version: '1.0.0' },
    { capabilities: { elicitation: {} }, versionNegotiation: negotiation }
  );
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: {} }));
  let transport;
  const connect = async () => {
    const options = { authProvider: provider, fetch: recordingFetch };
    transport =
      transportKind === 'sse'
        ? new SSEClientTransport(new URL(url), options)
        : new StreamableHTTPClientTransport(new URL(url), options);
    await client.connect(transport);
  };
  // The redirect's query (code, state, iss) goes to finishAuth, which checks `iss` (RFC 9207).
  await withAuthorization(provider, connect, (callback) => transport.finishAuth(callback));
  revision = client.getNegotiatedProtocolVersion() ?? 'unknown';

  const tools = (await client.listTools()).tools.map((t) => t.name);
  for (const name of ['add', 'deploy']) {
    if (!tools.includes(name)) report(false, `no tool ${name} in ${tools}`);
  }
  const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
  if (sum.isError || !JSON.stringify(sum.content).includes('5')) report(false, `add: ${JSON.stringify(sum)}`);
  const deployed = await withAuthorization(
    provider,
    () => client.callTool({ name: 'deploy', arguments: { service: 'web' } }),
    (callback) => transport.finishAuth(callback)
  );
  const said = deployed.content?.[0]?.text ?? '';
  if (deployed.isError || said !== 'deployed web') report(false, `deploy: ${JSON.stringify(deployed)}`);
  const wrong = checkFlow(provider);
  if (wrong) report(false, `${wrong}; exchanges: ${exchanges.join(', ')}`);
  await client.close();
  report(true, `add and deploy answered after ${provider.authorizations.length} authorizations (scopes ${provider.authorizations.map((s) => `"${s}"`).join(', then ')})`);
} catch (error) {
  report(false, `${String(error?.stack ?? error)}; exchanges: ${exchanges.join(', ')}`);
}
