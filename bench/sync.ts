/**
 * `jarvis sync` against git on the same tree: initial sync, no-op sync, 10 changed files, at 1,000 and 10,000
 * small JSON/Markdown files, and a 96 MiB tree of 300 large files; bytes on the wire for a no-op; the client's
 * peak memory. Both measured as whole processes, as a user or a hook runs them: jarvis against a real
 * `jarvis serve` on 127.0.0.1, git against `git daemon` on 127.0.0.1 (a server process each).
 */
import {execFile, spawn, type ChildProcess} from 'node:child_process'
import {createHash, randomBytes} from 'node:crypto'
import {mkdir, readdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'

import {MemoryClient} from '../src/protocol/client.js'
import {startServer} from '../src/server/start.js'
import {initTree, readConfig, withTreeLock} from '../src/store/index.js'
import {runSync} from '../src/sync/run.js'
import {closedPort} from '../test/cli/memory-helpers.js'
import {runJarvis} from './process.js'
import {median, ms, ratio, table, timeRuns, type BenchSection} from './stats.js'

const exec = promisify(execFile)
export const TOKEN = `bench-${process.pid}-${Date.now()}`
export const LARGE_FILES = 300
export const LARGE_FILE_BYTES = 320 * 1024

/** The highest peak memory of any jarvis process of this section, in MiB, per tree. */
const peaks = new Map<string, number>()

async function jarvis(cwd: string, ...args: string[]): Promise<void> {
  const run = await runJarvis(args, {cwd, env: {...process.env, JARVIS_TOKEN: TOKEN}})
  // Per tree size, over every run: `<work>/<size>-<run>/jarvis-a`.
  const tree = relative(join(cwd, '..', '..'), join(cwd, '..')).replace(/-\d+$/, '')
  peaks.set(tree, Math.max(peaks.get(tree) ?? 0, run.peakMiB ?? 0))
}

export async function git(cwd: string, ...args: string[]): Promise<void> {
  await exec('git', args, {cwd, maxBuffer: 64 * 1024 * 1024})
}

/** Small files in 50 folders: half worker-memory-like JSON, half Markdown notes. */
export async function writeTree(dir: string, count: number, edit = 0): Promise<void> {
  for (let i = 0; i < count; i++) {
    const folder = join(dir, `area-${i % 50}`)
    if (i < 50) await mkdir(folder, {recursive: true})
    const text =
      i % 2 === 0
        ? `${JSON.stringify({id: i, status: 'active', owner: `agent-${i % 4}`, tags: ['memory', `t${i % 7}`], note: `item ${i} rev ${edit}`}, null, 2)}\n`
        : `# Note ${i}\n\n- decided: keep item ${i}\n- revision ${edit}\n\nSome words about note ${i} so the file is a realistic few hundred bytes long.\n`
    await writeFile(join(folder, i % 2 === 0 ? `item-${i}.json` : `note-${i}.md`), text)
  }
}

export async function editTen(dir: string, count: number, round: number): Promise<void> {
  for (let k = 0; k < 10; k++) {
    const i = (k * Math.floor(count / 10) + round) | 1
    await writeFile(join(dir, `area-${i % 50}`, `note-${i}.md`), `# Note ${i}\n\n- edited in round ${round}\n`)
  }
}

/** 300 files of 320 KiB (96 MiB) of text that neither side can compress much. */
async function writeLargeTree(dir: string): Promise<void> {
  for (let i = 0; i < LARGE_FILES; i++) {
    const folder = join(dir, `large-${i % 10}`)
    await mkdir(folder, {recursive: true})
    await writeFile(join(folder, `dump-${i}.md`), `# Dump ${i}\n\n${randomBytes((LARGE_FILE_BYTES * 3) / 4).toString('base64')}\n`.slice(0, LARGE_FILE_BYTES))
  }
}

/** sha256 of every file under `dir`, by relative path: two trees are byte-identical when these are equal. */
export async function treeDigest(dir: string): Promise<string> {
  const hash = createHash('sha256')
  const entries = (await readdir(dir, {recursive: true, withFileTypes: true})).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name)).sort()
  for (const file of entries) hash.update(`${relative(dir, file)}\0`).update(await readFile(file))
  return hash.digest('hex')
}


