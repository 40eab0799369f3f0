/**
 * The whole way ChatGPT joins the shared memory, end to end: two `jarvis serve` processes on one PostgreSQL database
 * behind one public HTTPS address (a CA made at run time), the MCP SDK's own OAuth client as the app, and the consent
 * page in a real Chromium, where a person signs in with chatgpt's jarvis token and allows it. The app then lists and
 * calls the tools as agent chatgpt on either process, never sees claude's private notes, and is refused by both
 * processes at once when `jarvis serve token revoke` takes its access back.
 */
import {join} from 'node:path'

import {Client} from '@modelcontextprotocol/sdk/client/index.js'
import {UnauthorizedError} from '@modelcontextprotocol/sdk/client/auth.js'
import {StreamableHTTPClientTransport} from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {CallToolResult} from '@modelcontextprotocol/sdk/types.js'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {closedPort} from '../cli/memory-helpers.js'
import {launchBrowser, screenshots, type Browser} from '../dashboard/browser.js'
import {databaseFor, useBackend} from '../helpers/backends.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {makeTestCa, type TestCa} from '../helpers/test-ca.js'
import {removeAll, type ServerProcess, startServerProcess, tempDir, TOKENS} from '../helpers/world.js'
import {textOf} from '../mcp/helpers.js'
import {mcpStatus, TestApp} from './oauth-helpers.js'

