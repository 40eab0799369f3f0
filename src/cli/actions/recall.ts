/** `jarvis recall` once its flags are parsed: run by its oclif command and by the fast door. */
import type {RecallInput, RecallResult} from '../../ops/recall.js'
import {askWarmTree} from '../warm.js'
import type {CommandOutput} from './output.js'
import type {ActionSpec} from './spec.js'

export const DEFAULT_RECALL_LIMIT = 3

export interface RecallFlags {
  dir?: string
  limit: number
  tag?: string[]
  prefix?: string
  since?: string
}

export const spec: ActionSpec = {
  flags: {limit: {type: 'integer', default: DEFAULT_RECALL_LIMIT, min: 1, max: 10}, tag: {type: 'string', multiple: true}, prefix: {type: 'string'}, since: {type: 'string'}},
  args: [{name: 'query', required: true}],
}

export async function run({flags, args}: {flags: RecallFlags; args: {query: string}}, output: CommandOutput): Promise<RecallResult> {
  const input: RecallInput = {query: args.query, limit: flags.limit, tags: flags.tag, prefix: flags.prefix, since: flags.since}
  // A jarvis running in the tree answers from its watched index; otherwise this process does the work.
  const result =
    (await askWarmTree<RecallResult>(flags.dir, 'recall', {...input})) ?? (await (await import('../../ops/recall.js')).recallMemory({dir: flags.dir, ...input}))
  output.log(result.block)
  if (result.note && !output.json) output.logToStderr(`jarvis: ${result.note}`)
  return result
}
