/**
 * Timestamp mode (CONTRACT §3: "a client must also work with a server that implements only the seed's fields"):
 * the sync engine, in this process, against a stand-in written from the protocol table alone
 * (test/compat/protocol-stand-in.ts: status `{files: {path: {updatedAt}}}`, pull, push, no revision, hash, seq,
 * tombstone or 409). The same cases through the real binary are test/compat/protocol-only-server.test.ts.
 */
import {rm, utimes} from 'node:fs/promises'
import {join} from 'node:path'
import {beforeEach, describe, expect, it} from 'vitest'

import {MemoryClient} from '../../src/protocol/client.js'
import {readConfig} from '../../src/store/index.js'
import type {SyncResult} from '../../src/sync/run.js'
import {startWatch} from '../../src/sync/watch.js'
import {type TestClient, TOKENS, until} from '../helpers/world.js'
import {type PushAnswer, type StandInRequest, useProtocolStandIn} from '../compat/protocol-stand-in.js'

const {standIn, client} = useProtocolStandIn()

const pushes = () => standIn().requests.filter((r) => r.route === 'POST /api/memory/push')
const memo = (lines: string[]) => `${lines.join('\n')}\n`
/** One file as first synced, edited by A, by B on another line, and with both edits. */
const TEXT = {
  first: memo(['# P', '', '- one', '- two', '- three']),
  byA: memo(['# P', '', '- one, by A', '- two', '- three']),
  byB: memo(['# P', '', '- one', '- two', '- three, by B']),
  both: memo(['# P', '', '- one, by A', '- two', '- three, by B']),
}
const PUSH_ANSWERS: PushAnswer[] = ['timestamps', 'empty-object', 'no-body', 'success']

/** A tree whose PROJECT_MEMORY.md was synced, then edited by A (not synced yet). */
async function editedByA(): Promise<TestClient> {
  const a = await client('claude')
  await a.write('PROJECT_MEMORY.md', TEXT.first)
  await a.sync()
  await a.write('PROJECT_MEMORY.md', TEXT.byA)
  return a
}

/** Both edits are in the tree and on the server. */
async function expectBoth(a: TestClient): Promise<void> {
  expect(await a.read('PROJECT_MEMORY.md')).toBe(TEXT.both)
  expect(standIn().files.get('PROJECT_MEMORY.md')!.content).toBe(TEXT.both)
}

/** Runs `write` once, the first time a request of `route` reaches the hook at `when`. */
function once(route: string, when: 'before' | 'after', write: (request: StandInRequest) => void | Promise<void>): void {
  let done = false
  standIn().hook = async (request, at) => {
    if (done || at !== when || request.route !== route) return
    done = true
    await write(request)
  }
}

