/** `jarvis memory search` once its flags are parsed: run by its oclif command and by the fast door. */
import type {MemoryFileHits, MemorySearchResult} from '../../ops/search.js'
import {type EventFilterFlagValues, eventFilterOptions} from '../event-filters.js'
import {renderMemorySearch} from '../memory-render.js'
import {askWarmTree} from '../warm.js'
import type {CommandOutput} from './output.js'
import type {ActionSpec} from './spec.js'

export interface MemorySearchFlags extends EventFilterFlagValues {
  tag?: string[]
  prefix?: string
}

export const spec: ActionSpec = {
  flags: {
    // Who asks is the token's agent: here --agent is the author filter, so it does not read JARVIS_AGENT.
    server: {type: 'string', env: 'JARVIS_SERVER'},
    scope: {type: 'string'},
    kind: {type: 'string'},
    key: {type: 'string'},
    agent: {type: 'string'},
    since: {type: 'string'},
    until: {type: 'string'},
    limit: {type: 'integer', min: 1},
    'include-deprecated': {type: 'boolean'},
    tag: {type: 'string', multiple: true},
    prefix: {type: 'string'},
  },
  args: [{name: 'query', required: true}],
}

export async function run({flags, args}: {flags: MemorySearchFlags; args: {query: string}}, output: CommandOutput): Promise<MemorySearchResult> {
  const options = {...eventFilterOptions(flags), query: args.query, tags: flags.tag, prefix: flags.prefix}
  const {fileSearchOf, searchMemory} = await import('../../ops/search.js')
  // The files' part from a jarvis running in the tree, when one does; the event log is asked here meanwhile.
  const files = askWarmTree<MemoryFileHits>(flags.dir, 'memory-search-files', fileSearchOf(options))
  const result = await searchMemory({...options, files})
  for (const note of result.notes) output.warn(note)
  output.log(renderMemorySearch(result))
  return result
}
