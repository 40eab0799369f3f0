/**
 * Workspaces (CONTRACT §7): one server, several isolated memories. A key of workspace A tries every route of the app
 * (listed from the app itself, so a route added later without the workspace check fails here), the WebSocket and
 * the MCP endpoint against workspace B's files, events, pinned memory, active project and broadcasts — and B is
 * left exactly as it was, and A never sees a byte of it. The default workspace (the tokens file) sees neither.
 */
import {existsSync} from 'node:fs'
import {join} from 'node:path'

import pg from 'pg'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {createKey} from '../../src/server/keys.js'
import {startServer} from '../../src/server/start.js'
import {BACKENDS, currentBackend, databaseFor, useBackend} from '../helpers/backends.js'
import {removeAll, startServerProcess, startTestServer, tempDir, TOKENS, type ServerProcess, type TestServer} from '../helpers/world.js'
import {httpSession, structured, textOf} from '../mcp/helpers.js'
import {call, connectWs, type WsClient} from './helpers.js'

/** A word only workspace B's memory holds. */
const SECRET = 'zebracorn'
const B_FILE = 'notes/b-plan.md'

function task(n: number) {
  return {taskId: `task-${n}`, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(), type: 'code', input: `do ${n}`, output: `done ${n}`, success: true, responseTime: 100, model: 'm', filesModified: []}
}

const event = (content: string, key = 'fact:b_secret') => ({kind: 'fact', dedupe_key: key, content_md: content, scope: 'global', confidence: 'high', run_id: 'r1', source: {system: 'cli'}, ttl_days: 0})

/** The apps' OAuth metadata and the authorization server's endpoints: no token, no memory. */
const OAUTH_OPEN_ROUTES = [
  'GET /.well-known/oauth-protected-resource',
  'GET /.well-known/oauth-protected-resource/mcp',
  'GET /.well-known/oauth-authorization-server',
  'GET /authorize',
  'POST /authorize',
  'POST /token',
  'OPTIONS /token',
  'POST /register',
  'OPTIONS /register',
  'POST /revoke',
  'OPTIONS /revoke',
]

/** Every (method, path) the app answers, from fastify's own route tree; HEAD is GET's. */
function appRoutes(tree: string): string[] {
  const routes: string[] = []
  // A node's segment follows its parent's (`/`, then `healthz`; `.well-known/oauth-protected-resource`, then `/mcp`).
  const segments: string[] = []
  for (const line of tree.split('\n')) {
    const match = /^(.*?)[├└]── (\S+)(?: \(([^)]+)\))?$/.exec(line)
    if (!match) continue
    segments.length = match[1].length / 4
    segments.push(match[2])
    if (match[3] === undefined) continue
    for (const method of match[3].split(', ')) if (method !== 'HEAD') routes.push(`${method} ${segments.join('')}`)
  }
  return routes.sort()
}

