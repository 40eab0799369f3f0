/**
 * The shared event log rules (docs/event-log.md): redaction, scopes and idempotency, conflicts, snapshots and
 * the janitor. The server and the CLI import from here, never from the files behind it.
 */
export * from './conflicts.js'
export * from './duration.js'
export * from './janitor.js'
export * from './redact.js'
export * from './rules.js'
export * from './snapshot.js'
