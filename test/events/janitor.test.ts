import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {
  buildSnapshot,
  cleanupCandidates,
  conflictResolutionEvent,
  conflictResolutionKey,
  DAY_MS,
  detectConflicts,
  findSensitive,
  isEmptyPlan,
  isExpired,
  maskSensitive,
  pinnedEvents,
  planConsolidation,
} from '../../src/events/index.js'
import type {ConsolidationPlan, SensitiveFinding} from '../../src/events/index.js'
import type {StoredMemoryEvent} from '../../src/schemas/index.js'
import {memoryEventSchema, storedMemoryEventSchema} from '../../src/schemas/index.js'
import {Fakes} from './fakes.js'
import {logArb, stored} from './helpers.js'

const now = new Date('2026-03-01T00:00:00Z')
const none = new Map<string, SensitiveFinding[]>()
const finding: SensitiveFinding = {kind: 'secret', rule: 'github-token', field: 'content_md', line: 1, column: 1}

/** Applies a plan the way the server does, in memory: mask and mark, mark TTL candidates, append resolutions. */
function apply(events: StoredMemoryEvent[], plan: ConsolidationPlan, at: Date): StoredMemoryEvent[] {
  const masked = new Set(plan.toMask.map((m) => m.event_id))
  const expired = new Set(plan.ttlCandidates)
  const next = events.map((e) => ({
    ...e,
    ...(masked.has(e.event_id) ? {content_md: `${e.content_md.trim()} [REDACTED:github-token]`, masked: true} : {}),
    ...(expired.has(e.event_id) ? {ttl_candidate: true} : {}),
  }))
  for (const [i, conflict] of plan.conflicts.entries()) {
    const event = conflictResolutionEvent(conflict, {agent_id: 'claude', run_id: 'janitor'})
    next.push({...event, event_id: `res_${at.getTime()}_${i}`, created_at: at.toISOString(), deprecated: false})
  }
  return next
}

describe('TTL candidates', () => {
  const created = '2026-02-01T00:00:00Z'
  it('are events with ttl_days > 0 whose created_at + ttl_days is strictly before now', () => {
    const e = stored({ttl_days: 10, created_at: created})
    const deadline = Date.parse(created) + 10 * DAY_MS
    expect(isExpired(e, new Date(deadline - 1))).toBe(false)
    expect(isExpired(e, new Date(deadline))).toBe(false)
    expect(isExpired(e, new Date(deadline + 1))).toBe(true)
    expect(isExpired({...e, ttl_days: 0}, new Date(deadline + 10 * DAY_MS * 1000))).toBe(false)
    expect(isExpired({...e, created_at: undefined}, new Date(deadline + 1))).toBe(false)
  })

  it('are planned once: a marked candidate is not planned again', () => {
    const e = stored({ttl_days: 1, created_at: created})
    const keep = stored({ttl_days: 0, created_at: created})
    const young = stored({ttl_days: 90, created_at: created})
    const plan = planConsolidation([e, keep, young], now, none)
    expect(plan.ttlCandidates).toEqual([e.event_id])
    expect(planConsolidation([{...e, ttl_candidate: true}, keep, young], now, none).ttlCandidates).toEqual([])
  })
})

