/**
 * The shared event log on a real `jarvis serve` (127.0.0.1, port 0): append, snapshot, list and search, as
 * seed 001 §10's checklist asks — several agents on one dedupe_key, supersedes, secrets refused, private scopes,
 * idempotent retries, snapshot ids, bad input.
 */
import {randomBytes} from 'node:crypto'

import {request} from 'undici'
import {afterEach, describe, expect, it} from 'vitest'

import {EVENT_ID_PATTERN} from '../../src/server/storage/event-id.js'
import {type Agent, call, Cleanup, harness, type Harness, makeTokens} from './helpers.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

interface Reply {
  status: number
  body: any
  text: string
}

/** A JSON request as `agent`, with extra headers. */
async function send(h: Harness, agent: Agent, method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const all: Record<string, string> = {authorization: `Bearer ${h.tokens[agent]}`, ...headers}
  if (body !== undefined) all['content-type'] = 'application/json'
  const response = await request(`${h.server.url}${path}`, {method, headers: all, body: body === undefined ? undefined : JSON.stringify(body)})
  const text = await response.body.text()
  return {status: response.statusCode, body: text === '' ? undefined : JSON.parse(text), text}
}

let counter = 0
/** A valid memory event without agent_id (the server takes it from the token). */
function event(over: Record<string, unknown> = {}): Record<string, unknown> {
  counter++
  return {
    run_id: `run-${counter}`,
    scope: 'global',
    kind: 'decision',
    dedupe_key: `decision:item_${counter}`,
    confidence: 'high',
    content_md: `Settled item number ${counter}.`,
    source: {system: 'cli'},
    ttl_days: 0,
    ...over,
  }
}

const append = (h: Harness, agent: Agent, body: unknown, headers?: Record<string, string>) => send(h, agent, 'POST', '/v1/memory/append', body, headers)
const snapshot = (h: Harness, agent: Agent, query = '') => send(h, agent, 'GET', `/v1/memory/snapshot${query}`)
const list = (h: Harness, agent: Agent, query = '') => send(h, agent, 'GET', `/v1/memory/events${query}`)

