/**
 * `.nexus/config.json` and `.nexus/sync-state.json`: zod-checked reads, atomic pretty-printed writes. The sync state
 * (as large as the tree) has a journal beside it, `.nexus/sync-state.journal`: a write that changes few entries
 * appends them there instead of rewriting the whole file, and the file is rewritten (folded) when the journal grows.
 */
import {rm} from 'node:fs/promises'
import {join} from 'node:path'

import {JarvisError, SchemaError, SecretRefusedError} from '../errors.js'
import {isMemoryPath, isPlainRecord, isRecord, isRevision, isSha256Hex} from '../schemas/plain-fields.js'
import {parseJsonFile, parseJsonText, parseWith} from '../schemas/parse.js'
import {type NexusConfig, nexusConfigSchema, type SyncState, syncStateSchema} from '../schemas/nexus.js'
import {appendLineDurable, readTextIfExistsSync, writeFileAtomic} from './atomic.js'
import {configPath, nexusDir} from './root.js'
import {type FileStamp, readStamped, sameStamp, stampOf} from './stamp.js'
import {isWrittenDateTime} from '../schemas/written-date.js'

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
  return (await readSyncStateAs(root, undefined)).state
}

/**
 * The sync state as readSyncState reads it, and whether it is `asWritten`: `writtenAs` is the stamp the state had when
 * a jarvis wrote it, having checked every entry (a stat cache's clean mark). While the file and its journal still
 * have that stamp nobody rewrote them (a rewrite is a rename to a new inode, an edit moves the mtime), and their
 * entries are not checked again.
 */
export async function readSyncStateAs(root: string, writtenAs: StateStamp | undefined): Promise<{state: SyncState; asWritten: boolean}> {
  onDisk.delete(root)
  const read = await readStamped(syncStatePath(root))
  if (read === null) return {state: syncStateSchema.parse({}), asWritten: false}
  const value = withRebuildHint(() => parseJsonText(read.text, SYNC_STATE_FILE))
  const journal = await readStamped(syncJournalPath(root))
  const applied = journal === null || !isRecord(value) ? undefined : applyJournal(value, journal.text, read.stamp)
  const unchanged = writtenAs !== undefined && sameStamp(read.stamp, writtenAs) && (journal === null ? writtenAs.journal === undefined : writtenAs.journal !== undefined && sameStamp(journal.stamp, writtenAs.journal))
  const byHand = checkedByHand(value, unchanged)
  if (byHand === undefined) return {state: withRebuildHint(() => checkSyncState(value)), asWritten: false}
  // Known only when every entry was checked by hand, and so frozen: an entry the caller keeps is then unchanged.
  onDisk.set(root, {base: read.stamp, baseBytes: read.text.length, journal: applied === undefined ? undefined : {stamp: journal!.stamp, bytes: journal!.text.length}, files: {...byHand.files}, count: Object.keys(byHand.files).length})
  return {state: byHand, asWritten: unchanged}
}

/** A broken sync state's problems, and what to do: the file is a record of the last sync, which a sync can do without. */
function withRebuildHint<T>(read: () => T): T {
  try {
    return read()
  } catch (error) {
    if (!(error instanceof SchemaError)) throw error
    const hint = `it only records what the last sync saw: move it aside (mv ${SYNC_STATE_FILE} ${SYNC_STATE_FILE}.broken) and sync again; that sync compares every file with the server's afresh, merging where they differ or keeping your version as a conflict backup, so nothing is lost`
    throw new SchemaError(error.file, [...error.problems, hint])
  }
}

/**
 * A view of the sync state for a sync that changes a few files of a large tree, without reading the whole file: the
 * entries of a few paths as `files` gives them (a clean stat cache's bases: they are the state's while it has the
 * stamp `writtenAs`), and everything else of the state from the journal's last line. Undefined when it cannot be had
 * that way: the state or its journal is not the one `writtenAs` stamps, the journal has no line, or too little room
 * left before it must be folded into the file. `count`: how many entries the state has.
 *
 * The view's entries are never written: only those the caller replaces or removes are, appended to the journal. A
 * view that cannot be appended is refused, never written whole (see writeSyncState).
 */