describe('conflicts', () => {
  const k = {scope: 'global', dedupe_key: 'memory_ssot'}

  it('are different content from different agents on one key, none superseded', () => {
    const a = stored({...k, agent_id: 'claude', content_md: 'Gateway is the SSOT'})
    const b = stored({...k, agent_id: 'gemini', content_md: 'AI_MEMORY is the SSOT'})
    const plan = planConsolidation([a, b], now, none)
    expect(plan.conflicts).toEqual([
      {...k, event_ids: [a.event_id, b.event_id].sort(), agents: ['claude', 'gemini'], resolution_key: conflictResolutionKey(k.scope, k.dedupe_key, [b.event_id, a.event_id])},
    ])
    expect(plan.conflicts[0].resolution_key).toMatch(/^conflict:[0-9a-f]{40}$/)
  })

  it('are not: same content, one agent, other scopes, superseded', () => {
    const a = stored({...k, agent_id: 'claude', content_md: 'same'})
    expect(detectConflicts([a, stored({...k, agent_id: 'gemini', content_md: 'same\r\n'})])).toEqual([])
    expect(detectConflicts([a, stored({...k, agent_id: 'claude', content_md: 'rewritten by claude'})])).toEqual([])
    expect(detectConflicts([a, stored({...k, scope: 'project:x', agent_id: 'gemini', content_md: 'other'})])).toEqual([])
    expect(detectConflicts([a, stored({...k, agent_id: 'gemini', content_md: 'other', supersedes: a.event_id})])).toEqual([])
    expect(detectConflicts([{...a, deprecated: true}, stored({...k, agent_id: 'gemini', content_md: 'other'})])).toEqual([])
  })

  it('compare each agent by its newest event of the key', () => {
    const a1 = stored({...k, agent_id: 'claude', content_md: 'v1'})
    const b = stored({...k, agent_id: 'gemini', content_md: 'v2'})
    const a2 = stored({...k, agent_id: 'claude', content_md: 'v2'})
    expect(detectConflicts([a1, b])).toHaveLength(1)
    expect(detectConflicts([a1, b, a2])).toEqual([]) // claude came round to gemini's value
  })

  it('are flagged once: the resolution event covers exactly that set; a new event makes a new set', () => {
    const a = stored({...k, agent_id: 'claude', content_md: 'Gateway is the SSOT'})
    const b = stored({...k, agent_id: 'gemini', content_md: 'AI_MEMORY is the SSOT'})
    const first = planConsolidation([a, b], now, none)
    expect(first.conflicts).toHaveLength(1)
    const after = apply([a, b], first, now)
    const resolution = after.at(-1)!
    expect(resolution.kind).toBe('conflict_resolution')
    expect(memoryEventSchema.parse(resolution)).toMatchObject({kind: 'conflict_resolution', dedupe_key: first.conflicts[0].resolution_key})
    expect(storedMemoryEventSchema.parse(resolution).event_id).toBe(resolution.event_id)
    expect(resolution.content_md).toContain(a.event_id)
    expect(resolution.content_md).not.toContain('SSOT')
    expect(planConsolidation(after, now, none).conflicts).toEqual([])
    const c = stored({...k, agent_id: 'openclaw', content_md: 'three'})
    expect(planConsolidation([...after, c], now, none).conflicts.map((x) => x.event_ids)).toEqual([[a.event_id, b.event_id, c.event_id].sort()])
  })

  it('shows an open resolution in pinned memory and the recent events, and drops it from both once the agents agree', () => {
    const a = stored({...k, agent_id: 'claude', content_md: 'one'})
    const b = stored({...k, agent_id: 'gemini', content_md: 'two'})
    const after = apply([a, b], planConsolidation([a, b], now, none), now)
    const resolution = after.at(-1)!
    const recent = (events: StoredMemoryEvent[]) => buildSnapshot(events, {scopes: [], limitRecent: 50}).recent_events.map((e) => e.event_id)
    expect(pinnedEvents(after).map((e) => e.event_id)).toContain(resolution.event_id)
    expect(recent(after)).toContain(resolution.event_id)
    const settled = [...after, stored({...k, agent_id: 'claude', content_md: 'two', supersedes: a.event_id, created_at: '2026-03-02T00:00:00Z'})]
    expect(pinnedEvents(settled).map((e) => e.event_id)).not.toContain(resolution.event_id)
    // "Agents disagree … please confirm" is not news once they agree.
    expect(recent(settled)).not.toContain(resolution.event_id)
    expect(planConsolidation(settled, now, none).conflicts).toEqual([])
  })
})

