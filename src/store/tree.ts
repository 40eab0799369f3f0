/**
 * The `.memory/` tree: scanning (content hashes, the stat cache as a hint only) and file reads/writes that go
 * through the path guard. Backups and temp files are not memory files.
 */
import {accessSync, constants, existsSync, lstatSync, readdirSync, statSync} from 'node:fs'
import {access, lstat, readFile, rm, rmdir} from 'node:fs/promises'
import {basename, dirname, isAbsolute, join, relative, sep} from 'node:path'

import createDebug from 'debug'

import {BadInputError, UnreadableFileError} from '../errors.js'
import {type AtomicBatch, fsyncDir, readTextIfExists, type StagedFile, writeFileAtomic} from './atomic.js'
import {forEachConcurrently} from './concurrency.js'
import {HASH_HEX_LENGTH, hashBytes} from './hash.js'
import {blankStat, lstatInto} from './file-stat.js'
import {forgetGuardedFolders, realTreeRoot, resolveInside} from './inside.js'
import {checkRelativePath, isBackupName, isTempName, TEMP_NAME} from './paths.js'
import {pidAlive} from './pid.js'
import {memoryDir, nexusDir} from './root.js'

const debug = createDebug('jarvis:store')

/**
 * The "racy git" window. A cached `{size, mtimeMs}` may be trusted only for a file whose mtime is older than
 * the moment it was last checked by at least this much: a file written in the same timestamp granule as the
 * check (coarse 1 s or 2 s filesystem clocks, or a write right after the scan) could change again without its
 * size or mtime changing, so such entries are always re-hashed. Generous on purpose (FAT has 2 s mtimes).
 */
export const RACY_WINDOW_MS = 2000

/**
 * The racy-git rule for any entry keyed by a stat: what was recorded of a file (or a folder) may stand for it only
 * when its last change (`changedMs`: its mtime, or its ctime too) is older than the check that recorded it
 * (`checkedAtMs`, taken before the stat) by RACY_WINDOW_MS.
 */
export function isSettled(changedMs: number, checkedAtMs: number | undefined): boolean {
  return checkedAtMs !== undefined && changedMs < checkedAtMs - RACY_WINDOW_MS
}
const SCAN_CONCURRENCY = 32

export interface MemoryFileStat {
  /** sha256 hex of the file's bytes. */
  hash: string
  size: number
  mtimeMs: number
  ino?: number
  /** When this entry was checked (ms since epoch, taken before the stat). Needed for the racy-git rule. */
  checkedAtMs?: number
}

/** A previous scan's result, keyed by relative path: a hint to skip re-hashing unchanged files, never a decision. */
export type StatCache = Record<string, MemoryFileStat>

/** A stat cache as a record (read from JSON) or a map (kept by a long-lived index): the scan reads either. */
type Hints<T> = Record<string, T> | ReadonlyMap<string, T>

/**
 * A stat cache kept as it was read (`.nexus/stat-cache.json` holds one array per field): the entry of a file is made
 * when a scan asks for it, not an object per file and a record of 10,000 keys before the scan starts. The caller
 * checked the arrays: as many of each as paths, one hash of HASH_HEX_LENGTH digits per path in `hashes`.
 */
export class StatColumns {
  private index: Map<string, number> | undefined

  constructor(
    readonly paths: readonly string[],
    private readonly hashes: string,
    private readonly sizes: readonly number[],
    private readonly mtimes: readonly number[],
    private readonly inos: ReadonlyArray<number | null>,
    private readonly checked: ReadonlyArray<number | null>,
  ) {}

  get size(): number {
    return this.paths.length
  }

  /** The entry of `paths[at]`, a new object (a slice of the one hash string: V8 keeps it as a view, not a copy). */
  entryAt(at: number): MemoryFileStat {
    const start = at * HASH_HEX_LENGTH
    return {hash: this.hashes.slice(start, start + HASH_HEX_LENGTH), size: this.sizes[at], mtimeMs: this.mtimes[at], ino: this.inos[at] ?? undefined, checkedAtMs: this.checked[at] ?? undefined}
  }

  /** The entry of a path, found through an index built the first time (only a scan that lists a folder again asks). */
  get(path: string): MemoryFileStat | undefined {
    const at = this.position(path)
    return at === undefined ? undefined : this.entryAt(at)
  }

  /** The hash of a path's entry, without making the entry. */
  hashOf(path: string): string | undefined {
    const at = this.position(path)
    return at === undefined ? undefined : this.hashes.slice(at * HASH_HEX_LENGTH, (at + 1) * HASH_HEX_LENGTH)
  }

