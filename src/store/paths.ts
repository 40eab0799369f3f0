/**
 * Path safety for both trees, PURE (no fs, no node:*): the server checks pushed paths with the same rule.
 * `inside.ts` adds the filesystem check (`resolveInside`: symlinks that would leave the tree).
 */
import {PathRefusedError} from '../errors.js'

const MAX_SEGMENT_BYTES = 255
const MAX_PATH_CHARS = 1024 // as schemas/common.ts memoryPathSchema
const encoder = new TextEncoder()

/**
 * Returns the normalised `/`-separated relative path, or throws PathRefusedError.
 * Refused: empty, NUL or other control characters, absolute (`/x`, `C:\x`, `C:x`, `\\x`), backslashes,
 * `..` segments, `.` or empty segments (`a//b`, `./a`), a trailing slash, a segment longer than 255 bytes,
 * a path longer than 1024 characters.
 * Nothing is rewritten: a path that needs "normalising" to be safe is refused instead, so client and server
 * always agree on the exact name.
 */
export function checkRelativePath(p: string): string {
  if (typeof p !== 'string') throw new PathRefusedError(String(p), 'not a string')
  if (p.length === 0) throw new PathRefusedError(p, 'empty path')
  if (p.length > MAX_PATH_CHARS) throw new PathRefusedError(p.slice(0, 80) + '…', `longer than ${MAX_PATH_CHARS} characters`)
  if (p.includes('\0')) throw new PathRefusedError(p, 'contains a NUL byte')
  // eslint-disable-next-line no-control-regex
  if (/[\u0001-\u001f\u007f]/.test(p)) throw new PathRefusedError(p, 'contains a control character')
  if (p.startsWith('/')) throw new PathRefusedError(p, 'absolute path')
  if (/^[A-Za-z]:/.test(p)) throw new PathRefusedError(p, 'absolute path (drive letter)')
  if (p.includes('\\')) throw new PathRefusedError(p, p.startsWith('\\') ? 'absolute path' : 'contains a backslash (use /)')
  if (p.endsWith('/')) throw new PathRefusedError(p, 'trailing slash (a directory, not a file)')
  const segments = p.split('/')
  for (const segment of segments) {
    if (segment === '') throw new PathRefusedError(p, 'empty path segment')
    if (segment === '.') throw new PathRefusedError(p, '"." segment')
    if (segment === '..') throw new PathRefusedError(p, '".." segment leaves the tree')
    if (encoder.encode(segment).length > MAX_SEGMENT_BYTES) throw new PathRefusedError(p, `a segment is longer than ${MAX_SEGMENT_BYTES} bytes`)
  }
  return segments.join('/')
}

/** `*.local.bak` and `*.local.<N>.bak`: conflict backups, local only, never memory files. */
export const BACKUP_NAME = /\.local(?:\.\d+)?\.bak$/

/** Temp files of `writeFileAtomic`: `.<name>.jarvis-tmp-<pid>-<counter>`. */
export const TEMP_NAME = /^\..*\.jarvis-tmp-(\d+)-\d+$/

export function isBackupName(name: string): boolean {
  return BACKUP_NAME.test(name)
}

export function isTempName(name: string): boolean {
  return TEMP_NAME.test(name)
}

/** True for a relative path that is not a memory file: a backup or a temp file (its last segment decides). */
export function isIgnoredMemoryPath(rel: string): boolean {
  const name = rel.slice(rel.lastIndexOf('/') + 1)
  return isBackupName(name) || isTempName(name)
}