/** `git daemon` on 127.0.0.1 serving (and accepting pushes to) every repository under `base`. */
export async function startGitDaemon(base: string): Promise<{url: string; child: ChildProcess}> {
  const port = await closedPort()
  const child = spawn('git', ['daemon', '--reuseaddr', '--export-all', '--enable=receive-pack', '--listen=127.0.0.1', `--port=${port}`, `--base-path=${base}`, base], {stdio: ['ignore', 'ignore', 'pipe']})
  // Ready when it answers: ls-remote on a repository that is not there yet fails until the daemon listens.
  await mkdir(join(base, 'probe.git'), {recursive: true})
  await git(join(base, 'probe.git'), 'init', '-q', '--bare')
  for (let attempt = 0; ; attempt++) {
    try {
      await exec('git', ['ls-remote', `git://127.0.0.1:${port}/probe.git`])
      break
    } catch (error) {
      if (attempt > 100) throw error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  return {url: `git://127.0.0.1:${port}`, child}
}

/** Initial syncs per tree (each from nothing, on a new server and a new bare repository), alternated with git's. */
const INITIAL_RUNS = 3

/** Both measurements of one step, alternated run by run so that a busy moment of the machine falls on both. */
export async function alternated(times: number, ours: () => Promise<void>, theirs: () => Promise<void>, warmup = 0): Promise<[number, number]> {
  const [a, b]: number[][] = [[], []]
  for (let i = 0; i < warmup + times; i++) {
    const [x] = await timeRuns(1, ours)
    const [y] = await timeRuns(1, theirs)
    if (i < warmup) continue
    a.push(x)
    b.push(y)
  }
  return [median(a), median(b)]
}

export interface Pair {
  ja: string
  jb: string
  ga: string
  gb: string
  server: {url: string; close(): Promise<void>}
}

/** A new server, two new jarvis trees and two clones of a new bare repository; A's side of each holds the tree. */
export async function newPair(work: string, daemonUrl: string, size: number | 'large', run: number | string): Promise<Pair> {
  const base = join(work, `${size}-${run}`)
  const server = await startServer({host: '127.0.0.1', port: 0, dataDir: join(base, 'server'), tokens: {[TOKEN]: 'claude'}, logLevel: 'silent'})
  const [ja, jb, ga, gb, bare] = ['jarvis-a', 'jarvis-b', 'git-a', 'git-b', 'bare.git'].map((n) => join(base, n))
  const remote = `${daemonUrl}/${size}-${run}/bare.git`
  for (const dir of [ja, jb]) {
    await mkdir(dir, {recursive: true})
    await initTree(dir, {server: server.url, agent: 'claude'})
  }
  await mkdir(bare, {recursive: true})
  await git(bare, 'init', '-q', '--bare', '-b', 'main')
  await git(base, 'clone', '-q', remote, ga)
  await git(base, 'clone', '-q', remote, gb)
  for (const repo of [ga, gb]) {
    await git(repo, 'config', 'user.email', 'bench@localhost')
    await git(repo, 'config', 'user.name', 'bench')
    await git(repo, 'checkout', '-q', '-b', 'main')
  }
  const write = size === 'large' ? writeLargeTree : (dir: string) => writeTree(dir, size)
  await write(join(ja, '.memory'))
  await write(ga)
  return {ja, jb, ga, gb, server}
}

export async function benchSync(sizes: Array<number | 'large'> = [1000, 10_000, 'large']): Promise<BenchSection> {
  const work = join(process.env.TMPDIR ?? '/tmp', `jarvis-bench-sync-${process.pid}`)
  await rm(work, {recursive: true, force: true})
  await mkdir(work, {recursive: true})
  const rows: string[][] = []
  const wire: string[][] = []
  const memory: string[][] = []
  const servers: Array<{close(): Promise<void>}> = []
  const daemon = await startGitDaemon(work)
  try {
    for (const size of sizes) {
      const label = size === 'large' ? `${LARGE_FILES} files of ${LARGE_FILE_BYTES / 1024} KiB (${(LARGE_FILES * LARGE_FILE_BYTES) / 2 ** 20} MiB)` : `${size} files`
      // Each initial sync from nothing, as git's is to an empty repository: a new server, trees and repository per run.
      const initial: number[][] = [[], []]
      let pair: Pair | undefined
      for (let run = 0; run < INITIAL_RUNS; run++) {
        pair = await newPair(work, daemon.url, size, run)
        servers.push(pair.server)
        const {ja, jb, ga, gb} = pair
        const [jarvisRun] = await timeRuns(1, async () => {
          await jarvis(ja, 'sync', '--quiet')
          await jarvis(jb, 'sync', '--quiet')
        })
        const [gitRun] = await timeRuns(1, async () => {
          await git(ga, 'add', '-A')
          await git(ga, 'commit', '-q', '-m', 'initial')
          await git(ga, 'push', '-q', 'origin', 'main')
          await git(gb, 'pull', '-q', 'origin', 'main')
        })
        initial[0].push(jarvisRun)
        initial[1].push(gitRun)
        const identical = (await treeDigest(join(ja, '.memory'))) === (await treeDigest(join(jb, '.memory')))
        if (!identical) throw new Error(`${label}: B's tree differs from A's after the initial sync`)
        if (run < INITIAL_RUNS - 1) {
          // Only the last run's trees are kept for the steps below.
          await pair.server.close()
          servers.splice(servers.indexOf(pair.server), 1)
          await rm(join(ja, '..'), {recursive: true, force: true})
        }
      }
      const [jarvisInitial, gitInitial] = initial.map(median)
      rows.push([label, `initial sync (A pushes, B pulls; median of ${INITIAL_RUNS})`, ms(jarvisInitial), ms(gitInitial), ratio(jarvisInitial, gitInitial)])
      if (size === 'large') {
        memory.push([label, `${peaks.get(String(size))?.toFixed(0)} MiB`, 'byte-identical on B'])
        continue
      }
      const {ja, jb, ga, gb, server} = pair!

      const [jarvisNoop, gitNoop] = await alternated(
        7,
        () => jarvis(ja, 'sync', '--quiet'),
        async () => {
          await git(ga, 'pull', '-q', 'origin', 'main')
          await git(ga, 'push', '-q', 'origin', 'main')
        },
        1,
      )
      rows.push([label, 'no-op sync (`jarvis sync` vs `git pull && git push`)', ms(jarvisNoop), ms(gitNoop), ratio(jarvisNoop, gitNoop)])

      let jarvisRound = 0
      let gitRound = 0
      const [jarvisTen, gitTen] = await alternated(
        5,
        async () => {
          await editTen(join(ja, '.memory'), size, ++jarvisRound)
          await jarvis(ja, 'sync', '--quiet')
          await jarvis(jb, 'sync', '--quiet')
        },
        async () => {
          await editTen(ga, size, ++gitRound)
          await git(ga, 'add', '-A')
          await git(ga, 'commit', '-q', '-m', `round ${gitRound}`)
          await git(ga, 'push', '-q', 'origin', 'main')
          await git(gb, 'pull', '-q', 'origin', 'main')
        },
      )
      rows.push([label, '10 files changed (A pushes, B pulls)', ms(jarvisTen), ms(gitTen), ratio(jarvisTen, gitTen)])

      // The engine alone, without process start-up, and what a no-op costs on the wire.
      let sent = 0
      let received = 0
      const client = new MemoryClient({server: server.url, token: TOKEN, onBytes: (s, r) => ((sent += s), (received += r))})
      const settings = (await readConfig(ja)).sync
      const inProcess = median(await timeRuns(7, () => withTreeLock(ja, {timeoutMs: 5000}, () => runSync({root: ja, client, settings}))))
      sent = 0
      received = 0
      await withTreeLock(ja, {timeoutMs: 5000}, () => runSync({root: ja, client, settings}))
      await client.close()
      rows.push([label, 'no-op sync, in-process (no Node start-up)', ms(inProcess), '', ''])
      wire.push([label, String(sent), String(received), String(sent + received)])
      memory.push([label, `${peaks.get(String(size))?.toFixed(0)} MiB`, 'byte-identical on B'])
    }
  } finally {
    daemon.child.kill()
    for (const server of servers) await server.close()
    await rm(work, {recursive: true, force: true})
  }
  const markdown = [
    'Both tools run as whole processes, as a shell or a git hook runs them, alternated run by run; every figure is a median. `jarvis` talks to a real `jarvis serve` on 127.0.0.1; git to `git daemon` on 127.0.0.1.',
    '',
    table(['tree', 'operation', 'jarvis', 'git', 'jarvis vs git'], rows),
    '',
    'Bytes on the wire for one no-op `jarvis sync` (request line and bodies, without HTTP headers). It asks `GET /api/memory/status?since=<seq>`, so it does not grow with the number of files:',
    '',
    table(['tree', 'sent', 'received', 'total bytes'], wire),
    '',
    "The client's peak memory: the highest resident memory of any `jarvis sync` process of that tree (A and B, every operation above):",
    '',
    table(['tree', 'jarvis peak memory', 'after the initial sync'], memory),
  ].join('\n')
  return {title: 'Sync: jarvis against git', markdown}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const sizes = process.argv.slice(2).map((arg) => (arg === 'large' ? ('large' as const) : Number(arg))).filter(Boolean)
  process.stdout.write(`${(await benchSync(sizes.length ? sizes : undefined)).markdown}\n`)
}
