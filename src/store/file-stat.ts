/**
 * The lstat a scan makes of every memory file, without the `fs.Stats` object Node 20 builds for each call: that
 * object comes with four `Date`s made at once (Node 22 makes them only when read), which cost a 10,000-file scan
 * more than the system calls themselves (~20 ms of a ~40 ms loop, and most of its garbage). The fields come from
 * Node's own file-system binding, the one `fs.lstatSync` calls, and are checked against `fs.lstatSync` before the
 * binding is trusted: where it is missing, answers otherwise, or must not be used, every call goes through
 * `fs.lstatSync`. See docs/decisions/scan-lstat.md.
 */
import {lstatSync} from 'node:fs'

/** What a scan needs of a file's (or a folder's) lstat. */
export interface FileStat {
  isFile: boolean
  /** A folder (never a symlink to one: nothing is followed). The search's manifest check stats its folders too. */
  isDirectory: boolean
  size: number
  /** As `fs.Stats#mtimeMs` gives it (the same number: the stat cache compares it exactly). */
  mtimeMs: number
  /** As `fs.Stats#ctimeMs` gives it: moves at every change of the file, and cannot be set back by hand as mtime can. */
  ctimeMs: number
  ino: number
}

/** Node's binding: `lstat(path, bigint, request, throwIfNoEntry)` answers the 18 fields of a stat, or undefined. */
export interface FsBinding {
  lstat(path: string, bigint: false, request: undefined, throwIfNoEntry: boolean): Float64Array | undefined
}

// The binding's order of the fields (node's src/node_file.h, FsStatsOffset).
const MODE = 1
const INO = 7
const SIZE = 8
const MTIME_SEC = 12
const MTIME_NSEC = 13
const CTIME_SEC = 14
const CTIME_NSEC = 15
const S_IFMT = 0o170000
const S_IFREG = 0o100000
const S_IFDIR = 0o040000

/**
 * The binding, where it may be used: POSIX (Windows paths need Node's namespacing first), no permission model
 * (Node 20 checks its permissions in JavaScript, before the binding), and no `--pending-deprecation` (which makes
 * `process.binding` print a warning).
 */
function candidate(): FsBinding | null {
  if (process.platform === 'win32' || (process as {permission?: unknown}).permission !== undefined) return null
  const options = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]
  if (process.env.NODE_PENDING_DEPRECATION === '1' || options.includes('--pending-deprecation')) return null
  try {
    const found = (process as unknown as {binding?: (name: string) => unknown}).binding?.('fs') as Partial<FsBinding> | undefined
    return typeof found?.lstat === 'function' ? (found as FsBinding) : null
  } catch {
    return null
  }
}

function fromBinding(fs: FsBinding, path: string, into: FileStat): FileStat | undefined {
  const fields = fs.lstat(path, false, undefined, false)
  if (fields === undefined) return undefined
  into.isFile = (fields[MODE] & S_IFMT) === S_IFREG
  into.isDirectory = (fields[MODE] & S_IFMT) === S_IFDIR
  into.size = fields[SIZE]
  into.ino = fields[INO]
  // Node's own formula for mtimeMs (msFromTimeSpec), so the number is the one fs.Stats gives.
  into.mtimeMs = fields[MTIME_SEC] * 1e3 + fields[MTIME_NSEC] / 1e6
  into.ctimeMs = fields[CTIME_SEC] * 1e3 + fields[CTIME_NSEC] / 1e6
  return into
}

function fromStats(path: string, into: FileStat): FileStat | undefined {
  const info = lstatSync(path, {throwIfNoEntry: false})
  if (info === undefined) return undefined
  into.isFile = info.isFile()
  into.isDirectory = info.isDirectory()
  into.size = info.size
  into.ino = info.ino
  into.mtimeMs = info.mtimeMs
  into.ctimeMs = info.ctimeMs
  return into
}

/** An object for `lstatInto` to write into. */
export function blankStat(): FileStat {
  return {isFile: false, isDirectory: false, size: 0, mtimeMs: 0, ctimeMs: 0, ino: 0}
}

/** undefined: not looked for yet; null: not to be used. */
let binding: FsBinding | null | undefined
/** The binding answered one file as fs.lstatSync did. */
let trusted = false

/**
 * lstat of `path` (a file or a folder, never following a symlink) written into `into`, which is returned; undefined when nothing is
 * there. Errors other than "no such file" are thrown, as `fs.lstatSync` throws them. One object for a whole scan.
 */
export function lstatInto(path: string, into: FileStat): FileStat | undefined {
  if (binding === undefined) binding = candidate()
  // A path fs.lstatSync would refuse (a NUL byte) goes to it, for its error.
  if (binding === null || path.includes('\0')) return fromStats(path, into)
  if (trusted) return fromBinding(binding, path, into)
  // Not trusted yet: both answers for the first file there is, the binding kept only when they agree.
  const expected = fromStats(path, blankStat())
  if (expected === undefined) return undefined
  const got = fromBinding(binding, path, into)
  trusted = got !== undefined && got.isFile === expected.isFile && got.isDirectory === expected.isDirectory && got.size === expected.size && got.ino === expected.ino && got.mtimeMs === expected.mtimeMs && got.ctimeMs === expected.ctimeMs
  if (!trusted) binding = null
  return Object.assign(into, expected)
}

/**
 * For tests: forget what was found of the binding; then use `fs.lstatSync` only (`false`), look for Node's binding
 * again (`true`), or try `use` as the binding.
 */
export function resetFileStat(use: boolean | FsBinding): void {
  binding = use === false ? null : use === true ? undefined : use
  trusted = false
}
