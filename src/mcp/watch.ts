/**
 * The tree watch of an MCP session (warm/tree-watch.ts): it tells the search index which files changed under
 * `.memory/`, so a search after a change re-reads that file only, a search with no change re-reads nothing, and
 * every search first makes sure the watch has seen every change made before it (a file the agent just wrote is
 * found). The session also answers the other jarvis processes of the tree (recall, search, ls, the prompt hook)
 * over the warm path's socket, unless another process (a `jarvis sync --watch`, another session) already does.
 */
import createDebug from 'debug'

import {answerFor} from '../warm/answers.js'
import {serveWarm, type WarmServerOptions} from '../warm/server.js'
import {watchTreeFresh} from '../warm/tree-watch.js'

const debug = createDebug('jarvis:mcp')

/** Set when `watchMemory` resolves: changes made before it are caught by the first search's full scan. */
export interface MemoryWatch {
  close(): Promise<void>
}

export async function watchMemory(root: string, options: Pick<WarmServerOptions, 'runCall' | 'label'> = {}): Promise<MemoryWatch> {
  const tree = watchTreeFresh(root)
  const server = await serveWarm(root, tree, answerFor(root, tree), options).catch((error: unknown) => debug('no warm path: %s', (error as Error).message))
  return {
    async close() {
      await server?.close()
      await tree.close()
    },
  }
}