export async function readSyncStateView(root: string, writtenAs: StateStamp, files: Record<string, {hash: string; rev?: number}>, count: number): Promise<SyncState | undefined> {
  onDisk.delete(root)
  const base = await stampOf(syncStatePath(root))
  if (base === undefined || !sameStamp(base, writtenAs) || writtenAs.journal === undefined) return undefined
  const journal = await readStamped(syncJournalPath(root))
  if (journal === null || !sameStamp(journal.stamp, writtenAs.journal)) return undefined
  if (Math.max(JOURNAL_FOLD_BYTES, base.size / 8) - journal.stamp.size < VIEW_JOURNAL_ROOM) return undefined
  const lines = journal.text.split('\n')
  lines.pop()
  if (lines.length < 2) return undefined
  const header = parseLine(lines[0]!, 1)
  const last = parseLine(lines.at(-1)!, lines.length)
  if (!isRecord(header) || header.journal !== 1 || !isRecord(header.base) || !sameStamp(header.base as unknown as FileStamp, base)) return undefined
  if (!isRecord(last) || !isRecord(last.state)) return undefined
  const {files: _none, ...rest} = checkedRest(last.state)
  const entries = files as SyncState['files']
  for (const path in entries) Object.freeze(entries[path])
  onDisk.set(root, {base, baseBytes: base.size, journal: {stamp: journal.stamp, bytes: journal.stamp.size}, files: {...entries}, count, partial: true})
  return {...rest, files: {[PARTIAL]: true, ...entries}}
}

/** Room a view wants in the journal: two lines (the pending hashes, then the bases) of VIEW_ENTRIES entries each. */
const VIEW_JOURNAL_ROOM = 32 * 1024
/** The most paths a view is asked for (each of its journal lines then stays under ~15 KiB). */
export const VIEW_ENTRIES = 64

/**
 * Writes the state: appended to the journal when this process knows what is on disk (it read or wrote it, and
 * nobody replaced it since) and few entries changed; else the whole file, atomically, and the journal goes.
 */
export async function writeSyncState(root: string, state: SyncState): Promise<void> {
  const known = onDisk.get(root)
  onDisk.delete(root)
  if (known !== undefined && (await appendToJournal(root, known, state))) return
  // A view holds a few entries of the state (readSyncStateView): written whole, it would drop every other base.
  if (PARTIAL in state.files) throw new JarvisError(`${SYNC_STATE_FILE}: the sync could not record its bases in ${SYNC_JOURNAL_FILE}; nothing was overwritten, run \`jarvis sync\` again`, {code: 'STATE_VIEW_UNWRITTEN', exit: 1})
  const checked = checkSyncState(state)
  const text = formatJson(checked)
  await writeFileAtomic(syncStatePath(root), text)
  // After the new file: a journal left by a crash here names the old file's stamp, so nobody applies it again.
  await rm(syncJournalPath(root), {force: true})
  const base = await stampOf(syncStatePath(root))
  if (base !== undefined && Object.values(checked.files).every((entry) => Object.isFrozen(entry))) onDisk.set(root, {base, baseBytes: text.length, files: {...checked.files}, count: Object.keys(checked.files).length})
}

export const SYNC_JOURNAL_FILE = '.nexus/sync-state.journal'

export function syncJournalPath(root: string): string {
  return join(nexusDir(root), 'sync-state.journal')
}

export type {FileStamp} from './stamp.js'

/** The sync state's stamp: its file's, and its journal's when there is one (a journal write leaves the file as it was). */
export interface StateStamp extends FileStamp {
  journal?: FileStamp
}

export async function syncStateStamp(root: string): Promise<StateStamp | undefined> {
  const base = await stampOf(syncStatePath(root))
  if (base === undefined) return undefined
  const journal = await stampOf(syncJournalPath(root))
  return journal === undefined ? base : {...base, journal}
}

export function sameStateStamp(a: StateStamp | undefined, b: StateStamp): boolean {
  return a !== undefined && sameStamp(a, b) && (a.journal === undefined ? b.journal === undefined : b.journal !== undefined && sameStamp(a.journal, b.journal))
}

