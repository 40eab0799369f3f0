/**
 * Crash-safe writes. A reader (or a process after a crash) sees either the old file or the complete new one,
 * never a torn mix: temp file in the same directory, write, fsync, close, rename over the target, fsync the
 * directory (POSIX needs the directory fsync for the rename itself to be durable).
 */
import {constants, closeSync, fchmodSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {type FileHandle, link, lstat, mkdir, open, readFile, rename, rm, stat} from 'node:fs/promises'
import {release} from 'node:os'
import {basename, dirname, join} from 'node:path'

import createDebug from 'debug'

const debug = createDebug('jarvis:store')

let counter = 0

/** `.<name>.jarvis-tmp-<pid>-<counter>` beside the target; `scanMemory` and the merge never see these. */
export function tempPathFor(target: string): string {
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER
  return join(dirname(target), `.${basename(target)}.jarvis-tmp-${process.pid}-${counter}`)
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as NodeJS.ErrnoException).code : undefined
}

/** fsync a directory so a rename/unlink/create inside it survives a power cut. Best effort where unsupported. */
export async function fsyncDir(dir: string): Promise<void> {
  let handle
  try {
    handle = await open(dir, 'r')
    await handle.sync()
  } catch (error) {
    // Windows cannot open a directory; some filesystems refuse fsync on one. The rename is still atomic.
    const code = errorCode(error)
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EBADF' && code !== 'EACCES') throw error
    debug('directory fsync skipped for %s: %s', dir, code)
  } finally {
    await handle?.close()
  }
}

export interface WriteAtomicOptions {
  /** File mode of a new file; an existing file keeps its mode. Default 0o666 minus the umask. */
  mode?: number
  /**
   * Never replace an existing file: the complete temp file is hard-linked to the target, which fails with an
   * EEXIST error when the target exists (used for backups). Falls back to check-then-rename where the
   * filesystem has no hard links.
   */
  exclusive?: boolean
  /**
   * Default true. False skips both fsyncs: the rename is still atomic (old or new file, never a torn one),
   * but after a power cut the file may be the old version, or empty. Only for data that can be rebuilt and
   * is checked before use: base copies (verified against the hash in sync-state) and the stat cache.
   */
  durable?: boolean
  /**
   * Leave the directory fsync to the caller, who adds the directory here and calls `fsyncDirs` on the set once
   * for many files — before anything records the new file as written (a pull of N files in a few folders then
   * costs N file fsyncs and a few directory fsyncs, not 2N). The file's own data is still fsynced before the rename.
   */
  syncDirLater?: Set<string>
  /** The caller has just seen that `path` does not exist: no `stat` for an existing file's mode. */
  absent?: boolean
  /**
   * Default true. False: a missing folder is an ENOENT error, not made. For a cache a long-lived process writes in the
   * background, into a folder made before: a tree removed meanwhile is not made again in part.
   */
  makeFolders?: boolean
}

/**
 * Writes `data` to `path` atomically and durably (see the module comment); creates missing parent directories.
 * On any failure the temp file is removed and the target is left as it was.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: WriteAtomicOptions = {}): Promise<void> {
  const dir = dirname(path)
  // Without its fsyncs the write is a few microseconds of system calls: made in this thread (writeTempSync), not
  // five trips through the thread pool (a lock's owner record, the stat cache, a sync's marker).
  if (options.durable === false && !options.exclusive && options.makeFolders !== false) {
    const temp = writeTempSync(path, data, options.mode ?? (options.absent ? undefined : existingModeSync(path)))
    try {
      renameSync(temp, path)
    } catch (error) {
      rmSync(temp, {force: true})
      throw error
    }
    return
  }
  const mode = options.mode ?? (options.absent ? undefined : await existingMode(path))
  const temp = await writeTemp(path, data, mode, options.durable !== false, options.makeFolders !== false)
  try {
    if (options.exclusive) await linkNoClobber(temp, path)
    else await rename(temp, path)
  } catch (error) {
    await rm(temp, {force: true}).catch(() => {})
    throw error
  }
  if (options.durable === false) return
  if (options.syncDirLater) options.syncDirLater.add(dir)
  else await fsyncDir(dir)
}

/** The complete temp file of `path`'s new content (fsynced when `sync`); on a failure it is removed and the error thrown. */
async function writeTemp(path: string, data: string | Uint8Array, mode: number | undefined, sync: boolean, makeFolders = true): Promise<string> {
  const temp = tempPathFor(path)
  let handle
  try {
    handle = makeFolders ? await openCreatingFolders(temp, dirname(path), mode ?? 0o666) : await open(temp, 'wx', mode ?? 0o666)
    if (mode !== undefined) await handle.chmod(mode) // open's mode is filtered by the umask; keep an existing file's exactly
    await handle.writeFile(data)
    if (sync) await handle.sync()
    await handle.close()
    return temp
  } catch (error) {
    if (handle) await handle.close().catch(() => {})
    await rm(temp, {force: true}).catch(() => {})
    throw error
  }
}