describe.each(PUSH_ANSWERS)('a server with only the protocol’s fields, its push answered with %s', (answer) => {
  beforeEach(() => {
    standIn().answers.push = answer
  })

  it('two clients converge, each sync saying it ran in timestamp mode', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('PROJECT_MEMORY.md', memo(['# P', '', '- one']))
    await a.write('projects.json', '{\n  "alpha": 1\n}\n')
    await b.write('notes/b.md', 'from b\n')
    const first = await a.sync()
    expect(first.mode).toBe('timestamp')
    expect(first.pushed.sort()).toEqual(['PROJECT_MEMORY.md', 'projects.json'])
    const second = await b.sync()
    expect(second).toMatchObject({mode: 'timestamp', pushed: ['notes/b.md']})
    expect(second.pulled.sort()).toEqual(['PROJECT_MEMORY.md', 'projects.json'])
    const third = await a.sync()
    expect(third).toMatchObject({mode: 'timestamp', pulled: ['notes/b.md'], pushed: [], merged: []})
    for (const path of ['PROJECT_MEMORY.md', 'projects.json', 'notes/b.md']) {
      expect(await a.read(path)).toBe(standIn().files.get(path)!.content)
      expect(await b.read(path)).toBe(standIn().files.get(path)!.content)
    }
    // Settled: neither side moves anything, and nothing is sent again.
    const before = pushes().length
    for (const c of [a, b]) expect(await c.sync()).toMatchObject({mode: 'timestamp', pushed: [], pulled: [], merged: [], conflicts: [], backups: []})
    expect(pushes().length).toBe(before)
    // It asked nothing such a server does not answer: no `?since=`, no `base`, `deletes` or `merged` in a push.
    expect(standIn().requests.filter((r) => r.query !== '')).toEqual([])
    for (const push of pushes()) expect(Object.keys(push.body as object)).toEqual(['files'])
  })

  it('concurrent edits on different lines both survive', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('PROJECT_MEMORY.md', TEXT.first)
    await a.sync()
    await b.sync()
    await a.write('PROJECT_MEMORY.md', TEXT.byA)
    await b.write('PROJECT_MEMORY.md', TEXT.byB)
    await a.sync()
    const merged = await b.sync()
    expect(merged).toMatchObject({mode: 'timestamp', merged: ['PROJECT_MEMORY.md'], backups: []})
    await a.sync()
    await expectBoth(a)
    expect(await b.read('PROJECT_MEMORY.md')).toBe(TEXT.both)
  })

  it('a conflict keeps the server’s side and backs up the local one', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('PROJECT_MEMORY.md', memo(['# P', '', '- meeting on ?']))
    await a.sync()
    await b.sync()
    await a.write('PROJECT_MEMORY.md', memo(['# P', '', '- meeting on Monday']))
    await b.write('PROJECT_MEMORY.md', memo(['# P', '', '- meeting on Tuesday']))
    await a.sync()
    const conflicted = await b.sync()
    expect(conflicted.mode).toBe('timestamp')
    expect(conflicted.backups).toEqual([{path: 'PROJECT_MEMORY.md', backup: 'PROJECT_MEMORY.local.bak'}])
    expect(await b.read('PROJECT_MEMORY.md')).toBe(memo(['# P', '', '- meeting on Monday']))
    expect(await b.read('PROJECT_MEMORY.local.bak')).toBe(memo(['# P', '', '- meeting on Tuesday']))
    expect(standIn().files.get('PROJECT_MEMORY.md')!.content).toBe(memo(['# P', '', '- meeting on Monday']))
    expect(standIn().files.has('PROJECT_MEMORY.local.bak')).toBe(false)
  })

  it('touching every file uploads nothing', async () => {
    const a = await client('claude')
    const files = ['PROJECT_MEMORY.md', 'projects.json', 'episodes/2026-01-02/standup.md']
    for (const path of files) await a.write(path, path.endsWith('.json') ? '{"x": 1}\n' : `${path}\n`)
    await a.sync()
    const before = standIn().requests.length
    const later = new Date(Date.now() + 3_600_000)
    for (const path of files) await utimes(join(a.memory, path), later, later)
    const touched = await a.sync()
    expect(touched).toMatchObject({mode: 'timestamp', pushed: [], pulled: [], merged: []})
    expect(standIn().requests.slice(before).map((r) => r.route)).toEqual(['GET /api/memory/status'])
  })
})

