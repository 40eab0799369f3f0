import {createHash} from 'node:crypto'
import {statSync} from 'node:fs'
import {join} from 'node:path'

import Database from 'better-sqlite3'
import fc from 'fast-check'
import {afterEach, describe, expect, it} from 'vitest'

import {baseMatches, openSqliteStorage, SQLITE_FILE_NAME} from '../../src/server/storage/sqlite.js'
import type {BaseRev, CommitRequest} from '../../src/server/storage/types.js'
import {Cleanup, tempDir} from './temp.js'
import {BACKENDS, freshTarget, openFresh} from '../helpers/backends.js'
import {type OpenedStorage, openStorage} from '../../src/server/storage/open.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

const NOW = '2026-02-02T10:00:00.000Z'
const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

function req(writes: Record<string, string> = {}, base: Record<string, BaseRev> = {}, deletes: string[] = [], idempotencyKey?: string): CommitRequest {
  return {writes: new Map(Object.entries(writes)), base: new Map(Object.entries(base)), deletes, idempotencyKey}
}


describe('baseMatches', () => {
  it('follows the documented rule', () => {
    expect(baseMatches(null, undefined)).toBe(true)
    expect(baseMatches(0, undefined)).toBe(true)
    expect(baseMatches(1, undefined)).toBe(false)
    expect(baseMatches(2, {rev: 2, deleted: false})).toBe(true)
    expect(baseMatches(1, {rev: 2, deleted: false})).toBe(false)
    expect(baseMatches(null, {rev: 2, deleted: false})).toBe(false)
    expect(baseMatches(0, {rev: 2, deleted: false})).toBe(false)
    expect(baseMatches(3, {rev: 3, deleted: true})).toBe(true)
    expect(baseMatches(null, {rev: 3, deleted: true})).toBe(true)
    expect(baseMatches(0, {rev: 3, deleted: true})).toBe(true)
    expect(baseMatches(2, {rev: 3, deleted: true})).toBe(false)
  })
})

describe('SqliteStorage', () => {
  it('creates the database in WAL mode, synchronous FULL, with a migration table, mode 0600', async () => {
    const storage = openSqliteStorage(cleanup.dir(await tempDir()))
    cleanup.add(() => storage.close())
    expect(statSync(storage.file).mode & 0o777).toBe(0o600)
    const db = new Database(storage.file, {readonly: true})
    try {
      expect(db.pragma('journal_mode', {simple: true})).toBe('wal')
      expect(db.prepare('SELECT version FROM schema_migrations').all()).toEqual([{version: 1}, {version: 2}, {version: 3}, {version: 4}, {version: 5}, {version: 6}, {version: 7}])
    } finally {
      db.close()
    }
  })

  it('keeps everything across a reopen, and refuses a database from a newer schema', async () => {
    const dir = cleanup.dir(await tempDir())
    const one = openSqliteStorage(dir)
    await one.commit(req({'a.md': 'a'}), 'claude', NOW)
    await one.close()
    const db = new Database(join(dir, SQLITE_FILE_NAME))
    db.prepare("INSERT INTO schema_migrations (version, description, applied_at) VALUES (99, 'future', 'x')").run()
    db.close()
    expect(() => openSqliteStorage(dir)).toThrow(/schema version 99/)
  })
})

