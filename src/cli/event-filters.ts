/** The event filters' values (memory-flags.ts defines them as oclif flags) as `listEvents` options: no oclif here, the fast door uses it. */
export interface EventFilterFlagValues {
  dir?: string
  server?: string
  scope?: string
  kind?: string
  key?: string
  agent?: string
  since?: string
  until?: string
  limit?: number
  'include-deprecated'?: boolean
}

/** The flags as listEvents options. */
export function eventFilterOptions(flags: EventFilterFlagValues) {
  return {
    dir: flags.dir,
    server: flags.server,
    scope: flags.scope,
    kind: flags.kind,
    key: flags.key,
    agent: flags.agent,
    since: flags.since,
    until: flags.until,
    limit: flags.limit,
    includeDeprecated: flags['include-deprecated'],
  }
}
