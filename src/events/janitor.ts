/**
 * The memory janitor (seed 001 §2 L2, §7, §8 MUST-S5, §11) as a pure planner: given the log, the time and the
 * sensitive findings the caller computed (findSensitive is async, so it is run before), it says what to change.
 * The caller applies the plan: appends the conflict_resolution events, marks TTL candidates, masks and records
 * the masking in the audit log. Planning again after that yields an empty plan.
 */
import type {StoredMemoryEvent} from '../schemas/index.js'
import {detectConflicts} from './conflicts.js'
import type {PlannedConflict} from './conflicts.js'
import type {SensitiveFinding} from './redact.js'
import {pinnedEvents} from './snapshot.js'

export const DAY_MS = 86_400_000

export interface PlannedMask {
  event_id: string
  findings: SensitiveFinding[]
}

export interface ConsolidationPlan {
  /** event_ids of the pinned events (newest live per scope and key): a report, not a change. */
  pinned: string[]
  /** event_ids newly past their ttl_days and not yet marked `ttl_candidate`: mark them (deletion waits for a person). */
  ttlCandidates: string[]
  /** Open conflicts not yet flagged by a conflict_resolution event: append conflictResolutionEvent(c, …) for each. */
  conflicts: PlannedConflict[]
  /** Events with findings that are not yet `masked`: mask their content with maskSensitive and mark them. */
  toMask: PlannedMask[]
}

/**
 * Whether an event is past its TTL at `now`: ttl_days > 0 and created_at + ttl_days days is strictly before now.
 * An event without created_at never expires (its age is unknown).
 */
export function isExpired(event: Pick<StoredMemoryEvent, 'ttl_days' | 'created_at'>, now: Date): boolean {
  if (!(event.ttl_days > 0) || !event.created_at) return false
  const created = Date.parse(event.created_at)
  return Number.isFinite(created) && created + event.ttl_days * DAY_MS < now.getTime()
}

/**
 * Plans one janitor run. `findings` maps event_id → what findSensitive found in that event (missing or empty:
 * clean). Every list is sorted, so the same log gives the same plan whatever its order.
 */
export function planConsolidation(events: StoredMemoryEvent[], now: Date, findings: Map<string, SensitiveFinding[]>): ConsolidationPlan {
  const pinned = pinnedEvents(events).map((e) => e.event_id)
  const ttlCandidates = events
    .filter((e) => !e.ttl_candidate && isExpired(e, now))
    .map((e) => e.event_id)
    .sort()
  const flagged = new Set(events.filter((e) => e.kind === 'conflict_resolution').map((e) => JSON.stringify([e.scope, e.dedupe_key])))
  const conflicts = detectConflicts(events).filter((c) => !flagged.has(JSON.stringify([c.scope, c.resolution_key])))
  const toMask = events
    .filter((e) => !e.masked && (findings.get(e.event_id)?.length ?? 0) > 0)
    .map((e) => ({event_id: e.event_id, findings: findings.get(e.event_id)!}))
    .sort((a, b) => (a.event_id < b.event_id ? -1 : a.event_id > b.event_id ? 1 : 0))
  return {pinned, ttlCandidates, conflicts, toMask}
}

/** True when the plan changes nothing (pinned is only a report). */
export function isEmptyPlan(plan: ConsolidationPlan): boolean {
  return plan.ttlCandidates.length === 0 && plan.conflicts.length === 0 && plan.toMask.length === 0
}

/**
 * Cleanup candidates (CONTRACT: `jarvis memory cleanup`): events created more than `olderThanDays` days before
 * `now` that are expired (TTL) or deprecated (superseded). A live permanent event is never one. Sorted by id.
 */
export function cleanupCandidates(events: StoredMemoryEvent[], now: Date, olderThanDays: number): string[] {
  const superseded = new Set(events.flatMap((e) => (e.supersedes ? [e.supersedes] : [])))
  return events
    .filter((e) => {
      if (!e.created_at) return false
      const created = Date.parse(e.created_at)
      if (!Number.isFinite(created) || !(created + olderThanDays * DAY_MS < now.getTime())) return false
      return e.deprecated || superseded.has(e.event_id) || e.ttl_candidate === true || isExpired(e, now)
    })
    .map((e) => e.event_id)
    .sort()
}
