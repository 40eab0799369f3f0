/**
 * `jarvis memory ls`: the Markdown files under a prefix, sorted by path, with their front matter's title and tags.
 * Answered from the search index when it describes the tree as it is now (its manifest holds: one lstat per folder
 * and file, no file read or parsed; or a refresh re-indexing no more files than the listing shows brings it there);
 * otherwise, or when there is no index, by reading the files listed. Both give the same list, byte for byte
 * (test/search/listing.test.ts).
 */
import type {ListedFile} from '../files/tools.js'
import {checkLimit, checkPrefix, DEFAULT_LIST_LIMIT, matchesPrefix} from '../files/paths.js'
import {findRoot} from '../store/root.js'

export interface LsResult {
  prefix: string
  files: ListedFile[]
}

export async function memoryLs(options: {dir?: string; prefix?: string; limit?: number}): Promise<LsResult> {
  // The tree's root only: its config (and the schemas that check it) says nothing a listing uses.
  const root = findRoot(process.cwd(), options.dir)
  const prefix = checkPrefix(options.prefix)
  const max = checkLimit(options.limit, DEFAULT_LIST_LIMIT)
  const {listIndexedFiles} = await import('../search/index.js')
  const indexed = await listIndexedFiles(root, (path) => path.endsWith('.md') && matchesPrefix(path, prefix), max)
  if (indexed !== undefined) {
    // In the order listFiles makes its entries: the JSON output is the same, byte for byte.
    const files = indexed.map(({path, title, tags, size, mtimeMs, problem}): ListedFile => ({path, tags, size, updatedAt: new Date(mtimeMs).toISOString(), ...(title === undefined ? {} : {title}), ...(problem === undefined ? {} : {problem})}))
    return {prefix: options.prefix ?? '', files}
  }
  const {listFiles} = await import('../files/tools.js')
  return {prefix: options.prefix ?? '', files: await listFiles(root, options.prefix, options.limit)}
}
