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
import {mkdirSync, rmSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import type Database from 'better-sqlite3'

import {nexusDir} from './root.js'

const kept: object[] = []

/** The native module is loaded at the first open, not when this module is: importing it costs a command nothing. */
let DatabaseClass: typeof Database | undefined
const loadDatabase = () => (DatabaseClass ??= createRequire(import.meta.url)('better-sqlite3') as typeof Database)

function keep<T extends object>(handle: T): T {
  kept.push(handle)
  return handle
}

/** `new Database(file, options)` whose databases, statements and iterators live until the process exits. */
export function openSqlite(file: string, options?: Database.Options): Database.Database {
  const db = keep(new (loadDatabase())(file, options))
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

/** The SQLite database `.nexus/<rel>` (created with its folder when missing), opened with `openSqlite`. */
export function openNexusSqlite(root: string, rel: string): Database.Database {
  const file = join(nexusDir(root), rel)
  mkdirSync(dirname(file), {recursive: true})
  return openSqlite(file)
}

/** Removes the SQLite database `.nexus/<rel>` with its journal files (a cache found unusable, to be built again). */
export function removeNexusSqlite(root: string, rel: string): void {
  const file = join(nexusDir(root), rel)
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, {force: true})
}
