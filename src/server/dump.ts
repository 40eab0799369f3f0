/**
 * `jarvis serve export` and `jarvis serve import`: one workspace's whole memory as JSON Lines — a header line (with
 * the number of rows of each table), then one line per row of the storage (SQLite or PostgreSQL: the same rows)
 * (files with their revisions, events with their ids, the active project, the workspace's id and change sequence, its
 * keys as hashes), then an end line with the rows written — so it moves to another data directory, database or
 * workspace with nothing lost, and a client syncs on against the copy with nothing to transfer. A dump that was cut
 * (an exporter that died, a copy that stopped) is told by its counts and refused whole. A workspace's keys live in
 * the default workspace's storage (docs/decisions/workspaces.md): they are dumped from there, and imported there, as
 * keys of the workspace imported into. The default workspace's dump also carries the tokens of the server's tokens
 * file, as keys, so that the clients using them go on with the copy.
 */
import {existsSync} from 'node:fs'
import {stat} from 'node:fs/promises'
import {join} from 'node:path'
import {createInterface} from 'node:readline'
import type {Readable} from 'node:stream'

import createDebug from 'debug'

import {BadInputError} from '../errors.js'
import {hashText} from '../store/hash.js'
import {defaultDataDir, readTokensFile, TOKENS_FILE_NAME} from './config.js'
import {KEY_COLUMNS, type KeyRow, toKey} from './storage/key-rows.js'
import {assertServerData, type OpenedStorage, type OpenOptions, openStorage, removeWorkspaceStorage, type StorageTarget, withStorage, workspaceExists} from './storage/open.js'
import {SQLITE_SCHEMA_VERSION} from './storage/sqlite.js'
import {DUMP_TABLES, type DumpItem, type DumpRow, type DumpTable, WORKSPACE_TABLES} from './storage/sqlite-dump.js'
import {type ApiKey, KEY_ROLES} from './storage/types.js'
import {checkWorkspaceName, DEFAULT_WORKSPACE, isWorkspaceName} from './storage/workspace-name.js'

const debug = createDebug('jarvis:server:dump')

/** Format 2 counts its rows (in the header and an end line); format 1, before it, did not. */
const DUMP_FORMAT = 2
const UNCOUNTED_FORMAT = 1
/** The header's mark of a backup's dump: it holds the keys of every workspace, each keeping its own. */
const EVERY_WORKSPACE = 'every workspace'

export type DumpCounts = Record<DumpTable, number>

const zeroCounts = (): DumpCounts => Object.fromEntries(DUMP_TABLES.map((table) => [table, 0])) as DumpCounts
const total = (counts: DumpCounts): number => DUMP_TABLES.reduce((sum, table) => sum + counts[table], 0)

export interface WorkspaceOption {
  /** The workspace to export or import into; default the default workspace. */
  workspace?: string
}

/** The workspace's storage and the default one's (the same storage for the default workspace), closed after `use`. */
async function withWorkspace<T>(target: StorageTarget, workspace: string, options: OpenOptions, use: (storage: OpenedStorage, root: OpenedStorage) => Promise<T>): Promise<T> {
  if (workspace === DEFAULT_WORKSPACE) return withStorage(target, (root) => use(root, root), options)
  return withStorage(
    target,
    async (root) => {
      const storage = await openStorage(target, {...options, workspace})
      try {
        return await use(storage, root)
      } finally {
        await storage.close()
      }
    },
    options,
  )
}

export interface ExportOptions extends StorageTarget, WorkspaceOption {
  /** Takes each line (it may wait for the output to drain). */
  write: (line: string) => Promise<void> | void
  now?: Date
  /** The tokens file whose tokens go in as keys (`--tokens`); default the data directory's tokens.json, if any. */
  tokensFile?: string
  /** The keys of every workspace, each keeping its own (a backup); default the keys of the workspace exported. */
  everyWorkspaceKeys?: boolean
}

export interface ExportSummary {
  counts: DumpCounts
  /** The tokens file whose tokens went in as keys (counted with the keys), and how many. */
  tokensFile?: {file: string; keys: number}
}

