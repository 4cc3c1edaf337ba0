// Interop peer: a TypeScript SDK v1 server for our client, on Streamable HTTP (/mcp) and
// HTTP+SSE (/sse + /messages). Prints `listening on http://127.0.0.1:PORT` once ready.
// Tools: `echo` (returns its text) and `confirm` (asks the user through elicitation and reports
// the action the client chose).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

function makeServer() {
  const server = new McpServer({ name: 'interop-ts-v1-server', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Returns its text.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] })
  );
  server.registerTool(
    'confirm',
    { description: 'Asks the user to confirm.', inputSchema: {} },
    async () => {
      const result = await server.server.elicitInput({
        message: 'Proceed?',
        requestedSchema: {
          type: 'object',
          properties: { ok: { type: 'boolean' } }
        }
      });
      return { content: [{ type: 'text', text: `action=${result.action}` }] };
    }
  );
  return server;
}

const streams = {};
const sse = {};

async function readJson(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body ? JSON.parse(body) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname === '/mcp') {
      const sessionId = req.headers['mcp-session-id'];
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      let transport = sessionId ? streams[sessionId] : undefined;
      if (!transport && req.method === 'POST' && isInitializeRequest(body)) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => {
            streams[id] = transport;
          }
        });
        await makeServer().connect(transport);
      }
      if (!transport) {
        res.writeHead(400, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no session' } }));
        return;
      }
      await transport.handleRequest(req, res, body);
    } else if (url.pathname === '/sse' && req.method === 'GET') {
      const transport = new SSEServerTransport('/messages', res);
      sse[transport.sessionId] = transport;
      res.on('close', () => delete sse[transport.sessionId]);
      await makeServer().connect(transport);
    } else if (url.pathname === '/messages' && req.method === 'POST') {
      const transport = sse[url.searchParams.get('sessionId')];
      if (!transport) {
        res.writeHead(404).end();
        return;
      }
      await transport.handlePostMessage(req, res);
    } else {
      res.writeHead(404).end();
    }
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
});

httpServer.listen(0, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${httpServer.address().port}`);
});