describe('masking', () => {
  it('plans events with findings that are not masked yet', () => {
    const a = stored()
    const b = stored({masked: true})
    const c = stored()
    const plan = planConsolidation([a, b, c], now, new Map([[a.event_id, [finding]], [b.event_id, [finding]], [c.event_id, []]]))
    expect(plan.toMask).toEqual([{event_id: a.event_id, findings: [finding]}])
  })

  it('end to end with the scanner: scan, mask, rescan → nothing left to mask', async () => {
    const f = new Fakes(7)
    const events = [stored({content_md: `token ${f.githubClassic()}`}), stored({content_md: 'clean'}), stored({content_md: `mail ${f.email('gmail.com')}`})]
    const scan = async (log: StoredMemoryEvent[]) => new Map(await Promise.all(log.map(async (e) => [e.event_id, await findSensitive({content_md: e.content_md})] as const)))
    const plan = planConsolidation(events, now, await scan(events))
    expect(plan.toMask.map((m) => m.event_id)).toEqual([events[0].event_id, events[2].event_id])
    const toMask = new Set(plan.toMask.map((m) => m.event_id))
    const masked = await Promise.all(events.map(async (e) => (toMask.has(e.event_id) ? {...e, content_md: (await maskSensitive(e.content_md)).text, masked: true} : e)))
    expect(masked.map((e) => e.content_md)).toEqual(['token [REDACTED:github-token]', 'clean', 'mail [REDACTED:email]'])
    expect(isEmptyPlan(planConsolidation(masked, now, await scan(masked)))).toBe(true)
  })
})

describe('planConsolidation', () => {
  it('reports the pinned events', () => {
    const a = stored({dedupe_key: 'k'})
    const b = stored({dedupe_key: 'k'})
    expect(planConsolidation([a, b], now, none).pinned).toEqual([b.event_id])
  })

  it('is idempotent: plan → apply → plan again is empty (fast-check)', () => {
    fc.assert(
      fc.property(logArb, fc.func(fc.boolean()), fc.integer({min: 0, max: 60}), (events, dirty, days) => {
        const at = new Date(Date.UTC(2026, 1, 2) + days * DAY_MS)
        // findings are a function of the content, as findSensitive's are
        const findings = new Map(events.filter((e) => dirty(e.content_md.trim())).map((e) => [e.event_id, [finding]]))
        const plan = planConsolidation(events, at, findings)
        const after = apply(events, plan, at)
        // findings still reported for masked events (a caller may pass stale findings): masked ones are skipped
        const again = planConsolidation(after, at, findings)
        expect(isEmptyPlan(again)).toBe(true)
        expect(again.pinned.filter((id) => !id.startsWith('res_'))).toEqual(plan.pinned.filter((id) => after.some((e) => e.event_id === id)))
      }),
      {numRuns: 300},
    )
  })

  it('does not depend on the order of the log (fast-check)', () => {
    fc.assert(
      fc.property(
        logArb.chain((events) => fc.tuple(fc.constant(events), fc.shuffledSubarray(events, {minLength: events.length, maxLength: events.length}))),
        ([events, shuffled]) => {
          expect(planConsolidation(shuffled, now, none)).toEqual(planConsolidation(events, now, none))
        },
      ),
      {numRuns: 200},
    )
  })

  it('changes nothing on an empty log', () => {
    expect(planConsolidation([], now, none)).toEqual({pinned: [], ttlCandidates: [], conflicts: [], toMask: []})
  })
})

describe('cleanupCandidates', () => {
  it('are old events that are expired or deprecated, never a live permanent one', () => {
    const old = '2026-01-01T00:00:00Z'
    const permanent = stored({created_at: old})
    const deprecated = stored({created_at: old, deprecated: true})
    const expired = stored({created_at: old, ttl_days: 7})
    const superseded = stored({created_at: old})
    const replacing = stored({created_at: old, supersedes: superseded.event_id})
    const recentDeprecated = stored({created_at: '2026-02-28T00:00:00Z', deprecated: true})
    const candidates = cleanupCandidates([permanent, deprecated, expired, superseded, replacing, recentDeprecated], now, 30)
    expect(candidates).toEqual([deprecated.event_id, expired.event_id, superseded.event_id].sort())
  })
})
