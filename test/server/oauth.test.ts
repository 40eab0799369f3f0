/**
 * Apps (ChatGPT, Claude) sign in to `jarvis serve` with OAuth, on both backends, over HTTPS with a CA made for the
 * run: the MCP SDK's own client discovers the server from a 401, registers, asks, and — once a person with a jarvis
 * key allowed it — works as the agent it was granted. Every refusal the issue names has its test here: a missing or
 * wrong PKCE verifier, a redirect URI not registered, a reused code, a token for another resource, an expired or
 * revoked token, a token of one workspace on another's memory; and a person grants no more than their key may.
 * (The consent page in a browser and two processes on one database: oauth-e2e.test.ts.)
 */
import {readFile} from 'node:fs/promises'
import type {ServerResponse} from 'node:http'
import {createServer as createHttpsServer, type Server as HttpsServer} from 'node:https'
import type {AddressInfo} from 'node:net'

import {auth} from '@modelcontextprotocol/sdk/client/auth.js'
import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {CallToolResult} from '@modelcontextprotocol/sdk/types.js'
import {Agent, WebSocket} from 'undici'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {TokenAuthenticator} from '../../src/server/auth.js'
import {createKey} from '../../src/server/keys.js'
import {guardedDocumentFetch, isPrivateAddress, redirectUriProblem} from '../../src/server/oauth/clients.js'
import {listGrants, revokeGrant} from '../../src/server/oauth/grants.js'
import {type RunningServer, startServer} from '../../src/server/start.js'
import type {StorageTarget} from '../../src/server/storage/open.js'
import {BACKENDS, freshTarget} from '../helpers/backends.js'
import {makeTestCa, type TestCa} from '../helpers/test-ca.js'
import {tokenMap, TOKENS} from '../helpers/world.js'
import {structured, textOf} from '../mcp/helpers.js'
import {appSession, consentRequestOf, consentWithKey, mcpStatus, signIn, StatefulApp, TestApp, tokenRequest} from './oauth-helpers.js'
import {Cleanup} from './temp.js'

const HOUR = 3_600_000
const ENDLESS_PATH = '/oauth/endless.json'
const ENDLESS_BYTES = 64 * 1024 * 1024

/** Streams a client metadata document of ENDLESS_BYTES, as fast as the reader takes it, with no length announced. */
function streamEndless(response: ServerResponse): {written: () => number; ended: Promise<void>} {
  let written = 0
  const ended = new Promise<void>((resolve) => response.once('close', () => resolve()))
  const chunk = Buffer.alloc(64 * 1024, 'a')
  response.writeHead(200, {'content-type': 'application/json'})
  response.write('{"client_id": "')
  const more = () => {
    while (written < ENDLESS_BYTES && !response.destroyed) {
      written += chunk.length
      if (!response.write(chunk)) {
        response.once('drain', more)
        return
      }
    }
    if (!response.destroyed) response.end('"}')
  }
  more()
  return {written: () => written, ended}
}

