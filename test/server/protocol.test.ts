/** The memory protocol against a real server on 127.0.0.1: push, pull, status, revisions, tombstones, refusals. */
import {createHash} from 'node:crypto'
import {PassThrough} from 'node:stream'

import {afterEach, describe, expect, it} from 'vitest'

import {STATUS_TEXTS_HEADER} from '../../src/schemas/index.js'
import {redactUrl} from '../../src/server/app.js'
import {STATUS_TEXT_FILES} from '../../src/server/service.js'
import {fakeGithubToken} from '../files/helpers.js'
import {call, Cleanup, harness} from './helpers.js'
import {BACKENDS, useBackend} from '../helpers/backends.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

describe.each(BACKENDS)('on %s', (backend) => {
  useBackend(backend)

  describe('push, pull, status', () => {
    it('round-trips files with revisions, hashes and the change sequence', async () => {
      const h = await harness(cleanup)
      const empty = await h.status()
      expect(empty.status).toBe(200)
      expect(empty.body).toMatchObject({seq: 0, files: {}, activeProjectId: null})
      expect(Date.parse(empty.body.serverTime)).not.toBeNaN()

      const pushed = await h.push({'PROJECT_MEMORY.md': '# Memory\n', 'projects.json': '{"a": 1}\n'})
      expect(pushed.status).toBe(200)
      expect(pushed.body).toEqual({
        seq: 1,
        deleted: {},
        files: {
          'PROJECT_MEMORY.md': {rev: 1, hash: sha('# Memory\n'), updatedAt: expect.any(String)},
          'projects.json': {rev: 1, hash: sha('{"a": 1}\n'), updatedAt: expect.any(String)},
        },
      })

      const second = await h.push({'PROJECT_MEMORY.md': '# Memory\nmore\n'}, {'PROJECT_MEMORY.md': 1}, undefined, 'gemini')
      expect(second.body).toMatchObject({seq: 2, files: {'PROJECT_MEMORY.md': {rev: 2}}})

      const status = await h.status()
      expect(status.body.seq).toBe(2)
      expect(status.body.files).toEqual({
        'PROJECT_MEMORY.md': {rev: 2, hash: sha('# Memory\nmore\n'), updatedAt: expect.any(String), author: 'gemini'},
        'projects.json': {rev: 1, hash: sha('{"a": 1}\n'), updatedAt: expect.any(String), author: 'claude'},
      })

      const pulled = await h.call('POST', '/api/memory/pull', {files: ['PROJECT_MEMORY.md', 'projects.json', 'unknown.md']})
      expect(pulled.status).toBe(200)
      expect(pulled.body).toEqual({
        files: {
          'PROJECT_MEMORY.md': {content: '# Memory\nmore\n', rev: 2, hash: sha('# Memory\nmore\n'), updatedAt: expect.any(String)},
          'projects.json': {content: '{"a": 1}\n', rev: 1, hash: sha('{"a": 1}\n'), updatedAt: expect.any(String)},
        },
        deleted: {},
      })
    })

    it('answers ?since=N with only the later changes, and refuses a bad since', async () => {
      const h = await harness(cleanup)
      await h.push({'a.md': 'a'})
      await h.push({'b.md': 'b'})
      await h.push({'c.md': 'c', 'a.md': 'a2'})
      expect(Object.keys((await h.status(0)).body.files).sort()).toEqual(['a.md', 'b.md', 'c.md'])
      expect(Object.keys((await h.status(1)).body.files).sort()).toEqual(['a.md', 'b.md', 'c.md'])
      expect(Object.keys((await h.status(2)).body.files).sort()).toEqual(['a.md', 'c.md'])
      const upToDate = await h.status(3)
      expect(upToDate.body).toMatchObject({seq: 3, full: false, files: {}})
      expect(upToDate.text.length).toBeLessThan(200)
      // a since this server never handed out (its data was replaced) gets the full list
      expect((await h.status(50)).body).toMatchObject({seq: 3, full: true, serverId: upToDate.body.serverId})
      expect(Object.keys((await h.status(50)).body.files)).toHaveLength(3)
      for (const bad of ['-1', 'abc', '1.5', '', '01', '99999999999999999999']) {
        const answer = await h.call('GET', `/api/memory/status?since=${bad}`)
        expect(answer.status, bad).toBe(400)
        expect(answer.body).toMatchObject({error: 'bad_request', field: 'querystring/since'})
      }
    })

    it('gives the texts of the few files an incremental status lists to a client that asks, within the characters it asked for', async () => {
      const h = await harness(cleanup)
      await h.push({'a.md': 'a', 'b.md': 'b', 'gone.md': 'g'})
      await h.push({'a.md': 'a2', 'c.md': 'c'.repeat(100)}, {'a.md': 1, 'c.md': null})
      await h.push({}, {'gone.md': 1}, ['gone.md'])
      const asking = (since: number | undefined, chars: string) => h.call('GET', since === undefined ? '/api/memory/status' : `/api/memory/status?since=${since}`, undefined, {headers: {[STATUS_TEXTS_HEADER]: chars}})
      // Each live file's text, of the version its entry names; a tombstone has none.
      const answer = await asking(1, '1000')
      expect(answer.body.files).toEqual({
        'a.md': {rev: 2, hash: sha('a2'), updatedAt: expect.any(String), author: 'claude', content: 'a2'},
        'c.md': {rev: 1, hash: sha('c'.repeat(100)), updatedAt: expect.any(String), author: 'claude', content: 'c'.repeat(100)},
        'gone.md': {rev: 2, deleted: true, updatedAt: expect.any(String), author: 'claude'},
      })
      // Within the characters asked for: the texts that fit, the others listed without.
      const tight = await asking(1, '50')
      expect(tight.body.files['a.md'].content).toBe('a2')
      expect(tight.body.files['c.md']).not.toHaveProperty('content')
      // Not asked, a full listing, or a header that is no number: no texts, and no error.
      for (const plain of [await h.status(1), await asking(undefined, '1000'), await asking(1, 'lots'), await asking(1, '0')]) {
        expect(plain.status).toBe(200)
        expect(Object.values(plain.body.files as Record<string, object>).some((file) => 'content' in file)).toBe(false)
      }
    })

    it('gives no texts in a status that lists more files than a few', async () => {
      const h = await harness(cleanup)
      await h.push(Object.fromEntries(Array.from({length: STATUS_TEXT_FILES + 1}, (_, i) => [`n/${i}.md`, `${i}`])))
      const many = await h.call('GET', '/api/memory/status?since=0', undefined, {headers: {[STATUS_TEXTS_HEADER]: String(1 << 20)}})
      expect(Object.keys(many.body.files)).toHaveLength(STATUS_TEXT_FILES + 1)
      expect(Object.values(many.body.files as Record<string, object>).some((file) => 'content' in file)).toBe(false)
    })

    it('keeps tombstones: status lists them, pull tells deleted from unknown, a delete needs a live file', async () => {
      const h = await harness(cleanup)
      await h.push({'a.md': 'a', 'b.md': 'b'})
      const deleted = await h.push({}, {'a.md': 1}, ['a.md', 'never.md'])
      expect(deleted.status).toBe(200)
      expect(deleted.body).toEqual({files: {}, deleted: {'a.md': {rev: 2, updatedAt: expect.any(String)}}, seq: 2})
      const status = await h.status()
      expect(status.body.files['a.md']).toEqual({rev: 2, deleted: true, updatedAt: expect.any(String), author: 'claude'})
      expect((await h.status(1)).body.files).toEqual({'a.md': expect.objectContaining({deleted: true})})
      const pulled = await h.call('POST', '/api/memory/pull', {files: ['a.md', 'never.md']})
      expect(pulled.body).toEqual({files: {}, deleted: {'a.md': {rev: 2, updatedAt: expect.any(String)}}})
      // deleting again is a no-op; re-creating continues the rev
      const again = await h.push({}, undefined, ['a.md'])
      expect(again.body).toMatchObject({seq: 2, deleted: {'a.md': {rev: 2}}})
      const recreated = await h.push({'a.md': 'back'}, {'a.md': null})
      expect(recreated.body).toMatchObject({seq: 3, files: {'a.md': {rev: 3}}})
    })

    it('treats a push of identical content as a no-op: same rev, no new seq, no broadcast', async () => {
      const h = await harness(cleanup)
      const first = await h.push({'a.md': 'same\n', 'b.md': 'b'})
      const touched = await h.push({'a.md': 'same\n', 'b.md': 'b'})
      expect(touched.status).toBe(200)
      expect(touched.body).toEqual({...first.body, files: first.body.files})
      expect((await h.status()).body.seq).toBe(1)
    })
  })

  describe('optimistic concurrency', () => {
    it('answers 409 naming the path to the second of two pushes from the same base, and changes nothing', async () => {
      const h = await harness(cleanup)
      await h.push({'notes.md': 'v1\n'})
      const first = await h.push({'notes.md': 'claude edit\n'}, {'notes.md': 1}, undefined, 'claude')
      expect(first.status).toBe(200)
      const before = await h.status()
      const second = await h.push({'notes.md': 'gemini edit\n'}, {'notes.md': 1}, undefined, 'gemini')
      expect(second.status).toBe(409)
      expect(second.body).toMatchObject({error: 'stale', stale: ['notes.md'], message: expect.stringContaining('notes.md')})
      expect((await h.status()).body).toEqual({...before.body, serverTime: expect.any(String)})
      const pulled = await h.call('POST', '/api/memory/pull', {files: ['notes.md']})
      expect(pulled.body.files['notes.md'].content).toBe('claude edit\n')
    })

    it('is atomic: one stale path among three writes none of them', async () => {
      const h = await harness(cleanup)
      await h.push({'a.md': 'a', 'b.md': 'b', 'c.md': 'c'})
      await h.push({'b.md': 'b2'})
      const before = await h.status()
      const answer = await h.push({'a.md': 'A', 'b.md': 'B', 'c.md': 'C', 'd.md': 'D'}, {'a.md': 1, 'b.md': 1, 'c.md': 1, 'd.md': null})
      expect(answer.status).toBe(409)
      expect(answer.body.stale).toEqual(['b.md'])
      expect((await h.status()).body).toEqual({...before.body, serverTime: expect.any(String)})
      // a delete with a stale base is refused too: an edit beats a concurrent deletion
      const deletion = await h.push({}, {'b.md': 1}, ['b.md'])
      expect(deletion.status).toBe(409)
      expect(deletion.body.stale).toEqual(['b.md'])
    })

    it('writes a path without a base entry unconditionally (seed-style client, last writer wins)', async () => {
      const h = await harness(cleanup)
      await h.push({'a.md': 'a'})
      await h.push({'a.md': 'b'}, undefined, undefined, 'gemini')
      const answer = await h.push({'a.md': 'c'})
      expect(answer.body.files['a.md'].rev).toBe(3)
    })

    it('believes-absent (null or 0) conflicts with a file that exists', async () => {
      const h = await harness(cleanup)
      await h.push({'a.md': 'a'})
      for (const base of [null, 0]) {
        const answer = await h.push({'a.md': 'mine'}, {'a.md': base})
        expect(answer.status).toBe(409)
      }
    })
  })

  describe('bad input changes nothing', () => {
    async function seeded() {
      const h = await harness(cleanup, {bodyLimit: 64 * 1024, maxFileBytes: 16 * 1024})
      await h.push({'keep.md': 'keep\n'})
      const before = (await h.status()).body
      const unchanged = async () => expect((await h.status()).body).toEqual({...before, serverTime: expect.any(String)})
      return {h, unchanged}
    }

    it.each([['notes/plan.md.local.bak'], ['plan.md.local.2.bak'], ['.plan.md.jarvis-tmp-12-3']])('refuses to store %j, a file that stays on one machine, with 400', async (path) => {
      const {h, unchanged} = await seeded()
      const pushed = await h.push({[path]: 'my losing side', 'fine.md': 'fine'})
      expect(pushed.status).toBe(400)
      expect(pushed.body).toMatchObject({error: 'path_refused', path})
      expect(pushed.body.message).toContain('stays on the machine that made it')
      await unchanged()
    })

    it.each([['../x'], ['/etc/passwd'], ['a/../../b'], ['a\u0000b'], ['a\\b'], ['./a'], ['a//b'], ['']])('refuses the path %j with 400', async (path) => {
      const {h, unchanged} = await seeded()
      const pushed = await h.push({[path]: 'x', 'fine.md': 'fine'})
      expect(pushed.status).toBe(400)
      expect(pushed.body).toMatchObject({error: 'path_refused', path, reason: expect.any(String)})
      expect((await h.push({}, undefined, [path])).status).toBe(400)
      expect((await h.push({'fine.md': 'x'}, {[path]: 1})).status).toBe(400)
      const pulled = await h.call('POST', '/api/memory/pull', {files: [path]})
      expect(pulled.status).toBe(400)
      expect(pulled.body.error).toBe('path_refused')
      await unchanged()
    })

    it('refuses with 422 a push holding a secret or personal data, from any client, storing nothing of it', async () => {
      const {h, unchanged} = await seeded()
      const token = fakeGithubToken()
      // A client other than jarvis: a plain protocol request, no scan of its own before it sends.
      const pushed = await h.push({'notes/ci.md': `# CI\n\nthe release job uses ${token}\n`, 'fine.md': 'fine\n', 'people.md': `ask ${['ana', 'acme-corp.io'].join('@')}\n`})
      expect(pushed.status).toBe(422)
      expect(pushed.body).toMatchObject({error: 'sensitive', field: 'body/files', path: 'notes/ci.md', paths: ['notes/ci.md', 'people.md']})
      expect(pushed.body.message).toBe(
        'refused: found a GitHub token in .memory/notes/ci.md at line 3, column 22; an e-mail address in .memory/people.md at line 1, column 5. Secrets and personal data are never stored in the shared memory; remove them and write again; nothing was written.',
      )
      expect(pushed.body.findings).toEqual([
        {kind: 'secret', rule: 'github-token', field: '.memory/notes/ci.md', line: 3, column: 22},
        {kind: 'email', rule: 'email', field: '.memory/people.md', line: 1, column: 5},
      ])
      expect(pushed.text).not.toContain(token)
      await unchanged()
      // An edit of a stored file is scanned the same way: the stored text stays.
      expect((await h.push({'keep.md': `keep\n${token}\n`}, {'keep.md': 1})).status).toBe(422)
      await unchanged()
      const pulled = await h.call('POST', '/api/memory/pull', {files: ['keep.md']})
      expect(pulled.body.files['keep.md'].content).toBe('keep\n')
      const audit = await h.call('GET', '/api/audit')
      expect(audit.body.entries.slice(0, 2)).toMatchObject([
        {kind: 'refused', agent: 'claude', paths: ['keep.md'], detail: 'a push of keep.md refused: it held a GitHub token in .memory/keep.md at line 2, column 1'},
        {kind: 'refused', agent: 'claude', paths: ['notes/ci.md', 'people.md']},
      ])
      expect(audit.text).not.toContain(token)
    })

    it('answers 413 for a body over the limit and for a file over the per-file limit', async () => {
      const {h, unchanged} = await seeded()
      const huge = await h.push({'big.md': 'x'.repeat(70 * 1024)})
      expect(huge.status).toBe(413)
      expect(huge.body).toMatchObject({error: 'too_large', limit: 64 * 1024})
      const bigFile = await h.push({'big.md': 'x'.repeat(20 * 1024), 'small.md': 's'})
      expect(bigFile.status).toBe(413)
      expect(bigFile.body).toMatchObject({error: 'too_large', path: 'big.md', limit: 16 * 1024})
      await unchanged()
    })

    it('answers 400 for a body that is not JSON, saying where it breaks', async () => {
      const {h, unchanged} = await seeded()
      const broken = await h.call('POST', '/api/memory/push', undefined, {raw: '{"files": {"a.md": "x",}}'})
      expect(broken.status).toBe(400)
      expect(broken.body).toMatchObject({error: 'bad_json', field: 'body', message: expect.stringMatching(/line 1, column \d+/)})
      const empty = await h.call('POST', '/api/memory/push', undefined, {raw: ''})
      expect(empty.status).toBe(400)
      expect(empty.body.error).toBe('bad_json')
      const proto = await h.call('POST', '/api/memory/push', undefined, {raw: '{"files": {}, "__proto__": {"x": 1}}'})
      expect(proto.status).toBe(400)
      expect(proto.body.error).toBe('bad_json')
      const text = await h.call('POST', '/api/memory/push', undefined, {raw: 'files=a', contentType: 'text/plain'})
      expect(text.status).toBe(415)
      expect(text.body.error).toBe('unsupported_media_type')
      await unchanged()
    })

    it('answers 400 naming the field for a body of the wrong shape', async () => {
      const {h, unchanged} = await seeded()
      const cases: [unknown, string][] = [
        [{files: 'a.md'}, 'body/files'],
        [{files: {'jarvis/claude.md': 3}}, 'body/files/jarvis/claude.md'],
        [{files: {}, base: {'a.md': 'one'}}, 'body/base/a.md'],
        [{files: {}, base: {'a.md': -1}}, 'body/base/a.md'],
        [{files: {}, deletes: 'a.md'}, 'body/deletes'],
        [[], 'body'],
      ]
      for (const [body, field] of cases) {
        const answer = await h.call('POST', '/api/memory/push', body)
        expect(answer.status, JSON.stringify(body)).toBe(400)
        expect(answer.body).toMatchObject({error: 'bad_request', field})
        expect(answer.body.message).toContain(field)
      }
      const pull = await h.call('POST', '/api/memory/pull', {})
      expect(pull.body).toMatchObject({error: 'bad_request', field: 'body/files', message: 'body/files is required'})
      const both = await h.push({'a.md': 'x'}, undefined, ['a.md'])
      expect(both.status).toBe(400)
      await unchanged()
    })

    it('refuses a .json file whose content is not JSON, naming the path and line', async () => {
      const {h, unchanged} = await seeded()
      const answer = await h.push({'projects.json': '{\n  "a": 1,\n}\n', 'ok.md': 'fine'})
      expect(answer.status).toBe(400)
      expect(answer.body).toMatchObject({error: 'invalid_content', path: 'projects.json', message: expect.stringMatching(/projects\.json.*line 3/)})
      await unchanged()
    })

    it('refuses a NUL character in a file (not text, and PostgreSQL cannot store it), on every backend alike', async () => {
      const {h, unchanged} = await seeded()
      const answer = await h.push({'notes/nul.md': 'before\u0000after\n', 'ok.md': 'fine'})
      expect(answer.status).toBe(400)
      expect(answer.body).toMatchObject({error: 'invalid_content', path: 'notes/nul.md', message: expect.stringContaining('NUL character (U+0000)')})
      await unchanged()
    })

    it('answers 401 without a token or with a wrong one, before reading the body', async () => {
      const {h, unchanged} = await seeded()
      for (const authorization of [null, 'Bearer nope-nope-nope', 'Basic abc', `Bearer ${h.tokens.claude}x`, 'Bearer']) {
        const answer = await call(h.server.url, null, 'POST', '/api/memory/push', {files: {'x.md': 'x'}}, {authorization})
        expect(answer.status, String(authorization)).toBe(401)
        expect(answer.body.error).toBe('unauthorized')
        expect(answer.headers['www-authenticate']).toMatch(/^Bearer/)
        expect((await call(h.server.url, null, 'GET', '/api/memory/status', undefined, {authorization})).status).toBe(401)
      }
      // the token scheme is case-insensitive
      const lower = await call(h.server.url, null, 'GET', '/api/memory/status', undefined, {authorization: `bearer ${h.tokens.claude}`})
      expect(lower.status).toBe(200)
      // query tokens are only for the WebSocket
      expect((await call(h.server.url, null, 'GET', `/api/memory/status?token=${h.tokens.claude}`)).status).toBe(401)
      await unchanged()
    })

    it('answers unknown routes with a JSON 404', async () => {
      const h = await harness(cleanup)
      const answer = await h.call('GET', '/api/nothing')
      expect(answer.status).toBe(404)
      expect(answer.body.error).toBe('not_found')
    })
  })

  describe('logging', () => {
    it('never logs a query token', () => {
      expect(redactUrl('/ws/memory?token=abc&x=1')).toBe('/ws/memory?token=[redacted]&x=1')
      expect(redactUrl('/ws/memory?a=1&TOKEN=abc')).toBe('/ws/memory?a=1&TOKEN=[redacted]')
      expect(redactUrl('/api/memory/status?since=3')).toBe('/api/memory/status?since=3')
    })

    // The per-request logger and the request line are made cheaply (app.ts): the lines must stay what they were.
    it('writes one line per request at info, with its id, and none at warn', async () => {
      const linesAt = async (logLevel: 'info' | 'warn') => {
        const stream = new PassThrough()
        const chunks: string[] = []
        stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString('utf8')))
        const h = await harness(cleanup, {logLevel, logStream: stream})
        expect((await h.status(0)).status).toBe(200)
        expect((await h.call('GET', '/api/memory/status?since=x')).status).toBe(400)
        await h.stop()
        return chunks.join('').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>)
      }
      const info = await linesAt('info')
      const requests = info.filter((line) => line.msg === 'request')
      expect(requests).toEqual([
        expect.objectContaining({level: 30, reqId: expect.any(String), method: 'GET', url: '/api/memory/status?since=0', status: 200, workspace: 'default', agent: 'claude', ms: expect.any(Number)}),
        expect.objectContaining({level: 30, reqId: expect.any(String), method: 'GET', url: '/api/memory/status?since=x', status: 400, agent: 'claude'}),
      ])
      expect(requests[0].reqId).not.toBe(requests[1].reqId)
      // A line written while the request runs carries the same id as its request line.
      const refused = info.find((line) => line.msg === 'request refused')
      expect(refused).toMatchObject({reqId: requests[1].reqId, error: 'bad_request'})
      expect((await linesAt('warn')).filter((line) => line.msg === 'request' || line.msg === 'request refused')).toEqual([])
    })
  })
})
