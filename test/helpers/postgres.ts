/**
 * A real PostgreSQL server for the tests: one per test run, started by the global setup (test/global-setup.ts) from
 * Debian's `postgresql` package (`.ci/run` installs it when missing) on 127.0.0.1 and a port it picks, in a temp
 * directory, and stopped by its handle when the run ends. Each test file asks for databases of its own.
 *
 * PostgreSQL refuses to run as root: as root, initdb and the server run as the `postgres` user the package creates.
 */
import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {chownSync, existsSync, mkdtempSync, readdirSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import pg from 'pg'
import {inject} from 'vitest'

import {closedPort} from '../cli/memory-helpers.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /** `postgres://…/postgres` of the run's PostgreSQL server: the maintenance database, to create test databases from. */
    postgresAdminUrl: string
  }
}

/** The bin directory of the newest PostgreSQL installed from Debian's packages, or null. */
function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return null
  const versions = readdirSync(root)
    .filter((name) => existsSync(join(root, name, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a))
  return versions.length === 0 ? null : join(root, versions[0], 'bin')
}

/** As root, the uid/gid of the `postgres` user; otherwise nothing (the server runs as whoever runs the tests). */
function serverUser(): {uid: number; gid: number} | undefined {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], {encoding: 'utf8'}).stdout.trim())
  const uid = id('-u')
  const gid = id('-g')
  if (!Number.isInteger(uid) || uid <= 0) throw new Error('running as root, PostgreSQL needs the `postgres` user of Debian\'s postgresql package: apt-get install postgresql')
  return {uid, gid}
}

export interface PostgresServer {
  /** The maintenance database's URL (user `jarvis`, no password: trust on 127.0.0.1 only). */
  adminUrl: string
  /** The postmaster's process id (its backends are its children): for the bench's CPU and memory accounting. */
  pid: number
  stop(): Promise<void>
  /** Stops the server (fast shutdown, as an operator's restart), runs `whileDown`, then starts it again on the same port and data. */
  restart(whileDown: () => Promise<void>): Promise<void>
}

async function waitUntilReady(url: string, child: ChildProcess, log: () => string): Promise<void> {
  for (let attempt = 0; attempt < 300; attempt++) {
    if (child.exitCode !== null) throw new Error(`PostgreSQL stopped at start (exit ${child.exitCode}):\n${log()}`)
    const client = new pg.Client({connectionString: url})
    try {
      await client.connect()
      await client.end()
      return
    } catch {
      await client.end().catch(() => {})
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  throw new Error(`PostgreSQL did not accept connections within 30 s:\n${log()}`)
}

/**
 * initdb in a temp directory, then the server on 127.0.0.1; durability off (fsync), which a test run does not need,
 * unless `durable` (the benchmark, which compares it with a SQLite server that fsyncs every commit).
 */
export async function startPostgresServer(options: {durable?: boolean} = {}): Promise<PostgresServer> {
  const bin = postgresBinDir()
  if (bin === null) throw new Error("PostgreSQL is not installed: the tests need Debian's postgresql package (apt-get install postgresql; .ci/run does it)")
  const user = serverUser()
  const dir = mkdtempSync(join(tmpdir(), 'jarvis-pg-'))
  if (user) chownSync(dir, user.uid, user.gid)
  const data = join(dir, 'data')
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'jarvis', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'], {encoding: 'utf8', cwd: dir, ...user})
  if (init.status !== 0) {
    rmSync(dir, {recursive: true, force: true})
    throw new Error(`initdb failed: ${init.stderr || init.stdout}`)
  }
  const port = await closedPort()
  const settings = [...(options.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']), '-c', 'max_connections=300']
  let log = ''
  const launch = () => {
    const child = spawn(join(bin, 'postgres'), ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', dir, ...settings], {cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], ...user})
    child.stderr?.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString('utf8')).slice(-4000)
    })
    return {child, exited: new Promise<void>((resolve) => child.once('exit', () => resolve()))}
  }
  let running = launch()
  const adminUrl = `postgres://jarvis@127.0.0.1:${port}/postgres`
  const halt = async () => {
    if (running.child.exitCode === null) {
      running.child.kill('SIGINT') // fast shutdown: open sessions are ended, nothing waits for clients
      await running.exited
    }
  }
  const stop = async () => {
    await halt()
    rmSync(dir, {recursive: true, force: true})
  }
  const ready = async () => {
    try {
      await waitUntilReady(adminUrl, running.child, () => log)
    } catch (error) {
      await stop()
      throw error
    }
  }
  await ready()
  const restart = async (whileDown: () => Promise<void>) => {
    await halt()
    await whileDown()
    running = launch()
    await ready()
  }
  return {
    adminUrl,
    get pid() {
      return running.child.pid ?? 0
    },
    stop,
    restart,
  }
}

/** A new, empty database on the run's server (or the one `adminUrl` names); its URL. */
export async function freshDatabase(adminUrl: string = inject('postgresAdminUrl')): Promise<string> {
  const name = `jarvis_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`
  const client = new pg.Client({connectionString: adminUrl})
  await client.connect()
  try {
    await client.query(`CREATE DATABASE ${name}`)
  } finally {
    await client.end()
  }
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}
