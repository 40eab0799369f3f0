/**
 * The `.memory/` tree: scanning (content hashes, the stat cache as a hint only) and file reads/writes that go
 * through the path guard. Backups and temp files are not memory files.
 */
import {lstatSync} from 'node:fs'
import {lstat, readdir, readFile, rm, rmdir} from 'node:fs/promises'
import {basename, dirname, isAbsolute, join, relative, sep} from 'node:path'

import createDebug from 'debug'

import {BadInputError} from '../errors.js'
import {fsyncDir, readTextIfExists, writeFileAtomic} from './atomic.js'
import {forEachConcurrently} from './concurrency.js'
import {hashBytes} from './hash.js'
import {realTreeRoot, resolveInside} from './inside.js'
import {isBackupName, isTempName, TEMP_NAME} from './paths.js'
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

export interface ScanOptions {
  /** Ignore the cache and hash every file (a "full check"). */
  fullCheck?: boolean
  /** Filled with the conflict backups the walk meets (relative paths), which are never memory files. */
  backups?: string[]
}

function cacheHit(cached: MemoryFileStat | undefined, size: number, mtimeMs: number, ino: number): cached is MemoryFileStat {
  if (!cached) return false
  if (cached.size !== size || cached.mtimeMs !== mtimeMs) return false
  if (cached.ino !== undefined && cached.ino !== ino) return false
  // Racy git: an mtime at or after (check time − window) proves nothing; re-hash.
  if (cached.checkedAtMs === undefined || mtimeMs >= cached.checkedAtMs - RACY_WINDOW_MS) return false
  return typeof cached.hash === 'string' && cached.hash.length > 0
}

/**
 * The walk every scan does: each memory file under `.memory/` as [relative "/" path, absolute path], temp files
 * apart, the conflict backups it meets added to `backups`. Never follows a symlink; skips anything that is not a
 * regular file or a directory.
 */
async function walkMemory(root: string, backups?: string[]): Promise<{candidates: Array<[string, string]>; temps: string[]}> {
  const base = memoryDir(root)
  const candidates: Array<[string, string]> = []
  const temps: string[] = []
  const walk = async (dir: string): Promise<void> => {
    let entries
    try {
      entries = await readdir(dir, {withFileTypes: true})
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && dir !== base) return // removed while scanning
      throw error
    }
    const subdirs: string[] = []
    for (const entry of entries) {
      const full = join(dir, entry.name)
      if (entry.isSymbolicLink()) {
        debug('scan: skipping symlink %s', full)
        continue
      }
      if (entry.isDirectory()) subdirs.push(full)
      else if (!entry.isFile()) continue
      else if (isBackupName(entry.name)) backups?.push(relative(base, full).split('\\').join('/'))
      else if (isTempName(entry.name)) temps.push(full)
      else candidates.push([relative(base, full).split('\\').join('/'), full])
    }
    await Promise.all(subdirs.map(walk))
  }
  await walk(base)
  return {candidates, temps}
}

/** Size and mtime of every memory file, sorted by path, without reading any: for listings, which need no hash. */
export async function statMemory(root: string): Promise<Map<string, {size: number; mtimeMs: number}>> {
  const {candidates} = await walkMemory(root)
  const found: Array<[string, {size: number; mtimeMs: number}]> = []
  for (const [rel, full] of candidates) {
    const info = lstatSync(full, {throwIfNoEntry: false})
    if (info?.isFile()) found.push([rel, {size: info.size, mtimeMs: info.mtimeMs}])
  }
  found.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return new Map(found)
}

/**
 * Walks `.memory/` and returns every memory file (relative `/` path → hash, size, mtime, inode, checkedAtMs),
 * sorted by path. Skips backups (`*.local.bak`, `*.local.N.bak`), temp files, symlinks (never followed) and
 * anything that is not a regular file. The returned map can be stored and passed back as the next `statCache`.
 */
export async function scanMemory(root: string, statCache?: StatCache, options: ScanOptions = {}): Promise<Map<string, MemoryFileStat>> {
  const {candidates, temps} = await walkMemory(root, options.backups)
  // The walk sees every temp file anyway: one a dead process left behind goes now (see sweepTempFiles).
  await Promise.all(temps.filter((path) => !pidAlive(Number(TEMP_NAME.exec(basename(path))![1]))).map((path) => rm(path, {force: true})))

  let reused = 0
  const found: Array<[string, MemoryFileStat]> = []
  const examine = async ([rel, full]: [string, string]): Promise<void> => {
    const checkedAtMs = Date.now()
    // Synchronous on purpose: on a warm cache a stat is microseconds, and the promise round trip through
    // the thread pool cost more than the stat itself (120 ms of a 10,000-file no-op sync).
    const info = lstatSync(full, {throwIfNoEntry: false})
    if (!info?.isFile()) return
    const cached = options.fullCheck ? undefined : statCache?.[rel]
    if (cacheHit(cached, info.size, info.mtimeMs, info.ino)) {
      reused++
      found.push([rel, {hash: cached.hash, size: info.size, mtimeMs: info.mtimeMs, ino: info.ino, checkedAtMs: cached.checkedAtMs}])
      return
    }
    let bytes
    try {
      bytes = await readFile(full)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      throw error
    }
    // Size from the bytes we hashed, so the entry never pairs a hash with another version's size.
    found.push([rel, {hash: hashBytes(bytes), size: bytes.length, mtimeMs: info.mtimeMs, ino: info.ino, checkedAtMs}])
  }
  // Stat (and, on a cache miss, read) many files at once: a sequential await per file dominated a no-op sync.
  await forEachConcurrently(candidates, SCAN_CONCURRENCY, examine)
  found.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  debug('scan: %d files, %d hashes reused from the stat cache', found.length, reused)
  return new Map(found)
}

/** The text of a memory file, or null when it does not exist. The path is checked (PathRefusedError). */
export async function readMemoryFile(root: string, rel: string): Promise<string | null> {
  const path = await resolveInside(memoryDir(root), rel)
  try {
    return await readTextIfExists(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EISDIR') throw new BadInputError(`.memory/${rel} is a directory, not a file`, {path: rel})
    throw error
  }
}

/**
 * Writes a memory file atomically (creating parent directories). The path is checked (PathRefusedError).
 * `syncDirLater`: see writeFileAtomic — the caller fsyncs the folders of many files at once.
 */
export async function writeMemoryFile(root: string, rel: string, content: string | Uint8Array, options: {syncDirLater?: Set<string>} = {}): Promise<void> {
  const path = await resolveInside(memoryDir(root), rel)
  await writeFileAtomic(path, content, {syncDirLater: options.syncDirLater})
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
      entries = await readdir(dir, {withFileTypes: true})
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
