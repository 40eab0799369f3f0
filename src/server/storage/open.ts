/**
 * Which storage a `jarvis serve` command works on: the embedded SQLite file of a data directory (the default), or a
 * PostgreSQL database named by `--database postgres://…` / JARVIS_DATABASE_URL. The PostgreSQL client is loaded only
 * then, so a SQLite server never loads it.
 */
import {existsSync} from 'node:fs'
import {rm} from 'node:fs/promises'
import {join} from 'node:path'

import {BadInputError} from '../../errors.js'
import {defaultDataDir} from '../config.js'
import type {DumpItem, DumpRow, DumpTable} from './sqlite-dump.js'
import {openSqliteStorage, SQLITE_FILE_NAME, type SqliteStorageOptions} from './sqlite.js'
import type {ServerStorage} from './types.js'
import {DEFAULT_WORKSPACE} from './workspace-name.js'

/** Where the storage is: a database URL wins over a data directory. */
export interface StorageTarget {
  dataDir?: string
  databaseUrl?: string
}

/** A storage with everything `jarvis serve` and its subcommands use, export and import included. */
export type OpenedStorage = ServerStorage & {
  /**
   * How many rows of each of `tables` (default all) there are, then every one of them, read in one transaction; the
   * keys of workspace `keysOf` only (default the default one; null: every workspace's).
   */
  dumpRows(tables?: readonly DumpTable[], keysOf?: string | null): Iterable<DumpItem> | AsyncIterable<DumpItem>
  /** Loads a dump into a storage that holds no memory yet. */
  loadRows(rows: AsyncIterable<{row: DumpRow; where: string}>): Promise<Record<DumpTable, number>>
}

/** The URL as it can be shown: without its password. */
export function redactDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    return parsed.toString()
  } catch {
    return 'the given database URL'
  }
}

/** True for a `postgres://` or `postgresql://` URL. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url)
}

/** The PostgreSQL URL of `target`, checked, or undefined when the target is a data directory. */
function postgresUrlOf(target: StorageTarget): string | undefined {
  if (target.databaseUrl === undefined || target.databaseUrl === '') return undefined
  if (!isPostgresUrl(target.databaseUrl)) {
    throw new BadInputError(`--database: ${JSON.stringify(redactDatabaseUrl(target.databaseUrl))} is not a PostgreSQL URL: give postgres://user:password@host:5432/database, or leave it out to use the embedded SQLite file under --data`, {field: 'database'})
  }
  return target.databaseUrl
}

/**
 * The directory of a workspace's SQLite file. The default workspace's is the data directory itself, where the server
 * kept its one memory before workspaces: an existing data directory serves on as the default workspace, unmoved.
 */
export function workspaceDir(dataDir: string, workspace: string): string {
  return workspace === DEFAULT_WORKSPACE ? dataDir : join(dataDir, 'workspaces', workspace)
}

export interface OpenOptions {
  /** The checked name of the workspace whose storage to open; default the default workspace. */
  workspace?: string
  /**
   * false for the commands that only read (`serve token list`, `serve export`, `serve backup`): a schema older than
   * this jarvis's is refused (exit 2, schema-version.ts), never upgraded under the servers of the older version that
   * may be using it. Default true: the server and the commands that write bring it up to date.
   */
  migrate?: boolean
}

/**
 * Opens (creating or migrating when needed) the storage of `target`: the default workspace's, or the checked
 * `workspace`'s (docs/decisions/workspaces.md). The default workspace's storage also holds every workspace's keys.
 */
export async function openStorage(target: StorageTarget, options: Pick<SqliteStorageOptions, 'groupCommit'> & OpenOptions = {}): Promise<OpenedStorage> {
  const workspace = options.workspace ?? DEFAULT_WORKSPACE
  const url = postgresUrlOf(target)
  if (url !== undefined) {
    const {PostgresStorage} = await import('./postgres.js')
    return PostgresStorage.open(url, {workspace, migrate: options.migrate})
  }
  return openSqliteStorage(workspaceDir(target.dataDir ?? defaultDataDir(), workspace), undefined, {...options, workspace})
}

/** Whether workspace `workspace` has a storage in `target` yet (the default one always has). */
export async function workspaceExists(target: StorageTarget, workspace: string): Promise<boolean> {
  if (workspace === DEFAULT_WORKSPACE) return true
  const url = postgresUrlOf(target)
  if (url !== undefined) {
    const {PostgresStorage} = await import('./postgres.js')
    return PostgresStorage.hasWorkspace(url, workspace)
  }
  return existsSync(join(workspaceDir(target.dataDir ?? defaultDataDir(), workspace), SQLITE_FILE_NAME))
}

/**
 * Removes the storage of workspace `workspace` (never the default one's): its SQLite directory, or its PostgreSQL
 * schema. For an import into a new workspace that failed, which must leave no workspace behind.
 */
export async function removeWorkspaceStorage(target: StorageTarget, workspace: string): Promise<void> {
  if (workspace === DEFAULT_WORKSPACE) throw new Error('the default workspace is never removed')
  const url = postgresUrlOf(target)
  if (url !== undefined) {
    const {PostgresStorage} = await import('./postgres.js')
    return PostgresStorage.dropWorkspace(url, workspace)
  }
  await rm(workspaceDir(target.dataDir ?? defaultDataDir(), workspace), {recursive: true, force: true})
}

/**
 * Refuses (exit 2 naming --data or --database) a target that holds no server data: a data directory without the
 * server's database file, a PostgreSQL database no jarvis server set up. For the subcommands that only read or change
 * what a server holds (`serve token list|revoke`, `serve export`, `serve backup`): opening the storage would make an empty server there, so a
 * mistyped path would leave one behind and answer as if it were the server's.
 */
export async function assertServerData(target: StorageTarget): Promise<void> {
  const url = postgresUrlOf(target)
  if (url !== undefined) {
    const {PostgresStorage} = await import('./postgres.js')
    if (await PostgresStorage.hasServerData(url)) return
    throw new BadInputError(`--database: ${redactDatabaseUrl(url)} holds no jarvis server data (no server has run on it): give the database the server uses`, {field: 'database'})
  }
  const dir = target.dataDir ?? defaultDataDir()
  if (existsSync(join(dir, SQLITE_FILE_NAME))) return
  const which = target.dataDir === undefined ? `the default data directory ${dir}` : dir
  throw new BadInputError(`--data: ${which} holds no jarvis server data (no ${SQLITE_FILE_NAME}): give the data directory the server uses (its --data)`, {field: 'data'})
}

/** The storage of `target` for one piece of work of a `jarvis serve` subcommand, closed after it whatever happens. */
export async function withStorage<T>(target: StorageTarget, use: (storage: OpenedStorage) => Promise<T>, options: OpenOptions = {}): Promise<T> {
  const storage = await openStorage(target, options)
  try {
    return await use(storage)
  } finally {
    await storage.close()
  }
}
