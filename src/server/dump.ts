/**
 * `jarvis serve export` and `jarvis serve import`: one workspace's whole memory as JSON Lines — a header line, then
 * one line per row of the storage (SQLite or PostgreSQL: the same rows) (files with their revisions, events with
 * their ids, the active project, the workspace's id and change sequence, its keys as hashes) — so it moves to another
 * data directory, database or workspace with nothing lost, and a client syncs on against the copy with nothing to
 * transfer. A workspace's keys live in the default workspace's storage (docs/decisions/workspaces.md): they are
 * dumped from there, and imported there, as keys of the workspace imported into.
 */
import {createInterface} from 'node:readline'
import type {Readable} from 'node:stream'

import {BadInputError} from '../errors.js'
import {KEY_COLUMNS, type KeyRow, toKey} from './storage/key-rows.js'
import {assertServerData, type OpenedStorage, openStorage, type StorageTarget, withStorage, workspaceExists} from './storage/open.js'
import {SQLITE_SCHEMA_VERSION} from './storage/sqlite.js'
import {DUMP_TABLES, type DumpRow, type DumpTable, WORKSPACE_TABLES} from './storage/sqlite-dump.js'
import {type ApiKey, KEY_ROLES} from './storage/types.js'
import {checkWorkspaceName, DEFAULT_WORKSPACE} from './storage/workspace-name.js'

const DUMP_FORMAT = 1

export type DumpCounts = Record<DumpTable, number>

export interface WorkspaceOption {
  /** The workspace to export or import into; default the default workspace. */
  workspace?: string
}

/** The workspace's storage and the default one's (the same storage for the default workspace), closed after `use`. */
async function withWorkspace<T>(target: StorageTarget, workspace: string, use: (storage: OpenedStorage, root: OpenedStorage) => Promise<T>): Promise<T> {
  if (workspace === DEFAULT_WORKSPACE) return withStorage(target, (root) => use(root, root))
  return withStorage(target, async (root) => {
    const storage = await openStorage(target, {workspace})
    try {
      return await use(storage, root)
    } finally {
      await storage.close()
    }
  })
}

/** Writes the dump of one workspace line by line through `write` (which may wait for the output to drain). */
export async function exportData(options: StorageTarget & WorkspaceOption & {write: (line: string) => Promise<void> | void; now?: Date}): Promise<DumpCounts> {
  const workspace = checkWorkspaceName(options.workspace ?? DEFAULT_WORKSPACE, '--workspace')
  await assertServerData(options)
  if (!(await workspaceExists(options, workspace))) {
    throw new BadInputError(`--workspace: there is no workspace ${JSON.stringify(workspace)} on this server yet (a workspace is made at the first request of one of its keys): jarvis serve token list shows the keys and their workspaces`, {field: 'workspace'})
  }
  const counts = Object.fromEntries(DUMP_TABLES.map((table) => [table, 0])) as DumpCounts
  await withWorkspace(options, workspace, async (storage, root) => {
    await options.write(JSON.stringify({jarvis_dump: DUMP_FORMAT, schema: SQLITE_SCHEMA_VERSION, workspace, exported_at: (options.now ?? new Date()).toISOString()}))
    // The default workspace's rows in one read; another's memory, then its keys from the default workspace's storage.
    const parts = storage === root ? [root.dumpRows(DUMP_TABLES, workspace)] : [storage.dumpRows(WORKSPACE_TABLES), root.dumpRows(['api_keys'], workspace)]
    for (const rows of parts) {
      for await (const row of rows) {
        await options.write(JSON.stringify(row))
        counts[row.table]++
      }
    }
  })
  return counts
}

/**
 * Loads a dump (`source` names it in messages) into a workspace that holds no memory yet (the default one: a data
 * directory or database that holds none); its keys become keys of that workspace. All or nothing.
 */
export async function importData(options: StorageTarget & WorkspaceOption & {input: Readable; source: string}): Promise<DumpCounts> {
  const workspace = checkWorkspaceName(options.workspace ?? DEFAULT_WORKSPACE, '--workspace')
  return withWorkspace(options, workspace, async (storage, root) => {
    const keys: {key: ApiKey; tokenHash: string}[] = []
    const rows = storage === root ? dumpRows(options.input, options.source, workspace) : workspaceRows(dumpRows(options.input, options.source, workspace), root, workspace, keys)
    const counts = await storage.loadRows(rows).catch((error: unknown) => {
      if (error instanceof BadInputError) throw error
      throw new BadInputError(`${(error as Error).message}; nothing was imported`, {file: options.source})
    })
    // Checked against the default workspace's keys while the memory's transaction was still open (workspaceRows).
    for (const {key, tokenHash} of keys) await root.addKey(key, tokenHash)
    counts.api_keys = keys.length + (storage === root ? counts.api_keys : 0)
    return counts
  })
}

