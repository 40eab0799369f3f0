/**
 * One workspace moved between backends (CONTRACT §7): `jarvis serve export --workspace W` on a SQLite server, `jarvis
 * serve import --workspace W` into PostgreSQL (and back) — files with their revisions, events with their ids, the
 * active project, the workspace's keys — and a client of that workspace syncs on against the copy with nothing to
 * transfer. The other workspaces stay behind. And a store made before workspaces serves on as the default workspace.
 */
import {join} from 'node:path'

import Database from 'better-sqlite3'
import pg from 'pg'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {createKey} from '../../src/server/keys.js'
import {openStorage} from '../../src/server/storage/open.js'
import {SQLITE_FILE_NAME} from '../../src/server/storage/sqlite.js'
import {envelope, runJarvis} from '../helpers/cli.js'
import {BACKENDS, type Backend, freshTarget, useBackend} from '../helpers/backends.js'
import {freshDatabase} from '../helpers/postgres.js'
import {makeClient, removeAll, startTestServer, storageFlags, tempDir, TOKENS, type TestClient, type TestServer} from '../helpers/world.js'
import {call} from './helpers.js'
import {Cleanup} from './temp.js'

const MOVES: [Backend, Backend][] = [
  ['sqlite', 'postgres'],
  ['postgres', 'sqlite'],
]

