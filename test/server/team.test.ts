/**
 * Several `jarvis serve` processes on one PostgreSQL database are one server: migrations run once however many start
 * together, revisions and the 409 on a stale base and event idempotency hold across processes (the database
 * decides, not a process's memory), a --watch client of one process hears a change pushed through another, and a
 * revoked key is refused by every process at once.
 */
import {randomBytes} from 'node:crypto'
import {createReadStream} from 'node:fs'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import pg from 'pg'
import {afterEach, describe, expect, it} from 'vitest'

import {MemoryClient} from '../../src/protocol/client.js'
import {backupData} from '../../src/server/backup.js'
import {exportData, importData} from '../../src/server/dump.js'
import {createKey, revokeKey} from '../../src/server/keys.js'
import {PostgresStorage} from '../../src/server/storage/postgres.js'
import type {AppendEventRequest} from '../../src/server/storage/types.js'
import {readConfig} from '../../src/store/index.js'
import {startWatch, type SyncInfo} from '../../src/sync/watch.js'
import {BACKENDS, databaseFor, useBackend} from '../helpers/backends.js'
import {freshDatabase, startPostgresServer} from '../helpers/postgres.js'
import {makeClient, removeAll, startServerProcess, tempDir, TOKENS, type ServerProcess, until} from '../helpers/world.js'
import {call, connectWs, delay} from './helpers.js'
import {runJarvis} from '../helpers/cli.js'
import {closedPort} from '../cli/memory-helpers.js'

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const NOW = '2026-02-02T10:00:00.000Z'
const EVERYTHING = {exact: [], prefixes: ['']}

async function storages(url: string, count: number): Promise<PostgresStorage[]> {
  const opened = await Promise.all(Array.from({length: count}, () => PostgresStorage.open(url)))
  for (const storage of opened) cleanups.push(() => storage.close())
  return opened
}

describe('several processes on one PostgreSQL database', () => {
  it('run the migrations once when they start together, and refuse a database from a newer jarvis', async () => {
    const url = await freshDatabase()
    const opened = await storages(url, 6)
    expect(await Promise.all(opened.map((storage) => storage.ping()))).toEqual(opened.map(() => true))
    const client = new pg.Client({connectionString: url})
    await client.connect()
    try {
      const versions = (await client.query<{version: number}>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((row) => row.version)
      expect(versions).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9])
      await client.query("INSERT INTO schema_migrations (version, description, applied_at) VALUES (99, 'future', 'x')")
    } finally {
      await client.end()
    }
    await expect(PostgresStorage.open(url)).rejects.toThrow(/schema version 99, newer than this jarvis/)
  })

  it('give one commit to each revision: of many writers on the same base, exactly one wins, the others are stale', async () => {
    const opened = await storages(await freshDatabase(), 4)
    await opened[0].commit({writes: new Map([['shared.md', 'v1\n']]), deletes: [], base: new Map()}, 'claude', NOW)
    const outcomes = await Promise.all(
      Array.from({length: 16}, (_, i) =>
        opened[i % opened.length].commit({writes: new Map([['shared.md', `writer ${i}\n`]]), deletes: [], base: new Map([['shared.md', 1]])}, 'claude', NOW),
      ),
    )
    expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(1)
    expect(outcomes.filter((outcome) => !outcome.ok)).toEqual(Array.from({length: 15}, () => ({ok: false, stale: ['shared.md']})))
    const status = await opened[3].status()
    expect(status).toMatchObject({seq: 2, files: [{path: 'shared.md', rev: 2}]})
  })

  it('store an event once, whichever processes receive it and however often', async () => {
    const opened = await storages(await freshDatabase(), 3)
    const request = (n: number): AppendEventRequest => ({
      event: {agent_id: 'claude', run_id: 'r1', scope: 'global', kind: 'fact', dedupe_key: `fact:k${n}`, confidence: 'high', content_md: `fact ${n}`, source: {system: 'cli'}, supersedes: null, ttl_days: 0},
      identity: `identity-${n}`,
      idempotencyKey: `claude:key-${n}`,
      contentHash: `hash-${n}`,
      visible: EVERYTHING,
      now: NOW,
      scanned: true,
    })
    // Ten events, each sent three times to each of the three processes, all at once.
    const outcomes = await Promise.all(Array.from({length: 90}, (_, i) => opened[i % 3].appendEvent(request(i % 10))))
    expect(outcomes.filter((outcome) => outcome.status === 'created')).toHaveLength(10)
    expect(outcomes.filter((outcome) => outcome.status !== 'created').every((outcome) => outcome.status === 'duplicate')).toBe(true)
    expect(await opened[1].countEvents()).toBe(10)
    const ids = new Map<string, Set<string>>()
    for (const outcome of outcomes) {
      if (outcome.status !== 'created' && outcome.status !== 'duplicate') continue
      const set = ids.get(outcome.event.dedupe_key) ?? new Set()
      ids.set(outcome.event.dedupe_key, set.add(outcome.event.event_id))
    }
    // Every answer for one event names the same event_id.
    expect([...ids.values()].map((set) => set.size)).toEqual(Array.from({length: 10}, () => 1))
  })

  it('relay every broadcast of a burst to the other processes, once each and in order, never back to the sender', async () => {
    const [a, b, c] = await storages(await freshDatabase(), 3)
    const heard: string[][] = [[], [], []]
    await Promise.all([a, b, c].map((storage, n) => storage.relay?.subscribe((data) => heard[n].push(data))))
    // More than one NOTIFY holds (about 7 KB each): the burst goes in several groups.
    const sent = Array.from({length: 600}, (_, i) => JSON.stringify({type: 'MEM_UPDATE', path: `notes/file-${i}.md`, rev: i + 1, author: 'claude', seq: i + 1, updatedAt: NOW}))
    await Promise.all(sent.map((data) => a.relay?.publish(data)))
    await b.relay?.publish('from b')
    // Each process listens on its own connection: C hearing B's message says nothing of when A hears it.
    await until('every message to reach the other processes', () => (heard[0].includes('from b') && heard[1].length === 600 && heard[2].length === 601 ? true : undefined)).catch((error) => {
      throw new Error(`${(error as Error).message}: heard ${heard.map((h) => h.length).join(', ')}`)
    })
    expect(heard[1]).toEqual(sent)
    expect(heard[2]).toEqual([...sent, 'from b'])
    expect(heard[0]).toEqual(['from b'])
  })
})

