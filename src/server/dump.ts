/**
 * `jarvis serve export` and `jarvis serve import`: a server's whole memory as JSON Lines — a header line, then one
 * line per row of the storage (SQLite or PostgreSQL: the same rows) (files with their revisions, events with their ids, the server's id and change
 * sequence, keys as hashes) — so it moves to another data directory or database with nothing lost, and a client syncs on
 * against the copy with nothing to transfer.
 */
import {createInterface} from 'node:readline'
import type {Readable} from 'node:stream'

import {BadInputError} from '../errors.js'
import {type StorageTarget, withStorage} from './storage/open.js'
import {SQLITE_SCHEMA_VERSION} from './storage/sqlite.js'
import {DUMP_TABLES, type DumpRow, type DumpTable} from './storage/sqlite-dump.js'

const DUMP_FORMAT = 1

export type DumpCounts = Record<DumpTable, number>

/** Writes the dump line by line through `write` (which may wait for the output to drain). */
export async function exportData(options: StorageTarget & {write: (line: string) => Promise<void> | void; now?: Date}): Promise<DumpCounts> {
  const counts = Object.fromEntries(DUMP_TABLES.map((table) => [table, 0])) as DumpCounts
  await withStorage(options, async (storage) => {
    await options.write(JSON.stringify({jarvis_dump: DUMP_FORMAT, schema: SQLITE_SCHEMA_VERSION, exported_at: (options.now ?? new Date()).toISOString()}))
    for await (const row of storage.dumpRows()) {
      await options.write(JSON.stringify(row))
      counts[row.table]++
    }
  })
  return counts
}

/** Loads a dump (`source` names it in messages) into a data directory that holds no memory yet. */
export async function importData(options: StorageTarget & {input: Readable; source: string}): Promise<DumpCounts> {
  return withStorage(options, (storage) =>
    storage.loadRows(dumpRows(options.input, options.source)).catch((error: unknown) => {
      if (error instanceof BadInputError) throw error
      throw new BadInputError(`${(error as Error).message}; nothing was imported`, {file: options.source})
    }),
  )
}

async function* dumpRows(input: Readable, source: string): AsyncGenerator<{row: DumpRow; where: string}> {
  let line = 0
  for await (const text of createInterface({input, crlfDelay: Infinity})) {
    line++
    if (text.trim() === '') continue
    const where = `${source}:${line}`
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (error) {
      throw new BadInputError(`${where}: not JSON: ${(error as Error).message}; nothing was imported`, {file: source, line})
    }
    if (line === 1) {
      const header = value as {jarvis_dump?: unknown; schema?: unknown}
      if (header?.jarvis_dump !== DUMP_FORMAT) throw new BadInputError(`${where}: not a jarvis dump (its first line comes from jarvis serve export); nothing was imported`, {file: source, line})
      if (typeof header.schema !== 'number' || header.schema > SQLITE_SCHEMA_VERSION) {
        throw new BadInputError(`${where}: the dump comes from a newer jarvis (schema ${String(header.schema)}, this one reads up to ${SQLITE_SCHEMA_VERSION}); upgrade jarvis first`, {file: source, line})
      }
      continue
    }
    const row = value as Partial<DumpRow>
    if (typeof row?.table !== 'string' || !(DUMP_TABLES as readonly string[]).includes(row.table) || typeof row.row !== 'object' || row.row === null) {
      throw new BadInputError(`${where}: expected {"table": one of ${DUMP_TABLES.join(', ')}, "row": {…}}; nothing was imported`, {file: source, line})
    }
    yield {row: row as DumpRow, where}
  }
  if (line === 0) throw new BadInputError(`${source}: empty: nothing to import`, {file: source})
}
