/**
 * The janitor endpoints, through buildServer + inject (HTTP is not the point here; the storage is reachable, and the
 * clock is ours): POST /v1/memory/consolidate and POST /v1/memory/cleanup.
 */
import {createHash, randomBytes} from 'node:crypto'

import fc from 'fast-check'
import type {FastifyInstance} from 'fastify'
import {afterEach, describe, expect, it} from 'vitest'

import {buildSnapshot} from '../../src/events/index.js'
import {buildServer} from '../../src/server/app.js'
import {readableScopes, toWire} from '../../src/server/events-service.js'
import {openSqliteStorage, type SqliteStorage} from '../../src/server/storage/sqlite.js'
import type {ImportedEvent} from '../../src/server/storage/types.js'
import {type Agent, Cleanup, makeTokens, tempDir} from './helpers.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

const DAY = 86_400_000
const T0 = Date.parse('2026-02-02T10:00:00.000Z')
const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

interface Janitor {
  app: FastifyInstance
  storage: SqliteStorage
  clock: {now: number}
  call(agent: Agent, method: 'GET' | 'POST', url: string, body?: unknown): Promise<{status: number; body: any; text: string}>
  append(agent: Agent, body: Record<string, unknown>): Promise<string>
}

async function janitor(): Promise<Janitor> {
  const dir = cleanup.dir(await tempDir())
  const storage = openSqliteStorage(dir)
  const {byAgent, map} = makeTokens()
  const clock = {now: T0}
  const app = buildServer({storage, tokens: map, logLevel: 'silent', now: () => new Date(clock.now)})
  cleanup.add(() => app.close())
  const call: Janitor['call'] = async (agent, method, url, body) => {
    const headers: Record<string, string> = {authorization: `Bearer ${byAgent[agent]}`}
    if (body !== undefined) headers['content-type'] = 'application/json'
    const response = await app.inject({method, url, headers, payload: body === undefined ? undefined : JSON.stringify(body)})
    return {status: response.statusCode, body: response.body === '' ? undefined : JSON.parse(response.body), text: response.body}
  }
  let n = 0
  const append: Janitor['append'] = async (agent, over) => {
    n++
    const answer = await call(agent, 'POST', '/v1/memory/append', {
      run_id: `run-${n}`,
      scope: 'global',
      kind: 'fact',
      dedupe_key: `fact:item_${n}`,
      confidence: 'high',
      content_md: `Fact number ${n}.`,
      source: {system: 'cli'},
      ...over,
    })
    if (answer.status !== 200) throw new Error(`append: ${answer.status} ${answer.text}`)
    return answer.body.event_id as string
  }
  return {app, storage, clock, call, append}
}

