/**
 * PostgreSQL ends a connection in the middle of a request (a terminated backend, a failover, a restart with
 * `-m immediate`): that request fails with 503, and `jarvis serve` goes on. pg emits 'error' on a connection that
 * ends while checked out of the pool, and an 'error' nobody listens to ends the process with every request in it.
 */
import pg from 'pg'
import {afterEach, describe, expect, it} from 'vitest'

import {databaseFor, useBackend} from '../helpers/backends.js'
import {until} from '../helpers/world.js'
import {Cleanup, harness} from './helpers.js'

const cleanup = new Cleanup()
afterEach(() => cleanup.run())

function event(key: string): Record<string, unknown> {
  return {scope: 'global', kind: 'fact', dedupe_key: key, content_md: `The ${key} holds.`, confidence: 'high', run_id: 'run-dropped', source: {system: 'cli'}}
}

describe('on postgres', () => {
  useBackend('postgres')

  it('a connection PostgreSQL ends in the middle of a write fails that request with 503; the server answers the next one', async () => {
    const h = await harness(cleanup)
    const holder = new pg.Client({connectionString: await databaseFor(h.dataDir)})
    await holder.connect()
    cleanup.add(() => holder.end())
    // The event log's table locked elsewhere: the server's append waits on it, on a connection checked out of its pool.
    await holder.query('BEGIN')
    await holder.query('LOCK TABLE memory_events IN ACCESS EXCLUSIVE MODE')
    const waiting = h.call('POST', '/v1/memory/append', event('fact:dropped'))
    const backend = await until('the append to wait on the lock', async () => {
      const rows = (await holder.query<{pid: number}>("SELECT pid FROM pg_stat_activity WHERE application_name = 'jarvis serve' AND wait_event_type = 'Lock'")).rows
      return rows[0]?.pid
    })
    await holder.query('SELECT pg_terminate_backend($1)', [backend])
    const dropped = await waiting
    expect(dropped.status, dropped.text).toBe(503)
    await holder.query('ROLLBACK')

    const next = await h.call('POST', '/v1/memory/append', event('fact:after'))
    expect(next.status, next.text).toBe(200)
    const listed = await h.call('GET', '/v1/memory/events?scope=global')
    expect(listed.body.events.map((e: {dedupe_key: string}) => e.dedupe_key)).toEqual(['fact:after'])
  })
})
