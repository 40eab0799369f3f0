/**
 * `memory ls` of a tree: the Markdown files under a prefix, sorted by path, with their front matter's title and tags.
 * The walk lists every file without a stat; only the files shown are stat-ed, and a file is read and parsed only when
 * the listing cache (`.nexus/listing-cache.json`, store/listing-cache.ts) has no entry that still stands for it. What
 * was read is kept there for the next listing. Its own module: a listing loads none of the other tools' modules.
 */
import {readTextIfExists} from '../store/atomic.js'
import {forEachConcurrently} from '../store/concurrency.js'
import {blankStat, type FileStat, lstatInto} from '../store/file-stat.js'
import {ListingCache, type ListingFields} from '../store/listing-cache.js'
import {memoryFilePath, memoryFilePaths} from '../store/tree.js'
import {listingOf} from './front-matter.js'
import {checkLimit, checkPrefix, DEFAULT_LIST_LIMIT, matchesPrefix} from './paths.js'

export interface ListedFile {
  path: string
  title?: string
  tags: string[]
  size: number
  updatedAt: string
  /** Set when the front matter does not parse: the file is listed, with the problem. */
  problem?: string
}

/** Files read at once by `memory ls`. */
const LIST_CONCURRENCY = 32

/** A listed file as every door shows it (the fields in this order: the JSON output is compared byte for byte). */
export function listedFile(path: string, size: number, mtimeMs: number, {title, tags, problem}: ListingFields): ListedFile {
  return {path, tags, size, updatedAt: new Date(mtimeMs).toISOString(), ...(title === undefined ? {} : {title}), ...(problem === undefined ? {} : {problem})}
}

/**
 * Memory files under `prefix`, sorted by path, at most `limit`. A file with bad front matter is listed with its
 * problem. `cache: false` neither reads nor writes the listing cache (every file shown is read).
 */
export async function listFiles(root: string, prefix?: string, limit?: number, options: {cache?: boolean} = {}): Promise<ListedFile[]> {
  const checkedPrefix = checkPrefix(prefix)
  const max = checkLimit(limit, DEFAULT_LIST_LIMIT)
  const cache = options.cache === false ? undefined : ListingCache.read(root)
  // Before any stat: what is recorded of a file read now was checked no later than this (the racy rule's clock).
  const checkedAtMs = Date.now()
  const paths = memoryFilePaths(root)
  const shown: Array<{path: string; stat: FileStat; fields?: ListingFields}> = []
  for (const path of paths) {
    if (shown.length === max) break
    if (!path.endsWith('.md') || !matchesPrefix(path, checkedPrefix)) continue
    const stat = lstatInto(memoryFilePath(root, path), blankStat())
    if (!stat?.isFile) continue // removed (or replaced by a folder) since the walk
    shown.push({path, stat, fields: cache?.fieldsOf(path, stat)})
  }
  const gone = new Set<string>()
  // The paths come from the walk, which never follows a symlink: read side by side, straight from .memory/.
  await forEachConcurrently(shown, LIST_CONCURRENCY, async (entry) => {
    if (entry.fields !== undefined) return
    const text = await readTextIfExists(memoryFilePath(root, entry.path))
    if (text === null) {
      gone.add(entry.path) // removed meanwhile
      return
    }
    entry.fields = listingOf(entry.path, text).listing
    cache?.record(entry.path, entry.stat, checkedAtMs, entry.fields)
  })
  await cache?.save(root, gone.size === 0 ? paths : paths.filter((path) => !gone.has(path)))
  return shown.filter(({path}) => !gone.has(path)).map(({path, stat, fields}) => listedFile(path, stat.size, stat.mtimeMs, fields!))
}
