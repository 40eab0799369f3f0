/**
 * End-to-end latency of `jarvis sync --watch` (seed 003 §10 aims under 100 ms): from a write on
 * client A's disk to the file on client B's disk, through A's file watcher, the push, the server's
 * MEM_UPDATE broadcast over the WebSocket and B's pull. Both watchers and the server are real.
 */
import {mkdir, readFile, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import {MemoryClient} from '../src/protocol/client.js'
import {startServer} from '../src/server/start.js'
import {initTree, readConfig} from '../src/store/index.js'
import {startWatch} from '../src/sync/watch.js'
import {median, ms, table, type BenchSection} from './stats.js'

const ROUNDS = 30

async function waitFor(path: string, text: string, deadline: number): Promise<number> {
  for (;;) {
    const now = performance.now()
    if ((await readFile(path, 'utf8').catch(() => null)) === text) return now
    if (now > deadline) throw new Error(`${path} never received the edit`)
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
}

export async function benchWatch(): Promise<BenchSection> {
  const work = join(process.env.TMPDIR ?? '/tmp', `jarvis-bench-watch-${process.pid}`)
  await rm(work, {recursive: true, force: true})
  const tokens = {[`bench-a-${process.pid}`]: 'claude', [`bench-b-${process.pid}`]: 'gemini'}
  const server = await startServer({host: '127.0.0.1', port: 0, dataDir: join(work, 'server'), tokens, logLevel: 'silent'})
  const watches = []
  try {
    const roots: string[] = []
    for (const [name, token] of [['a', `bench-a-${process.pid}`], ['b', `bench-b-${process.pid}`]]) {
      const dir = join(work, name)
      await mkdir(dir, {recursive: true})
      const {root} = await initTree(dir, {server: server.url})
      roots.push(root)
      const watch = startWatch({root, client: new MemoryClient({server: server.url, token}), token, settings: (await readConfig(root)).sync})
      await watch.ready
      watches.push(watch)
    }
    const latencies: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const text = `# round ${round}\n\nwritten on A at ${Date.now()}\n`
      const start = performance.now()
      await writeFile(join(roots[0], '.memory', 'PROJECT_MEMORY.md'), text)
      latencies.push((await waitFor(join(roots[1], '.memory', 'PROJECT_MEMORY.md'), text, start + 10_000)) - start)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const sorted = [...latencies].sort((x, y) => x - y)
    const markdown = [
      `Write on A → file on B's disk, ${ROUNDS} edits, both clients running \`startWatch\` (what \`jarvis sync --watch\` runs) against a real server on 127.0.0.1. The seed 003 §10 target is 100 ms.`,
      '',
      table(['median', 'p90', 'min', 'max'], [[ms(median(latencies)), ms(sorted[Math.floor(sorted.length * 0.9)]), ms(sorted[0]), ms(sorted[sorted.length - 1])]]),
    ].join('\n')
    return {title: 'Watch: end-to-end latency', markdown}
  } finally {
    await Promise.all(watches.map((w) => w.stop()))
    await server.close()
    await rm(work, {recursive: true, force: true})
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`${(await benchWatch()).markdown}\n`)
}
