/**
 * The two storage backends of `jarvis serve`, for the conformance suites: every storage, protocol, sync, event-log and
 * MCP test that touches the server runs once per backend with `describe.each(BACKENDS)`, on a fresh store each time —
 * a temp data directory for SQLite, a new database on the run's PostgreSQL server (test/helpers/postgres.ts).
 */
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
