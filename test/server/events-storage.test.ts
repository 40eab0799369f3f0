/**
 * The event log in the SQLite storage, through the EventStorage interface (so a PostgreSQL backend can run the
 * same suite): pins against a model, group commit, migration, ids, the text index helpers, and the scope
 * filter the server builds against the rule of events/.
 */
import {createHash} from 'node:crypto'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import Database from 'better-sqlite3'
import fc from 'fast-check'
import {afterEach, describe, expect, it} from 'vitest'

import {canRead} from '../../src/events/index.js'
import {scopeSchema} from '../../src/schemas/index.js'
import {readableScopes} from '../../src/server/events-service.js'
import {EVENT_ID_PATTERN, eventIdFactory} from '../../src/server/storage/event-id.js'
import {ftsQuery, ftsText} from '../../src/server/storage/fts.js'
import {openSqliteStorage, SQLITE_FILE_NAME, type SqliteStorage} from '../../src/server/storage/sqlite.js'
import {WalSync} from '../../src/server/storage/wal-sync.js'
import {scopeMatches, type AppendEventRequest, type NewEvent} from '../../src/server/storage/types.js'
import {Cleanup, tempDir} from './temp.js'
import {BACKENDS, freshTarget, openFresh} from '../helpers/backends.js'
import {openStorage, type OpenedStorage} from '../../src/server/storage/open.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')
const NOW = '2026-02-02T10:00:00.000Z'
const EVERYTHING = {exact: [], prefixes: ['']}

async function openSqlite(options: Parameters<typeof openSqliteStorage>[2] = {}): Promise<SqliteStorage> {
  const dir = cleanup.dir(await tempDir())
  const storage = openSqliteStorage(dir, undefined, options)
  cleanup.add(() => storage.close())
  return storage
}

let serial = 0
function request(over: Partial<NewEvent> = {}, extra: Partial<AppendEventRequest> = {}): AppendEventRequest {
  serial++
  const event: NewEvent = {
    agent_id: 'claude',
    run_id: `run-${serial}`,
    scope: 'global',
    kind: 'fact',
    dedupe_key: `fact:k${serial}`,
    confidence: 'high',
    content_md: `content ${serial}`,
    source: {system: 'cli'},
    supersedes: null,
    ttl_days: 0,
    ...over,
  }
  return {event, identity: sha(`${serial}:${JSON.stringify(event)}`), contentHash: sha(event.content_md), visible: EVERYTHING, now: NOW, scanned: true, ...extra}
}

describe('the scope filter of the server', () => {
  it('says exactly what canRead says, for every agent and every valid scope', () => {
    const agents = ['chatgpt', 'claude', 'gemini', 'openclaw']
    const scope = fc.oneof(
      fc.constantFrom('global', 'project:atlas', 'project:a.b-c_d', ...agents.map((a) => `agent:${a}`)),
      fc.stringMatching(/^project:[a-z0-9][a-z0-9._-]{0,20}$/),
    )
    fc.assert(
      fc.property(fc.constantFrom(...agents), scope, (agent, s) => {
        expect(scopeSchema.safeParse(s).success).toBe(true)
        expect(scopeMatches(readableScopes(agent), s)).toBe(canRead(agent, s))
      }),
      {numRuns: 1000},
    )
  })
})