  /** Whether the entry at `at` has `entry`'s hash, size, mtime, inode and check time (no entry made to compare). */
  sameAt(at: number, entry: MemoryFileStat): boolean {
    return this.sizes[at] === entry.size && this.mtimes[at] === entry.mtimeMs && this.inos[at] === (entry.ino ?? null) && this.checked[at] === (entry.checkedAtMs ?? null) && this.hashes.startsWith(entry.hash, at * HASH_HEX_LENGTH)
  }

  /** Where `path` is in `paths`, through an index built the first time. */
  position(path: string): number | undefined {
    if (this.index === undefined) {
      this.index = new Map()
      for (let at = 0; at < this.paths.length; at++) this.index.set(this.paths[at], at)
    }
    return this.index.get(path)
  }

  /** Every entry, as a record by path (the cache's shape before it was kept as columns). */
  toRecord(): StatCache {
    const files: StatCache = {}
    for (let at = 0; at < this.paths.length; at++) files[this.paths[at]] = this.entryAt(at)
    return files
  }
}

/** What a scan accepts as its stat cache: a record, a map, or the columns as read. */
export type FileHints = Hints<MemoryFileStat> | StatColumns

const hintOf = <T>(hints: Hints<T> | StatColumns | undefined, key: string): T | undefined =>
  hints === undefined ? undefined : hints instanceof Map || hints instanceof StatColumns ? (hints.get(key) as T | undefined) : (hints as Record<string, T>)[key]
const hintKeys = <T>(hints: Hints<T>): Iterable<string> => (hints instanceof Map ? hints.keys() : Object.keys(hints))

export interface ScanOptions {
  /** Ignore the cache and hash every file (a "full check"). */
  fullCheck?: boolean
  /** Filled with the conflict backups the walk meets (relative paths), which are never memory files. */
  backups?: string[]
  /** A previous scan's directories (its `dirs`): directories unchanged since are not read again (see walkMemory). */
  dirCache?: Hints<DirStat>
  /** Filled with the directories this scan saw: the next scan's `dirCache`. */
  dirs?: Map<string, DirStat>
  /** The backups the scan that made `dirCache` met: those in a folder not listed again are still reported. */
  backupCache?: readonly string[]
  /**
   * Filled with the number of entries given back exactly as the stat cache held them (the same objects): when it is
   * the size of both the cache and the result, the scan found what the cache says, without comparing 10,000 entries.
   * `hashed`, when given, with the paths of the files read and hashed (their entry did not hold): every other file
   * found has the cache's hash.
   */
  counts?: {unchanged: number; hashed?: string[]}
  /**
   * Filled with the text of each file the scan reads to hash that `wanted` asks for and that has at most `maxBytes`:
   * a sync needs the text of every file changed since its base, which it read a second time.
   */
  texts?: {into: Map<string, string>; maxBytes: number; wanted(rel: string, hash: string): boolean}
  /**
   * Filled with the files and folders this user may not read (permission denied), sorted, none under another: they
   * are left out of the result. Without it such a file or folder stops the scan (UnreadableFileError).
   */
  unreadable?: UnreadableEntry[]
}

/** A file or folder of `.memory/` a scan may not read (see ScanOptions' `unreadable`). */
export interface UnreadableEntry {
  path: string
  folder: boolean
}

/** The system's answer to something this user may not do (its permissions). */
export function isPermissionError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return code === 'EACCES' || code === 'EPERM'
}

/** A folder hint that never holds (no mtime is -1): the next scan lists that folder again. */
const NEVER_HOLDS: DirStat = {mtimeMs: -1, checkedAtMs: 0}

/**
 * A file or folder the scan may not read (`error`, when it is a permission error; any other is thrown as it is):
 * added to `unreadable`, or thrown (UnreadableFileError) for a caller that did not ask for them, and always for
 * `.memory/` itself. The folder it is in (a folder: itself) is listed again by the next scan, whatever its mtime: the
 * stat cache, which lacks what could not be read, must not stand for it (its files would look deleted).
 */
function cannotRead(options: {unreadable?: UnreadableEntry[]; dirs?: Map<string, DirStat>}, path: string, folder: boolean, error: unknown): void {
  if (!isPermissionError(error)) throw error
  if (options.unreadable === undefined || (folder && path === '')) throw new UnreadableFileError(path, folder, error)
  options.unreadable.push({path, folder})
  options.dirs?.set(folder ? path : parentOf(path), NEVER_HOLDS)
}

