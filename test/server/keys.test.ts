/**
 * API keys a team hands out and takes back (`jarvis serve token create|list|revoke`), against a running server on
 * the same data directory: a read key reads and is refused every write (HTTP, a command, an MCP tool), a revoked
 * or expired key is refused at its next request, the token is never stored, and the tokens file keeps working.
 */
import {execFile} from 'node:child_process'
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import {promisify} from 'node:util'

import pg from 'pg'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {createKey} from '../../src/server/keys.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, storageFlags, tempDir, TOKENS, type TestClient, type TestServer} from '../helpers/world.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'
import {freshDatabase} from '../helpers/postgres.js'
import {httpSession, textOf} from '../mcp/helpers.js'
import {connectWs} from './helpers.js'

const run = promisify(execFile)

describe.each(BACKENDS)('API keys on %s', (backend) => {
  useBackend(backend)

  let server: TestServer
  let tree: TestClient
  let home: string

  beforeAll(async () => {
    server = await startTestServer()
    tree = await makeClient(server.url, 'claude')
    home = await tempDir('jarvis-keys-home-')
  })

  afterAll(async () => {
    await server?.close()
    await removeAll([server?.dataDir, tree?.root, home].filter(Boolean) as string[])
  })

  const env = (token: string, agent = '') => ({JARVIS_TOKEN: token, JARVIS_AGENT: agent, JARVIS_SERVER: '', JARVIS_DIR: '', XDG_CONFIG_HOME: join(home, 'xdg'), XDG_DATA_HOME: join(home, 'data')})

  async function create(...args: string[]): Promise<{id: string; token: string}> {
    const run = await runJarvis(['serve', 'token', 'create', ...storageFlags(server), '--json', ...args], {env: env('')})
    expect(run.code, run.stderr).toBe(0)
    return envelope<{id: string; token: string}>(run).result!
  }

  const get = (path: string, token?: string) => fetch(`${server.url}${path}`, {headers: token ? {authorization: `Bearer ${token}`} : {}})

  it('a key made while the server runs works at once; the token is shown once and stored only as its hash', async () => {
    const {id, token} = await create('--agent', 'claude')
    expect(token).toMatch(/^jvk_[\w-]{40,}$/)
    const appended = await runJarvis(['memory', 'append', '--kind', 'fact', '--key', 'fact:keys_write', '--content', 'Written with a key.'], {cwd: tree.root, env: env(token)})
    expect(appended.code, appended.stderr).toBe(0)

    const listed = await runJarvis(['serve', 'token', 'list', ...storageFlags(server)], {env: env('')})
    expect(listed.stdout).toContain(`${id}  default  claude  write`)
    expect(listed.stdout).not.toContain(token)
    // grep in a process of its own: a file of a SQLite database opened and closed by the server's own process
    // drops SQLite's POSIX locks on it, and the server's connection then reads an old snapshot.
    const grep = await run('grep', ['-rlF', token, server.dataDir]).then(() => 0, (error: {code: number}) => error.code)
    expect(grep, 'grep exits 1 when no file holds the token').toBe(1)
    // Every row of the storage, PostgreSQL's too: the key's hash is there, the token is not.
    const dump = await runJarvis(['serve', 'export', ...storageFlags(server)], {env: env('')})
    expect(dump.code, dump.stderr).toBe(0)
    expect(dump.stdout).toContain(`"id":"${id}"`)
    expect(dump.stdout).not.toContain(token)
  })

  it('a read key reads, and every write is refused with 403 — over HTTP, by a command, by an MCP tool', async () => {
    const {token} = await create('--agent', 'gemini', '--role', 'read')
    expect((await get('/v1/memory/snapshot', token)).status).toBe(200)
    const snapshot = await runJarvis(['memory', 'snapshot'], {cwd: tree.root, env: env(token, 'gemini')})
    expect(snapshot.code, snapshot.stderr).toBe(0)

    const refused = await fetch(`${server.url}/v1/memory/append`, {
      method: 'POST',
      headers: {authorization: `Bearer ${token}`, 'content-type': 'application/json'},
      body: JSON.stringify({kind: 'fact', dedupe_key: 'fact:read_key', content: 'x', scope: 'global', confidence: 'high', agent_id: 'gemini', run_id: 'r1', source: 'CLI'}),
    })
    expect(refused.status).toBe(403)
    expect(((await refused.json()) as {message: string}).message).toContain('this key can only read')

    const append = await runJarvis(['memory', 'append', '--kind', 'fact', '--key', 'fact:read_key', '--content', 'Not allowed.'], {cwd: tree.root, env: env(token, 'gemini')})
    expect(append.code).toBe(2)
    expect(append.stderr).toContain('this key can only read')

    await tree.write('notes/read-key.md', '# Pushed with a read key?\n')
    const sync = await runJarvis(['sync'], {cwd: tree.root, env: env(token, 'gemini')})
    expect(sync.code).toBe(2)
    expect(sync.stderr).toContain('this key can only read')
    expect(((await (await get('/api/memory/status', TOKENS.claude)).json()) as {files: Record<string, unknown>}).files['notes/read-key.md']).toBeUndefined()

    const mcp = await httpSession(server.url, token)
    try {
      const tool = await mcp.call('memory_append', {kind: 'fact', dedupe_key: 'fact:read_key_mcp', content: 'Not allowed either.'})
      expect(tool.isError).toBe(true)
      expect(textOf(tool)).toContain('this key can only read')
      expect((await mcp.call('memory_snapshot', {})).isError).toBeFalsy()
    } finally {
      await mcp.close()
    }
  })

  it('an admin key reads every agent\'s private events (list, snapshot, WebSocket); another agent\'s key does not', async () => {
    const {token: admin} = await create('--agent', 'gemini', '--role', 'admin')
    const ws = await connectWs(`${server.url.replace('http', 'ws')}/ws/memory`, admin)
    try {
      const appended = await runJarvis(['memory', 'append', '--kind', 'fact', '--key', 'fact:claude_private', '--scope', 'agent:claude', '--content', 'Only claude and an admin read this.'], {cwd: tree.root, env: env(TOKENS.claude)})
      expect(appended.code, appended.stderr).toBe(0)
      const listed = (token: string, query: string) => get(`/v1/memory/events?${query}`, token)
      const byAdmin = (await (await listed(admin, 'dedupe_key=fact:claude_private')).json()) as {events: {content_md: string}[]}
      expect(byAdmin.events.map((event) => event.content_md)).toEqual(['Only claude and an admin read this.'])
      expect((await listed(admin, 'scope=agent:claude')).status).toBe(200)
      expect((await get('/v1/memory/snapshot?scopes=agent:claude', admin)).status).toBe(200)
      // gemini's ordinary token sees none of it, and is refused the scope by name.
      const byGemini = (await (await listed(TOKENS.gemini, 'dedupe_key=fact:claude_private')).json()) as {events: unknown[]}
      expect(byGemini.events).toEqual([])
      expect((await listed(TOKENS.gemini, 'scope=agent:claude')).status).toBe(403)
      const heard = await ws.next((message: {type?: string; dedupe_key?: string}) => message.type === 'EVENT_APPENDED' && message.dedupe_key === 'fact:claude_private', 10_000)
      expect(heard.scope).toBe('agent:claude')
    } finally {
      await ws.close()
    }
  })

  it('a revoked key is refused at its next request; an expired one too, saying why', async () => {
    const {id, token} = await create('--agent', 'openclaw')
    const before = await get('/api/memory/status', token)
    expect(before.status, await before.clone().text()).toBe(200)
    const revoked = await runJarvis(['serve', 'token', 'revoke', id, ...storageFlags(server)], {env: env('')})
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(revoked.stdout).toContain(`every server on this ${backend === 'postgres' ? 'database' : 'data directory'} refuses it from now on`)
    const after = await get('/api/memory/status', token)
    expect(after.status).toBe(401)
    expect(((await after.json()) as {message: string}).message).toContain(`the key ${id} was revoked`)

    // Made two days ago to last one day: expired now.
    const old = await createKey({dataDir: server.dataDir, databaseUrl: server.databaseUrl, agent: 'chatgpt', expires: '1d', now: new Date(Date.now() - 2 * 86_400_000)})
    const expired = await get('/api/memory/status', old.token)
    expect(expired.status).toBe(401)
    expect(((await expired.json()) as {message: string}).message).toContain(`the key ${old.key.id} expired at`)

    const unknown = await runJarvis(['serve', 'token', 'revoke', 'key_000000000000', ...storageFlags(server)], {env: env('')})
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('jarvis serve token list')
  })

  it('token list and revoke, export and backup where no server keeps its data exit 2 naming --data or --database, and make nothing there', async () => {
    const elsewhere = backend === 'postgres' ? {flags: ['--database', await freshDatabase()], flag: '--database'} : {flags: ['--data', join(home, 'typo')], flag: '--data'}
    const commands = [['token', 'list'], ['token', 'revoke', 'key_000000000000'], ['token', 'revoke', 'grant_000000000000'], ['export'], ['backup', '--to', join(home, 'backups')]]
    for (const args of commands) {
      const refused = await runJarvis(['serve', ...args, ...elsewhere.flags], {env: env('')})
      expect(refused.code, refused.stderr).toBe(2)
      expect(refused.stderr).toContain(`${elsewhere.flag}: `)
      expect(refused.stderr).toContain('holds no jarvis server data')
      expect(refused.stdout).not.toContain('no keys yet')
    }
    if (backend === 'postgres') {
      const client = new pg.Client({connectionString: elsewhere.flags[1]})
      await client.connect()
      const tables = await client.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
      await client.end()
      expect(tables.rows).toEqual([])
    } else {
      expect(existsSync(join(home, 'typo'))).toBe(false)
    }
  })

  it('bad input: an unknown role or a duration that is not one exits 2 naming the flag', async () => {
    const role = await runJarvis(['serve', 'token', 'create', ...storageFlags(server), '--agent', 'claude', '--role', 'owner'], {env: env('')})
    expect(role.code).toBe(2)
    expect(role.stderr).toContain('--role')
    const expires = await runJarvis(['serve', 'token', 'create', ...storageFlags(server), '--agent', 'claude', '--expires', 'soon'], {env: env('')})
    expect(expires.code).toBe(2)
    expect(expires.stderr).toContain('--expires: "soon" is not a duration')
    // Dead on arrival (0.0001h is 0.36 s), or past the last moment a date can hold: refused, no key made.
    for (const [lifetime, why] of [['0d', 'a key must live at least a minute'], ['0.0001h', 'a key must live at least a minute'], ['100000000d', 'the last moment a date can hold']]) {
      const refused = await runJarvis(['serve', 'token', 'create', ...storageFlags(server), '--agent', 'claude', '--expires', lifetime], {env: env('')})
      expect(refused.code, refused.stderr).toBe(2)
      expect(refused.stderr).toContain(`--expires ${lifetime}: `)
      expect(refused.stderr).toContain(why)
    }
    expect(await create('--agent', 'gemini', '--expires', '0.02h')).toMatchObject({key: {expiresAt: expect.any(String)}})
  })

  it('a key for an agent outside the event log (a CI job) is made, and says at once what it cannot do; an agent of the four gets no such word', async () => {
    const made = await runJarvis(['serve', 'token', 'create', ...storageFlags(server), '--agent', 'ci-bot'], {env: env('')})
    expect(made.code, made.stderr).toBe(0)
    expect(made.stderr).toContain("ci-bot is not one of the event log's agents (chatgpt, claude, gemini, openclaw): its key syncs files and reads the global and project events, but cannot append, supersede or forget events")
    const token = /JARVIS_TOKEN=(\S+)/.exec(made.stdout)![1]
    const appended = await fetch(`${server.url}/v1/memory/append`, {method: 'POST', headers: {authorization: `Bearer ${token}`, 'content-type': 'application/json'}, body: JSON.stringify({scope: 'global', kind: 'fact', dedupe_key: 'fact:ci_bot', content_md: 'From CI.', confidence: 'high', run_id: 'ci-1', source: {}})})
    expect(appended.status).toBe(403)
    expect(await appended.text()).toContain("the token's agent ci-bot is not one of the agents of the shared event log")
    const four = await runJarvis(['serve', 'token', 'create', ...storageFlags(server), '--agent', 'openclaw'], {env: env('')})
    expect(four.code, four.stderr).toBe(0)
    expect(four.stderr).not.toContain('not one of')
  })

  it('the tokens file keeps working beside the keys; /healthz and /readyz answer without a token', async () => {
    expect((await get('/api/memory/status', TOKENS.claude)).status).toBe(200)
    expect((await get('/api/memory/status', 'not-a-token-at-all')).status).toBe(401)
    expect(await (await get('/healthz')).json()).toEqual({status: 'ok'})
    expect(await (await get('/readyz')).json()).toEqual({status: 'ready'})
  })
})
