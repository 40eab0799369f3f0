/**
 * The rules of the shared event log that need no log (seed 001 §1, §5, §6a, §7, §12; CONTRACT §4): who may read
 * and write which scope, the idempotency key of an append, confidence order, and the warnings an append is
 * accepted with.
 */
import {createHash} from 'node:crypto'

import {agentIdSchema, CONTENT_MD_RECOMMENDED, scopeSchema} from '../schemas/index.js'
import type {Confidence, MemoryEvent, StoredMemoryEvent} from '../schemas/index.js'

/** The rules a snapshot is read under (seed 001 §12); a client compares it with the one it knows. */
export const RULESET_STAMP = 'JARVIS_RULESET=v1.0'

/** Seed 001 W-1: a run writes at most 3–7 events; past this an append is accepted with a warning. */
export const MAX_EVENTS_PER_RUN = 7

/**
 * `global` and `project:<slug>` are open to every agent; `agent:<id>` only to that agent, and to a server's `admin`
 * key, which reads every scope (it still writes as its own agent: canWrite). Anything that is not a valid scope is
 * neither readable nor writable.
 */
export function canRead(agentId: string, scope: string, admin = false): boolean {
  if (!scopeSchema.safeParse(scope).success) return false
  return admin || scope === 'global' || scope.startsWith('project:') || scope === `agent:${agentId}`
}

/**
 * The scopes a snapshot shows when none are asked for: global, and the agent's private scope when it keeps one. A
 * key of an agent outside the event log's four (a CI job, a person's dashboard key) has none: global alone.
 */
export function defaultSnapshotScopes(agentId: string): string[] {
  return agentIdSchema.safeParse(agentId).success ? ['global', `agent:${agentId}`] : ['global']
}

/** The same rule as reading: nobody writes another agent's private scope (enforced by the server from the token). */
export function canWrite(agentId: string, scope: string): boolean {
  return canRead(agentId, scope)
}

/**
 * Whether `scope` is selected by `pattern`: equal, or `pattern` ends in `*` and `scope` starts with the rest
 * (`agent:*`, `project:*`, `*`). Used by snapshot scopes and cleanup's `--scope`.
 */
export function scopeMatches(pattern: string, scope: string): boolean {
  return pattern.endsWith('*') ? scope.startsWith(pattern.slice(0, -1)) : pattern === scope
}

export type EventIdentityFields = Pick<MemoryEvent, 'agent_id' | 'run_id' | 'scope' | 'kind' | 'dedupe_key' | 'content_md'>

/**
 * The idempotency key of an append without an `Idempotency-Key` header (CONTRACT §4): sha256 (lowercase hex) over
 * agent_id, run_id, scope, kind, dedupe_key and content_md, encoded as a JSON array so that no two different
 * events can run together into the same bytes. Confidence, source, supersedes and ttl_days are not part of it:
 * a retry that changed only those is still the same event.
 */
export function eventIdentity(event: EventIdentityFields): string {
  const fields = [event.agent_id, event.run_id, event.scope, event.kind, event.dedupe_key, event.content_md]
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex')
}

/** sha256 of a content_md (lowercase hex), as `StoredMemoryEvent.content_hash` holds it. */
export function contentHash(contentMd: string): string {
  return createHash('sha256').update(contentMd).digest('hex')
}

const RANK: Record<Confidence, number> = {high: 3, med: 2, low: 1}

/** high 3 > med 2 > low 1. */
export function confidenceRank(confidence: Confidence): number {
  return RANK[confidence]
}

/**
 * The warnings an append is accepted with (it is never refused for these):
 * - content_md longer than the seed's recommended 1200 characters;
 * - a lower-confidence event replacing a higher-confidence one: the newest live event of the same scope and
 *   dedupe_key, or the event it supersedes (seed 001 §6a, §7 C-1);
 * - `supersedes` naming an event that is not in the log, or one in another scope or of another key;
 * - more than MAX_EVENTS_PER_RUN events in one run of one agent.
 * `log` is the stored events the server can see (at least those of the event's scope); the new event is not in it.
 */
export function appendWarnings(event: MemoryEvent, log: readonly StoredMemoryEvent[]): string[] {
  const warnings: string[] = []
  if (event.content_md.length > CONTENT_MD_RECOMMENDED) {
    warnings.push(`content_md is ${event.content_md.length} characters; keep it under ${CONTENT_MD_RECOMMENDED} (short and readable: what, why, since when)`)
  }
  const superseded = event.supersedes ? log.find((e) => e.event_id === event.supersedes) : undefined
  if (event.supersedes && !superseded) warnings.push(`supersedes ${event.supersedes}, which is not in the log`)
  if (superseded && (superseded.scope !== event.scope || superseded.dedupe_key !== event.dedupe_key)) {
    warnings.push(`supersedes ${superseded.event_id}, which is ${superseded.scope} ${superseded.dedupe_key}, not ${event.scope} ${event.dedupe_key}`)
  }
  const sameKey = log.filter((e) => e.scope === event.scope && e.dedupe_key === event.dedupe_key && !e.deprecated)
  const replaced = [superseded, newest(sameKey)].filter((e): e is StoredMemoryEvent => e !== undefined)
  const stronger = replaced.find((e) => confidenceRank(e.confidence) > confidenceRank(event.confidence))
  if (stronger) {
    warnings.push(`a ${event.confidence}-confidence event replaces ${stronger.event_id} (${stronger.confidence} confidence) for ${event.dedupe_key}; check it is really settled`)
  }
  const inRun = log.filter((e) => e.agent_id === event.agent_id && e.run_id === event.run_id).length + 1
  if (inRun > MAX_EVENTS_PER_RUN) warnings.push(`this is event ${inRun} of run ${event.run_id}; a run should write at most ${MAX_EVENTS_PER_RUN}`)
  return warnings
}

/**
 * Date.parse of the times compared lately. A sort compares each event's time many times (a server's snapshot of ~60
 * events parsed ~700 times, a third of its CPU); a look-up is cheaper than a parse. Bounded: emptied when full.
 */
const parsedTimes = new Map<string, number>()
const PARSED_TIMES_MAX = 4096

function timeOf(createdAt: string | undefined): number {
  if (!createdAt) return Number.NEGATIVE_INFINITY
  let time = parsedTimes.get(createdAt)
  if (time === undefined) {
    if (parsedTimes.size >= PARSED_TIMES_MAX) parsedTimes.clear()
    time = Date.parse(createdAt)
    parsedTimes.set(createdAt, time)
  }
  return time
}

/** Orders events oldest first: by created_at (missing sorts first), then event_id, so any order of input agrees. */
export function compareEvents(a: Pick<StoredMemoryEvent, 'created_at' | 'event_id'>, b: Pick<StoredMemoryEvent, 'created_at' | 'event_id'>): number {
  const ta = timeOf(a.created_at)
  const tb = timeOf(b.created_at)
  if (ta !== tb) return ta < tb ? -1 : 1
  return a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0
}

function newest<T extends Pick<StoredMemoryEvent, 'created_at' | 'event_id'>>(events: readonly T[]): T | undefined {
  let best: T | undefined
  for (const e of events) if (!best || compareEvents(e, best) > 0) best = e
  return best
}
