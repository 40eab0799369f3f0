/**
 * `.nexus/stat-cache.json`: the previous scan's `{size, mtimeMs, ino, checkedAtMs, hash}` per path (version 2: one
 * array per field; version 1, an object per path, is still read), so the next
 * scan can skip re-hashing files that have not been touched, and its folders' `{mtimeMs, checkedAtMs}` (`dirs`), so
 * it need not list a folder whose entries did not change. A hint only: a missing or unreadable cache is treated as
 * empty (every folder is listed and every file hashed), never as an error.
 */
import {readFileSync} from 'node:fs'
import {appendFile, rm} from 'node:fs/promises'
import {join} from 'node:path'

import createDebug from 'debug'

import {isRecord} from '../schemas/plain-fields.js'
import {writeFileAtomic} from './atomic.js'
import {nexusDir} from './root.js'
import {type FileStamp, readStamped, sameStamp, stampOf} from './stamp.js'
import type {StateStamp} from './sync-state.js'
import {HASH_HEX_LENGTH} from './hash.js'
import {type DirCache, type DirStat, type FileHints, type MemoryFileStat, type StatCache, StatColumns} from './tree.js'

const debug = createDebug('jarvis:store')

export function statCachePath(root: string): string {
  return join(nexusDir(root), 'stat-cache.json')
}

/**
 * `.nexus/stat-cache.head.json`: what a no-op sync in a watched tree needs of the stat cache without reading it (as
 * large as the tree): its clean mark without the revisions, its watch clock, whether it met backups, and the stamp of
 * the stat cache it was written with. Written right after the cache; one that names another cache than the one on
 * disk (an older jarvis rewrote it, a write did not finish) is not read.
 */
export function statCacheHeadPath(root: string): string {
  return join(nexusDir(root), 'stat-cache.head.json')
}

/**
 * A watch's clock as a scan keeps it (ScanHints' `watch`): `clock`, asked right before the scan; `fullAt`, when every
 * file was last looked at (ms since the epoch) under the clocks kept since.
 */
export interface WatchMark {
  clock: string
  fullAt: number
}

/**
 * How long a watch's word stands in for looking at every file: past this, the next sync looks at every file again.
 * A bound on what no watch sees (a file edited through a hard link in another folder, a write through a shared
 * memory map): such an edit waits for the next full look, never longer.
 */
export const WATCH_FULL_SCAN_MS = 30 * 60_000

/** Whether a watch mark's last full look is recent enough to go by (see WATCH_FULL_SCAN_MS); a clock set back is not. */
export function watchMarkFresh(mark: WatchMark | undefined, now = Date.now()): mark is WatchMark {
  const age = mark === undefined ? -1 : now - mark.fullAt
  return age >= 0 && age < WATCH_FULL_SCAN_MS
}

function isWatchMark(value: unknown): value is WatchMark {
  return value !== null && typeof value === 'object' && typeof (value as WatchMark).clock === 'string' && Number.isFinite((value as WatchMark).fullAt)
}

/** The stat cache's head (see statCacheHeadPath). */
export interface ScanHead {
  clean?: Omit<CleanMark, 'revs'>
  watch?: WatchMark
  /** How many backups the scan met. */
  backups: number
}

/** An object whose `keys` all hold numbers (what each entry of the cache is checked for). */
function hasNumbers(value: unknown, keys: string[]): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && keys.every((key) => typeof (value as Record<string, unknown>)[key] === 'number')
}

function isEntry(value: unknown): value is MemoryFileStat {
  return hasNumbers(value, ['size', 'mtimeMs']) && typeof value.hash === 'string'
}

const isDirEntry = (value: unknown): value is DirStat => hasNumbers(value, ['mtimeMs', 'checkedAtMs'])

/**
 * Written by a sync that found nothing to do, every file equal to its base: the sync state it left (`state`: the
 * inode, size and mtime of `.nexus/sync-state.json`, which every rewrite replaces by a rename, and of its journal,
 * which every other write grows) and the server's
 * sequence then. While the state file is that one, the files of this cache are the bases' contents: a later sync
 * whose server reports nothing since `seq` and whose scan hashes nothing has nothing to do either, without reading
 * the sync state.
 */
