/** `jarvis memory snapshot` once its flags are parsed: run by its oclif command and by the fast door. */
import {DEFAULT_LIMIT_RECENT, readSnapshot, type SnapshotResult} from '../../ops/events/snapshot.js'
import {renderSnapshot} from '../memory-render.js'
import type {CommandOutput} from './output.js'
import {type ActionSpec, serverFlagSpecs} from './spec.js'

export interface SnapshotFlags {
  dir?: string
  server?: string
  agent?: string
  scopes?: string[]
  'limit-recent': number
  offline?: boolean
}

export const spec: ActionSpec = {
  flags: {...serverFlagSpecs, scopes: {type: 'string', multiple: true, delimiter: ','}, 'limit-recent': {type: 'integer', default: DEFAULT_LIMIT_RECENT, min: 1}, offline: {type: 'boolean'}},
  args: [],
}

export async function run({flags}: {flags: SnapshotFlags}, output: CommandOutput): Promise<SnapshotResult> {
  const result = await readSnapshot({
    dir: flags.dir,
    server: flags.server,
    agent: flags.agent,
    scopes: flags.scopes?.map((scope) => scope.trim()).filter(Boolean),
    limitRecent: flags['limit-recent'],
    offline: flags.offline,
    warn: output.warn,
  })
  output.log(renderSnapshot(result))
  return result
}
