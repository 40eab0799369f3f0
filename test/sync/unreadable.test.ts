/**
 * Files and folders of `.memory/` the user running jarvis may not read (CONTRACT §4/§6): set aside and named with
 * what to do, never deleted on the server or elsewhere, the rest synced; `jarvis status` works and lists them.
 * Permissions bind every user but root: run as root, the commands run as `nobody` (65534) on a tree given to it.
 */
import {spawn} from 'node:child_process'
import {appendFile, chmod, lchown, readdir, readFile, utimes} from 'node:fs/promises'
import {join} from 'node:path'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import type {StatusResult} from '../../src/status/ops.js'
import {envelope, jarvisBin, runJarvis} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, TOKENS, type TestClient, type TestServer, until} from '../helpers/world.js'
import {cleanEnv} from '../cli/memory-helpers.js'
import {treeOf} from './trees.js'

const asRoot = process.getuid?.() === 0
const NOBODY = 65534

let server: TestServer
const cleanup: string[] = []
/** Made unreadable by a test: readable again before the temp dirs go (a user but root could not remove them). */
const locked: string[] = []
/** Processes a test started, stopped by handle. */
const stops: Array<() => Promise<void>> = []

beforeEach(async () => {
  server = await startTestServer()
  cleanup.push(server.dataDir)
})

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop()
  for (const path of locked.splice(0)) await chmod(path, 0o755).catch(() => {})
  await server.close()
  await removeAll(cleanup.splice(0))
})

/** Gives `path` and everything under it to the user the commands run as (when the test runs as root). */
async function giveAway(path: string): Promise<void> {
  if (!asRoot) return
  await lchown(path, NOBODY, NOBODY)
  for (const entry of await readdir(path, {withFileTypes: true})) {
    const full = join(path, entry.name)
    if (entry.isDirectory()) await giveAway(full)
    else await lchown(full, NOBODY, NOBODY)
  }
}

/** `jarvis <args> --json` in `c`'s tree, as the user the tree is given to. */
function jarvisIn(c: TestClient, args: string[]) {
  const env = cleanEnv(c.root, {JARVIS_TOKEN: TOKENS[c.agent], HOME: c.root})
  return runJarvis([...args, '--json'], {cwd: c.root, env, ...(asRoot ? {uid: NOBODY, gid: NOBODY} : {})})
}

interface SyncReport {
  pushed: string[]
  pulled: string[]
  deleted: string[]
}

/** A line `sync --watch --json` prints per sync: a failed one's report is in its error's data. */
interface WatchLine {
  status: number
  result?: SyncReport
  error?: {message: string; data?: {result?: SyncReport}}
}