/** `unreadable` sorted, each once, nothing under a folder it names (a scan meets a folder and its files apart). */
function tidyUnreadable(unreadable: UnreadableEntry[] | undefined): void {
  if (unreadable === undefined || unreadable.length === 0) return
  const folders = unreadable.filter((entry) => entry.folder).map((entry) => `${entry.path}/`)
  const seen = new Set<string>()
  const kept = unreadable.filter((entry) => {
    const key = `${entry.folder ? 'd' : 'f'}${entry.path}`
    if (seen.has(key)) return false
    seen.add(key)
    return !folders.some((folder) => entry.path.startsWith(folder))
  })
  kept.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  unreadable.splice(0, unreadable.length, ...kept)
}

function cacheHit(cached: MemoryFileStat | undefined, size: number, mtimeMs: number, ino: number): cached is MemoryFileStat {
  if (!cached) return false
  if (cached.size !== size || cached.mtimeMs !== mtimeMs) return false
  if (cached.ino !== undefined && cached.ino !== ino) return false
  // Racy git: an mtime at or after (check time − window) proves nothing; re-hash.
  if (!isSettled(mtimeMs, cached.checkedAtMs)) return false
  return typeof cached.hash === 'string' && cached.hash.length > 0
}

/** What a scan saw of one directory of `.memory/`: its mtime, and when it was looked at (for the racy-git rule). */
export interface DirStat {
  mtimeMs: number
  checkedAtMs: number
}

/** A previous scan's directories, keyed by relative path ('' is `.memory/` itself): hints to skip re-reading them. */
export type DirCache = Record<string, DirStat>

/** A directory's hint holds when its mtime is unchanged and older than the check that recorded it (racy-git rule). */
function dirHintHolds(hint: DirStat | undefined, mtimeMs: number): hint is DirStat {
  return hint !== undefined && hint.mtimeMs === mtimeMs && isSettled(mtimeMs, hint.checkedAtMs)
}

/** The absolute path of the memory file at `rel` in `base` (`.memory/`): one string where the separator is "/". */
const fullOf = (base: string, rel: string) => (sep === '/' ? `${base}/${rel}` : join(base, rel))
const parentOf = (rel: string) => rel.slice(0, Math.max(0, rel.lastIndexOf('/')))
const nameOf = (rel: string) => rel.slice(rel.lastIndexOf('/') + 1)

interface KnownEntries {
  /** Its files' relative paths (the stat cache's own keys) and their cached stats, side by side. */
  rels: string[]
  stats: MemoryFileStat[]
  dirs: string[]
  backups: string[]
}

/**
 * The entries a previous scan found in each directory: its memory files (with their cached stats), its
 * subdirectories and its backups. The cache's keys are kept as they are (no name split off, no pair per file): a
 * no-op scan of 10,000 files made 30,000 strings and arrays here and in the walk, most of its garbage.
 */
function knownEntries(statCache: FileHints, dirCache: Hints<DirStat>, backups: readonly string[]): Map<string, KnownEntries> {
  const entries = new Map<string, KnownEntries>()
  const of = (dir: string) => {
    let entry = entries.get(dir)
    if (!entry) entries.set(dir, (entry = {rels: [], stats: [], dirs: [], backups: []}))
    return entry
  }
  // Paths of one folder come together (the cache is written sorted): its parent is sliced once, not per file.
  let last: KnownEntries | undefined
  let lastParent = ''
  const add = (rel: string, stat: MemoryFileStat) => {
    const slash = rel.lastIndexOf('/')
    if (last === undefined || slash !== lastParent.length || !rel.startsWith(lastParent) || (slash === -1) !== (lastParent === '')) {
      lastParent = parentOf(rel)
      last = of(lastParent)
    }
    last.rels.push(rel)
    last.stats.push(stat)
  }
  if (statCache instanceof StatColumns) for (let at = 0; at < statCache.paths.length; at++) add(statCache.paths[at], statCache.entryAt(at))
  else if (statCache instanceof Map) for (const [rel, stat] of statCache) add(rel, stat)
  else for (const rel in statCache) add(rel, (statCache as Record<string, MemoryFileStat>)[rel])
  for (const rel of hintKeys(dirCache)) if (rel !== '') of(parentOf(rel)).dirs.push(nameOf(rel))
  for (const rel of backups) of(parentOf(rel)).backups.push(rel)
  return entries
}

/**
 * The memory files the walk found, side by side (no tuple per file: a no-op scan of 10,000 files made most of its
 * garbage in arrays and strings per file): each one's relative "/" path and, when the walk knows it from a folder
 * it did not list again, its entry in the stat cache.
 */
