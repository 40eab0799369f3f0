import {spawn} from 'node:child_process'
import {cp, rename, writeFile} from 'node:fs/promises'
import {createServer, type Socket} from 'node:net'
import {join} from 'node:path'

import {afterEach, describe, expect, it} from 'vitest'

import {MemoryClient} from '../../src/protocol/client.js'
import {readAudit, readConfig} from '../../src/store/index.js'
import type {SyncResult} from '../../src/sync/run.js'
import {isWatchIgnored, startWatch, wsUrlFor, type SyncInfo, type WatchHandle, type WatchOptions} from '../../src/sync/watch.js'
import {jarvisBin} from '../helpers/cli.js'
import {makeClient, removeAll, startTestServer, TOKENS, type TestClient, type TestServer, until} from '../helpers/world.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Watching {
  handle: WatchHandle
  syncs: {result: SyncResult; info: SyncInfo}[]
  errors: {error: unknown; info: SyncInfo}[]
}

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  describe('jarvis sync --watch (startWatch)', () => {
    const cleanups: (() => Promise<unknown>)[] = []
    const dirs: string[] = []

    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
      await removeAll(dirs.splice(0))
    })

    async function server(dataDir?: string, port = 0): Promise<TestServer> {
      const started = await startTestServer(dataDir, port)
      if (!dataDir) dirs.push(started.dataDir)
      cleanups.push(() => started.close())
      return started
    }

    async function client(url: string, agent: string): Promise<TestClient> {
      const made = await makeClient(url, agent)
      dirs.push(made.root)
      return made
    }

    async function watching(tree: TestClient, url: string, extra: Partial<WatchOptions> = {}): Promise<Watching> {
      const config = await readConfig(tree.root)
      const watched: Watching = {syncs: [], errors: [], handle: undefined as unknown as WatchHandle}
      watched.handle = startWatch({
        root: tree.root,
        client: new MemoryClient({server: url, token: TOKENS[tree.agent]}),
        settings: {...config.sync, retryDelay: 10},
        token: TOKENS[tree.agent],
        onSync: (result, info) => watched.syncs.push({result, info}),
        onError: (error, info) => watched.errors.push({error, info}),
        ...extra,
      })
      cleanups.push(() => watched.handle.stop())
      await watched.handle.ready
      return watched
    }

    it('an edit on A reaches B through the WebSocket, and both come to rest', async () => {
      const srv = await server()
      const a = await client(srv.url, 'claude')
      const b = await client(srv.url, 'gemini')
      const watchA = await watching(a, srv.url)
      const watchB = await watching(b, srv.url)
      expect(watchA.handle.stats().connected).toBe(true)
      expect(watchB.handle.stats().connected).toBe(true)

      await a.write('PROJECT_MEMORY.md', '# Project\n\nfrom A\n')
      await a.write('notes/one.md', 'one\n')
      expect(await until('B to get PROJECT_MEMORY.md', () => b.read('PROJECT_MEMORY.md'))).toBe('# Project\n\nfrom A\n')
      expect(await until('B to get notes/one.md', () => b.read('notes/one.md'))).toBe('one\n')

      // And back: an edit on B reaches A.
      await b.write('PROJECT_MEMORY.md', '# Project\n\nfrom A\nand B\n')
      await until('A to get B’s edit', async () => ((await a.read('PROJECT_MEMORY.md'))?.includes('and B') ? true : undefined))

      // Backups and temp files are no reason to sync.
      await a.write('PROJECT_MEMORY.local.bak', 'old\n')
      await a.write('.x.md.jarvis-tmp-1-1', 'partial')
      await a.write('ping.md', 'ping\n')
      await until('B to get ping.md', () => b.read('ping.md'))
      // A reports its sync when it has finished, which can be after B has pulled what it pushed.
      await until('A to report the sync of ping.md', () => (watchA.syncs.some((s) => s.info.reasons.some((r) => r.includes('ping.md'))) ? true : undefined))
      const reasons = watchA.syncs.flatMap((s) => s.info.reasons)
      expect(reasons.filter((r) => r.includes('.local.bak') || r.includes('jarvis-tmp'))).toEqual([])
      expect(await b.read('PROJECT_MEMORY.local.bak')).toBeNull()

      // No loop: once everything is in, neither side keeps syncing (a pulled file is an echo, not a change).
      await sleep(500)
      const settled = [watchA.syncs.length, watchB.syncs.length]
      await sleep(1000)
      expect([watchA.syncs.length, watchB.syncs.length]).toEqual(settled)
      expect(watchA.errors).toEqual([])
      expect(watchB.errors).toEqual([])

      await watchA.handle.stop()
      await watchB.handle.stop()
      expect(watchA.handle.stats().connected).toBe(false)
    })

    it('.memory/ put in the place of the watched one (moved away, restored): its edits are still synced', async () => {
      const srv = await server()
      const a = await client(srv.url, 'claude')
      const b = await client(srv.url, 'gemini')
      await a.write('notes/first.md', 'first\n')
      await a.sync()
      const watchA = await watching(a, srv.url)
      await rename(a.memory, `${a.memory}-old`)
      dirs.push(`${a.memory}-old`)
      await cp(`${a.memory}-old`, a.memory, {recursive: true, preserveTimestamps: true})
      await writeFile(join(a.memory, 'notes', 'wombat.md'), 'wombat lives here\n')
      expect(await until('B to get the file written in the new .memory/', async () => (await b.sync()).pulled.length > 0 ? b.read('notes/wombat.md') : null)).toBe('wombat lives here\n')
      expect(watchA.syncs.some(({info}) => info.reasons.includes('replaced'))).toBe(true)
      // The new folder is the one watched now: a later edit in it goes out as well.
      await writeFile(join(a.memory, 'notes', 'first.md'), 'first, edited\n')
      expect(await until('B to get the edit', async () => ((await b.sync()).pulled.includes('notes/first.md') ? b.read('notes/first.md') : null))).toBe('first, edited\n')
    })

    it('after a server restart the watch reconnects, resyncs, and a change made meanwhile arrives', async () => {
      const first = await server()
      const {dataDir, port, url} = first
      const a = await client(url, 'claude')
      const b = await client(url, 'gemini')
      const watchA = await watching(a, url)
      await watching(b, url)
      await a.write('before.md', 'before\n')
      await until('B to get before.md', () => b.read('before.md'))

      await first.close()
      await until('A to notice', () => (watchA.handle.stats().connected ? undefined : true))
      // Written while the server is away: the sync it triggers fails, the edit waits on disk.
      await a.write('during.md', 'written while the server was down\n')
      await until('A’s failed sync', () => (watchA.errors.length > 0 ? true : undefined))

      await server(dataDir, port)
      expect(await until('B to get during.md', () => b.read('during.md'))).toBe('written while the server was down\n')
      for (const tree of [a, b]) {
        const audit = await until(`${tree.agent}'s reconnect audit`, async () => {
          const entries = await readAudit(tree.root)
          return entries.some((e) => e.type === 'reconnect') ? entries : undefined
        })
        expect(audit.filter((e) => e.type === 'reconnect')[0]).toMatchObject({server: url})
      }
      expect(watchA.handle.stats().reconnects).toBeGreaterThanOrEqual(1)
      // B may have during.md before A's resync has returned (it still records what it pushed): waited for, not raced.
      expect(await until('A’s full resync after the reconnect', () => (watchA.syncs.some((s) => s.info.full && s.info.reasons.includes('reconnect')) ? true : undefined))).toBe(true)
    })

    it('a server that goes silent is declared partitioned and audited', async () => {
      const srv = await server()
      const a = await client(srv.url, 'claude')
      // A socket that accepts and never answers: no handshake, no PONG.
      const sockets = new Set<Socket>()
      const silent = createServer((socket) => sockets.add(socket))
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
      cleanups.push(async () => {
        for (const socket of sockets) socket.destroy()
        await new Promise<void>((resolve) => silent.close(() => resolve()))
      })
      const {port} = silent.address() as {port: number}
      const config = await readConfig(a.root)
      const events: string[] = []
      const handle = startWatch({
        root: a.root,
        client: new MemoryClient({server: srv.url, token: TOKENS.claude}),
        settings: config.sync,
        token: TOKENS.claude,
        wsUrl: `ws://127.0.0.1:${port}/ws/memory`,
        heartbeatMs: 50,
        partitionMs: 300,
        onEvent: (event) => events.push(event.type),
      })
      cleanups.push(() => handle.stop())
      const entry = await until('the partition audit', async () => (await readAudit(a.root)).find((e) => e.type === 'partition'))
      expect(entry).toMatchObject({type: 'partition', server: srv.url})
      expect(events).toContain('partition')
      expect(handle.stats().partitions).toBe(1)
      await handle.stop()
    })

    it('names what it ignores and where it listens', () => {
      expect(isWatchIgnored('PROJECT_MEMORY.local.bak')).toBe(true)
      expect(isWatchIgnored('a/b.local.2.bak')).toBe(true)
      expect(isWatchIgnored('a/.b.md.jarvis-tmp-12-3')).toBe(true)
      expect(isWatchIgnored('notes.md')).toBe(false)
      expect(wsUrlFor('http://127.0.0.1:8787')).toBe('ws://127.0.0.1:8787/ws/memory')
      expect(wsUrlFor('https://example.org/jarvis/')).toBe('wss://example.org/jarvis/ws/memory')
    })

    it('the command prints one JSON line per sync and a summary line when stopped by SIGINT', async () => {
      const srv = await server()
      const a = await client(srv.url, 'claude')
      const child = spawn(process.execPath, [...(process.env.CI ? [] : ['--import', 'tsx']), jarvisBin, 'sync', '--watch', '--json', '--dir', a.root], {
        env: {...process.env, NO_COLOR: '1', JARVIS_TOKEN: TOKENS.claude, XDG_CONFIG_HOME: join(a.root, 'xdg')},
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      cleanups.push(async () => {
        if (child.exitCode === null) child.kill('SIGKILL')
      })

      await until('the first sync line', () => (stdout.includes('\n') ? true : undefined))
      await writeFile(join(a.memory, 'from-watch.md'), 'hello\n')
      await until('the push line', () => (stdout.includes('from-watch.md') ? true : undefined))
      child.kill('SIGINT')
      expect(await exited, stderr).toBe(0)

      const lines = stdout.trim().split('\n').map((line) => JSON.parse(line))
      expect(lines.length).toBeGreaterThanOrEqual(3)
      for (const line of lines.slice(0, -1)) expect(line).toMatchObject({status: 0, warnings: []})
      expect(lines.some((line) => line.result?.pushed?.includes('from-watch.md'))).toBe(true)
      expect(lines.at(-1)).toMatchObject({status: 0, result: {watch: true, stoppedBy: 'SIGINT', root: a.root}})
    })
  })
})
