/**
 * The trees this process watches itself (`jarvis mcp`, `sync --watch`: index.ts watchSearchIndex), in a module of
 * their own: a call that only asks whether a tree is watched (`memory ls`) loads nothing of the search, and a bundle
 * of such a call (the fast door's, whose process never watches a tree) holds none of it.
 */
import type {ListingFields} from './document.js'

/** A file as `jarvis memory ls` lists it, from the index. */
export interface IndexedListing extends ListingFields {
  path: string
  size: number
  mtimeMs: number
}

/** What a file watcher on a tree's `.memory/` has reported since the last search (see index.ts watchSearchIndex). */
export interface WatchedTree {
  /** Paths changed since the last search. */
  changed: Set<string>
  /** Re-scan everything at the next search: nothing seen yet, a directory came or went, or the watcher missed events. */
  rescan: boolean
  /** Resolves once every change made before the call was reported; false when that cannot be known (then: rescan). */
  settle?: () => Promise<boolean>
  /** The files `accept` takes, sorted by path, at most `limit`, from the tree's index (index.ts listIndexedFiles). */
  list(accept: (path: string) => boolean, limit: number): Promise<IndexedListing[]>
}

export const watchedTrees = new Map<string, WatchedTree>()