describe('two jarvis serve processes on one PostgreSQL that restarts', () => {
  it('answer 503 unavailable while it is down, and relay each other\'s broadcasts again once it is back', async () => {
    // A server of its own: the run's shared one cannot be restarted under the other tests.
    const postgres = await startPostgresServer()
    cleanups.push(() => postgres.stop())
    const database = await freshDatabase(postgres.adminUrl)
    const dataDir = join(await tempDir('jarvis-team-restart-'), 'data')
    cleanups.push(() => removeAll([join(dataDir, '..')]))
    const [one, two] = await Promise.all([startServerProcess(dataDir, 0, ['--database', database]), startServerProcess(dataDir, 0, ['--database', database])])
    cleanups.push(() => one.stop(), () => two.stop())
    const listener = await connectWs(`${two.url.replace(/^http/, 'ws')}/ws/memory`, TOKENS.gemini)
    cleanups.push(() => listener.close())
    const push = (path: string) => call(one.url, TOKENS.claude, 'POST', '/api/memory/push', {files: {[path]: `${path}\n`}})
    expect((await push('before.md')).status).toBe(200)
    await listener.next((message) => message.type === 'MEM_UPDATE' && message.path === 'before.md')

    await postgres.restart(async () => {
      // Not a bug of the server (500): a client may queue or retry (503).
      const status = await call(one.url, TOKENS.claude, 'GET', '/api/memory/status')
      expect([status.status, status.body.error]).toEqual([503, 'unavailable'])
      // Down longer than the first wait before listening again, so that the first try fails too.
      await delay(2500)
    })

    // Each process listens again by itself; until it does, a broadcast is missed (documented), so push until one arrives.
    for (let attempt = 1; ; attempt++) {
      const path = `after-${attempt}.md`
      const pushed = await push(path)
      if (pushed.status === 200 && (await listener.next((message) => message.type === 'MEM_UPDATE' && message.path === path, 1000).catch(() => null))) break
      if (attempt === 40) throw new Error(`process two never heard process one again after PostgreSQL restarted (last push: ${pushed.status})`)
    }
  })
})