export interface CleanMark {
  state: StateStamp
  server: string
  serverId?: string
  seq: number
  /**
   * Each base's revision (null: none), in the order of the cache's files (version 2 only): with the hashes, the
   * state's entries as the mark knows them, for a sync that changes a few files without reading the state.
   */
  revs?: Array<number | null>
}

/** What the last scan saw: its files and folders. */
export interface ScanHints {
  /** Its files as a record by path, made from `known` the first time it is read (a sync with nothing to do never does). */
  readonly files: StatCache
  /** Its files as read: what scanMemory takes. */
  known: FileHints
  /** How many files it lists. */
  count: number
  dirs: DirCache
  /** The conflict backups the scan met (relative paths). */
  backups: string[]
  clean?: CleanMark
  /**
   * The clock of a watch of the tree (tree.ts WatchAnswer) asked right before the scan that made this cache: every file
   * changed since is one the watch reports changed since this clock, so the next scan looks at those only (until
   * its `fullAt` is too old: WATCH_FULL_SCAN_MS).
   */
  watch?: WatchMark
}

const isStamp = (value: unknown): value is Record<string, unknown> => hasNumbers(value, ['ino', 'size', 'mtimeMs'])

function isCleanMark(value: unknown): value is CleanMark {
  if (value === null || typeof value !== 'object') return false
  const v = value as Record<string, unknown>
  const state = v.state
  return (
    typeof v.server === 'string' && (v.serverId === undefined || typeof v.serverId === 'string') && Number.isSafeInteger(v.seq) &&
    isStamp(state) && (state.journal === undefined || isStamp(state.journal))
  )
}

function isRevisions(value: unknown, count: number): value is Array<number | null> {
  return Array.isArray(value) && value.length === count && value.every((rev) => rev === null || (Number.isSafeInteger(rev) && (rev as number) >= 0))
}

/** The revision of a path's base as the clean mark has it (null: none); undefined when the mark does not say. */
export function cachedRev(hints: ScanHints, path: string): number | null | undefined {
  const revs = hints.clean?.revs
  if (revs === undefined || !(hints.known instanceof StatColumns)) return undefined
  const at = hints.known.position(path)
  return at === undefined ? undefined : revs[at]
}

/**
 * cachedRev for paths asked in sorted order, as a scan lists them: found by walking beside the cache's own paths
 * (sorted too), not through an index of every path. A path asked out of order is looked up.
 */
export function cachedRevsInOrder(hints: ScanHints): (path: string) => number | null | undefined {
  const revs = hints.clean?.revs
  const {known} = hints
  if (revs === undefined || !(known instanceof StatColumns)) return () => undefined
  const {paths} = known
  let next = 0
  return (path) => {
    // Most often the cache's next path, often the very same string (the walk takes its paths from the cache).
    if (paths[next] === path) return revs[next++]
    if (next > 0 && path <= paths[next - 1]!) return cachedRev(hints, path)
    while (next < paths.length && paths[next]! < path) next++
    return paths[next] === path ? revs[next++] : undefined
  }
}

export async function readStatCache(root: string): Promise<StatCache> {
  return (await readScanHints(root)).files
}

/** The hash the cache holds for `path`, without making the record of every file (`files`). */
export function cachedHash(hints: ScanHints, path: string): string | undefined {
  const {known} = hints
  if (known instanceof StatColumns) return known.hashOf(path)
  return known instanceof Map ? known.get(path)?.hash : (known as StatCache)[path]?.hash
}

/**
 * The paths where `local` differs from the cache: a file new or with another hash, or a file of the cache gone. Only
 * the paths in `hashed` are compared: the scan gave every other file of `local` the cache's hash (scanMemory's
 * `counts.hashed`). The cache's paths are walked only when fewer of them were found than it lists.
 */
export function changedSinceCache(hints: ScanHints, local: ReadonlyMap<string, {hash: string}>, hashed: readonly string[]): string[] {
  const changed: string[] = []
  let foundOfCache = local.size
  for (const path of hashed) {
    const cached = cachedHash(hints, path)
    if (cached === undefined) foundOfCache--
    if (cached !== local.get(path)?.hash) changed.push(path)
  }
  if (foundOfCache < hints.count) for (const path of cachedPaths(hints)) if (!local.has(path)) changed.push(path)
  return changed
}

