/**
 * CONTRACT §3: "a client must also work with a server that implements only the seed's fields (timestamps, no
 * hash/rev): it then decides by timestamps against its own recorded base and says that it ran in that mode."
 * Black-box: the real `jarvis` binary, as a user runs it, against a stand-in written from the protocol table alone
 * (protocol-stand-in.ts: status `{files: {path: {updatedAt}}}` and nothing more, pull, push, projects/active), and
 * what the commands that need more (the event log, finished tasks) say there.
 * The engine's cases, races included, are test/sync/timestamp-mode.test.ts.
 */
import {readFile, utimes} from 'node:fs/promises'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {envelope} from '../helpers/cli.js'
import {tokenMap} from '../helpers/world.js'
import {type ProtocolStandIn, startProtocolStandIn, type SwitchAnswer} from './protocol-stand-in.js'
import {cliTrees, flat, put, read, type SyncReport} from './cli-trees.js'

let standIn: ProtocolStandIn
const {tree, removeTrees} = cliTrees('jarvis-protocol-only', () => standIn.url)

beforeEach(async () => {
  standIn = await startProtocolStandIn(tokenMap)
})

afterEach(async () => {
  await standIn.close()
  await removeTrees()
})

const memo = (lines: string[]) => `${lines.join('\n')}\n`