describe.each(BACKENDS.filter((backend) => backend === 'postgres'))('two jarvis serve processes on one %s database', (backend) => {
  useBackend(backend)

  async function twoProcesses(): Promise<[ServerProcess, ServerProcess, string]> {
    const dataDir = join(await tempDir('jarvis-team-'), 'data')
    cleanups.push(() => removeAll([join(dataDir, '..')]))
    // The same data dir gives the same database (test/helpers/backends.ts databaseFor).
    const [one, two] = await Promise.all([startServerProcess(dataDir), startServerProcess(dataDir)])
    cleanups.push(() => one.stop(), () => two.stop())
    return [one, two, (await databaseFor(dataDir)) as string]
  }

  it('a --watch client of each: a push through one process reaches the client of the other through its WebSocket', async () => {
    const [one, two] = await twoProcesses()
    const a = await makeClient(one.url, 'claude')
    const b = await makeClient(two.url, 'gemini')
    cleanups.push(() => removeAll([a.root, b.root]))
    const watchB = await (async () => {
      const config = await readConfig(b.root)
      const syncs: SyncInfo[] = []
      const handle = startWatch({
        root: b.root,
        client: new MemoryClient({server: two.url, token: TOKENS.gemini}),
        settings: {...config.sync, retryDelay: 10},
        token: TOKENS.gemini,
        onSync: (_result, info) => syncs.push(info),
      })
      cleanups.push(() => handle.stop())
      await handle.ready
      return {handle, syncs}
    })()
    expect(watchB.handle.stats().connected).toBe(true)
    // The sync that follows the subscription may still be running after ready: had it pulled the file, the relayed
    // broadcast would rightly be skipped as an echo, and the test could not tell the relay worked.
    await until('B’s sync after subscribing', () => (watchB.syncs.some((info) => info.reasons.includes('subscribed')) ? true : null))

    await a.write('notes/from-one.md', 'pushed through process one\n')
    const pushed = await a.sync()
    expect(pushed.pushed).toEqual(['notes/from-one.md'])
    // It comes because process two relayed process one's broadcast, not from a sync B started for another reason.
    // The watch reports a sync once it has finished, after the file is written: wait for the report, not the file.
    const reason = 'remote:MEM_UPDATE:notes/from-one.md'
    await until(`B's sync for ${reason}`, () => (watchB.syncs.some((info) => info.reasons.includes(reason)) ? true : null))
    expect(await b.read('notes/from-one.md')).toBe('pushed through process one\n')
  })

  it('a conflicting push through each process: one is stored, the other gets 409 naming the path', async () => {
    const [one, two] = await twoProcesses()
    const push = (url: string, content: string, base: Record<string, number | null>) => call(url, TOKENS.claude, 'POST', '/api/memory/push', {files: {'plan.md': content}, base})
    expect((await push(one.url, 'v1\n', {'plan.md': null})).status).toBe(200)
    const answers = await Promise.all([push(one.url, 'from one\n', {'plan.md': 1}), push(two.url, 'from two\n', {'plan.md': 1})])
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409])
    expect(answers.find((answer) => answer.status === 409)?.text).toContain('plan.md')
    const winner = answers.findIndex((answer) => answer.status === 200) === 0 ? 'from one\n' : 'from two\n'
    for (const url of [one.url, two.url]) {
      const pulled = await call(url, TOKENS.gemini, 'POST', '/api/memory/pull', {files: ['plan.md']})
      expect(pulled.body.files['plan.md']).toMatchObject({content: winner, rev: 2})
    }
  })

  it('a key revoked through the database is refused at once by every process', async () => {
    const [one, two, databaseUrl] = await twoProcesses()
    const {key, token} = await createKey({databaseUrl, agent: 'openclaw'})
    for (const url of [one.url, two.url]) expect((await call(url, token, 'GET', '/api/memory/status')).status).toBe(200)
    await revokeKey({databaseUrl, id: key.id})
    for (const url of [one.url, two.url]) {
      const refused = await call(url, token, 'GET', '/api/memory/status')
      expect(refused.status).toBe(401)
      expect(refused.body.message).toContain(`the key ${key.id} was revoked`)
    }
  })

  it('keys of another workspace too: a read key gets 403 on a push, a revoked or expired one 401, from every process', async () => {
    const [one, two, databaseUrl] = await twoProcesses()
    const write = await createKey({databaseUrl, workspace: 'team-x', agent: 'claude'})
    const read = await createKey({databaseUrl, workspace: 'team-x', agent: 'gemini', role: 'read'})
    const expired = await createKey({databaseUrl, workspace: 'team-x', agent: 'chatgpt', expires: '1d', now: new Date(Date.now() - 2 * 86_400_000)})
    const push = (url: string, token: string) => call(url, token, 'POST', '/api/memory/push', {files: {'notes/x.md': `through ${url}\n`}})
    for (const url of [one.url, two.url]) {
      expect((await push(url, write.token)).status).toBe(200)
      expect((await call(url, read.token, 'POST', '/api/memory/pull', {files: ['notes/x.md']})).body.files['notes/x.md'].content).toBe(`through ${url}\n`)
      const refused = await push(url, read.token)
      expect(refused.status).toBe(403)
      expect(refused.body.message).toContain('this key can only read')
      expect((await call(url, expired.token, 'GET', '/api/memory/status')).status).toBe(401)
    }
    await revokeKey({databaseUrl, id: write.key.id})
    for (const url of [one.url, two.url]) {
      const refused = await push(url, write.token)
      expect(refused.status).toBe(401)
      expect(refused.body.message).toContain(`the key ${write.key.id} was revoked`)
    }
  })
})