describe.each(BACKENDS)('the %s event log', (backend) => {
  const open = () => openFresh(backend, cleanup)

  describe('pins', () => {
  it('always point at the newest live event of each scope and key (model-based)', async () => {
    const op = fc.oneof(
      fc.record({type: fc.constant('append' as const), scope: fc.constantFrom('global', 'project:a', 'agent:claude'), key: fc.constantFrom('k:a', 'k:b', 'k:c'), supersedes: fc.option(fc.nat(30), {nil: null})}),
      fc.record({type: fc.constant('cleanup' as const), pick: fc.nat(30)}),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(op, {minLength: 1, maxLength: 25}), async (ops) => {
        const storage = await openStorage(await freshTarget(backend, cleanup))
        try {
          const model: {id: string; scope: string; key: string; deprecated: boolean; deleted: boolean}[] = []
          for (const step of ops) {
            if (step.type === 'append') {
              const alive = model.filter((e) => !e.deleted)
              const target = step.supersedes === null || alive.length === 0 ? null : alive[step.supersedes % alive.length]
              const outcome = await storage.appendEvent(request({scope: step.scope, dedupe_key: step.key, supersedes: target?.id ?? null}))
              expect(outcome.status).toBe('created')
              if (outcome.status !== 'created') return
              if (target) target.deprecated = true
              model.push({id: outcome.event.event_id, scope: step.scope, key: step.key, deprecated: false, deleted: false})
            } else {
              // cleanup deletes deprecated events (all of them are old enough here)
              const deprecated = model.filter((e) => e.deprecated && !e.deleted)
              if (deprecated.length === 0) continue
              const victim = deprecated[step.pick % deprecated.length]
              const deleted = await storage.deleteEvents([victim.id], {visible: EVERYTHING, createdBefore: '2100-01-01T00:00:00.000Z', now: NOW})
              expect(deleted).toEqual([victim.id])
              victim.deleted = true
            }
          }
          const expected = new Map<string, string>()
          for (const e of model) if (!e.deleted && !e.deprecated) expected.set(`${e.scope} ${e.key}`, e.id)
          const rows = await storage.snapshotEvents(['global', 'project:a', 'agent:claude'], 500, 500)
          const actual = new Map(rows.pinned.map((e) => [`${e.scope} ${e.dedupe_key}`, e.event_id]))
          expect(actual).toEqual(expected)
          expect(await storage.countEvents()).toBe(model.filter((e) => !e.deleted).length)
        } finally {
          await storage.close()
        }
      }),
      // A PostgreSQL run creates a database each time: fewer runs keep the suite's time.
      {numRuns: backend === 'sqlite' ? 60 : 15},
    )
  })

  it('are kept by a bulk import too', async () => {
    const storage = await open()
    const base = request({dedupe_key: 'k:x'}).event
    const ids = await storage.importEvents(
      [1, 2, 3].map((n) => ({...base, content_md: `v${n}`, created_at: NOW, identity: sha(`imp${n}`), content_hash: sha(`v${n}`), deprecated: n === 3})),
    )
    const rows = await storage.snapshotEvents(['global'], 10, 10)
    expect(rows.pinned.map((e) => e.event_id)).toEqual([ids[1]])
    // The deprecated one (v3) is not current memory: not among the recent ones.
    expect(rows.recent.map((e) => e.event_id)).toEqual([ids[1], ids[0]])
    expect(rows.recent.every((e) => e.scanned === false)).toBe(true)
  })
})

  describe('appends', () => {
  it('group commit: concurrent appends are each all-or-nothing and answered as if sequential', async () => {
    const stores: OpenedStorage[] = backend === 'sqlite' ? [await openSqlite({groupCommit: true}), await openSqlite({groupCommit: false})] : [await open()]
    for (const storage of stores) {
      const first = await storage.appendEvent(request({dedupe_key: 'k:shared', confidence: 'high'}))
      expect(first.status).toBe('created')
      const same = request({dedupe_key: 'k:other'})
      const outcomes = await Promise.all([
        storage.appendEvent(request({dedupe_key: 'k:shared', confidence: 'low'})),
        storage.appendEvent(request({supersedes: 'evt_missing'})),
        storage.appendEvent(same),
        storage.appendEvent({...same}),
        storage.appendEvent(request({}, {idempotencyKey: 'claude:k1'})),
        storage.appendEvent(request({}, {idempotencyKey: 'claude:k1'})),
        // a row the database refuses (CHECK constraint) fails alone
        storage.appendEvent(request({confidence: 'sure' as 'high'})),
      ].map((p) => p.catch((error: Error) => ({status: 'error', message: error.message}))))
      expect(outcomes.map((o) => o.status)).toEqual(['created', 'supersedes_missing', 'created', 'duplicate', 'created', 'key_reused', 'error'])
      const replacing = outcomes[0]
      if ('replaced' in replacing && first.status === 'created') expect(replacing.replaced?.event_id).toBe(first.event.event_id)
      expect(await storage.countEvents()).toBe(4)
    }
  })

  it('counts the events of a run, and deprecates a superseded event only once', async () => {
    const storage = await open()
    const a = await storage.appendEvent(request({run_id: 'r1'}))
    const b = await storage.appendEvent(request({run_id: 'r1', supersedes: a.status === 'created' ? a.event.event_id : null}))
    expect(b).toMatchObject({status: 'created', runCount: 2, superseded: {deprecated: false}})
    const c = await storage.appendEvent(request({run_id: 'r2', supersedes: a.status === 'created' ? a.event.event_id : null}))
    expect(c).toMatchObject({status: 'created', runCount: 1, superseded: {deprecated: true}})
  })

  it('refuses a supersedes target outside the visible scopes', async () => {
    const storage = await open()
    const hidden = await storage.appendEvent(request({scope: 'agent:gemini'}))
    if (hidden.status !== 'created') throw new Error('setup')
    const outcome = await storage.appendEvent(request({supersedes: hidden.event.event_id}, {visible: {exact: ['global', 'agent:claude'], prefixes: ['project:']}}))
    expect(outcome.status).toBe('supersedes_missing')
    expect(await storage.countEvents()).toBe(1)
  })
})
})

