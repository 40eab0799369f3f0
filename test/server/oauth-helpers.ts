/**
 * An app that signs in to `jarvis serve` the way ChatGPT's and Claude's connectors do: the MCP SDK's own OAuth client
 * (`auth()` with an `OAuthClientProvider`), keeping what it is given in memory. The consent is answered either
 * through the dashboard's API with a jarvis key (`consentWithKey`) or in a browser (oauth-e2e.test.ts).
 */
import {randomBytes} from 'node:crypto'

import {auth, type OAuthClientProvider} from '@modelcontextprotocol/sdk/client/auth.js'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens} from '@modelcontextprotocol/sdk/shared/auth.js'
import type {CallToolResult} from '@modelcontextprotocol/sdk/types.js'
import {expect} from 'vitest'

export class TestApp implements OAuthClientProvider {
  information?: OAuthClientInformationMixed
  saved?: OAuthTokens
  verifier = ''
  /** Where `auth()` last sent the person (the authorization request). */
  authorizationUrl?: URL
  /** Set: the app names itself by this address (a client ID metadata document) instead of registering. */
  clientMetadataUrl?: string

  constructor(
    readonly name = 'ChatGPT',
    readonly redirect = 'https://chatgpt.example.test/connector/oauth_callback',
    readonly authMethod: 'none' | 'client_secret_basic' | 'client_secret_post' = 'client_secret_basic',
  ) {}

  get redirectUrl(): string {
    return this.redirect
  }

  get clientMetadata(): OAuthClientMetadata {
    return {client_name: this.name, redirect_uris: [this.redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: this.authMethod}
  }

  clientInformation() {
    return this.information
  }

  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information
  }

  tokens() {
    return this.saved
  }

  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }

  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }

  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }

  codeVerifier() {
    return this.verifier
  }

  get accessToken(): string {
    if (!this.saved) throw new Error('the app has no token yet')
    return this.saved.access_token
  }
}

/**
 * A TestApp that sends a `state` with its authorization request and, like ChatGPT's connector, believes an answer
 * only when it comes back with that state from the issuer it asked (RFC 6749 §10.12, RFC 9207).
 */
export class StatefulApp extends TestApp {
  readonly sentState = `state-${randomBytes(8).toString('hex')}`

  state(): string {
    return this.sentState
  }

  /** What the app reads where it was sent back, or 'dropped' when it cannot believe the answer. */
  readBack(back: URL, issuer: string): {error: string | null; description: string | null; code: string | null} | 'dropped' {
    if (back.searchParams.get('state') !== this.sentState || back.searchParams.get('iss') !== issuer) return 'dropped'
    return {error: back.searchParams.get('error'), description: back.searchParams.get('error_description'), code: back.searchParams.get('code')}
  }
}

/** The id of the consent request the browser lands on after `/authorize` (`/#/consent/<id>`). */
export async function consentRequestOf(authorizationUrl: URL, fetchFn: typeof fetch): Promise<string> {
  const answer = await fetchFn(authorizationUrl, {redirect: 'manual'})
  const location = answer.headers.get('location') ?? ''
  await answer.text()
  const match = /^\/#\/consent\/(authz_[0-9a-f]+)$/.exec(location)
  if (!match) throw new Error(`/authorize answered ${answer.status} ${location}`)
  return match[1]
}

/** Answers a consent request with a jarvis key, as the consent page does; the address the browser goes back to. */
export async function consentWithKey(serverUrl: string, id: string, key: string, decision: {allow: boolean; agent?: string; role?: string}, fetchFn: typeof fetch): Promise<URL> {
  const answer = await fetchFn(`${serverUrl}/api/oauth/authorizations/${id}`, {method: 'POST', headers: {authorization: `Bearer ${key}`, 'content-type': 'application/json'}, body: JSON.stringify(decision)})
  const body = (await answer.json()) as {redirect?: string; message?: string}
  if (!answer.ok || body.redirect === undefined) throw new Error(`consent answered ${answer.status}: ${body.message}`)
  return new URL(body.redirect)
}

/**
 * The whole sign-in of `app` at `serverUrl`'s `/mcp` (resource metadata, registration, authorization, consent with
 * `key`, code exchange); the address the app was sent back to.
 */
export async function signIn(app: TestApp, serverUrl: string, key: string, decision: {agent?: string; role?: string}, fetchFn: typeof fetch): Promise<URL> {
  const mcp = `${serverUrl}/mcp`
  expect(await auth(app, {serverUrl: mcp, fetchFn})).toBe('REDIRECT')
  const back = await consentWithKey(serverUrl, await consentRequestOf(app.authorizationUrl!, fetchFn), key, {allow: true, ...decision}, fetchFn)
  expect(await auth(app, {serverUrl: mcp, authorizationCode: back.searchParams.get('code')!, fetchFn})).toBe('AUTHORIZED')
  return back
}

/** An MCP session of `app` on `/mcp` (the SDK client lists the tools, then validates every result). */
export async function appSession(app: TestApp, serverUrl: string, fetchFn: typeof fetch) {
  const client = new Client({name: app.name, version: '1.0.0'})
  await client.connect(new StreamableHTTPClientTransport(new URL(`${serverUrl}/mcp`), {authProvider: app, fetch: fetchFn}))
  await client.listTools()
  return {
    client,
    call: async (name: string, args: Record<string, unknown> = {}) => (await client.callTool({name, arguments: args})) as CallToolResult,
    close: () => client.close(),
  }
}

/** A POST to `/mcp` (an initialize) with `token`: the status and the `WWW-Authenticate` of the answer. */
export async function mcpStatus(serverUrl: string, token: string | null, fetchFn: typeof fetch): Promise<{status: number; challenge: string | null; message: string}> {
  const answer = await fetchFn(`${serverUrl}/mcp`, {
    method: 'POST',
    headers: {'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token === null ? {} : {authorization: `Bearer ${token}`})},
    body: JSON.stringify({jsonrpc: '2.0', id: 1, method: 'initialize', params: {protocolVersion: '2025-06-18', capabilities: {}, clientInfo: {name: 'probe', version: '1'}}}),
  })
  const text = await answer.text()
  let message = ''
  try {
    message = (JSON.parse(text) as {message?: string}).message ?? ''
  } catch {
    // an MCP answer
  }
  return {status: answer.status, challenge: answer.headers.get('www-authenticate'), message}
}

/** A form POST to the token endpoint: the status and the OAuth error of the answer. */
export async function tokenRequest(serverUrl: string, form: Record<string, string>, fetchFn: typeof fetch, headers: Record<string, string> = {}): Promise<{status: number; body: Record<string, string>}> {
  const answer = await fetchFn(`${serverUrl}/token`, {method: 'POST', headers: {'content-type': 'application/x-www-form-urlencoded', ...headers}, body: new URLSearchParams(form).toString()})
  return {status: answer.status, body: (await answer.json()) as Record<string, string>}
}
