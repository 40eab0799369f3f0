/**
 * The audit log on both backends: a push and a stale-base conflict are recorded by the commit itself; a refused
 * secret (without the secret), a supersede, a cleanup, a janitor mask, a project switch and a key are recorded by
 * the server; `GET /api/audit` gives a token its own entries and an admin key everyone's, newest first, a page at a
 * time; AUDIT_APPENDED reaches the same readers live; an older database gains the table when it is opened.
 */
import {join} from 'node:path'

import Database from 'better-sqlite3'
import pg from 'pg'
import {afterEach, describe, expect, it} from 'vitest'

import {createKey, revokeKey} from '../../src/server/keys.js'
import {openStorage} from '../../src/server/storage/open.js'
import {SQLITE_FILE_NAME} from '../../src/server/storage/sqlite.js'
import type {AuditEntry, CommitRequest} from '../../src/server/storage/types.js'
import {BACKENDS, databaseFor, freshTarget, openFresh, useBackend} from '../helpers/backends.js'
import {fakeGithubToken} from '../files/helpers.js'
import {Cleanup, call, connectWs, harness} from './helpers.js'
import {refusedDetail} from '../../src/server/audit-service.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

const NOW = '2026-02-02T10:00:00.000Z'

/** A valid memory event without agent_id (the server takes it from the token). */
function event(over: Record<string, unknown>): Record<string, unknown> {
  return {run_id: 'run-audit', scope: 'global', kind: 'fact', confidence: 'high', source: {system: 'cli'}, ttl_days: 0, ...over}
}

function push(writes: Record<string, string>, base: Record<string, number | null> = {}): CommitRequest {
  return {writes: new Map(Object.entries(writes)), deletes: [], base: new Map(Object.entries(base)), audit: {kind: 'push'}}
}