describe('durability of appends', () => {
  function gate() {
    const calls: {release: () => void; fail: (error: Error) => void}[] = []
    const flush = () => new Promise<void>((resolve, reject) => calls.push({release: resolve, fail: reject}))
    return {calls, flush}
  }
  const settled = (p: Promise<unknown>) => Promise.race([p.then(() => true, () => true), new Promise((r) => setTimeout(() => r(false), 30))])

  it('answers an append only after the WAL flush that follows its commit', async () => {
    const {calls, flush} = gate()
    const storage = await openSqlite({walFlush: flush})
    const first = storage.appendEvent(request())
    await new Promise((r) => setTimeout(r, 10))
    expect(calls).toHaveLength(1) // committed, flushing
    expect(await settled(first)).toBe(false)
    // committed while the first flush runs: they wait for a second flush, which all of them share
    const later = [storage.appendEvent(request()), storage.appendEvent(request())]
    await new Promise((r) => setTimeout(r, 10))
    expect(calls).toHaveLength(1)
    calls[0].release()
    expect(await settled(first)).toBe(true)
    expect(await settled(Promise.all(later))).toBe(false)
    await new Promise((r) => setTimeout(r, 10))
    expect(calls).toHaveLength(2)
    calls[1].release()
    expect((await Promise.all(later)).map((o) => o.status)).toEqual(['created', 'created'])
    // a failed flush fails the appends it covered; a retry finds them stored
    const retried = request()
    const failing = storage.appendEvent(retried)
    await new Promise((r) => setTimeout(r, 10))
    calls[2].fail(new Error('EIO'))
    await expect(failing).rejects.toThrow('EIO')
    const again = storage.appendEvent(retried)
    await new Promise((r) => setTimeout(r, 10))
    calls[3]?.release()
    expect((await again).status).toBe('duplicate')
  })

  it('WalSync shares one flush among every caller that arrives while one is running', async () => {
    const dir = cleanup.dir(await tempDir())
    const file = join(dir, 'x-wal')
    await writeFile(file, '')
    const {calls, flush} = gate()
    const wal = new WalSync(file, flush)
    const a = wal.sync()
    const b = wal.sync()
    const c = wal.sync()
    expect(calls).toHaveLength(1)
    expect(b).toBe(c)
    calls[0].release()
    await a
    await new Promise((r) => setTimeout(r, 0))
    expect(calls).toHaveLength(2)
    calls[1].release()
    await Promise.all([b, c])
    const d = wal.sync()
    expect(calls).toHaveLength(3)
    calls[2].release()
    await d
    await wal.close()
  })
})

describe('migration', () => {
  it('adds the event log to a database of schema 1 and keeps its files', async () => {
    const dir = cleanup.dir(await tempDir())
    const first = openSqliteStorage(dir)
    await first.commit({writes: new Map([['a.md', 'a']]), deletes: [], base: new Map()}, 'claude', NOW)
    await first.close()
    // turn it back into a schema-1 database
    const db = new Database(join(dir, SQLITE_FILE_NAME))
    db.exec('DROP TABLE memory_events_fts; DROP TABLE memory_pins; DROP TABLE memory_events; DELETE FROM schema_migrations WHERE version = 2')
    db.close()
    const second = openSqliteStorage(dir)
    try {
      expect((await second.read(['a.md'])).get('a.md')?.content).toBe('a')
      expect((await second.appendEvent(request())).status).toBe('created')
      const check = new Database(join(dir, SQLITE_FILE_NAME), {readonly: true})
      expect(check.prepare('SELECT version FROM schema_migrations ORDER BY version').all()).toEqual([{version: 1}, {version: 2}, {version: 3}, {version: 4}, {version: 5}, {version: 6}, {version: 7}])
      check.close()
    } finally {
      await second.close()
    }
  })
})

describe('event ids', () => {
  it('grow strictly, within one millisecond and when the clock steps back', () => {
    const next = eventIdFactory()
    const ids = [next(1000), next(1000), next(1000), next(999), next(5), next(2000), next(2000)]
    for (const id of ids) expect(id).toMatch(EVENT_ID_PATTERN)
    expect([...ids].sort()).toEqual(ids)
    expect(new Set(ids).size).toBe(ids.length)
  })
})

describe('text index helpers', () => {
  it('indexes CJK runs as bigrams and leaves other text alone', () => {
    expect(ftsText('共有メモリ is SSOT')).toBe(' 共有 有メ メモ モリ  is SSOT')
    expect(ftsText('a 字 b')).toBe('a  字  b')
  })

  it('quotes every word, so query syntax is plain text', () => {
    expect(ftsQuery('gateway auth')).toBe('"gateway" AND "auth"')
    expect(ftsQuery('auth_401 config:x')).toBe('"auth 401" AND "config x"')
    expect(ftsQuery('共有メモリ')).toBe('"共有 有メ メモ モリ"')
    expect(ftsQuery('字')).toBe('"字" *')
    expect(ftsQuery('dash*')).toBe('"dash" *')
    expect(ftsQuery('NEAR("x" y) AND')).toBe('"NEAR x" AND "y" AND "AND"')
    expect(ftsQuery('" * ( )')).toBeNull()
    expect(ftsQuery('')).toBeNull()
  })
})
