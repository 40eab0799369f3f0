/**
 * `jarvis serve export` and `jarvis serve import`: a server's memory moved to a new data directory or database, from
 * SQLite to PostgreSQL and back, loses nothing —
 * files with their revisions, events with their ids, keys, the audit log — and a client syncs on against the copy with nothing to
 * transfer. A broken dump imports nothing and names its line.
 */
import {join} from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runJarvis} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, storageFlags, tempDir, TOKENS, type TestClient, type TestServer} from '../helpers/world.js'
import {type Backend, useBackend} from '../helpers/backends.js'
import {freshDatabase} from '../helpers/postgres.js'

const MOVES: [Backend, Backend][] = [
  ['sqlite', 'sqlite'],
  ['sqlite', 'postgres'],
  ['postgres', 'sqlite'],
]

describe.each(MOVES)('serve export from %s, import into %s', (from, to) => {
  useBackend(from)
  /** A new, empty place for an import: a data directory, or a PostgreSQL database. */
  const newPlace = async (name: string): Promise<{dataDir: string; databaseUrl?: string}> =>
    to === 'postgres' ? {dataDir: join(work, name), databaseUrl: await freshDatabase()} : {dataDir: join(work, name)}

  let source: TestServer
  let copy: TestServer | undefined
  let tree: TestClient
  let work: string
  let dump: string

  const env = () => ({JARVIS_TOKEN: TOKENS.claude, JARVIS_AGENT: 'claude', JARVIS_SERVER: '', JARVIS_DIR: '', XDG_CONFIG_HOME: join(work, 'xdg'), XDG_DATA_HOME: join(work, 'data')})

  beforeAll(async () => {
    work = await tempDir('jarvis-dump-')
    source = await startTestServer()
    tree = await makeClient(source.url, 'claude')
    await tree.write('PROJECT_MEMORY.md', '# Atlas\n\nRelease on Tuesday.\n')
    await tree.write('notes/plan.md', '- ship the dump\n')
    await tree.sync()
    await tree.write('notes/plan.md', '- ship the dump\n- then the import\n')
    await tree.sync()
    for (const [key, content] of [
      ['decision:release_day', 'Release on Tuesday.'],
      ['fact:dump_format', 'A dump is JSON Lines.'],
    ]) {
      const run = await runJarvis(['memory', 'append', '--kind', key.split(':')[0], '--key', key, '--content', content], {cwd: tree.root, env: env()})
      expect(run.code, run.stderr).toBe(0)
    }
  }, 60_000)

  afterAll(async () => {
    await source?.close()
    await copy?.close()
    await removeAll([source?.dataDir, copy?.dataDir, tree?.root, work].filter(Boolean) as string[])
  })

  it('exports while the server runs, imports into a new data directory, and a client syncs on with nothing to transfer', async () => {
    const key = await runJarvis(['serve', 'token', 'create', '--agent', 'gemini', '--role', 'read', ...storageFlags(source), '--json'], {env: env()})
    const readToken = envelope<{token: string}>(key).result!.token

    const exported = await runJarvis(['serve', 'export', ...storageFlags(source)], {env: env()})
    expect(exported.code, exported.stderr).toBe(0)
    // The audit log moves too: the two pushes and the key.
    expect(exported.stderr).toContain('exported 2 files, 2 events, 1 key, 3 audit entries')
    dump = exported.stdout
    expect(JSON.parse(dump.split('\n')[0])).toMatchObject({jarvis_dump: 2})

    const target = await newPlace('copy')
    const imported = await runJarvis(['serve', 'import', ...storageFlags(target)], {env: env(), input: dump})
    expect(imported.code, imported.stderr).toBe(0)
    expect(imported.stdout).toContain('imported 2 files, 2 events, 1 key, 3 audit entries')

    copy = await startTestServer(target.dataDir, 0, target.databaseUrl ?? null)
    const sync = await runJarvis(['sync', '--server', copy.url, '--json'], {cwd: tree.root, env: env()})
    expect(sync.code, sync.stderr).toBe(0)
    const result = envelope<{pushed: string[]; pulled: string[]; merged: string[]}>(sync).result!
    expect([...result.pushed, ...result.pulled, ...result.merged]).toEqual([])

    const snapshot = async (url: string) => {
      const answer = await fetch(`${url}/v1/memory/snapshot?scopes=global`, {headers: {authorization: `Bearer ${TOKENS.claude}`}})
      const body = (await answer.json()) as {recent_events: Array<{event_id: string}>; snapshot_id: string}
      return [body.snapshot_id, ...body.recent_events.map((event) => event.event_id).sort()]
    }
    expect(await snapshot(copy.url)).toEqual(await snapshot(source.url))
    expect((await snapshot(copy.url)).length).toBeGreaterThan(0)
    // Revisions kept: the copy names the edited file's second revision, as the source does.
    const status = async (url: string) => ((await (await fetch(`${url}/api/memory/status`, {headers: {authorization: `Bearer ${TOKENS.claude}`}})).json()) as {files: Record<string, {rev: number}>}).files
    expect((await status(copy.url))['notes/plan.md']).toEqual((await status(source.url))['notes/plan.md'])
    // The key moved too: still a read key.
    expect((await fetch(`${copy.url}/api/memory/status`, {headers: {authorization: `Bearer ${readToken}`}})).status).toBe(200)

    // A second import into a directory that holds memory is refused.
    const again = await runJarvis(['serve', 'import', ...storageFlags(target)], {env: env(), input: dump})
    expect(again.code).toBe(2)
    expect(again.stderr).toContain('already holds memory')

    // Row for row the same: the copy exports exactly what the source did (only the header's time differs).
    const reexported = await runJarvis(['serve', 'export', ...storageFlags(target)], {env: env()})
    expect(reexported.code, reexported.stderr).toBe(0)
    const rows = (text: string) => text.trimEnd().split('\n').slice(1)
    expect(rows(reexported.stdout)).toEqual(rows(dump))
  })

  it('a broken dump names its line and imports nothing', async () => {
    const lines = dump.trimEnd().split('\n')
    lines.splice(3, 0, '{"table": "files", "row": {"path": "x.md", "colour": "red"}}')
    const target = await newPlace('broken')
    const refused = await runJarvis(['serve', 'import', ...storageFlags(target)], {env: env(), input: `${lines.join('\n')}\n`})
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('<stdin>:4: files has no column "colour"')
    expect(refused.stderr).toContain('nothing was imported')
    const empty = await runJarvis(['serve', 'export', ...storageFlags(target)], {env: env()})
    expect(empty.stderr).toContain('exported 0 files, 0 events, 0 keys')

    const notDump = await runJarvis(['serve', 'import', ...storageFlags(await newPlace('other'))], {env: env(), input: '{"hello": 1}\n'})
    expect(notDump.code).toBe(2)
    expect(notDump.stderr).toContain('<stdin>:1: not a jarvis dump')

    // A header without its schema version (or with one that is no version) says so, not "a newer jarvis".
    const header = JSON.parse(lines[0]) as Record<string, unknown>
    for (const [schema, says] of [[undefined, '<stdin>:1: the header has no schema version'], ['7', '<stdin>:1: the header\'s schema version is "7", not a whole number']] as const) {
      const input = `${JSON.stringify({...header, schema})}\n${lines.slice(1).join('\n')}\n`
      const refused = await runJarvis(['serve', 'import', ...storageFlags(await newPlace(`schema-${String(schema)}`))], {env: env(), input})
      expect(refused.code, refused.stderr).toBe(2)
      expect(refused.stderr).toContain(says)
      expect(refused.stderr).toContain('nothing was imported')
      expect(refused.stderr).not.toContain('newer jarvis')
    }
  })
})
