import {recall, type RecallResult} from '../search/index.js'
import {openTree} from './context.js'

export type {RecallResult} from '../search/index.js'

export interface RecallInput {
  dir?: string
  query: string
  limit?: number
  tags?: string[]
  prefix?: string
  since?: string
}

/** `jarvis recall`: the seed 004 §7 block for the memory files that best match `query`. */
export async function recallMemory(input: RecallInput): Promise<RecallResult> {
  const {root} = await openTree(input.dir)
  return recall(root, input.query, {limit: input.limit, tags: input.tags, prefix: input.prefix, since: input.since})
}
