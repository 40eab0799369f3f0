import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {buildSnapshot, PINNED_MD_MAX, pinnedEvents, RULESET_STAMP, renderPinned} from '../../src/events/index.js'
import {snapshotResponseSchema} from '../../src/schemas/index.js'
import {logArb, stored} from './helpers.js'

const all = {limitRecent: 50, scopes: [] as string[]}

describe('pinnedEvents', () => {
  it('keeps the newest event per scope and key', () => {
    const old = stored({dedupe_key: 'k', content_md: 'old', created_at: '2026-02-02T10:00:00Z'})
    const mid = stored({dedupe_key: 'k', content_md: 'mid', created_at: '2026-02-02T11:00:00Z'})
    const other = stored({dedupe_key: 'k', scope: 'project:jarvis', content_md: 'other scope', created_at: '2026-02-02T09:00:00Z'})
    expect(pinnedEvents([mid, other, old]).map((e) => e.content_md)).toEqual(['mid', 'other scope'])
  })

  it('breaks a created_at tie by event_id, whatever the input order', () => {
    const a = stored({event_id: 'evt_a', dedupe_key: 'k', created_at: '2026-02-02T10:00:00Z'})
    const b = stored({event_id: 'evt_b', dedupe_key: 'k', created_at: '2026-02-02T19:00:00+09:00'})
    expect(pinnedEvents([a, b])).toEqual([b])
    expect(pinnedEvents([b, a])).toEqual([b])
  })

  it('hides deprecated events, flagged or superseded', () => {
    const old = stored({dedupe_key: 'k', content_md: 'old'})
    const flagged = stored({dedupe_key: 'k', content_md: 'newer but flagged', deprecated: true})
    expect(pinnedEvents([old, flagged])).toEqual([old])
    const replacing = stored({dedupe_key: 'k2', supersedes: old.event_id})
    // a supersedes pointer deprecates its target even without the flag (a seed-style gateway)
    expect(pinnedEvents([old, replacing])).toEqual([replacing])
  })

  it('drops a key whose only event is deprecated', () => {
    expect(pinnedEvents([stored({deprecated: true})])).toEqual([])
  })

  it('orders global, then projects, then agent scopes, each by key', () => {
    const events = [
      stored({scope: 'agent:claude', dedupe_key: 'a'}),
      stored({scope: 'project:b', dedupe_key: 'z'}),
      stored({scope: 'global', dedupe_key: 'y'}),
      stored({scope: 'project:a', dedupe_key: 'x'}),
      stored({scope: 'global', dedupe_key: 'b'}),
    ]
    expect(pinnedEvents(events).map((e) => `${e.scope} ${e.dedupe_key}`)).toEqual(['global b', 'global y', 'project:a x', 'project:b z', 'agent:claude a'])
  })
})

