import {createServer, type IncomingMessage, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {makeClient, removeAll, type TestClient} from '../helpers/world.js'

/**
 * The one fake server of the suite, on purpose: it implements no more than seed 000 — timestamps, no
 * hash, no rev, no `since`, no tombstones, `.json` files held as JSON values — to prove that a client
 * still syncs with such a server, deciding against its own recorded base.
 */
function seedServer(): {server: Server; files: Map<string, {content: unknown; updatedAt: string}>; pushes: number} {
  const files = new Map<string, {content: unknown; updatedAt: string}>()
  const state = {server: undefined as unknown as Server, files, pushes: 0}
  let clock = Date.UTC(2026, 0, 1)
  const tick = () => new Date((clock += 1000)).toISOString()
  const body = (req: IncomingMessage) =>
    new Promise<any>((resolve) => {
      let text = ''
      req.on('data', (chunk) => (text += chunk))
      req.on('end', () => resolve(text ? JSON.parse(text) : {}))
    })
  state.server = createServer(async (req, res) => {
    const send = (value: unknown) => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(value))
    }
    if (req.method === 'GET' && req.url === '/api/memory/status') {
      return send({serverTime: tick(), files: Object.fromEntries([...files].map(([path, f]) => [path, {updatedAt: f.updatedAt}])), activeProjectId: null})
    }
    if (req.method === 'POST' && req.url === '/api/memory/pull') {
      const {files: wanted} = await body(req)
      return send({files: Object.fromEntries(wanted.filter((p: string) => files.has(p)).map((p: string) => [p, files.get(p)]))})
    }
    if (req.method === 'POST' && req.url === '/api/memory/push') {
      const {files: pushed} = await body(req)
      state.pushes++
      for (const [path, content] of Object.entries(pushed as Record<string, string>)) {
        files.set(path, {content: path.endsWith('.json') ? JSON.parse(content) : content, updatedAt: tick()})
      }
      return send({success: true})
    }
    res.statusCode = 404
    res.end()
  })
  return state
}

let fake: ReturnType<typeof seedServer>
let url: string
const cleanup: string[] = []

beforeEach(async () => {
  fake = seedServer()
  await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`
})

afterEach(async () => {
  await new Promise((resolve) => fake.server.close(resolve))
  await removeAll(cleanup.splice(0))
})

async function client(agent: string): Promise<TestClient> {
  const made = await makeClient(url, agent)
  cleanup.push(made.root)
  return made
}

describe('a server with only the seed fields (timestamp mode)', () => {
  it('pushes, pulls, merges and says that it ran in timestamp mode', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('PROJECT_MEMORY.md', '# P\n\n- one\n- two\n- three\n')
    await a.write('projects.json', '{"alpha": 1}\n')
    const first = await a.sync()
    expect(first.mode).toBe('timestamp')
    expect(first.pushed.sort()).toEqual(['PROJECT_MEMORY.md', 'projects.json'])

    const pulled = await b.sync()
    expect(pulled.pulled.sort()).toEqual(['PROJECT_MEMORY.md', 'projects.json'])
    // The seed server sent projects.json as a JSON value: written pretty-printed.
    expect(JSON.parse((await b.read('projects.json'))!)).toEqual({alpha: 1})

    await a.write('PROJECT_MEMORY.md', '# P\n\n- one, by A\n- two\n- three\n')
    await b.write('PROJECT_MEMORY.md', '# P\n\n- one\n- two\n- three, by B\n')
    await a.sync()
    const merged = await b.sync()
    expect(merged.merged).toEqual(['PROJECT_MEMORY.md'])
    await a.sync()
    expect(await a.read('PROJECT_MEMORY.md')).toBe('# P\n\n- one, by A\n- two\n- three, by B\n')
    expect(await b.read('PROJECT_MEMORY.md')).toBe(await a.read('PROJECT_MEMORY.md'))
  })

  it('decides by the recorded base, so an unchanged tree pushes nothing', async () => {
    const a = await client('claude')
    await a.write('notes.md', 'n\n')
    await a.sync()
    const pushesBefore = fake.pushes
    const again = await a.sync()
    expect(again.pushed).toEqual([])
    expect(fake.pushes).toBe(pushesBefore)
  })

  it('does not claim to delete on a server that has no deletions, and keeps the file there', async () => {
    const a = await client('claude')
    await a.write('gone.md', 'bye\n')
    await a.sync()
    await a.remove('gone.md')
    const result = await a.sync()
    expect(result.deleted).toEqual([])
    expect(fake.files.has('gone.md')).toBe(true)
    expect((await a.sync()).pulled).toEqual([])
  })
})
