/** `.nexus/config.json` and `.nexus/sync-state.json`: zod-checked reads, atomic pretty-printed writes. */
import {rm} from 'node:fs/promises'
import {join} from 'node:path'

import {SecretRefusedError} from '../errors.js'
import {MEMORY_PATH_MAX, MEMORY_PATH_PATTERN} from '../schemas/common.js'
import {parseJsonFile, parseJsonText, parseWith} from '../schemas/parse.js'
import {type NexusConfig, nexusConfigSchema, type SyncState, syncStateSchema} from '../schemas/nexus.js'
import {readTextIfExists, writeFileAtomic} from './atomic.js'
import {configPath, nexusDir} from './root.js'

export const CONFIG_FILE = '.nexus/config.json'
export const SYNC_STATE_FILE = '.nexus/sync-state.json'

/** JSON as jarvis writes it: two-space indent and a final newline. */
export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2) + '\n'
}

export function syncStatePath(root: string): string {
  return join(nexusDir(root), 'sync-state.json')
}


/** Missing → the empty state (`{version: 1, files: {}}`); malformed → SchemaError naming the file and line or field. */
export async function readSyncState(root: string): Promise<SyncState> {
  const text = await readTextIfExists(syncStatePath(root))
  if (text === null) return syncStateSchema.parse({})
  return checkSyncState(parseJsonText(text, SYNC_STATE_FILE))
}

export async function writeSyncState(root: string, state: SyncState): Promise<void> {
  await writeFileAtomic(syncStatePath(root), formatJson(checkSyncState(state)))
}

/**
 * The sync state as syncStateSchema reads it. Its per-file entries are checked by hand first: zod took ~16 µs an
 * entry, 160 ms at 10,000 files for every read and for every write (one per push batch). An entry as jarvis
 * writes it passes `isWrittenEntry`, which accepts nothing the schema would refuse or change; anything else — a
 * hand edit, another shape — goes through zod for the whole file, which names the problem.
 */
function checkSyncState(value: unknown): SyncState {
  if (isRecord(value) && isRecord(value.files) && allCheckedEntries(value.files)) {
    const {files, ...rest} = value
    return {...parseWith(syncStateSchema, {...rest, files: {}}, SYNC_STATE_FILE), files: files as SyncState['files']}
  }
  return parseWith(syncStateSchema, value, SYNC_STATE_FILE)
}

/**
 * Entries this process has checked, by the path they were checked under, and frozen then: a sync replaces an entry,
 * never edits one, so one checked at the read or at an earlier write is not checked again (a push of 10,000 files
 * in 20 batches wrote, and checked, the whole state 40 times).
 */
const checkedEntries = new WeakMap<object, string>()

function allCheckedEntries(files: Record<string, unknown>): boolean {
  // A loop over the keys: Object.entries made 10,000 pairs at every read and write.
  for (const path in files) if (!isCheckedEntry(path, files[path])) return false
  return true
}

function isCheckedEntry(path: string, entry: unknown): boolean {
  if (isRecord(entry) && checkedEntries.get(entry) === path) return true
  if (!isWrittenEntry(path, entry)) return false
  checkedEntries.set(Object.freeze(entry as object), path)
  return true
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const SHA256_HEX = /^[0-9a-f]{64}$/

const WRITTEN_DATE_TIME = /^(\d{4})-(\d\d)-(\d\d)T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/**
 * An ISO date-time as `Date.prototype.toISOString` prints it, and a real one (no 30 February). By its digits: the
 * round trip through Date (the same answer, property-tested) was a third of a 10,000-file push's own work, every
 * entry being checked at each of the state's writes.
 */
function isWrittenDateTime(value: unknown): boolean {
  if (typeof value !== 'string' || value.length !== 24) return false
  // The files of one batch share their dates, to the millisecond: each is checked once.
  if (writtenDates.has(value)) return true
  if (!isWrittenDateTimeByDigits(value)) return false
  if (writtenDates.size >= MAX_REMEMBERED_DATES) writtenDates.clear()
  writtenDates.add(value)
  return true
}

const writtenDates = new Set<string>()
const MAX_REMEMBERED_DATES = 100_000

function isWrittenDateTimeByDigits(value: string): boolean {
  const found = WRITTEN_DATE_TIME.exec(value)
  if (found === null) return false
  const year = Number(found[1])
  const month = Number(found[2])
  const day = Number(found[3])
  if (month < 1 || month > 12 || day < 1) return false
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])
}