/** What this process last read or wrote of a tree's sync state: the journal's appends are the changes since. */
interface StateOnDisk {
  base: FileStamp
  baseBytes: number
  journal?: {stamp: FileStamp; bytes: number}
  /**
   * The entries as on disk (a copy: the caller may add or remove entries in its own object), and how many the state
   * has. `partial`: only some of them (a view), so a path missing from the caller's object is not a removal.
   */
  files: SyncState['files']
  count: number
  partial?: boolean
}

/** Marks the entries of a view (readSyncStateView); enumerable, so that a copy made with `{...files}` keeps it. */
const PARTIAL = Symbol('jarvis.sync-state-view')

const onDisk = new Map<string, StateOnDisk>()

/** A journal is folded into the file when it would exceed this many bytes, or an eighth of the file. */
const JOURNAL_FOLD_BYTES = 256 * 1024

/** One journal line: the entries changed (null: removed) and everything else of the state as it now is. */
interface JournalLine {
  files: Record<string, unknown>
  state: Record<string, unknown>
}

async function appendToJournal(root: string, known: StateOnDisk, state: SyncState): Promise<boolean> {
  // Only what this process knows is on disk: another writer (an older jarvis, a hand edit) replaced or grew it.
  const journal = await stampOf(syncJournalPath(root))
  if (!sameStamp(await stampOf(syncStatePath(root)), known.base)) return false
  if (journal === undefined ? known.journal !== undefined : known.journal === undefined || !sameStamp(journal, known.journal.stamp)) return false
  const {files, ...others} = state
  if (!isRecord(files)) return false
  const changed: Record<string, unknown> = {}
  let count = 0
  let total = 0
  let added = 0
  for (const path in files) {
    total++
    const entry = files[path]
    // An entry is replaced, never edited: the one on disk was checked and frozen, so the same object is the same
    // entry. A new one is checked by hand here; one that fails goes with the whole file through the schema.
    if (known.files[path] === entry) continue
    if (!isCheckedEntry(path, entry)) return false
    if (known.files[path] === undefined) added++
    changed[path] = entry
    count++
  }
  // Every entry on disk is still here unless fewer than those are: only then are the removed ones looked for. A
  // view's entries are its own: the state has as many as on disk, plus those added, less those removed.
  let removed = 0
  if (known.partial || total - added < known.count) {
    for (const path in known.files) {
      if (path in files) continue
      changed[path] = null
      removed++
    }
  }
  count += removed
  if (known.partial) total = known.count + added - removed
  const {files: _none, ...rest} = checkedRest(others)
  const line = JSON.stringify({files: changed, state: rest} satisfies JournalLine)
  const header = known.journal === undefined ? JSON.stringify({journal: 1, base: known.base}) + '\n' : ''
  const bytes = (known.journal?.bytes ?? 0) + header.length + line.length + 1
  if (count * 4 > total || bytes > Math.max(JOURNAL_FOLD_BYTES, known.baseBytes / 8)) return false
  // Durable before the caller goes on: a base is recorded only once it is on disk (as with the whole file).
  if (header === '') await appendLineDurable(syncJournalPath(root), line)
  else await writeFileAtomic(syncJournalPath(root), header + line + '\n')
  const stamp = await stampOf(syncJournalPath(root))
  if (stamp === undefined) return true
  for (const path in changed) {
    const entry = changed[path] as SyncState['files'][string] | null
    if (entry === null) delete known.files[path]
    else known.files[path] = entry
  }
  onDisk.set(root, {...known, count: total, journal: {stamp, bytes}})
  return true
}

/**
 * Applies a journal to the sync state's file as parsed, in place: nothing when its header names another file (the
 * file was rewritten since, by a fold or by another writer). A last line without its newline is an append that never
 * finished (it never reported success): ignored. Returns the lines applied, or undefined when none may be.
 */