/**
 * writeTemp without the fsync, synchronous: creating a small file and writing it takes microseconds on a warm
 * disk, and a promise per call through the thread pool cost more than the call (a pull of 10,000 files: 0.35 s
 * of temp files against 0.2 s).
 */
function writeTempSync(path: string, data: string | Uint8Array, mode: number | undefined): string {
  const temp = tempPathFor(path)
  let fd: number | undefined
  try {
    try {
      fd = openSync(temp, 'wx', mode ?? 0o666)
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error
      mkdirSync(dirname(path), {recursive: true})
      fd = openSync(temp, 'wx', mode ?? 0o666)
    }
    if (mode !== undefined) fchmodSync(fd, mode) // see writeTemp
    writeFileSync(fd, data)
    const done = fd
    fd = undefined
    closeSync(done)
    return temp
  } catch (error) {
    try {
      if (fd !== undefined) closeSync(fd)
    } catch {
      // The write's error is the one to report.
    }
    rmSync(temp, {force: true})
    throw error
  }
}

/** existingMode, synchronous. */
function existingModeSync(path: string): number | undefined {
  const info = statSync(path, {throwIfNoEntry: false})
  return info === undefined ? undefined : info.mode & 0o7777
}

/** The mode `path` has now, or undefined when it does not exist. */
async function existingMode(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).mode & 0o7777
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error
    return undefined
  }
}

/**
 * Whether a batch may be made durable with one syncfs(2) of its filesystem (`sync -f <folder>`, coreutils 8.24+;
 * Node has no syncfs) instead of an fsync per file: decided once per process. Linux only (elsewhere `sync` has no
 * `-f`, or syncs without reporting errors), and only from kernel 5.8 on: an older syncfs returned success even when
 * writing a file back had failed, where fsync reports it. `undefined` until the first batch tries it; the first
 * refusal (no `sync`, an old one, a filesystem that refuses) turns it off for the rest of the process, and every
 * later file is fsynced on its own, as writeFileAtomic does.
 */
let syncfsUsable: boolean | undefined = process.platform === 'linux' && kernelAtLeast(release(), 5, 8) ? undefined : false

/** True when a Linux release string (`6.1.0-18-amd64`) is at least `major.minor`. */
export function kernelAtLeast(version: string, major: number, minor: number): boolean {
  const match = /^(\d+)\.(\d+)/.exec(version)
  if (!match) return false
  const [have, haveMinor] = [Number(match[1]), Number(match[2])]
  return have > major || (have === major && haveMinor >= minor)
}

/**
 * Below this many files a batch fsyncs each, side by side: a syncfs starts a process and also writes back whatever
 * else the filesystem holds unwritten (other programs' files), which a few fsyncs do not wait for. It pays where
 * the files are many and small; a bounded batch of few files is of large ones, where the fsyncs cost their bytes
 * (the 96 MiB tree of bench/sync.ts pulled slower with a syncfs per 25 files).
 */
const SYNCFS_MIN_FILES = 64

/** A new file's complete content in its temp file beside `target`, until `commit` renames it there or `discard` removes it. */
export interface StagedFile {
  readonly target: string
  readonly temp: string
  /** Its data is on disk (fsynced, or covered by a syncfs). */
  durable: boolean
}

export interface AtomicBatchOptions {
  /** Fsync each file instead of one syncfs for the batch, whatever the platform (to test that path). */
  fsyncEachFile?: boolean
}

/**
 * Many files written atomically with the order of writeFileAtomic, but made durable together (a pull): every temp
 * file is written in full first, without an fsync each; `makeDurable` then writes them all to disk at once (one
 * syncfs per filesystem, else an fsync per file); only then does the caller rename each over its target (`commit`,
 * after looking at the target right before: the user may have changed it meanwhile) and fsync each folder once
 * (`syncFolders`) — data durable before any rename, renames durable before anything records them. A process killed
 * before a rename leaves the target as it was and a `.jarvis-tmp-<pid>-` file, which the next scan removes.
 */
export class AtomicBatch {
  /** Temp files not yet renamed or removed. */
  private readonly staged = new Set<StagedFile>()
  private readonly renamedIn = new Set<string>()