/** Writes the dump of one workspace line by line through `write`. Reads only: an older schema is refused, never upgraded. */
export async function exportData(options: ExportOptions): Promise<ExportSummary> {
  const workspace = checkWorkspaceName(options.workspace ?? DEFAULT_WORKSPACE, '--workspace')
  if (options.tokensFile !== undefined && workspace !== DEFAULT_WORKSPACE) {
    throw new BadInputError(`--tokens: the tokens file's tokens open the default workspace, not ${workspace}: give --tokens to the export of the default workspace`, {field: 'tokens'})
  }
  await assertServerData(options)
  if (!(await workspaceExists(options, workspace))) {
    throw new BadInputError(`--workspace: there is no workspace ${JSON.stringify(workspace)} on this server yet (a workspace is made at the first request of one of its keys): jarvis serve token list shows the keys and their workspaces`, {field: 'workspace'})
  }
  return withWorkspace(options, workspace, {migrate: false}, async (storage, root) => {
    const tokens = workspace === DEFAULT_WORKSPACE ? await tokensFileKeys(options, root) : undefined
    const keysOf = options.everyWorkspaceKeys ? null : workspace
    // The default workspace's rows in one read; another's memory, then its keys from the default workspace's storage.
    const sources = storage === root ? [root.dumpRows(DUMP_TABLES, keysOf)] : [storage.dumpRows(WORKSPACE_TABLES), root.dumpRows(['api_keys'], keysOf)]
    const readers = sources.map((source) => (Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]()))
    try {
      // Each source's tally comes first, read in the transaction its rows are read in: the header counts what follows.
      const expected = zeroCounts()
      for (const reader of readers) {
        const first = await reader.next()
        if (first.done || !('counts' in first.value)) throw new Error('a storage dump did not start with its tally')
        for (const table of DUMP_TABLES) expected[table] += first.value.counts[table] ?? 0
      }
      expected.api_keys += tokens?.rows.length ?? 0
      const header = {jarvis_dump: DUMP_FORMAT, schema: SQLITE_SCHEMA_VERSION, workspace, exported_at: (options.now ?? new Date()).toISOString(), rows: expected, ...(keysOf === null ? {keys: EVERY_WORKSPACE} : {})}
      await options.write(JSON.stringify(header))
      const counts = zeroCounts()
      for (const reader of readers) {
        for await (const row of withKeys(remaining(reader), tokens?.rows ?? [])) {
          await options.write(JSON.stringify(row))
          counts[row.table]++
        }
      }
      // Written last, once everything was: a dump without it was cut.
      await options.write(JSON.stringify({jarvis_dump_end: counts}))
      return {counts, ...(tokens && tokens.rows.length > 0 ? {tokensFile: {file: tokens.file, keys: tokens.rows.length}} : {})}
    } finally {
      // A reader left before its end (an error, a closed output) ends its transaction.
      for (const reader of readers) await reader.return?.()
    }
  })
}

/** The rows a storage dump's reader has left after its tally. */
async function* remaining(reader: Iterator<DumpItem> | AsyncIterator<DumpItem>): AsyncGenerator<DumpRow> {
  for (let item = await reader.next(); !item.done; item = await reader.next()) {
    if ('table' in item.value) yield item.value
  }
}

/** `rows` with `keys` among its api_keys rows, in the dump's order of keys (created_at, id), before any later table. */
async function* withKeys(rows: AsyncIterable<DumpRow>, keys: readonly DumpRow[]): AsyncGenerator<DumpRow> {
  const order = (row: DumpRow) => `${String(row.row.created_at)}\u0000${String(row.row.id)}`
  const pending = [...keys].sort((a, b) => (order(a) < order(b) ? -1 : 1))
  const keysAt = DUMP_TABLES.indexOf('api_keys')
  for await (const row of rows) {
    const at = DUMP_TABLES.indexOf(row.table)
    while (pending.length > 0 && (at > keysAt || (at === keysAt && order(pending[0]) < order(row)))) yield pending.shift() as DumpRow
    yield row
  }
  // No row of a later table came (no audit entry): the keys are the last rows.
  yield* pending
}

/**
 * The tokens of the server's tokens file as key rows of the default workspace — write keys, as the server takes them,
 * only their hashes, with their agents — so that a client using one goes on against the copy, whatever its backend.
 * The file is `--tokens`, or the data directory's tokens.json (the tokens `jarvis serve` makes and prints at its first
 * start) when the export reads a data directory. A token that is a key already is left out.
 */
