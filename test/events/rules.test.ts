import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {
  appendWarnings,
  canRead,
  canWrite,
  compareEvents,
  confidenceRank,
  contentHash,
  eventIdentity,
  MAX_EVENTS_PER_RUN,
  RULESET_STAMP,
  scopeMatches,
} from '../../src/events/index.js'
import type {MemoryEvent} from '../../src/schemas/index.js'
import {memoryEventSchema} from '../../src/schemas/index.js'
import {stored} from './helpers.js'

describe('canRead / canWrite', () => {
  const table: Array<[agent: string, scope: string, allowed: boolean]> = [
    ['claude', 'global', true],
    ['gemini', 'global', true],
    ['claude', 'project:jarvis', true],
    ['openclaw', 'project:memory-gateway', true],
    ['chatgpt', 'project:a.b_c-1', true],
    ['claude', 'agent:claude', true],
    ['gemini', 'agent:gemini', true],
    ['claude', 'agent:gemini', false],
    ['gemini', 'agent:claude', false],
    ['chatgpt', 'agent:openclaw', false],
    ['claude', 'agent:', false],
    ['claude', 'agent:bob', false],
    ['claude', 'agent:claude2', false],
    ['claude', 'agent:*', false],
    ['claude', 'project:', false],
    ['claude', 'project:..', false],
    ['claude', 'project:UPPER', false],
    ['claude', 'Global', false],
    ['claude', 'global_v2', false],
    ['claude', '', false],
    ['claude', 'private', false],
  ]
  it.each(table)('%s on %j → %s', (agent, scope, allowed) => {
    expect(canRead(agent, scope)).toBe(allowed)
    expect(canWrite(agent, scope)).toBe(allowed)
  })
})

describe('scopeMatches', () => {
  it.each([
    ['global', 'global', true],
    ['global', 'project:x', false],
    ['agent:*', 'agent:claude', true],
    ['agent:*', 'global', false],
    ['project:*', 'project:jarvis', true],
    ['*', 'agent:gemini', true],
    ['project:jarvis', 'project:jarvis-2', false],
  ])('%s selects %s: %s', (pattern, scope, expected) => {
    expect(scopeMatches(pattern, scope)).toBe(expected)
  })
})

const base: MemoryEvent = memoryEventSchema.parse({
  agent_id: 'claude',
  run_id: 'run_2026_02_02_001',
  scope: 'global',
  kind: 'config',
  dedupe_key: 'telegram_bot_token_location',
  confidence: 'high',
  content_md: 'TELEGRAM_BOT_TOKEN は ~/claude-telegram-bot/.env に保存（2026-02-02から有効）',
  source: {system: 'telegram', thread_id: 'thr_abc123'},
  supersedes: null,
  ttl_days: 0,
})

describe('eventIdentity', () => {
  it('is a sha256 in lowercase hex, stable across calls and key order', () => {
    const id = eventIdentity(base)
    expect(id).toMatch(/^[0-9a-f]{64}$/)
    const reordered = Object.fromEntries(Object.entries(base).reverse()) as MemoryEvent
    expect(eventIdentity(reordered)).toBe(id)
    expect(eventIdentity({...base})).toBe(id)
  })

  it.each([
    ['agent_id', {agent_id: 'gemini'}],
    ['run_id', {run_id: 'run_2026_02_02_002'}],
    ['scope', {scope: 'project:jarvis'}],
    ['kind', {kind: 'decision'}],
    ['dedupe_key', {dedupe_key: 'telegram_bot_token_location_v2'}],
    ['content_md', {content_md: `${base.content_md} `}],
  ] as const)('changes with %s', (_field, change) => {
    expect(eventIdentity({...base, ...change} as MemoryEvent)).not.toBe(eventIdentity(base))
  })

  it.each([
    ['confidence', {confidence: 'low'}],
    ['source', {source: {system: 'cli'}}],
    ['supersedes', {supersedes: 'evt_1'}],
    ['ttl_days', {ttl_days: 30}],
  ] as const)('does not change with %s (a retry is the same event)', (_field, change) => {
    expect(eventIdentity({...base, ...change} as MemoryEvent)).toBe(eventIdentity(base))
  })

  it('cannot be fooled by moving characters between fields', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (a, b, c) => {
        fc.pre(a + b !== '' && b !== '')
        const one = eventIdentity({...base, run_id: a + b, content_md: c})
        const two = eventIdentity({...base, run_id: a, content_md: b + c})
        expect(one).not.toBe(two)
      }),
    )
  })
})

describe('confidenceRank', () => {
  it('orders high > med > low', () => {
    expect(confidenceRank('high')).toBeGreaterThan(confidenceRank('med'))
    expect(confidenceRank('med')).toBeGreaterThan(confidenceRank('low'))
  })
})

