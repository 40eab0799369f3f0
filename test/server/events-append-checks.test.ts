/**
 * The checks of an append and their order, as a client sees them, on both backends: an earlier append of the same
 * event is answered `duplicate` (by its Idempotency-Key, or by its identity) whether the event is clean or holds what
 * the scan refuses now; a new event that holds a secret is refused and audited; nothing is stored twice. The server
 * looks for the earlier append in the append's own transaction when the scan finds nothing, and before the
 * refusal otherwise (events-service.ts): the answers must be those of the documented order either way.
 */
import {randomBytes} from 'node:crypto'

import type {FastifyInstance} from 'fastify'
import {afterEach, describe, expect, it} from 'vitest'

import {contentHash, eventIdentity} from '../../src/events/index.js'
import {buildServer} from '../../src/server/app.js'
import type {ServerStorage} from '../../src/server/storage/types.js'
import {type Agent, Cleanup, makeTokens} from './helpers.js'
import {BACKENDS, openFresh} from '../helpers/backends.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

interface Server {
  app: FastifyInstance
  storage: ServerStorage
  call(agent: Agent, method: 'GET' | 'POST', url: string, body?: unknown, headers?: Record<string, string>): Promise<{status: number; body: any; text: string}>
}

async function server(backend: (typeof BACKENDS)[number]): Promise<Server> {
  const storage = await openFresh(backend, cleanup)
  const {byAgent, map} = makeTokens()
  // The app closes the storage it was given; openFresh's own close after it is a no-op.
  const app = buildServer({storage, tokens: map, logLevel: 'silent'})
  cleanup.add(() => app.close())
  const call: Server['call'] = async (agent, method, url, body, headers = {}) => {
    const all: Record<string, string> = {authorization: `Bearer ${byAgent[agent]}`, ...headers}
    if (body !== undefined) all['content-type'] = 'application/json'
    const response = await app.inject({method, url, headers: all, payload: body === undefined ? undefined : JSON.stringify(body)})
    return {status: response.statusCode, body: response.body === '' ? undefined : JSON.parse(response.body), text: response.body}
  }
  return {app, storage, call}
}

function event(content: string): Record<string, unknown> {
  return {
    run_id: `run-${randomBytes(4).toString('hex')}`,
    scope: 'global',
    kind: 'fact',
    dedupe_key: 'config:ci_token',
    confidence: 'high',
    content_md: content,
    source: {system: 'cli'},
    ttl_days: 0,
  }
}

const append = (s: Server, agent: Agent, body: Record<string, unknown>, key?: string) =>
  s.call(agent, 'POST', '/v1/memory/append', body, key === undefined ? {} : {'idempotency-key': key})

async function stored(s: Server): Promise<any[]> {
  return (await s.call('claude', 'GET', '/v1/memory/events?limit=500&include_deprecated=true')).body.events
}

async function refusals(s: Server): Promise<any[]> {
  const answer = await s.call('claude', 'GET', '/api/audit?limit=500')
  expect(answer.status).toBe(200)
  return (answer.body.entries as any[]).filter((entry) => entry.kind === 'refused')
}

describe.each(BACKENDS)('on %s', (backend) => {
  it('answers a retry of a clean event duplicate, by key and by identity, and stores it once', async () => {
    const s = await server(backend)
    const body = event('The release job reads its token from the CI settings.')
    const first = await append(s, 'claude', body, 'outbox-1')
    expect(first.body).toMatchObject({status: 'created'})
    expect((await append(s, 'claude', body, 'outbox-1')).body).toEqual({event_id: first.body.event_id, status: 'duplicate', warnings: []})
    expect((await append(s, 'claude', body)).body).toEqual({event_id: first.body.event_id, status: 'duplicate', warnings: []})
    const reused = await append(s, 'claude', event('Another fact entirely.'), 'outbox-1')
    expect(reused.status).toBe(422)
    expect(reused.body).toMatchObject({error: 'idempotency_key_reused', event_id: first.body.event_id})
    expect((await stored(s)).map((e) => e.event_id)).toEqual([first.body.event_id])
    expect(await refusals(s)).toEqual([])
  })

  it('answers a retry of an event stored before the scan refused such text duplicate, not 422, and refuses the same text in a new event', async () => {
    const s = await server(backend)
    const token = `ghp_${randomBytes(27).toString('base64url').replace(/[-_]/g, 'x').slice(0, 36)}`
    const body = event(`Use the CI token ${token} for the release job.`)
    // As an older server (or an import) let it in: not scanned, with the identity and key the append gives.
    const fields = {agent_id: 'claude' as const, run_id: body.run_id as string, scope: 'global', kind: 'fact' as const, dedupe_key: 'config:ci_token', content_md: body.content_md as string}
    const [earlier] = await s.storage.importEvents([
      {
        ...fields,
        confidence: 'high',
        source: {system: 'cli'},
        supersedes: null,
        ttl_days: 0,
        created_at: new Date().toISOString(),
        identity: eventIdentity(fields),
        content_hash: contentHash(fields.content_md),
        idempotency_key: 'claude:outbox-7',
        scanned: false,
      },
    ])
    expect((await append(s, 'claude', body, 'outbox-7')).body).toEqual({event_id: earlier, status: 'duplicate', warnings: []})
    expect((await append(s, 'claude', body)).body).toEqual({event_id: earlier, status: 'duplicate', warnings: []})
    // The key of that event for another text with the secret: the key was used (422), nothing stored.
    expect((await append(s, 'claude', event(`Or ${token}.`), 'outbox-7')).body).toMatchObject({error: 'idempotency_key_reused', event_id: earlier})
    expect(await refusals(s)).toEqual([])

    const fresh = await append(s, 'claude', {...body, run_id: 'run-new'})
    expect(fresh.status).toBe(422)
    expect(fresh.body).toMatchObject({error: 'sensitive', field: 'body/content_md'})
    expect(fresh.text).not.toContain(token)
    expect((await stored(s)).map((e) => e.event_id)).toEqual([earlier])
    expect(await refusals(s)).toHaveLength(1)
  })
})
