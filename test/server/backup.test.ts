/**
 * `jarvis serve backup` and `jarvis serve restore` under load: a backup taken while four agents append and sync
 * restores to a server holding every event and file acknowledged before the backup began; retention keeps the
 * newest N; a restore never deletes the database it replaces, refuses one a running server has open, and refuses a
 * damaged file.
 */
import {randomUUID} from 'node:crypto'
import {readdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from 'vitest'

import {EventsClient} from '../../src/protocol/events.js'
import {hashText} from '../../src/store/index.js'
import {runJarvis} from '../helpers/cli.js'
import {AGENTS, makeClient, removeAll, startServerProcess, tempDir, TOKENS, type ServerProcess} from '../helpers/world.js'

const cleanup: string[] = []
const servers: ServerProcess[] = []

afterAll(async () => {
  for (const server of servers) await server.stop()
  await removeAll(cleanup)
})

/** What a restored data directory holds, read through `jarvis serve export` (a process of its own). */
async function contents(dataDir: string): Promise<{events: Set<string>; files: Map<string, string>; pushed: Set<string>}> {
  const run = await runJarvis(['serve', 'export', '--data', dataDir])
  expect(run.code, run.stderr).toBe(0)
  const events = new Set<string>()
  const files = new Map<string, string>()
  /** The paths the audit log's push entries name. */
  const pushed = new Set<string>()
  for (const line of run.stdout.trim().split('\n').slice(1)) {
    const {table, row} = JSON.parse(line) as {table: string; row: Record<string, string>}
    if (table === 'memory_events') events.add(row.event_id)
    if (table === 'files' && row.hash) files.set(row.path, row.hash)
    if (table === 'audit_log' && row.kind === 'push') for (const path of JSON.parse(row.paths) as string[]) pushed.add(path)
  }
  return {events, files, pushed}
}

describe('serve backup and restore', () => {
  it('a backup taken while 4 agents append and sync restores every event and file acknowledged before it began', async () => {
    const work = await tempDir('jarvis-backup-')
    cleanup.push(work)
    const server = await startServerProcess(join(work, 'server'))
    servers.push(server)
    const acknowledgedEvents: Array<{id: string; at: number}> = []
    const acknowledgedFiles: Array<{path: string; hash: string; at: number}> = []
    let stop = false
    const trees = await Promise.all(AGENTS.map((agent) => makeClient(server.url, agent)))
    cleanup.push(...trees.map((tree) => tree.root))

    const load = AGENTS.map(async (agent, n) => {
      const client = new EventsClient({server: server.url, token: TOKENS[agent]})
      const tree = trees[n]
      try {
        for (let i = 0; !stop; i++) {
          const answer = await client.append(
            {agent_id: agent, run_id: randomUUID(), scope: 'global', kind: 'log', dedupe_key: `log:${agent}_${i}`, confidence: 'high', content_md: `Entry ${i} of ${agent}.`, source: {system: 'cli'}, ttl_days: 0} as never,
            randomUUID(),
          )
          acknowledgedEvents.push({id: answer.event_id, at: Date.now()})
          if (i % 5 === 0) {
            const text = `# ${agent} ${i}\n`
            await tree.write(`load/${agent}-${i}.md`, text)
            await tree.sync()
            acknowledgedFiles.push({path: `load/${agent}-${i}.md`, hash: hashText(text), at: Date.now()})
          }
        }
      } finally {
        await client.close()
      }
    })

    // Let the load build up, then back up while it goes on.
    while (acknowledgedEvents.length < 40) await new Promise((resolve) => setTimeout(resolve, 20))
    // Everything acknowledged up to this moment (this same millisecond included: recorded before this line ran).
    const began = Date.now()
    const backup = await runJarvis(['serve', 'backup', '--data', server.dataDir, '--to', join(work, 'backups'), '--json'])
    const ended = Date.now()
    stop = true
    await Promise.all(load)
    expect(backup.code, backup.stderr).toBe(0)
    const file = (JSON.parse(backup.stdout) as {result: {file: string}}).result.file
    // The agents went on writing while the backup ran.
    expect(acknowledgedEvents.some((event) => event.at > began && event.at < ended)).toBe(true)

    const restored = join(work, 'restored')
    const restore = await runJarvis(['serve', 'restore', file, '--data', restored])
    expect(restore.code, restore.stderr).toBe(0)
    const {events, files, pushed} = await contents(restored)
    const before = acknowledgedEvents.filter((event) => event.at <= began)
    expect(before.length).toBeGreaterThanOrEqual(40)
    expect(before.filter((event) => !events.has(event.id))).toEqual([])
    for (const {path, hash} of acknowledgedFiles.filter((f) => f.at <= began)) expect(files.get(path)).toBe(hash)
    // The audit log came back with them: every push acknowledged before the backup has its entry.
    expect(acknowledgedFiles.filter((f) => f.at <= began && !pushed.has(f.path))).toEqual([])

    // The restored directory serves: a client of it finds the same memory.
    const copy = await startServerProcess(restored)
    servers.push(copy)
    const status = (await (await fetch(`${copy.url}/api/memory/status`, {headers: {authorization: `Bearer ${TOKENS.claude}`}})).json()) as {files: Record<string, unknown>}
    expect(Object.keys(status.files).length).toBe(files.size)
  })

  it('--keep keeps the newest; restore refuses a database that is there without --force, and never deletes it', async () => {
    const work = await tempDir('jarvis-backup-keep-')
    cleanup.push(work)
    const data = join(work, 'server')
    const server = await startServerProcess(data)
    servers.push(server)
    const made: string[] = []
    for (let i = 0; i < 3; i++) {
      const run = await runJarvis(['serve', 'backup', '--data', data, '--to', join(work, 'backups'), '--keep', '2', '--json'])
      expect(run.code, run.stderr).toBe(0)
      made.push((JSON.parse(run.stdout) as {result: {file: string}}).result.file)
    }
    expect((await readdir(join(work, 'backups'))).sort()).toEqual(made.slice(1).map((file) => file.split('/').pop()).sort())

    // Under a running server even --force is refused: the server would go on writing to the file moved aside.
    const underServer = await runJarvis(['serve', 'restore', made[2], '--data', data, '--force'])
    expect(underServer.code).toBe(6)
    expect(underServer.stderr).toContain('jarvis serve')
    expect(underServer.stderr).not.toMatch(/^\s+at /m)
    expect((await readdir(data)).some((name) => name.includes('replaced'))).toBe(false)
    const stillServing = await fetch(`${server.url}/api/memory/status`, {headers: {authorization: `Bearer ${TOKENS.claude}`}})
    expect(stillServing.status).toBe(200)
    await server.stop()

    const refused = await runJarvis(['serve', 'restore', made[2], '--data', data])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('--force')
    const forced = await runJarvis(['serve', 'restore', made[2], '--data', data, '--force'])
    expect(forced.code, forced.stderr).toBe(0)
    expect((await readdir(data)).some((name) => name.startsWith('jarvis.sqlite.replaced-'))).toBe(true)

    const damaged = join(work, 'damaged.sqlite')
    await writeFile(damaged, 'SQLite format 3\0 but not really')
    const bad = await runJarvis(['serve', 'restore', damaged, '--data', join(work, 'other')])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('damaged.sqlite')
  })
})
