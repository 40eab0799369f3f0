/** `jarvis memory ls` once its flags are parsed: run by its oclif command and by the fast door. */
import type {LsResult} from '../../ops/memory-ls.js'
import {renderLs} from '../files-render.js'
import {askWarmTree} from '../warm.js'
import type {CommandOutput} from './output.js'
import type {ActionSpec} from './spec.js'

export const DEFAULT_LS_LIMIT = 100

export const spec: ActionSpec = {flags: {limit: {type: 'integer', default: DEFAULT_LS_LIMIT, min: 1}}, args: [{name: 'prefix'}]}

export async function run({flags, args}: {flags: {dir?: string; limit: number}; args: {prefix?: string}}, output: CommandOutput): Promise<LsResult> {
  const input = {prefix: args.prefix, limit: flags.limit}
  // A jarvis running in the tree answers from its watched index; otherwise this process does the work.
  const result = (await askWarmTree<LsResult>(flags.dir, 'memory-ls', input)) ?? (await (await import('../../ops/memory-ls.js')).memoryLs({dir: flags.dir, ...input}))
  output.log(renderLs(result))
  return result
}
