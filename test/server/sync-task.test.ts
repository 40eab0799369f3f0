/** POST /api/memory/sync-task, /api/projects/active and the WebSocket broadcasts, against a real server. */
import {afterEach, describe, expect, it} from 'vitest'

import {fakeGithubToken} from '../files/helpers.js'
import {Cleanup, connectWs, harness, type Harness} from './helpers.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

function task(n: number, extra: Record<string, unknown> = {}) {
  return {
    taskId: `task-${String(n).padStart(3, '0')}`,
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
    type: 'code',
    input: `do ${n}`,
    output: `done ${n}`,
    success: n % 4 !== 0,
    responseTime: 100 + n,
    model: 'claude-sonnet',
    filesModified: [`src/f${n}.ts`],
    ...extra,
  }
}

async function ws(h: Harness, agent: 'claude' | 'gemini' = 'gemini') {
  const client = await connectWs(h.server.wsUrl, h.tokens[agent])
  cleanup.add(() => client.close())
  return client
}

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  describe('POST /api/memory/sync-task', () => {
    it('creates and updates jarvis/<agent>.json, answers the worker memory, broadcasts MEM_UPDATE', async () => {
      const h = await harness(cleanup)
      const watcher = await ws(h, 'gemini')
      const answer = await h.call('POST', '/api/memory/sync-task', task(1))
      expect(answer.status).toBe(200)
      expect(answer.body).toMatchObject({
        workerId: 'claude',
        status: 'online',
        totalTasks: 1,
        successRate: 1,
        lastActive: expect.any(String),
        recentTasks: [{taskId: 'task-001', success: true}],
        context: {lastFiles: ['src/f1.ts']},
        performance: {averageResponseTime: 101, errorRate: 0},
      })
      expect(answer.headers['x-jarvis-rev']).toBe('1')
      const update = await watcher.next((m) => m.type === 'MEM_UPDATE' && m.path === 'jarvis/claude.json')
      expect(update).toMatchObject({type: 'MEM_UPDATE', path: 'jarvis/claude.json', rev: 1, author: 'claude', seq: 1, hash: expect.any(String)})

      // the file is what a client pulls
      const pulled = await h.call('POST', '/api/memory/pull', {files: ['jarvis/claude.json']})
      expect(JSON.parse(pulled.body.files['jarvis/claude.json'].content)).toEqual(answer.body)
      expect(pulled.body.files['jarvis/claude.json'].content.endsWith('}\n')).toBe(true)

      const second = await h.call('POST', '/api/memory/sync-task', task(4, {agentId: 'claude', workerId: 'claude'}))
      expect(second.body).toMatchObject({totalTasks: 2, successRate: 0.5, performance: {errorRate: 0.5}})
      expect(second.body.recentTasks.map((t: {taskId: string}) => t.taskId)).toEqual(['task-004', 'task-001'])
    })

    it('keeps the newest 50 of 60 tasks and counts all 60', async () => {
      const h = await harness(cleanup)
      const order = Array.from({length: 60}, (_, i) => i + 1).sort(() => Math.random() - 0.5)
      let last
      for (const n of order) last = await h.call('POST', '/api/memory/sync-task', task(n))
      expect(last?.status).toBe(200)
      const memory = last?.body
      expect(memory.totalTasks).toBe(60)
      expect(memory.recentTasks).toHaveLength(50)
      expect(memory.recentTasks.map((t: {taskId: string}) => t.taskId)).toEqual(Array.from({length: 50}, (_, i) => `task-${String(60 - i).padStart(3, '0')}`))
      expect(memory.successRate).toBeCloseTo(45 / 60, 5)
    })

    it('is idempotent per taskId: the same task twice counts once and broadcasts once', async () => {
      const h = await harness(cleanup)
      const watcher = await ws(h)
      const first = await h.call('POST', '/api/memory/sync-task', task(7))
      const again = await h.call('POST', '/api/memory/sync-task', task(7, {output: 'different text'}))
      expect(again.status).toBe(200)
      expect(again.body).toEqual(first.body)
      expect((await h.status()).body.seq).toBe(1)
      // even once the task has left the 50 recent ones
      for (let n = 100; n < 151; n++) await h.call('POST', '/api/memory/sync-task', task(n))
      const late = await h.call('POST', '/api/memory/sync-task', task(7))
      expect(late.body.totalTasks).toBe(52)
      await h.call('POST', '/api/memory/sync-task', task(200))
      await watcher.next((m) => m.type === 'MEM_UPDATE' && m.seq === 53)
      expect(watcher.messages.filter((m) => m.type === 'MEM_UPDATE')).toHaveLength(53)
    })

    it('answers 403 when the body names another agent, 400 for a bad task, and writes nothing', async () => {
      const h = await harness(cleanup)
      const other = await h.call('POST', '/api/memory/sync-task', task(1, {agentId: 'gemini'}))
      expect(other.status).toBe(403)
      expect(other.body).toMatchObject({error: 'forbidden', field: 'body/agentId'})
      const worker = await h.call('POST', '/api/memory/sync-task', task(1, {workerId: 'gemini'}))
      expect(worker.status).toBe(403)
      const missing = await h.call('POST', '/api/memory/sync-task', {taskId: 'x', type: 'code', success: true})
      expect(missing.status).toBe(400)
      expect(missing.body).toMatchObject({error: 'bad_request', field: 'body/timestamp'})
      const badTime = await h.call('POST', '/api/memory/sync-task', task(1, {timestamp: 'yesterday'}))
      expect(badTime.status).toBe(400)
      expect(badTime.body.field).toBe('body/timestamp')
      expect((await h.status()).body.seq).toBe(0)
    })

    it('merges into a worker memory a client pushed, and refuses to touch one that is not a worker memory', async () => {
      const h = await harness(cleanup)
      const pushed = {workerId: 'claude', modelId: 'opus', totalTasks: 10, successRate: 0.9, recentTasks: [task(1)], expertise: {ts: 3}, custom: 'kept'}
      await h.push({'jarvis/claude.json': JSON.stringify(pushed)})
      const answer = await h.call('POST', '/api/memory/sync-task', task(2))
      expect(answer.body).toMatchObject({modelId: 'opus', totalTasks: 11, expertise: {ts: 3}, custom: 'kept'})
      expect(answer.body.successRate).toBeCloseTo(10 / 11, 5)
      // a task the client already recorded is not counted again
      const dup = await h.call('POST', '/api/memory/sync-task', task(1))
      expect(dup.body.totalTasks).toBe(11)

      await h.push({'jarvis/gemini.json': '{"notAWorker": true}'}, undefined, undefined, 'gemini')
      const refused = await h.call('POST', '/api/memory/sync-task', task(3), {agent: 'gemini'})
      expect(refused.status).toBe(422)
      expect(refused.body).toMatchObject({error: 'invalid_content', path: 'jarvis/gemini.json'})
    })

    it('refuses a task holding a secret or personal data like any push: 422 sensitive, nothing stored, the refusal audited', async () => {
      const h = await harness(cleanup)
      const token = fakeGithubToken()
      const mail = ['ana', 'acme-corp.io'].join('@')
      for (const secret of [{output: `released with ${token}`}, {input: `mail ${mail} the report`}, {filesModified: [`notes/${token}.md`]}]) {
        const refused = await h.call('POST', '/api/memory/sync-task', task(1, secret))
        expect(refused.status, JSON.stringify(secret)).toBe(422)
        expect(refused.body).toMatchObject({error: 'sensitive', path: 'jarvis/claude.json', findings: expect.arrayContaining([expect.objectContaining({field: '.memory/jarvis/claude.json'})])})
        expect(refused.body.message).toMatch(/^refused: found (a GitHub token|an e-mail address) in \.memory\/jarvis\/claude\.json at line \d+, column \d+[.;]/)
        expect(refused.text).not.toContain(token)
        expect(refused.text).not.toContain(mail)
      }
      expect((await h.status()).body.seq).toBe(0)
      const audit = await h.call('GET', '/api/audit')
      expect(audit.body.entries[0]).toMatchObject({kind: 'refused', agent: 'claude', paths: ['jarvis/claude.json'], detail: expect.stringMatching(/^a task result for jarvis\/claude\.json refused: it held a GitHub token/)})
      expect(audit.text).not.toContain(token)
      // A clean task is recorded as ever.
      expect((await h.call('POST', '/api/memory/sync-task', task(2))).status).toBe(200)
    })

    it('records concurrent tasks of one agent without losing any', async () => {
      const h = await harness(cleanup)
      const answers = await Promise.all(Array.from({length: 20}, (_, i) => h.call('POST', '/api/memory/sync-task', task(i + 1))))
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200))
      const pulled = await h.call('POST', '/api/memory/pull', {files: ['jarvis/claude.json']})
      const memory = JSON.parse(pulled.body.files['jarvis/claude.json'].content)
      expect(memory.totalTasks).toBe(20)
      expect(memory.recentTasks).toHaveLength(20)
    })
  })

  describe('/api/projects/active', () => {
    it('answers 404 before any switch, then GET/POST with STATE_CHANGED and MEM_UPDATE', async () => {
      const h = await harness(cleanup)
      expect((await h.call('GET', '/api/projects/active')).body).toMatchObject({error: 'not_found'})
      const watcher = await ws(h, 'claude')
      const before = Date.now()
      const switched = await h.call('POST', '/api/projects/active', {projectId: 'atelier'}, {agent: 'gemini'})
      expect(switched.status).toBe(200)
      expect(switched.body).toEqual({projectId: 'atelier', switchedAt: expect.any(String), switchedBy: 'user-cli'})
      expect(Date.parse(switched.body.switchedAt)).toBeGreaterThanOrEqual(before - 1000)
      expect((await h.call('GET', '/api/projects/active')).body).toEqual(switched.body)
      expect(await watcher.next((m) => m.type === 'STATE_CHANGED')).toEqual({type: 'STATE_CHANGED', ...switched.body})
      expect(await watcher.next((m) => m.type === 'MEM_UPDATE')).toMatchObject({path: 'active_project.json', author: 'gemini', rev: 1})
      expect((await h.status()).body.activeProjectId).toBe('atelier')

      const web = await h.call('POST', '/api/projects/active', {projectId: 'other', switchedBy: 'user-web'})
      expect(web.body).toMatchObject({projectId: 'other', switchedBy: 'user-web'})
      await watcher.next((m) => m.type === 'STATE_CHANGED' && m.projectId === 'other')

      for (const body of [{}, {projectId: ''}, {projectId: 'x', switchedBy: 'robot'}, {projectId: 3}]) {
        const bad = await h.call('POST', '/api/projects/active', body)
        expect(bad.status, JSON.stringify(body)).toBe(400)
        expect(bad.body.error).toBe('bad_request')
        expect(bad.body.field).toMatch(/^body\/(projectId|switchedBy)$/)
      }
    })

    it('announces a pushed active_project.json as STATE_CHANGED too', async () => {
      const h = await harness(cleanup)
      const watcher = await ws(h)
      const value = {projectId: 'pushed', switchedAt: '2026-02-02T10:00:00Z', switchedBy: 'system'}
      await h.push({'active_project.json': JSON.stringify(value)})
      expect(await watcher.next((m) => m.type === 'STATE_CHANGED')).toEqual({type: 'STATE_CHANGED', ...value})
      expect((await h.call('GET', '/api/projects/active')).body).toEqual(value)
    })
  })

  describe('/ws/memory', () => {
    it('broadcasts every write and deletion to every client, answers PING with PONG, accepts ?token=', async () => {
      const h = await harness(cleanup)
      const one = await ws(h, 'claude')
      const two = await connectWs(h.server.wsUrl, h.tokens.gemini, 'query')
      cleanup.add(() => two.close())
      expect(two.messages[0]).toMatchObject({type: 'HELLO', agentId: 'gemini', seq: 0})
      await h.push({'a.md': 'a', 'b.md': 'b'})
      await h.push({}, undefined, ['a.md'], 'gemini')
      for (const client of [one, two]) {
        await client.next((m) => m.type === 'MEM_UPDATE' && m.deleted === true)
        const updates = client.messages.filter((m) => m.type === 'MEM_UPDATE')
        expect(updates).toEqual([
          {type: 'MEM_UPDATE', path: 'a.md', rev: 1, author: 'claude', seq: 1, hash: expect.any(String), updatedAt: expect.any(String)},
          {type: 'MEM_UPDATE', path: 'b.md', rev: 1, author: 'claude', seq: 1, hash: expect.any(String), updatedAt: expect.any(String)},
          {type: 'MEM_UPDATE', path: 'a.md', rev: 2, author: 'gemini', seq: 2, deleted: true, updatedAt: expect.any(String)},
        ])
      }
      one.socket.send(JSON.stringify({type: 'PING'}))
      expect(await one.next((m) => m.type === 'PONG')).toMatchObject({type: 'PONG', serverTime: expect.any(String)})
      one.socket.send('not json')
      expect(await one.next((m) => m.type === 'ERROR')).toMatchObject({error: 'bad_json'})
    })

    it('refuses an upgrade without a valid token', async () => {
      const h = await harness(cleanup)
      await expect(connectWs(h.server.wsUrl, 'wrong-token-123')).rejects.toThrow(/failed to open/)
      await expect(connectWs(h.server.wsUrl, 'wrong-token-123', 'query')).rejects.toThrow(/failed to open/)
    })
  })
})