  constructor(private readonly options: AtomicBatchOptions = {}) {}

  /** The number of files staged and not yet committed or discarded. */
  get size(): number {
    return this.staged.size
  }

  /** Writes `data` to a temp file beside `path` (creating missing folders). `absent`: the caller knows no file is there (no `stat` for its mode). */
  async stage(path: string, data: string | Uint8Array, options: {absent?: boolean} = {}): Promise<StagedFile> {
    const mode = options.absent ? undefined : await existingMode(path)
    // Fsynced each: many at once through the thread pool, so that the disk serves them together.
    const eachFile = this.options.fsyncEachFile === true || syncfsUsable === false
    const file: StagedFile = {target: path, temp: eachFile ? await writeTemp(path, data, mode, true) : writeTempSync(path, data, mode), durable: eachFile}
    this.staged.add(file)
    return file
  }

  /** Every staged file's data on disk, before any of them is renamed. */
  async makeDurable(): Promise<void> {
    const waiting = [...this.staged].filter((file) => !file.durable)
    if (waiting.length === 0) return
    const eachFile = this.options.fsyncEachFile === true || syncfsUsable === false || waiting.length < SYNCFS_MIN_FILES
    const synced = !eachFile && (await syncFilesystems(waiting.map((file) => dirname(file.temp))))
    // A temp file gone with its folder is not fsynced: its commit says so.
    if (!synced) await Promise.all(waiting.map((file) => fsyncFile(file.temp).catch((error: unknown) => (errorCode(error) === 'ENOENT' ? undefined : Promise.reject(error)))))
    for (const file of waiting) file.durable = true
    debug('%d temp files durable (%s)', waiting.length, synced ? 'one syncfs' : 'an fsync each')
  }

  /**
   * Renames a durable staged file over its target; its folder is fsynced by `syncFolders`. False when its temp file
   * is gone (someone removed its folder meanwhile): nothing was written. Synchronous, as the caller's look at the
   * target right before is: a rename takes microseconds, and the window between the two stays as short as it can.
   */
  commit(file: StagedFile): boolean {
    if (!file.durable) throw new Error(`AtomicBatch: ${file.temp} renamed before makeDurable`)
    this.staged.delete(file)
    try {
      renameSync(file.temp, file.target)
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') {
        this.staged.add(file) // removed by abandon
        throw error
      }
      return false
    }
    this.renamedIn.add(dirname(file.target))
    return true
  }

  /** Removes a staged file that will not be renamed (its target changed meanwhile). */
  async discard(file: StagedFile): Promise<void> {
    this.staged.delete(file)
    await rm(file.temp, {force: true})
  }

  /** One fsync per folder a file was renamed into since the last call: the renames survive a power cut. */
  async syncFolders(): Promise<void> {
    const folders = [...this.renamedIn]
    this.renamedIn.clear()
    await fsyncDirs(folders)
    debug('%d folders fsynced after their renames', folders.length)
  }

  /** Removes every temp file still staged (after an error: nothing was renamed over its target). */
  async abandon(): Promise<void> {
    const left = [...this.staged]
    this.staged.clear()
    await Promise.all(left.map((file) => rm(file.temp, {force: true}).catch(() => {})))
  }
}

/** fsync of a complete file by name (its data written by an earlier handle: fsync writes back the file, not the handle). */
export async function fsyncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/**
 * One syncfs of each filesystem that holds one of `folders` (`sync -f`, one folder per device): false when that is
 * not possible here, which is remembered for the process (see syncfsUsable).
 */
async function syncFilesystems(folders: string[]): Promise<boolean> {
  const byDevice = new Map<number, string>()
  for (const folder of new Set(folders)) {
    // A folder removed meanwhile took its temp files with it: their renames will say so.
    const dev = await stat(folder).then((info) => info.dev, (error: unknown) => (errorCode(error) === 'ENOENT' ? undefined : Promise.reject(error)))
    if (dev !== undefined && !byDevice.has(dev)) byDevice.set(dev, folder)
  }
  if (byDevice.size === 0) return true
  const {execFile} = await import('node:child_process')
  const ok = await new Promise<boolean>((resolve) => {
    // No shell: the folders are passed as they are. `--` so that a folder named like an option stays a folder.
    execFile('sync', ['-f', '--', ...byDevice.values()], {windowsHide: true}, (error, _stdout, stderr) => {
      if (error) debug('syncfs refused (%s%s): each file is fsynced from now on', error.message.trim(), stderr ? `: ${stderr.trim()}` : '')
      resolve(!error)
    })
  })
  syncfsUsable = ok
  return ok
}

