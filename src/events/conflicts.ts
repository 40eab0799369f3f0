/**
 * Which events are live, and where agents disagree (seed 001 §7 C-1..C-3). Pure: shared by the snapshot (which
 * hides deprecated events and settled conflict_resolution events) and the janitor (which plans resolutions).
 */
import {createHash} from 'node:crypto'

import type {MemoryEvent, StoredMemoryEvent} from '../schemas/index.js'
import {compareEvents} from './rules.js'

/**
 * Every event that is deprecated: flagged so by the server, or named by another event's `supersedes` (C-2). Both
 * count so that a snapshot of a seed-style gateway, which may not send the flag, is read the same way.
 */
export function deprecatedIds(events: readonly StoredMemoryEvent[]): Set<string> {
  const ids = new Set<string>()
  for (const e of events) {
    if (e.deprecated) ids.add(e.event_id)
    if (e.supersedes) ids.add(e.supersedes)
  }
  return ids
}

/** Two agents disagree on one key in one scope; `resolution_key` is the dedupe_key of the event that flags it. */
export interface PlannedConflict {
  scope: string
  dedupe_key: string
  /** The newest live event of each agent involved, sorted. */
  event_ids: string[]
  /** The agents involved, sorted. */
  agents: string[]
  resolution_key: string
}

/**
 * The dedupe_key of the conflict_resolution event for exactly this set of events: `conflict:` and 40 hex digits of
 * sha256 over scope, dedupe_key and the sorted ids. The same set always gives the same key, so the janitor can
 * tell that a conflict was already flagged; a different set (a new event joined in) gives a new key.
 */
export function conflictResolutionKey(scope: string, dedupeKey: string, eventIds: readonly string[]): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([scope, dedupeKey, [...eventIds].sort()]))
    .digest('hex')
  return `conflict:${digest.slice(0, 40)}`
}

function normalizeContent(content: string): string {
  return content.replace(/\r\n?/g, '\n').replace(/[ \t]+$/gm, '').trim()
}

/**
 * The conflicts in a log (C-1, C-3): in one scope, the live events of one dedupe_key whose agents disagree. Each
 * agent is represented by its newest live event of the key (an agent that rewrote its own value without
 * `supersedes` has not disagreed with itself); there is a conflict when two or more agents remain and they carry
 * different content_md (compared after trimming trailing spaces and line-ending differences). conflict_resolution
 * events themselves never take part. Sorted by scope, then dedupe_key.
 */
export function detectConflicts(events: readonly StoredMemoryEvent[]): PlannedConflict[] {
  const deprecated = deprecatedIds(events)
  const groups = new Map<string, Map<string, StoredMemoryEvent>>()
  for (const e of events) {
    if (deprecated.has(e.event_id) || e.kind === 'conflict_resolution') continue
    const key = JSON.stringify([e.scope, e.dedupe_key])
    const byAgent = groups.get(key) ?? new Map<string, StoredMemoryEvent>()
    const current = byAgent.get(e.agent_id)
    if (!current || compareEvents(e, current) > 0) byAgent.set(e.agent_id, e)
    groups.set(key, byAgent)
  }
  const conflicts: PlannedConflict[] = []
  for (const [key, byAgent] of groups) {
    if (byAgent.size < 2) continue
    const latest = [...byAgent.values()]
    if (new Set(latest.map((e) => normalizeContent(e.content_md))).size < 2) continue
    const [scope, dedupeKey] = JSON.parse(key) as [string, string]
    const eventIds = latest.map((e) => e.event_id).sort()
    conflicts.push({
      scope,
      dedupe_key: dedupeKey,
      event_ids: eventIds,
      agents: [...byAgent.keys()].sort(),
      resolution_key: conflictResolutionKey(scope, dedupeKey, eventIds),
    })
  }
  return conflicts.sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : a.dedupe_key < b.dedupe_key ? -1 : a.dedupe_key > b.dedupe_key ? 1 : 0))
}

/**
 * The event the janitor appends to flag a conflict (C-3): kind `conflict_resolution`, in the conflict's scope,
 * keyed by its resolution_key. It names the events and agents but never quotes their content, so that it cannot
 * copy a secret that has not been masked yet. `agent_id` and `run_id` are the caller's (the agent or person
 * running `consolidate`).
 */
export function conflictResolutionEvent(conflict: PlannedConflict, by: {agent_id: MemoryEvent['agent_id']; run_id: string}): MemoryEvent {
  const content = [
    `Agents disagree on \`${conflict.dedupe_key}\` in ${conflict.scope}: ${conflict.agents.join(', ')} wrote different content and none supersedes the others.`,
    `Please confirm which holds and write it with \`supersedes\` (until then the newest one is read).`,
    `Events: ${conflict.event_ids.map((id) => `\`${id}\``).join(', ')}`,
  ].join('\n')
  return {
    agent_id: by.agent_id,
    run_id: by.run_id,
    scope: conflict.scope,
    kind: 'conflict_resolution',
    dedupe_key: conflict.resolution_key,
    confidence: 'med',
    content_md: content,
    source: {system: 'other'},
    supersedes: null,
    ttl_days: 0,
  }
}
