import fc from 'fast-check'

import type {StoredMemoryEvent} from '../../src/schemas/index.js'

let counter = 0

/** A stored event with sensible defaults; override what the test is about. */
export function stored(overrides: Partial<StoredMemoryEvent> = {}): StoredMemoryEvent {
  counter++
  return {
    agent_id: 'claude',
    run_id: `run_${counter}`,
    scope: 'global',
    kind: 'fact',
    dedupe_key: `key_${counter}`,
    confidence: 'high',
    content_md: `content ${counter}`,
    source: {system: 'cli'},
    supersedes: null,
    ttl_days: 0,
    event_id: `evt_${String(counter).padStart(6, '0')}`,
    created_at: new Date(Date.UTC(2026, 1, 2) + counter * 60_000).toISOString(),
    deprecated: false,
    ...overrides,
  }
}

const agents = ['chatgpt', 'claude', 'gemini', 'openclaw'] as const
const scopes = ['global', 'project:jarvis', 'project:memory-gateway', 'agent:claude', 'agent:gemini'] as const

/**
 * A random log: distinct ids, a few scopes and keys so that keys collide, a few contents so that agents both agree
 * and disagree, some supersedes pointers to earlier events, some TTLs, some timestamps equal.
 */
export const logArb = fc
  .array(
    fc.record({
      agent: fc.constantFrom(...agents),
      scope: fc.constantFrom(...scopes),
      key: fc.constantFrom('a', 'b', 'c', 'config:x'),
      content: fc.constantFrom('one', 'two', 'three', 'one\n'),
      minute: fc.integer({min: 0, max: 30}),
      supersedes: fc.option(fc.nat(40), {nil: undefined}),
      ttl: fc.constantFrom(0, 0, 1, 30),
      confidence: fc.constantFrom('high', 'med', 'low') as fc.Arbitrary<'high' | 'med' | 'low'>,
    }),
    {maxLength: 40},
  )
  .map((rows) =>
    rows.map((row, i): StoredMemoryEvent => ({
      agent_id: row.agent,
      run_id: `run_${i}`,
      scope: row.scope,
      kind: 'fact',
      dedupe_key: row.key,
      confidence: row.confidence,
      content_md: row.content,
      source: {system: 'cli'},
      supersedes: row.supersedes !== undefined && row.supersedes < i ? `e${String(row.supersedes).padStart(3, '0')}` : null,
      ttl_days: row.ttl,
      event_id: `e${String(i).padStart(3, '0')}`,
      created_at: new Date(Date.UTC(2026, 1, 2, 10, row.minute)).toISOString(),
      deprecated: false,
    })),
  )
  .map((events) => {
    // the server flags an event deprecated when a later one supersedes it
    const superseded = new Set(events.flatMap((e) => (e.supersedes ? [e.supersedes] : [])))
    return events.map((e) => (superseded.has(e.event_id) ? {...e, deprecated: true} : e))
  })
