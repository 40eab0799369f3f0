/**
 * What a warm server answers: each call is the operation its cold path runs (the same function, so the same
 * result), on the server's own tree and with its open, watched search index. The client renders the result as
 * it renders its own.
 */
import {readPromptRecall} from '../hook/context.js'
import {memoryLs} from '../ops/memory-ls.js'
import {recallMemory} from '../ops/recall.js'
import type {MemoryFileHits} from '../ops/search.js'
import {searchMemoryFiles} from '../search/index.js'
import type {WarmOp} from './protocol.js'
import {serveWarm, type WarmServerOptions} from './server.js'
import {type FreshTree, watchTreeFresh} from './tree-watch.js'

const text = (value: unknown) => (typeof value === 'string' ? value : undefined)
const number = (value: unknown) => (typeof value === 'number' ? value : undefined)
const texts = (value: unknown) => (Array.isArray(value) && value.every((item) => typeof item === 'string') ? (value as string[]) : undefined)

/**
 * The answer to one call on the tree at `root`: the input's fields the operation takes, `--dir` always the tree.
 * `tree`: the watch that keeps it, which answers which files changed since a clock (changes.ts).
 */
export function answerFor(root: string, tree?: FreshTree): (op: WarmOp, input: Record<string, unknown>) => Promise<unknown> {
  return async (op, input) => {
    switch (op) {
      case 'changes':
        if (tree === undefined) throw new Error('this process does not watch the tree')
        return tree.changes(text(input.clock))
      case 'recall':
        return recallMemory({dir: root, query: text(input.query) ?? '', limit: number(input.limit), tags: texts(input.tags), prefix: text(input.prefix), since: text(input.since)})
      case 'memory-ls':
        return memoryLs({dir: root, prefix: text(input.prefix), limit: number(input.limit)})
      case 'memory-search-files': {
        const found = await searchMemoryFiles(root, text(input.query) ?? '', {limit: number(input.limit), tags: texts(input.tags), prefix: text(input.prefix), since: text(input.since), until: text(input.until)})
        const files: MemoryFileHits = {hits: found.hits, mode: found.mode, ...(found.note === undefined ? {} : {note: found.note})}
        return files
      }
      case 'prompt-recall':
        return readPromptRecall({root, prompt: text(input.prompt) ?? '', project: text(input.project)})
    }
  }
}

export interface TreeService {
  /** The socket, when this process answers other jarvis processes of the tree; undefined when another one does. */
  socket?: string
  /** Stops answering and watching. */
  close(): Promise<void>
}

/**
 * A long-lived jarvis in the tree at `root` answers the other jarvis processes of the tree (`jarvis sync --watch`):
 * watching the tree only when it answers (no warm path here, or another process answers: nothing to do).
 */
export async function serveTree(root: string, options: Pick<WarmServerOptions, 'runCall' | 'label'> = {}): Promise<TreeService> {
  const tree = watchTreeFresh(root)
  const server = await serveWarm(root, tree, answerFor(root, tree), options).catch(() => undefined)
  if (server === undefined) await tree.close()
  return {
    socket: server?.path,
    async close() {
      await server?.close()
      if (server !== undefined) await tree.close()
    },
  }
}
