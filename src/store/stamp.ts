/**
 * A file's stamp: its inode, size and mtime. Every rewrite by rename gives the file another inode, every append
 * another size, so a stamp seen again means nobody rewrote or grew the file since (the sync state and its journal,
 * the stat cache and its journal). Loads Node's own modules only: the hot paths read stamps.
 */
import {lstat, open} from 'node:fs/promises'

export interface FileStamp {
  ino: number
  size: number
  mtimeMs: number
}

export const sameStamp = (a: FileStamp | undefined, b: FileStamp): boolean => a !== undefined && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs

/** The stamp of the file at `path`, or undefined when there is none. */
export async function stampOf(path: string): Promise<FileStamp | undefined> {
  try {
    const info = await lstat(path)
    return {ino: info.ino, size: info.size, mtimeMs: info.mtimeMs}
  } catch {
    return undefined
  }
}

/** A file's text and the stamp of that very file (one handle: a rename meanwhile cannot pair them wrongly); null when there is no file. */
export async function readStamped(path: string): Promise<{text: string; stamp: FileStamp} | null> {
  let handle
  try {
    handle = await open(path, 'r')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') return null
    throw error
  }
  try {
    const info = await handle.stat()
    return {text: await handle.readFile('utf8'), stamp: {ino: info.ino, size: info.size, mtimeMs: info.mtimeMs}}
  } finally {
    await handle.close()
  }
}