function cachedPaths({known}: ScanHints): Iterable<string> {
  return known instanceof StatColumns ? known.paths : known instanceof Map ? known.keys() : Object.keys(known)
}

/** Hints listing `known`, no folder and no backup. */
function hintsOf(known: StatColumns | StatCache): ScanHints {
  let files: StatCache | undefined
  return {
    known,
    count: known instanceof StatColumns ? known.size : Object.keys(known).length,
    get files() {
      return (files ??= known instanceof StatColumns ? known.toRecord() : known)
    },
    dirs: {},
    backups: [],
  }
}

export async function readScanHints(root: string): Promise<ScanHints> {
  known.delete(root)
  const read = await readStamped(statCachePath(root)).catch(() => null)
  if (read === null) return hintsOf({})
  try {
    const parsed = JSON.parse(read.text) as {version?: unknown; files?: unknown; dirs?: unknown; backups?: unknown; clean?: unknown; watch?: unknown}
    // A version 2 file's columns with its journal's lines applied (statCacheJournalPath), when it names this file.
    const journal = parsed && typeof parsed === 'object' && parsed.version === 2 ? ((await readStamped(statCacheJournalPath(root)).catch(() => null)) ?? undefined) : undefined
    const applied = journal === undefined ? undefined : applyCacheJournal(parsed as Columns & Record<string, unknown>, journal.text, read.stamp)
    const files = parsed && typeof parsed === 'object' ? (parsed.version === 2 ? filesOfColumns(parsed as Columns) : filesOfRecord(parsed.files)) : undefined
    const revs: ReadonlyArray<number | null | undefined> | undefined =
      files instanceof StatColumns && applied !== undefined ? (applied.revs?.length === files.size ? applied.revs : undefined) : files instanceof StatColumns && isCleanMark(parsed.clean) && isRevisions(parsed.clean.revs, files.size) ? parsed.clean.revs : undefined
    const hints = hintsOf(files ?? {})
    if (files !== undefined) {
      // Folders only with the backups in them: a folder hint stands for every entry the scan met there.
      if (parsed.dirs && typeof parsed.dirs === 'object' && Array.isArray(parsed.backups) && parsed.backups.every((path) => typeof path === 'string')) {
        for (const [path, entry] of Object.entries(parsed.dirs as Record<string, unknown>)) if (isDirEntry(entry)) hints.dirs[path] = entry
        hints.backups = parsed.backups as string[]
        // A clock stands for the folders and backups as much as for the files.
        if (isWatchMark(parsed.watch)) hints.watch = {clock: parsed.watch.clock, fullAt: parsed.watch.fullAt}
      }
      if (isCleanMark(parsed.clean)) {
        hints.clean = parsed.clean
        delete hints.clean.revs
        if (files instanceof StatColumns && revs !== undefined && revs.every((rev) => rev !== undefined)) hints.clean.revs = revs as Array<number | null>
      }
      // What the next write of this process compares with: it appends the entries that differ.
      if (files instanceof StatColumns && hints.dirs !== undefined && (journal === undefined || applied !== undefined)) {
        known.set(root, {cache: read.stamp, baseBytes: read.text.length, journal: journal === undefined ? undefined : {stamp: journal.stamp, bytes: journal.text.length, whole: journal.text.endsWith('\n')}, files, revs, dirs: {...hints.dirs}})
      }
    }
    return hints
  } catch (error) {
    debug('stat cache unreadable, hashing every file: %s', (error as Error).message)
    return hintsOf({})
  }
}

/** Version 1 (an older jarvis): `files: {path: {hash, size, mtimeMs, ino, checkedAtMs}}`. */
function filesOfRecord(value: unknown): StatCache | undefined {
  if (!value || typeof value !== 'object') return undefined
  // Checked in place: building a second object of 10,000 keys cost more than the check.
  const files = value as Record<string, unknown>
  for (const path in files) if (!isEntry(files[path])) delete files[path]
  return files as StatCache
}

