/**
 * Opening a SQLite database through better-sqlite3 so that none of its native objects is ever garbage collected.
 *
 * better-sqlite3 12 (the last major that runs on Node 20) aborts the whole process on Node 24 when the garbage
 * collector frees one of its objects — a database, a statement or an iterator: the native destructor asks Node for
 * the current environment, gets none, and an assertion fails (`(env) != nullptr` in RemoveEnvironmentCleanupHook).
 * It happens whenever a collection runs outside JavaScript, so a server died at a random moment after it had made a
 * throwaway statement (`db.pragma()` makes one per call). better-sqlite3 13 fixes it but needs Node 22.
 *
 * So every such object is kept reachable until the process exits, when Node's own clean-up frees them without
 * the garbage collector. The cost is a few hundred bytes per statement; callers prepare their statements once (the
 * event log's filter cache pads its lists so that the number of distinct statements stays small).
 *
 * Shared by the server's storage and the search index (`.nexus/search/index.sqlite`): one way to open SQLite.
 */
import {existsSync, mkdirSync, rmSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import type Database from 'better-sqlite3'

import {nexusDir} from './root.js'

const kept: object[] = []

/** The native module is loaded at the first open, not when this module is: importing it costs a command nothing. */
let DatabaseClass: typeof Database | undefined
/**
 * Where better-sqlite3's own build put its addon, named to it directly: left to find it, it asks the `bindings`
 * package, which probes a dozen paths (about 1 ms of every command that opens a database). Absent (a debug build,
 * another layout), it is left to find it as usual.
 */
let addonPath: string | undefined
const loadDatabase = () => {
  if (DatabaseClass) return DatabaseClass
  const require = createRequire(import.meta.url)
  const built = join(dirname(require.resolve('better-sqlite3')), '..', 'build', 'Release', 'better_sqlite3.node')
  addonPath = existsSync(built) ? built : undefined
  return (DatabaseClass = require('better-sqlite3') as typeof Database)
}

function keep<T extends object>(handle: T): T {
  kept.push(handle)
  return handle
}

/** `new Database(file, options)` whose databases, statements and iterators live until the process exits. */
export function openSqlite(file: string, options?: Database.Options): Database.Database {
  const SqliteDatabase = loadDatabase()
  const db = keep(new SqliteDatabase(file, addonPath === undefined || options?.nativeBinding !== undefined ? options : {...options, nativeBinding: addonPath}))
  const prepare = db.prepare.bind(db)
  db.prepare = ((sql: string) => {
    const statement = keep(prepare(sql))
    const iterate = statement.iterate.bind(statement)
    statement.iterate = ((...params: unknown[]) => keep(iterate(...params))) as typeof statement.iterate
    return statement
  }) as typeof db.prepare
  // better-sqlite3's own pragma() prepares a new statement on every call; these are prepared once per text.
  const pragmas = new Map<string, Database.Statement>()
  db.pragma = ((source: string, pragmaOptions?: Database.PragmaOptions) => {
    let statement = pragmas.get(source)
    if (statement === undefined) pragmas.set(source, (statement = db.prepare(`PRAGMA ${source}`)))
    if (!statement.reader) {
      statement.run()
      return []
    }
    return pragmaOptions?.simple ? statement.pluck(true).get() : statement.pluck(false).all()
  }) as typeof db.pragma
  return db
}

/** SQLite's primary result codes that say something of the database file itself. */
const FILE_ERRORS = {IOERR: 10, CORRUPT: 11, CANTOPEN: 14, NOTADB: 26} as const

/** Whether a SQLite error is one of `names`: better-sqlite3 names its code (`SQLITE_IOERR_READ`…), node:sqlite numbers it. */
export function isSqliteFileError(error: unknown, names: Array<keyof typeof FILE_ERRORS>): boolean {
  const {code, errcode} = error as {code?: unknown; errcode?: unknown}
  if (typeof errcode === 'number') return names.some((name) => FILE_ERRORS[name] === (errcode & 0xff))
  return typeof code === 'string' && names.some((name) => code === `SQLITE_${name}` || code.startsWith(`SQLITE_${name}_`))
}

/** Removes the SQLite database `.nexus/<rel>` with its journal files (a cache found unusable, to be built again). */
export function removeNexusSqlite(root: string, rel: string): void {
  const file = join(nexusDir(root), rel)
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, {force: true})
}

/** A prepared statement answering rows as arrays of column values. */
export interface RowStatement {
  run(...params: unknown[]): void
  get(...params: unknown[]): unknown[] | undefined
  all(...params: unknown[]): unknown[][]
}

