/**
 * What the storage commands of `jarvis serve` must never do, on both backends: a command that only reads (`token
 * list`, `export`, `backup`) never upgrades an older database under the servers using it; a dump that was cut is never
 * imported or restored as if it were whole; a failed import into a new workspace leaves no workspace behind; a
 * PostgreSQL backup holds every workspace's keys, as a SQLite one does; and a SQLite server moved by `serve export |
 * serve import` keeps the clients of its tokens file.
 */
import {existsSync} from 'node:fs'
import {readFile, stat, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import Database from 'better-sqlite3'
import pg from 'pg'
import {afterAll, describe, expect, it} from 'vitest'

import {backupData} from '../../src/server/backup.js'
import {exportData} from '../../src/server/dump.js'
import {createKey} from '../../src/server/keys.js'
import {openStorage, type StorageTarget, workspaceExists} from '../../src/server/storage/open.js'
import {SQLITE_FILE_NAME} from '../../src/server/storage/sqlite.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {BACKENDS, type Backend, freshTarget} from '../helpers/backends.js'
import {freshDatabase} from '../helpers/postgres.js'
import {makeClient, startServerProcess, startTestServer, storageFlags} from '../helpers/world.js'
import {call} from './helpers.js'
import {Cleanup, tempDir} from './temp.js'

const cleanup = new Cleanup()
afterAll(() => cleanup.run())

const NOW = '2026-03-03T10:00:00.000Z'

/** A jarvis command as a user runs it: no server, token or database from the environment. */
async function jarvis(args: string[], options: {input?: string; cwd?: string; token?: string} = {}) {
  const home = cleanup.dir(await tempDir('jarvis-dump-safety-home-'))
  const env = {JARVIS_TOKEN: options.token ?? '', JARVIS_AGENT: 'claude', JARVIS_SERVER: '', JARVIS_DIR: '', JARVIS_DATABASE_URL: '', XDG_CONFIG_HOME: join(home, 'config'), XDG_DATA_HOME: join(home, 'data')}
  return runJarvis(args, {env, input: options.input, cwd: options.cwd})
}

/** Where a store of `backend` is, as the flags of a `jarvis serve` subcommand and as a target (its data directory always set). */
async function place(backend: Backend): Promise<StorageTarget & {dataDir: string}> {
  const target = await freshTarget(backend, cleanup)
  return {...target, dataDir: target.dataDir ?? cleanup.dir(await tempDir('jarvis-dump-safety-'))}
}

/** A store holding files, keys and audit entries: a dump of a few dozen lines. */
async function storeWithMemory(backend: Backend): Promise<StorageTarget & {dataDir: string}> {
  const target = await place(backend)
  for (const agent of ['claude', 'gemini', 'chatgpt']) await createKey({...target, agent})
  const storage = await openStorage(target)
  try {
    for (let i = 0; i < 6; i++) {
      await storage.commit({writes: new Map([[`notes/${i}-a.md`, `# ${i} a\n`], [`notes/${i}-b.md`, `# ${i} b\n`]]), deletes: [], base: new Map(), idempotencyKey: `push-${i}`}, 'claude', NOW)
    }
  } finally {
    await storage.close()
  }
  return target
}

/** The lines of the default workspace's dump of `target`. */
async function dumpLines(target: StorageTarget): Promise<string[]> {
  const lines: string[] = []
  await exportData({...target, write: (line) => void lines.push(line)})
  return lines
}

/** Runs SQL on the store of `target` (its SQLite file, or its PostgreSQL database). */
async function onStore(target: StorageTarget & {dataDir: string}, statements: readonly string[]): Promise<unknown[][]> {
  if (target.databaseUrl === undefined) {
    const db = new Database(join(target.dataDir, SQLITE_FILE_NAME))
    try {
      return statements.map((sql) => (/^\s*select/i.test(sql) ? db.prepare(sql).all() : (db.exec(sql), [])))
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({connectionString: target.databaseUrl})
  await client.connect()
  try {
    const results: unknown[][] = []
    for (const sql of statements) results.push((await client.query(sql)).rows)
    return results
  } finally {
    await client.end()
  }
}

/** The newest schema version recorded in the store of `target`. */
async function schemaOf(target: StorageTarget & {dataDir: string}): Promise<number> {
  const [[row]] = await onStore(target, ['SELECT MAX(version) AS v FROM schema_migrations'])
  return Number((row as {v: number}).v)
}

describe.each(BACKENDS)('a %s store at an older schema', (backend) => {
  it('token list, export and backup leave it as it is: refused (exit 2) saying how to upgrade, or (SQLite backup) copied as it is', async () => {
    const target = await storeWithMemory(backend)
    // As the jarvis of schema 4 (API keys, before workspaces, the audit log and OAuth) left it.
    await onStore(target, [
      'DROP TABLE oauth_tokens',
      'DROP TABLE oauth_authorizations',
      'DROP TABLE oauth_grants',
      'DROP TABLE oauth_clients',
      'DROP TABLE audit_log',
      'ALTER TABLE api_keys DROP COLUMN workspace',
      ...(backend === 'postgres' ? ['DROP FUNCTION jarvis_append_events(jsonb)', 'DROP INDEX memory_events_live_newest'] : []),
      'DELETE FROM schema_migrations WHERE version > 4',
    ])
    const flags = storageFlags(target)
    for (const args of [['serve', 'token', 'list'], ['serve', 'export']]) {
      const refused = await jarvis([...args, ...flags])
      expect(refused.code, `${args.join(' ')}: ${refused.stderr}`).toBe(2)
      expect(refused.stderr).toContain('is at schema 4')
      expect(refused.stderr).toMatch(/start `jarvis serve` \(version \d+\.\d+\.\d+[^)]*\) on it once to upgrade it, or use the jarvis that made it/)
      expect(refused.stdout).toBe('')
    }
    const backups = cleanup.dir(await tempDir('jarvis-dump-safety-backups-'))
    const backup = await jarvis(['serve', 'backup', '--to', backups, '--json', ...flags])
    if (backend === 'postgres') {
      expect(backup.code, backup.stderr).toBe(2)
      expect(envelope(backup).error?.message).toContain('is at schema 4')
    } else {
      // A copy of the file as it is: the backup to go back to, taken before an upgrade, restores as schema 4.
      expect(backup.code, backup.stderr).toBe(0)
      const file = envelope<{file: string}>(backup).result!.file
      const copy = new Database(file, {readonly: true})
      expect(copy.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({v: 4})
      copy.close()
      const restored = join(backups, 'restored')
      expect((await jarvis(['serve', 'restore', file, '--data', restored])).code).toBe(0)
    }
    // Nothing changed: the jarvis of schema 4 still opens it.
    expect(await schemaOf(target)).toBe(4)

    // A server of this version upgrades it at its start; then the commands read it.
    const server = await startTestServer(target.dataDir, 0, target.databaseUrl ?? null)
    await server.close()
    const list = await jarvis(['serve', 'token', 'list', '--json', ...flags])
    expect(list.code, list.stderr).toBe(0)
    expect(envelope<{keys: unknown[]}>(list).result!.keys).toHaveLength(3)
  })
})

describe.each(BACKENDS)('a %s dump that was cut', (backend) => {
  it('is refused (exit 2) naming the lines read and the lines of the whole dump, and nothing is imported; a whole one and one of format 1 import', async () => {
    const source = await storeWithMemory(backend)
    const lines = await dumpLines(source)
    const header = JSON.parse(lines[0]) as {jarvis_dump: number; rows: Record<string, number>}
    expect(header.jarvis_dump).toBe(2)
    expect(header.rows).toMatchObject({files: 12, api_keys: 3})
    expect(JSON.parse(lines.at(-1)!)).toEqual({jarvis_dump_end: header.rows})
    const whole = lines.length

    const cuts: [string, string, RegExp][] = [
      // `head -n 12 backup.jsonl > half.jsonl`
      ['the first 12 lines', `${lines.slice(0, 12).join('\n')}\n`, new RegExp(`the dump was cut \\(its end line is missing\\): 12 lines read, the whole dump has ${whole} `)],
      // An exporter that died in the middle of a line (`serve export | serve import`).
      ['a torn last line', `${lines.slice(0, 12).join('\n')}\n${lines[12].slice(0, 20)}`, new RegExp(`the dump was cut \\(its end line is missing\\): 13 lines read, the whole dump has ${whole} `)],
      // Everything but the end line.
      ['all but the end line', `${lines.slice(0, -1).join('\n')}\n`, /the dump was cut \(its end line is missing\)/],
      // A row lost in the middle.
      ['a row lost', `${[...lines.slice(0, 5), ...lines.slice(6)].join('\n')}\n`, new RegExp(`the dump is not whole \\(cut, or edited\\): ${whole - 1} lines read, the whole dump has ${whole} .*files 11 of 12`)],
    ]
    for (const [what, input, says] of cuts) {
      const target = await place(backend)
      const refused = await jarvis(['serve', 'import', ...storageFlags(target)], {input})
      expect(refused.code, `${what}: ${refused.stderr}`).toBe(2)
      expect(refused.stderr, what).toMatch(says)
      expect(refused.stderr, what).toContain('nothing was imported')
      const after = await dumpLines(target)
      expect(JSON.parse(after[0]).rows, what).toMatchObject({files: 0, memory_events: 0, api_keys: 0, audit_log: 0})
    }

    // `jarvis serve restore` of a cut backup (a PostgreSQL backup is a dump) is refused the same way.
    if (backend === 'postgres') {
      const file = join(cleanup.dir(await tempDir('jarvis-dump-safety-cut-')), 'half.jsonl')
      await writeFile(file, `${lines.slice(0, 12).join('\n')}\n`)
      const restore = await jarvis(['serve', 'restore', file, '--database', await freshDatabase()])
      expect(restore.code, restore.stderr).toBe(2)
      expect(restore.stderr).toContain(`${file}: the dump was cut`)
    }

    const target = await place(backend)
    const imported = await jarvis(['serve', 'import', ...storageFlags(target)], {input: `${lines.join('\n')}\n`})
    expect(imported.code, imported.stderr).toBe(0)
    expect(imported.stdout).toContain('imported 12 files, 0 events, 3 keys')
    expect(imported.stderr).not.toContain('warning')

    // A dump of the jarvis before the counts (format 1: no counts, no end line) still imports, with a warning.
    const {rows: _rows, ...oldHeader} = {...header, jarvis_dump: 1}
    const old = await jarvis(['serve', 'import', ...storageFlags(await place(backend))], {input: `${[JSON.stringify(oldHeader), ...lines.slice(1, -1)].join('\n')}\n`})
    expect(old.code, old.stderr).toBe(0)
    expect(old.stdout).toContain('imported 12 files, 0 events, 3 keys')
    expect(old.stderr).toContain('whether it is whole cannot be checked')
  })
})

describe.each(BACKENDS)('a failed import into a new %s workspace', (backend) => {
  it('leaves no workspace behind (bad JSON, no input, a cut dump); one into an existing workspace keeps it', async () => {
    const target = await storeWithMemory(backend)
    const flags = storageFlags(target)
    await createKey({...target, workspace: 'team-b', agent: 'claude'})
    const cut = (await dumpLines(target)).slice(0, 3).join('\n')
    for (const [what, input] of [
      ['bad JSON', '{"bad'],
      ['no input', ''],
      ['a cut dump', `${cut}\n`],
    ]) {
      const refused = await jarvis(['serve', 'import', '--workspace', 'team-c', ...flags], {input})
      expect(refused.code, `${what}: ${refused.stderr}`).toBe(2)
      expect(await workspaceExists(target, 'team-c'), what).toBe(false)
      if (backend === 'sqlite') expect(existsSync(join(target.dataDir, 'workspaces', 'team-c')), what).toBe(false)
      const exported = await jarvis(['serve', 'export', '--workspace', 'team-c', ...flags])
      expect(exported.code, what).toBe(2)
      expect(exported.stderr, what).toContain('there is no workspace "team-c"')
    }
    const intoB = await jarvis(['serve', 'import', '--workspace', 'team-b', ...flags], {input: '{"bad'})
    expect(intoB.code).toBe(2)
    expect(await workspaceExists(target, 'team-b')).toBe(true)
  })
})

describe.each(BACKENDS)('a %s backup', (backend) => {
  it("holds every workspace's keys: restored, each opens its workspace, and the workspace's export imports beside them", async () => {
    const source = await storeWithMemory(backend)
    const teamB = await createKey({...source, workspace: 'team-b', agent: 'gemini', role: 'read'})
    const storageB = await openStorage(source, {workspace: 'team-b'})
    await storageB.commit({writes: new Map([['notes/b.md', '# team b\n']]), deletes: [], base: new Map()}, 'gemini', NOW)
    await storageB.close()

    const backups = cleanup.dir(await tempDir('jarvis-dump-safety-backups-'))
    const {file} = await backupData({...source, to: backups})
    // It holds the memory and the keys' hashes: readable by its owner only, as the database is.
    expect((await stat(file)).mode & 0o077).toBe(0)
    const restoredTo = backend === 'postgres' ? {databaseUrl: await freshDatabase(), dataDir: cleanup.dir(await tempDir('jarvis-dump-safety-restored-'))} : {dataDir: join(backups, 'restored')}
    const restore = await jarvis(['serve', 'restore', file, ...storageFlags(restoredTo)])
    expect(restore.code, restore.stderr).toBe(0)
    const list = await jarvis(['serve', 'token', 'list', '--json', ...storageFlags(restoredTo)])
    expect(list.code, list.stderr).toBe(0)
    const keys = envelope<{keys: {id: string; workspace: string; role: string}[]}>(list).result!.keys
    expect(keys.map((key) => key.workspace).sort()).toEqual(['default', 'default', 'default', 'team-b'])
    expect(keys.find((key) => key.workspace === 'team-b')).toMatchObject({id: teamB.key.id, role: 'read'})

    // Team B's memory is kept by its own export; it goes in beside its key, which the backup brought back already.
    const exported = await jarvis(['serve', 'export', '--workspace', 'team-b', ...storageFlags(source)])
    expect(exported.code, exported.stderr).toBe(0)
    const imported = await jarvis(['serve', 'import', '--workspace', 'team-b', ...storageFlags(restoredTo)], {input: exported.stdout})
    expect(imported.code, imported.stderr).toBe(0)
    expect(imported.stdout).toContain('imported 1 file, 0 events, 1 key')
    const server = await startTestServer(restoredTo.dataDir, 0, restoredTo.databaseUrl ?? null)
    cleanup.add(() => server.close())
    const status = await call(server.url, teamB.token, 'GET', '/api/memory/status')
    expect(status.status).toBe(200)
    expect(Object.keys(status.body.files)).toEqual(['notes/b.md'])
  })
})

describe.each(BACKENDS)('a SQLite server moved to %s with serve export | serve import', (to) => {
  it("keeps the clients of its tokens file: they sync on against the copy with nothing to transfer, and push", async () => {
    const work = cleanup.dir(await tempDir('jarvis-dump-safety-move-'))
    // A user's first `jarvis serve`: it makes tokens.json in its data directory and prints them.
    const source = await startServerProcess(join(work, 'old'), 0, [], {dataDirTokens: true, databaseUrl: null})
    cleanup.add(() => source.stop())
    const tokens = JSON.parse(await readFile(join(work, 'old', 'tokens.json'), 'utf8')) as Record<string, string>
    const claude = Object.keys(tokens).find((token) => tokens[token] === 'claude')!
    const tree = await makeClient(source.url, 'claude')
    cleanup.dir(tree.root)
    await tree.write('PROJECT_MEMORY.md', '# Atlas\n')
    const first = await jarvis(['sync'], {cwd: tree.root, token: claude})
    expect(first.code, first.stderr).toBe(0)

    const exported = await jarvis(['serve', 'export', '--data', join(work, 'old')])
    expect(exported.code, exported.stderr).toBe(0)
    expect(exported.stderr).toContain(`the 4 tokens of ${join(work, 'old', 'tokens.json')} went in as write keys`)
    await source.stop()

    const target = to === 'postgres' ? {dataDir: join(work, 'new'), databaseUrl: await freshDatabase()} : {dataDir: join(work, 'new')}
    const imported = await jarvis(['serve', 'import', ...storageFlags(target)], {input: exported.stdout})
    expect(imported.code, imported.stderr).toBe(0)
    expect(imported.stdout).toContain('1 file, 0 events, 4 keys')
    // The new server makes tokens of its own (a new data directory); the old ones open it as keys.
    const copy = await startServerProcess(target.dataDir, 0, [], {dataDirTokens: true, databaseUrl: target.databaseUrl ?? null})
    cleanup.add(() => copy.stop())
    const sync = await jarvis(['sync', '--server', copy.url, '--json'], {cwd: tree.root, token: claude})
    expect(sync.code, sync.stderr).toBe(0)
    const result = envelope<{pushed: string[]; pulled: string[]; merged: string[]}>(sync).result!
    expect([...result.pushed, ...result.pulled, ...result.merged]).toEqual([])
    await tree.write('notes/after-move.md', '- moved\n')
    const push = await jarvis(['sync', '--server', copy.url, '--json'], {cwd: tree.root, token: claude})
    expect(push.code, push.stderr).toBe(0)
    expect(envelope<{pushed: string[]}>(push).result!.pushed).toEqual(['notes/after-move.md'])
    const newTokens = JSON.parse(await readFile(join(target.dataDir, 'tokens.json'), 'utf8')) as Record<string, string>
    expect(Object.keys(newTokens)).not.toContain(claude)
    expect((await call(copy.url, Object.keys(newTokens)[0], 'GET', '/api/memory/status')).status).toBe(200)
  })
})
