/**
 * `jarvis memory ls`: the Markdown files under a prefix, sorted by path, with their front matter's title and tags.
 * A process that watches the tree (`jarvis mcp`, `sync --watch`) answers from its search index, which its watcher
 * keeps; any other lists the files, reading only those the listing cache does not describe as they are now
 * (files/list.ts). Both give the same list, byte for byte (test/search/listing.test.ts, test/files/list.test.ts).
 */
import {listedFile, type ListedFile, listFiles} from '../files/list.js'
import {checkLimit, checkPrefix, DEFAULT_LIST_LIMIT, matchesPrefix} from '../files/paths.js'
import {watchedTrees} from '../search/watched.js'
import {findRoot} from '../store/root.js'

export interface LsResult {
  prefix: string
  files: ListedFile[]
  /** More files are under the prefix than the limit let through. */
  truncated?: true
}

export async function memoryLs(options: {dir?: string; prefix?: string; limit?: number}): Promise<LsResult> {
  // The tree's root only: its config (and the schemas that check it) says nothing a listing uses.
  const root = findRoot(process.cwd(), options.dir)
  const prefix = checkPrefix(options.prefix)
  const max = checkLimit(options.limit, DEFAULT_LIST_LIMIT)
  // Only a process that watches the tree has its index at hand (and registered it there): no import of the search.
  const watched = watchedTrees.get(root)
  // One more than shown: whether the list was cut.
  const files =
    watched === undefined
      ? await listFiles(root, options.prefix, max + 1)
      : (await watched.list((path) => path.endsWith('.md') && matchesPrefix(path, prefix), max + 1)).map(({path, size, mtimeMs, ...fields}) => listedFile(path, size, mtimeMs, fields))
  return {prefix: options.prefix ?? '', files: files.slice(0, max), ...(files.length > max ? {truncated: true as const} : {})}
}
