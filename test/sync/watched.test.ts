/**
 * A sync in a watched tree (src/warm/changes.ts): it asks the tree's watch which files changed since the clock its stat
 * cache keeps, and looks at those only. What a user would notice: every edit, new file, deletion and backup is still
 * seen, with the watch or without; an edit made while the sync runs is pushed by the next one; a watch killed with
 * SIGKILL, or started again, is never taken at its word for a clock it did not give (the sync after it looks at every
 * file); and a no-op sync with the watch running looks at no memory file at all (strace). The watch is the one a
 * sync starts on demand in a large tree (src/warm/demand.ts), or one of this process in the in-process cases.
 */
import {spawn} from 'node:child_process'
import {existsSync, linkSync, readFileSync, renameSync, writeFileSync} from 'node:fs'
import {readFile, rm, stat, utimes} from 'node:fs/promises'
import {join} from 'node:path'

import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {MemoryClient} from '../../src/protocol/client.js'
import {resetSearchCache} from '../../src/search/index.js'
import {readConfig, readScanHead, readScanHints, statCachePath, type TreeWatch, WATCH_FULL_SCAN_MS, withTreeLock, writeConfig} from '../../src/store/index.js'
import {runSync, type SyncResult} from '../../src/sync/run.js'
import {askWarm} from '../../src/warm/client.js'
import {type FreshTree, watchTreeFresh} from '../../src/warm/tree-watch.js'
import {cleanEnv} from '../cli/memory-helpers.js'
import {assertBuilt, runJarvisBuilt, runJs} from '../hook/helpers.js'
import {makeClient, removeAll, startTestServer, type TestClient, type TestServer, TOKENS, until} from '../helpers/world.js'

let server: TestServer
const dirs: string[] = []
const watches: FreshTree[] = []

beforeAll(async () => {
  server = await startTestServer()
})

afterEach(async () => {
  for (const watch of watches.splice(0)) await watch.close()
  resetSearchCache()
})

afterAll(async () => {
  await server.close()
  await removeAll(dirs)
})

async function client(agent = 'claude'): Promise<TestClient> {
  const made = await makeClient(server.url, agent)
  dirs.push(made.root)
  return made
}

/** A sync of `root` in this process that asks `watch` (TestClient.sync asks none). */
async function syncWatched(root: string, watch: TreeWatch): Promise<SyncResult> {
  const config = await readConfig(root)
  const memoryClient = new MemoryClient({server: server.url, token: TOKENS.claude})
  try {
    return await withTreeLock(root, {timeoutMs: 10_000}, () => runSync({root, client: memoryClient, settings: {...config.sync, retryDelay: 10}, watch}))
  } finally {
    await memoryClient.close()
  }
}

/** This process's own watch of the tree. */
function watchTree(root: string): FreshTree {
  const tree = watchTreeFresh(root)
  watches.push(tree)
  return tree
}

/** `tree` as a sync asks it; `after` runs once each answer is given. */
function askedAs(tree: FreshTree, after?: () => void): TreeWatch {
  return {
    async changes(clock) {
      const answer = await tree.changes(clock)
      after?.()
      return answer
    },
  }
}