describe.each(BACKENDS)('two workspaces on one %s server', (backend) => {
  useBackend(backend)

  let server: TestServer
  let tokenA: string
  let tokenB: string
  let work: string
  /** B as it was before A tried anything. */
  let before: {status: any; events: any; project: any; pulled: any; snapshot: any}
  let bEventId: string

  const asA = (method: 'GET' | 'POST', path: string, body?: unknown) => call(server.url, tokenA, method, path, body)
  const asB = (method: 'GET' | 'POST', path: string, body?: unknown) => call(server.url, tokenB, method, path, body)
  const wsUrl = () => `${server.url.replace('http', 'ws')}/ws/memory`

  async function stateOfB() {
    return {
      status: (await asB('GET', '/api/memory/status')).body.files,
      events: (await asB('GET', '/v1/memory/events?limit=100')).body,
      project: (await asB('GET', '/api/projects/active')).body,
      pulled: (await asB('POST', '/api/memory/pull', {files: [B_FILE, 'jarvis/claude.json', 'active_project.json']})).body,
      snapshot: (await asB('GET', '/v1/memory/snapshot?scopes=global')).body.pinned_md,
    }
  }

  beforeAll(async () => {
    work = await tempDir('jarvis-ws-')
    server = await startTestServer()
    const target = {dataDir: server.dataDir, databaseUrl: server.databaseUrl}
    tokenA = (await createKey({...target, workspace: 'team-a', agent: 'claude'})).token
    tokenB = (await createKey({...target, workspace: 'team-b', agent: 'claude'})).token
    // B's memory: a file at its second revision, a pinned event, a worker memory, an active project.
    expect((await asB('POST', '/api/memory/push', {files: {[B_FILE]: `# Plan\n\n${SECRET} launch\n`}})).status).toBe(200)
    expect((await asB('POST', '/api/memory/push', {files: {[B_FILE]: `# Plan\n\n${SECRET} launch on Friday\n`}, base: {[B_FILE]: 1}})).status).toBe(200)
    const appended = await asB('POST', '/v1/memory/append', event(`The ${SECRET} is blue.`))
    expect(appended.status, appended.text).toBe(200)
    bEventId = appended.body.event_id
    expect((await asB('POST', '/api/memory/sync-task', task(1))).status).toBe(200)
    expect((await asB('POST', '/api/projects/active', {projectId: 'project-b'})).status).toBe(200)
    before = await stateOfB()
    expect(before.status[B_FILE].rev).toBe(2)
    expect(before.snapshot).toContain(SECRET)
  }, 60_000)

  afterAll(async () => {
    await server?.close()
    await removeAll([server?.dataDir, work].filter(Boolean) as string[])
  })

  it('a key of A tries every route of the app on B\'s memory: it sees none of it and changes none of it', async () => {
    /** Each route of the app, as A tries it; in this order (the MCP tools look before A writes anything). */
    const probes: [string, () => Promise<void>][] = [
      [
        'GET /api/audit',
        async () => {
          // The same agent id as B's key: only team-a's own entries (its key's creation), none of B's pushes or switch.
          const answer = await asA('GET', '/api/audit?limit=500')
          expect(answer.status, answer.text).toBe(200)
          expect(answer.body.entries.map((entry: {kind: string}) => entry.kind)).toEqual(['key'])
          expect(answer.text).not.toContain(B_FILE)
          expect(answer.text).not.toContain('project-b')
        },
      ],
      [
        'POST /mcp',
        async () => {
          const mcp = await httpSession(server.url, tokenA)
          try {
            expect(structured(await mcp.call('memory_ls', {})).files).toEqual([])
            const read = await mcp.call('memory_read', {path: B_FILE})
            expect(read.isError).toBe(true)
            expect(textOf(read)).not.toContain(SECRET)
            expect(structured(await mcp.call('memory_grep', {regex: SECRET})).hits).toEqual([])
            const search = structured(await mcp.call('memory_search', {query: SECRET}))
            expect([...(search.files?.hits ?? []), ...(search.events?.events ?? [])]).toEqual([])
            expect(textOf(await mcp.call('memory_snapshot', {}))).not.toContain(SECRET)
            // The same key as B's pinned event, and B's file's path: A's own, new ones.
            expect(structured(await mcp.call('memory_append', {kind: 'fact', dedupe_key: 'fact:b_secret', content: 'A keeps its own facts.'}))).toMatchObject({events: [{status: 'created'}]})
            expect(structured(await mcp.call('memory_write', {path: B_FILE, content: '# Plan of A\n'}))).toMatchObject({created: true})
          } finally {
            await mcp.close()
          }
        },
      ],
      [
        'GET /mcp',
        async () => expect((await asA('GET', '/mcp')).status).toBe(405),
      ],
      [
        'DELETE /mcp',
        async () => {
          const answer = await fetch(`${server.url}/mcp`, {method: 'DELETE', headers: {authorization: `Bearer ${tokenA}`}})
          expect(answer.status).toBe(405)
        },
      ],
      [
        'GET /api/memory/status',
        async () => {
          const answer = await asA('GET', '/api/memory/status')
          expect(answer.status).toBe(200)
          expect(answer.body.files[B_FILE]).toMatchObject({rev: 1})
          expect(answer.body.files[B_FILE].hash).not.toBe(before.status[B_FILE].hash)
          expect(answer.body.files['jarvis/claude.json']).toBeUndefined()
          expect(answer.body.activeProjectId).not.toBe('project-b')
          expect(answer.body.serverId).not.toBe((await asB('GET', '/api/memory/status')).body.serverId)
        },
      ],
      [
        'POST /api/memory/pull',
        async () => {
          const answer = await asA('POST', '/api/memory/pull', {files: [B_FILE, 'jarvis/claude.json', 'active_project.json']})
          expect(answer.status).toBe(200)
          expect(Object.keys(answer.body.files)).toEqual([B_FILE])
          expect(answer.text).not.toContain(SECRET)
        },
      ],
      [
        'POST /api/memory/push',
        async () => {
          // B's file is at rev 2, A's at rev 1: A's base of 2 is stale in A, and B's file is never reached.
          const stale = await asA('POST', '/api/memory/push', {files: {[B_FILE]: 'overwritten?\n'}, base: {[B_FILE]: 2}})
          expect(stale.status).toBe(409)
          expect(stale.text).not.toContain(SECRET)
          const pushed = await asA('POST', '/api/memory/push', {files: {'notes/a.md': '# A\n'}})
          expect(pushed.status, pushed.text).toBe(200)
        },
      ],
      [
        'POST /api/memory/write',
        async () => {
          const answer = await asA('POST', '/api/memory/write', {path: B_FILE, content: 'written by A\n', base: 2})
          expect(answer.status).toBe(409)
          expect(answer.text).not.toContain(SECRET)
        },
      ],
      [
        'POST /api/memory/sync-task',
        async () => {
          const answer = await asA('POST', '/api/memory/sync-task', task(2))
          expect(answer.status).toBe(200)
          // B's claude has one task already; A's claude has only this one.
          expect(answer.body.totalTasks).toBe(1)
        },
      ],
      [
        'GET /api/projects/active',
        async () => {
          const answer = await asA('GET', '/api/projects/active')
          expect(answer.text).not.toContain('project-b')
        },
      ],
      [
        'POST /api/projects/active',
        async () => expect((await asA('POST', '/api/projects/active', {projectId: 'project-a'})).status).toBe(200),
      ],
      [
        'GET /api/search',
        async () => {
          const answer = await asA('GET', `/api/search?q=${SECRET}`)
          expect(answer.status).toBe(200)
          expect([...(answer.body.files?.hits ?? []), ...(answer.body.events?.events ?? [])]).toEqual([])
          // The same search by B finds B's file and event: the search works, A's finds nothing because nothing is there.
          const ofB = (await asB('GET', `/api/search?q=${SECRET}`)).body
          expect((ofB.files?.hits ?? []).length + (ofB.events?.events ?? []).length).toBeGreaterThan(0)
        },
      ],
      [
        'GET /v1/memory/snapshot',
        async () => {
          const answer = await asA('GET', '/v1/memory/snapshot?scopes=global')
          expect(answer.status).toBe(200)
          expect(answer.text).not.toContain(SECRET)
          expect(answer.body.pinned_md).toContain('A keeps its own facts.')
        },
      ],
      [
        'GET /v1/memory/events',
        async () => {
          const all = await asA('GET', '/v1/memory/events?limit=100')
          expect(all.body.events.map((e: {event_id: string}) => e.event_id)).not.toContain(bEventId)
          expect((await asA('GET', `/v1/memory/events?q=${SECRET}`)).body.total).toBe(0)
        },
      ],
      [
        'POST /v1/memory/append',
        async () => {
          // B's event exactly: in A it is a new event, not B's duplicate.
          const answer = await asA('POST', '/v1/memory/append', event(`The ${SECRET} is blue.`))
          expect(answer.status).toBe(200)
          expect(answer.body.status).toBe('created')
          expect(answer.body.event_id).not.toBe(bEventId)
        },
      ],
      [
        'POST /v1/memory/consolidate',
        async () => expect((await asA('POST', '/v1/memory/consolidate', {})).status).toBe(200),
      ],
      [
        'POST /v1/memory/cleanup',
        async () => {
          const answer = await asA('POST', '/v1/memory/cleanup', {older_than_days: 0, dry_run: false, event_ids: [bEventId]})
          expect(answer.status).toBe(200)
          expect(answer.body.deleted).toEqual([])
          expect(answer.body.skipped).toEqual([bEventId])
        },
      ],
      [
        'GET /api/oauth/authorizations/:id',
        async () => {
          // An app's request waits for whoever signs in; A finds none by a made-up id, and nothing of B.
          const answer = await asA('GET', `/api/oauth/authorizations/authz_${'0'.repeat(32)}`)
          expect(answer.status).toBe(404)
          expect(answer.text).not.toContain(SECRET)
        },
      ],
      [
        'POST /api/oauth/authorizations/:id',
        async () => {
          const answer = await asA('POST', `/api/oauth/authorizations/authz_${'0'.repeat(32)}`, {allow: true})
          expect(answer.status).toBe(404)
        },
      ],
      [
        'GET /ws/memory',
        async () => {
          const socket = await connectWs(wsUrl(), tokenA)
          try {
            const hello = socket.messages.find((message) => message.type === 'HELLO')
            expect(hello).toMatchObject({workspace: 'team-a', seq: (await asA('GET', '/api/memory/status')).body.seq})
          } finally {
            await socket.close()
          }
        },
      ],
    ]
    // Routes that answer without a token and hold no memory of any workspace (the apps' OAuth sign-in among them).
    const open = ['GET /', 'GET /healthz', 'GET /readyz', 'GET /dashboard/app.js', 'GET /dashboard/app.css', ...OAUTH_OPEN_ROUTES]
    const routes = appRoutes(await routeTree())
    expect(routes.length).toBeGreaterThan(open.length)
    expect([...probes.map(([route]) => route), ...open].sort(), 'every route of the app is tried by workspace A (add a probe for a new route)').toEqual(routes)
    for (const path of open.map((route) => route.split(' ')[1])) {
      const answer = await fetch(`${server.url}${path}`)
      expect(answer.status, path).toBeLessThan(500)
      expect(await answer.text(), path).not.toContain(SECRET)
    }

    for (const [route, probe] of probes) {
      try {
        await probe()
      } catch (error) {
        ;(error as Error).message = `${route}: ${(error as Error).message}`
        throw error
      }
    }
    // B is exactly as it was: files and revisions, events, pins, worker memory, active project.
    expect(await stateOfB()).toEqual(before)
    // And the default workspace (the tokens file) holds none of either.
    const ofDefault = await call(server.url, TOKENS.claude, 'GET', '/api/memory/status')
    expect(Object.keys(ofDefault.body.files)).toEqual([])
    expect((await call(server.url, TOKENS.claude, 'GET', `/v1/memory/events?q=${SECRET}`)).body.total).toBe(0)
  }, 60_000)

  /** The app's route tree, from a server built the way `jarvis serve` builds it. */
  async function routeTree(): Promise<string> {
    const dir = await tempDir('jarvis-ws-routes-')
    const probe = await startServer({host: '127.0.0.1', port: 0, dataDir: dir, tokens: {'t-routes-only-0000': 'claude'}, logLevel: 'silent'})
    try {
      return probe.app.printRoutes({commonPrefix: false})
    } finally {
      await probe.close()
      await removeAll([dir])
    }
  }

  it('a WebSocket client of A hears none of B\'s broadcasts, while B\'s hears them all', async () => {
    const clients: WsClient[] = []
    try {
      const ofA = await connectWs(wsUrl(), tokenA)
      const ofB = await connectWs(wsUrl(), tokenB)
      const ofDefault = await connectWs(wsUrl(), TOKENS.claude)
      clients.push(ofA, ofB, ofDefault)
      expect((await asB('POST', '/api/memory/push', {files: {'notes/b-ws.md': `${SECRET}\n`}})).status).toBe(200)
      expect((await asB('POST', '/api/projects/active', {projectId: 'project-b-ws'})).status).toBe(200)
      expect((await asB('POST', '/v1/memory/append', event(`${SECRET} over the socket`, 'fact:b_ws'))).status).toBe(200)
      await ofB.next((m) => m.type === 'MEM_UPDATE' && m.path === 'notes/b-ws.md', 20_000)
      await ofB.next((m) => m.type === 'STATE_CHANGED' && m.projectId === 'project-b-ws', 20_000)
      await ofB.next((m) => m.type === 'EVENT_APPENDED' && m.dedupe_key === 'fact:b_ws', 20_000)
      // A's own change reaches A after everything B sent: had B's reached A, they would be here before it.
      expect((await asA('POST', '/api/memory/push', {files: {'notes/a-ws.md': 'A\n'}})).status).toBe(200)
      await ofA.next((m) => m.type === 'MEM_UPDATE' && m.path === 'notes/a-ws.md', 20_000)
      expect((await call(server.url, TOKENS.claude, 'POST', '/api/memory/push', {files: {'notes/default-ws.md': 'D\n'}})).status).toBe(200)
      await ofDefault.next((m) => m.type === 'MEM_UPDATE' && m.path === 'notes/default-ws.md', 20_000)
      for (const client of [ofA, ofDefault]) {
        // Its own push and that push's audit entry, nothing of B's.
        await client.next((m) => m.type === 'AUDIT_APPENDED' && m.kind === 'push', 20_000)
        const heard = client.messages.filter((m) => m.type !== 'HELLO')
        expect(heard.map((m) => m.type).sort()).toEqual(['AUDIT_APPENDED', 'MEM_UPDATE'])
        expect(JSON.stringify(heard)).not.toMatch(/b-ws|project-b|fact:b_ws/)
      }
    } finally {
      for (const client of clients) await client.close()
    }
  })

  it('each workspace has a storage of its own: a SQLite file under workspaces/, or a PostgreSQL schema', async () => {
    if (currentBackend() === 'sqlite') {
      expect(existsSync(join(server.dataDir, 'workspaces', 'team-b', 'jarvis.sqlite'))).toBe(true)
      expect(existsSync(join(server.dataDir, 'jarvis.sqlite'))).toBe(true)
      return
    }
    const client = new pg.Client({connectionString: server.databaseUrl})
    await client.connect()
    try {
      const schemas = (await client.query<{nspname: string}>("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'jarvis_ws_%' ORDER BY nspname")).rows.map((row) => row.nspname)
      expect(schemas).toEqual(['jarvis_ws_team_a', 'jarvis_ws_team_b'])
      const files = await client.query<{path: string}>('SELECT path FROM jarvis_ws_team_b.files ORDER BY path')
      expect(files.rows.map((row) => row.path)).toContain(B_FILE)
    } finally {
      await client.end()
    }
  })
})

