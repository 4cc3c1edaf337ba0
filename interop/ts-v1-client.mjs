// Interop peer: the TypeScript SDK v1 client against one of our servers.
// usage: node ts-v1-client.mjs <url> <streamable|sse> <accept|decline|none> [protocol-version]
// `none` skips the elicitation step (revisions before 2025-06-18 have no elicitation); a protocol
// version, when given, is the one offered at initialize instead of the SDK's latest.
// Prints one JSON line {ok, revision, detail}; exit status 0 when every step behaved.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, transportKind, answer, offer] = process.argv.slice(2);

function report(ok, revision, detail) {
  console.log(JSON.stringify({ ok, revision, detail }));
  process.exit(ok ? 0 : 1);
}

try {
  const client = new Client(
    { name: 'interop-ts-v1', version: '1.0.0' },
    { capabilities: { elicitation: {} } }
  );
  client.setRequestHandler(ElicitRequestSchema, async () =>
    answer === 'accept'
      ? { action: 'accept', content: { username: 'interop', email: 'interop@example.com' } }
      : { action: 'decline' }
  );
  const transport =
    transportKind === 'sse'
      ? new SSEClientTransport(new URL(url))
      : new StreamableHTTPClientTransport(new URL(url));
  if (offer) {
    // The SDK always offers its latest version; offer the requested one instead.
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (message.method === 'initialize') {
        message = { ...message, params: { ...message.params, protocolVersion: offer } };
      }
      return send(message, options);
    };
  }
  await client.connect(transport);
  const revision = transport.protocolVersion ?? transport._protocolVersion ?? 'negotiated at initialize';

  const tools = (await client.listTools()).tools.map((t) => t.name);
  for (const name of answer === 'none' ? ['test_simple_text'] : ['test_simple_text', 'test_elicitation']) {
    if (!tools.includes(name)) report(false, revision, `no tool ${name}`);
  }
  const text = await client.callTool({ name: 'test_simple_text', arguments: {} });
  if (text.content?.[0]?.text !== 'This is a simple text response for testing.') {
    report(false, revision, `unexpected test_simple_text result ${JSON.stringify(text)}`);
  }
  if (answer === 'none') {
    await client.close();
    report(true, revision, 'test_simple_text answered');
  }
  const asked = await client.callTool({
    name: 'test_elicitation',
    arguments: { message: 'Proceed?' }
  });
  const said = asked.content?.[0]?.text ?? '';
  if (!said.includes(`action=${answer}`)) {
    report(false, revision, `the server did not see the ${answer}: ${said}`);
  }
  await client.close();
  report(true, revision, said);
} catch (error) {
  report(false, 'unknown', String(error?.stack ?? error));
}
