/**
 * Crash-safe writes. A reader (or a process after a crash) sees either the old file or the complete new one,
 * never a torn mix: temp file in the same directory, write, fsync, close, rename over the target, fsync the
 * directory (POSIX needs the directory fsync for the rename itself to be durable).
 */
import {link, lstat, mkdir, open, readFile, rename, rm, stat} from 'node:fs/promises'
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
}

/**
 * Writes `data` to `path` atomically and durably (see the module comment); creates missing parent directories.
 * On any failure the temp file is removed and the target is left as it was.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: WriteAtomicOptions = {}): Promise<void> {
  const dir = dirname(path)
  let mode = options.mode
  if (mode === undefined && !options.absent) {
    try {
      mode = (await stat(path)).mode & 0o7777
    } catch (error) {
      if (errorCode(error) !== 'ENOENT') throw error
    }
  }
  const temp = tempPathFor(path)
  let handle
  try {
    handle = await openCreatingFolders(temp, dir, mode ?? 0o666)
    if (mode !== undefined) await handle.chmod(mode) // open's mode is filtered by the umask; keep an existing file's exactly
    await handle.writeFile(data)
    if (options.durable !== false) await handle.sync()
    await handle.close()
    handle = undefined
    if (options.exclusive) await linkNoClobber(temp, path)
    else await rename(temp, path)
  } catch (error) {
    if (handle) await handle.close().catch(() => {})
    await rm(temp, {force: true}).catch(() => {})
    throw error
  }
  if (options.durable === false) return
  if (options.syncDirLater) options.syncDirLater.add(dir)
  else await fsyncDir(dir)
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
  await mkdir(dirname(path), {recursive: true})
  const created = await repairTail(path)
  const handle = await open(path, 'a')
  try {
    await handle.write(line + '\n')
    await handle.sync()
  } finally {
    await handle.close()
  }
  if (created) await fsyncDir(dirname(path))
}

/** Returns true when the file did not exist (so the caller fsyncs the directory after creating it). */
async function repairTail(path: string): Promise<boolean> {
  let handle
  try {
    handle = await open(path, 'r+')
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return true
    throw error
  }
  try {
    const {size} = await handle.stat()
    if (size === 0) return false
    const last = Buffer.alloc(1)
    await handle.read(last, 0, 1, size - 1)
    if (last[0] === 0x0a) return false
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
    return false
  } finally {
    await handle.close()
  }
}
