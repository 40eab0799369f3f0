/**
 * A file's stamp: its inode, size and mtime. Every rewrite by rename gives the file another inode, every append
 * another size, so a stamp seen again means nobody rewrote or grew the file since (the sync state and its journal,
 * the stat cache and its journal). Loads Node's own modules only: the hot paths read stamps.
 */
import {closeSync, fstatSync, lstatSync, openSync, readFileSync} from 'node:fs'

export interface FileStamp {
  ino: number
  size: number
  mtimeMs: number
}

export const sameStamp = (a: FileStamp | undefined, b: FileStamp): boolean => a !== undefined && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs

/** The stamp of the file at `path`, or undefined when there is none. Synchronous inside, as readStamped. */
export async function stampOf(path: string): Promise<FileStamp | undefined> {
  try {
    const info = lstatSync(path, {throwIfNoEntry: false})
    return info === undefined ? undefined : {ino: info.ino, size: info.size, mtimeMs: info.mtimeMs}
  } catch {
    return undefined
  }
}

/**
 * A file's text and the stamp of that very file (one descriptor: a rename meanwhile cannot pair them wrongly); null when
 * there is no file. Synchronous inside: the sync state and the stat cache are read whole before anything else can
 * go on, and four trips through the thread pool (open, stat, read, close; more for a file of several chunks) cost a
 * no-op sync more than the reads themselves.
 */
export async function readStamped(path: string): Promise<{text: string; stamp: FileStamp} | null> {
  let fd
  try {
    fd = openSync(path, 'r')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return null
    throw error
  }
  try {
    const info = fstatSync(fd)
    return {text: readFileSync(fd, 'utf8'), stamp: {ino: info.ino, size: info.size, mtimeMs: info.mtimeMs}}
  } finally {
    closeSync(fd)
  }
}