interface Found {
  rels: string[]
  known: Array<MemoryFileStat | undefined>
}

/**
 * The walk every scan does: each memory file under `.memory/` (see Found), temp files (absolute paths) apart, the
 * conflict backups it meets added to `backups`. Never follows a symlink; skips anything that is not a regular file
 * or a directory. Synchronous: on a warm disk cache each call is microseconds, and a promise per directory cost
 * more than the call.
 *
 * With `dirCache` (a previous walk's `dirs`), a directory whose mtime has not changed since (and was not racy
 * then) is not read again: adding, removing or renaming an entry changes its directory's mtime, so its entries
 * are the ones the previous walk found (`statCache` for its files). Its files are still each stat-ed by the scan,
 * since an edit in place changes only the file. `dirs` is filled with what this walk saw.
 */
function walkMemory(root: string, options: {backups?: string[]; statCache?: FileHints; dirCache?: Hints<DirStat>; dirs?: Map<string, DirStat>; backupCache?: readonly string[]; unreadable?: UnreadableEntry[]} = {}): Found & {temps: string[]} {
  const base = memoryDir(root)
  const rels: string[] = []
  const known: Array<MemoryFileStat | undefined> = []
  const temps: string[] = []
  const entriesKnown = options.dirCache ? knownEntries(options.statCache ?? {}, options.dirCache, options.backupCache ?? []) : undefined
  const relOf = (dirRel: string, name: string) => (dirRel === '' ? name : `${dirRel}/${name}`)
  const walk = (dir: string, dirRel: string): void => {
    const checkedAtMs = Date.now()
    if (entriesKnown) {
      // `.memory/` itself may be a symlink to a folder kept elsewhere (store-format.md); below it, none is followed.
      let info
      try {
        info = dir === base ? statSync(dir, {throwIfNoEntry: false}) : lstatSync(dir, {throwIfNoEntry: false})
      } catch (error) {
        return cannotRead(options, dirRel, true, error)
      }
      if (!info?.isDirectory()) {
        if (dir === base) throw Object.assign(new Error(`ENOENT: no such directory, scandir '${dir}'`), {code: 'ENOENT'})
        return // removed while scanning
      }
      const hint = hintOf(options.dirCache, dirRel)
      if (dirHintHolds(hint, info.mtimeMs)) {
        options.dirs?.set(dirRel, hint)
        const entry = entriesKnown.get(dirRel)
        if (entry) {
          for (let i = 0; i < entry.rels.length; i++) {
            rels.push(entry.rels[i])
            known.push(entry.stats[i])
          }
          // A backup comes and goes with a change of its folder: one the previous walk met is still there.
          if (options.backups) for (const rel of entry.backups) options.backups.push(rel)
          for (const name of entry.dirs) walk(`${dir}${sep}${name}`, relOf(dirRel, name))
        }
        return
      }
      options.dirs?.set(dirRel, {mtimeMs: info.mtimeMs, checkedAtMs})
    }
    let entries
    try {
      entries = readdirSync(dir, {withFileTypes: true})
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && dir !== base) return // removed while scanning
      return cannotRead(options, dirRel, true, error)
    }
    const subdirs: string[] = []
    for (const entry of entries) {
      if (entry.isSymbolicLink()) {
        debug('scan: skipping symlink %s', join(dir, entry.name))
        continue
      }
      if (entry.isDirectory()) subdirs.push(entry.name)
      else if (!entry.isFile()) continue
      else if (isBackupName(entry.name)) options.backups?.push(relOf(dirRel, entry.name))
      else if (isTempName(entry.name)) temps.push(join(dir, entry.name))
      else {
        rels.push(relOf(dirRel, entry.name))
        known.push(undefined)
      }
    }
    // In name order, so that the next walk (which follows this one's folders) finds the files sorted.
    subdirs.sort()
    for (const name of subdirs) walk(join(dir, name), relOf(dirRel, name))
  }
  walk(base, '')
  return {rels, known, temps}
}

/**
 * The relative path of every memory file, sorted, from the walk alone (a folder's entries say which are files): no
 * file is stat-ed or read. A listing stats only the files it shows (src/files/list.ts).
 */
