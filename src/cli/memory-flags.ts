import {Flags} from '@oclif/core'

/** The filters `jarvis memory list` and `jarvis memory search` share (GET /v1/memory/events). */
export const eventFilterFlags = {
  // Who asks is the token's agent: here --agent is the author filter, so it does not read JARVIS_AGENT.
  server: Flags.string({description: 'URL of the jarvis server.', env: 'JARVIS_SERVER', helpGroup: 'SERVER'}),
  scope: Flags.string({description: 'Only this scope: global, project:<slug>, agent:<id>, or a family such as agent:*.', helpGroup: 'FILTER'}),
  kind: Flags.string({description: 'Only this kind (decision, config, constraint, workflow, fact, bug, todo, log, deprecation, …).', helpGroup: 'FILTER'}),
  key: Flags.string({description: 'Only this dedupe_key.', helpGroup: 'FILTER'}),
  agent: Flags.string({description: 'Only events written by this agent.', helpGroup: 'FILTER'}),
  since: Flags.string({description: 'Only events from this time on: 2026-02-01, an ISO date-time, or a duration back from now (7d, 12h, 2w).', helpGroup: 'FILTER'}),
  until: Flags.string({description: 'Only events up to this time (same forms as --since; a date counts to the end of that day).', helpGroup: 'FILTER'}),
  limit: Flags.integer({description: 'At most this many events.', min: 1, helpGroup: 'FILTER'}),
  'include-deprecated': Flags.boolean({description: 'Also superseded events.', helpGroup: 'FILTER'}),
}
