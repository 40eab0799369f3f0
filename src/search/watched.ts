/**
 * The trees this process watches itself (`jarvis mcp`, `sync --watch`: index.ts watchSearchIndex), in a module of
 * their own: a call that only asks whether a tree is watched (`memory ls`) loads nothing of the search.
 */

/** What a file watcher on a tree's `.memory/` has reported since the last search (see index.ts watchSearchIndex). */
export interface WatchedTree {
  /** Paths changed since the last search. */
  changed: Set<string>
  /** Re-scan everything at the next search: nothing seen yet, a directory came or went, or the watcher missed events. */
  rescan: boolean
  /** Resolves once every change made before the call was reported; false when that cannot be known (then: rescan). */
  settle?: () => Promise<boolean>
}

export const watchedTrees = new Map<string, WatchedTree>()

/** Whether this process watches the tree at `root`: its search index then describes the tree (once refreshed). */
export function watchesTree(root: string): boolean {
  return watchedTrees.has(root)
}
