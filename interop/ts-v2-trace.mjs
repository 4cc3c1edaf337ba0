// Interop peer: the TypeScript SDK v2 client sets `_meta.traceparent` on a call (it passes a
// request's `_meta` through, SEP-414) and our server's handler must see that trace.
// usage: node ts-v2-trace.mjs <url> <legacy|auto|VERSION>
// Prints one JSON line {ok, revision, detail}; exit status 0 when the trace arrived.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, mode] = process.argv.slice(2);
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

function report(ok, revision, detail) {
  console.log(JSON.stringify({ ok, revision, detail }));
  process.exit(ok ? 0 : 1);
}

try {
  const negotiation = mode === 'legacy' || mode === 'auto' ? { mode } : { mode: { pin: mode } };
  const client = new Client(
    { name: 'interop-ts-v2-trace', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: negotiation }
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const revision = client.getNegotiatedProtocolVersion() ?? 'unknown';
  const result = await client.callTool({
    name: 'test_trace_context',
    arguments: {},
    _meta: { traceparent: TRACEPARENT, tracestate: 'interop=1' }
  });
  const seen = result.content?.[0]?.text;
  await client.close();
  if (seen !== TRACE_ID) report(false, revision, `the handler saw trace ${seen}, not ${TRACE_ID}`);
  report(true, revision, `the handler saw trace ${seen}`);
} catch (error) {
  report(false, 'unknown', String(error?.stack ?? error));
}
