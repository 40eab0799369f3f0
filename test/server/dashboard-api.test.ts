/**
 * The API routes the dashboard added, against a real server on 127.0.0.1: one file written with its revision
 * (a stale one answered with the file as it is; a secret refused with the CLI's message), search, the
 * EVENT_APPENDED broadcast (to the clients that may read the scope only), and the page's own assets.
 */
import {mkdir, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import Fastify from 'fastify'
import {afterEach, describe, expect, it} from 'vitest'

import {assertClean} from '../../src/files/tools.js'
import {createKey} from '../../src/server/keys.js'
import {DASHBOARD_CSP, dashboardRoutes} from '../../src/server/routes/dashboard.js'
import {fakeGithubToken} from '../files/helpers.js'
import {call, Cleanup, connectWs, harness, tempDir} from './helpers.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

function event(fields: Record<string, unknown>): Record<string, unknown> {
  return {run_id: `run-${Math.random().toString(36).slice(2)}`, kind: 'fact', confidence: 'high', source: {system: 'web'}, scope: 'global', ...fields}
}

describe('POST /api/memory/write', () => {
  it('writes a file at its revision, and answers a stale revision with the file as it is now, writing nothing', async () => {
    const h = await harness(cleanup)
    const created = await h.call('POST', '/api/memory/write', {path: 'notes/a.md', content: 'one\n', base: null})
    expect(created.status).toBe(200)
    expect(created.body).toMatchObject({path: 'notes/a.md', rev: 1})
    const second = await h.call('POST', '/api/memory/write', {path: 'notes/a.md', content: 'two\n', base: 1}, {agent: 'gemini'})
    expect(second.body).toMatchObject({rev: 2})

    const stale = await h.call('POST', '/api/memory/write', {path: 'notes/a.md', content: 'three\n', base: 1})
    expect(stale.status).toBe(409)
    expect(stale.body).toMatchObject({
      error: 'stale',
      path: 'notes/a.md',
      current: {content: 'two\n', rev: 2, author: 'gemini', deleted: false},
    })
    expect(stale.body.message).toBe('notes/a.md changed since you opened it (revision 1): it is at revision 2 (by gemini). Nothing was overwritten; merge and save again.')
    const pulled = await h.call('POST', '/api/memory/pull', {files: ['notes/a.md']})
    expect(pulled.body.files['notes/a.md']).toMatchObject({content: 'two\n', rev: 2})

    // Creating a file that exists meanwhile is stale too.
    const raced = await h.call('POST', '/api/memory/write', {path: 'notes/a.md', content: 'new\n', base: null})
    expect(raced.status).toBe(409)
  })

  it('refuses a secret with the message of `jarvis memory write`, writing nothing', async () => {
    const h = await harness(cleanup)
    const text = `deploy with ${fakeGithubToken()}\n`
    const expected = await assertClean('notes/secret.md', text).then(
      () => null,
      (error: Error) => error.message,
    )
    expect(expected).toMatch(/^refused: found a GitHub token in \.memory\/notes\/secret\.md at line 1, column 13/)
    const refused = await h.call('POST', '/api/memory/write', {path: 'notes/secret.md', content: text, base: null})
    expect(refused.status).toBe(422)
    expect(refused.body).toMatchObject({error: 'sensitive', message: expected, field: 'body/content', path: 'notes/secret.md'})
    expect(refused.text).not.toContain(text.trim().split(' ').at(-1))
    expect((await h.status()).body.files['notes/secret.md']).toBeUndefined()
  })

  it('refuses bad input naming the field, a path that leaves the tree, and a read key', async () => {
    const dataDir = await tempDir()
    cleanup.dir(dataDir)
    const {token: readToken} = await createKey({dataDir, agent: 'gemini', role: 'read'})
    const h = await harness(cleanup, {dataDir})
    const missing = await h.call('POST', '/api/memory/write', {path: 'a.md', content: 'x'})
    expect(missing).toMatchObject({status: 400, body: {error: 'bad_request', message: 'body/base is required'}})
    const outside = await h.call('POST', '/api/memory/write', {path: '../escape.md', content: 'x', base: null})
    expect(outside).toMatchObject({status: 400, body: {error: 'path_refused'}})
    const badJson = await h.call('POST', '/api/memory/write', {path: 'data.json', content: '{"a": ', base: null})
    expect(badJson).toMatchObject({status: 400, body: {error: 'invalid_content'}})
    const readOnly = await call(h.server.url, readToken, 'POST', '/api/memory/write', {path: 'a.md', content: 'x', base: null})
    expect(readOnly.status).toBe(403)
    expect((await h.status()).body.files).toEqual({})
  })
})

describe('GET /api/search', () => {
  it('ranks files and the events the token may read', async () => {
    const h = await harness(cleanup)
    await h.push({'projects/atlas/summary.md': '# Atlas\n\nA map of every service.\n', 'notes/other.md': 'nothing here\n'})
    expect((await h.call('POST', '/v1/memory/append', event({dedupe_key: 'fact:map', content_md: 'The service map lives in atlas.'}))).status).toBe(200)
    expect((await h.call('POST', '/v1/memory/append', event({dedupe_key: 'fact:private_map', scope: 'agent:claude', content_md: 'My private service map.'}))).status).toBe(200)

    const asClaude = await h.call('GET', '/api/search?q=service%20map')
    expect(asClaude.status).toBe(200)
    expect(asClaude.body.files.hits.map((hit: {path: string}) => hit.path)).toEqual(['projects/atlas/summary.md'])
    expect(asClaude.body.events.events.map((e: {dedupe_key: string}) => e.dedupe_key).sort()).toEqual(['fact:map', 'fact:private_map'])
    const asGemini = await h.call('GET', '/api/search?q=service%20map', undefined, {agent: 'gemini'})
    expect(asGemini.body.events.events.map((e: {dedupe_key: string}) => e.dedupe_key)).toEqual(['fact:map'])

    expect(await h.call('GET', '/api/search')).toMatchObject({status: 400, body: {field: 'querystring/q'}})
    expect(await h.call('GET', '/api/search?q=map&limit=500')).toMatchObject({status: 400, body: {field: 'querystring/limit'}})
    expect((await h.call('GET', '/api/search?q=map', undefined, {authorization: null})).status).toBe(401)
  })
})

describe('EVENT_APPENDED on /ws/memory', () => {
  it('reaches the clients that may read the event’s scope, and no other', async () => {
    const h = await harness(cleanup)
    const claude = await connectWs(h.server.wsUrl, h.tokens.claude)
    const gemini = await connectWs(h.server.wsUrl, h.tokens.gemini, 'query')
    cleanup.add(() => claude.close())
    cleanup.add(() => gemini.close())
    const privateAppend = await h.call('POST', '/v1/memory/append', event({dedupe_key: 'fact:mine', scope: 'agent:claude', content_md: 'Private.'}))
    const globalAppend = await h.call('POST', '/v1/memory/append', event({dedupe_key: 'fact:ours', content_md: 'Shared.'}))
    const mine = await claude.next((m) => m.type === 'EVENT_APPENDED' && m.event_id === privateAppend.body.event_id)
    expect(mine).toMatchObject({scope: 'agent:claude', kind: 'fact', dedupe_key: 'fact:mine', agent_id: 'claude'})
    await claude.next((m) => m.type === 'EVENT_APPENDED' && m.event_id === globalAppend.body.event_id)
    // Broadcasts go out in order: once gemini has the shared event, it would already have had the private one.
    await gemini.next((m) => m.type === 'EVENT_APPENDED' && m.event_id === globalAppend.body.event_id)
    expect(gemini.messages.filter((m) => m.type === 'EVENT_APPENDED').map((m) => m.dedupe_key)).toEqual(['fact:ours'])
    // A duplicate append stores nothing and announces nothing.
    await h.call('POST', '/v1/memory/append', event({dedupe_key: 'fact:ours', content_md: 'Shared.', run_id: 'r-dup'}))
    await h.call('POST', '/v1/memory/append', event({dedupe_key: 'fact:ours', content_md: 'Shared.', run_id: 'r-dup'}))
    await h.call('POST', '/v1/memory/append', event({dedupe_key: 'fact:last', content_md: 'Last.'}))
    await gemini.next((m) => m.type === 'EVENT_APPENDED' && m.dedupe_key === 'fact:last')
    expect(gemini.messages.filter((m) => m.type === 'EVENT_APPENDED').map((m) => m.dedupe_key)).toEqual(['fact:ours', 'fact:ours', 'fact:last'])
  })
})

describe('the dashboard’s page and assets', () => {
  it('serves the built files without a token, with a policy that runs only its own scripts', async () => {
    const dir = await tempDir()
    cleanup.dir(dir)
    await mkdir(dir, {recursive: true})
    await writeFile(join(dir, 'index.html'), '<!doctype html><title>jarvis</title>')
    await writeFile(join(dir, 'app.js'), 'export {}\n')
    const app = Fastify()
    dashboardRoutes(app, dir)
    cleanup.add(() => app.close())
    const page = await app.inject({method: 'GET', url: '/'})
    expect(page.statusCode).toBe(200)
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(page.headers['content-security-policy']).toBe(DASHBOARD_CSP)
    expect(page.body).toContain('<title>jarvis</title>')
    const script = await app.inject({method: 'GET', url: '/dashboard/app.js'})
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8')
    // Only the named files: nothing else of the directory is reachable.
    expect((await app.inject({method: 'GET', url: '/dashboard/index.html'})).statusCode).toBe(404)
    expect((await app.inject({method: 'GET', url: '/dashboard/../index.html'})).statusCode).not.toBe(500)
    // A file the build did not write: a message saying what to do.
    const missing = await app.inject({method: 'GET', url: '/dashboard/app.css'})
    expect(missing.statusCode).toBe(503)
    expect(missing.body).toContain('run npm run build')
  })

  it('jarvis serve answers / with the page, and the API still asks for a token', async () => {
    const h = await harness(cleanup)
    const page = await call(h.server.url, null, 'GET', '/')
    // No token needed for the page (it holds no data); 503 only names a missing build.
    expect(page.status).not.toBe(401)
    expect(page.headers['content-security-policy']).toBe(DASHBOARD_CSP)
    expect((await call(h.server.url, null, 'GET', '/api/memory/status')).status).toBe(401)
  })
})
