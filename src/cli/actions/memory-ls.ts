/** `jarvis memory ls` once its flags are parsed: run by its oclif command and by the fast door. */
import {type LsResult, memoryLs} from '../../ops/memory-ls.js'
import {renderLs} from '../files-render.js'
import type {CommandOutput} from './output.js'
import type {ActionSpec} from './spec.js'

export const DEFAULT_LS_LIMIT = 100

export const spec: ActionSpec = {flags: {limit: {type: 'integer', default: DEFAULT_LS_LIMIT, min: 1}}, args: [{name: 'prefix'}]}

export async function run({flags, args}: {flags: {dir?: string; limit: number}; args: {prefix?: string}}, output: CommandOutput): Promise<LsResult> {
  const result = await memoryLs({dir: flags.dir, prefix: args.prefix, limit: flags.limit})
  output.log(renderLs(result))
  return result
}