describe('a sync that asks the tree’s watch', () => {
  it('sees every edit, new file, deletion and backup, as a sync that looks at every file does', async () => {
    const a = await client()
    const b = await client('gemini')
    for (let i = 0; i < 20; i++) await a.write(`notes/n${i}.md`, `# Note ${i}\n`)
    const watch = askedAs(watchTree(a.root))
    expect((await syncWatched(a.root, watch)).pushed).toHaveLength(20)
    // The first answer is `all` (no clock yet): the stat cache now keeps the watch's clock.
    expect((await readScanHints(a.root)).watch?.clock).toMatch(/^[0-9a-f]{12}:\d+$/)
    await b.sync()

    // Edited in place, same size, its mtime put back: only the watch can tell (a stat cannot).
    const path = join(a.memory, 'notes', 'n3.md')
    const before = await stat(path)
    writeFileSync(path, '# Note X\n')
    await utimes(path, before.atime, before.mtime)
    await a.write('notes/new.md', '# New\n')
    await a.remove('notes/n5.md')
    const round = await syncWatched(a.root, watch)
    expect(round.pushed).toEqual(['notes/n3.md', 'notes/new.md'])
    expect(round.deleted).toEqual(['notes/n5.md'])
    await b.sync()
    expect(await b.read('notes/n3.md')).toBe('# Note X\n')
    expect(await b.read('notes/n5.md')).toBeNull()

    // A conflict's backup, made by the sync, is reported at every sync until it is settled, then no more.
    await a.write('notes/n7.md', '# Note 7, by A\n')
    await b.write('notes/n7.md', '# Note 7, by B\n')
    await b.sync()
    const conflicted = await syncWatched(a.root, watch)
    expect(conflicted.backups.map((backup) => backup.backup)).toEqual(['notes/n7.local.bak'])
    expect((await syncWatched(a.root, watch)).waiting).toEqual(['notes/n7.local.bak'])
    await rm(join(a.memory, 'notes', 'n7.local.bak'))
    expect((await syncWatched(a.root, watch)).waiting).toEqual([])
  })

  it('an edit made after the watch answered, while the sync runs, is pushed by the next sync', async () => {
    const a = await client()
    for (let i = 0; i < 5; i++) await a.write(`n${i}.md`, `# Note ${i}\n`)
    const tree = watchTree(a.root)
    await syncWatched(a.root, askedAs(tree))
    await syncWatched(a.root, askedAs(tree))
    // A new file after each answer: the last one comes after the answer the scan went by, which does not name it.
    const written: string[] = []
    const racing = askedAs(tree, () => {
      const name = `extra${written.length}.md`
      writeFileSync(join(a.memory, name), `# Written during the sync, ${written.length}\n`)
      written.push(name)
    })
    await a.write('n1.md', '# Note 1, edited\n')
    const first = await syncWatched(a.root, racing)
    expect(first.pushed).toContain('n1.md')
    expect(first.pushed).not.toContain(written.at(-1))
    const second = await syncWatched(a.root, askedAs(tree))
    expect([...first.pushed, ...second.pushed].sort()).toEqual(['n1.md', ...written].sort())
  })

  it('a stat cache an older jarvis rewrote (no clock, the head left as it was) is looked at in full, never by the head', async () => {
    const a = await client()
    for (let i = 0; i < 5; i++) await a.write(`n${i}.md`, `# Note ${i}\n`)
    const tree = watchTree(a.root)
    await syncWatched(a.root, askedAs(tree))
    await syncWatched(a.root, askedAs(tree))
    expect((await readScanHead(a.root))?.watch).toBeDefined()
    // An older jarvis writes its cache as it always did (a new file renamed in place), without a clock or a head.
    const {watch: _clock, ...older} = JSON.parse(readFileSync(statCachePath(a.root), 'utf8')) as Record<string, unknown>
    writeFileSync(`${statCachePath(a.root)}.older`, JSON.stringify(older))
    renameSync(`${statCachePath(a.root)}.older`, statCachePath(a.root))
    expect(await readScanHead(a.root)).toBeUndefined()
    expect((await readScanHints(a.root)).watch).toBeUndefined()
    // The cache keeps no clock: the watch answers `all`, every file is looked at, and a new clock (and head) is kept.
    await a.write('n4.md', '# Note 4, edited\n')
    expect((await syncWatched(a.root, askedAs(tree))).pushed).toEqual(['n4.md'])
    expect((await readScanHead(a.root))?.watch?.clock).toBe((await readScanHints(a.root)).watch?.clock)
  })

  it('an edit no watch sees (through a hard link elsewhere) waits at most until every file is looked at again', async () => {
    const a = await client()
    for (let i = 0; i < 5; i++) await a.write(`n${i}.md`, `# Note ${i}\n`)
    const tree = watchTree(a.root)
    await syncWatched(a.root, askedAs(tree))
    expect((await syncWatched(a.root, askedAs(tree))).pushed).toEqual([])
    // inotify reports a change to the folder it was made through: this one is made through another.
    const elsewhere = join(a.root, 'elsewhere.md')
    linkSync(join(a.memory, 'n2.md'), elsewhere)
    writeFileSync(elsewhere, '# Note 2, edited through a hard link\n')
    expect((await syncWatched(a.root, askedAs(tree))).pushed).toEqual([])
    // The last full look made longer ago than a watch's word stands for: every file is looked at, the edit pushed.
    const cache = JSON.parse(readFileSync(statCachePath(a.root), 'utf8')) as {watch: {fullAt: number}}
    cache.watch.fullAt -= WATCH_FULL_SCAN_MS
    writeFileSync(statCachePath(a.root), JSON.stringify(cache))
    expect((await syncWatched(a.root, askedAs(tree))).pushed).toEqual(['n2.md'])
    expect((await readScanHints(a.root)).watch?.fullAt).toBeGreaterThan(cache.watch.fullAt)
  })
})