function applyJournal(value: Record<string, unknown>, text: string, base: FileStamp): number | undefined {
  const lines = text.split('\n')
  // The last piece is empty after a final newline, or a torn append.
  lines.pop()
  if (lines.length === 0) return undefined
  const header = parseLine(lines[0] ?? '', 1)
  if (!isRecord(header) || header.journal !== 1 || !isRecord(header.base) || !sameStamp(header.base as unknown as FileStamp, base)) return undefined
  if (!isRecord(value.files)) value.files = {}
  const files = value.files as Record<string, unknown>
  for (let index = 1; index < lines.length; index++) {
    const line = parseLine(lines[index], index + 1)
    if (!isRecord(line) || !isRecord(line.files) || !isRecord(line.state)) throw new SchemaError(SYNC_JOURNAL_FILE, [`line ${index + 1}: not a journal entry ({files, state}); delete ${SYNC_JOURNAL_FILE} and run \`jarvis sync\` again`])
    for (const path in line.files) {
      const entry = line.files[path]
      if (entry === null) delete files[path]
      else files[path] = entry
    }
    for (const key of Object.keys(value)) if (key !== 'files') delete value[key]
    for (const key in line.state) if (key !== 'files') value[key] = line.state[key]
  }
  return lines.length - 1
}

function parseLine(line: string, lineNo: number): unknown {
  try {
    return JSON.parse(line)
  } catch (error) {
    throw new SchemaError(SYNC_JOURNAL_FILE, [`line ${lineNo}: invalid JSON: ${(error as Error).message}; delete ${SYNC_JOURNAL_FILE} and run \`jarvis sync\` again`])
  }
}

/**
 * The sync state as syncStateSchema reads it. Its per-file entries are checked by hand first: zod took ~16 µs an
 * entry, 160 ms at 10,000 files for every read and for every write (one per push batch). An entry as jarvis
 * writes it passes `isWrittenEntry`, which accepts nothing the schema would refuse or change; anything else — a
 * hand edit, another shape — goes through zod for the whole file, which names the problem.
 */
function checkSyncState(value: unknown): SyncState {
  return checkedByHand(value) ?? parseWith(syncStateSchema, value, SYNC_STATE_FILE)
}

/** The state when every entry passed the check by hand, or was `checkedBefore` (each is then frozen), else undefined. */
function checkedByHand(value: unknown, checkedBefore = false): SyncState | undefined {
  if (!isRecord(value) || !isRecord(value.files) || !allCheckedEntries(value.files, checkedBefore)) return undefined
  const {files, ...rest} = value
  return {...checkedRest(rest), files: files as SyncState['files']}
}

/**
 * Everything of the state but its entries: by hand when jarvis wrote it (isWrittenRest), else by the schema. A sync of
 * a few files reads and writes the state through its journal, and would load zod and build the state's schema only
 * for these few fields.
 */
function checkedRest(rest: Record<string, unknown>): SyncState {
  const state = {...rest, files: {}}
  return isWrittenRest(state) ? state : parseWith(syncStateSchema, state, SYNC_STATE_FILE)
}

/**
 * True only for a state without entries that syncStateSchema reads unchanged (property-tested): every field the
 * schema knows as jarvis writes it; others (the schema keeps them) any JSON value.
 */
export function isWrittenRest(state: Record<string, unknown>): state is SyncState {
  if (!isPlainRecord(state) || !isPlainRecord(state.files)) return false
  for (const _ in state.files) return false
  const {version, server, seq, mode, lastSyncAt, sessions} = state
  return (
    version === 1 &&
    (server === undefined || typeof server === 'string') &&
    (seq === undefined || isRevision(seq)) &&
    (mode === undefined || mode === 'revision' || mode === 'timestamp') &&
    (lastSyncAt === undefined || isWrittenDateTime(lastSyncAt)) &&
    (sessions === undefined || isPlainRecord(sessions))
  )
}

/**
 * Entries this process has checked, by the path they were checked under, and frozen then: a sync replaces an entry,
 * never edits one, so one checked at the read or at an earlier write is not checked again (a push of 10,000 files
 * in 20 batches wrote, and checked, the whole state 40 times).
 */
const checkedEntries = new WeakMap<object, string>()

function allCheckedEntries(files: Record<string, unknown>, checkedBefore = false): boolean {
  // A loop over the keys: Object.entries made 10,000 pairs at every read and write.
  for (const path in files) if (!isCheckedEntry(path, files[path], checkedBefore)) return false
  return true
}

