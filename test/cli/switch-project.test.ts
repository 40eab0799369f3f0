import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {WebSocket} from 'undici'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {switchProject} from '../../src/ops/task.js'
import {MemoryClient} from '../../src/protocol/client.js'
import {initTree, readOutbox} from '../../src/store/index.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {removeAll, startTestServer, tempDir, TOKENS, type TestServer} from '../helpers/world.js'
import {closedPort} from './memory-helpers.js'


/** No user config from the developer's machine. */
function cleanEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {XDG_CONFIG_HOME: join(home, 'xdg'), ...extra}
}

async function activeProject(server: TestServer) {
  const client = new MemoryClient({server: server.url, token: TOKENS.gemini})
  try {
    return await client.activeProject()
  } finally {
    await client.close()
  }
}

/** A WebSocket subscriber that records what the server broadcasts. */
async function subscribe(server: TestServer, agent: string): Promise<{messages: {type: string; [k: string]: unknown}[]; close(): void}> {
  const messages: {type: string}[] = []
  const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}/ws/memory`, {headers: {authorization: `Bearer ${TOKENS[agent]}`}})
  ws.addEventListener('message', (event) => messages.push(JSON.parse(String(event.data))))
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve())
    ws.addEventListener('error', () => reject(new Error('websocket failed')))
  })
  return {messages, close: () => ws.close()}
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, deadlineMs = 20_000): Promise<T> {
  const end = Date.now() + deadlineMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('jarvis switch-project', () => {
  const dirs: string[] = []
  const cleanups: (() => void | Promise<void>)[] = []
  let root: string

  beforeEach(async () => {
    root = await tempDir('jarvis-switch-')
    dirs.push(root)
  })
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    await removeAll(dirs.splice(0))
  })

  async function server(): Promise<TestServer> {
    const started = await startTestServer()
    dirs.push(started.dataDir)
    cleanups.push(() => started.close())
    return started
  }

  it('online: the server answers the new project and every subscriber hears STATE_CHANGED', async () => {
    const srv = await server()
    await initTree(root, {server: srv.url, agent: 'claude'})
    const listener = await subscribe(srv, 'gemini')
    cleanups.push(() => listener.close())

    const run = await runJarvis(['switch-project', 'proj-x', '--dir', root, '--json'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
    expect(run.code, run.stderr).toBe(0)
    const result = envelope<{projectId: string; switchedBy: string; switchedAt: string}>(run).result!
    expect(result).toMatchObject({projectId: 'proj-x', switchedBy: 'user-cli'})
    expect(await activeProject(srv)).toMatchObject({projectId: 'proj-x', switchedBy: 'user-cli'})
    // This tree shows it at once, not at the next sync, and that sync finds nothing to move.
    expect(JSON.parse(await readFile(join(root, '.memory', 'active_project.json'), 'utf8'))).toMatchObject({projectId: 'proj-x'})
    const synced = envelope<{pushed: string[]; pulled: string[]; merged: string[]}>(await runJarvis(['sync', '--dir', root, '--json'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})).result!
    expect([...synced.pushed, ...synced.pulled, ...synced.merged]).toEqual([])
    const changed = await until('STATE_CHANGED', () => listener.messages.find((m) => m.type === 'STATE_CHANGED'))
    expect(changed).toMatchObject({projectId: 'proj-x'})

    const human = await runJarvis(['switch-project', 'proj-y', '--dir', root], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
    expect(human.code).toBe(0)
    expect(human.stdout).toMatch(/active project: proj-y/)
    expect((await activeProject(srv)).projectId).toBe('proj-y')
  })

  it('offline: queues the switch, exits 3 saying so, and the next sync sends it', async () => {
    await initTree(root, {server: `http://127.0.0.1:${await closedPort()}`, agent: 'claude'})
    const run = await runJarvis(['switch-project', 'proj-offline', '--dir', root, '--json'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
    expect(run.code).toBe(3)
    const error = envelope(run).error!
    expect(error.message).toMatch(/queued.*next `jarvis sync`/s)
    expect(error.data).toMatchObject({queued: true, kind: 'active-project', projectId: 'proj-offline'})
    const outbox = await readOutbox(root)
    expect(outbox).toEqual([expect.objectContaining({id: error.data!.id, kind: 'active-project', payload: {projectId: 'proj-offline', switchedBy: 'user-cli'}})])

    const srv = await server()
    const sync = await runJarvis(['sync', '--dir', root, '--server', srv.url, '--json'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
    expect(sync.code, sync.stdout + sync.stderr).toBe(0)
    expect(await readOutbox(root)).toEqual([])
    expect(await activeProject(srv)).toMatchObject({projectId: 'proj-offline', switchedBy: 'user-cli'})
  })

  it('offline, a switch a person made elsewhere (the chat bot) is sent as theirs by the next sync', async () => {
    await initTree(root, {server: `http://127.0.0.1:${await closedPort()}`, agent: 'claude'})
    const previous = process.env.JARVIS_TOKEN
    process.env.JARVIS_TOKEN = TOKENS.claude
    try {
      await expect(switchProject({dir: root, projectId: 'proj-web', switchedBy: 'user-web'})).rejects.toMatchObject({data: {queued: true}})
    } finally {
      if (previous === undefined) delete process.env.JARVIS_TOKEN
      else process.env.JARVIS_TOKEN = previous
    }
    const srv = await server()
    const sync = await runJarvis(['sync', '--dir', root, '--server', srv.url, '--json'], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
    expect(sync.code, sync.stdout + sync.stderr).toBe(0)
    expect(await activeProject(srv)).toMatchObject({projectId: 'proj-web', switchedBy: 'user-web'})
  })

  it('refuses a project id that is not a slug (exit 2, nothing queued, the server keeps its project); the server refuses it too', async () => {
    const srv = await server()
    await initTree(root, {server: srv.url, agent: 'claude'})
    expect((await runJarvis(['switch-project', 'atlas', '--dir', root], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})).code).toBe(0)
    for (const id of ['Atlas Project', 'line1\nline2', '../x']) {
      const run = await runJarvis(['switch-project', id, '--dir', root], {env: cleanEnv(root, {JARVIS_TOKEN: TOKENS.claude})})
      expect(run.code, id).toBe(2)
      expect(run.stderr).toContain(`projectId: must be 1-64 characters of a-z, 0-9, ".", "_" or "-", starting with a letter or digit (got ${JSON.stringify(id)})`)
    }
    expect(await readOutbox(root)).toEqual([])
    expect((await activeProject(srv)).projectId).toBe('atlas')
    const direct = await fetch(`${srv.url}/api/projects/active`, {method: 'POST', headers: {authorization: `Bearer ${TOKENS.claude}`, 'content-type': 'application/json'}, body: JSON.stringify({projectId: 'Atlas Project'})})
    expect(direct.status).toBe(400)
    expect(await direct.text()).toContain('projectId')
    expect((await activeProject(srv)).projectId).toBe('atlas')
  })

  it('a refused token is not queued: it would be refused again', async () => {
    const srv = await server()
    await initTree(root, {server: srv.url, agent: 'claude'})
    const run = await runJarvis(['switch-project', 'proj-z', '--dir', root, '--json'], {env: cleanEnv(root, {JARVIS_TOKEN: 'not-a-known-token'})})
    expect(run.code).toBe(3)
    expect(envelope(run).error!.data).not.toHaveProperty('queued')
    expect(await readOutbox(root)).toEqual([])
  })
})
