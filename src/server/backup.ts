/**
 * `jarvis serve backup` and `jarvis serve restore`: consistent copies of the server's database taken while it
 * serves, kept N at a time, and one of them brought back. Nothing is ever deleted but older backups beyond
 * `--keep`: a restore moves the database it replaces aside, it does not remove it.
 */
import {createReadStream, createWriteStream} from 'node:fs'
import {chmod, copyFile, mkdir, open, readdir, rename, rm, stat} from 'node:fs/promises'
import {once} from 'node:events'
import {join, resolve} from 'node:path'

import {BadInputError, ExitCode, JarvisError} from '../errors.js'
import {fsyncDir, fsyncFile} from '../store/atomic.js'
import {defaultDataDir, makeDataDir} from './config.js'
import {exportData, importData} from './dump.js'
import {assertServerData, redactDatabaseUrl, type StorageTarget} from './storage/open.js'
import {copySqliteDatabase, SQLITE_FILE_NAME, SQLITE_SCHEMA_VERSION} from './storage/sqlite.js'
import {openSqlite} from '../store/sqlite-open.js'

const BACKUP_NAME = /^jarvis-\d{8}T\d{6}(?:\d{3})?Z\.(?:sqlite|jsonl)$/

/** `jarvis-20261125T181500123Z.sqlite` (or `.jsonl`, a dump, for PostgreSQL): sorts by time. */
function backupName(now: Date, extension: 'sqlite' | 'jsonl'): string {
  return `jarvis-${now.toISOString().replace(/[-:.]/g, '')}.${extension}`
}

/**
 * A PostgreSQL database's backup: the default workspace's dump (`jarvis serve export`) with the keys of every
 * workspace, as a SQLite backup (a copy of the file that holds them all) has them; read in one transaction.
 * `jarvis serve restore` (or `import`) brings it back.
 */
async function dumpTo(databaseUrl: string, file: string): Promise<void> {
  const out = createWriteStream(file, {mode: 0o600})
  try {
    await exportData({
      databaseUrl,
      everyWorkspaceKeys: true,
      write: async (line) => {
        if (!out.write(`${line}\n`)) await once(out, 'drain')
      },
    })
  } finally {
    out.end()
    await once(out, 'close')
  }
}

export interface BackupResult {
  file: string
  bytes: number
  /** Older backups removed to keep `keep`. */
  removed: string[]
}

export async function backupData(options: StorageTarget & {to: string; keep?: number; now?: Date}): Promise<BackupResult> {
  if (options.keep !== undefined && (!Number.isInteger(options.keep) || options.keep < 1)) throw new BadInputError(`--keep must be a whole number of 1 or more, not ${options.keep}`, {field: 'keep'})
  await assertServerData(options)
  const to = resolve(options.to)
  await mkdir(to, {recursive: true, mode: 0o700})
  const databaseUrl = options.databaseUrl === '' ? undefined : options.databaseUrl
  const file = join(to, backupName(options.now ?? new Date(), databaseUrl === undefined ? 'sqlite' : 'jsonl'))
  const partial = `${file}.partial`
  await rm(partial, {force: true})
  if (databaseUrl === undefined) copySqliteDatabase(options.dataDir, partial)
  else await dumpTo(databaseUrl, partial)
  // As private as the database it copies (VACUUM INTO makes its file under the umask: readable by others).
  await chmod(partial, 0o600)
  // Under its final name only once complete and on disk: a backup killed halfway never looks like one.
  await fsyncFile(partial)
  await rename(partial, file)
  await fsyncDir(to)
  const removed: string[] = []
  if (options.keep !== undefined) {
    const backups = (await readdir(to)).filter((name) => BACKUP_NAME.test(name)).sort()
    for (const name of backups.slice(0, Math.max(0, backups.length - options.keep))) {
      await rm(join(to, name))
      removed.push(join(to, name))
    }
    if (removed.length > 0) await fsyncDir(to)
  }
  return {file, bytes: (await stat(file)).size, removed}
}

export interface RestoreResult {
  file: string
  /** The data directory restored into (SQLite), or… */
  dataDir?: string
  /** …the PostgreSQL database, without its password. */
  database?: string
  /** Where the database that was there went (never deleted). */
  movedAside?: string
}

const SQLITE_HEADER = 'SQLite format 3\0'

/**
 * A PostgreSQL database comes back from the dump `jarvis serve backup --database` writes, loaded into an empty
 * database as `jarvis serve import` does (all or nothing). A database that holds memory is never replaced: there is
 * nothing to move aside, so --force is refused rather than read as "drop it".
 */
