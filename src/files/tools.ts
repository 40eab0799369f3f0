/**
 * The memory-file tools of seed 004 §6: ls, read, write, edit, grep, delete. Every call goes through the store
 * (path guard, atomic writes) and, but for ls (list.ts: it writes no memory file and reads each one once, as the
 * search does), holds the tree lock; every write is scanned for secrets and personal data first.
 */
import {assertCleanMemoryFile as assertClean} from '../events/index.js'
import {BadInputError, ConflictLeftError} from '../errors.js'
import {mergeText} from '../merge/index.js'
import {fileSizeProblem, MAX_FILE_BYTES} from '../schemas/file-size.js'
import {deleteMemoryFile, formatJson, hashText, memoryFilePaths, readBase, readMemoryFile, readNexusFile, readSyncState, withTreeLock, writeMemoryFile, writeNexusFile} from '../store/index.js'
import {compileGrep, type GrepHit, grepLines} from './grep.js'
import {type FrontMatter, type MemoryFile, memoryLabel, parseMemoryFile, withFrontMatterFields} from './front-matter.js'
import {applyEdit, type FileEdit} from './patch.js'
import {checkLimit, checkMemoryPath, checkPrefix, matchesPrefix, MemoryFileNotFoundError} from './paths.js'

/** `.nexus/memory-access.json`: `{path: ISO time of the last read}`; local to this machine, never synced. */
export const ACCESS_FILE = 'memory-access.json'
export {DEFAULT_LIST_LIMIT} from './paths.js'
export {listFiles, type ListedFile} from './list.js'
export const DEFAULT_GREP_LIMIT = 100

export interface WriteOptions {
  title?: string
  tags?: string[]
  /** Extra front-matter fields (e.g. `project`). */
  metadata?: Record<string, unknown>
}

export interface WriteResult {
  path: string
  created: boolean
  /** False when the file already had exactly this content (nothing was written). */
  changed: boolean
  /** Only with a `base`: true when the file had changed since that base and the change was merged in. */
  merged?: boolean
}

/**
 * What a writer read before it wrote (an MCP session): the hash of the text it read, and that text when it is
 * still known. When the file on disk no longer has that hash, a write or an edit is merged three-way with the
 * change made meanwhile (base = the text read), or refused (exit 4) — it never overwrites that change.
 */
export interface WriteBase {
  hash: string
  /** The text as it was read; without it a file changed since is refused, as there is nothing to merge against. */
  text?: string
}

export interface GuardedWrite {
  base?: WriteBase
  /** Told the text the file holds after the call (written, merged or already equal). */
  onWritten?: (text: string) => void
}

export interface EditResult {
  path: string
  /** Only with a `base`: true when the file had changed since that base and the change was merged in. */
  merged?: boolean
}

export interface DeleteResult {
  path: string
  /** True when the last sync recorded this file: the next `jarvis sync` deletes it on the server too. */
  syncsDeletion: boolean
}

const lockOptions = (command: string) => ({command: `memory ${command}`})

/** Refuses (exit 5) a text holding a secret or personal data, as every door that writes a memory file does. */
export {assertClean}

/**
 * What every door checks before it writes a memory file: a text no larger than `jarvis sync` sends (else
 * BadInputError, exit 2, naming the file and the limit: a larger file would be written, then refused by every sync),
 * holding no secret or personal data (exit 5).
 */
export async function assertWritable(path: string, text: string): Promise<void> {
  const tooLarge = fileSizeProblem(text)
  if (tooLarge) throw new BadInputError(`${memoryLabel(path)}: ${tooLarge.message}; nothing was written`, {path, bytes: tooLarge.bytes, limit: MAX_FILE_BYTES})
  await assertClean(path, text)
}

async function readParsed(root: string, path: string): Promise<MemoryFile> {
  const text = await readMemoryFile(root, path)
  if (text === null) throw new MemoryFileNotFoundError(path)
  return parseMemoryFile(path, text)
}

/** Reads and parses a memory file; records the read in `.nexus/memory-access.json` (not in the synced file). */
export async function readMemory(root: string, path: string, options: {now?: Date} = {}): Promise<MemoryFile & {lastAccessed: string}> {
  const checked = checkMemoryPath(path)
  return withTreeLock(root, lockOptions('read'), async () => {
    const file = await readParsed(root, checked)
    const lastAccessed = (options.now ?? new Date()).toISOString()
    const access = await readAccess(root)
    access[checked] = lastAccessed
    await writeNexusFile(root, ACCESS_FILE, formatJson(Object.fromEntries(Object.entries(access).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))))
    return {...file, lastAccessed}
  })
}

/** `{path: ISO time}` of the last reads; a damaged file is local state only and starts over. */
export async function readAccess(root: string): Promise<Record<string, string>> {
  const text = await readNexusFile(root, ACCESS_FILE)
  if (text === null) return {}
  try {
    const value = JSON.parse(text) as unknown
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {}
    return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'))
  } catch {
    return {}
  }
}

/**
 * The text a write stores: `content` may carry its own front matter (checked); `title`, `tags` and `metadata`
 * override its fields.
 */
export function composeMemoryText(path: string, content: string, options: WriteOptions = {}): string {
  const given = parseMemoryFile(path, content)
  const hasOverrides = options.title !== undefined || options.tags !== undefined || (options.metadata && Object.keys(options.metadata).length > 0)
  if (!hasOverrides) return content
  // The front matter as written, but for the fields given (a person's comments in it are theirs).
  const fields: FrontMatter = {...options.metadata}
  if (options.tags !== undefined) fields.tags = options.tags
  if (options.title !== undefined) fields.title = options.title
  return withFrontMatterFields(content, given.body, {title: fields.title, tags: fields.tags, ...fields})
}