describe('--database that cannot be used', () => {
  it('a URL that is not PostgreSQL exits 2 naming --database; an unreachable database exits 1 naming it, never its password', async () => {
    const home = await tempDir('jarvis-db-url-')
    cleanups.push(() => removeAll([home]))
    const env = {XDG_DATA_HOME: join(home, 'data'), XDG_CONFIG_HOME: join(home, 'config'), JARVIS_DATABASE_URL: ''}
    const wrong = await runJarvis(['serve', 'token', 'list', '--database', 'mysql://jarvis@127.0.0.1/jarvis'], {env})
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toContain('--database')
    expect(wrong.stderr).toContain('is not a PostgreSQL URL')

    const password = randomBytes(6).toString('hex')
    const unreachable = `postgres://jarvis:${password}@127.0.0.1:${await closedPort()}/jarvis`
    const serve = await runJarvis(['serve', '--port', '0', '--database', unreachable], {env})
    expect(serve.code).toBe(1)
    expect(serve.stderr).toContain('cannot use the PostgreSQL database postgres://jarvis:***@127.0.0.1')
    expect(serve.stderr).toContain('ECONNREFUSED')
    expect(serve.stderr).not.toContain(password)
    expect(serve.stderr).not.toMatch(/\n\s+at /)
  })
})

describe('serve backup on PostgreSQL', () => {
  it('writes the database\'s dump under a time-stamped name, which serve import brings back into an empty database', async () => {
    const url = await freshDatabase()
    const [storage] = await storages(url, 1)
    await storage.commit({writes: new Map([['notes/a.md', 'kept\n']]), deletes: [], base: new Map()}, 'claude', NOW)
    const to = await tempDir('jarvis-pg-backup-')
    cleanups.push(() => removeAll([to]))
    const backup = await backupData({databaseUrl: url, to, now: new Date('2026-11-25T18:15:00.123Z')})
    expect(backup.file).toBe(join(to, 'jarvis-20261125T181500123Z.jsonl'))
    expect(await readFile(backup.file, 'utf8')).toContain('"path":"notes/a.md"')

    const restored = await freshDatabase()
    const counts = await importData({databaseUrl: restored, input: createReadStream(backup.file), source: backup.file})
    expect(counts.files).toBe(1)
    const rows = async (databaseUrl: string) => {
      const lines: string[] = []
      await exportData({databaseUrl, write: (line) => void lines.push(line)})
      return lines.slice(1)
    }
    expect(await rows(restored)).toEqual(await rows(url))

    // The same through `jarvis serve restore --database`: into an empty database; never over one that holds memory.
    const again = await freshDatabase()
    const restore = await runJarvis(['serve', 'restore', backup.file, '--database', again])
    expect(restore.code, restore.stderr).toBe(0)
    expect(restore.stdout).toContain(`restored ${backup.file}`)
    expect(await rows(again)).toEqual(await rows(url))
    const over = await runJarvis(['serve', 'restore', backup.file, '--database', again])
    expect(over.code).toBe(2)
    expect(over.stderr).toContain('already holds memory')
    expect(over.stderr).not.toMatch(/\n\s+at /)
    expect(await rows(again)).toEqual(await rows(url))
    const forced = await runJarvis(['serve', 'restore', backup.file, '--database', again, '--force'])
    expect(forced.code).toBe(2)
    expect(forced.stderr).toContain('never replaced')
  })

  it('a SQLite backup given with --database is refused, naming the file and what to run instead', async () => {
    const work = await tempDir('jarvis-pg-restore-sqlite-')
    cleanups.push(() => removeAll([work]))
    const sqlite = {env: {...process.env, JARVIS_DATABASE_URL: ''}}
    // A server's data to back up: a key made before its first start makes it (a backup of no server is refused).
    expect((await runJarvis(['serve', 'token', 'create', '--agent', 'claude', '--data', join(work, 'data')], sqlite)).code).toBe(0)
    const made = await runJarvis(['serve', 'backup', '--data', join(work, 'data'), '--to', join(work, 'backups'), '--json'], sqlite)
    expect(made.code, made.stderr).toBe(0)
    const file = (JSON.parse(made.stdout) as {result: {file: string}}).result.file
    const refused = await runJarvis(['serve', 'restore', file, '--database', await freshDatabase()])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(file)
    expect(refused.stderr).toContain('jarvis serve import --database')
  })
})