function isCheckedEntry(path: string, entry: unknown, checkedBefore = false): boolean {
  if (isRecord(entry) && checkedEntries.get(entry) === path) return true
  if (!(checkedBefore && isRecord(entry)) && !isWrittenEntry(path, entry)) return false
  checkedEntries.set(Object.freeze(entry as object), path)
  return true
}

/** True only for `{hash, rev?, updatedAt?, syncedAt}` exactly as jarvis writes them (see checkSyncState). */
export function isWrittenEntry(path: string, entry: unknown): boolean {
  if (!isMemoryPath(path) || !isRecord(entry)) return false
  for (const key in entry) if (key !== 'hash' && key !== 'rev' && key !== 'updatedAt' && key !== 'syncedAt') return false
  const {hash, rev, updatedAt, syncedAt} = entry
  if (!isSha256Hex(hash) || !isWrittenDateTime(syncedAt)) return false
  if (rev !== undefined && !isRevision(rev)) return false
  return updatedAt === undefined || isWrittenDateTime(updatedAt)
}

/** Missing → all defaults (a tree cloned without its `.nexus/` still works); malformed → SchemaError. */
/**
 * `.nexus/sync-running`: present while a sync that may write the per-file folders (bases, replica bases) runs, so one
 * left behind says the last such sync did not finish (and may have left temp files among the bases). Written once a
 * sync knows it has work, not by a no-op (which writes nothing there). Not fsynced: a marker lost in a power cut costs
 * one deep sweep, no data.
 */
export const SYNC_RUNNING_FILE = '.nexus/sync-running'

/** True when a sync left its marker behind: it did not finish. */
export async function syncRunUnfinished(root: string): Promise<boolean> {
  return readTextIfExistsSync(join(root, SYNC_RUNNING_FILE)) !== null
}

/** Marks a sync as running, before its first write to the per-file folders. */
export async function markSyncRunning(root: string): Promise<void> {
  await writeFileAtomic(join(root, SYNC_RUNNING_FILE), `${process.pid}\n`, {durable: false})
}

export async function endSyncRun(root: string): Promise<void> {
  await rm(join(root, SYNC_RUNNING_FILE), {force: true})
}

export async function readConfig(root: string): Promise<NexusConfig> {
  const text = readTextIfExistsSync(configPath(root))
  const known = SCHEMAS_TAG === undefined ? undefined : configAsRead(root, text, SCHEMAS_TAG)
  if (known !== undefined) return known
  const config = text === null ? nexusConfigSchema.parse({}) : parseJsonFile(nexusConfigSchema, text, CONFIG_FILE)
  if (SCHEMAS_TAG !== undefined) {
    // A cache: written atomically, not durably, and only into a .nexus/ that is there; one that cannot be written
    // only means parsing again next time.
    await writeFileAtomic(configReadPath(root), `${JSON.stringify({schemas: SCHEMAS_TAG, text, config})}\n`, {durable: false, makeFolders: false}).catch(() => {})
  }
  return config
}

/**
 * Set by the build of the fast door's bundles (scripts/bundle.mjs): a hash of src/schemas/ and of zod's version,
 * what the config's parse depends on. Undefined elsewhere (oclif's bundles, the sources), which parse every time.
 */
declare const __jarvisSchemasTag: string | undefined
const SCHEMAS_TAG = typeof __jarvisSchemasTag === 'string' ? __jarvisSchemasTag : undefined

/**
 * `.nexus/config-read.json`: the config as the last read parsed it (zod's output, defaults filled in), beside the
 * text it parsed (null: no config file) and the schemas it parsed it with. A read that finds the same text and the
 * same schemas takes that answer: zod (a third of a no-op sync's own work, most of its garbage) is not loaded.
 */
export function configReadPath(root: string): string {
  return join(nexusDir(root), 'config-read.json')
}

function configAsRead(root: string, text: string | null, schemas: string): NexusConfig | undefined {
  try {
    const read = JSON.parse(readTextIfExistsSync(configReadPath(root)) ?? 'null') as {schemas?: unknown; text?: unknown; config?: unknown} | null
    if (read === null || typeof read !== 'object' || read.schemas !== schemas || read.text !== text) return undefined
    const config = read.config
    return typeof config === 'object' && config !== null && !Array.isArray(config) ? (config as NexusConfig) : undefined
  } catch {
    return undefined
  }
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