describe('constants', () => {
  it('match the seed', () => {
    expect(RULESET_STAMP).toBe('JARVIS_RULESET=v1.0')
    expect(MAX_EVENTS_PER_RUN).toBe(7)
    expect(contentHash('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
  })
})

describe('compareEvents', () => {
  it('orders by created_at as instants, then by event_id', () => {
    const a = stored({event_id: 'b', created_at: '2026-02-02T10:00:00Z'})
    const b = stored({event_id: 'a', created_at: '2026-02-02T19:00:00+09:00'})
    expect(compareEvents(a, b)).toBeGreaterThan(0) // same instant: the id decides
    const c = stored({event_id: 'a', created_at: '2026-02-02T10:00:01Z'})
    expect(compareEvents(a, c)).toBeLessThan(0)
    expect(compareEvents(stored({event_id: 'z', created_at: undefined}), a)).toBeLessThan(0)
  })

  // compareEvents keeps the times it parsed (a bounded cache): its answers must stay those of parsing every time,
  // through cache hits, times that do not parse, and the cache emptied when full (more distinct times than it holds).
  it('answers as parsing both times at every comparison would', () => {
    const reference = (x: {created_at?: string; event_id: string}, y: {created_at?: string; event_id: string}) => {
      const tx = x.created_at ? Date.parse(x.created_at) : Number.NEGATIVE_INFINITY
      const ty = y.created_at ? Date.parse(y.created_at) : Number.NEGATIVE_INFINITY
      if (tx !== ty) return tx < ty ? -1 : 1
      return x.event_id < y.event_id ? -1 : x.event_id > y.event_id ? 1 : 0
    }
    const time = fc.oneof(
      fc.date({min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true}).map((date) => date.toISOString()),
      fc.constantFrom('2026-02-02T19:00:00+09:00', '2026-02-02T10:00:00Z', 'not a time', '2026-13-40T00:00:00Z', ''),
      fc.constant(undefined),
    )
    const event = fc.record({created_at: time, event_id: fc.constantFrom('a', 'b', 'c')})
    fc.assert(
      fc.property(fc.array(fc.tuple(event, event), {minLength: 1, maxLength: 300}), (pairs) => {
        for (const [x, y] of pairs) expect(Math.sign(compareEvents(x, y))).toBe(reference(x, y))
      }),
      {numRuns: 60},
    )
  })
})

describe('appendWarnings', () => {
  it('accepts an ordinary event without warnings', () => {
    expect(appendWarnings(base, [])).toEqual([])
  })

  it('warns about content longer than 1200 characters', () => {
    expect(appendWarnings({...base, content_md: 'x'.repeat(1201)}, [])).toEqual([expect.stringContaining('1201 characters')])
    expect(appendWarnings({...base, content_md: 'x'.repeat(1200)}, [])).toEqual([])
  })

  it('warns when a lower confidence replaces a higher one, by key or by supersedes', () => {
    const high = stored({event_id: 'evt_high', scope: base.scope, dedupe_key: base.dedupe_key, confidence: 'high'})
    expect(appendWarnings({...base, confidence: 'low'}, [high])).toEqual([expect.stringContaining('low-confidence event replaces evt_high')])
    expect(appendWarnings({...base, confidence: 'high'}, [{...high, confidence: 'low'}])).toEqual([])
    expect(appendWarnings({...base, confidence: 'med', supersedes: 'evt_high'}, [high])).toEqual([expect.stringContaining('replaces evt_high')])
  })

  it('does not compare with deprecated events', () => {
    const old = stored({scope: base.scope, dedupe_key: base.dedupe_key, confidence: 'high', deprecated: true})
    expect(appendWarnings({...base, confidence: 'low'}, [old])).toEqual([])
  })

  it('warns about a supersedes that is unknown or points elsewhere', () => {
    expect(appendWarnings({...base, supersedes: 'evt_missing'}, [])).toEqual(['supersedes evt_missing, which is not in the log'])
    const other = stored({event_id: 'evt_other', dedupe_key: 'other_key', confidence: 'low'})
    expect(appendWarnings({...base, supersedes: 'evt_other'}, [other])).toEqual([expect.stringContaining('not global telegram_bot_token_location')])
  })

  it('warns from the eighth event of one run', () => {
    const run = Array.from({length: MAX_EVENTS_PER_RUN}, () => stored({agent_id: base.agent_id, run_id: base.run_id}))
    expect(appendWarnings(base, run.slice(1))).toEqual([])
    expect(appendWarnings(base, run)).toEqual([expect.stringContaining('event 8 of run')])
  })
})
