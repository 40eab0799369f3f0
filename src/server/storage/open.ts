/**
 * Which storage a `jarvis serve` command works on: the embedded SQLite file of a data directory (the default), or a
 * PostgreSQL database named by `--database postgres://…` / JARVIS_DATABASE_URL. The PostgreSQL client is loaded only
 * then, so a SQLite server never loads it.
 */
import {BadInputError} from '../../errors.js'
import {defaultDataDir} from '../config.js'
import type {DumpRow, DumpTable} from './sqlite-dump.js'
import {openSqliteStorage, type SqliteStorageOptions} from './sqlite.js'
import type {ServerStorage} from './types.js'

/** Where the storage is: a database URL wins over a data directory. */
export interface StorageTarget {
  dataDir?: string
  databaseUrl?: string
}

/** A storage with everything `jarvis serve` and its subcommands use, export and import included. */
export type OpenedStorage = ServerStorage & {
  /** Every row, read in one transaction. */
  dumpRows(): Iterable<DumpRow> | AsyncIterable<DumpRow>
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

/** Opens (creating or migrating when needed) the storage of `target`. */
export async function openStorage(target: StorageTarget, options: Pick<SqliteStorageOptions, 'groupCommit'> = {}): Promise<OpenedStorage> {
  if (target.databaseUrl !== undefined && target.databaseUrl !== '') {
    if (!isPostgresUrl(target.databaseUrl)) {
      throw new BadInputError(`--database: ${JSON.stringify(redactDatabaseUrl(target.databaseUrl))} is not a PostgreSQL URL: give postgres://user:password@host:5432/database, or leave it out to use the embedded SQLite file under --data`, {field: 'database'})
    }
    const {PostgresStorage} = await import('./postgres.js')
    return PostgresStorage.open(target.databaseUrl)
  }
  return openSqliteStorage(target.dataDir ?? defaultDataDir(), undefined, options)
}

/** The storage of `target` for one piece of work of a `jarvis serve` subcommand, closed after it whatever happens. */
export async function withStorage<T>(target: StorageTarget, use: (storage: OpenedStorage) => Promise<T>): Promise<T> {
  const storage = await openStorage(target)
  try {
    return await use(storage)
  } finally {
    await storage.close()
  }
}