/**
 * Version 2: one array per field, the hashes in one string (64 hex digits each), `null` for an absent inode or
 * check time. Parsed in half the time of version 1's object per file, and written in half too: no key, no object
 * and no hash string per file in the JSON. Anything out of shape drops every file (a hint: they are hashed again).
 */
interface Columns {
  paths?: unknown
  hashes?: unknown
  sizes?: unknown
  mtimes?: unknown
  inos?: unknown
  checked?: unknown
}

/** The files of version 2, kept as columns (see StatColumns): no object per file until a scan asks for one. */
function filesOfColumns(columns: Columns): StatColumns | undefined {
  const {paths, hashes, sizes, mtimes, inos, checked} = columns
  if (!Array.isArray(paths) || typeof hashes !== 'string' || !Array.isArray(sizes) || !Array.isArray(mtimes) || !Array.isArray(inos) || !Array.isArray(checked)) return undefined
  const count = paths.length
  if (hashes.length !== count * HASH_HEX_LENGTH || sizes.length !== count || mtimes.length !== count || inos.length !== count || checked.length !== count) return undefined
  for (let i = 0; i < count; i++) {
    const ino: unknown = inos[i]
    const checkedAtMs: unknown = checked[i]
    if (typeof paths[i] !== 'string' || typeof sizes[i] !== 'number' || typeof mtimes[i] !== 'number' || (ino !== null && typeof ino !== 'number') || (checkedAtMs !== null && typeof checkedAtMs !== 'number')) return undefined
  }
  return new StatColumns(paths as string[], hashes, sizes as number[], mtimes as number[], inos as Array<number | null>, checked as Array<number | null>)
}

/**
 * `folders`: the folders the scan saw and the backups it met there, written only together; `clean`: see CleanMark,
 * its `revs` made here from `revOf` (each file's base revision), in the order the files are written; `watch`: the
 * clock asked right before the scan (see ScanHints).
 */
export async function writeStatCache(root: string, entries: Map<string, MemoryFileStat> | StatCache, folders?: {dirs: Map<string, DirStat> | DirCache; backups: readonly string[]; clean?: CleanMark; revOf?: (path: string) => number | null | undefined; watch?: WatchMark}): Promise<void> {
  const dirs = folders?.dirs instanceof Map ? Object.fromEntries(folders.dirs) : folders?.dirs
  const revOf = folders?.clean ? folders.revOf : undefined
  const was = known.get(root)
  known.delete(root)
  // A few entries changed since this process read or wrote the cache: appended to its journal, not rewritten.
  if (folders !== undefined && dirs !== undefined && was !== undefined) {
    const head = await appendToCacheJournal(root, was, entries, dirs, {...folders, revOf})
    if (head !== undefined) {
      await writeHead(root, head)
      return
    }
  }
  const {revs, ...columns} = columnsOf(entries, revOf)
  let clean: CleanMark | undefined
  if (folders?.clean) {
    const {revs: _old, ...mark} = folders.clean
    // Every file's revision, or none: a mark that cannot say them all says none.
    clean = revs !== undefined && revs.every((rev) => rev !== undefined) ? {...mark, revs: revs as Array<number | null>} : mark
  }
  const body = folders === undefined ? {version: 2, ...columns} : {version: 2, ...columns, dirs, backups: folders.backups, ...(clean ? {clean} : {}), ...(folders.watch === undefined ? {} : {watch: folders.watch})}
  // A cache: after a power cut it may be old or empty, and then every file is simply hashed again (and a lost or
  // old clean mark only means a sync that reads its state).
  const text = JSON.stringify(body) + '\n'
  await writeFileAtomic(statCachePath(root), text, {durable: false})
  // After the new file: a journal left by a crash here names the old file's stamp, so nobody applies it again.
  await rm(statCacheJournalPath(root), {force: true})
  const stamp = dirs === undefined ? undefined : await stampOf(statCachePath(root))
  if (stamp !== undefined) {
    known.set(root, {cache: stamp, baseBytes: text.length, files: new StatColumns(columns.paths, columns.hashes, columns.sizes, columns.mtimes, columns.inos, columns.checked), revs: clean?.revs, dirs: {...dirs}})
  }
  await writeHead(root, folders === undefined ? undefined : {backups: folders.backups.length, watch: folders.watch, clean: clean === undefined ? undefined : withoutRevs(clean)})
}

