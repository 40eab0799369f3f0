/**
 * A snapshot's newest events of a scope on PostgreSQL (src/server/storage/postgres-events.ts, SNAPSHOT_SQL) are read
 * through the index of live events: a scope with few events among a long log of others is not found by walking the
 * whole log backwards, which made every snapshot slower as the log grew (a 30-minute load run spent three times
 * the database's CPU per request by its end). What the test asserts is what PostgreSQL's own EXPLAIN ANALYZE says the
 * statement read, never a time.
 */
import {createHash} from 'node:crypto'

import pg from 'pg'
import {afterEach, describe, expect, it} from 'vitest'

import {PostgresStorage} from '../../src/server/storage/postgres.js'
import {SNAPSHOT_SQL} from '../../src/server/storage/postgres-events.js'
import type {AppendEventRequest} from '../../src/server/storage/types.js'
import {freshDatabase} from '../helpers/postgres.js'
import {Cleanup} from './temp.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

function globalFact(n: number): AppendEventRequest {
  const event = {agent_id: 'claude', run_id: 'run-global', scope: 'global', kind: 'fact', dedupe_key: `fact:global-${n}`, confidence: 'high', content_md: `global fact ${n}`, source: {system: 'cli'}, supersedes: null, ttl_days: 0} as const
  return {event, identity: sha(`global ${n}`), contentHash: sha(event.content_md), visible: {exact: [], prefixes: ['']}, now: '2026-12-01T09:00:00.000Z', scanned: true}
}

interface PlanNode {
  'Relation Name'?: string
  'Actual Rows': number
  'Actual Loops': number
  'Rows Removed by Filter'?: number
  Plans?: PlanNode[]
}

/** The rows of memory_events the plan read: those it returned and those it read and dropped, in every loop. */
function eventRowsRead(node: PlanNode): number {
  const own = node['Relation Name'] === 'memory_events' ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'] : 0
  return own + (node.Plans ?? []).reduce((sum, child) => sum + eventRowsRead(child), 0)
}

describe('the snapshot on PostgreSQL', () => {
  it('finds the newest events of a scope with few among 20,000 of another without reading the others', async () => {
    const url = await freshDatabase()
    const storage = await PostgresStorage.open(url)
    cleanup.add(() => storage.close())
    const client = new pg.Client({connectionString: url})
    await client.connect()
    cleanup.add(() => client.end())

    // Three global facts first, then a busy project's log after them: newest first, a walk back to them passes it all.
    for (const n of [1, 2, 3]) expect((await storage.appendEvent(globalFact(n))).status).toBe('created')
    await client.query(`
      INSERT INTO memory_events (event_id, agent_id, run_id, scope, kind, dedupe_key, confidence, content_md, source, created_at, content_hash, identity, scanned, fts)
      SELECT 'ev_busy_' || g, 'gemini', 'run-busy', 'project:busy', 'fact', 'fact:busy-' || (g % 50), 'high', 'busy note ' || g, '{"system":"cli"}',
             '2026-12-01T10:00:00.000Z', md5(g::text), 'busy-' || g, 1, to_tsvector('simple', 'busy note')
      FROM generate_series(1, 20000) AS g`)
    await client.query('ANALYZE memory_events')

    // The newest 20 of each scope (the snapshot then takes the newest 20 of them all): in no particular order.
    const newestFirst = <E extends {seq: number}>(events: E[]) => [...events].sort((a, b) => b.seq - a.seq)
    const rows = await storage.snapshotEvents(['global', 'project:busy'], 20, 200)
    expect(newestFirst(rows.recent).map((event) => event.scope)).toEqual([...Array.from({length: 20}, () => 'project:busy'), 'global', 'global', 'global'])
    const global = await storage.snapshotEvents(['global'], 20, 200)
    expect(newestFirst(global.recent).map((event) => event.dedupe_key)).toEqual(['fact:global-3', 'fact:global-2', 'fact:global-1'])

    const explained = await client.query<{'QUERY PLAN': [{Plan: PlanNode}]}>(`EXPLAIN (ANALYZE, FORMAT JSON) ${SNAPSHOT_SQL}`, [['global', 'project:busy'], 200, 20])
    const read = eventRowsRead(explained.rows[0]['QUERY PLAN'][0].Plan)
    // The 20 newest busy events, the 3 global ones and their 3 pins (the busy ones, written by hand, have none); not the 20,000.
    expect(read).toBeLessThan(200)
  })
})
