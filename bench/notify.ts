/**
 * Where PostgreSQL's LISTEN/NOTIFY — how `jarvis serve` processes tell each other's WebSocket clients what changed —
 * stops scaling: notifications a second one publisher gets through, and how long they take to arrive, by payload
 * size, by the number of listening connections (one per server process), with and without waiting for the WAL flush
 * at each NOTIFY's commit, and with broadcasts grouped into one payload as the server sends them (postgres.ts relay).
 * On a durable PostgreSQL (fsync and synchronous_commit on), on this machine's cores. docs/decisions/scale.md reads it.
 */
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import pg from 'pg'

import {freshDatabase, startPostgresServer} from '../test/helpers/postgres.js'
import {Histogram, treeCpuSeconds} from './load-stats.js'
import {ms, table, type BenchSection} from './stats.js'

interface NotifyCase {
  /** Bytes of each payload. */
  payload: number
  listeners: number
  /** The publisher's NOTIFYs wait for the WAL flush at commit (synchronous_commit on) or not. */
  synchronous: boolean
  /** Broadcasts of ~200 bytes per payload (1: one NOTIFY per broadcast). */
  grouped: number
}

interface NotifyResult extends NotifyCase {
  notifiesPerSecond: number
  broadcastsPerSecond: number
  latency: Histogram
  postgresCpu: number
}

const CHANNEL = 'bench_notify'

async function measureCase(url: string, postgresPid: number, test: NotifyCase, seconds: number): Promise<NotifyResult> {
  const listeners: pg.Client[] = []
  const publisher = new pg.Client({connectionString: url})
  const latency = new Histogram()
  try {
    for (let n = 0; n < test.listeners; n++) {
      const client = new pg.Client({connectionString: url})
      await client.connect()
      await client.query(`LISTEN ${CHANNEL}`)
      // Each payload starts with the time it was sent: its delay is read when the first listener gets it.
      client.on('notification', (message) => {
        if (n === 0) latency.record(performance.now() - Number(message.payload?.slice(0, message.payload.indexOf(' '))))
      })
      listeners.push(client)
    }
    await publisher.connect()
    await publisher.query(`SET synchronous_commit = ${test.synchronous ? 'on' : 'off'}`)
    const padding = 'x'.repeat(Math.max(0, test.payload - 24))
    const cpuBefore = await treeCpuSeconds(postgresPid)
    const started = performance.now()
    const deadline = started + seconds * 1000
    let sent = 0
    // Two senders on the one connection: each NOTIFY leaves as soon as the one before is answered.
    await Promise.all(
      [0, 1].map(async () => {
        while (performance.now() < deadline) {
          await publisher.query('SELECT pg_notify($1, $2)', [CHANNEL, `${performance.now().toFixed(3)} ${padding}`])
          sent++
        }
      }),
    )
    const elapsed = (performance.now() - started) / 1000
    const postgresCpu = ((await treeCpuSeconds(postgresPid)) - cpuBefore) / elapsed
    // What is still on its way arrives before the next case begins.
    const until = performance.now() + 5000
    while (latency.count < sent && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 20))
    return {...test, notifiesPerSecond: sent / elapsed, broadcastsPerSecond: (sent * test.grouped) / elapsed, latency, postgresCpu}
  } finally {
    await publisher.end().catch(() => {})
    await Promise.all(listeners.map((client) => client.end().catch(() => {})))
  }
}

export async function runNotify(seconds = 3): Promise<NotifyResult[]> {
  const postgres = await startPostgresServer({durable: true})
  try {
    const url = await freshDatabase(postgres.adminUrl)
    const cases: NotifyCase[] = [
      {payload: 200, listeners: 1, synchronous: true, grouped: 1},
      {payload: 200, listeners: 1, synchronous: false, grouped: 1},
      {payload: 2000, listeners: 1, synchronous: false, grouped: 1},
      {payload: 7900, listeners: 1, synchronous: false, grouped: 1},
      {payload: 200, listeners: 8, synchronous: false, grouped: 1},
      {payload: 200, listeners: 32, synchronous: false, grouped: 1},
      {payload: 7900, listeners: 8, synchronous: false, grouped: 35},
    ]
    const results: NotifyResult[] = []
    for (const test of cases) results.push(await measureCase(url, postgres.pid, test, seconds))
    return results
  } finally {
    await postgres.stop()
  }
}

export async function benchNotify(): Promise<BenchSection> {
  const results = await runNotify()
  const markdown = [
    'One publisher connection sending `pg_notify` back to back, to listening connections of their own (a `jarvis serve` process has one), on a durable PostgreSQL on the same cores. Delay: from sending to the first listener receiving it, median / p99. A grouped payload carries 35 broadcasts of about 200 bytes, as the server sends a burst.',
    '',
    table(
      ['payload', 'listeners', 'commit waits for the WAL flush', 'broadcasts per payload', 'NOTIFY/s', 'broadcasts/s', 'delay', 'PostgreSQL CPU'],
      results.map((result) => [
        `${result.payload} B`,
        String(result.listeners),
        result.synchronous ? 'yes' : 'no',
        String(result.grouped),
        result.notifiesPerSecond.toFixed(0),
        result.broadcastsPerSecond.toFixed(0),
        `${ms(result.latency.percentile(50))} / ${ms(result.latency.percentile(99))}`,
        result.postgresCpu.toFixed(2),
      ]),
    ),
  ].join('\n')
  return {title: 'LISTEN/NOTIFY between server processes: where it stops', markdown}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`${(await benchNotify()).markdown}\n`)
}