describe('a memory file or folder this user may not read', () => {
  it('is named and left as it is, never deleted elsewhere, while the rest syncs; status lists it; readable again, it syncs', async () => {
    const a = await makeClient(server.url, 'claude')
    const b = await makeClient(server.url, 'gemini')
    cleanup.push(a.root, b.root)
    await a.write('r.md', 'one\n')
    await a.write('s.md', 'two\n')
    await a.write('sec/in.md', 'in\n')
    await giveAway(a.root)
    const first = await jarvisIn(a, ['sync'])
    expect(first.code, first.stderr).toBe(0)
    await b.sync()
    // Meanwhile on the other machine: the unreadable file and the folder's files change, the folder gets a new one.
    await b.write('s.md', 'two, from b\n')
    await b.write('sec/in.md', 'in, from b\n')
    await b.write('sec/new.md', 'new, from b\n')
    await b.sync()

    locked.push(join(a.memory, 's.md'), join(a.memory, 'sec'))
    await chmod(join(a.memory, 's.md'), 0o000)
    await chmod(join(a.memory, 'sec'), 0o000)
    await appendFile(join(a.memory, 'r.md'), 'more\n')
    const sync = await jarvisIn(a, ['sync'])
    expect(sync.code, sync.stderr).toBe(2)
    const failed = envelope(sync).error!
    expect(failed.message).toContain('.memory/s.md: this user may not read it (permission denied): it is not synced, nor deleted anywhere, until it can be; give it back read access (chmod u+r)')
    expect(failed.message).toContain('.memory/sec: a folder this user may not read (permission denied)')
    const report = failed.data!.result as SyncReport
    expect(report.pushed).toEqual(['r.md'])
    expect([...report.pulled, ...report.deleted]).toEqual([])
    expect(await readFile(join(a.memory, 's.md'), 'utf8').catch(() => 'unreadable by this test too')).toBe(asRoot ? 'two\n' : 'unreadable by this test too')

    // Nothing was deleted on the server: the other machine keeps every file, and gets the rest.
    await b.sync()
    expect(await treeOf(b)).toEqual({'r.md': 'one\nmore\n', 's.md': 'two, from b\n', 'sec/in.md': 'in, from b\n', 'sec/new.md': 'new, from b\n'})

    const status = await jarvisIn(a, ['status', '--offline'])
    expect(status.code, status.stderr).toBe(0)
    const listed = envelope<StatusResult>(status).result!
    expect(listed.unreadable).toEqual([
      {path: 's.md', folder: false},
      {path: 'sec', folder: true},
    ])
    expect(listed.changes).toEqual({added: [], modified: [], deleted: []})

    // Readable again: the other machine's changes arrive, nothing of this one's was lost.
    await chmod(join(a.memory, 's.md'), 0o644)
    await chmod(join(a.memory, 'sec'), 0o755)
    const fixed = await jarvisIn(a, ['sync'])
    expect(fixed.code, fixed.stderr).toBe(0)
    expect((envelope<SyncReport>(fixed).result!.pulled).sort()).toEqual(['s.md', 'sec/in.md', 'sec/new.md'])
    expect(await treeOf(a)).toEqual(await treeOf(b))
  })

  it('that the server did not change is not deleted anywhere, even by the sync after it is readable again', async () => {
    const a = await makeClient(server.url, 'claude')
    const b = await makeClient(server.url, 'gemini')
    cleanup.push(a.root, b.root)
    await a.write('kept.md', 'kept\n')
    await a.write('other.md', 'other\n')
    // A folder and files an hour old: the stat cache stands for them, so the next scan lists nothing again.
    const hourAgo = new Date(Date.now() - 3_600_000)
    for (const path of ['kept.md', 'other.md', '']) await utimes(join(a.memory, path), hourAgo, hourAgo)
    await giveAway(a.root)
    expect((await jarvisIn(a, ['sync'])).code).toBe(0)

    // Touched (so the scan reads it again) and made unreadable; its folder did not change.
    locked.push(join(a.memory, 'kept.md'))
    await utimes(join(a.memory, 'kept.md'), new Date(hourAgo.getTime() + 1000), new Date(hourAgo.getTime() + 1000))
    await chmod(join(a.memory, 'kept.md'), 0o000)
    const sync = await jarvisIn(a, ['sync'])
    expect(sync.code, sync.stderr).toBe(2)
    expect(envelope(sync).error!.message).toContain('.memory/kept.md: this user may not read it')

    await chmod(join(a.memory, 'kept.md'), 0o644)
    const fixed = await jarvisIn(a, ['sync'])
    expect(fixed.code, fixed.stderr).toBe(0)
    expect(envelope<SyncReport>(fixed).result!.pushed).toEqual([])
    await b.sync()
    expect(await treeOf(b)).toEqual({'kept.md': 'kept\n', 'other.md': 'other\n'})
  })

  // Only root can leave a file in a tree that another user cannot read.
  it.skipIf(!asRoot)('a file of .nexus/ another user left (a jarvis run as root): the sync says so and what to do, not a bare EACCES', async () => {
    const a = await makeClient(server.url, 'claude')
    cleanup.push(a.root)
    await a.write('one.md', 'one\n')
    await a.sync()
    // The tree given to the user, but for the files in .nexus/ that root's sync wrote.
    await a.write('two.md', 'two\n')
    await giveAway(a.memory)
    for (const path of [a.root, join(a.root, '.nexus'), join(a.root, '.nexus', 'config.json')]) await lchown(path, NOBODY, NOBODY)
    const sync = await jarvisIn(a, ['sync'])
    expect(sync.code, sync.stderr).toBe(1)
    expect(envelope(sync).error!.message).toMatch(/^\.nexus\/[\w.-]+: this user may not read or write it \(permission denied\): another user ran jarvis in this tree; run jarvis as the user who owns the tree, or give \.nexus\/ to this one \(chown -R\)$/)
  })

  it('in a watched tree (sync --watch): named at each sync, never deleted, while the syncs the watch starts go on', async () => {
    const a = await makeClient(server.url, 'claude')
    const b = await makeClient(server.url, 'gemini')
    cleanup.push(a.root, b.root)
    await a.write('x.md', 'x\n')
    await a.write('y.md', 'y\n')
    const hourAgo = new Date(Date.now() - 3_600_000)
    for (const path of ['x.md', 'y.md', '']) await utimes(join(a.memory, path), hourAgo, hourAgo)
    await giveAway(a.root)
    expect((await jarvisIn(a, ['sync'])).code).toBe(0)
    await b.sync()

    const env = cleanEnv(a.root, {JARVIS_TOKEN: TOKENS.claude, HOME: a.root})
    const child = spawn(process.execPath, [jarvisBin, 'sync', '--watch', '--json'], {cwd: a.root, env: {...process.env, NO_COLOR: '1', ...env}, stdio: ['ignore', 'pipe', 'pipe'], ...(asRoot ? {uid: NOBODY, gid: NOBODY} : {})})
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    stops.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT')
      await exited
    })
    const lines = () => stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as WatchLine)
    await until('the watch’s first sync', () => (lines().length > 0 ? true : undefined))

    // Touched and made unreadable: the watch reports it, its sync names it.
    locked.push(join(a.memory, 'x.md'))
    await utimes(join(a.memory, 'x.md'), new Date(hourAgo.getTime() + 1000), new Date(hourAgo.getTime() + 1000))
    await chmod(join(a.memory, 'x.md'), 0o000)
    await until('a sync naming x.md', () => (lines().some((line) => line.error?.message.includes('.memory/x.md: this user may not read it')) ? true : undefined))
    // The next syncs the watch starts (an edit elsewhere) look at every file: x.md is named again, never deleted.
    await appendFile(join(a.memory, 'y.md'), 'more\n')
    const reportOf = (line: WatchLine) => line.result ?? line.error?.data?.result
    const pushedY = await until('the push of y.md', () => lines().find((line) => reportOf(line)?.pushed.includes('y.md')))
    expect(pushedY.error?.message).toContain('.memory/x.md: this user may not read it')
    expect(lines().flatMap((line) => reportOf(line)?.deleted ?? [])).toEqual([])
    await stops.pop()!()
    await b.sync()
    expect(await treeOf(b)).toEqual({'x.md': 'x\n', 'y.md': 'y\nmore\n'})
  })
})