async function tokensFileKeys(options: ExportOptions, root: OpenedStorage): Promise<{file: string; rows: DumpRow[]} | undefined> {
  const fromDataDir = options.databaseUrl === undefined || options.databaseUrl === ''
  const file = options.tokensFile ?? (fromDataDir ? join(options.dataDir ?? defaultDataDir(), TOKENS_FILE_NAME) : undefined)
  if (file === undefined || (options.tokensFile === undefined && !existsSync(file))) return undefined
  const tokens = await readTokensFile(file)
  // When the tokens were made: the file is written once, when the server makes it.
  const createdAt = (await stat(file)).mtime.toISOString()
  const rows: DumpRow[] = []
  for (const [token, agent] of Object.entries(tokens)) {
    const tokenHash = hashText(token)
    if ((await root.keyByTokenHash(tokenHash)) !== null || rows.some((row) => row.row.token_hash === tokenHash)) continue
    // Columns in the table's order, as a key row of either backend is dumped.
    rows.push({table: 'api_keys', row: {id: `key_${tokenHash.slice(0, 12)}`, token_hash: tokenHash, agent_id: agent, role: 'write', created_at: createdAt, expires_at: null, revoked_at: null, workspace: DEFAULT_WORKSPACE}})
  }
  return {file, rows}
}

export interface ImportOptions extends StorageTarget, WorkspaceOption {
  input: Readable
  /** Names the dump in messages (`<stdin>`, a file). */
  source: string
  /** Told what is worth knowing of an import that went through (a dump that could not be checked whole). */
  warn?: (message: string) => void
}

/**
 * Loads a dump (`source` names it in messages) into a workspace that holds no memory yet (the default one: a data
 * directory or database that holds none); its keys become keys of that workspace (a backup's keep their own). All or
 * nothing: a bad line, or a dump that was cut, imports nothing, and a workspace the import made is removed again.
 */
export async function importData(options: ImportOptions): Promise<DumpCounts> {
  const workspace = checkWorkspaceName(options.workspace ?? DEFAULT_WORKSPACE, '--workspace')
  const made = workspace !== DEFAULT_WORKSPACE && !(await workspaceExists(options, workspace))
  const warnings: string[] = []
  let counts: DumpCounts
  try {
    counts = await withWorkspace(options, workspace, {}, async (storage, root) => {
      const keys: DumpedKey[] = []
      const lines = dumpRows(options.input, options.source, workspace, warnings)
      const rows = storage === root ? lines : workspaceRows(lines, root, workspace, keys)
      const loaded = await storage.loadRows(rows).catch((error: unknown) => {
        if (error instanceof BadInputError) throw error
        throw new BadInputError(`${(error as Error).message}; nothing was imported`, {file: options.source})
      })
      // Checked against the default workspace's keys while the memory's transaction was still open (workspaceRows).
      for (const {key, tokenHash, there} of keys) {
        if (there === undefined) await root.addKey(key, tokenHash)
        else if (key.revokedAt !== null && there.revokedAt === null) await root.revokeKey(key.id, key.revokedAt)
      }
      if (storage !== root) loaded.api_keys = keys.length
      return loaded
    })
  } catch (error) {
    if (made) await removeMadeWorkspace(options, workspace)
    throw error
  }
  for (const warning of warnings) options.warn?.(warning)
  return counts
}

/**
 * After a failed import into a workspace that had no storage: the storage the import made goes, so that no workspace
 * is left behind — unless the workspace has keys on the server, whose next request opens (makes) it anyway, and a
 * server may have it open already. A clean-up that fails is no reason to hide why the import failed.
 */
async function removeMadeWorkspace(target: StorageTarget, workspace: string): Promise<void> {
  try {
    const keys = await withStorage(target, (root) => root.listKeys())
    if (!keys.some((key) => key.workspace === workspace)) await removeWorkspaceStorage(target, workspace)
  } catch (error) {
    debug('the workspace %s made by a failed import could not be removed: %s', workspace, (error as Error).message)
  }
}

/** A dumped key for the default workspace's storage; `there` when the same key (id, token, workspace) is there already. */
interface DumpedKey {
  key: ApiKey
  tokenHash: string
  there?: ApiKey
}