/**
 * `.nexus/stat-cache.journal`: the entries a write changed since the stat cache was written whole, a line each write
 * (`{f: {path: [hash, size, mtimeMs, ino, checkedAtMs, rev?] | null}, d: {folder: [mtimeMs, checkedAtMs] | null}, r:
 * {backups, clean?, watch?, revs}}`), after a header naming the file they apply to by its stamp. Folded into the file
 * (rewritten whole, the journal removed) when a write changes more than a quarter of the entries or the journal
 * would outgrow CACHE_JOURNAL_FOLD_BYTES or an eighth of the file. A hint like the file: not fsynced; a last line
 * without its newline (a write that never finished) is ignored, a line that is not whole JSON makes the whole cache
 * unread (every file hashed again), a journal naming another file is not applied.
 */
export function statCacheJournalPath(root: string): string {
  return join(nexusDir(root), 'stat-cache.journal')
}

/** The journal is folded into the file when it would exceed this many bytes, or an eighth of the file. */
const CACHE_JOURNAL_FOLD_BYTES = 64 * 1024

/** What this process last read or wrote of a tree's stat cache: a write compares its entries with these. */
interface CacheOnDisk {
  cache: FileStamp
  baseBytes: number
  /** `whole`: it ends with a newline (an append after a torn line would glue to it). */
  journal?: {stamp: FileStamp; bytes: number; whole: boolean}
  files: StatColumns
  /** Each file's base revision as the cache holds it, in the order of `files` (undefined: it does not say). */
  revs?: ReadonlyArray<number | null | undefined>
  dirs: DirCache
}

const known = new Map<string, CacheOnDisk>()

type CacheRow = [hash: string, size: number, mtimeMs: number, ino: number | null, checkedAtMs: number | null, rev?: number | null]

/**
 * Appends what changed since `was` to the journal; the head to write after it, or undefined when the cache must be
 * written whole: another writer replaced or grew it, the journal ends in a torn line, or too much changed.
 */
async function appendToCacheJournal(
  root: string,
  was: CacheOnDisk,
  entries: Map<string, MemoryFileStat> | StatCache,
  dirs: DirCache,
  folders: {backups: readonly string[]; clean?: CleanMark; revOf?: (path: string) => number | null | undefined; watch?: WatchMark},
): Promise<ScanHead | undefined> {
  if (!sameStamp(await stampOf(statCachePath(root)), was.cache)) return undefined
  const journal = await stampOf(statCacheJournalPath(root))
  if (journal === undefined ? was.journal !== undefined : was.journal === undefined || !was.journal.whole || !sameStamp(journal, was.journal.stamp)) return undefined
  const {files: old, revs: oldRevs} = was
  const {revOf} = folders
  const changed: Record<string, CacheRow | null> = {}
  let count = 0
  let total = 0
  let found = 0
  let allRevs = revOf !== undefined
  let next = 0
  const visit = (path: string, entry: MemoryFileStat) => {
    // Left out of the file too (columnsOf): hashed again.
    if (entry.hash.length !== HASH_HEX_LENGTH) return
    total++
    const rev = revOf?.(path)
    if (rev === undefined) allRevs = false
    // Most often the cache's next path (both are in the order a scan lists them): no index of every path.
    const at = old.paths[next] === path ? next++ : old.position(path)
    if (at !== undefined) {
      found++
      if (old.sameAt(at, entry) && oldRevs?.[at] === rev) return
    }
    changed[path] = rev === undefined ? [entry.hash, entry.size, entry.mtimeMs, entry.ino ?? null, entry.checkedAtMs ?? null] : [entry.hash, entry.size, entry.mtimeMs, entry.ino ?? null, entry.checkedAtMs ?? null, rev]
    count++
  }
  if (entries instanceof Map) entries.forEach((entry, path) => visit(path, entry))
  else for (const path in entries) visit(path, entries[path])
  if (found < old.size) {
    const here = (path: string) => (entries instanceof Map ? entries.has(path) : Object.hasOwn(entries, path))
    for (const path of old.paths) {
      if (here(path)) continue
      changed[path] = null
      count++
    }
  }
  const changedDirs: Record<string, [number, number] | null> = {}
  for (const path in dirs) {
    const {mtimeMs, checkedAtMs} = dirs[path]
    if (was.dirs[path]?.mtimeMs !== mtimeMs || was.dirs[path]?.checkedAtMs !== checkedAtMs) changedDirs[path] = [mtimeMs, checkedAtMs]
  }
  for (const path in was.dirs) if (!(path in dirs)) changedDirs[path] = null
  const clean = folders.clean === undefined ? undefined : withoutRevs(folders.clean)
  const rest = {backups: folders.backups, ...(clean === undefined ? {} : {clean}), ...(folders.watch === undefined ? {} : {watch: folders.watch}), revs: allRevs && clean !== undefined}
  const line = JSON.stringify({f: changed, d: changedDirs, r: rest})
  const header = was.journal === undefined ? JSON.stringify({journal: 1, cache: was.cache}) + '\n' : ''
  const bytes = (was.journal?.bytes ?? 0) + header.length + line.length + 1
  if (count * 4 > Math.max(total, old.size) || bytes > Math.max(CACHE_JOURNAL_FOLD_BYTES, was.baseBytes / 8)) return undefined
  if (header === '') await appendFile(statCacheJournalPath(root), line + '\n')
  else await writeFileAtomic(statCacheJournalPath(root), header + line + '\n', {durable: false})
  debug('stat cache: %d entries appended to its journal', count)
  return {backups: folders.backups.length, watch: folders.watch, clean}
}