/** True only for `{hash, rev?, updatedAt?, syncedAt}` exactly as jarvis writes them (see checkSyncState). */
export function isWrittenEntry(path: string, entry: unknown): boolean {
  if (path.length > MEMORY_PATH_MAX || !MEMORY_PATH_PATTERN.test(path) || !isRecord(entry)) return false
  for (const key in entry) if (key !== 'hash' && key !== 'rev' && key !== 'updatedAt' && key !== 'syncedAt') return false
  const {hash, rev, updatedAt, syncedAt} = entry
  if (typeof hash !== 'string' || !SHA256_HEX.test(hash) || !isWrittenDateTime(syncedAt)) return false
  if (rev !== undefined && !(typeof rev === 'number' && Number.isSafeInteger(rev) && rev >= 0)) return false
  return updatedAt === undefined || isWrittenDateTime(updatedAt)
}

/** Missing → all defaults (a tree cloned without its `.nexus/` still works); malformed → SchemaError. */
/**
 * `.nexus/sync-running`: present while a sync runs, so one left behind says the last sync did not finish (and may
 * have left temp files among the bases). Not fsynced: a marker lost in a power cut costs one deep sweep, no data.
 */
export const SYNC_RUNNING_FILE = '.nexus/sync-running'

/** Marks a sync as running; true when the last one did not finish. */
export async function beginSyncRun(root: string): Promise<boolean> {
  const path = join(root, SYNC_RUNNING_FILE)
  const unfinished = (await readTextIfExists(path)) !== null
  await writeFileAtomic(path, `${process.pid}\n`, {durable: false})
  return unfinished
}

export async function endSyncRun(root: string): Promise<void> {
  await rm(join(root, SYNC_RUNNING_FILE), {force: true})
}

export async function readConfig(root: string): Promise<NexusConfig> {
  const text = await readTextIfExists(configPath(root))
  if (text === null) return nexusConfigSchema.parse({})
  return parseJsonFile(nexusConfigSchema, text, CONFIG_FILE)
}

const SECRET_KEY = /^(token|access_?token|auth_?token|secret|password|passwd|api_?key|bearer)$/i

/** Throws SecretRefusedError when the config would store a credential (CONTRACT §1: no secret in either tree). */
export function assertNoSecretInConfig(config: Record<string, unknown>): void {
  const found: string[] = []
  const visit = (value: unknown, where: string): void => {
    if (value === null || typeof value !== 'object') return
    for (const [key, child] of Object.entries(value)) {
      const here = where ? `${where}.${key}` : key
      if (SECRET_KEY.test(key) && child !== undefined && child !== null && child !== '') found.push(here)
      visit(child, here)
    }
  }
  visit(config, '')
  const server = config.server
  if (typeof server === 'string') {
    try {
      const url = new URL(server)
      if (url.username || url.password) found.push('server (credentials in the URL)')
    } catch {
      // the schema reports a bad URL
    }
  }
  if (found.length > 0) {
    throw new SecretRefusedError(
      `${CONFIG_FILE}: refusing to write a credential (${found.join(', ')}); pass the token in JARVIS_TOKEN or the user config directory`,
      {file: CONFIG_FILE, fields: found},
    )
  }
}

export async function writeConfig(root: string, config: NexusConfig): Promise<void> {
  const checked = parseWith(nexusConfigSchema, config, CONFIG_FILE)
  assertNoSecretInConfig(checked)
  await writeFileAtomic(configPath(root), formatJson(checked))
}