describe.each(MOVES)('serve export --workspace from %s, import --workspace into %s', (from, to) => {
  useBackend(from)

  let source: TestServer
  let copy: TestServer | undefined
  let tree: TestClient
  let work: string
  let tokenB: string
  let keyB: string

  const env = (token: string) => ({JARVIS_TOKEN: token, JARVIS_AGENT: 'claude', JARVIS_SERVER: '', JARVIS_DIR: '', XDG_CONFIG_HOME: join(work, 'xdg'), XDG_DATA_HOME: join(work, 'data')})
  const jarvis = async (args: string[], options: {token?: string; input?: string; cwd?: string} = {}) => runJarvis(args, {env: env(options.token ?? ''), input: options.input, cwd: options.cwd})

  beforeAll(async () => {
    work = await tempDir('jarvis-ws-dump-')
    source = await startTestServer()
    const created = await jarvis(['serve', 'token', 'create', '--workspace', 'team-b', '--agent', 'claude', '--json', ...storageFlags(source)])
    expect(created.code, created.stderr).toBe(0)
    ;({token: tokenB, id: keyB} = envelope<{token: string; id: string}>(created).result!)
    // A tree of workspace B: two files, one at its second revision, an event, an active project.
    tree = await makeClient(source.url, 'claude')
    await tree.write('PROJECT_MEMORY.md', '# Atlas of team B\n')
    await tree.write('notes/plan.md', '- ship\n')
    expect((await jarvis(['sync'], {token: tokenB, cwd: tree.root})).code).toBe(0)
    await tree.write('notes/plan.md', '- ship\n- then move\n')
    expect((await jarvis(['sync'], {token: tokenB, cwd: tree.root})).code).toBe(0)
    const appended = await jarvis(['memory', 'append', '--kind', 'decision', '--key', 'decision:move_day', '--content', 'Team B moves on Monday.'], {token: tokenB, cwd: tree.root})
    expect(appended.code, appended.stderr).toBe(0)
    expect((await call(source.url, tokenB, 'POST', '/api/projects/active', {projectId: 'atlas'})).status).toBe(200)
    // The tree holds all of B (the project switch too) before the move.
    expect((await jarvis(['sync'], {token: tokenB, cwd: tree.root})).code).toBe(0)
    // The default workspace holds memory of its own, which must stay behind.
    expect((await call(source.url, TOKENS.claude, 'POST', '/api/memory/push', {files: {'notes/default-only.md': 'stays\n'}})).status).toBe(200)
  }, 90_000)

  afterAll(async () => {
    await source?.close()
    await copy?.close()
    await removeAll([source?.dataDir, copy?.dataDir, tree?.root, work].filter(Boolean) as string[])
  })

  it('token list shows each key\'s workspace, all of them or one workspace\'s', async () => {
    const other = await jarvis(['serve', 'token', 'create', '--agent', 'gemini', '--role', 'read', '--json', ...storageFlags(source)])
    const otherId = envelope<{id: string}>(other).result!.id
    const all = await jarvis(['serve', 'token', 'list', ...storageFlags(source)])
    expect(all.stdout).toContain(`${keyB}  team-b  claude  write`)
    expect(all.stdout).toContain(`${otherId}  default  gemini  read`)
    const ofB = await jarvis(['serve', 'token', 'list', '--workspace', 'team-b', '--json', ...storageFlags(source)])
    expect(envelope<{keys: {id: string; workspace: string}[]}>(ofB).result!.keys).toEqual([expect.objectContaining({id: keyB, workspace: 'team-b'})])
    // Revoked at once for a key of any workspace.
    const revoked = await jarvis(['serve', 'token', 'revoke', otherId, ...storageFlags(source)])
    expect(revoked.stdout).toContain('workspace default')
  })

  it('moves workspace B with its revisions, events, active project and key; a client of B syncs on with nothing to transfer', async () => {
    const exported = await jarvis(['serve', 'export', '--workspace', 'team-b', ...storageFlags(source)])
    expect(exported.code, exported.stderr).toBe(0)
    expect(exported.stderr).toContain('exported 3 files, 1 event, 1 key')
    expect(JSON.parse(exported.stdout.split('\n')[0])).toMatchObject({jarvis_dump: 2, workspace: 'team-b'})
    expect(exported.stdout).not.toContain('default-only')

    const target = to === 'postgres' ? {dataDir: join(work, 'copy'), databaseUrl: await freshDatabase()} : {dataDir: join(work, 'copy')}
    const imported = await jarvis(['serve', 'import', '--workspace', 'team-b', ...storageFlags(target)], {input: exported.stdout})
    expect(imported.code, imported.stderr).toBe(0)
    expect(imported.stdout).toContain('imported 3 files, 1 event, 1 key')
    copy = await startTestServer(target.dataDir, 0, target.databaseUrl ?? null)

    const sync = await jarvis(['sync', '--server', copy.url, '--json'], {token: tokenB, cwd: tree.root})
    expect(sync.code, sync.stderr).toBe(0)
    const result = envelope<{pushed: string[]; pulled: string[]; merged: string[]}>(sync).result!
    expect([...result.pushed, ...result.pulled, ...result.merged]).toEqual([])

    const state = async (url: string) => ({
      status: (await call(url, tokenB, 'GET', '/api/memory/status')).body.files,
      snapshot: (await call(url, tokenB, 'GET', '/v1/memory/snapshot?scopes=global')).body,
      project: (await call(url, tokenB, 'GET', '/api/projects/active')).body,
    })
    const [was, is] = [await state(source.url), await state(copy.url)]
    expect(is.status).toEqual(was.status)
    expect(is.status['notes/plan.md'].rev).toBe(2)
    expect(is.snapshot.recent_events.map((e: {event_id: string}) => e.event_id)).toEqual(was.snapshot.recent_events.map((e: {event_id: string}) => e.event_id))
    expect(is.snapshot.pinned_md).toContain('Team B moves on Monday.')
    expect(is.project.projectId).toBe('atlas')
    // The copy's default workspace holds nothing: the default workspace's memory stayed behind.
    expect((await call(copy.url, TOKENS.claude, 'GET', '/api/memory/status')).body.files).toEqual({})

    // Row for row the same from the copy.
    const again = await jarvis(['serve', 'export', '--workspace', 'team-b', ...storageFlags(target)])
    const rows = (text: string) => text.trimEnd().split('\n').slice(1)
    expect(rows(again.stdout)).toEqual(rows(exported.stdout))

    // A second import into B is refused; so is the same dump into another workspace (its key is on this server already).
    const twice = await jarvis(['serve', 'import', '--workspace', 'team-b', ...storageFlags(target)], {input: exported.stdout})
    expect(twice.code).toBe(2)
    expect(twice.stderr).toMatch(/already (holds memory|has keys)/)
    const elsewhere = await jarvis(['serve', 'import', '--workspace', 'team-c', ...storageFlags(target)], {input: exported.stdout})
    expect(elsewhere.code).toBe(2)
    expect(elsewhere.stderr).toContain(`the key ${keyB} is on this server already (workspace team-b)`)
    expect((await call(copy.url, TOKENS.claude, 'GET', '/api/memory/status')).status).toBe(200)
    const list = await jarvis(['serve', 'token', 'list', '--json', ...storageFlags(target)])
    expect(envelope<{keys: {workspace: string}[]}>(list).result!.keys.map((key) => key.workspace)).toEqual(['team-b'])
  })

  it('bad input: an unknown workspace, or a name that is not one, exits 2 naming --workspace', async () => {
    const unknown = await jarvis(['serve', 'export', '--workspace', 'nobody-here', ...storageFlags(source)])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('--workspace: there is no workspace "nobody-here"')
    for (const args of [
      ['serve', 'export', '--workspace', 'Team_B'],
      ['serve', 'import', '--workspace', '../up'],
      ['serve', 'token', 'create', '--agent', 'claude', '--workspace', 'a b'],
      ['serve', 'token', 'list', '--workspace', '-x'],
    ]) {
      const refused = await jarvis([...args, ...storageFlags(source)], {input: ''})
      expect(refused.code, args.join(' ')).toBe(2)
      expect(refused.stderr, args.join(' ')).toContain('is not a workspace name')
    }
  })
})

