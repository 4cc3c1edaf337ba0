// Interop peer: a TypeScript SDK v2 server for our client: `createMcpHandler` (2026-07-28 per
// request, and the SDK's stateless fallback for 2025-era traffic) on node:http at /mcp.
// Prints `listening on http://127.0.0.1:PORT` once ready.
// Tools: `echo` (returns its text) and `confirm` (asks through an input_required result on
// 2026-07-28 and reports the action the client chose).
import http from 'node:http';
import { McpServer, createMcpHandler, fromJsonSchema, inputRequired } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';

function factory() {
  const server = new McpServer({ name: 'interop-ts-v2-server', version: '1.0.0' });
  server.registerTool(
    'echo',
    {
      description: 'Returns its text.',
      inputSchema: fromJsonSchema({
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text']
      })
    },
    async ({ text }) => ({ content: [{ type: 'text', text }] })
  );
  server.registerTool(
    'confirm',
    {
      description: 'Asks the user to confirm.',
      inputSchema: fromJsonSchema({ type: 'object', properties: {} })
    },
    async (_args, ctx) => {
      const response = ctx.mcpReq.inputResponses?.confirm;
      if (response) {
        return { content: [{ type: 'text', text: `action=${response.action}` }] };
      }
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: 'Proceed?',
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } }
          })
        }
      });
    }
  );
  return server;
}

const handler = toNodeHandler(createMcpHandler(factory));
const httpServer = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://localhost');
  if (url.pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  try {
    await handler(req, res);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
});

httpServer.listen(0, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${httpServer.address().port}`);
});