async function restoreIntoDatabase(file: string, databaseUrl: string, force: boolean | undefined, warn: ((message: string) => void) | undefined): Promise<RestoreResult> {
  const handle = await open(file, 'r').catch((error: Error) => {
    throw new BadInputError(`${file}: cannot read it: ${error.message}`, {file})
  })
  const head = Buffer.alloc(SQLITE_HEADER.length)
  try {
    await handle.read(head, 0, head.length, 0)
  } finally {
    await handle.close()
  }
  if (head.toString('latin1') === SQLITE_HEADER) {
    throw new BadInputError(
      `${file} is a backup of a SQLite server; a PostgreSQL database is restored from the .jsonl dump of \`jarvis serve backup --database\`. To move a SQLite server's memory there: jarvis serve export --data DIR | jarvis serve import --database URL`,
      {file},
    )
  }
  if (force) throw new BadInputError('--force: a PostgreSQL database is never replaced; restore into a new, empty database', {field: 'force'})
  await importData({databaseUrl, input: createReadStream(file), source: file, warn})
  return {file, database: redactDatabaseUrl(databaseUrl)}
}

/** Checks `file` is a whole jarvis database this version reads; throws BadInputError naming what is wrong. */
function checkBackup(file: string): void {
  let db
  try {
    db = openSqlite(file, {readonly: true, fileMustExist: true})
  } catch (error) {
    throw new BadInputError(`${file}: cannot open it as a database: ${(error as Error).message}`, {file})
  }
  try {
    const integrity = db.pragma('integrity_check', {simple: true})
    if (integrity !== 'ok') throw new BadInputError(`${file}: damaged (${String(integrity)}); pick another backup`, {file})
    const version = db.prepare<[], {v: number | null}>('SELECT MAX(version) AS v FROM schema_migrations').get()?.v
    if (typeof version !== 'number') throw new BadInputError(`${file}: not a jarvis server database`, {file})
    if (version > SQLITE_SCHEMA_VERSION) throw new BadInputError(`${file}: written by a newer jarvis (schema ${version}); upgrade jarvis first`, {file})
  } catch (error) {
    if (error instanceof BadInputError) throw error
    throw new BadInputError(`${file}: not a jarvis server database (${(error as Error).message})`, {file})
  } finally {
    db.close()
  }
}

/**
 * Refuses a database that another connection has open — a running `jarvis serve`, most likely: moved aside under
 * it, every write it acknowledged afterwards would go to the old file. SQLite tells: leaving WAL mode needs the
 * only connection, so it fails at once with SQLITE_BUSY while any other is open (and is undone when it succeeds).
 */
function assertNotOpen(file: string): void {
  const db = openSqlite(file, {fileMustExist: true, timeout: 0})
  try {
    db.pragma('journal_mode = DELETE')
    db.pragma('journal_mode = WAL')
  } catch (error) {
    if ((error as {code?: string}).code !== 'SQLITE_BUSY') throw error
    throw new JarvisError(`${file} is open in another process, most likely a running jarvis serve: stop it, then run the restore again`, {
      code: 'IN_USE',
      exit: ExitCode.locked,
      data: {file},
    })
  } finally {
    db.close()
  }
}

/**
 * Brings a backup back as the data directory's database. Stop the server first. A database already there is
 * refused unless `force`, and then moved aside (with its -wal and -shm) under `<name>.replaced-<time>`.
 */
export async function restoreData(options: StorageTarget & {file: string; force?: boolean; now?: Date; warn?: (message: string) => void}): Promise<RestoreResult> {
  const file = resolve(options.file)
  if (options.databaseUrl) return restoreIntoDatabase(file, options.databaseUrl, options.force, options.warn)
  checkBackup(file)
  const dataDir = resolve(options.dataDir ?? defaultDataDir())
  makeDataDir(dataDir)
  const target = join(dataDir, SQLITE_FILE_NAME)
  const exists = await stat(target).then(
    () => true,
    () => false,
  )
  let movedAside: string | undefined
  if (exists) {
    if (!options.force) throw new BadInputError(`${target} exists: stop the server, then run again with --force (it is moved aside, not deleted)`, {file: target})
    assertNotOpen(target)
    movedAside = `${target}.replaced-${(options.now ?? new Date()).toISOString().replace(/[-:.]/g, '')}`
    for (const suffix of ['-wal', '-shm']) await rename(`${target}${suffix}`, `${movedAside}${suffix}`).catch(() => {})
    await rename(target, movedAside)
  }
  const partial = `${target}.restoring`
  await copyFile(file, partial)
  await fsyncFile(partial)
  await rename(partial, target)
  await fsyncDir(dataDir)
  return {file, dataDir, ...(movedAside ? {movedAside} : {})}
}