describe('workspaces on several server processes over one PostgreSQL database', () => {
  useBackend('postgres')
  const processes: ServerProcess[] = []
  let dir: string

  afterAll(async () => {
    for (const started of processes) await started.stop()
    if (dir) await removeAll([dir])
  })

  it('a broadcast of B from one process reaches B\'s clients on the other, never A\'s', async () => {
    dir = await tempDir('jarvis-ws-team-')
    const dataDir = join(dir, 'data')
    processes.push(await startServerProcess(dataDir))
    processes.push(await startServerProcess(dataDir))
    const [one, two] = processes
    const target = {dataDir, databaseUrl: await databaseFor(dataDir)}
    const a = (await createKey({...target, workspace: 'team-a', agent: 'claude'})).token
    const b = (await createKey({...target, workspace: 'team-b', agent: 'claude'})).token
    const ws = (url: string, token: string) => connectWs(`${url.replace('http', 'ws')}/ws/memory`, token)
    const ofA = await ws(two.url, a)
    const ofB = await ws(two.url, b)
    try {
      expect((await call(one.url, b, 'POST', '/api/memory/push', {files: {'notes/b.md': `${SECRET}\n`}})).status).toBe(200)
      await ofB.next((m) => m.type === 'MEM_UPDATE' && m.path === 'notes/b.md', 20_000)
      expect((await call(one.url, a, 'POST', '/api/memory/push', {files: {'notes/a.md': 'A\n'}})).status).toBe(200)
      await ofA.next((m) => m.type === 'MEM_UPDATE' && m.path === 'notes/a.md', 20_000)
      expect(ofA.messages.filter((m) => m.type === 'MEM_UPDATE').map((m) => m.path)).toEqual(['notes/a.md'])
      expect(ofB.messages.filter((m) => m.type === 'MEM_UPDATE').map((m) => m.path)).toEqual(['notes/b.md'])
    } finally {
      await ofA.close()
      await ofB.close()
    }
  }, 60_000)
})