describe.each(BACKENDS)('the audit log on %s', (backend) => {
  useBackend(backend)

  it('a commit records its push or its conflict in the same transaction; a commit that changes nothing records nothing', async () => {
    const storage = await openFresh(backend, cleanup)
    const first = await storage.commit(push({'a.md': 'A\n', 'b.md': 'B\n'}), 'claude', NOW)
    expect(first.audit).toMatchObject([{kind: 'push', agent: 'claude', paths: ['a.md', 'b.md'], count: 2, at: NOW}])
    const stale = await storage.commit(push({'a.md': 'A2\n'}, {'a.md': null}), 'gemini', NOW)
    expect(stale).toMatchObject({ok: false, stale: ['a.md'], audit: [{kind: 'conflict', agent: 'gemini', paths: ['a.md'], count: 1}]})
    // The same content again changes nothing: no entry. A commit without `audit` (sync-task) records none either.
    expect((await storage.commit(push({'a.md': 'A\n'}), 'claude', NOW)).audit).toBeUndefined()
    await storage.commit({writes: new Map([['c.md', 'C\n']]), deletes: [], base: new Map()}, 'claude', NOW)

    const all = await storage.queryAudit({limit: 10})
    expect(all.map((entry) => entry.kind)).toEqual(['conflict', 'push'])
    expect(all[0].seq).toBeGreaterThan(all[1].seq)
    expect(all).toEqual([...stale.audit!, ...first.audit!])
  })

  it('a push of files the client merged records the conflict before the push, naming only merged paths it wrote', async () => {
    const storage = await openFresh(backend, cleanup)
    await storage.commit(push({'a.md': 'A\n', 'b.md': 'B\n'}), 'claude', NOW)
    const request = push({'a.md': 'A merged\n', 'b.md': 'B\n'}, {'a.md': 1, 'b.md': 1})
    const merged = await storage.commit({...request, audit: {kind: 'push', merged: ['a.md', 'b.md', 'elsewhere.md']}}, 'gemini', NOW)
    expect(merged.audit).toMatchObject([
      {kind: 'conflict', agent: 'gemini', paths: ['a.md'], count: 1, detail: expect.stringContaining('merged three-way')},
      {kind: 'push', agent: 'gemini', paths: ['a.md'], count: 1},
    ])
    expect((await storage.queryAudit({agent: 'gemini', limit: 5})).map((entry) => entry.kind)).toEqual(['push', 'conflict'])
  })

  it('filters by agent, kind and time, and pages with before; lists keep their order and are capped', async () => {
    const storage = await openFresh(backend, cleanup)
    const many = Array.from({length: 250}, (_, index) => `p${String(index).padStart(3, '0')}`)
    const entries = [
      {at: '2026-02-01T00:00:00.000Z', agent: 'claude', kind: 'refused' as const, paths: [], event_ids: [], count: 1, detail: 'one'},
      {at: '2026-02-02T00:00:00.000Z', agent: 'gemini', kind: 'forget' as const, paths: [], event_ids: ['e2', 'e1'], count: 2, detail: 'two'},
      {at: '2026-02-03T00:00:00.000Z', agent: 'claude', kind: 'forget' as const, paths: many, event_ids: [], count: 250, detail: 'three'},
    ]
    const stored = await storage.appendAudit(entries)
    expect(stored.map((entry) => entry.detail)).toEqual(['one', 'two', 'three'])
    expect(stored[1].event_ids).toEqual(['e2', 'e1'])
    expect(stored[2].paths).toHaveLength(200)
    expect(stored[2].count).toBe(250)
    const details = (rows: AuditEntry[]) => rows.map((entry) => entry.detail)
    expect(details(await storage.queryAudit({agent: 'claude', limit: 10}))).toEqual(['three', 'one'])
    expect(details(await storage.queryAudit({kind: 'forget', limit: 10}))).toEqual(['three', 'two'])
    expect(details(await storage.queryAudit({since: '2026-02-02T00:00:00.000Z', limit: 10}))).toEqual(['three', 'two'])
    expect(details(await storage.queryAudit({before: stored[2].seq, limit: 1}))).toEqual(['two'])
  })

  it('an older database gains the audit table when the server opens it, and keeps what it held', async () => {
    const target = await freshTarget(backend, cleanup)
    const first = await openStorage(target)
    await first.commit(push({'kept.md': 'K\n'}), 'claude', NOW)
    await first.close()
    // Back to schema 5, as a server from before the audit log left it.
    const downgrade = ['DROP TABLE audit_log', 'DELETE FROM schema_migrations WHERE version = 6']
    if (target.databaseUrl) {
      const client = new pg.Client({connectionString: target.databaseUrl})
      await client.connect()
      for (const sql of downgrade) await client.query(sql)
      await client.end()
    } else {
      const db = new Database(join(target.dataDir!, SQLITE_FILE_NAME))
      for (const sql of downgrade) db.exec(sql)
      db.close()
    }
    const again = await openStorage(target)
    cleanup.add(() => again.close())
    expect((await again.read(['kept.md'])).get('kept.md')?.content).toBe('K\n')
    expect(await again.queryAudit({limit: 10})).toEqual([])
    expect((await again.commit(push({'new.md': 'N\n'}), 'claude', NOW)).audit).toMatchObject([{kind: 'push', paths: ['new.md']}])
  })

  it('the server records what its doors refused or changed; a token reads its own entries, an admin key every one, live', async () => {
    const h = await harness(cleanup)
    const storageTarget = {dataDir: h.dataDir, databaseUrl: await databaseFor(h.dataDir)}
    const {token: admin} = await createKey({...storageTarget, agent: 'openclaw', role: 'admin'})
    const claudeWs = await connectWs(h.server.wsUrl, h.tokens.claude)
    const geminiWs = await connectWs(h.server.wsUrl, h.tokens.gemini)
    cleanup.add(() => claudeWs.close())
    cleanup.add(() => geminiWs.close())

    expect((await h.push({'plan.md': 'one\n'})).status).toBe(200)
    expect((await h.push({'plan.md': 'two\n'}, {'plan.md': null}, undefined, 'gemini')).status).toBe(409)
    const secret = fakeGithubToken()
    const refused = await h.call('POST', '/v1/memory/append', event({dedupe_key: 'fact:ci', content_md: `The CI token is ${secret}`}))
    expect(refused.status).toBe(422)
    const edit = await h.call('POST', '/api/memory/write', {path: 'notes.md', content: `token ${secret}\n`, base: null})
    expect(edit.status).toBe(422)
    const old = await h.call('POST', '/v1/memory/append', event({dedupe_key: 'fact:db', content_md: 'The database is SQLite.'}))
    const replacing = await h.call('POST', '/v1/memory/append', event({kind: 'deprecation', dedupe_key: 'fact:db', content_md: 'Withdrawn.', supersedes: old.body.event_id}))
    expect(replacing.status).toBe(200)
    const cleaned = await h.call('POST', '/v1/memory/cleanup', {older_than_days: 0, dry_run: false, event_ids: [old.body.event_id]})
    expect(cleaned.body.deleted).toEqual([old.body.event_id])
    expect((await h.call('POST', '/api/projects/active', {projectId: 'atlas'})).status).toBe(200)

    const mine = await h.call('GET', '/api/audit')
    expect(mine.status).toBe(200)
    expect(mine.body.entries.map((entry: AuditEntry) => entry.kind)).toEqual(['switch-project', 'forget', 'supersede', 'refused', 'refused', 'push'])
    expect(mine.body.entries.every((entry: AuditEntry) => entry.agent === 'claude')).toBe(true)
    const [, forget, supersede, editRefused, appendRefused] = mine.body.entries as AuditEntry[]
    expect(forget.event_ids).toEqual([old.body.event_id])
    expect(supersede.event_ids).toEqual([replacing.body.event_id, old.body.event_id])
    expect(editRefused).toMatchObject({paths: ['notes.md']})
    expect(editRefused.detail).toContain('GitHub token')
    expect(appendRefused.detail).toContain('content_md')
    // Never the secret itself: not in the answer, not in the stored rows.
    expect(mine.text).not.toContain(secret)

    // gemini sees its conflict and nothing of claude's; naming claude needs an admin key.
    const geminis = await h.call('GET', '/api/audit', undefined, {agent: 'gemini'})
    expect(geminis.body.entries).toMatchObject([{kind: 'conflict', agent: 'gemini', paths: ['plan.md']}])
    const forbidden = await h.call('GET', '/api/audit?agent=claude', undefined, {agent: 'gemini'})
    expect(forbidden.status).toBe(403)
    expect(forbidden.body.message).toContain('admin key')
    const adminView = await call(h.server.url, admin, 'GET', '/api/audit?kind=conflict')
    expect(adminView.body.entries).toMatchObject([{agent: 'gemini', kind: 'conflict'}])
    const everyone = await call(h.server.url, admin, 'GET', '/api/audit?limit=3')
    expect(everyone.body.entries.map((entry: AuditEntry) => entry.kind)).toEqual(['switch-project', 'forget', 'supersede'])
    const older = await call(h.server.url, admin, 'GET', `/api/audit?limit=50&before=${everyone.body.next_before}`)
    expect(older.body.entries.map((entry: AuditEntry) => entry.kind)).toEqual(['refused', 'refused', 'conflict', 'push', 'key'])
    expect(older.body.next_before).toBeNull()
    expect((await h.call('GET', '/api/audit?kind=pull')).body.message).toContain('querystring/kind must be one of')
    expect((await h.call('GET', '/api/audit?limit=0')).status).toBe(400)
    expect((await h.call('GET', '/api/audit?since=yesterday')).body).toMatchObject({error: 'bad_request', field: 'querystring/since'})
    expect((await h.call('GET', `/api/audit?since=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`)).body.entries).toEqual([])

    // Live: each agent's socket hears its own entries only.
    await claudeWs.next((m) => m.type === 'AUDIT_APPENDED' && m.kind === 'switch-project')
    await geminiWs.next((m) => m.type === 'AUDIT_APPENDED' && m.kind === 'conflict')
    expect(geminiWs.messages.filter((m) => m.type === 'AUDIT_APPENDED').map((m) => m.agent)).toEqual(['gemini'])

    // A key revoked is recorded once.
    const {key} = await createKey({...storageTarget, agent: 'gemini', role: 'read'})
    await revokeKey({...storageTarget, id: key.id})
    await expect(revokeKey({...storageTarget, id: key.id})).resolves.toMatchObject({key: {id: key.id}, warnings: []})
    const keys = await call(h.server.url, admin, 'GET', '/api/audit?kind=key&agent=gemini')
    expect(keys.body.entries.map((entry: AuditEntry) => entry.detail)).toEqual([`key ${key.id} revoked`, expect.stringContaining(`key ${key.id} created (role read`)])

    // The janitor masks an event that got in without the scan (an import) and records it, by rule, without the text.
    const side = await openStorage(storageTarget)
    const [leaked] = await side.importEvents([
      {agent_id: 'claude', run_id: 'r1', scope: 'global', kind: 'fact', dedupe_key: 'fact:leak', confidence: 'high', content_md: `leaked ${secret}`, source: {}, supersedes: null, ttl_days: 0, created_at: NOW, identity: 'leak-identity', content_hash: 'leak-hash'},
    ])
    await side.close()
    const consolidated = await h.call('POST', '/v1/memory/consolidate', {})
    expect(consolidated.body.masked).toMatchObject([{event_id: leaked}])
    const masks = await h.call('GET', '/api/audit?kind=mask')
    expect(masks.body.entries).toMatchObject([{agent: 'claude', kind: 'mask', event_ids: [leaked], count: 1}])
    expect(masks.body.entries[0].detail).toContain('github-token')
    expect(masks.text).not.toContain(secret)
  })
})

describe('a refused write in the audit log', () => {
  it('names the top-level field only: a nested key is the writer\'s text, which may itself be a secret', () => {
    const token = fakeGithubToken()
    const detail = refusedDetail('append', [{kind: 'email', rule: 'email', field: `source.${token}`, line: 1, column: 1}])
    expect(detail).toContain('in source at line 1')
    expect(detail).not.toContain(token)
  })
})