describe.each(BACKENDS)('the %s storage', (backend) => {
  const open = () => openFresh(backend, cleanup)

  it('writes with revisions, hashes and one seq per commit', async () => {
    const storage = await open()
    expect(await storage.status()).toMatchObject({seq: 0, full: true, files: []})
    expect((await storage.status()).serverId).toMatch(/^[0-9a-f]{32}$/)
    const first = await storage.commit(req({'a.md': 'A\n', 'b/c.json': '{}\n'}), 'claude', NOW)
    expect(first).toMatchObject({ok: true, seq: 1, duplicate: false, unchanged: [], deleted: []})
    if (!first.ok) throw new Error('unexpected')
    expect(first.written.map((m) => [m.path, m.rev, m.seq, m.hash])).toEqual([
      ['a.md', 1, 1, sha('A\n')],
      ['b/c.json', 1, 1, sha('{}\n')],
    ])
    const second = await storage.commit(req({'a.md': 'A2\n'}, {'a.md': 1}), 'gemini', NOW)
    expect(second).toMatchObject({ok: true, seq: 2})
    const status = await storage.status()
    expect(status.seq).toBe(2)
    expect(status.files.map((m) => [m.path, m.rev, m.seq, m.author])).toEqual([
      ['a.md', 2, 2, 'gemini'],
      ['b/c.json', 1, 1, 'claude'],
    ])
    expect((await storage.status(1)).files.map((m) => m.path)).toEqual(['a.md'])
    expect(await storage.status(2)).toMatchObject({full: false, files: []})
    // a since from another history (beyond this seq) gets everything
    expect(await storage.status(3)).toMatchObject({full: true, seq: 2, files: [{path: 'a.md'}, {path: 'b/c.json'}]})
    const read = await storage.read(['a.md', 'nope.md'])
    expect(read.get('a.md')?.content).toBe('A2\n')
    expect(read.has('nope.md')).toBe(false)
  })

  it('refuses the whole commit when one base is stale', async () => {
    const storage = await open()
    await storage.commit(req({'a.md': 'a', 'b.md': 'b', 'c.md': 'c'}), 'claude', NOW)
    const before = await storage.status()
    const outcome = await storage.commit(req({'a.md': 'a2', 'b.md': 'b2', 'c.md': 'c2'}, {'a.md': 1, 'b.md': 0, 'c.md': 1}), 'claude', NOW)
    expect(outcome).toEqual({ok: false, stale: ['b.md']})
    expect(await storage.status()).toEqual(before)
  })

  it('treats identical content as a no-op that is never stale', async () => {
    const storage = await open()
    await storage.commit(req({'a.md': 'a'}), 'claude', NOW)
    await storage.commit(req({'a.md': 'b'}), 'claude', NOW)
    const outcome = await storage.commit(req({'a.md': 'b'}, {'a.md': 1}), 'gemini', NOW)
    expect(outcome).toMatchObject({ok: true, seq: 2, written: [], unchanged: [{path: 'a.md', rev: 2, author: 'claude'}]})
  })

  it('deletes into tombstones, and re-creates after them with a continuing rev', async () => {
    const storage = await open()
    await storage.commit(req({'a.md': 'a'}), 'claude', NOW)
    const stale = await storage.commit(req({}, {'a.md': 0}, ['a.md']), 'claude', NOW)
    expect(stale).toEqual({ok: false, stale: ['a.md']})
    const deleted = await storage.commit(req({}, {'a.md': 1}, ['a.md']), 'claude', NOW)
    expect(deleted).toMatchObject({ok: true, seq: 2, deleted: [{path: 'a.md', rev: 2, deleted: true, hash: null}]})
    const again = await storage.commit(req({}, {'a.md': 1}, ['a.md', 'never.md']), 'claude', NOW)
    expect(again).toMatchObject({ok: true, seq: 2, deleted: [], unchanged: [{path: 'a.md', rev: 2}], unknown: ['never.md']})
    expect((await storage.status()).files).toMatchObject([{path: 'a.md', rev: 2, deleted: true, hash: null}])
    expect((await storage.read(['a.md'])).get('a.md')).toMatchObject({deleted: true, content: null})
    // null, 0 and the tombstone's rev all match a tombstone
    for (const base of [null, 0, 2]) {
      const storage2 = await open()
      await storage2.commit(req({'x.md': '1'}), 'claude', NOW)
      await storage2.commit(req({}, {}, ['x.md']), 'claude', NOW)
      const recreated = await storage2.commit(req({'x.md': '2'}, {'x.md': base}), 'claude', NOW)
      expect(recreated).toMatchObject({ok: true, written: [{path: 'x.md', rev: 3}]})
    }
  })

  it('commits an idempotency key at most once', async () => {
    const storage = await open()
    const first = await storage.commit(req({'a.md': 'a'}, {}, [], 'k1'), 'claude', NOW)
    expect(first).toMatchObject({ok: true, duplicate: false, seq: 1})
    expect(await storage.hasCommitted('k1')).toBe(true)
    const second = await storage.commit(req({'a.md': 'changed'}, {}, [], 'k1'), 'claude', NOW)
    expect(second).toMatchObject({ok: true, duplicate: true, seq: 1, written: []})
    expect((await storage.read(['a.md'])).get('a.md')?.content).toBe('a')
  })

  it('keeps everything across a reopen', async () => {
    const target = await freshTarget(backend, cleanup)
    const one = await openStorage(target)
    await one.commit(req({'a.md': 'a'}), 'claude', NOW)
    await one.commit(req({'a.md': 'b'}), 'claude', NOW)
    const serverId = (await one.status()).serverId
    await one.close()
    await one.close()
    const two = await openStorage(target)
    cleanup.add(() => two.close())
    expect(await two.status()).toMatchObject({seq: 2, serverId, files: [{path: 'a.md', rev: 2}]})
    const three = await open()
    expect((await three.status()).serverId).not.toBe((await two.status()).serverId)
    expect(await two.commit(req({'b.md': 'b'}), 'claude', NOW)).toMatchObject({seq: 3})
  })

  it('matches a simple model on random commit sequences (atomic, revs grow, seq counts changing commits)', async () => {
    const paths = ['a.md', 'b.json', 'c/d.md']
    const contents = ['1', '2', '3']
    const commitArb = fc.record({
      writes: fc.dictionary(fc.constantFrom(...paths), fc.constantFrom(...contents), {maxKeys: 3}),
      deletes: fc.subarray(paths),
      base: fc.dictionary(fc.constantFrom(...paths), fc.option(fc.integer({min: 0, max: 4}), {nil: null}), {maxKeys: 3}),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(commitArb, {maxLength: 12}), async (commits) => {
        const storage = await openStorage(await freshTarget(backend, cleanup))
        try {
          const model = new Map<string, {rev: number; content: string | null}>()
          let seq = 0
          for (const commit of commits) {
            const deletes = commit.deletes.filter((p: string) => !(p in commit.writes))
            const outcome = await storage.commit(req(commit.writes, commit.base, deletes), 'claude', NOW)
            // the model
            const stale = new Set<string>()
            for (const [p, content] of Object.entries(commit.writes)) {
              const cur = model.get(p)
              const identical = cur !== undefined && cur.content === content
              if (!identical && p in commit.base && !baseMatches(commit.base[p], cur && {rev: cur.rev, deleted: cur.content === null})) stale.add(p)
            }
            for (const p of deletes) {
              const cur = model.get(p)
              if (cur && cur.content !== null && p in commit.base && !baseMatches(commit.base[p], {rev: cur.rev, deleted: false})) stale.add(p)
            }
            if (stale.size > 0) {
              expect(outcome).toEqual({ok: false, stale: [...stale].sort()})
              continue
            }
            let changed = false
            for (const [p, content] of Object.entries(commit.writes)) {
              const cur = model.get(p)
              if (cur && cur.content === content) continue
              model.set(p, {rev: (cur?.rev ?? 0) + 1, content})
              changed = true
            }
            for (const p of deletes) {
              const cur = model.get(p)
              if (!cur || cur.content === null) continue
              model.set(p, {rev: cur.rev + 1, content: null})
              changed = true
            }
            if (changed) seq++
            expect(outcome).toMatchObject({ok: true, seq})
            const status = await storage.status()
            expect(status.seq).toBe(seq)
            expect(Object.fromEntries(status.files.map((m) => [m.path, [m.rev, m.deleted, m.hash]]))).toEqual(
              Object.fromEntries([...model].map(([p, v]) => [p, [v.rev, v.content === null, v.content === null ? null : sha(v.content)]])),
            )
            for (let since = 0; since <= seq; since++) {
              expect((await storage.status(since)).files).toEqual(status.files.filter((m) => m.seq > since))
            }
          }
        } finally {
          await storage.close()
        }
      }),
      // A PostgreSQL run creates a database each time: fewer runs keep the suite's time.
      {numRuns: backend === 'sqlite' ? 40 : 15},
    )
  })

  it('answers commits sent all at once (group commit) exactly as the same commits sent one after the other', async () => {
    const paths = ['a.md', 'b.json', 'c/d.md']
    const commitArb = fc.record({
      writes: fc.dictionary(fc.constantFrom(...paths), fc.constantFrom('1', '2', '3'), {maxKeys: 3}),
      deletes: fc.subarray(paths),
      base: fc.dictionary(fc.constantFrom(...paths), fc.option(fc.integer({min: 0, max: 4}), {nil: null}), {maxKeys: 3}),
      key: fc.option(fc.constantFrom('k1', 'k2'), {nil: undefined}),
      author: fc.constantFrom('claude', 'gemini'),
    })
    type Commit = typeof commitArb extends fc.Arbitrary<infer T> ? T : never
    const request = (commit: Commit): CommitRequest => ({
      ...req(commit.writes, commit.base, commit.deletes.filter((p: string) => !(p in commit.writes)), commit.key),
      audit: {kind: 'push'},
    })
    // The audit entries' seqs are the store's own: compared by what they say.
    const comparable = (outcome: Awaited<ReturnType<OpenedStorage['commit']>>) => ({...outcome, audit: outcome.audit?.map(({seq: _seq, ...entry}) => entry)})
    await fc.assert(
      fc.asyncProperty(fc.array(commitArb, {minLength: 1, maxLength: 16}), async (commits) => {
        const together = await openStorage(await freshTarget(backend, cleanup))
        const alone = await openStorage(await freshTarget(backend, cleanup))
        try {
          const outcomes = await Promise.all(commits.map((commit) => together.commit(request(commit), commit.author, NOW)))
          for (const [index, commit] of commits.entries()) {
            expect(comparable(outcomes[index])).toEqual(comparable(await alone.commit(request(commit), commit.author, NOW)))
          }
          const [a, b] = [await together.status(), await alone.status()]
          expect({seq: a.seq, files: a.files}).toEqual({seq: b.seq, files: b.files})
          expect((await together.queryAudit({limit: 100})).map(({seq: _seq, ...entry}) => entry)).toEqual((await alone.queryAudit({limit: 100})).map(({seq: _seq, ...entry}) => entry))
        } finally {
          await together.close()
          await alone.close()
        }
      }),
      {numRuns: backend === 'sqlite' ? 40 : 12},
    )
  })

  it('reads the records asked for with the status, as of the same moment', async () => {
    const storage = await open()
    await storage.commit(req({'a.md': 'a', 'active.json': '{}\n'}), 'claude', NOW)
    await storage.commit(req({}, {}, ['a.md']), 'claude', NOW)
    const status = await storage.status(1, ['active.json', 'a.md', 'never.md'])
    expect(status).toMatchObject({seq: 2, files: [{path: 'a.md', deleted: true}]})
    expect([...status.read.keys()].sort()).toEqual(['a.md', 'active.json'])
    expect(status.read.get('active.json')).toMatchObject({content: '{}\n', rev: 1, deleted: false})
    expect(status.read.get('a.md')).toMatchObject({content: null, rev: 2, deleted: true})
    expect((await storage.status()).read.size).toBe(0)
  })
})