/**
 * Applies a journal to the stat cache's file as parsed, in place: its columns, folders, backups and marks. Undefined
 * (nothing applied) when the journal names another file or has no whole line; else each file's revision as the last
 * write left it (undefined: it did not say), in the order of the columns. Throws on a line that is not an entry.
 */
function applyCacheJournal(parsed: Columns & Record<string, unknown>, text: string, base: FileStamp): {revs?: Array<number | null | undefined>} | undefined {
  const lines = text.split('\n')
  // The last piece is empty after a final newline, or a write that never finished.
  lines.pop()
  if (lines.length < 2) return undefined
  const header = JSON.parse(lines[0]!) as {journal?: unknown; cache?: unknown}
  if (header === null || typeof header !== 'object' || header.journal !== 1 || !isStamp(header.cache) || !sameStamp(header.cache as unknown as FileStamp, base)) return undefined
  const {paths, hashes, sizes, mtimes, inos, checked} = parsed
  if (!Array.isArray(paths) || typeof hashes !== 'string' || !Array.isArray(sizes) || !Array.isArray(mtimes) || !Array.isArray(inos) || !Array.isArray(checked)) throw new Error('stat cache: not columns')
  const baseRevs = isCleanMark(parsed.clean) && isRevisions(parsed.clean.revs, paths.length) ? parsed.clean.revs : undefined
  // Every line's changes, the last word for each path.
  const changes = new Map<string, CacheRow | null>()
  const dirs = (parsed.dirs !== null && typeof parsed.dirs === 'object' ? parsed.dirs : (parsed.dirs = {})) as Record<string, unknown>
  for (let at = 1; at < lines.length; at++) {
    const line = JSON.parse(lines[at]!) as {f?: unknown; d?: unknown; r?: unknown}
    if (!isRecord(line) || !isRecord(line.f) || !isRecord(line.d) || !isRecord(line.r)) throw new Error(`stat cache journal line ${at + 1}: not an entry`)
    for (const path in line.f) {
      const row = line.f[path]
      if (row !== null && !isCacheRow(row)) throw new Error(`stat cache journal line ${at + 1}: ${path}: not an entry`)
      changes.set(path, row)
    }
    for (const path in line.d) {
      const dir = line.d[path]
      if (dir === null) delete dirs[path]
      else if (Array.isArray(dir) && dir.length === 2 && dir.every((n) => typeof n === 'number')) dirs[path] = {mtimeMs: dir[0], checkedAtMs: dir[1]}
      else throw new Error(`stat cache journal line ${at + 1}: folder ${path}: not an entry`)
    }
    const {backups, clean, watch} = line.r
    parsed.backups = backups
    if (clean === undefined) delete parsed.clean
    else parsed.clean = clean
    if (watch === undefined) delete parsed.watch
    else parsed.watch = watch
  }
  const count = paths.length
  const revs: Array<number | null | undefined> = baseRevs ?? Array.from({length: count})
  // Where each changed path is (the paths are sorted: a scan lists them so), and those that are new.
  const at = new Map<number, CacheRow | null>()
  const added: Array<[string, CacheRow]> = []
  for (const [path, row] of changes) {
    const position = positionOf(paths as string[], path)
    if (position !== undefined) at.set(position, row)
    else if (row !== null) added.push([path, row])
  }
  const removed = [...at.values()].some((row) => row === null)
  const positions = [...at.keys()].sort((a, b) => a - b)
  if (added.length === 0 && !removed) {
    // Entries replaced only: in place, and the hashes as runs of the old string around the new ones.
    const pieces: string[] = []
    let from = 0
    for (const position of positions) {
      const row = at.get(position)!
      pieces.push(hashes.slice(from * HASH_HEX_LENGTH, position * HASH_HEX_LENGTH), row[0])
      from = position + 1
      ;[, sizes[position], mtimes[position], inos[position], checked[position], revs[position]] = row
    }
    pieces.push(hashes.slice(from * HASH_HEX_LENGTH))
    parsed.hashes = pieces.join('')
    return {revs}
  }
  // Entries added or removed: the columns again, in sorted order (a scan walks beside them: cachedRevsInOrder).
  added.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const out = {paths: [] as string[], hashes: [] as string[], sizes: [] as number[], mtimes: [] as number[], inos: [] as Array<number | null>, checked: [] as Array<number | null>, revs: [] as Array<number | null | undefined>}
  const put = (path: string, row: CacheRow) => {
    out.paths.push(path)
    out.hashes.push(row[0])
    out.sizes.push(row[1])
    out.mtimes.push(row[2])
    out.inos.push(row[3])
    out.checked.push(row[4])
    out.revs.push(row[5])
  }
  let next = 0
  for (let position = 0; position < count; position++) {
    const path = paths[position] as string
    while (next < added.length && added[next]![0] < path) put(...added[next++]!)
    const row = at.get(position)
    if (row === null) continue
    put(path, row ?? [hashes.slice(position * HASH_HEX_LENGTH, (position + 1) * HASH_HEX_LENGTH), sizes[position] as number, mtimes[position] as number, inos[position] as number | null, checked[position] as number | null, revs[position]])
  }
  while (next < added.length) put(...added[next++]!)
  Object.assign(parsed, {paths: out.paths, hashes: out.hashes.join(''), sizes: out.sizes, mtimes: out.mtimes, inos: out.inos, checked: out.checked})
  return {revs: out.revs}
}

