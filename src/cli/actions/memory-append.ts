/** `jarvis memory append` once its flags are parsed: run by its oclif command and by the fast door. */
import {appendMemory, type AppendResult} from '../../ops/events/append.js'
import {readNamedInput, readStdin} from '../input.js'
import {renderAppend} from '../memory-render.js'
import type {CommandOutput} from './output.js'
import {type ActionSpec, type FlagSpec, serverFlagSpecs} from './spec.js'

export interface AppendFlags {
  dir?: string
  server?: string
  agent?: string
  kind?: string
  key?: string
  content?: string
  scope?: string
  confidence?: string
  supersedes?: string
  'ttl-days'?: number
  'from-file'?: string
}

const field: FlagSpec = {type: 'string', exclusive: ['from-file']}

export const spec: ActionSpec = {
  flags: {
    ...serverFlagSpecs,
    kind: field,
    key: field,
    content: field,
    scope: field,
    confidence: field,
    supersedes: field,
    'ttl-days': {type: 'integer', min: 0, exclusive: ['from-file']},
    'from-file': {type: 'string'},
  },
  args: [],
}

export async function run({flags}: {flags: AppendFlags}, output: CommandOutput): Promise<AppendResult> {
  const result = await appendMemory({
    dir: flags.dir,
    server: flags.server,
    agent: flags.agent,
    eventsText: flags['from-file'] === undefined ? undefined : await readNamedInput(flags['from-file'], 'the events'),
    fields: {kind: flags.kind, key: flags.key, content: flags.content === '-' ? await readStdin() : flags.content, scope: flags.scope, confidence: flags.confidence, supersedes: flags.supersedes, ttlDays: flags['ttl-days']},
    warn: output.warn,
  })
  output.log(renderAppend(result))
  return result
}