export function memoryFilePaths(root: string): string[] {
  return walkMemory(root).rels.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

/** The absolute path of the memory file at `rel` (relative, `/`), as a scan stats it. */
export function memoryFilePath(root: string, rel: string): string {
  return fullOf(memoryDir(root), rel)
}

/**
 * What a watch of the tree (a running jarvis: src/warm/changes.ts) answers: a clock to ask with next time, and the paths
 * of `.memory/` changed since the clock asked (relative, `/`), or `all` when it cannot say. A caller keeps the clock
 * with what it saw after asking: anything changed after the answer is in the next one.
 */
export type WatchAnswer = {clock: string; paths: string[]} | {clock: string; all: true; reason?: string}

/** A watch to ask; undefined when none answers (the caller looks at every file). */
export interface TreeWatch {
  changes(clock: string | undefined): Promise<WatchAnswer | undefined>
  /** No watch answered and the caller looked at `files` files: a watch may be started for the calls to come. */
  unwatched?(files: number): Promise<void> | void
}

/**
 * The scan of a watched tree (see WatchAnswer): the stat cache's files as it holds them, but for `paths`, the ones the
 * watch reported changed since the cache's clock, which are looked at as scanMemory looks at every file (an `lstat`,
 * read and hashed when their entry does not hold). The cache's folders and backups stand, but for the backups among
 * `paths`. Nothing else is listed or stat-ed: at 10,000 files that is the whole cost of a scan.
 */
export async function scanWatched(root: string, statCache: FileHints, paths: readonly string[], options: ScanOptions & {backupCache: readonly string[]}): Promise<Map<string, MemoryFileStat>> {
  const base = memoryDir(root)
  const changed = new Set<string>()
  const backups = new Set(options.backupCache)
  for (const rel of paths) {
    const name = nameOf(rel)
    if (isTempName(name)) continue
    if (isBackupName(name)) {
      let isFile
      try {
        isFile = lstatSync(fullOf(base, rel), {throwIfNoEntry: false})?.isFile()
      } catch (error) {
        if (!isPermissionError(error)) throw error
        continue // in a folder this user may not read: as the cache has it
      }
      if (isFile) backups.add(rel)
      else backups.delete(rel)
    } else changed.add(rel)
  }
  options.backups?.push(...[...backups].sort())
  if (options.dirCache !== undefined) for (const rel of hintKeys(options.dirCache)) options.dirs?.set(rel, hintOf(options.dirCache, rel)!)
  const foundRels: string[] = []
  const foundStats: MemoryFileStat[] = []
  // An entry without a stat (a file a sync wrote, its hash the base's: clean-mark.ts) is looked at like a changed one.
  const unstatted: string[] = []
  const take = (rel: string, stat: MemoryFileStat) => {
    if (changed.has(rel)) return
    if (stat.size < 0 || stat.mtimeMs < 0) return void unstatted.push(rel)
    foundRels.push(rel)
    foundStats.push(stat)
    if (options.counts) options.counts.unchanged++
  }
  if (statCache instanceof StatColumns) for (let at = 0; at < statCache.paths.length; at++) take(statCache.paths[at], statCache.entryAt(at))
  else if (statCache instanceof Map) for (const [rel, stat] of statCache) take(rel, stat)
  else for (const rel in statCache) take(rel, (statCache as Record<string, MemoryFileStat>)[rel])
  const toHash: ToHash[] = []
  const scratch = blankStat()
  for (const rel of [...changed, ...unstatted]) {
    const checkedAtMs = Date.now()
    let info
    try {
      info = lstatInto(fullOf(base, rel), scratch)
    } catch (error) {
      // Only a folder on the way can refuse an lstat.
      cannotRead(options, parentOf(rel), true, error)
      continue
    }
    if (!info?.isFile) continue
    const cached = hintOf(statCache, rel)
    if (cacheHit(cached, info.size, info.mtimeMs, info.ino)) {
      foundRels.push(rel)
      foundStats.push({hash: cached.hash, size: info.size, mtimeMs: info.mtimeMs, ino: info.ino, checkedAtMs: cached.checkedAtMs})
    } else toHash.push({rel, mtimeMs: info.mtimeMs, ino: info.ino, checkedAtMs})
  }
  await hashFiles(base, toHash, foundRels, foundStats, options)
  tidyUnreadable(options.unreadable)
  debug('watched scan: %d files, %d reported changed, %d hashed', foundRels.length, changed.size, toHash.length)
  return sortedMap(foundRels, foundStats)
}

/** A file the scan must read: its stat cache entry did not hold. */
interface ToHash {
  rel: string
  mtimeMs: number
  ino: number
  checkedAtMs: number
}

/**
 * Walks `.memory/` and returns every memory file (relative `/` path → hash, size, mtime, inode, checkedAtMs),
 * sorted by path. Skips backups (`*.local.bak`, `*.local.N.bak`), temp files, symlinks (never followed) and
 * anything that is not a regular file. The returned map can be stored and passed back as the next `statCache`.
 */
export async function scanMemory(root: string, statCache?: FileHints, options: ScanOptions = {}): Promise<Map<string, MemoryFileStat>> {
  const base = memoryDir(root)
  const {rels, known, temps} = walkMemory(root, {backups: options.backups, statCache, dirCache: options.fullCheck ? undefined : options.dirCache, dirs: options.dirs, backupCache: options.backupCache, unreadable: options.unreadable})
  // The walk sees every temp file anyway: one a dead process left behind goes now (see sweepTempFiles).
  await Promise.all(temps.filter((path) => !pidAlive(Number(TEMP_NAME.exec(basename(path))![1]))).map((path) => rm(path, {force: true})))

  let reused = 0
  // The files found, side by side: no tuple per file.
  const foundRels: string[] = []
  const foundStats: MemoryFileStat[] = []
  const toHash: ToHash[] = []
  // Synchronous on purpose: on a warm cache a stat is microseconds, and a promise per file through the thread
  // pool cost more than the stat itself (120 ms of a 10,000-file no-op sync).
  // One object the lstat of each file is written into (see lstatInto): no fs.Stats and four Dates per file.
  const scratch = blankStat()
  insideFolder(base, (relative) => {
    for (let i = 0; i < rels.length; i++) {
      const rel = rels[i]
      const checkedAtMs = Date.now()
      let info
      try {
        info = lstatInto(relative ? rel : fullOf(base, rel), scratch)
      } catch (error) {
        // Only a folder on the way can refuse an lstat (one whose listing the stat cache stood for).
        cannotRead(options, parentOf(rel), true, error)
        continue
      }
      if (!info?.isFile) continue
      const cached = options.fullCheck ? undefined : (known[i] ?? hintOf(statCache, rel))
      if (cacheHit(cached, info.size, info.mtimeMs, info.ino)) {
        reused++
        foundRels.push(rel)
        // The cached entry itself when nothing in it moved: no object per file on a no-op scan of a large tree.
        if (cached.ino === info.ino) {
          foundStats.push(cached)
          if (options.counts) options.counts.unchanged++
        } else foundStats.push({hash: cached.hash, size: info.size, mtimeMs: info.mtimeMs, ino: info.ino, checkedAtMs: cached.checkedAtMs})
      } else toHash.push({rel, mtimeMs: info.mtimeMs, ino: info.ino, checkedAtMs})
    }
  })
  await hashFiles(base, toHash, foundRels, foundStats, options)
  tidyUnreadable(options.unreadable)
  debug('scan: %d files, %d hashes reused from the stat cache', foundRels.length, reused)
  return sortedMap(foundRels, foundStats)
}

/** Reads and hashes `toHash`, adding each file found to `foundRels` and `foundStats` (and its text to `options.texts`). */
async function hashFiles(base: string, toHash: readonly ToHash[], foundRels: string[], foundStats: MemoryFileStat[], options: ScanOptions): Promise<void> {
  // Read and hash many files at once: a sequential await per file dominated a cold scan.
  await forEachConcurrently(toHash, SCAN_CONCURRENCY, async ({rel, mtimeMs, ino, checkedAtMs}) => {
    let bytes
    try {
      bytes = await readFile(fullOf(base, rel))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      return cannotRead(options, rel, false, error)
    }
    // Size from the bytes we hashed, so the entry never pairs a hash with another version's size.
    const hash = hashBytes(bytes)
    options.counts?.hashed?.push(rel)
    foundRels.push(rel)
    foundStats.push({hash, size: bytes.length, mtimeMs, ino, checkedAtMs})
    const texts = options.texts
    if (texts && bytes.length <= texts.maxBytes && texts.wanted(rel, hash)) texts.into.set(rel, bytes.toString('utf8'))
  })
}

/**
 * Runs `body`, which must be synchronous, with the working directory moved to `folder` (absolute), so that it can
 * name the files there by their relative paths: 10,000 lstat calls with paths relative to `.memory/` cost ~20 %
 * less than with absolute ones (the kernel walks fewer folders, Node converts shorter strings) and build no
 * absolute path each. `body(false)` where the move is not made: not in the main thread, a relative `folder`, or a
 * working directory that is gone (where it could not be moved back).
 *
 * Why moving the process's working directory is safe here: no other JavaScript of this thread runs until `body`
 * returns (it is synchronous) and the directory is moved back before `insideFolder` returns or throws. What could
 * run meanwhile is file-system work already handed to libuv's thread pool and worker threads: every path jarvis
 * gives either is absolute (built from the tree root, which findRoot resolves), and its only worker (the grep
 * guard) touches no file. The one way back can fail: the working directory removed by another process during
 * `body`; the process then stays in `folder`, where every absolute path still means what it meant.
 */
export function insideFolder(folder: string, body: (relative: boolean) => void): void {
  let home: string | undefined
  try {
    // process.cwd() may be a cached answer (graceful-fs caches it): the folder is looked at too. A worker thread has no
    // process.chdir (it throws ERR_WORKER_UNSUPPORTED_OPERATION): node:worker_threads (~1–2 ms) is not loaded to ask.
    if (isAbsolute(folder) && existsSync((home = process.cwd()))) process.chdir(folder)
    else home = undefined
  } catch {
    home = undefined
  }
  if (home === undefined) return body(false)
  try {
    body(true)
  } finally {
    try {
      process.chdir(home)
    } catch (error) {
      debug('scan: could not go back to %s (%s), staying in %s', home, (error as Error).message, folder)
    }
  }
}

/** `keys[i]` → `values[i]`, in the order of the keys. Already in order (a no-op scan of a tree the cache lists), nothing is sorted. */
function sortedMap<T>(keys: string[], values: T[]): Map<string, T> {
  let sorted = true
  for (let i = 1; i < keys.length && sorted; i++) sorted = keys[i - 1] < keys[i]
  const map = new Map<string, T>()
  if (sorted) {
    for (let i = 0; i < keys.length; i++) map.set(keys[i], values[i])
    return map
  }
  const order = keys.map((_, i) => i).sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : 0))
  for (const i of order) map.set(keys[i], values[i])
  return map
}