/** Random letters and digits, so that no secret-looking text lives in the repository. */
function randomAlnum(length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  return [...randomBytes(length)].map((byte) => alphabet[byte % alphabet.length]).join('')
}

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  describe('POST /v1/memory/append and GET /v1/memory/snapshot', () => {
    it('refuses a NUL character or a lone surrogate in an event\'s text with 400 naming the field, and stores nothing', async () => {
      const h = await harness(cleanup)
      for (const field of ['content_md', 'run_id']) {
        const refused = await append(h, 'claude', event({[field]: 'a\u0000b'}))
        expect(refused.status, field).toBe(400)
        expect(refused.text, field).toContain(field)
        expect(refused.text, field).toContain('NUL character')
      }
      // Half a surrogate pair: stored, it came back as three replacement characters, under the hash of one.
      for (const field of ['content_md', 'run_id']) {
        const refused = await append(h, 'claude', event({[field]: 'bad \ud800 x'}))
        expect(refused.status, field).toBe(400)
        expect(refused.text, field).toContain(field)
        expect(refused.text, field).toContain('lone surrogate')
      }
      expect((await list(h, 'claude')).body.events).toEqual([])
    })

    it('stores an event, takes the agent from the token, and shows it pinned and recent', async () => {
      const h = await harness(cleanup)
      const body = event({dedupe_key: 'config:telegram_bot_token_location', content_md: 'The bot settings live in ~/bot/.env (since 2026-02-02).'})
      const created = await append(h, 'claude', body)
      expect(created.status).toBe(200)
      expect(created.body).toEqual({event_id: expect.stringMatching(EVENT_ID_PATTERN), status: 'created', warnings: []})
      // agent_id may be sent when it is the token's own
      const own = await append(h, 'gemini', event({agent_id: 'gemini'}))
      expect(own.body.status).toBe('created')

      const snap = await snapshot(h, 'claude', '?agent_id=claude&scopes=global&limit_recent=10')
      expect(snap.status).toBe(200)
      expect(snap.body.ruleset_stamp).toBe('JARVIS_RULESET=v1.0')
      expect(typeof snap.body.snapshot_id).toBe('string')
      expect(snap.body.pinned_md).toContain('~/bot/.env')
      expect(snap.body.recent_events.map((e: any) => e.event_id)).toEqual([own.body.event_id, created.body.event_id])
      const stored = snap.body.recent_events[1]
      expect(stored).toMatchObject({
        ...body,
        agent_id: 'claude',
        event_id: created.body.event_id,
        deprecated: false,
        content_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      })
      expect(Date.parse(stored.created_at)).not.toBeNaN()
    })

    it('a key of an agent that keeps no private scope (a CI job) reads the global snapshot by default', async () => {
      const {byAgent, map} = makeTokens()
      const bot = `t-ci-bot-${Math.random().toString(36).slice(2)}`
      const h = await harness(cleanup, {tokensByAgent: byAgent, tokens: {...map, [bot]: 'ci-bot'}})
      const created = await append(h, 'claude', event({content_md: 'Deploys go out on Tuesdays.'}))
      const snap = await call(h.server.url, bot, 'GET', '/v1/memory/snapshot')
      expect(snap.status, snap.text).toBe(200)
      expect(snap.body.recent_events.map((e: any) => e.event_id)).toEqual([created.body.event_id])
      // Its writes to the log are still refused, saying why.
      const appended = await call(h.server.url, bot, 'POST', '/v1/memory/append', event({}))
      expect([appended.status, appended.body.message]).toEqual([403, 'the token\'s agent ci-bot is not one of the agents of the shared event log'])
    })

    it('several agents on one dedupe_key: the newest wins, history is kept, a lower confidence is warned about', async () => {
      const h = await harness(cleanup)
      const key = 'decision:memory_ssot'
      const writers: [Agent, string, string][] = [
        ['chatgpt', 'high', 'The SSOT is the gateway (chatgpt).'],
        ['claude', 'high', 'The SSOT is the gateway D1 (claude).'],
        ['gemini', 'med', 'The SSOT might be Obsidian (gemini).'],
        ['openclaw', 'low', 'The SSOT is probably a spreadsheet (openclaw).'],
      ]
      const answers = []
      for (const [agent, confidence, content_md] of writers) {
        answers.push(await append(h, agent, event({dedupe_key: key, confidence, content_md})))
      }
      expect(answers.map((a) => a.body.status)).toEqual(['created', 'created', 'created', 'created'])
      expect(answers[0].body.warnings).toEqual([])
      expect(answers[1].body.warnings).toEqual([]) // high replacing high
      expect(answers[2].body.warnings).toEqual([expect.stringContaining(answers[1].body.event_id)]) // med replacing high
      expect(answers[2].body.warnings[0]).toMatch(/med-confidence.*high confidence/)
      expect(answers[3].body.warnings).toEqual([expect.stringMatching(new RegExp(`low-confidence event replaces ${answers[2].body.event_id} \\(med confidence\\)`))])
      const ids = answers.map((a) => a.body.event_id)
      expect([...ids].sort()).toEqual(ids) // sortable ids: newer sorts later

      for (const agent of ['chatgpt', 'claude', 'gemini', 'openclaw'] as const) {
        const snap = await snapshot(h, agent, '?scopes=global')
        expect(snap.body.pinned_md).toContain('spreadsheet (openclaw)')
        for (const [, , older] of writers.slice(0, 3)) expect(snap.body.pinned_md).not.toContain(older)
      }
      const history = await list(h, 'gemini', `?dedupe_key=${key}`)
      expect(history.body.total).toBe(4)
      expect(history.body.events.map((e: any) => e.event_id)).toEqual([...ids].reverse())
    })

    it('supersedes deprecates the target, hides it from snapshots, and must name a visible event', async () => {
      const h = await harness(cleanup)
      const old = await append(h, 'claude', event({dedupe_key: 'config:env_file', content_md: 'Settings are in .env.local (old rule).'}))
      const replacement = await append(
        h,
        'gemini',
        event({dedupe_key: 'config:settings_location', content_md: 'Settings are in .env (new rule).', supersedes: old.body.event_id}),
      )
      // superseding an event of another key is allowed, and said
      expect(replacement.body).toMatchObject({status: 'created', warnings: [expect.stringMatching(/config:env_file, not global config:settings_location/)]})
      const snap = await snapshot(h, 'claude', '?scopes=global')
      expect(snap.body.pinned_md).toContain('.env (new rule)')
      expect(snap.body.pinned_md).not.toContain('old rule')
      expect(snap.body.recent_events.map((e: any) => e.event_id)).toEqual([replacement.body.event_id])

      const live = await list(h, 'claude')
      expect(live.body.events.map((e: any) => e.event_id)).toEqual([replacement.body.event_id])
      const all = await list(h, 'claude', '?include_deprecated=true')
      expect(all.body.events.find((e: any) => e.event_id === old.body.event_id)).toMatchObject({deprecated: true})

      // a newer event on the old key does not bring it back, and superseding it again is only a warning
      const again = await append(h, 'openclaw', event({dedupe_key: 'config:env_file', supersedes: old.body.event_id}))
      expect(again.body.warnings).toEqual([expect.stringContaining('already superseded')])
      expect((await snapshot(h, 'claude', '?scopes=global')).body.pinned_md).not.toContain('old rule')

      const unknown = await append(h, 'claude', event({supersedes: 'evt_01J00000000000000000000000'}))
      expect(unknown.status).toBe(400)
      expect(unknown.body).toMatchObject({error: 'bad_request', field: 'body/supersedes'})

      // another agent's private event is not visible: same answer as an unknown id, and it stays live
      const secret = await append(h, 'claude', event({scope: 'agent:claude', content_md: 'Private note of claude.'}))
      const sneaky = await append(h, 'gemini', event({supersedes: secret.body.event_id}))
      expect(sneaky.status).toBe(400)
      expect(sneaky.body.field).toBe('body/supersedes')
      expect((await list(h, 'claude', '?scope=agent:claude')).body.events[0]).toMatchObject({event_id: secret.body.event_id, deprecated: false})
    })

    it('refuses secrets and personal data with 422 naming kind, field, line and column, never the secret', async () => {
      const h = await harness(cleanup)
      const token = `ghp_${randomAlnum(36)}`
      const email = `${randomAlnum(8).toLowerCase()}@${randomAlnum(6).toLowerCase()}-mail.de`
      const cases: {body: Record<string, unknown>; secret: string; finding: Record<string, unknown>}[] = [
        {body: event({content_md: `Deploy with\nexport GH=${token} please`}), secret: token, finding: {kind: 'secret', field: 'content_md', line: 2, column: 11}},
        {body: event({content_md: `Ask ${email} about it.`}), secret: email, finding: {kind: 'email', field: 'content_md', line: 1, column: 5}},
        {body: event({content_md: 'Call the owner on +81 90-1234-5678 tomorrow.'}), secret: '90-1234-5678', finding: {kind: 'phone', field: 'content_md'}},
        {body: event({source: {system: 'telegram', thread_id: `thread for ${email}`}}), secret: email, finding: {kind: 'email', field: 'source.thread_id'}},
        {body: event({source: {system: 'other', note: `token ${token}`}}), secret: token, finding: {kind: 'secret', field: 'source.note'}},
      ]
      for (const {body, secret, finding} of cases) {
        const refused = await append(h, 'claude', body)
        expect(refused.status, JSON.stringify(finding)).toBe(422)
        expect(refused.body).toMatchObject({error: 'sensitive', findings: [expect.objectContaining(finding)]})
        expect(refused.body.message).toMatch(new RegExp(`${String(finding.field).replace('.', '\\.')} at line \\d+, column \\d+`))
        expect(refused.text).not.toContain(secret)
      }
      expect((await list(h, 'claude', '?include_deprecated=true')).body.total).toBe(0)
    })

    it('keeps private scopes private, whatever the body claims', async () => {
      const h = await harness(cleanup)
      const mine = await append(h, 'claude', event({scope: 'agent:claude', content_md: 'Only claude reads this.'}))
      expect(mine.body.status).toBe('created')
      await append(h, 'claude', event({scope: 'project:atlas', content_md: 'Everyone reads this.'}))

      const write = await append(h, 'gemini', event({scope: 'agent:claude'}))
      expect(write.status).toBe(403)
      expect(write.body).toMatchObject({error: 'forbidden', field: 'body/scope'})
      const pretend = await append(h, 'gemini', event({scope: 'agent:claude', agent_id: 'claude'}))
      expect(pretend.status).toBe(403)
      expect(pretend.body).toMatchObject({error: 'forbidden', field: 'body/agent_id'})
      const unknownAgent = await append(h, 'gemini', event({agent_id: 'mallory'}))
      expect(unknownAgent.status).toBe(403)

      const read = await snapshot(h, 'gemini', '?scopes=global,agent:claude')
      expect(read.status).toBe(403)
      expect(read.body).toMatchObject({error: 'forbidden', field: 'querystring/scopes'})
      expect((await snapshot(h, 'gemini', '?agent_id=claude')).status).toBe(403)
      expect((await list(h, 'gemini', '?scope=agent:claude')).status).toBe(403)

      // A kind with deprecated events too: SQLite's planner failed on it ("internal query planner error", a 500).
      for (const query of ['', '?scope=agent:*', '?scope=*', '?q=claude', '?include_deprecated=true', '?kind=conflict_resolution&include_deprecated=true', '?kind=fact&include_deprecated=true']) {
        const visible = await list(h, 'gemini', query)
        expect(visible.status, query).toBe(200)
        expect(visible.body.events.map((e: any) => e.scope), query).not.toContain('agent:claude')
      }
      expect((await list(h, 'gemini', '?scope=project:*')).body.total).toBe(1)
      const own = await list(h, 'claude', '?scope=agent:*')
      expect(own.body.events.map((e: any) => e.event_id)).toEqual([mine.body.event_id])
      // the default snapshot scopes are global and the caller's own
      const claudeSnap = await snapshot(h, 'claude')
      expect(claudeSnap.body.pinned_md).toContain('Only claude reads this.')
      expect(claudeSnap.body.pinned_md).not.toContain('Everyone reads this.')
      expect((await snapshot(h, 'gemini')).body.pinned_md).not.toContain('Only claude reads this.')
    })

    it('answers a retried append with the same event_id and status duplicate, storing it once', async () => {
      const h = await harness(cleanup)
      const body = event()
      const key = {'idempotency-key': `outbox-${randomAlnum(12)}`}
      const first = await append(h, 'claude', body, key)
      const retry = await append(h, 'claude', body, key)
      expect(first.body.status).toBe('created')
      expect(retry.body).toEqual({event_id: first.body.event_id, status: 'duplicate', warnings: []})
      // without the header, the event's identity (agent, run, scope, kind, key, content) makes it the same event
      const again = await append(h, 'claude', body)
      expect(again.body).toMatchObject({event_id: first.body.event_id, status: 'duplicate'})
      // what else it sends is not applied to the event stored before, and the answer says so
      const other = body.confidence === 'low' ? 'high' : 'low'
      const changed = await append(h, 'claude', {...body, confidence: other, ttl_days: 3})
      expect(changed.body).toMatchObject({event_id: first.body.event_id, status: 'duplicate'})
      expect(changed.body.warnings).toEqual([
        `${first.body.event_id} is this same event, stored before (the same agent, run, scope, kind, key and text), and keeps confidence ${body.confidence} (this append said ${other}), ttl_days ${body.ttl_days ?? 0} (this append said 3): a change needs a new event (new text, or a new run)`,
      ])
      // the same content from another run, or from another agent, is another event
      expect((await append(h, 'claude', {...body, run_id: 'run-other'})).body.status).toBe('created')
      expect((await append(h, 'gemini', body, key)).body.status).toBe('created')
      // a key reused for a different event is refused rather than silently answered
      const reused = await append(h, 'claude', event(), key)
      expect(reused.status).toBe(422)
      expect(reused.body).toMatchObject({error: 'idempotency_key_reused', field: 'header/idempotency-key', event_id: first.body.event_id})
      const all = await list(h, 'claude', '?include_deprecated=true&limit=500')
      expect(all.body.total).toBe(3)
      expect(all.body.events.filter((e: any) => e.event_id === first.body.event_id)).toHaveLength(1)
    })

    it('gives the same snapshot_id for the same state and a new one after an append', async () => {
      const h = await harness(cleanup)
      await append(h, 'claude', event({content_md: 'one'}))
      const a = await snapshot(h, 'claude', '?scopes=global&limit_recent=5')
      const b = await snapshot(h, 'claude', '?scopes=global&limit_recent=5')
      expect(b.body.snapshot_id).toBe(a.body.snapshot_id)
      expect(b.body).toEqual(a.body)
      await append(h, 'gemini', event({content_md: 'two'}))
      const c = await snapshot(h, 'claude', '?scopes=global&limit_recent=5')
      expect(c.body.snapshot_id).not.toBe(a.body.snapshot_id)
      // another agent reading the same scopes sees the same state
      expect((await snapshot(h, 'gemini', '?scopes=global&limit_recent=5')).body.snapshot_id).toBe(c.body.snapshot_id)
    })

    it('bounds recent_events by limit_recent, newest first', async () => {
      const h = await harness(cleanup)
      const ids: string[] = []
      for (let i = 0; i < 12; i++) ids.push((await append(h, i % 2 ? 'claude' : 'gemini', event({scope: i % 3 ? 'global' : 'project:atlas'}))).body.event_id)
      const snap = await snapshot(h, 'claude', '?scopes=global,project:atlas&limit_recent=5')
      expect(snap.body.recent_events.map((e: any) => e.event_id)).toEqual(ids.slice(-5).reverse())
      const global = await snapshot(h, 'claude', '?scopes=global&limit_recent=500')
      expect(global.body.recent_events).toHaveLength(8)
    })

    it('refuses bad input with 400 naming the field, and stores nothing', async () => {
      const h = await harness(cleanup)
      const cases: [unknown, string][] = [
        [event({dedupe_key: 'CONFIG:FOO'}), 'body/dedupe_key'],
        [event({dedupe_key: 'x'.repeat(65)}), 'body/dedupe_key'],
        [event({dedupe_key: '決定_20260202'}), 'body/dedupe_key'],
        [event({kind: 'rumour'}), 'body/kind'],
        [event({content_md: 'x'.repeat(4001)}), 'body/content_md'],
        [event({content_md: '   '}), 'body/content_md'],
        [event({scope: 'team:x'}), 'body/scope'],
        [event({confidence: 'certain'}), 'body/confidence'],
        [event({ttl_days: -1}), 'body/ttl_days'],
        [event({ttl_days: '3'}), 'body/ttl_days'],
        [event({source: {system: 'fax'}}), 'body/source/system'],
        [event({run_id: undefined}), 'body/run_id'],
        [[event()], 'body'],
      ]
      for (const [body, field] of cases) {
        const answer = await append(h, 'claude', body)
        expect(answer.status, field).toBe(400)
        expect(answer.body, field).toMatchObject({error: 'bad_request', field})
      }
      const badJson = await request(`${h.server.url}/v1/memory/append`, {
        method: 'POST',
        headers: {authorization: `Bearer ${h.tokens.claude}`, 'content-type': 'application/json'},
        body: '{"scope": ',
      })
      expect(badJson.statusCode).toBe(400)
      expect(await badJson.body.json()).toMatchObject({error: 'bad_json'})
      const badKey = await append(h, 'claude', event(), {'idempotency-key': 'has space'})
      expect(badKey.body).toMatchObject({error: 'bad_request', field: 'header/idempotency-key'})

      for (const [query, field] of [
        ['?limit_recent=0', 'querystring/limit_recent'],
        ['?limit_recent=501', 'querystring/limit_recent'],
        ['?limit_recent=ten', 'querystring/limit_recent'],
        ['?scopes=global,team:x', 'querystring/scopes'],
        ['?scopes=global&scopes=project:x', 'querystring/scopes'],
      ]) {
        const answer = await snapshot(h, 'claude', query)
        expect(answer.status, query).toBe(400)
        expect(answer.body.field, query).toBe(field)
      }
      for (const [query, field] of [
        ['?kind=rumour', 'querystring/kind'],
        ['?limit=0', 'querystring/limit'],
        ['?since=yesterday', 'querystring/since'],
        ['?scope=team:*x', 'querystring/scope'],
        ['?dedupe_key=A', 'querystring/dedupe_key'],
        ['?include_deprecated=maybe', 'querystring/include_deprecated'],
      ]) {
        const answer = await list(h, 'claude', query)
        expect(answer.status, query).toBe(400)
        expect(answer.body.field, query).toBe(field)
      }
      expect((await list(h, 'claude', '?include_deprecated=true')).body.total).toBe(0)
      const noToken = await send(h, 'claude', 'GET', '/v1/memory/snapshot', undefined, {authorization: 'Bearer nope-nope-nope'})
      expect(noToken.status).toBe(401)
    })
  })

  describe('GET /v1/memory/events', () => {
    it('filters by kind, key, agent and time, newest first, with a total', async () => {
      const h = await harness(cleanup)
      const a = await append(h, 'claude', event({kind: 'bug', dedupe_key: 'bug:auth_401'}))
      await append(h, 'gemini', event({kind: 'config'}))
      const c = await append(h, 'gemini', event({kind: 'bug'}))
      expect((await list(h, 'claude', '?kind=bug')).body.events.map((e: any) => e.event_id)).toEqual([c.body.event_id, a.body.event_id])
      expect((await list(h, 'claude', '?kind=bug&agent=claude')).body).toMatchObject({total: 1, events: [{event_id: a.body.event_id}]})
      expect((await list(h, 'claude', '?dedupe_key=bug:auth_401')).body.total).toBe(1)
      const limited = await list(h, 'claude', '?limit=1')
      expect(limited.body).toMatchObject({total: 3, events: [{event_id: c.body.event_id}]})
      const future = new Date(Date.now() + 3_600_000).toISOString()
      expect((await list(h, 'claude', `?since=${future}`)).body.total).toBe(0)
      expect((await list(h, 'claude', `?until=${future}`)).body.total).toBe(3)
    })

    it('searches text, ranked by relevance, in English, keys and Japanese', async () => {
      const h = await harness(cleanup)
      const strong = await append(h, 'claude', event({dedupe_key: 'bug:gateway_auth_401', content_md: 'Gateway auth fails with 401: the gateway key expired. Renew the gateway key.'}))
      const weak = await append(h, 'gemini', event({content_md: 'Deployed the dashboard; the gateway was not touched. Lots of other words about unrelated things here.'}))
      await append(h, 'openclaw', event({content_md: 'Nothing relevant at all.'}))
      const jp = await append(h, 'claude', event({content_md: '4者共有メモリは Gateway をSSOTとし、append-onlyで運用（2026-02-02決定）'}))

      const ranked = await list(h, 'claude', '?q=gateway')
      expect(ranked.body.total).toBe(3)
      expect(ranked.body.events[0].event_id).toBe(strong.body.event_id)
      expect(ranked.body.events.map((e: any) => e.event_id)).toContain(weak.body.event_id)
      const scores = ranked.body.events.map((e: any) => e.score)
      expect([...scores].sort((x: number, y: number) => y - x)).toEqual(scores)

      expect((await list(h, 'claude', '?q=gateway%20auth')).body.events.map((e: any) => e.event_id)).toEqual([strong.body.event_id])
      expect((await list(h, 'claude', '?q=auth_401')).body.events.map((e: any) => e.event_id)).toEqual([strong.body.event_id])
      expect((await list(h, 'claude', `?q=${encodeURIComponent('共有メモリ')}`)).body.events.map((e: any) => e.event_id)).toEqual([jp.body.event_id])
      expect((await list(h, 'claude', `?q=${encodeURIComponent('運用')}`)).body.events.map((e: any) => e.event_id)).toEqual([jp.body.event_id])
      expect((await list(h, 'claude', `?q=${encodeURIComponent('メモ帳')}`)).body.total).toBe(0)
      expect((await list(h, 'claude', '?q=dash*')).body.events.map((e: any) => e.event_id)).toEqual([weak.body.event_id])
      // FTS syntax in a query is plain text, never an error
      for (const q of ['"', 'AND OR NOT', 'a:b (c', 'NEAR(x y)', '*', '^gateway', '---']) {
        const answer = await list(h, 'claude', `?q=${encodeURIComponent(q)}`)
        expect(answer.status, q).toBe(200)
      }
    })
  })
})
