// Interop peer: the TypeScript SDK v2 client against one of our servers.
// usage: node ts-v2-client.mjs <url> <streamable|sse> <accept|decline|none> <legacy|auto|VERSION>
// The last argument is the SDK's `versionNegotiation.mode` (`legacy` is its default; a version
// pins it). `none` skips the elicitation step. Prints one JSON line {ok, revision, detail};
// exit status 0 when every step behaved.
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, transportKind, answer, mode] = process.argv.slice(2);

function report(ok, revision, detail) {
  console.log(JSON.stringify({ ok, revision, detail }));
  process.exit(ok ? 0 : 1);
}

try {
  const negotiation = mode === 'legacy' || mode === 'auto' ? { mode } : { mode: { pin: mode } };
  const client = new Client(
    { name: 'interop-ts-v2', version: '1.0.0' },
    { capabilities: { elicitation: {} }, versionNegotiation: negotiation }
  );
  client.setRequestHandler('elicitation/create', async () =>
    answer === 'accept'
      ? { action: 'accept', content: { username: 'interop', email: 'interop@example.com' } }
      : { action: 'decline' }
  );
  const transport =
    transportKind === 'sse'
      ? new SSEClientTransport(new URL(url))
      : new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  const revision = client.getNegotiatedProtocolVersion() ?? 'unknown';

  const tools = (await client.listTools()).tools.map((t) => t.name);
  if (!tools.includes('test_simple_text')) report(false, revision, `no test_simple_text in ${tools}`);
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
