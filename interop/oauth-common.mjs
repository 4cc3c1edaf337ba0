// Shared by the TypeScript OAuth interop peers (SDK v1 and v2, whose `OAuthClientProvider`
// interfaces agree on what is used here): an in-memory provider whose "browser" fetches the
// authorization URL from `mcp-demo --auth --auth-auto-approve` without following the redirect and
// keeps the redirect's query (`code`, `state`, `iss`) for `transport.finishAuth`, and a fetch
// wrapper that records every HTTP exchange so the script can show the steps it went through.

/** Where the authorization server sends the browser back; never listened on (read from Location). */
export const REDIRECT_URL = 'http://127.0.0.1/callback';

/** The HTTP exchanges seen, as `METHOD path status` strings, in order. */
export const exchanges = [];

/** A fetch that records each exchange in `exchanges`. */
export async function recordingFetch(input, init) {
  const response = await fetch(input, init);
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  exchanges.push(`${init?.method ?? 'GET'} ${url.pathname} ${response.status}`);
  return response;
}

/** An in-memory OAuth client: dynamic registration, PKCE, tokens, headless authorization. */
export class HeadlessOAuthProvider {
  constructor(clientName) {
    this._clientName = clientName;
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this._state = undefined;
    this._discovery = undefined;
    /** The scope of each authorization request, in order. */
    this.authorizations = [];
    /** The query of the last redirect back, not yet handed to `finishAuth`. */
    this.callback = undefined;
  }

  get redirectUrl() {
    return REDIRECT_URL;
  }

  get clientMetadata() {
    return {
      client_name: this._clientName,
      redirect_uris: [REDIRECT_URL],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none'
    };
  }

  state() {
    this._state = crypto.randomUUID();
    return this._state;
  }

  clientInformation() {
    return this._client;
  }

  saveClientInformation(info) {
    this._client = info;
  }

  tokens() {
    return this._tokens;
  }

  saveTokens(tokens) {
    this._tokens = tokens;
  }

  // What discovery found, kept across the authorization redirect (the TypeScript v2 SDK checks
  // with it that the callback comes from the authorization server it started with, SEP-2352).
  saveDiscoveryState(state) {
    this._discovery = state;
  }

  discoveryState() {
    return this._discovery;
  }

  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }

  codeVerifier() {
    if (!this._verifier) throw new Error('no PKCE code verifier saved');
    return this._verifier;
  }

  /** The browser: asks the authorization endpoint (auto-approve) and reads the redirect back. */
  async redirectToAuthorization(url) {
    const scope = url.searchParams.get('scope') ?? '';
    this.authorizations.push(scope);
    for (const name of ['code_challenge', 'resource']) {
      if (!url.searchParams.get(name)) throw new Error(`authorization request without ${name}: ${url}`);
    }
    if (url.searchParams.get('code_challenge_method') !== 'S256') {
      throw new Error(`authorization request without S256 PKCE: ${url}`);
    }
    const response = await fetch(url, { redirect: 'manual' });
    exchanges.push(`GET ${url.pathname} ${response.status}`);
    const location = response.headers.get('location');
    if (response.status < 300 || response.status > 399 || !location) {
      throw new Error(`the authorization endpoint answered ${response.status}, not a redirect: ${await response.text()}`);
    }
    const back = new URL(location);
    if (`${back.origin}${back.pathname}` !== REDIRECT_URL) throw new Error(`redirected to ${location}`);
    if (back.searchParams.get('state') !== this._state) throw new Error(`state mismatch in ${location}`);
    if (!back.searchParams.get('code')) throw new Error(`no code in ${location}`);
    this.callback = back.searchParams;
  }

  /** The pending redirect's query, once. */
  takeCallback() {
    const callback = this.callback;
    this.callback = undefined;
    if (!callback) throw new Error('no authorization redirect is pending');
    return callback;
  }
}

/**
 * Runs `step`; when it fails because the SDK started an authorization (a 401 or a 403
 * `insufficient_scope` it answered by redirecting the browser), finishes it with `finish` and
 * runs `step` again once.
 */
export async function withAuthorization(provider, step, finish) {
  try {
    return await step();
  } catch (error) {
    if (!provider.callback) throw error;
    await finish(provider.takeCallback());
    return await step();
  }
}

/**
 * The checks every OAuth peer makes once done: what the exchanges and authorizations show
 * (without `stepUp`, the flow up to the first token only).
 */
export function checkFlow(provider, stepUp = true) {
  const seen = (pattern) => exchanges.some((e) => pattern.test(e));
  const missing = [
    [/^(GET|POST) \/(mcp|sse)\S* 401$/, 'a 401 from the MCP endpoint'],
    [/^GET \/\.well-known\/oauth-protected-resource\S* 200$/, 'protected resource metadata'],
    [/^GET \/\.well-known\/(oauth-authorization-server|openid-configuration)\S* 200$/, 'authorization server metadata'],
    [/^POST \/register 201$/, 'dynamic client registration'],
    [/^GET \/authorize 30\d$/, 'an authorization redirect'],
    [/^POST \/token 200$/, 'a token'],
    [/^POST \/\S* 403$/, 'a 403 insufficient_scope']
  ]
    .filter(([, what]) => stepUp || !what.includes('403'))
    .filter(([pattern]) => !seen(pattern))
    .map(([, what]) => what);
  if (missing.length > 0) return `missing from the exchanges: ${missing.join(', ')}`;
  const [first, ...later] = provider.authorizations;
  const widened = later.some((s) => s.split(' ').includes('mcp:deploy') && s.split(' ').includes('mcp:read'));
  if (!first?.split(' ').includes('mcp:read') || (stepUp && !widened)) {
    return `scopes requested ${JSON.stringify(provider.authorizations)}: expected mcp:read, then a step-up with mcp:read and mcp:deploy`;
  }
  return undefined;
}