describe.each(BACKENDS)('a %s store made before workspaces', (backend) => {
  useBackend(backend)
  const cleanup = new Cleanup()
  afterAll(() => cleanup.run())

  it('serves its memory and its keys on as the default workspace', async () => {
    const target = await freshTarget(backend, cleanup)
    const {token, key} = await createKey({...target, agent: 'claude', role: 'read'})
    const storage = await openStorage(target)
    await storage.commit({writes: new Map([['notes/old.md', '# Before workspaces\n']]), deletes: [], base: new Map()}, 'claude', new Date().toISOString())
    await storage.close()
    // As the jarvis before workspaces left it: schema 4, no workspace column on the keys.
    const downgrade = ['ALTER TABLE api_keys DROP COLUMN workspace', 'DELETE FROM schema_migrations WHERE version = 5']
    if (target.databaseUrl === undefined) {
      const db = new Database(join(target.dataDir!, SQLITE_FILE_NAME))
      for (const sql of downgrade) db.exec(sql)
      db.close()
    } else {
      const client = new pg.Client({connectionString: target.databaseUrl})
      await client.connect()
      for (const sql of downgrade) await client.query(sql)
      await client.end()
    }
    const dataDir = target.dataDir ?? (await tempDir('jarvis-ws-old-'))
    if (target.dataDir === undefined) cleanup.dir(dataDir)
    const server = await startTestServer(dataDir, 0, target.databaseUrl ?? null)
    cleanup.add(() => server.close())
    for (const bearer of [token, TOKENS.claude]) {
      const status = await call(server.url, bearer, 'GET', '/api/memory/status')
      expect(status.status).toBe(200)
      expect(Object.keys(status.body.files)).toEqual(['notes/old.md'])
    }
    // Still a read key, now of the default workspace.
    expect((await call(server.url, token, 'POST', '/api/memory/push', {files: {'notes/new.md': 'x\n'}})).status).toBe(403)
    const list = await runJarvis(['serve', 'token', 'list', ...storageFlags({dataDir, databaseUrl: target.databaseUrl})], {env: {JARVIS_TOKEN: ''}})
    expect(list.stdout).toContain(`${key.id}  default  claude  read`)
  })
})