/**
 * The little of SQLite that a cache in `.nexus/` needs (the search index), on whichever driver this Node can load:
 * better-sqlite3, which jarvis ships, or — where its native module was built for another Node (a CLI run by Node 24
 * from an install made with Node 20) — Node's own `node:sqlite`, which has FTS5 too.
 */
export interface RowDatabase {
  exec(sql: string): void
  prepare(sql: string): RowStatement
  /** Runs `body` in a `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back when it throws. */
  immediate<T>(body: () => T): T
  close(): void
}

/** node:sqlite's part that RowDatabase uses (typed here: @types/node for Node 20 does not know the module). */
interface NodeSqliteDatabase {
  exec(sql: string): void
  prepare(sql: string): {run(...params: unknown[]): unknown; get(...params: unknown[]): unknown; all(...params: unknown[]): unknown[]; setReturnArrays?(on: boolean): void}
  close(): void
}

function fromBetterSqlite(db: Database.Database): RowDatabase {
  return {
    exec: (sql) => void db.exec(sql),
    prepare(sql) {
      const statement = db.prepare(sql)
      if (!statement.reader) return {run: (...params) => void statement.run(...params), get: () => undefined, all: () => []}
      statement.raw(true)
      return {run: (...params) => void statement.run(...params), get: (...params) => statement.get(...params) as unknown[] | undefined, all: (...params) => statement.all(...params) as unknown[][]}
    },
    immediate: (body) => db.transaction(body).immediate(),
    close: () => void db.close(),
  }
}

function fromNodeSqlite(db: NodeSqliteDatabase): RowDatabase {
  const arrays = (row: unknown): unknown[] => (Array.isArray(row) ? row : Object.values(row as object))
  return {
    exec: (sql) => db.exec(sql),
    prepare(sql) {
      const statement = db.prepare(sql)
      statement.setReturnArrays?.(true)
      return {
        run: (...params) => void statement.run(...params),
        get: (...params) => {
          const row = statement.get(...params)
          return row === undefined ? undefined : arrays(row)
        },
        all: (...params) => statement.all(...params).map(arrays),
      }
    },
    immediate(body) {
      db.exec('BEGIN IMMEDIATE')
      try {
        const result = body()
        db.exec('COMMIT')
        return result
      } catch (error) {
        // SQLite may have rolled back already (a full disk): the error that matters is the first one.
        try {
          db.exec('ROLLBACK')
        } catch {
          // nothing left to roll back
        }
        throw error
      }
    },
    close: () => db.close(),
  }
}

/** False once better-sqlite3 failed to load in this process (another Node's build): node:sqlite from then on. */
let betterSqliteLoads = true

/** The native module cannot load in this Node: built for another version (its ABI), or missing its binary. */
const nativeModuleFailed = (error: unknown) => (error as {code?: unknown}).code === 'ERR_DLOPEN_FAILED' || /NODE_MODULE_VERSION|Could not locate the bindings file/.test(String((error as Error).message))

/** Opens `file` (or `:memory:`) as a RowDatabase: better-sqlite3 through openSqlite, else node:sqlite. */
export function openRowDatabase(file: string): RowDatabase {
  if (betterSqliteLoads) {
    try {
      return fromBetterSqlite(openSqlite(file))
    } catch (error) {
      if (!nativeModuleFailed(error) || !canRequire(createRequire(import.meta.url), 'node:sqlite')) throw error
      betterSqliteLoads = false
    }
  }
  const {DatabaseSync} = createRequire(import.meta.url)('node:sqlite') as {DatabaseSync: new (file: string) => NodeSqliteDatabase}
  return fromNodeSqlite(new DatabaseSync(file))
}

function canRequire(require: NodeJS.Require, id: string): boolean {
  try {
    require(id)
    return true
  } catch {
    return false
  }
}

/**
 * The SQLite database `.nexus/<rel>` (created with its folder when missing), as a RowDatabase. The folders are made
 * in a tree that is there, never the tree itself: a long-lived watch opening its index just as the tree is removed
 * does not make the removed tree again.
 */
export function openNexusRowDatabase(root: string, rel: string): RowDatabase {
  const file = join(nexusDir(root), rel)
  if (!existsSync(root)) throw Object.assign(new Error(`ENOENT: no tree at ${root}`), {code: 'ENOENT'})
  mkdirSync(dirname(file), {recursive: true})
  return openRowDatabase(file)
}
