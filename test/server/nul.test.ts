/**
 * A NUL character (U+0000) in any text a request carries to the storage is refused with 400 naming its field, the
 * same on both backends: PostgreSQL cannot store it (it answered 500 where SQLite stored it), and no memory needs it.
 * Files and events refused it already (protocol.test.ts, events.test.ts); these are the other doors.
 */
import {createHash, randomBytes} from 'node:crypto'

import {afterEach, describe, expect, it} from 'vitest'

import {createKey} from '../../src/server/keys.js'
import {BACKENDS, databaseFor, useBackend} from '../helpers/backends.js'
import {type Answer, call, Cleanup, harness} from './helpers.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

const NUL = 'a\u0000b'
const NUL_IN_QUERY = 'a%00b'

/** A 400 whose message names `field` and says why. */
function expectRefused(answer: Answer, field: string): void {
  expect(answer.status, answer.text).toBe(400)
  expect(answer.body.field).toBe(field)
  expect(answer.body.message).toContain('holds a NUL character (U+0000)')
}

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  it('refuses a NUL in a project switch, a task, a query parameter or a cleanup with 400 naming the field, and changes nothing', async () => {
    const h = await harness(cleanup)
    const {token: admin} = await createKey({dataDir: h.dataDir, databaseUrl: await databaseFor(h.dataDir), agent: 'openclaw', role: 'admin'})
    expect((await h.call('POST', '/api/projects/active', {projectId: 'atlas'})).status).toBe(200)

    // A project id is a slug, so a NUL is refused as any other character outside one.
    const project = await h.call('POST', '/api/projects/active', {projectId: NUL})
    expect(project.status, project.text).toBe(400)
    expect(project.body.field).toBe('body/projectId')
    expectRefused(await h.call('POST', '/api/memory/sync-task', {taskId: NUL, timestamp: '2026-02-02T10:00:00Z', type: 'code', success: true}), 'body/taskId')
    for (const name of ['agent', 'q']) expectRefused(await h.call('GET', `/v1/memory/events?${name}=${NUL_IN_QUERY}`), `querystring/${name}`)
    expectRefused(await h.call('GET', `/v1/memory/snapshot?agent_id=${NUL_IN_QUERY}`), 'querystring/agent_id')
    expectRefused(await call(h.server.url, admin, 'GET', `/api/audit?agent=${NUL_IN_QUERY}`), 'querystring/agent')
    expectRefused(await h.call('GET', `/api/search?q=${NUL_IN_QUERY}`), 'querystring/q')
    expectRefused(await h.call('POST', '/v1/memory/cleanup', {dry_run: false, older_than_days: 0, event_ids: ['evt_1', NUL]}), 'body/event_ids/1')
    expectRefused(await h.call('POST', '/v1/memory/append', {run_id: 'r1', scope: 'global', kind: 'fact', dedupe_key: 'fact:x', confidence: 'high', content_md: 'x', source: {system: 'telegram', thread_id: NUL}}), 'body/source/thread_id')

    expect((await h.call('GET', '/api/projects/active')).body.projectId).toBe('atlas')
    expect((await h.status()).body.files['jarvis/claude.json']).toBeUndefined()
    expect((await h.call('GET', '/v1/memory/events')).body.events).toEqual([])
  })

  it('refuses a NUL in an app\'s registration or authorization request, and treats a client id holding one as unknown', async () => {
    const h = await harness(cleanup)
    const url = h.server.url
    const register = (metadata: Record<string, unknown>) =>
      call(url, null, 'POST', '/register', {redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none', ...metadata})
    for (const [metadata, field] of [
      [{client_name: `Chat${NUL}`}, 'client_name'],
      [{redirect_uris: [`http://127.0.0.1:9/cb${NUL}`]}, 'redirect_uris/0'],
    ] as const) {
      const refused = await register(metadata)
      expect(refused.status, refused.text).toBe(400)
      expect(refused.body).toEqual({error: 'invalid_client_metadata', error_description: `${field} holds a NUL character (U+0000), which text may not`})
    }

    const app = await register({client_name: 'ChatGPT'})
    expect(app.status).toBe(201)
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url')
    const authorize = (params: Record<string, string>) =>
      fetch(`${url}/authorize?${new URLSearchParams({response_type: 'code', client_id: app.body.client_id, redirect_uri: 'http://127.0.0.1:9/cb', code_challenge: challenge, code_challenge_method: 'S256', ...params})}`, {redirect: 'manual'})
    // The app is sent back with the refusal, as OAuth answers a bad request once its redirect address is known.
    for (const field of ['state', 'scope', 'code_challenge']) {
      const sent = await authorize({[field]: NUL})
      expect(sent.status).toBe(302)
      const back = new URL(sent.headers.get('location')!)
      expect(back.origin + back.pathname).toBe('http://127.0.0.1:9/cb')
      expect(back.searchParams.get('error')).toBe('invalid_request')
      expect(back.searchParams.get('error_description')).toBe(`${field} holds a NUL character (U+0000), which text may not`)
    }
    const unknown = await authorize({client_id: NUL})
    expect(unknown.status).toBe(400)
    expect(await unknown.json()).toEqual({error: 'invalid_client', error_description: 'Invalid client_id'})
    for (const path of ['/token', '/revoke']) {
      const form = new URLSearchParams({grant_type: 'authorization_code', code: 'x', code_verifier: 'v'.repeat(43), token: 'x', client_id: NUL}).toString()
      const answer = await call(url, null, 'POST', path, undefined, {raw: form, contentType: 'application/x-www-form-urlencoded'})
      expect(answer.status, path).toBe(400)
      expect(answer.body.error, path).toBe('invalid_client')
    }
    // Still asks as before.
    expect((await authorize({state: 'fine'})).headers.get('location')).toMatch(/^\/#\/consent\/authz_/)
  })
})
