/**
 * The two storage backends of `jarvis serve`, for the conformance suites: every storage, protocol, sync, event-log and
 * MCP test that touches the server runs once per backend with `describe.each(BACKENDS)`, on a fresh store each time —
 * a temp data directory for SQLite, a new database on the run's PostgreSQL server (test/helpers/postgres.ts).
 */
import {afterAll, beforeAll} from 'vitest'

import {openStorage, type OpenedStorage, type StorageTarget} from '../../src/server/storage/open.js'
import {type Cleanup, tempDir} from '../server/temp.js'
import {freshDatabase} from './postgres.js'

export const BACKENDS = ['sqlite', 'postgres'] as const
export type Backend = (typeof BACKENDS)[number]

/** Where a fresh, empty store of `backend` is (a temp dir that `cleanup` removes, or a new database). */
export async function freshTarget(backend: Backend, cleanup: Cleanup): Promise<StorageTarget> {
  if (backend === 'postgres') return {databaseUrl: await freshDatabase()}
  return {dataDir: cleanup.dir(await tempDir())}
}

/** A fresh store of `backend`, opened; `cleanup` closes it. */
export async function openFresh(backend: Backend, cleanup: Cleanup): Promise<OpenedStorage> {
  const storage = await openStorage(await freshTarget(backend, cleanup))
  cleanup.add(() => storage.close())
  return storage
}

let current: Backend = 'sqlite'
/** dataDir → the database of the PostgreSQL server started on it, so that a restart on the same dir finds its data. */
const databases = new Map<string, Promise<string>>()

/**
 * Makes the servers that the tests of the enclosing `describe` start (startHarness, startTestServer,
 * startServerProcess) use `backend`; call it at the top of a `describe.each(BACKENDS)` block.
 */
export function useBackend(backend: Backend): void {
  beforeAll(() => {
    current = backend
  })
  afterAll(() => {
    current = 'sqlite'
  })
}

/** The backend the running test's servers use. */
export function currentBackend(): Backend {
  return current
}

/**
 * The database a server on `dataDir` uses under the current backend: undefined for SQLite (the dir's file), a new
 * PostgreSQL database the first time a dir is seen, the same one when a server is started again on that dir.
 */
export async function databaseFor(dataDir: string): Promise<string | undefined> {
  if (current === 'sqlite') return undefined
  // The promise is kept, not the URL: two servers started together on one dir get one database.
  let url = databases.get(dataDir)
  if (url === undefined) {
    url = freshDatabase()
    databases.set(dataDir, url)
  }
  return url
}
