import {recall, type RecallResult} from '../search/index.js'
import {findRoot} from '../store/root.js'

export type {RecallResult} from '../search/index.js'

export interface RecallInput {
  dir?: string
  query: string
  limit?: number
  tags?: string[]
  prefix?: string
  since?: string
}

/**
 * `jarvis recall`: the `[MEMORY CONTEXT]` block for the memory files that best match `query`. Files only, which are
 * always on this machine: it never needs the server (`memory search` adds the shared event log, and stops with
 * exit 3 when that cannot be read).
 */
export async function recallMemory(input: RecallInput): Promise<RecallResult> {
  // The tree's root only: its config (and the schemas that check it) says nothing a recall uses.
  const root = findRoot(process.cwd(), input.dir)
  return recall(root, input.query, {limit: input.limit, tags: input.tags, prefix: input.prefix, since: input.since})
}