/**
 * The rows of a dump for a workspace other than the default one: its memory rows go on to its own storage, its keys
 * are held back (into `keys`) for the default workspace's storage. Before the first key (or the end) the default
 * workspace's keys are checked, so that the memory is not imported when its keys cannot be: no dumped key's id or
 * token may be another key's. A key that is there already, the same (a restored backup holds every workspace's keys),
 * stays as it is (revoked if the dump's copy is).
 */
async function* workspaceRows(rows: AsyncIterable<{row: DumpRow; where: string}>, root: OpenedStorage, workspace: string, keys: DumpedKey[]): AsyncGenerator<{row: DumpRow; where: string}> {
  const held: {row: Record<string, unknown>; where: string}[] = []
  for await (const item of rows) {
    if (item.row.table === 'api_keys') held.push({row: item.row.row, where: item.where})
    else yield item
  }
  const existing = await root.listKeys()
  for (const {row, where} of held) {
    const key = keyOf(row, where, workspace)
    const sameToken = await root.keyByTokenHash(key.tokenHash)
    if (sameToken !== null && sameToken.id === key.key.id && sameToken.workspace === workspace) {
      keys.push({...key, there: sameToken})
      continue
    }
    const clash = existing.find((other) => other.id === key.key.id) ?? sameToken
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

/** What the header line of a dump says. */
interface DumpHeader {
  /** How many rows of each table follow (format 2); undefined for a dump of format 1, which did not say. */
  rows?: DumpCounts
  /** A backup's: its keys keep their own workspaces. */
  everyWorkspaceKeys: boolean
}

/** The header line of a dump, checked; bad input naming the line when it is not one this jarvis reads. */
function readHeader(value: unknown, where: string, meta: {file: string; line: number}, workspace: string): DumpHeader {
  const header = value as {jarvis_dump?: unknown; schema?: unknown; rows?: unknown; keys?: unknown} | null
  const format = header?.jarvis_dump
  if (format !== DUMP_FORMAT && format !== UNCOUNTED_FORMAT) {
    if (typeof format === 'number' && format > DUMP_FORMAT) throw new BadInputError(`${where}: the dump comes from a newer jarvis (dump format ${format}, this one reads up to ${DUMP_FORMAT}); upgrade jarvis first`, meta)
    throw new BadInputError(`${where}: not a jarvis dump (its first line comes from jarvis serve export); nothing was imported`, meta)
  }
  if (header?.schema === undefined) throw new BadInputError(`${where}: the header has no schema version (jarvis serve export writes one); nothing was imported`, meta)
  if (!Number.isSafeInteger(header.schema) || (header.schema as number) < 1) {
    throw new BadInputError(`${where}: the header's schema version is ${JSON.stringify(header.schema)}, not a whole number from 1 (jarvis serve export writes one); nothing was imported`, meta)
  }
  if ((header.schema as number) > SQLITE_SCHEMA_VERSION) {
    throw new BadInputError(`${where}: the dump comes from a newer jarvis (schema ${String(header.schema)}, this one reads up to ${SQLITE_SCHEMA_VERSION}); upgrade jarvis first`, meta)
  }
  const everyWorkspaceKeys = header.keys === EVERY_WORKSPACE
  if (everyWorkspaceKeys && workspace !== DEFAULT_WORKSPACE) {
    throw new BadInputError(`${where}: a backup of a whole server (with every workspace's keys) goes into an empty data directory or database, not into the workspace ${workspace}: leave out --workspace; nothing was imported`, {...meta, field: 'workspace'})
  }
  if (format === UNCOUNTED_FORMAT) return {everyWorkspaceKeys}
  const rows = countsOf(header.rows)
  if (rows === undefined) throw new BadInputError(`${where}: the header has no row count of each table (jarvis serve export writes them); nothing was imported`, meta)
  return {rows, everyWorkspaceKeys}
}

/** `value` as the row count of each table, or undefined when it is not one. */
function countsOf(value: unknown): DumpCounts | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const counts = value as Record<string, unknown>
  return DUMP_TABLES.every((table) => Number.isSafeInteger(counts[table]) && (counts[table] as number) >= 0) ? (counts as DumpCounts) : undefined
}

const sameCounts = (a: DumpCounts, b: DumpCounts) => DUMP_TABLES.every((table) => a[table] === b[table])

/**
 * The rows of a dump, checked line by line; key rows as keys of `workspace` (the one imported into), a backup's as
 * keys of their own. At the end, a dump of format 2 must hold exactly the rows its header counts, and end with its
 * end line: one that was cut is refused whole. One of format 1 cannot be told whole: said in `warnings`.
 */
async function* dumpRows(input: Readable, source: string, workspace: string, warnings: string[]): AsyncGenerator<{row: DumpRow; where: string}> {
  let line = 0
  let header: DumpHeader | undefined
  /** The counts of the end line, once read. */
  let end: DumpCounts | undefined
  const seen = zeroCounts()
  /** A line that is not JSON: the torn last line of a cut dump, or a bad line when another follows. */
  let torn: BadInputError | undefined
  for await (const text of createInterface({input, crlfDelay: Infinity})) {
    line++
    if (text.trim() === '') continue
    if (torn) throw torn
    const where = `${source}:${line}`
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (error) {
      torn = new BadInputError(`${where}: not JSON: ${(error as Error).message}; nothing was imported`, {file: source, line})
      continue
    }
    if (header === undefined) {
      header = readHeader(value, where, {file: source, line}, workspace)
      continue
    }
    if (end !== undefined) throw new BadInputError(`${where}: a line after the dump's end line; nothing was imported`, {file: source, line})
    if (typeof value === 'object' && value !== null && 'jarvis_dump_end' in value) {
      end = countsOf(value.jarvis_dump_end)
      if (end === undefined) throw new BadInputError(`${where}: the end line has no row count of each table (jarvis serve export writes them); nothing was imported`, {file: source, line})
      continue
    }
    const row = value as Partial<DumpRow>
    if (typeof row?.table !== 'string' || !(DUMP_TABLES as readonly string[]).includes(row.table) || typeof row.row !== 'object' || row.row === null) {
      throw new BadInputError(`${where}: expected {"table": one of ${DUMP_TABLES.join(', ')}, "row": {…}}; nothing was imported`, {file: source, line})
    }
    if (row.table === 'api_keys') {
      if (!header.everyWorkspaceKeys) row.row = {...row.row, workspace}
      else if (typeof row.row.workspace !== 'string' || !isWorkspaceName(row.row.workspace)) throw new BadInputError(`${where}: the key's workspace ${JSON.stringify(row.row.workspace)} is not a workspace name; nothing was imported`, {file: source, line})
    }
    seen[row.table as DumpTable]++
    yield {row: row as DumpRow, where}
  }
  if (header === undefined) throw torn ?? new BadInputError(`${source}: empty: nothing to import`, {file: source})
  if (header.rows === undefined) {
    if (torn) throw torn
    warnings.push(`${source}: a dump of an older jarvis (format ${UNCOUNTED_FORMAT}) does not count its rows, so whether it is whole cannot be checked: compare what was imported with what its export printed`)
    return
  }
  if (end !== undefined && torn === undefined && sameCounts(seen, header.rows) && sameCounts(end, header.rows)) return
  throw cutDump(source, line, header.rows, seen, end !== undefined)
}

const TABLE_WORDS: Record<DumpTable, string> = {
  server_state: 'server state',
  files: 'files',
  idempotency_keys: 'idempotency keys',
  memory_events: 'events',
  memory_pins: 'pins',
  deleted_events: 'deleted events',
  api_keys: 'keys',
  audit_log: 'audit entries',
}

/** A dump that does not hold what its header counts: cut (no end line), or cut and patched, or edited. */
function cutDump(source: string, lines: number, expected: DumpCounts, seen: DumpCounts, ended: boolean): BadInputError {
  const whole = total(expected) + 2
  const short = DUMP_TABLES.filter((table) => seen[table] !== expected[table]).map((table) => `${TABLE_WORDS[table]} ${seen[table]} of ${expected[table]}`)
  const detail = short.length === 0 ? '' : `; ${short.join(', ')}`
  const what = ended ? 'the dump is not whole (cut, or edited)' : 'the dump was cut (its end line is missing)'
  return new BadInputError(
    `${source}: ${what}: ${lines} lines read, the whole dump has ${whole} (a header, ${total(expected)} rows and an end line)${detail}; nothing was imported. Export it again, or take another backup`,
    {file: source, lines, expectedLines: whole},
  )
}