/** Opens a new temp file; its folders are made only when missing (most writes go to a folder that exists: one call less). */
async function openCreatingFolders(temp: string, dir: string, mode: number) {
  try {
    return await open(temp, 'wx', mode)
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error
    await mkdir(dir, {recursive: true})
    return open(temp, 'wx', mode)
  }
}

/** fsyncs each directory once (see `syncDirLater`). */
export async function fsyncDirs(dirs: Iterable<string>): Promise<void> {
  await Promise.all([...new Set(dirs)].map((dir) => fsyncDir(dir)))
}

/** The text of `path`, or null when it (or a parent directory) does not exist. */
/**
 * readTextIfExists in this thread: for the few small files a command reads once before its work (the config, a
 * marker), where four trips through the thread pool (open, stat, read, close) cost more than the read.
 */
export function readTextIfExistsSync(path: string): string | null {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    const code = errorCode(error)
    if (code === 'ENOENT' || code === 'ENOTDIR') return null
    throw error
  }
}

export async function readTextIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    const code = errorCode(error)
    if (code === 'ENOENT' || code === 'ENOTDIR') return null
    throw error
  }
}

/** Gives `from` the name `to` unless `to` exists (then an EEXIST error); `from` is gone afterwards. */
export async function linkNoClobber(from: string, to: string): Promise<void> {
  try {
    await link(from, to)
  } catch (error) {
    const code = errorCode(error)
    if (code === 'EEXIST') throw error
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV' && code !== 'ENOSYS') throw error
    // No hard links here: check, then rename (callers hold the tree lock, so no other jarvis process races us).
    try {
      await lstat(to)
      throw Object.assign(new Error(`EEXIST: ${to} exists`), {code: 'EEXIST'})
    } catch (statError) {
      if (errorCode(statError) !== 'ENOENT') throw statError
    }
    await rename(from, to)
    return
  }
  // Both names now hold the same bytes: a crash here leaves a duplicate, never a loss.
  await rm(from, {force: true})
}

/**
 * Appends one line durably (open 'a', write, fsync) for the JSON Lines logs. `line` must not contain a newline;
 * one is added. If the file ends in a torn line (a crash in the middle of an earlier append — that append never
 * returned, so nobody was told it succeeded) the torn tail is cut off first, so it cannot glue itself to this
 * line; a tail that is a complete JSON value (a hand edit without a final newline) is kept and terminated.
 */
export async function appendLineDurable(path: string, line: string): Promise<void> {
  if (line.includes('\n')) throw new Error('appendLineDurable: the line contains a newline')
  // One handle, read and append, for the tail's repair and the line (six trips through the thread pool, not nine); its
  // folder made only when the file is missing.
  let created = false
  let handle
  try {
    handle = await open(path, constants.O_RDWR | constants.O_APPEND)
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error
    await mkdir(dirname(path), {recursive: true})
    handle = await open(path, 'a+')
    created = true
  }
  try {
    await repairTail(handle, path)
    await handle.write(line + '\n')
    await handle.sync()
  } finally {
    await handle.close()
  }
  if (created) await fsyncDir(dirname(path))
}

/**
 * Cuts off or terminates a torn final line, through a handle opened for reading and appending (an append goes to the
 * end whatever its position, as the end is where the repair writes).
 */
async function repairTail(handle: FileHandle, path: string): Promise<void> {
  const {size} = await handle.stat()
  if (size === 0) return
  const last = Buffer.alloc(1)
  await handle.read(last, 0, 1, size - 1)
  if (last[0] === 0x0a) return
  // Find the start of the unterminated tail.
  const chunkSize = 64 * 1024
  let end = size
  let tailStart = 0
  search: while (end > 0) {
    const start = Math.max(0, end - chunkSize)
    const buffer = Buffer.alloc(end - start)
    await handle.read(buffer, 0, buffer.length, start)
    for (let i = buffer.length - 1; i >= 0; i--) {
      if (buffer[i] === 0x0a) {
        tailStart = start + i + 1
        break search
      }
    }
    end = start
  }
  const tail = Buffer.alloc(size - tailStart)
  await handle.read(tail, 0, tail.length, tailStart)
  let complete = false
  try {
    JSON.parse(tail.toString('utf8'))
    complete = true
  } catch {
    complete = false
  }
  if (complete) {
    await handle.write('\n', size)
    debug('%s: terminated a final line that had no newline', path)
  } else {
    await handle.truncate(tailStart)
    debug('%s: cut a torn final line of %d bytes (an interrupted append)', path, size - tailStart)
  }
  await handle.sync()
}