describe('jarvis against a server with only the protocol’s fields', () => {
  it('sync, sync --dry-run and sync --json: two trees converge, merge, settle a conflict, and say timestamp mode', async () => {
    const a = await tree('claude')
    const b = await tree('gemini')
    await put(a.root, 'PROJECT_MEMORY.md', memo(['# P', '', '- one', '- two', '- three']))

    const dry = await a.run(['sync', '--dry-run'])
    expect(dry.code, dry.stderr).toBe(0)
    expect(flat(dry.stdout)).toContain('(timestamp mode); nothing was changed')
    expect(envelope<SyncReport>(await a.run(['sync', '--dry-run', '--json'])).result).toMatchObject({mode: 'timestamp', plan: {push: ['PROJECT_MEMORY.md']}})
    expect(standIn.files.size).toBe(0)

    const first = await a.run(['sync'])
    expect(first.code, first.stderr).toBe(0)
    expect(flat(first.stdout)).toContain('(timestamp mode: the server has no revisions, decided against the recorded base)')
    const pulled = envelope<SyncReport>(await b.run(['sync', '--json']))
    expect(pulled.status).toBe(0)
    expect(pulled.result).toMatchObject({mode: 'timestamp', pulled: ['PROJECT_MEMORY.md']})

    // Different lines: both survive.
    await put(a.root, 'PROJECT_MEMORY.md', memo(['# P', '', '- one, by A', '- two', '- three']))
    await put(b.root, 'PROJECT_MEMORY.md', memo(['# P', '', '- one', '- two', '- three, by B']))
    expect((await a.run(['sync'])).code).toBe(0)
    expect(envelope<SyncReport>(await b.run(['sync', '--json'])).result).toMatchObject({mode: 'timestamp', merged: ['PROJECT_MEMORY.md']})
    expect((await a.run(['sync'])).code).toBe(0)
    const both = memo(['# P', '', '- one, by A', '- two', '- three, by B'])
    expect(await read(a.root, 'PROJECT_MEMORY.md')).toBe(both)
    expect(await read(b.root, 'PROJECT_MEMORY.md')).toBe(both)

    // The same line: the server's side is kept, the local one backed up, exit 4.
    await put(a.root, 'PROJECT_MEMORY.md', memo(['# P', '', '- one, by A', '- two on Monday', '- three, by B']))
    await put(b.root, 'PROJECT_MEMORY.md', memo(['# P', '', '- one, by A', '- two on Tuesday', '- three, by B']))
    expect((await a.run(['sync'])).code).toBe(0)
    const conflicted = await b.run(['sync'])
    expect(conflicted.code, conflicted.stderr).toBe(4)
    expect(flat(conflicted.stdout)).toContain('timestamp mode')
    expect(flat(conflicted.stderr)).toContain('yours in .memory/PROJECT_MEMORY.local.bak')
    expect(await read(b.root, 'PROJECT_MEMORY.md')).toContain('two on Monday')
    expect(await read(b.root, 'PROJECT_MEMORY.local.bak')).toContain('two on Tuesday')

    // It asked nothing such a server does not answer.
    expect(standIn.requests.filter((r) => r.query !== '')).toEqual([])
    for (const push of standIn.requests.filter((r) => r.route === 'POST /api/memory/push')) expect(Object.keys(push.body as object)).toEqual(['files'])
  }, 240_000)

  it('touching every file uploads nothing', async () => {
    const a = await tree('claude')
    for (const path of ['PROJECT_MEMORY.md', 'projects.json']) await put(a.root, path, path.endsWith('.json') ? '{"x": 1}\n' : '# P\n')
    expect((await a.run(['sync'])).code).toBe(0)
    const later = new Date(Date.now() + 3_600_000)
    for (const path of ['PROJECT_MEMORY.md', 'projects.json']) await utimes(join(a.root, '.memory', path), later, later)
    const before = standIn.requests.length
    const touched = envelope<SyncReport>(await a.run(['sync', '--json']))
    expect(touched.result).toMatchObject({mode: 'timestamp', pushed: [], pulled: [], merged: []})
    expect(standIn.requests.slice(before).map((r) => r.route)).toEqual(['GET /api/memory/status'])
  })

  it('status: the server answers, in timestamp mode, and local changes are measured against the recorded base', async () => {
    const a = await tree('claude')
    await put(a.root, 'one.md', '1\n')
    await put(a.root, 'two.md', '2\n')
    expect((await a.run(['sync'])).code).toBe(0)
    await put(a.root, 'two.md', '2, changed\n')
    const status = await a.run(['status'])
    expect(status.code, status.stderr).toBe(0)
    expect(flat(status.stdout)).toContain(`server ${standIn.url}: answers (2 files; timestamp mode`)
    const json = envelope<{remote: {state: string; files: number; mode: string}; changes: {modified: string[]}}>(await a.run(['status', '--json'])).result!
    expect(json.remote).toEqual({state: 'answers', files: 2, mode: 'timestamp'})
    expect(json.changes.modified).toEqual(['two.md'])
  })

  it('memory append, task complete, consolidate and cleanup exit 3, saying what the server lacks and that nothing was written or queued', async () => {
    const a = await tree('claude')
    const appended = await a.run(['memory', 'append', '--kind', 'fact', '--key', 'fact:k1', '--content', 'hello'])
    expect(appended.code, appended.stderr).toBe(3)
    expect(flat(appended.stderr)).toContain(`the server at ${standIn.url} has no shared event log: POST /v1/memory/append answered 404`)
    expect(flat(appended.stderr)).toContain('the event fact:k1 was not written, and not queued: this server would refuse it again')
    const task = await a.run(['task', 'complete', '--type', 'review', '--task-id', 'task-1'])
    expect(task.code, task.stderr).toBe(3)
    expect(flat(task.stderr)).toContain(`the server at ${standIn.url} does not record finished tasks: POST /api/memory/sync-task answered 404`)
    expect(flat(task.stderr)).toContain('the task task-1 was not recorded, and not queued')
    for (const args of [['memory', 'consolidate'], ['memory', 'cleanup', '--older-than', '30d', '--dry-run'], ['memory', 'snapshot']]) {
      const run = await a.run(args)
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(3)
      expect(flat(run.stderr), args.join(' ')).toContain(`the server at ${standIn.url} has no shared event log`)
    }
    const status = envelope<{outbox: number}>(await a.run(['status', '--json']))
    expect(status.result?.outbox).toBe(0)
  })

  it('an event queued while the server was away leaves the outbox when the server that answers has no event log, kept whole in the audit log', async () => {
    const a = await tree('claude')
    const port = Number(new URL(standIn.url).port)
    await standIn.close()
    const queued = await a.run(['memory', 'append', '--kind', 'decision', '--key', 'decision:offline', '--content', 'Decided while offline.'])
    expect(queued.code, queued.stderr).toBe(3)
    expect(flat(queued.stderr)).toContain('queued in .nexus/outbox.jsonl')
    standIn = await startProtocolStandIn(tokenMap, port)

    const synced = await a.run(['sync'])
    expect(synced.code, synced.stderr).toBe(0)
    expect(flat(synced.stdout)).toContain('1 queued write(s) not sent and taken out of the outbox: the server has no shared event log, so it would never take them; each is kept whole in .nexus/audit.jsonl')
    expect(envelope<{outbox: number}>(await a.run(['status', '--json'])).result?.outbox).toBe(0)
    const audit = (await readFile(join(a.root, '.nexus', 'audit.jsonl'), 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>)
    expect(audit).toContainEqual(expect.objectContaining({reason: 'outbox entry dropped', kind: 'memory-event', payload: expect.objectContaining({dedupe_key: 'decision:offline', content_md: 'Decided while offline.'})}))
    // The next sync has nothing left to send.
    expect(flat((await a.run(['sync'])).stdout)).not.toContain('queued write')
  })

  it.each<SwitchAnswer>(['project', 'project-id-only', 'no-body'])('switch-project, answered with %s', async (answer) => {
    standIn.answers.switch = answer
    const a = await tree('claude')
    const switched = await a.run(['switch-project', 'billing', '--json'])
    expect(switched.code, switched.stderr).toBe(0)
    expect(envelope<{projectId: string}>(switched).result).toMatchObject({projectId: 'billing'})
    expect(standIn.active?.projectId).toBe('billing')
    // A sync after it still runs in timestamp mode, with nothing to do.
    expect(envelope<SyncReport>(await a.run(['sync', '--json'])).result).toMatchObject({mode: 'timestamp', pushed: [], pulled: []})
  })
})