describe('buildSnapshot', () => {
  it('renders pinned memory grouped by scope, one short bullet per pinned event, every line of its text on it', () => {
    const events = [
      stored({agent_id: 'claude', kind: 'config', dedupe_key: 'telegram_bot_token_location', content_md: 'TELEGRAM_BOT_TOKEN は ~/claude-telegram-bot/.env に保存\n\n理由: 環境変数で管理。', created_at: '2026-02-02T01:00:00Z'}),
      stored({agent_id: 'chatgpt', scope: 'project:memory-gateway', kind: 'bug', dedupe_key: 'gateway_auth_401_issue', content_md: '# Gateway API Key が無効（401）', confidence: 'med', created_at: '2026-02-03T01:00:00Z'}),
    ]
    const snapshot = buildSnapshot(events, all)
    expect(snapshot.pinned_md).toBe(
      [
        '# Pinned memory',
        '',
        '## global',
        '- [config] telegram_bot_token_location: TELEGRAM_BOT_TOKEN は ~/claude-telegram-bot/.env に保存 理由: 環境変数で管理。 (claude, 2026-02-02)',
        '',
        '## project:memory-gateway',
        '- [bug] gateway_auth_401_issue: Gateway API Key が無効（401） (chatgpt, 2026-02-03, med confidence)',
        '',
      ].join('\n'),
    )
    expect(snapshot.ruleset_stamp).toBe(RULESET_STAMP)
    expect(snapshot.snapshot_id).toMatch(/^[0-9a-f]{64}$/)
    expect(snapshotResponseSchema.parse(snapshot)).toEqual(snapshot)
  })

  it('says so when nothing is pinned', () => {
    expect(buildSnapshot([], all).pinned_md).toBe('# Pinned memory\n\n_Nothing pinned yet._\n')
  })

  it('lists recent events newest first, limited, superseded ones hidden', () => {
    const a = stored({created_at: '2026-02-02T10:00:00Z'})
    const b = stored({created_at: '2026-02-02T11:00:00Z', supersedes: a.event_id})
    const c = stored({created_at: '2026-02-02T12:00:00Z'})
    const snapshot = buildSnapshot([a, c, b], {limitRecent: 50, scopes: []})
    expect(snapshot.recent_events.map((e) => [e.event_id, e.deprecated])).toEqual([
      [c.event_id, false],
      [b.event_id, false],
    ])
    expect(buildSnapshot([a, c, b], {limitRecent: 2, scopes: []}).recent_events.map((e) => e.event_id)).toEqual([c.event_id, b.event_id])
    expect(buildSnapshot([a, c, b], {limitRecent: 0, scopes: []}).recent_events).toEqual([])
    expect(a.deprecated).toBe(false) // the input is not changed
  })

  it('shows only the chosen scopes, with * patterns', () => {
    const events = [stored({scope: 'global'}), stored({scope: 'project:jarvis'}), stored({scope: 'project:other'}), stored({scope: 'agent:claude'})]
    const scopesOf = (scopes: string[]) => buildSnapshot(events, {limitRecent: 50, scopes}).recent_events.map((e) => e.scope).sort()
    expect(scopesOf(['global', 'project:jarvis'])).toEqual(['global', 'project:jarvis'])
    expect(scopesOf(['project:*'])).toEqual(['project:jarvis', 'project:other'])
    expect(buildSnapshot(events, {limitRecent: 50, scopes: ['global']}).pinned_md).not.toContain('project:')
  })

  it('gives the same snapshot_id for the same state and a new one for any change shown', () => {
    const events = [stored({content_md: 'x'}), stored({content_md: 'y'})]
    const id = buildSnapshot(events, all).snapshot_id
    expect(buildSnapshot([...events].reverse(), all).snapshot_id).toBe(id)
    expect(buildSnapshot([{...events[0], content_md: 'x2'}, events[1]], all).snapshot_id).not.toBe(id)
    expect(buildSnapshot([events[0], {...events[1], deprecated: true}], all).snapshot_id).not.toBe(id)
    expect(buildSnapshot([...events, stored()], all).snapshot_id).not.toBe(id)
    expect(buildSnapshot(events, {limitRecent: 1, scopes: []}).snapshot_id).not.toBe(id)
  })

  it('is independent of the order of the events (fast-check: shuffle → same snapshot)', () => {
    fc.assert(
      fc.property(
        logArb.chain((events) => fc.tuple(fc.constant(events), fc.shuffledSubarray(events, {minLength: events.length, maxLength: events.length}))),
        fc.integer({min: 0, max: 60}),
        ([events, shuffled], limitRecent) => {
          const a = buildSnapshot(events, {limitRecent, scopes: ['global', 'project:*']})
          const b = buildSnapshot(shuffled, {limitRecent, scopes: ['global', 'project:*']})
          expect(b.snapshot_id).toBe(a.snapshot_id)
          expect(b).toEqual(a)
        },
      ),
      {numRuns: 300},
    )
  })

  it('pins exactly one live event per key and no deprecated one (fast-check)', () => {
    fc.assert(
      fc.property(logArb, (events) => {
        const pinned = pinnedEvents(events)
        const keys = pinned.map((e) => `${e.scope}\u0000${e.dedupe_key}`)
        expect(new Set(keys).size).toBe(keys.length)
        const superseded = new Set(events.flatMap((e) => (e.supersedes ? [e.supersedes] : [])))
        for (const p of pinned) {
          expect(p.deprecated || superseded.has(p.event_id)).toBe(false)
          const rivals = events.filter((e) => e.scope === p.scope && e.dedupe_key === p.dedupe_key && !e.deprecated && !superseded.has(e.event_id))
          for (const r of rivals) expect(r.created_at! < p.created_at! || (r.created_at === p.created_at && r.event_id <= p.event_id)).toBe(true)
        }
        const liveKeys = new Set(events.filter((e) => !e.deprecated && !superseded.has(e.event_id)).map((e) => `${e.scope}\u0000${e.dedupe_key}`))
        expect(new Set(keys)).toEqual(liveKeys)
      }),
      {numRuns: 300},
    )
  })

  it('keeps pinned_md within its bound and says how many were left out', () => {
    const many = Array.from({length: 300}, (_, i) => stored({dedupe_key: `key_${String(i).padStart(3, '0')}`, content_md: `${'long line '.repeat(30)}${i}`}))
    const md = buildSnapshot(many, all).pinned_md
    expect(md.length).toBeLessThanOrEqual(PINNED_MD_MAX)
    const shown = md.split('\n').filter((l) => l.startsWith('- [')).length
    expect(shown).toBeGreaterThan(5)
    expect(md).toMatch(new RegExp(`… ${300 - shown} more pinned events not shown`))
    for (const line of md.split('\n').filter((l) => l.startsWith('- ['))) expect(line.length).toBeLessThan(260)
  })

  it('keeps any pinned_md within any bound that fits a title and the last line (fast-check)', () => {
    fc.assert(
      fc.property(fc.integer({min: 1, max: 80}), fc.integer({min: 120, max: 3000}), (n, max) => {
        const events = Array.from({length: n}, (_, i) => stored({scope: i % 3 === 0 ? 'global' : `project:p${i % 5}`, dedupe_key: `k${i}`, content_md: 'x'.repeat(i * 7)}))
        const md = renderPinned(pinnedEvents(events), max)
        expect(md.length).toBeLessThanOrEqual(max)
        const shown = md.split('\n').filter((l) => l.startsWith('- [')).length
        if (shown < n) expect(md).toContain(`… ${n - shown} more pinned event`)
      }),
    )
  })
})
