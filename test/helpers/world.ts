import {spawn, type ChildProcess} from 'node:child_process'
import {mkdir, mkdtemp, readFile, rm, unlink, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'

import {MemoryClient} from '../../src/protocol/client.js'
import {startServer} from '../../src/server/start.js'
import {initTree, readConfig, withTreeLock} from '../../src/store/index.js'
import {runSync, type SyncResult} from '../../src/sync/run.js'
import {databaseFor} from './backends.js'
import {jarvisBin} from './cli.js'

export const TOKENS: Record<string, string> = {}
export const AGENTS = ['claude', 'gemini', 'chatgpt', 'openclaw'] as const

/** Fake tokens built at run time, never committed (the brief: no secret in the repo, fixtures included). */
for (const agent of AGENTS) TOKENS[agent] = `test-${agent}-${Math.random().toString(36).slice(2)}`
export const tokenMap = Object.fromEntries(Object.entries(TOKENS).map(([agent, token]) => [token, agent]))

export async function tempDir(prefix = 'jarvis-test-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix))
}

export interface TestServer {
  url: string
  port: number
  dataDir: string
  /** The PostgreSQL database when the suite runs on that backend (test/helpers/backends.ts). */
  databaseUrl?: string
  close(): Promise<void>
}

/** A real `jarvis serve` in this process, on 127.0.0.1 and a port the OS picks; on `database` when given (null: the dir's SQLite), else on the suite's backend. */
export async function startTestServer(dataDir?: string, port = 0, database?: string | null): Promise<TestServer> {
  const dir = dataDir ?? (await tempDir('jarvis-server-'))
  const databaseUrl = database === null ? undefined : (database ?? (await databaseFor(dir)))
  const server = await startServer({host: '127.0.0.1', port, dataDir: dir, databaseUrl, tokens: tokenMap, logLevel: 'silent'})
  return {url: server.url, port: server.port, dataDir: dir, ...(databaseUrl === undefined ? {} : {databaseUrl}), close: () => server.close()}
}

export interface ServerProcess {
  url: string
  port: number
  dataDir: string
  child: ChildProcess
  /** SIGTERM and wait; or pass SIGKILL to kill it mid-write. */
  stop(signal?: NodeJS.Signals): Promise<void>
}

export interface ServerProcessOptions {
  /**
   * Without --tokens: the server uses its data directory's tokens.json, made (and printed) at its first start, as a
   * user's first `jarvis serve` does; the test reads them there. Default: the test tokens (TOKENS), in a file of their own.
   */
  dataDirTokens?: boolean
  /** The PostgreSQL database to serve, or null for the data directory's SQLite file; default the suite's backend's. */
  databaseUrl?: string | null
}

/** A real `jarvis serve` as its own process, to kill and restart; `args`: more flags (`--tls-cert`, …). */
export async function startServerProcess(dataDir: string, port = 0, args: readonly string[] = [], options: ServerProcessOptions = {}): Promise<ServerProcess> {
  const tokensFile = join(dataDir, '..', `tokens-${Date.now()}-${Math.random().toString(36).slice(2)}.json`)
  await mkdir(dataDir, {recursive: true})
  if (!options.dataDirTokens) await writeFile(tokensFile, JSON.stringify(tokenMap))
  const databaseUrl = options.databaseUrl === null ? undefined : (options.databaseUrl ?? (await databaseFor(dataDir)))
  const database = databaseUrl === undefined ? [] : ['--database', databaseUrl]
  const tokens = options.dataDirTokens ? [] : ['--tokens', tokensFile]
  const child = spawn(process.execPath, [jarvisBin, 'serve', '--host', '127.0.0.1', '--port', String(port), '--data', dataDir, ...tokens, ...database, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {...process.env, NO_COLOR: '1', JARVIS_DATABASE_URL: '', JARVIS_SERVER_TOKENS: ''},
  })
  let output = ''
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
      const match = /listening on (https?:\/\/\S+)/.exec(output)
      if (match) resolve(match[1])
    })
    child.once('exit', (code) => reject(new Error(`jarvis serve exited with ${code}:\n${output}`)))
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return {
    url,
    port: Number(new URL(url).port),
    dataDir,
    child,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited
      await unlink(tokensFile).catch(() => {})
    },
  }
}

/** The flags that point a `jarvis serve` subcommand (token, export, import, backup) at a test server's storage. */
export function storageFlags(server: Pick<TestServer, 'dataDir' | 'databaseUrl'>): string[] {
  return server.databaseUrl === undefined ? ['--data', server.dataDir] : ['--database', server.databaseUrl]
}

export interface TestClient {
  root: string
  agent: string
  memory: string
  sync(options?: {dryRun?: boolean; force?: boolean; server?: string}): Promise<SyncResult>
  write(path: string, text: string): Promise<void>
  read(path: string): Promise<string | null>
  remove(path: string): Promise<void>
}

/** A real client tree on disk, synced in this process through the same code the command runs. */
export async function makeClient(server: string, agent: string = 'claude'): Promise<TestClient> {
  const dir = await tempDir(`jarvis-${agent}-`)
  const {root} = await initTree(dir, {server, agent})
  const memory = join(root, '.memory')
  return {
    root,
    agent,
    memory,
    async sync(options = {}) {
      const config = await readConfig(root)
      const client = new MemoryClient({server: options.server ?? server, token: TOKENS[agent]})
      try {
        return await withTreeLock(root, {timeoutMs: 10_000}, () =>
          runSync({root, client, settings: {...config.sync, retryDelay: 10}, dryRun: options.dryRun, force: options.force}),
        )
      } finally {
        await client.close()
      }
    },
    async write(path, text) {
      await mkdir(dirname(join(memory, path)), {recursive: true})
      await writeFile(join(memory, path), text)
    },
    async read(path) {
      return readFile(join(memory, path), 'utf8').catch(() => null)
    },
    async remove(path) {
      await rm(join(memory, path), {force: true})
    },
  }
}

/** Polls until `probe` returns a value: an overall deadline for the test, not a timed assertion. */
export async function until<T>(what: string, probe: () => T | undefined | null | Promise<T | undefined | null>, deadlineMs = 20_000): Promise<T> {
  const end = Date.now() + deadlineMs
  for (;;) {
    const value = await probe()
    if (value !== undefined && value !== null) return value
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export async function removeAll(paths: string[]): Promise<void> {
  // A background process (a git hook's sync, a killed writer's sibling) may still be finishing: retry ENOTEMPTY.
  await Promise.all(paths.map((p) => rm(p, {recursive: true, force: true, maxRetries: 5, retryDelay: 100})))
}