describe('ChatGPT joins the shared memory: OAuth with the consent page in a browser, two servers on one PostgreSQL', () => {
  useBackend('postgres')
  let ca: TestCa
  let browser: Browser
  let dir: string
  let database: string
  let one: ServerProcess
  let two: ServerProcess

  beforeAll(async () => {
    // Outside CI a developer's dist/ may be older than the consent page's sources: bundle the dashboard first.
    if (!process.env.CI) await (await import('../../scripts/bundle-dashboard.mjs')).buildDashboard()
    ca = await makeTestCa()
    dir = await tempDir('jarvis-oauth-e2e-')
    // Both processes on one data directory's database (one PostgreSQL database), and one public address, as behind
    // a load balancer: the first one's.
    const dataDir = join(dir, 'data')
    database = (await databaseFor(dataDir))!
    const port = await closedPort()
    const https = ['--tls-cert', ca.certFile, '--tls-key', ca.keyFile, '--public-url', `https://127.0.0.1:${port}`]
    one = await startServerProcess(dataDir, port, https)
    two = await startServerProcess(dataDir, 0, https)
    browser = await launchBrowser({args: ca.chromiumTrust})
  })

  afterAll(async () => {
    await browser?.close()
    await one?.stop()
    await two?.stop()
    await ca?.remove()
    await removeAll([dir])
  })

  async function keySession(url: string, token: string) {
    const client = new Client({name: 'claude-code', version: '1.0.0'})
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {requestInit: {headers: {authorization: `Bearer ${token}`}}, fetch: ca.caFetch}))
    return client
  }

  it('signs in through the consent page, works as chatgpt on both processes, and is refused by both once revoked', async () => {
    const marker = `e2e${Date.now()}`
    const claude = await keySession(two.url, TOKENS.claude)
    const note = (await claude.callTool({name: 'memory_append', arguments: {kind: 'config', key: 'config:claude_only', scope: 'agent:claude', content: `Claude's private note ${marker}.`}})) as CallToolResult
    expect(note.isError, textOf(note)).toBeFalsy()
    await claude.close()

    // The app meets a 401 at /mcp and follows it: resource metadata, registration, the authorization request.
    const app = new TestApp('ChatGPT')
    const transport = new StreamableHTTPClientTransport(new URL(`${one.url}/mcp`), {authProvider: app, fetch: ca.caFetch})
    await expect(new Client({name: 'ChatGPT', version: '1.0.0'}).connect(transport)).rejects.toThrow(UnauthorizedError)
    expect(app.authorizationUrl?.href).toMatch(new RegExp(`^${one.url}/authorize\\?`))

    // The person, in a browser: signs in with chatgpt's token, sees who asks, allows it.
    const page = await browser.newPage()
    let backAtApp: URL | undefined
    await page.route('https://chatgpt.example.test/**', async (route) => {
      backAtApp = new URL(route.request().url())
      await route.fulfill({status: 200, contentType: 'text/plain', body: 'Back in ChatGPT.'})
    })
    await page.goto(app.authorizationUrl!.href)
    await page.getByText('An app asks to use your shared memory').waitFor()
    await page.getByLabel('Token').fill(TOKENS.chatgpt)
    await page.getByRole('button', {name: 'Sign in'}).click()
    await page.getByRole('heading', {name: 'Allow ChatGPT to use your shared memory?'}).waitFor()
    expect(await page.locator('.redirect-host').textContent()).toBe('chatgpt.example.test')
    expect(await page.locator('.agent-name').textContent()).toBe('chatgpt')
    await page.getByLabel('read and write the memory').check()
    await screenshots(page, 'consent')
    await page.getByRole('button', {name: 'Allow'}).click()
    await page.getByText('Back in ChatGPT.').waitFor()
    await page.close()
    expect(backAtApp?.origin).toBe('https://chatgpt.example.test')
    const code = backAtApp!.searchParams.get('code')
    expect(code).toMatch(/^jvc_/)

    // The app exchanges the code and works as chatgpt.
    await transport.finishAuth(code!)
    const chatgpt = new Client({name: 'ChatGPT', version: '1.0.0'})
    await chatgpt.connect(new StreamableHTTPClientTransport(new URL(`${one.url}/mcp`), {authProvider: app, fetch: ca.caFetch}))
    const tools = (await chatgpt.listTools()).tools.map((tool) => tool.name)
    expect(tools).toEqual(expect.arrayContaining(['memory_snapshot', 'memory_append', 'memory_search', 'recall']))
    const written = (await chatgpt.callTool({name: 'memory_append', arguments: {kind: 'fact', key: 'fact:from_chatgpt', content: `ChatGPT learned ${marker}.`}})) as CallToolResult
    expect(written.isError, textOf(written)).toBeFalsy()
    const found = JSON.stringify(await chatgpt.callTool({name: 'memory_search', arguments: {query: marker}}))
    expect(found).toContain(`ChatGPT learned ${marker}`)
    expect(found).not.toContain(`Claude's private note ${marker}`)
    const snapshot = JSON.stringify(await chatgpt.callTool({name: 'memory_snapshot', arguments: {limit_recent: 100}}))
    expect(snapshot).toContain('"agent_id":"chatgpt"')
    expect(snapshot).not.toContain(`Claude's private note ${marker}`)
    await chatgpt.close()

    // The other process is the same server: it takes the token too.
    expect((await mcpStatus(two.url, app.accessToken, ca.caFetch)).status).toBe(200)

    // The person takes the access back: both processes refuse it at the next request.
    const env = {...process.env, NO_COLOR: '1'}
    const listed = await runJarvis(['serve', 'token', 'list', '--database', database, '--json'], {env})
    expect(listed.code, listed.stderr).toBe(0)
    const apps = envelope<{apps: {id: string; clientName: string; agentId: string; role: string; revokedAt: string | null}[]}>(listed).result!.apps
    expect(apps).toEqual([expect.objectContaining({clientName: 'ChatGPT', agentId: 'chatgpt', role: 'write', revokedAt: null})])
    const human = await runJarvis(['serve', 'token', 'list', '--database', database], {env})
    expect(human.stdout).toContain(`${apps[0].id}  default  chatgpt  write  app "ChatGPT" for ${one.url}/mcp`)
    expect(human.stdout).not.toContain(app.accessToken)
    const revoked = await runJarvis(['serve', 'token', 'revoke', apps[0].id, '--database', database], {env})
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(revoked.stdout).toContain(`revoked ${apps[0].id} (app "ChatGPT"`)
    for (const server of [one, two]) {
      expect(await mcpStatus(server.url, app.accessToken, ca.caFetch)).toMatchObject({status: 401, message: expect.stringMatching(/ChatGPT .* was revoked/)})
    }
  })
})
