// Interop peer: the TypeScript SDK v1 client completes OAuth against `mcp-demo --auth
// --auth-auto-approve` (our resource server and development authorization server) with the SDK's
// own `OAuthClientProvider` support, then calls protected tools.
// usage: node ts-v1-oauth-client.mjs <url> <protocol-version> <read|step-up>
// The version is the one offered at initialize instead of the SDK's latest, as in
// ts-v1-client.mjs. Steps: connect (401), discovery, dynamic registration, PKCE authorization,
// token, list tools, call `add` (needs mcp:read); with `step-up` also call `deploy` (needs
// mcp:deploy: 403 insufficient_scope, step-up, then its confirmation is accepted). The two legs
// are separate because this SDK's step-up refreshes instead of re-authorizing when it holds a
// refresh token (see docs/interop.md). Prints one JSON line {ok, revision, detail}; exit status 0
// when every step behaved.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { HeadlessOAuthProvider, checkFlow, exchanges, recordingFetch, withAuthorization } from './oauth-common.mjs';

const [url, offer, leg] = process.argv.slice(2);
const stepUp = leg === 'step-up';
let revision = 'unknown';

function report(ok, detail) {
  console.log(JSON.stringify({ ok, revision, detail }));
  process.exit(ok ? 0 : 1);
}

try {
  const provider = new HeadlessOAuthProvider('interop-ts-v1-oauth');
  const client = new Client({ name: 'interop-ts-v1-oauth', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: {} }));
  let transport;
  const connect = async () => {
    transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: recordingFetch });
    // The SDK always offers its latest version; offer the requested one instead.
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (message.method === 'initialize') {
        message = { ...message, params: { ...message.params, protocolVersion: offer } };
      }
      return send(message, options);
    };
    await client.connect(transport);
  };
  // v1's finishAuth takes the code alone.
  const finish = (callback) => transport.finishAuth(callback.get('code'));
  await withAuthorization(provider, connect, finish);
  revision = transport.protocolVersion ?? 'unknown';

  const tools = (await client.listTools()).tools.map((t) => t.name);
  for (const name of ['add', 'deploy']) {
    if (!tools.includes(name)) report(false, `no tool ${name} in ${tools}`);
  }
  const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
  if (sum.isError || !JSON.stringify(sum.content).includes('5')) report(false, `add: ${JSON.stringify(sum)}`);
  if (!stepUp) {
    const wrong = checkFlow(provider, false);
    if (wrong) report(false, `${wrong}; exchanges: ${exchanges.join(', ')}`);
    await client.close();
    report(true, `add answered after ${provider.authorizations.length} authorization (scope "${provider.authorizations[0]}")`);
  }
  const deployed = await withAuthorization(
    provider,
    () => client.callTool({ name: 'deploy', arguments: { service: 'web' } }),
    finish
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