/**
 * The rows of a dump for a workspace other than the default one: its memory rows go on to its own storage, its keys
 * are held back (into `keys`) for the default workspace's storage. Before the first key (or the end) the default
 * workspace's keys are checked, so that the memory is not imported when its keys cannot be: none of the workspace
 * yet, and none with a dumped key's id or token.
 */
async function* workspaceRows(rows: AsyncIterable<{row: DumpRow; where: string}>, root: OpenedStorage, workspace: string, keys: {key: ApiKey; tokenHash: string}[]): AsyncGenerator<{row: DumpRow; where: string}> {
  const held: {row: Record<string, unknown>; where: string}[] = []
  for await (const item of rows) {
    if (item.row.table === 'api_keys') held.push({row: item.row.row, where: item.where})
    else yield item
  }
  const existing = await root.listKeys()
  if (existing.some((key) => key.workspace === workspace)) {
    throw new BadInputError(`the workspace ${workspace} already has keys on this server: import into a new workspace; nothing was imported`, {field: 'workspace'})
  }
  for (const {row, where} of held) {
    const key = keyOf(row, where, workspace)
    const clash = existing.find((other) => other.id === key.key.id) ?? (await root.keyByTokenHash(key.tokenHash))
    if (clash) throw new BadInputError(`${where}: the key ${key.key.id} is on this server already (workspace ${clash.workspace}): a dump's keys go into one workspace only; nothing was imported`, {line: where})
    keys.push(key)
  }
}

const KEY_FIELDS = new Set([...KEY_COLUMNS.split(', '), 'token_hash'])

/** A dumped key row as the key it is, of `workspace`; bad input naming the line when it is not one. */
function keyOf(row: Record<string, unknown>, where: string, workspace: string): {key: ApiKey; tokenHash: string} {
  const unknown = Object.keys(row).find((name) => !KEY_FIELDS.has(name))
  if (unknown !== undefined) throw new BadInputError(`${where}: api_keys has no column ${JSON.stringify(unknown)}; nothing was imported`, {line: where})
  const text = (name: string, nullable = false) => typeof row[name] === 'string' || (nullable && (row[name] === null || row[name] === undefined))
  const valid = text('id') && text('agent_id') && text('created_at') && text('expires_at', true) && text('revoked_at', true) && KEY_ROLES.includes(row.role as ApiKey['role']) && /^[0-9a-f]{64}$/.test(String(row.token_hash))
  if (!valid) throw new BadInputError(`${where}: not a key row (id, token_hash, agent_id, role, created_at, expires_at, revoked_at); nothing was imported`, {line: where})
  const key = toKey({...(row as unknown as KeyRow), expires_at: (row.expires_at as string | null) ?? null, revoked_at: (row.revoked_at as string | null) ?? null, workspace})
  return {key, tokenHash: row.token_hash as string}
}

/** The rows of a dump, checked line by line; key rows as keys of `workspace` (the one imported into). */
async function* dumpRows(input: Readable, source: string, workspace: string): AsyncGenerator<{row: DumpRow; where: string}> {
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
      if (header.schema === undefined) throw new BadInputError(`${where}: the header has no schema version (jarvis serve export writes one); nothing was imported`, {file: source, line})
      if (!Number.isSafeInteger(header.schema) || (header.schema as number) < 1) {
        throw new BadInputError(`${where}: the header's schema version is ${JSON.stringify(header.schema)}, not a whole number from 1 (jarvis serve export writes one); nothing was imported`, {file: source, line})
      }
      if ((header.schema as number) > SQLITE_SCHEMA_VERSION) {
        throw new BadInputError(`${where}: the dump comes from a newer jarvis (schema ${String(header.schema)}, this one reads up to ${SQLITE_SCHEMA_VERSION}); upgrade jarvis first`, {file: source, line})
      }
      continue
    }
    const row = value as Partial<DumpRow>
    if (typeof row?.table !== 'string' || !(DUMP_TABLES as readonly string[]).includes(row.table) || typeof row.row !== 'object' || row.row === null) {
      throw new BadInputError(`${where}: expected {"table": one of ${DUMP_TABLES.join(', ')}, "row": {…}}; nothing was imported`, {file: source, line})
    }
    if (row.table === 'api_keys') row.row = {...row.row, workspace}
    yield {row: row as DumpRow, where}
  }
  if (line === 0) throw new BadInputError(`${source}: empty: nothing to import`, {file: source})
}