describe.each(BACKENDS)('apps sign in with OAuth, on %s', (backend) => {
  const cleanup = new Cleanup()
  const sessions: {close(): Promise<void>}[] = []
  let ca: TestCa
  let target: StorageTarget
  let server: RunningServer
  let url: string
  let fetchFn: typeof fetch
  /** The server's clock runs `skew` ms ahead of the test's. */
  let skew = 0
  const keys: Record<'admin' | 'read' | 'teamB', string> = {admin: '', read: '', teamB: ''}
  /** An app's website on this machine, serving client ID metadata documents: path → document. */
  let site: HttpsServer
  let siteUrl: string
  const documents = new Map<string, unknown>()
  /** The answer at ENDLESS_PATH: a document that goes on (far past 64 KiB), and how much of it could be sent. */
  let endless: {written: () => number; ended: Promise<void>} | undefined

  beforeAll(async () => {
    ca = await makeTestCa()
    fetchFn = ca.caFetch
    site = createHttpsServer({cert: await readFile(ca.certFile), key: await readFile(ca.keyFile)}, (request, response) => {
      if (request.url === ENDLESS_PATH) {
        endless = streamEndless(response)
        return
      }
      const document = documents.get(request.url ?? '')
      response.writeHead(document === undefined ? 404 : 200, {'content-type': 'application/json'}).end(JSON.stringify(document ?? {}))
    })
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
    siteUrl = `https://127.0.0.1:${(site.address() as AddressInfo).port}`
    target = await freshTarget(backend, cleanup)
    keys.admin = (await createKey({...target, agent: 'ops', role: 'admin'})).token
    keys.read = (await createKey({...target, agent: 'chatgpt', role: 'read'})).token
    keys.teamB = (await createKey({...target, agent: 'chatgpt', workspace: 'team-b'})).token
    server = await startServer({
      ...target,
      host: '127.0.0.1',
      port: 0,
      tokens: tokenMap,
      tlsCert: ca.certFile,
      tlsKey: ca.keyFile,
      logLevel: 'silent',
      now: () => new Date(Date.now() + skew),
      // The app's website is on this machine, which the default fetch refuses to reach: trust the test CA, allow it.
      clientDocumentFetch: (url, init) => fetchFn(url, init),
      wsRecheckMs: 50,
    })
    url = server.url
  })
  afterEach(async () => {
    skew = 0
    for (const session of sessions.splice(0)) await session.close()
  })
  afterAll(async () => {
    await server?.close()
    await new Promise((resolve) => site?.close(resolve))
    await ca?.remove()
    await cleanup.run()
  })

  /** An MCP session with a jarvis key (no OAuth), over the test CA. */
  async function keySession(token: string) {
    const client = new Client({name: 'key-holder', version: '1.0.0'})
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {requestInit: {headers: {authorization: `Bearer ${token}`}}, fetch: fetchFn}))
    sessions.push(client)
    return {call: async (name: string, args: Record<string, unknown>) => (await client.callTool({name, arguments: args})) as CallToolResult}
  }

  async function session(app: TestApp) {
    const opened = await appSession(app, url, fetchFn)
    sessions.push(opened)
    return opened
  }

  const get = (path: string, token?: string) => fetchFn(`${url}${path}`, {headers: token ? {authorization: `Bearer ${token}`} : {}})

  it('serves HTTPS only to clients that trust its CA; a 401 names the resource metadata, which names this server; keys work unchanged', async () => {
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
    expect(server.appUrl).toBe(`${url}/mcp`)
    await expect(fetch(`${url}/healthz`)).rejects.toThrow()

    const anonymous = await mcpStatus(url, null, fetchFn)
    expect(anonymous.status).toBe(401)
    expect(anonymous.challenge).toBe(`Bearer realm="jarvis", resource_metadata="${url}/.well-known/oauth-protected-resource/mcp"`)
    expect((await mcpStatus(url, 'jva_not-a-token', fetchFn)).challenge).toContain('error="invalid_token"')
    const rest = await get('/api/memory/status')
    expect(rest.status).toBe(401)
    expect(rest.headers.get('www-authenticate')).toBe(`Bearer realm="jarvis", resource_metadata="${url}/.well-known/oauth-protected-resource"`)

    expect(await (await get('/.well-known/oauth-protected-resource/mcp')).json()).toMatchObject({resource: `${url}/mcp`, authorization_servers: [url]})
    expect(await (await get('/.well-known/oauth-protected-resource')).json()).toMatchObject({resource: url, authorization_servers: [url]})
    expect(await (await get('/.well-known/oauth-authorization-server')).json()).toMatchObject({
      issuer: url,
      authorization_endpoint: `${url}/authorize`,
      token_endpoint: `${url}/token`,
      registration_endpoint: `${url}/register`,
      revocation_endpoint: `${url}/revoke`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    })
    // A tokens-file token and an API key are taken as before, on /mcp and the REST API.
    expect((await mcpStatus(url, TOKENS.claude, fetchFn)).status).toBe(200)
    expect((await get('/api/memory/status', keys.admin)).status).toBe(200)
  })

  it("the MCP SDK's client registers, is allowed as chatgpt, and works as chatgpt: its own private notes readable, claude's invisible", async () => {
    const marker = `zq${backend}${Date.now()}`
    const claude = await keySession(TOKENS.claude)
    expect((await claude.call('memory_append', {kind: 'config', key: 'config:claude_private', scope: 'agent:claude', content: `Only claude reads this: ${marker} claude.`})).isError).toBeFalsy()

    const app = new TestApp('ChatGPT')
    const back = await signIn(app, url, TOKENS.chatgpt, {role: 'write'}, fetchFn)
    expect(back.origin + back.pathname).toBe(app.redirect)
    expect(back.searchParams.get('iss')).toBe(url)
    expect(app.information).toMatchObject({client_name: 'ChatGPT', redirect_uris: [app.redirect]})
    expect(app.saved).toMatchObject({token_type: 'Bearer', expires_in: 3600, scope: 'write'})
    expect(app.accessToken).toMatch(/^jva_/)
    expect(app.saved?.refresh_token).toMatch(/^jvr_/)

    const chatgpt = await session(app)
    const written = await chatgpt.call('memory_append', {kind: 'fact', key: 'fact:chatgpt_note', scope: 'agent:chatgpt', content: `ChatGPT's own note: ${marker} chatgpt.`})
    expect(written.isError, textOf(written)).toBeFalsy()
    const snapshot = await chatgpt.call('memory_snapshot', {scopes: ['global', 'agent:chatgpt'], limit_recent: 50})
    expect(snapshot.isError, textOf(snapshot)).toBeFalsy()
    const recent = structured<{recent_events: {agent_id: string; content_md: string}[]}>(snapshot).recent_events
    expect(recent).toContainEqual(expect.objectContaining({agent_id: 'chatgpt', content_md: expect.stringContaining(`${marker} chatgpt`)}))
    for (const [name, args] of [
      ['memory_search', {query: marker}],
      ['memory_snapshot', {scopes: ['global', 'agent:chatgpt'], limit_recent: 500}],
      ['recall', {query: marker}],
    ] as const) {
      const answer = await chatgpt.call(name, args)
      expect(JSON.stringify(answer), name).not.toContain(`${marker} claude`)
    }
    // Asking for claude's private scope is refused outright, as for any other agent's key.
    const theirs = await chatgpt.call('memory_snapshot', {scopes: ['agent:claude']})
    expect(theirs.isError).toBe(true)
    expect(JSON.stringify(theirs)).not.toContain(`${marker} claude`)
    expect(textOf(await chatgpt.call('memory_append', {kind: 'fact', key: 'fact:intrude', scope: 'agent:claude', content: 'hello'}))).toMatch(/private scope/)
    // The event is chatgpt's as any other agent sees it.
    const seen = (await (await get(`/v1/memory/snapshot?agent_id=ops&scopes=agent:chatgpt&limit_recent=50`, keys.admin)).json()) as {recent_events: unknown[]}
    expect(seen.recent_events).toContainEqual(expect.objectContaining({agent_id: 'chatgpt', scope: 'agent:chatgpt'}))
  })

  it('an app that names itself by its metadata document address signs in without registering; a document that is not its own is refused', async () => {
    const app = new TestApp('Claude', 'https://claude.example.test/api/mcp/auth_callback', 'none')
    app.clientMetadataUrl = `${siteUrl}/oauth/claude.json`
    documents.set('/oauth/claude.json', {client_id: app.clientMetadataUrl, client_name: 'Claude', redirect_uris: [app.redirect], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token']})
    await signIn(app, url, TOKENS.claude, {role: 'write'}, fetchFn)
    expect(app.information?.client_id).toBe(app.clientMetadataUrl)
    expect((await listGrants(target)).find((grant) => grant.clientId === app.clientMetadataUrl)).toMatchObject({clientName: 'Claude', agentId: 'claude'})
    const claude = await session(app)
    expect((await claude.call('memory_ls', {})).isError).toBeFalsy()

    // A document that names another client id, or holds a secret, or is missing: the app is unknown.
    for (const [path, document] of [
      ['/oauth/impostor.json', {client_id: `${siteUrl}/oauth/claude.json`, client_name: 'Impostor', redirect_uris: ['https://impostor.example.test/cb']}],
      ['/oauth/secret.json', {client_id: `${siteUrl}/oauth/secret.json`, client_name: 'Secret', client_secret: 'x', redirect_uris: ['https://secret.example.test/cb']}],
      ['/oauth/missing.json', undefined],
    ] as const) {
      if (document !== undefined) documents.set(path, document)
      const asked = new URL(app.authorizationUrl!)
      asked.searchParams.set('client_id', `${siteUrl}${path}`)
      const answer = await fetchFn(asked, {redirect: 'manual'})
      expect(answer.status, path).toBe(400)
      expect(await answer.json()).toMatchObject({error: 'invalid_client'})
    }
  })

  it('reads a metadata document no further than 64 KiB: a host that sends more is refused there, not read to its end', async () => {
    const asked = new URL(`${url}/authorize`)
    for (const [name, value] of Object.entries({response_type: 'code', client_id: `${siteUrl}${ENDLESS_PATH}`, redirect_uri: 'https://endless.example.test/cb', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256'})) {
      asked.searchParams.set(name, value)
    }
    const answer = await fetchFn(asked, {redirect: 'manual'})
    expect(answer.status).toBe(400)
    expect(await answer.json()).toMatchObject({error: 'invalid_client'})
    await endless!.ended
    expect(endless!.written()).toBeLessThan(ENDLESS_BYTES)
  })

  it('refuses a missing or wrong PKCE verifier, a plain challenge, a redirect URI not registered, and a reused code (whose tokens are revoked)', async () => {
    const app = new TestApp('Claude', 'https://claude.example.test/api/mcp/auth_callback', 'none')
    expect(await auth(app, {serverUrl: `${url}/mcp`, fetchFn})).toBe('REDIRECT')
    const asked = app.authorizationUrl!

    const elsewhere = new URL(asked)
    elsewhere.searchParams.set('redirect_uri', 'https://attacker.example.test/callback')
    const unregistered = await fetchFn(elsewhere, {redirect: 'manual'})
    expect(unregistered.status).toBe(400)
    expect(unregistered.headers.get('location')).toBeNull()
    expect(await unregistered.json()).toMatchObject({error: 'invalid_request', error_description: expect.stringMatching(/Unregistered redirect_uri/)})

    const plain = new URL(asked)
    plain.searchParams.set('code_challenge_method', 'plain')
    const refusedPlain = await fetchFn(plain, {redirect: 'manual'})
    expect(refusedPlain.status).toBe(302)
    expect(new URL(refusedPlain.headers.get('location')!).searchParams.get('error')).toBe('invalid_request')

    const back = await consentWithKey(url, await consentRequestOf(asked, fetchFn), TOKENS.claude, {allow: true, role: 'read'}, fetchFn)
    const code = back.searchParams.get('code')!
    const form = {grant_type: 'authorization_code', code, redirect_uri: app.redirect, client_id: app.information!.client_id}
    expect(await tokenRequest(url, form, fetchFn)).toMatchObject({status: 400, body: {error: 'invalid_request'}})
    expect(await tokenRequest(url, {...form, code_verifier: 'x'.repeat(64)}, fetchFn)).toMatchObject({status: 400, body: {error: 'invalid_grant', error_description: expect.stringMatching(/code_verifier/)}})
    expect(await tokenRequest(url, {...form, code_verifier: app.verifier, redirect_uri: 'https://claude.example.test/other'}, fetchFn)).toMatchObject({status: 400, body: {error: 'invalid_grant'}})

    const first = await tokenRequest(url, {...form, code_verifier: app.verifier}, fetchFn)
    expect(first.status).toBe(200)
    expect((await mcpStatus(url, first.body.access_token, fetchFn)).status).toBe(200)
    const again = await tokenRequest(url, {...form, code_verifier: app.verifier}, fetchFn)
    expect(again).toMatchObject({status: 400, body: {error: 'invalid_grant', error_description: expect.stringMatching(/used already/)}})
    expect(await mcpStatus(url, first.body.access_token, fetchFn)).toMatchObject({status: 401, message: expect.stringMatching(/revoked/)})
    expect(await tokenRequest(url, {grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: app.information!.client_id}, fetchFn)).toMatchObject({status: 400, body: {error: 'invalid_grant'}})

    // A client cannot register an address that is plain HTTP on another machine.
    const registration = await fetchFn(`${url}/register`, {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify({client_name: 'Bad', redirect_uris: ['http://example.test/cb'], token_endpoint_auth_method: 'none'})})
    expect(registration.status).toBe(400)
    expect(await registration.json()).toMatchObject({error: 'invalid_client_metadata'})
    // A body that does not parse is answered in OAuth's words, never with a stack trace.
    const broken = await fetchFn(`${url}/register`, {method: 'POST', headers: {'content-type': 'application/json'}, body: '{"client_name": '})
    expect(broken.status).toBe(400)
    const brokenText = await broken.text()
    expect(JSON.parse(brokenText)).toMatchObject({error: 'invalid_request'})
    expect(brokenText).not.toMatch(/node_modules| at /)
  })

  it('an app sent back with an error gets its state and the issuer, and one line naming the parameter; an unknown app, or an address it did not register, is answered here and never redirected', async () => {
    const app = new StatefulApp('ChatGPT', 'https://chatgpt.example.test/connector/oauth_callback', 'none')
    expect(await auth(app, {serverUrl: `${url}/mcp`, fetchFn})).toBe('REDIRECT')
    const asked = app.authorizationUrl!
    expect(asked.searchParams.get('state')).toBe(app.sentState)
    const answer = (change: Record<string, string | null>, twice: Record<string, string> = {}) => {
      const changed = new URL(asked)
      for (const [name, value] of Object.entries(change)) {
        if (value === null) changed.searchParams.delete(name)
        else changed.searchParams.set(name, value)
      }
      for (const [name, value] of Object.entries(twice)) changed.searchParams.append(name, value)
      return fetchFn(changed, {redirect: 'manual'})
    }
    /** One line of the characters RFC 6749 allows in error_description: no line breaks, no `"` or `\`. */
    const oneLine = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/
    const cases: [Record<string, string | null>, Record<string, string>, string, string | RegExp][] = [
      [{code_challenge: null, code_challenge_method: null}, {}, 'invalid_request', 'code_challenge: required (PKCE with S256); code_challenge_method: required (S256)'],
      [{code_challenge_method: 'plain'}, {}, 'invalid_request', "code_challenge_method: must be S256, not 'plain'"],
      [{response_type: 'token'}, {}, 'unsupported_response_type', "response_type: must be code, not 'token'"],
      [{resource: 'not a url'}, {}, 'invalid_request', "resource: must be a URL, not 'not a url'"],
      [{}, {code_challenge: 'x'.repeat(43)}, 'invalid_request', 'code_challenge: given more than once'],
      // jarvis's own refusal (the provider's), after the SDK's checks passed.
      [{resource: 'https://other.example.test/mcp'}, {}, 'invalid_target', /^this server gives tokens for .* not for https:\/\/other\.example\.test\/mcp$/],
    ]
    for (const [change, twice, error, description] of cases) {
      const answered = await answer(change, twice)
      expect(answered.status, JSON.stringify(change)).toBe(302)
      const back = new URL(answered.headers.get('location')!)
      expect(back.origin + back.pathname).toBe(app.redirect)
      const seen = app.readBack(back, url)
      expect(seen, JSON.stringify(change)).toEqual({error, description: typeof description === 'string' ? description : expect.stringMatching(description), code: null})
      expect((seen as {description: string}).description).toMatch(oneLine)
    }
    // The same request as a form POST (which the SDK's handler takes as well) is answered the same way.
    const form = Object.fromEntries([...asked.searchParams].filter(([name]) => name !== 'code_challenge'))
    const posted = await fetchFn(`${url}/authorize`, {method: 'POST', redirect: 'manual', headers: {'content-type': 'application/x-www-form-urlencoded'}, body: new URLSearchParams(form).toString()})
    expect(posted.status).toBe(302)
    expect(app.readBack(new URL(posted.headers.get('location')!), url)).toEqual({error: 'invalid_request', description: 'code_challenge: required (PKCE with S256)', code: null})

    // What must not send anyone anywhere is answered to the person's browser (RFC 6749 §4.1.2.1).
    for (const [change, body] of [
      [{client_id: 'no-such-app'}, {error: 'invalid_client', error_description: 'Invalid client_id'}],
      [{client_id: null}, {error: 'invalid_request', error_description: 'client_id: required (the id /register gave the app, or the address of its client metadata document)'}],
      [{redirect_uri: 'https://attacker.example.test/cb'}, {error: 'invalid_request', error_description: 'Unregistered redirect_uri'}],
      [{redirect_uri: 'not a url'}, {error: 'invalid_request', error_description: 'redirect_uri: must be a URL'}],
    ] as const) {
      const answered = await answer(change)
      expect(answered.status, JSON.stringify(change)).toBe(400)
      expect(answered.headers.get('location')).toBeNull()
      expect(await answered.json()).toEqual(body)
    }

    // The other endpoints answer JSON, in one line too (and readable by a browser-based app).
    const register = (metadata: unknown) => fetchFn(`${url}/register`, {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify(metadata)})
    const badAddress = await register({client_name: 'Bad', redirect_uris: ['not a url'], token_endpoint_auth_method: 'none'})
    expect(badAddress.status).toBe(400)
    expect(badAddress.headers.get('access-control-allow-origin')).toBe('*')
    expect(await badAddress.json()).toEqual({error: 'invalid_client_metadata', error_description: "redirect_uris[0]: must be a URL, not 'not a url'"})
    expect(await (await register({client_name: 'Bad'})).json()).toEqual({error: 'invalid_client_metadata', error_description: 'redirect_uris: required (the addresses the app is sent back to after sign-in)'})
    const clientId = app.information!.client_id
    expect(await tokenRequest(url, {client_id: clientId}, fetchFn)).toEqual({status: 400, body: {error: 'invalid_request', error_description: 'grant_type: required (authorization_code or refresh_token)'}})
    expect(await tokenRequest(url, {client_id: clientId, grant_type: 'authorization_code', code: 'x'}, fetchFn)).toEqual({
      status: 400,
      body: {error: 'invalid_request', error_description: 'code_verifier: required (PKCE: the verifier of the code_challenge sent to /authorize)'},
    })
    const revoked = await fetchFn(`${url}/revoke`, {method: 'POST', headers: {'content-type': 'application/x-www-form-urlencoded'}, body: new URLSearchParams({client_id: clientId}).toString()})
    expect(revoked.status).toBe(400)
    expect(await revoked.json()).toEqual({error: 'invalid_request', error_description: 'token: required (the access or refresh token to revoke)'})

    // Allowed, the same app is sent back with its state, the issuer and a code.
    const back = await consentWithKey(url, await consentRequestOf(asked, fetchFn), TOKENS.chatgpt, {allow: true, role: 'read'}, fetchFn)
    expect(app.readBack(back, url)).toEqual({error: null, description: null, code: expect.stringMatching(/^jvc_/)})
  })

  it('binds a token to its resource: an /mcp token is refused on the REST API and the other way round, another resource is never given', async () => {
    const mcpApp = new TestApp('ChatGPT')
    await signIn(mcpApp, url, TOKENS.chatgpt, {role: 'write'}, fetchFn)
    const onRest = await get('/api/memory/status', mcpApp.accessToken)
    expect(onRest.status).toBe(401)
    expect(((await onRest.json()) as {message: string}).message).toMatch(/given for .*\/mcp, not for/)

    // Discovered from the REST API's own metadata: a token for the API.
    const apiApp = new TestApp('Dashboard helper', 'https://helper.example.test/cb')
    expect(await auth(apiApp, {serverUrl: url, fetchFn})).toBe('REDIRECT')
    expect(apiApp.authorizationUrl!.searchParams.get('resource')).toBe(url)
    const back = await consentWithKey(url, await consentRequestOf(apiApp.authorizationUrl!, fetchFn), TOKENS.gemini, {allow: true, role: 'read'}, fetchFn)
    expect(await auth(apiApp, {serverUrl: url, authorizationCode: back.searchParams.get('code')!, fetchFn})).toBe('AUTHORIZED')
    expect((await get('/api/memory/status', apiApp.accessToken)).status).toBe(200)
    expect(await mcpStatus(url, apiApp.accessToken, fetchFn)).toMatchObject({status: 401, message: expect.stringMatching(/given for .* not for .*\/mcp/)})

    // Asking for another server's resource is refused before any consent.
    const other = new URL(mcpApp.authorizationUrl!)
    other.searchParams.set('resource', 'https://other.example.test/mcp')
    const refused = await fetchFn(other, {redirect: 'manual'})
    expect(refused.status).toBe(302)
    expect(new URL(refused.headers.get('location')!).searchParams.get('error')).toBe('invalid_target')
  })

  it('refuses an expired access token; a refresh gives a new pair once, and a refresh token used twice revokes the access', async () => {
    const app = new TestApp('ChatGPT')
    await signIn(app, url, TOKENS.chatgpt, {role: 'write'}, fetchFn)
    const first = app.saved!
    skew = HOUR + 60_000
    expect(await mcpStatus(url, first.access_token, fetchFn)).toMatchObject({status: 401, message: expect.stringMatching(/expired/)})
    // The SDK's client refreshes by itself when a call is refused: a session works again.
    const chatgpt = await session(app)
    expect((await chatgpt.call('memory_ls', {})).isError).toBeFalsy()
    expect(app.saved!.access_token).not.toBe(first.access_token)
    expect(app.saved!.refresh_token).not.toBe(first.refresh_token)
    expect((await mcpStatus(url, app.accessToken, fetchFn)).status).toBe(200)

    const reused = await tokenRequest(url, {grant_type: 'refresh_token', refresh_token: first.refresh_token!}, fetchFn, {
      authorization: `Basic ${Buffer.from(`${app.information!.client_id}:${app.information!.client_secret}`).toString('base64')}`,
    })
    expect(reused).toMatchObject({status: 400, body: {error: 'invalid_grant', error_description: expect.stringMatching(/used already/)}})
    expect(await mcpStatus(url, app.accessToken, fetchFn)).toMatchObject({status: 401, message: expect.stringMatching(/revoked/)})
  })

  it("an open WebSocket of an app is closed once its access is revoked or its token expired, saying why", async () => {
    const dispatcher = new Agent({connect: {ca: ca.caPem}})
    const open = async () => {
      const app = new TestApp('Watcher', 'https://watcher.example.test/cb')
      expect(await auth(app, {serverUrl: url, fetchFn})).toBe('REDIRECT')
      const back = await consentWithKey(url, await consentRequestOf(app.authorizationUrl!, fetchFn), TOKENS.gemini, {allow: true, role: 'read'}, fetchFn)
      expect(await auth(app, {serverUrl: url, authorizationCode: back.searchParams.get('code')!, fetchFn})).toBe('AUTHORIZED')
      const socket = new WebSocket(`${url.replace(/^https/, 'wss')}/ws/memory`, {dispatcher, headers: {authorization: `Bearer ${app.accessToken}`}})
      const messages: {type: string; message?: string}[] = []
      const hello = new Promise<void>((resolve) =>
        socket.addEventListener('message', (event) => {
          messages.push(JSON.parse(String(event.data)) as {type: string})
          resolve()
        }),
      )
      const closed = new Promise<number>((resolve) => socket.addEventListener('close', (event) => resolve(event.code)))
      await hello
      expect(messages[0]).toMatchObject({type: 'HELLO', agentId: 'gemini'})
      return {app, messages, closed}
    }
    try {
      const revoked = await open()
      const grant = (await listGrants(target)).find((found) => found.clientName === 'Watcher' && found.revokedAt === null)!
      await revokeGrant({...target, id: grant.id})
      expect(await revoked.closed).toBe(1008)
      expect(revoked.messages.at(-1)).toMatchObject({type: 'ERROR', error: 'unauthorized', message: expect.stringMatching(/Watcher .* was revoked/)})

      const expired = await open()
      skew = HOUR + 60_000
      expect(await expired.closed).toBe(1008)
      expect(expired.messages.at(-1)).toMatchObject({type: 'ERROR', error: 'unauthorized', message: expect.stringMatching(/expired/)})
    } finally {
      await dispatcher.close()
    }
  })

  it('a revoked access is refused at its next request; token list names the app, the agent, the workspace and the role', async () => {
    const app = new TestApp('Claude', 'https://claude.example.test/api/mcp/auth_callback')
    await signIn(app, url, TOKENS.claude, {role: 'read'}, fetchFn)
    const chatgptSession = await session(app)
    expect((await chatgptSession.call('memory_ls', {})).isError).toBeFalsy()
    const grants = await listGrants(target)
    const mine = grants.find((grant) => grant.clientName === 'Claude' && grant.revokedAt === null && grant.role === 'read')!
    expect(mine).toMatchObject({agentId: 'claude', workspace: 'default', resource: `${url}/mcp`, refreshableUntil: expect.any(String)})
    await revokeGrant({...target, id: mine.id})
    expect(await mcpStatus(url, app.accessToken, fetchFn)).toMatchObject({status: 401, message: expect.stringMatching(/Claude .* was revoked/)})
    await expect(revokeGrant({...target, id: 'grant_000000000000'})).rejects.toThrow(/no app access "grant_000000000000"/)
  })

  it('a person grants no more than their key may: their own agent (any with an admin key), their role at most, their workspace only', async () => {
    const ask = async (app: TestApp) => {
      expect(await auth(app, {serverUrl: `${url}/mcp`, fetchFn})).toBe('REDIRECT')
      return consentRequestOf(app.authorizationUrl!, fetchFn)
    }
    const app = new TestApp('ChatGPT')
    const id = await ask(app)
    const view = await (await get(`/api/oauth/authorizations/${id}`, TOKENS.claude)).json()
    expect(view).toMatchObject({client: {name: 'ChatGPT', redirectHost: 'chatgpt.example.test'}, resourceKind: 'mcp', workspace: 'default', suggestedAgent: 'chatgpt', agents: {only: 'claude'}, roles: ['read', 'write']})
    await expect(consentWithKey(url, id, TOKENS.claude, {allow: true, agent: 'chatgpt', role: 'write'}, fetchFn)).rejects.toThrow(/403: you are signed in as claude: only chatgpt's own token or an admin key/)
    await expect(consentWithKey(url, id, keys.read, {allow: true, role: 'write'}, fetchFn)).rejects.toThrow(/403: your key can only read/)
    expect(((await (await get(`/api/oauth/authorizations/${id}`, keys.admin)).json()) as {agents: unknown}).agents).toEqual({any: true})
    // An agent the event log does not know (a typo, or the admin key's own ops) would sign in and have every append
    // refused: the consent is refused instead, naming the agents it can be, and the request still waits.
    await expect(consentWithKey(url, id, keys.admin, {allow: true, agent: 'chatgtp', role: 'write'}, fetchFn)).rejects.toThrow(
      /400: agent: chatgtp is not one of the agents that write the shared event log \(chatgpt, claude, gemini, openclaw\)/,
    )
    await expect(consentWithKey(url, id, keys.admin, {allow: true, role: 'read'}, fetchFn)).rejects.toThrow(/400: agent: ops is not one of the agents/)
    const back = await consentWithKey(url, id, keys.admin, {allow: true, agent: 'chatgpt', role: 'read'}, fetchFn)
    await expect(consentWithKey(url, id, keys.admin, {allow: true, agent: 'chatgpt', role: 'read'}, fetchFn)).rejects.toThrow(/410: this request was answered/)
    expect(await auth(app, {serverUrl: `${url}/mcp`, authorizationCode: back.searchParams.get('code')!, fetchFn})).toBe('AUTHORIZED')
    const reader = await session(app)
    const write = await reader.call('memory_append', {kind: 'fact', key: 'fact:read_only', content: 'nope'})
    expect(write.isError).toBe(true)
    // Told as an app is fixed: a person connects it again and allows writing; no "write key" an app could hold.
    expect(textOf(write)).toMatch(/^ChatGPT was allowed only to read this memory \(grant grant_[0-9a-f]+\): memory_append changes it\. To let it write, connect the app again .* choose "read and write" on the consent page$/)
    expect(textOf(write)).not.toContain('write key')

    // Refused: the app is sent back with access_denied, and gets nothing.
    const denied = new TestApp('ChatGPT')
    const deniedBack = await consentWithKey(url, await ask(denied), TOKENS.chatgpt, {allow: false}, fetchFn)
    expect(deniedBack.searchParams.get('error')).toBe('access_denied')
    expect(deniedBack.searchParams.get('code')).toBeNull()

    // An app's own token never answers an app's request.
    const apiApp = new TestApp('Helper', 'https://helper.example.test/cb')
    expect(await auth(apiApp, {serverUrl: url, fetchFn})).toBe('REDIRECT')
    const apiBack = await consentWithKey(url, await consentRequestOf(apiApp.authorizationUrl!, fetchFn), keys.admin, {allow: true, agent: 'openclaw', role: 'read'}, fetchFn)
    expect(await auth(apiApp, {serverUrl: url, authorizationCode: apiBack.searchParams.get('code')!, fetchFn})).toBe('AUTHORIZED')
    // Allowed to read only, on the REST API too: a push is refused with the same remedy.
    const push = await fetchFn(`${url}/api/memory/push`, {method: 'POST', headers: {authorization: `Bearer ${apiApp.accessToken}`, 'content-type': 'application/json'}, body: JSON.stringify({files: {'notes/x.md': 'x\n'}})})
    expect(push.status).toBe(403)
    expect(((await push.json()) as {message: string}).message).toMatch(/^Helper was allowed only to read this memory \(grant grant_[0-9a-f]+\): POST \/api\/memory\/push changes it\. To let it write, connect the app again/)
    await expect(consentWithKey(url, await ask(new TestApp('ChatGPT')), apiApp.accessToken, {allow: true}, fetchFn)).rejects.toThrow(/403: an app's token cannot answer/)
  })

  it("a token of workspace team-b opens team-b's memory only; the default workspace's token sees none of team-b's", async () => {
    const marker = `ws${backend}${Date.now()}`
    const teamApp = new TestApp('ChatGPT')
    await signIn(teamApp, url, keys.teamB, {role: 'write'}, fetchFn)
    expect((await listGrants({...target, workspace: 'team-b'})).map((grant) => grant.workspace)).toEqual(['team-b'])
    const team = await session(teamApp)
    expect((await team.call('memory_append', {kind: 'fact', key: 'fact:team_b', content: `Team B fact ${marker}.`})).isError).toBeFalsy()
    expect(JSON.stringify(await team.call('memory_search', {query: marker}))).toContain(`Team B fact ${marker}`)

    const defaultApp = new TestApp('ChatGPT')
    await signIn(defaultApp, url, TOKENS.chatgpt, {role: 'write'}, fetchFn)
    const home = await session(defaultApp)
    expect((await home.call('memory_append', {kind: 'fact', key: 'fact:default_ws', content: `Default fact ${marker}.`})).isError).toBeFalsy()
    const seenHome = JSON.stringify(await home.call('memory_search', {query: marker}))
    expect(seenHome).toContain(`Default fact ${marker}`)
    expect(seenHome).not.toContain(`Team B fact ${marker}`)
    expect(JSON.stringify(await team.call('memory_search', {query: marker}))).not.toContain(`Default fact ${marker}`)
  })
})

describe('what an app may name', () => {
  it('a redirect address is HTTPS, plain HTTP on its own machine, or a desktop app scheme', () => {
    expect(redirectUriProblem('https://chatgpt.com/connector_platform_oauth_redirect')).toBeNull()
    expect(redirectUriProblem('http://127.0.0.1:33418/callback')).toBeNull()
    expect(redirectUriProblem('http://localhost/callback')).toBeNull()
    expect(redirectUriProblem('com.example.app:/oauth')).toBeNull()
    expect(redirectUriProblem('http://example.test/cb')).toMatch(/plain HTTP on another machine/)
    expect(redirectUriProblem('javascript:alert(1)')).toMatch(/scheme/)
    expect(redirectUriProblem('https://example.test/cb#frag')).toMatch(/fragment/)
  })

  it('a metadata document is never fetched from this machine or its private networks', async () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '192.168.0.10', '172.16.5.5', '169.254.169.254', '::1', 'fd00::1', '0.0.0.0', '::ffff:127.0.0.1']) expect(isPrivateAddress(address), address).toBe(true)
    for (const address of ['93.184.216.34', '2606:4700::1111']) expect(isPrivateAddress(address), address).toBe(false)
    const init = {signal: AbortSignal.timeout(5000), redirect: 'manual' as const, headers: {}}
    await expect(guardedDocumentFetch(new URL('https://127.0.0.1/client.json'), init)).rejects.toThrow(/private address/)
    await expect(guardedDocumentFetch(new URL('https://localhost/client.json'), init)).rejects.toThrow(/private address/)
    await expect(guardedDocumentFetch(new URL('https://[::1]/client.json'), init)).rejects.toThrow(/private address/)
  })
})

describe("an app's token and the tokens file", () => {
  it('a tokens-file token that looks like an access token is still the tokens file\'s; an unknown one is refused', async () => {
    const auth = new TokenAuthenticator({'jva_chosen-by-a-person': 'claude'})
    expect(await auth.authenticate('jva_chosen-by-a-person', 'https://memory.example.test/mcp')).toEqual({identity: {workspace: 'default', agentId: 'claude', role: 'write'}})
    expect(await auth.authenticate('jva_someone-elses', 'https://memory.example.test/mcp')).toEqual({refused: 'the token is not known to this server'})
  })
})

describe('HTTPS and the public address: bad input is named, and nothing starts', () => {
  it('refuses a public address that is plain HTTP on another machine, or has a path, saying what to do', async () => {
    await expect(startServer({port: 0, publicUrl: 'http://memory.example.test', tokens: tokenMap, logLevel: 'silent'})).rejects.toThrow(/--public-url: http:\/\/memory\.example\.test is not HTTPS: .*--tls-cert and --tls-key/)
    await expect(startServer({port: 0, publicUrl: 'https://memory.example.test/jarvis', tokens: tokenMap, logLevel: 'silent'})).rejects.toThrow(/--public-url: .* has a path/)
  })

  it('refuses a certificate without its key, a file that cannot be read, and one that is not PEM', async () => {
    const ca = await makeTestCa()
    try {
      const start = (tls: {tlsCert?: string; tlsKey?: string}) => startServer({port: 0, tokens: tokenMap, logLevel: 'silent', ...tls})
      await expect(start({tlsCert: ca.certFile})).rejects.toThrow(/--tls-key is missing: HTTPS needs both/)
      await expect(start({tlsCert: `${ca.certFile}.nowhere`, tlsKey: ca.keyFile})).rejects.toThrow(/--tls-cert: cannot read .*ENOENT/)
      await expect(start({tlsCert: ca.caFile.replace('ca.pem', 'server.ext'), tlsKey: ca.keyFile})).rejects.toThrow(/are not a PEM certificate and its private key/)
    } finally {
      await ca.remove()
    }
  })
})