describe('timestamp mode: nothing lost', () => {
  it('a file deleted here is not claimed deleted on a server that has no deletions, and does not come back', async () => {
    const a = await client('claude')
    await a.write('gone.md', 'bye\n')
    await a.sync()
    await a.remove('gone.md')
    const result = await a.sync()
    expect(result).toMatchObject({mode: 'timestamp', deleted: []})
    expect(standIn().files.has('gone.md')).toBe(true)
    expect((await a.sync()).pulled).toEqual([])
    expect(await a.read('gone.md')).toBeNull()
  })

  it('a .json file the server sends back as a JSON value is recognised as our own write, and written pretty-printed elsewhere', async () => {
    standIn().answers.push = 'success'
    standIn().answers.jsonAsValue = true
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('projects.json', '{"alpha": 1}\n')
    expect(await a.sync()).toMatchObject({pushed: ['projects.json'], merged: []})
    expect(await b.sync()).toMatchObject({pulled: ['projects.json']})
    expect(await b.read('projects.json')).toBe('{\n  "alpha": 1\n}\n')
    const before = pushes().length
    for (const c of [a, b]) expect(await c.sync()).toMatchObject({pushed: [], pulled: [], merged: []})
    expect(pushes().length).toBe(before)
  })

  it('an edit beats a concurrent deletion: a file deleted here comes back with the other side’s edit', async () => {
    const a = await client('claude')
    const b = await client('gemini')
    await a.write('notes.md', 'first\n')
    await a.sync()
    await b.sync()
    await a.remove('notes.md')
    await b.write('notes.md', 'first\nedited by b\n')
    await b.sync()
    const back = await a.sync()
    expect(back).toMatchObject({mode: 'timestamp', pulled: ['notes.md'], deleted: []})
    expect(await a.read('notes.md')).toBe('first\nedited by b\n')
  })

  it('a lost sync state never turns into deletions: both sides are kept, and equal files are only recorded', async () => {
    const a = await client('claude')
    await a.write('same.md', 'same\n')
    await a.sync()
    await rm(join(a.root, '.nexus', 'sync-state.json'))
    await a.write('mine.md', 'mine\n')
    standIn().write('theirs.md', 'theirs\n')
    const result = await a.sync()
    expect(result).toMatchObject({mode: 'timestamp', pushed: ['mine.md'], pulled: ['theirs.md'], deleted: [], merged: [], backups: []})
    expect(await a.read('same.md')).toBe('same\n')
    expect(await a.read('mine.md')).toBe('mine\n')
    expect(standIn().files.get('same.md')!.content).toBe('same\n')
    expect(standIn().files.get('mine.md')!.content).toBe('mine\n')
  })

  it.each(PUSH_ANSWERS)('another client writing right after our push (answered with %s) is merged, not mistaken for our own write', async (answer) => {
    standIn().answers.push = answer
    const a = await editedByA()
    // B had synced A's edit, added its own line and pushed — the moment after A's push was stored.
    once('POST /api/memory/push', 'after', () => standIn().write('PROJECT_MEMORY.md', TEXT.both))
    await a.sync()
    standIn().hook = undefined
    await a.sync()
    await expectBoth(a)
  })

  // With the time of our write in the push answer, a later write over it is the other client's last-writer-wins
  // overwrite, as on any server that takes a push without a base: our next sync brings it down.
  it.each(PUSH_ANSWERS.filter((answer) => answer !== 'timestamps'))('another client overwriting our push before we could look again (answered with %s) loses neither edit', async (answer) => {
    standIn().answers.push = answer
    const a = await editedByA()
    // Another client that never saw A's edit writes over it, right after A's push was stored.
    once('POST /api/memory/push', 'after', () => standIn().write('PROJECT_MEMORY.md', TEXT.byB))
    const result = await a.sync()
    standIn().hook = undefined
    expect(result.backups).toEqual([])
    await a.sync()
    await expectBoth(a)
  })

  it('a write that lands between our status and our push is merged, not overwritten', async () => {
    const a = await editedByA()
    once('GET /api/memory/status', 'after', () => standIn().write('PROJECT_MEMORY.md', TEXT.byB))
    const result = await a.sync()
    expect(result).toMatchObject({mode: 'timestamp', merged: ['PROJECT_MEMORY.md'], backups: []})
    await expectBoth(a)
  })
})

describe('timestamp mode: jarvis sync --watch', () => {
  it('with no WebSocket to tell it, the watch asks the server again and brings another client’s write down', async () => {
    const a = await client('claude')
    await a.write('mine.md', 'mine\n')
    const config = await readConfig(a.root)
    const syncs: SyncResult[] = []
    const handle = startWatch({
      root: a.root,
      client: new MemoryClient({server: standIn().url, token: TOKENS.claude}),
      settings: {...config.sync, retryDelay: 10},
      token: TOKENS.claude,
      reconnectInitialMs: 50,
      reconnectMaxMs: 100,
      onSync: (result) => syncs.push(result),
    })
    try {
      await handle.ready
      expect(handle.stats().connected).toBe(false)
      expect(await until('mine.md on the server', () => standIn().files.get('mine.md')?.content)).toBe('mine\n')
      standIn().write('theirs.md', 'written elsewhere\n')
      expect(await until('theirs.md to arrive', () => a.read('theirs.md'))).toBe('written elsewhere\n')
      expect(syncs.every((result) => result.mode === 'timestamp')).toBe(true)
    } finally {
      await handle.stop()
    }
  })
})