/** An event as an older server (or a direct import) might have let in: not scanned. */
function imported(over: Partial<ImportedEvent> & {content_md: string}): ImportedEvent {
  return {
    agent_id: 'openclaw',
    run_id: `import-${randomBytes(4).toString('hex')}`,
    scope: 'global',
    kind: 'log',
    dedupe_key: 'log:imported',
    confidence: 'med',
    source: {system: 'other'},
    supersedes: null,
    ttl_days: 0,
    created_at: new Date(T0).toISOString(),
    identity: sha(randomBytes(16).toString('hex')),
    content_hash: sha(over.content_md),
    scanned: false,
    ...over,
  }
}

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  describe('POST /v1/memory/consolidate', () => {
    it('marks ttl candidates, resolves conflicts, masks secrets; a second run changes nothing', async () => {
      const j = await janitor()
      const token = `ghp_${randomBytes(27).toString('base64url').replace(/[-_]/g, 'x').slice(0, 36)}`
      const a = await j.append('claude', {dedupe_key: 'config:deploy_target', content_md: 'Deploy to the staging cluster.'})
      const b = await j.append('gemini', {dedupe_key: 'config:deploy_target', content_md: 'Deploy to the production cluster.'})
      const shortLived = await j.append('claude', {kind: 'todo', dedupe_key: 'todo:rotate_logs', ttl_days: 1})
      await j.append('claude', {kind: 'todo', dedupe_key: 'todo:later', ttl_days: 30})
      const [leaked, privateLeak] = await j.storage.importEvents([
        imported({content_md: `Use the CI token ${token} for the release job.`}),
        imported({agent_id: 'gemini', scope: 'agent:gemini', dedupe_key: 'log:private', content_md: `Mine: ${token}`}),
      ])
      j.clock.now = T0 + 2 * DAY

      const first = await j.call('claude', 'POST', '/v1/memory/consolidate', {})
      expect(first.status).toBe(200)
      expect(first.body.changed).toBe(true)
      expect(first.body.ttl_candidates).toEqual([shortLived])
      expect(first.body.conflicts).toEqual([
        expect.objectContaining({scope: 'global', dedupe_key: 'config:deploy_target', event_ids: expect.arrayContaining([a, b]), resolution_event_id: expect.any(String)}),
      ])
      expect(first.body.masked).toEqual([{event_id: leaked, findings: [expect.objectContaining({kind: 'secret', field: 'content_md', line: 1, column: 18})]}])
      expect(first.body.pinned).toBeGreaterThan(0)
      expect(first.text).not.toContain(token)

      const all = await j.call('claude', 'GET', '/v1/memory/events?limit=500&include_deprecated=true')
      expect(all.text).not.toContain(token)
      const masked = all.body.events.find((e: any) => e.event_id === leaked)
      expect(masked).toMatchObject({masked: true, content_hash: sha(masked.content_md)})
      expect(masked.content_md).toMatch(/^Use the CI token \[REDACTED:[a-z-]+\] for the release job\.$/)
      expect(all.body.events.find((e: any) => e.event_id === shortLived)).toMatchObject({ttl_candidate: true})
      const resolution = all.body.events.find((e: any) => e.event_id === first.body.conflicts[0].resolution_event_id)
      expect(resolution).toMatchObject({kind: 'conflict_resolution', agent_id: 'claude', scope: 'global'})
      expect(resolution.content_md).toContain('config:deploy_target')
      // the masked text is what search finds now
      expect((await j.call('claude', 'GET', `/v1/memory/events?q=${token}`)).body.total).toBe(0)

      // claude's janitor never touches gemini's private scope
      const geminiView = await j.call('gemini', 'GET', '/v1/memory/events?scope=agent:gemini')
      expect(geminiView.body.events[0]).toMatchObject({event_id: privateLeak, masked: false})

      const second = await j.call('claude', 'POST', '/v1/memory/consolidate', {})
      expect(second.body).toMatchObject({changed: false, masked: [], conflicts: [], ttl_candidates: []})
      expect((await j.call('claude', 'GET', '/v1/memory/events?limit=500&include_deprecated=true')).body.total).toBe(all.body.total)

      // gemini's own run masks its private event, once
      const geminiRun = await j.call('gemini', 'POST', '/v1/memory/consolidate', {})
      expect(geminiRun.body.masked.map((m: any) => m.event_id)).toEqual([privateLeak])
      expect((await j.call('gemini', 'POST', '/v1/memory/consolidate', {})).body.changed).toBe(false)
    })

    it('runs concurrent consolidations one at a time: one resolution per conflict', async () => {
      const j = await janitor()
      await j.append('claude', {dedupe_key: 'decision:db', content_md: 'Use SQLite.'})
      await j.append('openclaw', {dedupe_key: 'decision:db', content_md: 'Use PostgreSQL.'})
      const runs = await Promise.all([j.call('claude', 'POST', '/v1/memory/consolidate', {}), j.call('gemini', 'POST', '/v1/memory/consolidate', {})])
      expect(runs.map((r) => r.status)).toEqual([200, 200])
      const resolutions = await j.call('claude', 'GET', '/v1/memory/events?kind=conflict_resolution')
      expect(resolutions.body.total).toBe(1)
    })
  })

  describe('POST /v1/memory/cleanup', () => {
    it('lists expired and deprecated events on a dry run, and deletes only the approved ones that still qualify', async () => {
      const j = await janitor()
      const old = await j.append('claude', {dedupe_key: 'config:path', content_md: 'Old path.'})
      await j.append('gemini', {dedupe_key: 'config:path', content_md: 'New path.', supersedes: old})
      const expiredOlder = await j.append('claude', {dedupe_key: 'todo:cleanup', ttl_days: 5, content_md: 'Earlier todo.'})
      const expired = await j.append('claude', {dedupe_key: 'todo:cleanup', ttl_days: 5, content_md: 'Later todo.'})
      const permanent = await j.append('claude', {dedupe_key: 'fact:forever', content_md: 'Kept for good.'})
      const privateOld = await j.append('gemini', {scope: 'agent:gemini', dedupe_key: 'log:mine', content_md: 'Gemini scratch.', ttl_days: 1})
      // the earlier todo is live but expired as well; pinned is the later one
      j.clock.now = T0 + 40 * DAY
      const recent = await j.append('claude', {dedupe_key: 'config:recent', content_md: 'Recent.', ttl_days: 1})
      const recentReplacement = await j.append('claude', {dedupe_key: 'config:recent2', content_md: 'Recent 2.', supersedes: recent})
      expect(recentReplacement).toBeTruthy()

      const dry = await j.call('claude', 'POST', '/v1/memory/cleanup', {older_than_days: 30, dry_run: true})
      expect(dry.status).toBe(200)
      expect(dry.body).toMatchObject({dry_run: true, deleted: [], total: 3})
      expect(dry.body.candidates.map((c: any) => [c.event_id, c.reason])).toEqual([
        [old, 'deprecated'],
        [expiredOlder, 'expired'],
        [expired, 'expired'],
      ])
      // gemini sees its own private candidate; claude never does, even with agent:*
      expect((await j.call('claude', 'POST', '/v1/memory/cleanup', {older_than_days: 30, dry_run: true, scope: 'agent:*'})).body.total).toBe(0)
      const geminiPrivate = await j.call('gemini', 'POST', '/v1/memory/cleanup', {older_than_days: 30, dry_run: true, scope: 'agent:*'})
      expect(geminiPrivate.body.candidates.map((c: any) => c.event_id)).toEqual([privateOld])
      expect((await j.call('claude', 'POST', '/v1/memory/cleanup', {older_than_days: 30, dry_run: true, scope: 'agent:gemini'})).status).toBe(403)

      // approve the deprecated one, the later todo, a permanent event and an unknown id: only candidates go
      const real = await j.call('claude', 'POST', '/v1/memory/cleanup', {
        older_than_days: 30,
        dry_run: false,
        event_ids: [old, expired, permanent, privateOld, 'evt_nope'],
      })
      expect(real.status).toBe(200)
      expect(real.body.deleted).toEqual([old, expired])
      expect(real.body.skipped).toEqual([permanent, privateOld, 'evt_nope'])
      const left = await j.call('claude', 'GET', '/v1/memory/events?limit=500&include_deprecated=true')
      const ids = left.body.events.map((e: any) => e.event_id)
      expect(ids).not.toContain(old)
      expect(ids).not.toContain(expired)
      expect(ids).toEqual(expect.arrayContaining([expiredOlder, permanent]))
      expect((await j.call('gemini', 'GET', '/v1/memory/events?scope=agent:gemini')).body.total).toBe(1)

      // the deleted todo was pinned: its key falls back to the newest live event left
      const rows = await j.storage.snapshotEvents(['global'], 50, 200)
      expect(rows.pinned.find((e) => e.dedupe_key === 'todo:cleanup')?.event_id).toBe(expiredOlder)

      const after = await j.call('claude', 'POST', '/v1/memory/cleanup', {older_than_days: 30, dry_run: true})
      expect(after.body.candidates.map((c: any) => c.event_id)).toEqual([expiredOlder])
    })

    it('remembers what it deleted: a late retry of a deleted event is a duplicate, not stored again', async () => {
      const j = await janitor()
      const body = {run_id: 'run-late', scope: 'global', kind: 'todo', dedupe_key: 'todo:late', confidence: 'high', content_md: 'A todo that expires.', source: {system: 'cli'}, ttl_days: 1}
      const first = await j.call('claude', 'POST', '/v1/memory/append', body)
      expect(first.body.status).toBe('created')
      j.clock.now = T0 + 40 * DAY
      const removed = await j.call('claude', 'POST', '/v1/memory/cleanup', {older_than_days: 30, dry_run: false, event_ids: [first.body.event_id]})
      expect(removed.body.deleted).toEqual([first.body.event_id])
      // The agent's retry of that append arrives late (an outbox, a slow network): answered, never stored again.
      const retry = await j.call('claude', 'POST', '/v1/memory/append', body)
      expect(retry.status).toBe(200)
      expect(retry.body).toMatchObject({event_id: first.body.event_id, status: 'duplicate', warnings: [expect.stringContaining('deleted by a cleanup')]})
      const left = await j.call('claude', 'GET', '/v1/memory/events?limit=500&include_deprecated=true')
      expect(left.body.events.map((e: any) => e.event_id)).not.toContain(first.body.event_id)
      expect(left.body.total).toBe(0)
    })

    it('refuses bad cleanup requests naming the field', async () => {
      const j = await janitor()
      const cases: [unknown, string][] = [
        [{older_than_days: 30}, 'body/dry_run'],
        [{older_than_days: -1, dry_run: true}, 'body/older_than_days'],
        [{older_than_days: 1.5, dry_run: true}, 'body/older_than_days'],
        [{dry_run: true}, 'body/older_than_days'],
        [{older_than_days: 30, dry_run: false}, 'body/event_ids'],
        [{older_than_days: 30, dry_run: false, event_ids: [1]}, 'body/event_ids'],
        [{older_than_days: 30, dry_run: true, scope: 'team:x'}, 'body/scope'],
        [{older_than_days: 30, dry_run: true, limit: 0}, 'body/limit'],
      ]
      for (const [body, field] of cases) {
        const answer = await j.call('claude', 'POST', '/v1/memory/cleanup', body)
        expect(answer.status, JSON.stringify(body)).toBe(400)
        expect(answer.body.field, JSON.stringify(body)).toBe(field)
      }
    })
  })

  describe('the snapshot the server builds from pins', () => {
    async function expectSameAsPure(j: Janitor, limitRecent: number): Promise<string> {
      const scopes = ['global', 'project:a', 'agent:claude']
      const served = await j.call('claude', 'GET', `/v1/memory/snapshot?scopes=${scopes.join(',')}&limit_recent=${limitRecent}`)
      const all = await j.storage.queryEvents({visible: readableScopes('claude'), includeDeprecated: true, limit: 10_000})
      expect(served.body).toEqual(JSON.parse(JSON.stringify(buildSnapshot(all.events.map(toWire), {limitRecent, scopes}))))
      return served.body.pinned_md as string
    }

    it('shows a conflict_resolution while the conflict is open, and drops it once the agents agree', async () => {
      const j = await janitor()
      await j.append('claude', {dedupe_key: 'k:a', content_md: 'one'})
      for (let i = 0; i < 3; i++) await j.append('openclaw', {dedupe_key: `k:other_${i}`})
      j.clock.now += 1000
      await j.append('gemini', {dedupe_key: 'k:a', content_md: 'two'})
      expect((await j.call('claude', 'POST', '/v1/memory/consolidate', {})).body.conflicts).toHaveLength(1)
      // claude's contending event is neither pinned nor recent: the server must still find it
      expect(await expectSameAsPure(j, 1)).toContain('[conflict_resolution]')
      j.clock.now += 1000
      await j.append('claude', {dedupe_key: 'k:a', content_md: 'two'})
      expect(await expectSameAsPure(j, 1)).not.toContain('[conflict_resolution]')
    })

    it('still shows limit_recent events when a conflict_resolution among the newest is settled by a newer value', async () => {
      const j = await janitor()
      await j.append('claude', {scope: 'project:a', dedupe_key: 'k:b', content_md: 'one'})
      j.clock.now += 1000
      await j.append('chatgpt', {scope: 'project:a', dedupe_key: 'k:b', content_md: 'two'})
      j.clock.now += 1000
      expect((await j.call('chatgpt', 'POST', '/v1/memory/consolidate', {})).body.conflicts).toHaveLength(1)
      j.clock.now += 1000
      await j.append('chatgpt', {dedupe_key: 'k:a', content_md: 'one'})
      j.clock.now += 1000
      // claude says its value again: the flagged pair is no longer the newest of each agent, so that flag is settled
      await j.append('claude', {scope: 'project:a', dedupe_key: 'k:b', content_md: 'one'})
      await expectSameAsPure(j, 4)
      const served = await j.call('claude', 'GET', '/v1/memory/snapshot?scopes=global,project:a&limit_recent=4')
      expect(served.body.recent_events.map((e: any) => e.kind)).toEqual(['fact', 'fact', 'fact', 'fact'])
    })

    it('equals the pure buildSnapshot over the whole log, whatever happened (supersedes, conflicts, consolidations)', async () => {
      const agents = ['chatgpt', 'claude', 'gemini'] as const
      const step = fc.oneof(
        {weight: 6, arbitrary: fc.record({type: fc.constant('append' as const), agent: fc.constantFrom(...agents), scope: fc.constantFrom('global', 'project:a', 'agent:claude'), key: fc.constantFrom('k:a', 'k:b'), text: fc.constantFrom('one', 'two', 'three'), supersedes: fc.option(fc.nat(40), {nil: null})})},
        {weight: 1, arbitrary: fc.record({type: fc.constant('consolidate' as const), agent: fc.constantFrom(...agents)})},
      )
      await fc.assert(
        fc.asyncProperty(fc.array(step, {minLength: 1, maxLength: 16}), fc.integer({min: 1, max: 4}), async (steps, limitRecent) => {
          const j = await janitor()
          try {
            const ids: string[] = []
            for (const [n, s] of steps.entries()) {
              j.clock.now += 1000
              if (s.type === 'consolidate') {
                expect((await j.call(s.agent, 'POST', '/v1/memory/consolidate', {})).status).toBe(200)
                continue
              }
              const agent = s.scope === 'agent:claude' ? 'claude' : s.agent
              const supersedes = s.supersedes === null || ids.length === 0 ? null : ids[s.supersedes % ids.length]
              const answer = await j.call(agent, 'POST', '/v1/memory/append', {
                run_id: `run-${n}`, scope: s.scope, kind: 'fact', dedupe_key: s.key, confidence: 'high', content_md: s.text, source: {system: 'cli'}, supersedes,
              })
              if (answer.status === 200) ids.push(answer.body.event_id)
              else expect(answer.body.field).toBe('body/supersedes') // a target claude's private scope hides from others
            }
            await expectSameAsPure(j, limitRecent)
          } finally {
            await cleanup.run()
          }
        }),
        {numRuns: 40},
      )
    })
  })
})
