// Interop peer: a TypeScript SDK v1 server protected by the SDK's own OAuth support, acting as
// resource server and authorization server on one address: `mcpAuthRouter` (metadata, dynamic
// registration, /authorize, /token) over an in-memory provider written here that approves every
// request at once (no user), and `requireBearerAuth` in front of Streamable HTTP (/mcp) and
// HTTP+SSE (/sse + /messages). Prints `listening on http://127.0.0.1:PORT` once ready.
// Tools: `echo` (returns its text). Every token needs the scope `mcp:read`.
import http from 'node:http';
import { randomUUID, randomBytes } from 'node:crypto';
import express from 'express';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import {
  mcpAuthRouter,
  getOAuthProtectedResourceMetadataUrl
} from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';

const SCOPE = 'mcp:read';
const secret = () => randomBytes(32).toString('base64url');

// Clients, codes and tokens in memory; every authorization is approved at once.
class ApprovingProvider {
  constructor() {
    this.clients = new Map();
    this.codes = new Map();
    this.tokens = new Map();
    this.refreshTokens = new Map();
    const clients = this.clients;
    this.clientsStore = {
      getClient: (id) => clients.get(id),
      registerClient: (client) => {
        const full = { ...client, client_id: randomUUID(), client_id_issued_at: Math.floor(Date.now() / 1000) };
        clients.set(full.client_id, full);
        return full;
      }
    };
  }

  async authorize(client, params, res) {
    const code = secret();
    this.codes.set(code, { client, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    res.redirect(target.toString());
  }

  async challengeForAuthorizationCode(client, code) {
    const entry = this.codes.get(code);
    if (!entry || entry.client.client_id !== client.client_id) throw new Error('unknown code');
    return entry.params.codeChallenge;
  }

  issue(clientId, scopes, resource) {
    const access = secret();
    const refresh = secret();
    const expiresAt = Math.floor(Date.now() / 1000) + 3600;
    this.tokens.set(access, { token: access, clientId, scopes, expiresAt, resource });
    this.refreshTokens.set(refresh, { clientId, scopes, resource });
    return { access_token: access, token_type: 'bearer', expires_in: 3600, scope: scopes.join(' '), refresh_token: refresh };
  }

  async exchangeAuthorizationCode(client, code) {
    const entry = this.codes.get(code);
    if (!entry || entry.client.client_id !== client.client_id) throw new Error('unknown code');
    this.codes.delete(code);
    const scopes = entry.params.scopes && entry.params.scopes.length ? entry.params.scopes : [SCOPE];
    return this.issue(client.client_id, scopes, entry.params.resource);
  }

  async exchangeRefreshToken(client, refreshToken, scopes) {
    const entry = this.refreshTokens.get(refreshToken);
    if (!entry || entry.clientId !== client.client_id) throw new Error('unknown refresh token');
    this.refreshTokens.delete(refreshToken);
    return this.issue(client.client_id, scopes && scopes.length ? scopes : entry.scopes, entry.resource);
  }

  async verifyAccessToken(token) {
    const info = this.tokens.get(token);
    if (!info || info.expiresAt < Date.now() / 1000) {
      const { InvalidTokenError } = await import('@modelcontextprotocol/sdk/server/auth/errors.js');
      throw new InvalidTokenError('unknown or expired token');
    }
    return info;
  }
}

function makeServer() {
  const server = new McpServer({ name: 'interop-ts-v1-oauth-server', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Returns its text.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] })
  );
  return server;
}

const httpServer = http.createServer();
httpServer.listen(0, '127.0.0.1', () => {
  const base = `http://127.0.0.1:${httpServer.address().port}`;
  const resource = new URL(`${base}/mcp`);
  const provider = new ApprovingProvider();
  const app = express();
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: new URL(base),
      scopesSupported: [SCOPE],
      resourceServerUrl: resource,
      resourceName: 'interop-ts-v1-oauth-server'
    })
  );
  const bearer = requireBearerAuth({
    verifier: provider,
    requiredScopes: [SCOPE],
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resource)
  });
  const streams = {};
  const sse = {};
  app.all('/mcp', bearer, express.json(), async (req, res) => {
    try {
      const id = req.headers['mcp-session-id'];
      let transport = id ? streams[id] : undefined;
      if (!transport && req.method === 'POST' && isInitializeRequest(req.body)) {
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => {
            streams[sid] = transport;
          }
        });
        await makeServer().connect(transport);
      }
      if (!transport) {
        res.status(400).json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no session' } });
        return;
      }
      await transport.handleRequest(req, res, req.body);
    } catch (error) {
      if (!res.headersSent) res.status(500).end(String(error));
    }
  });
  app.get('/sse', bearer, async (req, res) => {
    const transport = new SSEServerTransport('/messages', res);
    sse[transport.sessionId] = transport;
    res.on('close', () => delete sse[transport.sessionId]);
    await makeServer().connect(transport);
  });
  app.post('/messages', bearer, async (req, res) => {
    const transport = sse[req.query.sessionId];
    if (!transport) {
      res.status(404).end();
      return;
    }
    await transport.handlePostMessage(req, res);
  });
  httpServer.on('request', app);
  console.log(`listening on ${base}`);
});
