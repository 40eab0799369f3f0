/**
 * `jarvis sync` against git on the same tree (issue 3): initial sync, no-op sync, 10 changed files,
 * at 1,000 and 10,000 small JSON/Markdown files; bytes on the wire for a no-op; both measured as
 * whole processes, as a user or a hook runs them. git uses a bare repository on local disk.
 */
import {execFile} from 'node:child_process'
import {mkdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'

import {MemoryClient} from '../src/protocol/client.js'
import {startServer} from '../src/server/start.js'
import {initTree, readConfig, withTreeLock} from '../src/store/index.js'
import {runSync} from '../src/sync/run.js'
import {median, ms, ratio, table, timeRuns, type BenchSection} from './stats.js'

const exec = promisify(execFile)
const bin = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const TOKEN = `bench-${process.pid}-${Date.now()}`

async function jarvis(cwd: string, ...args: string[]): Promise<void> {
  await exec(process.execPath, [bin, ...args], {cwd, env: {...process.env, JARVIS_TOKEN: TOKEN}, maxBuffer: 64 * 1024 * 1024})
}

async function git(cwd: string, ...args: string[]): Promise<void> {
  await exec('git', args, {cwd, maxBuffer: 64 * 1024 * 1024})
}

/** Small files in 50 folders: half worker-memory-like JSON, half Markdown notes. */
async function writeTree(dir: string, count: number, edit = 0): Promise<void> {
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

async function editTen(dir: string, count: number, round: number): Promise<void> {
  for (let k = 0; k < 10; k++) {
    const i = (k * Math.floor(count / 10) + round) | 1
    await writeFile(join(dir, `area-${i % 50}`, `note-${i}.md`), `# Note ${i}\n\n- edited in round ${round}\n`)
  }
}

export async function benchSync(sizes = [1000, 10_000]): Promise<BenchSection> {
  const work = join(process.env.TMPDIR ?? '/tmp', `jarvis-bench-sync-${process.pid}`)
  await rm(work, {recursive: true, force: true})
  const rows: string[][] = []
  const wire: string[][] = []
  const servers: Array<{close(): Promise<void>}> = []
  try {
    for (const size of sizes) {
      // A server of its own per size: a tree is synced from nothing, as git's is cloned from an empty repository.
      const server = await startServer({host: '127.0.0.1', port: 0, dataDir: join(work, `server-${size}`), tokens: {[TOKEN]: 'claude'}, logLevel: 'silent'})
      servers.push(server)
      const base = join(work, String(size))
      const [ja, jb, ga, gb, bare] = ['jarvis-a', 'jarvis-b', 'git-a', 'git-b', 'bare.git'].map((n) => join(base, n))
      for (const dir of [ja, jb]) {
        await mkdir(dir, {recursive: true})
        await initTree(dir, {server: server.url, agent: 'claude'})
      }
      await mkdir(bare, {recursive: true})
      await git(bare, 'init', '-q', '--bare', '-b', 'main')
      await git(base, 'clone', '-q', bare, ga)
      await git(base, 'clone', '-q', bare, gb)
      for (const repo of [ga, gb]) {
        await git(repo, 'config', 'user.email', 'bench@localhost')
        await git(repo, 'config', 'user.name', 'bench')
        await git(repo, 'checkout', '-q', '-b', 'main')
      }
      await writeTree(join(ja, '.memory'), size)
      await writeTree(ga, size)

      const jarvisInitial = (await timeRuns(1, async () => {
        await jarvis(ja, 'sync', '--quiet')
        await jarvis(jb, 'sync', '--quiet')
      }))[0]
      const gitInitial = (await timeRuns(1, async () => {
        await git(ga, 'add', '-A')
        await git(ga, 'commit', '-q', '-m', 'initial')
        await git(ga, 'push', '-q', 'origin', 'main')
        await git(gb, 'pull', '-q', 'origin', 'main')
      }))[0]
      rows.push([`${size} files`, 'initial sync (A pushes, B pulls)', ms(jarvisInitial), ms(gitInitial), ratio(jarvisInitial, gitInitial)])

      const jarvisNoop = median(await timeRuns(7, () => jarvis(ja, 'sync', '--quiet'), 1))
      const gitNoop = median(await timeRuns(7, async () => {
        await git(ga, 'pull', '-q', 'origin', 'main')
        await git(ga, 'push', '-q', 'origin', 'main')
      }, 1))
      rows.push([`${size} files`, 'no-op sync (`jarvis sync` vs `git pull && git push`)', ms(jarvisNoop), ms(gitNoop), ratio(jarvisNoop, gitNoop)])

      let round = 0
      const jarvisTen = median(await timeRuns(3, async () => {
        await editTen(join(ja, '.memory'), size, ++round)
        await jarvis(ja, 'sync', '--quiet')
        await jarvis(jb, 'sync', '--quiet')
      }))
      round = 0
      const gitTen = median(await timeRuns(3, async () => {
        await editTen(ga, size, ++round)
        await git(ga, 'add', '-A')
        await git(ga, 'commit', '-q', '-m', `round ${round}`)
        await git(ga, 'push', '-q', 'origin', 'main')
        await git(gb, 'pull', '-q', 'origin', 'main')
      }))
      rows.push([`${size} files`, '10 files changed (A pushes, B pulls)', ms(jarvisTen), ms(gitTen), ratio(jarvisTen, gitTen)])

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
      rows.push([`${size} files`, 'no-op sync, in-process (no Node start-up)', ms(inProcess), '', ''])
      wire.push([`${size} files`, String(sent), String(received), String(sent + received)])
    }
  } finally {
    for (const server of servers) await server.close()
    await rm(work, {recursive: true, force: true})
  }
  const markdown = [
    'Both tools run as whole processes, as a shell or a git hook runs them; every figure is a median (initial sync: one run). `jarvis` talks to a real `jarvis serve` on 127.0.0.1; git to a bare repository on local disk.',
    '',
    table(['tree', 'operation', 'jarvis', 'git', 'jarvis vs git'], rows),
    '',
    'Bytes on the wire for one no-op `jarvis sync` (request line and bodies, without HTTP headers). It asks `GET /api/memory/status?since=<seq>`, so it does not grow with the number of files:',
    '',
    table(['tree', 'sent', 'received', 'total bytes'], wire),
  ].join('\n')
  return {title: 'Sync: jarvis against git', markdown}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const sizes = process.argv.slice(2).map(Number).filter(Boolean)
  process.stdout.write(`${(await benchSync(sizes.length ? sizes : undefined)).markdown}\n`)
}