/** The text of a memory file, or null when it does not exist. The path is checked (PathRefusedError). */
export async function readMemoryFile(root: string, rel: string): Promise<string | null> {
  const path = await resolveInside(memoryDir(root), rel)
  try {
    return await readTextIfExists(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EISDIR') throw new BadInputError(`.memory/${rel} is a directory, not a file`, {path: rel})
    if (isPermissionError(error)) throw new UnreadableFileError(rel, false, error)
    throw error
  }
}

/**
 * Writes a memory file atomically (creating parent directories). The path is checked (PathRefusedError).
 * `syncDirLater`: see writeFileAtomic — the caller fsyncs the folders of many files at once. `absent`: the caller
 * has just seen (`memoryFileAbsent`) that no file is there, so neither the guard nor the write looks again.
 */
export async function writeMemoryFile(root: string, rel: string, content: string | Uint8Array, options: {syncDirLater?: Set<string>; absent?: boolean} = {}): Promise<void> {
  const path = await resolveInside(memoryDir(root), rel, {lastSeenAbsent: options.absent})
  await writeFileAtomic(path, content, {syncDirLater: options.syncDirLater, absent: options.absent})
}

/** Writes a memory file's new content to a temp file of `batch` (see AtomicBatch); the path is checked as writeMemoryFile does. */
export async function stageMemoryFile(root: string, rel: string, content: string | Uint8Array, batch: AtomicBatch, options: {absent?: boolean} = {}): Promise<StagedFile> {
  const path = await resolveInside(memoryDir(root), rel, {lastSeenAbsent: options.absent})
  return batch.stage(path, content, {absent: options.absent})
}

/**
 * True when nothing at all (no file, folder or link) is at `.memory/<rel>`: one lstat, nothing read. Synchronous:
 * a pull asks it for each new file right before the rename, where a promise through the thread pool cost more than
 * the lstat itself.
 */
export function memoryFileAbsent(root: string, rel: string): boolean {
  try {
    return lstatSync(join(memoryDir(root), checkRelativePath(rel)), {throwIfNoEntry: false}) === undefined
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return true
    throw error
  }
}

/**
 * What stands where the memory file `rel` is to be written when it is no file: something other than a folder at one of
 * its folders' places (`file`), or a folder at its own (`folder`). Undefined when nothing does. Synchronous: asked only
 * after a write failed or found its place taken.
 */
export function shapeInTheWay(root: string, rel: string): {path: string; kind: 'file' | 'folder'} | undefined {
  const base = memoryDir(root)
  const segments = checkRelativePath(rel).split('/')
  for (let i = 1; i <= segments.length; i++) {
    const path = segments.slice(0, i).join('/')
    let info
    try {
      // A folder on the way may be a symlink to one (the path guard allows those inside the tree); the file's own place is not followed.
      info = i < segments.length ? statSync(join(base, path), {throwIfNoEntry: false}) : lstatSync(join(base, path), {throwIfNoEntry: false})
    } catch {
      return undefined
    }
    if (info === undefined) return undefined
    if (i < segments.length && !info.isDirectory()) return {path, kind: 'file'}
    if (i === segments.length && info.isDirectory()) return {path, kind: 'folder'}
  }
  return undefined
}

/**
 * False when this user may not read the memory file at `rel` (its permissions), true otherwise (a file that is not
 * there is no more unreadable): one access(2), nothing read. A pull asks it before writing over a file, which it may
 * not overwrite without reading it (see unchangedSinceScan).
 */
export async function memoryFileReadable(root: string, rel: string): Promise<boolean> {
  try {
    await access(join(memoryDir(root), checkRelativePath(rel)), constants.R_OK)
    return true
  } catch (error) {
    return !isPermissionError(error)
  }
}

/**
 * The files of `paths` (relative, `/`) this user may not read, as UnreadableEntry: one access(2) each, nothing read.
 * For `jarvis status`, whose scan trusts the stat cache for a file whose size and mtime did not move (a chmod moves
 * neither), where a sync finds out when it must read the file.
 */
export function unreadableFiles(root: string, paths: Iterable<string>): UnreadableEntry[] {
  const base = memoryDir(root)
  const found: UnreadableEntry[] = []
  for (const path of paths) {
    try {
      accessSync(fullOf(base, path), constants.R_OK)
    } catch (error) {
      if (isPermissionError(error)) found.push({path, folder: false})
    }
  }
  return found
}

/** Removes empty directories from `dir` upwards, stopping at (and never removing) `stop`. */
export async function pruneEmptyDirs(dir: string, stop: string): Promise<void> {
  let current = dir
  for (;;) {
    const rel = relative(stop, current)
    if (rel === '' || rel === '..' || rel.startsWith('..' + sep) || isAbsolute(rel)) return
    try {
      await rmdir(current)
    } catch {
      return // not empty, or gone: stop
    }
    forgetGuardedFolders()
    current = dirname(current)
  }
}

/**
 * Deletes a memory file and any parent directories it leaves empty (never `.memory/` itself).
 * Returns false when there was nothing to delete.
 */
export async function deleteMemoryFile(root: string, rel: string): Promise<boolean> {
  return deleteInside(memoryDir(root), rel, '.memory')
}

/** Shared by `.memory/` and `.nexus/base/`: unlink through the path guard, fsync the directory, prune empty parents. */
export async function deleteInside(treeRoot: string, rel: string, label: string): Promise<boolean> {
  const path = await resolveInside(treeRoot, rel)
  try {
    const info = await lstat(path)
    if (info.isDirectory()) throw new BadInputError(`${label}/${rel} is a directory, not a file`, {path: rel})
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return false
    throw error
  }
  await rm(path, {force: true})
  await fsyncDir(dirname(path))
  await pruneEmptyDirs(dirname(path), await realTreeRoot(treeRoot))
  return true
}

/**
 * Removes temp files left in `.nexus/` by a process that died mid-write (its pid is no longer alive); temp files
 * of live processes are left alone. The per-file folders, `.nexus/base/` and `.nexus/replicas/` (as large as the
 * tree), only when `everywhere`: a sync sets it after a sync that did not finish, the only writer there. Temp
 * files in `.memory/` go when `scanMemory` meets them. Returns the removed paths, relative to the root.
 */
export async function sweepTempFiles(root: string, options: {everywhere?: boolean} = {}): Promise<string[]> {
  const removed: string[] = []
  const perFile = new Set([join(nexusDir(root), 'base'), join(nexusDir(root), 'replicas')])
  const walk = async (dir: string): Promise<void> => {
    let entries
    try {
      // Synchronous, as the scan's walk: a promise per folder through the thread pool cost more than the listing.
      entries = readdirSync(dir, {withFileTypes: true})
    } catch {
      return
    }
    for (const entry of entries) {
      const full = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (options.everywhere || !perFile.has(full)) await walk(full)
        continue
      }
      if (!entry.isFile()) continue
      const match = TEMP_NAME.exec(entry.name)
      if (!match || pidAlive(Number(match[1]))) continue
      await rm(full, {force: true})
      removed.push(relative(root, full).split('\\').join('/'))
    }
  }
  if (options.everywhere) await walk(memoryDir(root))
  await walk(nexusDir(root))
  if (removed.length > 0) debug('swept %d stale temp files: %o', removed.length, removed)
  return removed
}