describe.runIf(process.platform === 'linux')('the watch a sync starts on demand (the built jarvis)', () => {
  beforeAll(() => assertBuilt())

  /** Every watch a test started, stopped by its process id when the test ends, and waited for. */
  const started = new Set<number>()
  const trees: string[] = []
  afterEach(async () => {
    // The last watch of each tree too: one that left when idle may have been followed by another.
    for (const root of trees.splice(0)) {
      const pid = lastWatch(root)
      if (pid !== undefined) started.add(pid)
    }
    for (const pid of started) {
      try {
        process.kill(pid, 'SIGTERM')
      } catch {
        // gone already
      }
    }
    for (const pid of started) await until(`the watch ${pid} to stop`, () => (alive(pid) ? undefined : true))
    started.clear()
  })

  /** Alive and not a zombie (a watch killed here is reaped by no one: its parent, the sync, is gone). */
  const alive = (pid: number) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
    } catch {
      return false
    }
  }

  /** The last watch started in the tree at `root`, as `.nexus/watcher.json` names it. */
  function lastWatch(root: string): number | undefined {
    try {
      return (JSON.parse(readFileSync(join(root, '.nexus', 'watcher.json'), 'utf8')) as {pid: number}).pid
    } catch {
      return undefined
    }
  }

  /** The watch named in `.nexus/watcher.json` once it runs (and is not `not`), noted for the test's end. */
  async function watchPid(root: string, not?: number): Promise<number> {
    return until('a watch to start', () => {
      const pid = lastWatch(root)
      if (pid === undefined || pid === not) return undefined
      started.add(pid)
      return alive(pid) ? pid : undefined
    })
  }

  let made = 0
  async function watchedTree(extra: Record<string, string> = {}) {
    const a = await client()
    trees.push(a.root)
    // Each tree its own folder: they share the server.
    const top = `t${++made}`
    for (let i = 0; i < 30; i++) await a.write(`${top}/area-${i % 3}/n${i}.md`, `# Note ${i}\n`)
    // The watch on demand, from 10 files (the run keeps it off elsewhere: test/global-setup.ts).
    const env = cleanEnv(a.root, {JARVIS_TOKEN: TOKENS.claude, NO_COLOR: '1', JARVIS_WATCHER: '', JARVIS_WATCHER_MIN_FILES: '10', ...extra})
    const sync = async () => {
      const run = await runJarvisBuilt(['sync', '--json'], {cwd: a.root, env})
      expect(run.code, run.stderr).toBe(0)
      return (JSON.parse(run.stdout) as {result: SyncResult}).result
    }
    // The first sync looks at every file and starts the watch; one after it gets the watch's clock.
    expect((await sync()).pushed).toHaveLength(30)
    const pid = await watchPid(a.root)
    await until('the watch to answer', async () => ((await sync()) && (await readScanHints(a.root)).watch) || undefined)
    return {a, env, sync, pid, top}
  }

  /** The memory files a `jarvis sync` looked at (stat, lstat, open), by strace; `.nexus/` files as `.nexus/<name>`. */
  async function lookedAt(root: string, env: NodeJS.ProcessEnv, calls = 'statx,newfstatat,lstat,stat,open,openat'): Promise<string[]> {
    const trace = join(root, '..', `watched-${process.pid}-${Date.now()}.txt`)
    await new Promise<void>((resolve, reject) => {
      const child = spawn('strace', ['-f', '-qq', '-o', trace, '-e', `trace=${calls}`, process.execPath, runJs, 'sync', '--quiet'], {cwd: root, env, stdio: 'ignore'})
      child.on('error', reject)
      child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`jarvis sync exited ${code}`))))
    })
    const text = await readFile(trace, 'utf8')
    await rm(trace, {force: true})
    // A scan may name the files relative to `.memory/` (it moves there: store/tree.ts insideFolder): every file of
    // these trees is under a `t<n>/` folder.
    return text.split('\n').flatMap((line) => /"(?:[^"]*\/\.memory\/)?(t\d+\/[^"]+)"/.exec(line)?.[1] ?? /"[^"]*\/(\.nexus\/[^"/]+)"/.exec(line)?.[1] ?? [])
  }
  const memoryFiles = (paths: string[]) => paths.filter((path) => !path.startsWith('.nexus/'))

  it('pushes an edit in place, a new file, a removed file and a renamed folder; a no-op sync looks at no memory file', async () => {
    const {a, env, sync, top} = await watchedTree()
    const b = await client('gemini')
    await b.sync()
    // A no-op: no memory file looked at, nor the stat cache (as large as the tree) or the sync state read.
    expect(memoryFiles(await lookedAt(a.root, env))).toEqual([])
    const opened = await lookedAt(a.root, env, 'open,openat')
    expect(opened).toContain('.nexus/stat-cache.head.json')
    expect(opened.filter((path) => path === '.nexus/stat-cache.json' || path === '.nexus/sync-state.json')).toEqual([])

    // Edited in place, same size, its mtime put back: a stat cannot tell, the watch can.
    const edited = join(a.memory, top, 'area-1', 'n4.md')
    const before = await stat(edited)
    writeFileSync(edited, '# Note X\n')
    await utimes(edited, before.atime, before.mtime)
    await a.write(`${top}/area-1/new.md`, '# New\n')
    await a.remove(`${top}/area-2/n5.md`)
    // Looked at: the files the watch named, not the other 28.
    const looked = memoryFiles(await lookedAt(a.root, env))
    expect(looked).toContain(`${top}/area-1/n4.md`)
    expect(looked).not.toContain(`${top}/area-0/n0.md`)
    await b.sync()
    expect(await b.read(`${top}/area-1/n4.md`)).toBe('# Note X\n')
    expect(await b.read(`${top}/area-1/new.md`)).toBe('# New\n')
    expect(await b.read(`${top}/area-2/n5.md`)).toBeNull()

    // A folder renamed: the watch cannot name its files one by one, so the sync looks at every file.
    renameSync(join(a.memory, top, 'area-0'), join(a.memory, top, 'renamed'))
    const renamed = await sync()
    expect(renamed.pushed.sort()).toEqual([0, 3, 6, 9, 12, 15, 18, 21, 24, 27].map((i) => `${top}/renamed/n${i}.md`).sort())
    await b.sync()
    expect(await b.read(`${top}/renamed/n3.md`)).toBe('# Note 3\n')
    expect(await b.read(`${top}/area-0/n3.md`)).toBeNull()
    // Then the watch names paths again: an edit in the renamed folder is pushed.
    await a.write(`${top}/renamed/n3.md`, '# Note 3, in its new folder\n')
    expect((await sync()).pushed).toEqual([`${top}/renamed/n3.md`])
    // Without the warm path, a sync looks at every file, as it always did.
    expect(memoryFiles(await lookedAt(a.root, {...env, JARVIS_WARM: 'off'})).length).toBeGreaterThanOrEqual(30)
  })

  it('a watch killed with SIGKILL: the next sync neither hangs nor misses the edit made meanwhile, and the next watch never answers for the dead one’s clock', async () => {
    const {a, env, sync, pid, top} = await watchedTree()
    const clock = (await readScanHints(a.root)).watch!.clock
    process.kill(pid, 'SIGKILL')
    await until('the watch to die', () => (alive(pid) ? undefined : true))
    await a.write(`${top}/area-2/n2.md`, '# Note 2, edited while no watch ran\n')
    // Its socket is left behind: nobody answers there, the sync looks at every file, and starts another watch.
    expect((await sync()).pushed).toEqual([`${top}/area-2/n2.md`])
    const second = await watchPid(a.root, pid)
    await until('the new watch to answer', () => askWarm(a.root, 'changes', {}, {env}))
    expect((await readScanHints(a.root)).watch?.clock).toBe(clock)
    // Asked with the dead watch's clock, the new one says `all`: the sync looks at every file, and pushes this edit.
    await a.write(`${top}/area-1/n1.md`, '# Note 1, edited under the new watch\n')
    expect((await sync()).pushed).toEqual([`${top}/area-1/n1.md`])
    expect((await readScanHints(a.root)).watch?.clock.split(':')[0]).not.toBe(clock.split(':')[0])
    const b = await client('gemini')
    await b.sync()
    expect(await b.read(`${top}/area-2/n2.md`)).toBe('# Note 2, edited while no watch ran\n')
    expect(await b.read(`${top}/area-1/n1.md`)).toBe('# Note 1, edited under the new watch\n')
    expect(alive(second)).toBe(true)
  })

  it('an edit written while a sync runs is pushed by that sync or the next, never lost', async () => {
    const {a, env, sync, top} = await watchedTree()
    const last = new Map<string, string>()
    for (let round = 0; round < 3; round++) {
      const running = runJarvisBuilt(['sync', '--json'], {cwd: a.root, env})
      let done = false
      void running.then(() => (done = true))
      // Edits in place and (one write in ten) new files, one at a time, as long as the sync runs (at least one).
      for (let i = 0; !done || i === 0; i++) {
        const path = i % 10 === 9 ? `${top}/area-${i % 3}/race-${round}-${i}.md` : `${top}/area-${i % 3}/n${i % 30}.md`
        const text = `# ${path}, round ${round}, write ${i}\n`
        writeFileSync(join(a.memory, path), text)
        last.set(path, text)
        await new Promise((resolve) => setImmediate(resolve))
      }
      const run = await running
      expect(run.code, run.stderr).toBe(0)
    }
    await sync()
    const b = await client('gemini')
    await b.sync()
    for (const [path, text] of last) expect(await b.read(path), path).toBe(text)
  })

  it('leaves by itself after its idle time, and when the tree is removed', async () => {
    const idle = await watchedTree({JARVIS_WATCHER_IDLE_MS: '2000'})
    // The watch that answered last (one that left meanwhile may have been followed by another): no call comes now.
    const last = lastWatch(idle.a.root)!
    await until('the idle watch to leave', () => (alive(last) ? undefined : true))
    const gone = await watchedTree()
    // As a user removes a tree: `rm -rf`, once more if the watch was just writing its search index in it.
    await rm(gone.a.root, {recursive: true, force: true, maxRetries: 5, retryDelay: 100})
    await until('the watch of a removed tree to leave', () => (alive(gone.pid) ? undefined : true))
    // It made nothing of the tree again on its way out.
    expect(existsSync(gone.a.root)).toBe(false)
  })

  it('JARVIS_WATCHER=off, or "watcher": "off" in the tree’s sync settings: no watch is started', async () => {
    const a = await client()
    trees.push(a.root)
    for (let i = 0; i < 20; i++) await a.write(`off/n${i}.md`, `# Note ${i}\n`)
    const env = cleanEnv(a.root, {JARVIS_TOKEN: TOKENS.claude, NO_COLOR: '1', JARVIS_WATCHER_MIN_FILES: '10'})
    const run = async (extra: Record<string, string>) => expect((await runJarvisBuilt(['sync', '--quiet'], {cwd: a.root, env: {...env, ...extra}})).code).toBe(0)
    await run({JARVIS_WATCHER: 'off'})
    const config = await readConfig(a.root)
    await writeConfig(a.root, {...config, sync: {...config.sync, watcher: 'off'}})
    await run({JARVIS_WATCHER: ''})
    expect(existsSync(join(a.root, '.nexus', 'watcher.json'))).toBe(false)
    // And on again: the next sync starts one (stopped when the test ends).
    await writeConfig(a.root, {...config, sync: {...config.sync, watcher: 'on-demand'}})
    await run({JARVIS_WATCHER: ''})
    await watchPid(a.root)
  })
})
