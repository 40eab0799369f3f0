/**
 * `.nexus/listing-cache.json`: what `jarvis memory ls` learned of each file it listed (its front matter's title and
 * tags, or its problem), keyed by the file's stat when it was read, as git's index keeps a stat per file: the next
 * listing stats a file and reads it only when its entry no longer stands for it. A cache only: missing, unreadable,
 * of another version or out of shape, it is empty; an entry out of shape is not used.
 *
 * An entry stands for a file when its size, mtime, ctime and inode are all the file's now, and its last change
 * (mtime or ctime, the later) is older than the moment the entry was checked by the racy window (tree.ts isSettled):
 * an edit in place changes the mtime and the ctime, and the ctime cannot be set back by hand as the mtime can (an
 * edit that keeps the size and puts the old mtime back is still seen); an edit in the same clock granule as the check
 * could keep all four, so such an entry is never written. A file replaced has another inode.
 */
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import createDebug from 'debug'

import {writeFileAtomic} from './atomic.js'
import type {FileStat} from './file-stat.js'
import {nexusDir} from './root.js'
import {isSettled} from './tree.js'

const debug = createDebug('jarvis:store')

export const LISTING_CACHE_FILE = 'listing-cache.json'
const VERSION = 1

/** What a listing shows of a file's front matter: its own title and tags as written, or why it does not parse. */
export interface ListingFields {
  title?: string
  tags: string[]
  /** The front matter's problem (SchemaError's message), when it does not parse. */
  problem?: string
}

/** One file's entry: `[size, mtimeMs, ctimeMs, ino, checkedAtMs, title | null, tags, problem | null]`. */
type Row = [number, number, number, number, number, string | null, string[], string | null]

function isRow(value: unknown): value is Row {
  if (!Array.isArray(value) || value.length !== 8) return false
  for (let at = 0; at < 5; at++) if (typeof value[at] !== 'number' || !Number.isFinite(value[at])) return false
  const [, , , , , title, tags, problem] = value as unknown[]
  return (title === null || typeof title === 'string') && Array.isArray(tags) && tags.every((tag) => typeof tag === 'string') && (problem === null || typeof problem === 'string')
}

export function listingCachePath(root: string): string {
  return join(nexusDir(root), LISTING_CACHE_FILE)
}

/** The entries of a listing cache: read once, asked per file listed, written back when a listing learned something. */
export class ListingCache {
  private changed = false

  private constructor(private readonly rows: Record<string, unknown>) {}

  /** The tree's cache as it is on disk; an empty one when there is none or it cannot be used. */
  static read(root: string): ListingCache {
    let text: string
    try {
      text = readFileSync(listingCachePath(root), 'utf8')
    } catch {
      return new ListingCache(Object.create(null) as Record<string, unknown>)
    }
    try {
      const parsed = JSON.parse(text) as {version?: unknown; files?: unknown}
      const {files} = parsed
      if (parsed !== null && typeof parsed === 'object' && parsed.version === VERSION && files !== null && typeof files === 'object' && !Array.isArray(files)) {
        // Keys as data, never as a prototype's: `__proto__` is a path like any other.
        return new ListingCache(Object.assign(Object.create(null) as Record<string, unknown>, files))
      }
      debug('listing cache of another version or shape: not used')
    } catch (error) {
      debug('listing cache unreadable, not used: %s', (error as Error).message)
    }
    return new ListingCache(Object.create(null) as Record<string, unknown>)
  }

  /** What was recorded of `path`, when its entry stands for the file as `stat` (an lstat made now) sees it. */
  fieldsOf(path: string, stat: FileStat): ListingFields | undefined {
    const row = this.rows[path]
    if (!isRow(row)) return undefined
    const [size, mtimeMs, ctimeMs, ino, checkedAtMs, title, tags, problem] = row
    if (size !== stat.size || mtimeMs !== stat.mtimeMs || ctimeMs !== stat.ctimeMs || ino !== stat.ino) return undefined
    if (!isSettled(Math.max(mtimeMs, ctimeMs), checkedAtMs)) return undefined
    return {...(title === null ? {} : {title}), tags: [...tags], ...(problem === null ? {} : {problem})}
  }

  /**
   * Records what was read of `path` after `stat` was taken, itself taken after `checkedAtMs`; an entry the racy rule
   * would not let stand is dropped instead (it would be read again anyway).
   */
  record(path: string, stat: FileStat, checkedAtMs: number, fields: ListingFields): void {
    if (!isSettled(Math.max(stat.mtimeMs, stat.ctimeMs), checkedAtMs)) {
      this.forget(path)
      return
    }
    this.rows[path] = [stat.size, stat.mtimeMs, stat.ctimeMs, stat.ino, checkedAtMs, fields.title ?? null, fields.tags, fields.problem ?? null] satisfies Row
    this.changed = true
  }

  /** Drops the entry of a file that is gone. */
  forget(path: string): void {
    if (!(path in this.rows)) return
    delete this.rows[path]
    this.changed = true
  }

  /**
   * Writes the cache back when a listing changed it, without the entries of paths not in `present` (every memory file
   * now): atomically (another listing reads the old file or this one, never a part), not durably (a cache). An entry
   * of a file gone stays until then: it is never asked for, or no longer stands. Never fails: a `.nexus/` that cannot
   * be written (read-only, gone) keeps the old one.
   */
  async save(root: string, present: readonly string[]): Promise<void> {
    if (!this.changed) return
    this.changed = false
    const kept = new Set(present)
    for (const path in this.rows) if (!kept.has(path)) delete this.rows[path]
    try {
      await writeFileAtomic(listingCachePath(root), JSON.stringify({version: VERSION, files: this.rows}) + '\n', {durable: false, makeFolders: false})
    } catch (error) {
      debug('listing cache not written: %s', (error as Error).message)
    }
  }
}