/** Where `path` is in `paths` (sorted, as a scan lists them), by bisection; looked for one by one if they are not. */
function positionOf(paths: readonly string[], path: string): number | undefined {
  let low = 0
  let high = paths.length - 1
  while (low <= high) {
    const mid = (low + high) >> 1
    const here = paths[mid]!
    if (here === path) return mid
    if (here < path) low = mid + 1
    else high = mid - 1
  }
  const found = paths.indexOf(path)
  return found < 0 ? undefined : found
}

function isCacheRow(value: unknown): value is CacheRow {
  if (!Array.isArray(value) || (value.length !== 5 && value.length !== 6)) return false
  const [hash, size, mtimeMs, ino, checkedAtMs, rev] = value as unknown[]
  return (
    typeof hash === 'string' && hash.length === HASH_HEX_LENGTH && typeof size === 'number' && typeof mtimeMs === 'number' && (ino === null || typeof ino === 'number') && (checkedAtMs === null || typeof checkedAtMs === 'number') &&
    (value.length === 5 || rev === null || (Number.isSafeInteger(rev) && (rev as number) >= 0))
  )
}

function withoutRevs({revs: _revs, ...mark}: CleanMark): Omit<CleanMark, 'revs'> {
  return mark
}

/** Writes the head of the stat cache on disk, as `hints` read it (a cache written before heads were). */
export async function writeScanHead(root: string, hints: ScanHints): Promise<void> {
  await writeHead(root, {backups: hints.backups.length, watch: hints.watch, clean: hints.clean === undefined ? undefined : withoutRevs(hints.clean)})
}

