/**
 * The README's reverse-proxy recipe, run as written: Caddy in front of `jarvis serve --public-url https://…`, the
 * Caddyfile taken from the README (its address and upstream set to this run's, and the run's test certificate in
 * place of the one Caddy would get from Let's Encrypt). An app signs in and works through the proxy, and every
 * address the server hands out is the public one.
 */
import {spawn} from 'node:child_process'
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {type RunningServer, startServer} from '../../src/server/start.js'
import {closedPort} from '../cli/memory-helpers.js'
import {makeTestCa, type TestCa} from '../helpers/test-ca.js'
import {removeAll, tempDir, tokenMap, TOKENS} from '../helpers/world.js'
import {textOf} from '../mcp/helpers.js'
import {appSession, mcpStatus, signIn, TestApp} from './oauth-helpers.js'

const README = fileURLToPath(new URL('../../README.md', import.meta.url))

/** The ```caddyfile block that follows `<!-- readme-test: caddy -->` in the README. */
async function readmeCaddyfile(): Promise<string> {
  const readme = await readFile(README, 'utf8')
  const marker = '<!-- readme-test: caddy -->'
  const at = readme.indexOf(marker)
  if (at < 0) throw new Error(`README.md has no ${marker}`)
  const block = /^\s*```caddyfile\n([\s\S]*?)\n```/.exec(readme.slice(at + marker.length))
  if (!block) throw new Error(`${marker} is not followed by a \`\`\`caddyfile block`)
  return block[1]
}

describe("the README's reverse proxy (Caddy) in front of jarvis serve", () => {
  let ca: TestCa
  let dir: string
  let server: RunningServer
  let publicUrl: string
  let stopCaddy: () => Promise<void>

  beforeAll(async () => {
    ca = await makeTestCa()
    dir = await tempDir('jarvis-proxy-')
    const proxyPort = await closedPort()
    publicUrl = `https://127.0.0.1:${proxyPort}`
    server = await startServer({dataDir: join(dir, 'data'), host: '127.0.0.1', port: 0, tokens: tokenMap, publicUrl, logLevel: 'silent'})

    const recipe = await readmeCaddyfile()
    expect(recipe).toContain('memory.example.com {')
    expect(recipe).toContain('reverse_proxy 127.0.0.1:8787')
    // The run's address and upstream, and its test certificate instead of one from Let's Encrypt.
    const caddyfile = [
      `{\n\tadmin off\n\tauto_https disable_redirects\n\tstorage file_system ${join(dir, 'caddy')}\n}\n`,
      recipe
        .replace('memory.example.com {', `${publicUrl} {\n\tbind 127.0.0.1\n\ttls ${ca.certFile} ${ca.keyFile}`)
        .replace('reverse_proxy 127.0.0.1:8787', `reverse_proxy 127.0.0.1:${server.port}`),
    ].join('\n')
    await writeFile(join(dir, 'Caddyfile'), caddyfile)
    const caddy = spawn('caddy', ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {stdio: ['ignore', 'ignore', 'pipe'], env: {...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, 'config'), XDG_DATA_HOME: join(dir, 'share')}})
    const exited = new Promise<void>((resolve) => caddy.once('exit', () => resolve()))
    stopCaddy = async () => {
      if (caddy.exitCode === null && caddy.signalCode === null) caddy.kill('SIGTERM')
      await exited
    }
    let log = ''
    await new Promise<void>((resolve, reject) => {
      caddy.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
        log += chunk
        if (log.includes('"server running"')) resolve()
      })
      caddy.once('exit', (code) => reject(new Error(`caddy exited with ${code}:\n${log}`)))
      caddy.once('error', (error) => reject(new Error(`caddy could not start (apt-get install caddy; .ci/run does it): ${error.message}`)))
    })
  })

  afterAll(async () => {
    await stopCaddy?.()
    await server?.close()
    await ca?.remove()
    await removeAll([dir])
  })

  it('hands out the public address only, and an app signs in and works through the proxy', async () => {
    expect(server.appUrl).toBe(`${publicUrl}/mcp`)
    const refused = await mcpStatus(publicUrl, null, ca.caFetch)
    expect(refused).toMatchObject({status: 401, challenge: `Bearer realm="jarvis", resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/mcp"`})
    const metadata = (await (await ca.caFetch(`${publicUrl}/.well-known/oauth-authorization-server`)).json()) as Record<string, string>
    expect(metadata).toMatchObject({issuer: publicUrl, authorization_endpoint: `${publicUrl}/authorize`, token_endpoint: `${publicUrl}/token`})

    const app = new TestApp('ChatGPT')
    await signIn(app, publicUrl, TOKENS.chatgpt, {role: 'write'}, ca.caFetch)
    const session = await appSession(app, publicUrl, ca.caFetch)
    try {
      const written = await session.call('memory_append', {kind: 'fact', key: 'fact:through_proxy', content: 'Written by ChatGPT through the reverse proxy.'})
      expect(written.isError, textOf(written)).toBeFalsy()
    } finally {
      await session.close()
    }
    // The dashboard, where the consent page is, comes through the proxy too.
    const page = await ca.caFetch(`${publicUrl}/`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('/dashboard/app.js')
  })
})
