/**
 * A chokidar watcher on `.memory/` for the life of an MCP session: it tells the search index which files changed
 * (search/index.ts watchSearchIndex), so a search after a change re-reads that file only, and a search with no
 * change re-reads nothing. chokidar is loaded only when a session starts.
 */
import {relative, sep} from 'node:path'

import createDebug from 'debug'

import {watchSearchIndex} from '../search/index.js'
import {isIgnoredMemoryPath, memoryDir} from '../store/index.js'

const debug = createDebug('jarvis:mcp')

export interface MemoryWatch {
  /** Resolves once the watcher has seen the whole tree (changes before that are caught by a full scan). */
  ready: Promise<void>
  close(): Promise<void>
}

export async function watchMemory(root: string): Promise<MemoryWatch> {
  const {watch} = await import('chokidar')
  const memory = memoryDir(root)
  const index = watchSearchIndex(root)
  const relativePath = (path: string) => relative(memory, path).split(sep).join('/')
  const watcher = watch(memory, {
    ignoreInitial: true,
    ignored: (path: string) => {
      const rel = relativePath(path)
      return rel !== '' && (isIgnoredMemoryPath(rel) || rel.slice(rel.lastIndexOf('/') + 1).includes('.jarvis-tmp-'))
    },
  })
  watcher.on('all', (event, path) => {
    const rel = relativePath(path)
    debug('watch: %s %s', event, rel)
    if (event === 'addDir' || event === 'unlinkDir') index.rescan()
    else index.changed(rel)
  })
  watcher.on('error', (error) => {
    debug('watcher error: %s', (error as Error).message)
    index.rescan()
  })
  const ready = new Promise<void>((resolve) =>
    watcher.once('ready', () => {
      // What changed between the start and now was not reported: the next search scans everything once.
      index.rescan()
      resolve()
    }),
  )
  return {
    ready,
    async close() {
      await watcher.close()
      await index.stop()
    },
  }
}
