/**
 * Four agents appending at once over real HTTP (127.0.0.1): nothing lost, nothing stored twice, and retries
 * racing their originals still give one row.
 */
import {Agent as HttpAgent, request} from 'undici'
import {afterEach, describe, expect, it} from 'vitest'

import {AGENTS, Cleanup, harness, type Agent, type Harness} from './helpers.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

async function appendAll(h: Harness, agent: Agent, count: number, dispatcher: HttpAgent, keyed: boolean): Promise<{event_id: string; status: string}[]> {
  const answers: Promise<{event_id: string; status: string}>[] = []
  for (let i = 0; i < count; i++) {
    const body = {
      run_id: `run-${agent}-${Math.floor(i / 7)}`,
      scope: i % 5 === 0 ? `agent:${agent}` : i % 2 ? 'global' : 'project:atlas',
      kind: 'fact',
      dedupe_key: `fact:key_${i % 50}`,
      confidence: 'med',
      content_md: `Fact ${i} written by ${agent}.`,
      source: {system: 'cli'},
    }
    const headers: Record<string, string> = {authorization: `Bearer ${h.tokens[agent]}`, 'content-type': 'application/json'}
    if (keyed) headers['idempotency-key'] = `${agent}-${i}`
    answers.push(
      request(`${h.server.url}/v1/memory/append`, {method: 'POST', headers, body: JSON.stringify(body), dispatcher}).then(async (response) => {
        const answer = (await response.body.json()) as {event_id: string; status: string}
        if (response.statusCode !== 200) throw new Error(`append ${i} by ${agent}: ${response.statusCode} ${JSON.stringify(answer)}`)
        return answer
      }),
    )
  }
  return Promise.all(answers)
}

async function countAll(h: Harness): Promise<{ids: string[]; total: number}> {
  const ids: string[] = []
  let total = 0
  for (const agent of AGENTS) {
    // each agent sees global, project:* and its own private scope; count private events from their owner only
    const own = await request(`${h.server.url}/v1/memory/events?scope=agent:${agent}&limit=500&include_deprecated=true`, {
      headers: {authorization: `Bearer ${h.tokens[agent]}`},
    })
    const body = (await own.body.json()) as {events: {event_id: string}[]; total: number}
    total += body.total
    ids.push(...body.events.map((e) => e.event_id))
  }
  for (const scope of ['global', 'project:atlas']) {
    let until: string | undefined
    for (;;) {
      // page newest-first by time, then collect ids; pages overlap on equal times, the Set removes that
      const query = `scope=${scope}&limit=500&include_deprecated=true${until ? `&until=${encodeURIComponent(until)}` : ''}`
      const response = await request(`${h.server.url}/v1/memory/events?${query}`, {headers: {authorization: `Bearer ${h.tokens.claude}`}})
      const body = (await response.body.json()) as {events: {event_id: string; created_at: string}[]; total: number}
      if (until === undefined) total += body.total
      ids.push(...body.events.map((e) => e.event_id))
      if (body.events.length < 500) break
      const oldest = body.events.at(-1)?.created_at as string
      if (oldest === until) throw new Error('more than 500 events share one millisecond; cannot page')
      until = new Date(Date.parse(oldest) + 1).toISOString()
    }
  }
  return {ids, total}
}

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  describe('concurrent appends', () => {
    it('4 agents × 1,000 concurrent appends: none lost, none duplicated', async () => {
      const h = await harness(cleanup)
      const dispatchers = AGENTS.map(() => new HttpAgent({connections: 4}))
      cleanup.add(() => Promise.all(dispatchers.map((d) => d.close())))
      const results = await Promise.all(AGENTS.map((agent, n) => appendAll(h, agent, 1000, dispatchers[n], true)))
      const ids = results.flat().map((answer) => answer.event_id)
      expect(results.flat().every((answer) => answer.status === 'created')).toBe(true)
      expect(new Set(ids).size).toBe(4000)

      const stored = await countAll(h)
      expect(stored.total).toBe(4000)
      expect(new Set(stored.ids).size).toBe(4000)
      expect([...new Set(stored.ids)].sort()).toEqual([...ids].sort())

      // every retry of every append, concurrently: all duplicates, the same ids, no new row
      const retries = await Promise.all(AGENTS.map((agent, n) => appendAll(h, agent, 1000, dispatchers[n], true)))
      expect(retries.flat().every((answer) => answer.status === 'duplicate')).toBe(true)
      expect(retries.flat().map((answer) => answer.event_id)).toEqual(ids)
      expect((await countAll(h)).total).toBe(4000)
    })

    it('an append and its retry racing each other store one event', async () => {
      const h = await harness(cleanup)
      const dispatcher = new HttpAgent({connections: 8})
      cleanup.add(() => dispatcher.close())
      const [a, b] = await Promise.all([appendAll(h, 'gemini', 200, dispatcher, false), appendAll(h, 'gemini', 200, dispatcher, false)])
      for (let i = 0; i < 200; i++) {
        expect(a[i].event_id).toBe(b[i].event_id)
        expect([a[i].status, b[i].status].sort()).toEqual(['created', 'duplicate'])
      }
      expect((await countAll(h)).total).toBe(200)
    })
  })
})
