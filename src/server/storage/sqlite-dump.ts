/**
 * A whole SQLite storage as rows, and back: what `jarvis serve export|import` move between data directories (and,
 * once there is one, between backends: the tables and columns are the protocol's, not SQLite's). Files keep their
 * revisions and sequence numbers, events their ids, the server its id and change sequence, so a client syncs on
 * against the imported copy with nothing to transfer. The full-text index is rebuilt, never dumped.
 */
import type Database from 'better-sqlite3'

import {ftsText} from './fts.js'
import {DEFAULT_WORKSPACE, isWorkspaceName} from './workspace-name.js'

/** Every table a dump carries, in the order an import writes them. */
export const DUMP_TABLES = ['server_state', 'files', 'idempotency_keys', 'memory_events', 'memory_pins', 'deleted_events', 'api_keys', 'audit_log'] as const
export type DumpTable = (typeof DUMP_TABLES)[number]

export interface DumpRow {
  table: DumpTable
  row: Record<string, unknown>
}

/** How many rows of each table a storage's dump holds, read in the transaction its rows are read in. */
export interface DumpTally {
  counts: Partial<Record<DumpTable, number>>
}

/** What a storage's dump yields: first its tally, then its rows. */
export type DumpItem = DumpTally | DumpRow

/** The order rows are dumped in, per table (the same for every backend). */
export const DUMP_ORDER: Record<DumpTable, string> = {
  server_state: 'id',
  files: 'seq, path',
  idempotency_keys: 'seq, key',
  memory_events: 'seq',
  memory_pins: 'scope, dedupe_key',
  deleted_events: 'deleted_at, identity',
  api_keys: 'created_at, id',
  audit_log: 'seq',
}

/** The tables of one workspace's own storage: everything but the keys, which all live in the default workspace's. */
export const WORKSPACE_TABLES = DUMP_TABLES.filter((table) => table !== 'api_keys')

/**
 * The WHERE of a table's dump: the keys of one workspace (keys of every workspace share the default one's table), or
 * of every workspace when `keysOf` is null (a backup). `keysOf` is a checked workspace name
 * (storage/workspace-name.ts: letters, digits, `-`), safe inside quotes.
 */
export function dumpFilter(table: DumpTable, keysOf: string | null): string {
  if (keysOf === null || table !== 'api_keys') return ''
  if (!isWorkspaceName(keysOf)) throw new Error(`not a workspace name: ${JSON.stringify(keysOf)}`)
  return `WHERE workspace = '${keysOf}'`
}

/**
 * The tally of `tables` (the keys of workspace `keysOf` only; null: every workspace's), then every row of them, read
 * in one transaction: a consistent copy even while a server writes.
 */
export function* exportRows(db: Database.Database, tables: readonly DumpTable[] = DUMP_TABLES, keysOf: string | null = DEFAULT_WORKSPACE): Generator<DumpItem> {
  db.exec('BEGIN DEFERRED')
  try {
    const counts: DumpTally['counts'] = {}
    for (const table of tables) counts[table] = db.prepare<[], {n: number}>(`SELECT COUNT(*) AS n FROM ${table} ${dumpFilter(table, keysOf)}`).get()?.n ?? 0
    yield {counts}
    for (const table of tables) {
      for (const row of db.prepare<[], Record<string, unknown>>(`SELECT * FROM ${table} ${dumpFilter(table, keysOf)} ORDER BY ${DUMP_ORDER[table]}`).iterate()) yield {table, row}
    }
  } finally {
    db.exec('COMMIT')
  }
}

/** The tables an import must find empty: it goes only into a storage with no file, no event, no audit entry and no key of its workspace. */
export const EMPTY_BEFORE_IMPORT = `SELECT (SELECT COUNT(*) FROM files) + (SELECT COUNT(*) FROM memory_events) + (SELECT COUNT(*) FROM audit_log) + (SELECT COUNT(*) FROM api_keys ${dumpFilter('api_keys', DEFAULT_WORKSPACE)}) AS n`

/** True when the storage holds no file, no event, no audit entry and no key of the default workspace (an import goes only into such a one). */
export function isEmpty(db: Database.Database): boolean {
  return db.prepare<[], {n: number}>(EMPTY_BEFORE_IMPORT).get()?.n === 0
}

/**
 * Writes rows as they come, all in one transaction (all or nothing); the caller checked that the storage is
 * empty. A row of an unknown table or with an unknown column is refused by name (`where` says which line).
 */
export async function importRows(db: Database.Database, rows: AsyncIterable<{row: DumpRow; where: string}>): Promise<Record<DumpTable, number>> {
  const columns = new Map<string, Set<string>>(DUMP_TABLES.map((table) => [table, new Set(db.prepare<[], {name: string}>(`SELECT name FROM pragma_table_info('${table}')`).all().map((c) => c.name))]))
  const counts = Object.fromEntries(DUMP_TABLES.map((table) => [table, 0])) as Record<DumpTable, number>
  const statements = new Map<string, Database.Statement>()
  const ftsInsert = db.prepare<[number, string, string]>('INSERT INTO memory_events_fts (rowid, body, key) VALUES (?, ?, ?)')
  db.exec('BEGIN IMMEDIATE')
  try {
    for await (const {row: {table, row}, where} of rows) {
      const known = columns.get(table)
      if (!known) throw new Error(`${where}: unknown table ${JSON.stringify(table)}`)
      const names = Object.keys(row)
      const unknown = names.find((name) => !known.has(name))
      if (unknown !== undefined) throw new Error(`${where}: ${table} has no column ${JSON.stringify(unknown)}`)
      // The one row of server_state exists from the first migration: it is replaced, not added.
      const sql =
        table === 'server_state'
          ? `UPDATE server_state SET ${names.filter((n) => n !== 'id').map((n) => `${n} = @${n}`).join(', ')} WHERE id = 1`
          : `INSERT INTO ${table} (${names.join(', ')}) VALUES (${names.map((n) => `@${n}`).join(', ')})`
      let statement = statements.get(sql)
      if (!statement) statements.set(sql, (statement = db.prepare(sql)))
      try {
        statement.run(row)
      } catch (error) {
        throw new Error(`${where}: ${table}: ${(error as Error).message}`)
      }
      if (table === 'memory_events') ftsInsert.run(row.seq as number, ftsText(String(row.content_md)), String(row.dedupe_key))
      counts[table]++
    }
    db.exec('COMMIT')
  } catch (error) {
    db.exec('ROLLBACK')
    throw error
  }
  return counts
}