/** The head of the stat cache just written, naming it by its stamp; none for a cache without folders (no mark, no clock). */
async function writeHead(root: string, head: ScanHead | undefined): Promise<void> {
  const cache = head === undefined ? undefined : await stampOf(statCachePath(root))
  if (head === undefined || cache === undefined || (head.clean === undefined && head.watch === undefined)) {
    await rm(statCacheHeadPath(root), {force: true})
    return
  }
  const journal = await stampOf(statCacheJournalPath(root))
  const body = {cache, ...(journal === undefined ? {} : {journal}), ...head}
  await writeFileAtomic(statCacheHeadPath(root), JSON.stringify(body) + '\n', {durable: false})
}

/** The head of the stat cache on disk, when it names that cache (see statCacheHeadPath); otherwise undefined. */
export async function readScanHead(root: string): Promise<ScanHead | undefined> {
  let parsed: {cache?: unknown; journal?: unknown; clean?: unknown; watch?: unknown; backups?: unknown}
  try {
    parsed = JSON.parse(readFileSync(statCacheHeadPath(root), 'utf8')) as typeof parsed
  } catch {
    return undefined
  }
  const cache = await stampOf(statCachePath(root))
  if (parsed === null || typeof parsed !== 'object' || cache === undefined || !isStamp(parsed.cache)) return undefined
  if (!sameStamp(cache, parsed.cache as unknown as FileStamp) || !Number.isSafeInteger(parsed.backups)) return undefined
  // The journal as the head names it: none, or the very one (an append since moved it).
  const journal = await stampOf(statCacheJournalPath(root))
  if (journal === undefined ? parsed.journal !== undefined : !isStamp(parsed.journal) || !sameStamp(journal, parsed.journal as unknown as FileStamp)) return undefined
  if (parsed.clean !== undefined && !isCleanMark(parsed.clean)) return undefined
  if (parsed.watch !== undefined && !isWatchMark(parsed.watch)) return undefined
  return {backups: parsed.backups as number, ...(parsed.clean === undefined ? {} : {clean: parsed.clean}), ...(parsed.watch === undefined ? {} : {watch: {clock: parsed.watch.clock, fullAt: parsed.watch.fullAt}})}
}

function columnsOf(
  entries: Map<string, MemoryFileStat> | StatCache,
  revOf?: (path: string) => number | null | undefined,
): {paths: string[]; hashes: string; sizes: number[]; mtimes: number[]; inos: Array<number | null>; checked: Array<number | null>; revs?: Array<number | null | undefined>} {
  const revs: Array<number | null | undefined> | undefined = revOf ? [] : undefined
  const paths: string[] = []
  const hashes: string[] = []
  const sizes: number[] = []
  const mtimes: number[] = []
  const inos: Array<number | null> = []
  const checked: Array<number | null> = []
  const add = (path: string, entry: MemoryFileStat) => {
    // A hash of another length would shift every later one: such an entry is left out (it is hashed again).
    if (entry.hash.length !== HASH_HEX_LENGTH) return
    paths.push(path)
    hashes.push(entry.hash)
    sizes.push(entry.size)
    mtimes.push(entry.mtimeMs)
    inos.push(entry.ino ?? null)
    checked.push(entry.checkedAtMs ?? null)
    revs?.push(revOf!(path))
  }
  // forEach, not for-of: no [path, entry] pair per file.
  if (entries instanceof Map) entries.forEach((entry, path) => add(path, entry))
  else for (const path in entries) add(path, entries[path])
  return {paths, hashes: hashes.join(''), sizes, mtimes, inos, checked, revs}
}