/**
 * Creates or overwrites a memory file, atomically, under the lock; refused (exit 5) if it holds a secret. With a
 * `base` (what the writer read), a file changed since is merged with that change or refused (exit 4), see WriteBase.
 */
export async function writeMemory(root: string, path: string, body: string, options: WriteOptions = {}, guard: GuardedWrite = {}): Promise<WriteResult> {
  const checked = checkMemoryPath(path)
  const text = composeMemoryText(checked, body, options)
  await assertWritable(checked, text)
  return withTreeLock(root, lockOptions('write'), async () => {
    const before = await readMemoryFile(root, checked)
    const {text: next, merged} = guard.base ? await mergeSinceBase(checked, guard.base, text, before) : {text, merged: false}
    const report = guard.base ? {merged} : {}
    guard.onWritten?.(next)
    if (before === next) return {path: checked, created: false, changed: false, ...report}
    await writeMemoryFile(root, checked, next)
    return {path: checked, created: before === null, changed: true, ...report}
  })
}

/**
 * The text to write when the writer read `base` and wants `wanted`, the file now holding `current`: `wanted` when
 * nothing changed since the read; else the three-way merge of the two changes (base = the text read), checked like
 * any write; a deleted file, an unknown base text or overlapping changes are refused with ConflictLeftError (exit 4).
 */
export async function mergeSinceBase(path: string, base: WriteBase, wanted: string, current: string | null): Promise<{text: string; merged: boolean}> {
  const label = memoryLabel(path)
  if (current === null) {
    throw new ConflictLeftError(`${label} was deleted since it was read; nothing was written (read it again or write it without a base to create it anew)`, {path, reason: 'deleted'})
  }
  if (hashText(current) === base.hash) return {text: wanted, merged: false}
  if (base.text === undefined || hashText(base.text) !== base.hash) {
    throw new ConflictLeftError(`${label} changed since it was read, and the text that was read is not known here to merge against; nothing was written: read it again and redo the change`, {
      path,
      reason: 'unknown-base',
    })
  }
  const result = mergeText(base.text, wanted, current)
  if (result.conflicts.length > 0) {
    const where = result.conflicts.map((conflict) => conflict.at).join(', ')
    throw new ConflictLeftError(`${label} changed since it was read, and the change overlaps yours at ${where}; nothing was written: read it again and redo the change`, {
      path,
      reason: 'overlap',
      conflicts: result.conflicts,
    })
  }
  parseMemoryFile(path, result.merged) // the merge must leave valid front matter
  await assertWritable(path, result.merged)
  return {text: result.merged, merged: true}
}

/**
 * Makes `edit` (the one occurrence of a text replaced, or a unified diff applied) on a memory file; a text that does
 * not match → BadInputError (exit 2) saying why. With a `base` (what the writer read) and a file changed since, the
 * edit is made on the text read and merged three-way with the change made meanwhile, or refused (exit 4), see WriteBase.
 */
export async function editMemory(root: string, path: string, edit: FileEdit, guard: GuardedWrite = {}): Promise<EditResult> {
  const checked = checkMemoryPath(path)
  if ('replace' in edit && edit.replace.length === 0) throw new BadInputError('--replace must not be empty', {path: checked})
  return withTreeLock(root, lockOptions('edit'), async () => {
    const current = await readMemoryFile(root, checked)
    if (current === null) throw new MemoryFileNotFoundError(checked)
    const changedSince = guard.base !== undefined && hashText(current) !== guard.base.hash
    const edited = await applyEdit(checked, changedSince && guard.base?.text !== undefined ? guard.base.text : current, edit)
    parseMemoryFile(checked, edited) // the edit must leave valid front matter
    await assertWritable(checked, edited)
    const {text: next, merged} = guard.base ? await mergeSinceBase(checked, guard.base, edited, current) : {text: edited, merged: false}
    guard.onWritten?.(next)
    if (next !== current) await writeMemoryFile(root, checked, next)
    return guard.base ? {path: checked, merged} : {path: checked}
  })
}

/** Lines matching `regex` (JavaScript syntax) in the memory files under `prefix`, by path then line number. */
export async function grepMemory(root: string, regex: string, prefix?: string, limit?: number, options: {ignoreCase?: boolean} = {}): Promise<GrepHit[]> {
  const pattern = compileGrep(regex, options.ignoreCase)
  const checkedPrefix = checkPrefix(prefix)
  const max = checkLimit(limit, DEFAULT_GREP_LIMIT)
  return withTreeLock(root, lockOptions('grep'), async () => {
    const hits: GrepHit[] = []
    for (const path of memoryFilePaths(root)) {
      if (!path.endsWith('.md') || !matchesPrefix(path, checkedPrefix)) continue
      const text = await readMemoryFile(root, path)
      if (text === null) continue
      hits.push(...grepLines([{path, text}], pattern.source, pattern.flags, max - hits.length))
      if (hits.length >= max) return hits
    }
    return hits
  })
}

/** Deletes a memory file; the next `jarvis sync` deletes it on the server when the base proves it was synced. */
export async function deleteMemory(root: string, path: string): Promise<DeleteResult> {
  const checked = checkMemoryPath(path)
  return withTreeLock(root, lockOptions('delete'), async () => {
    const removed = await deleteMemoryFile(root, checked)
    if (!removed) throw new MemoryFileNotFoundError(checked)
    const state = await readSyncState(root).catch(() => undefined)
    const syncsDeletion = state?.files[checked] !== undefined || (await readBase(root, checked)) !== null
    return {path: checked, syncsDeletion}
  })
}
