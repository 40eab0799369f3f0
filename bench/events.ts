/**
 * The shared event log on `jarvis serve` (issue 4): appends per second from 4 agents at once over loopback
 * HTTP, and snapshot latency with 100k and 1M events stored. The log is seeded straight through the storage
 * (one bulk import, not HTTP); snapshots are then timed over HTTP like an agent reads them.
 */
import {createHash} from 'node:crypto'
import {rm} from 'node:fs/promises'
import {join} from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import {Agent as HttpAgent, request} from 'undici'

import {findSensitive} from '../src/events/redact.js'
import {startServer, type RunningServer} from '../src/server/start.js'
import {openSqliteStorage} from '../src/server/storage/sqlite.js'
import type {ImportedEvent} from '../src/server/storage/types.js'
import {BACKTRACKING_TEXTS} from '../test/events/fakes.js'
import {median, ms, table, type BenchSection} from './stats.js'

const AGENTS = ['chatgpt', 'claude', 'gemini', 'openclaw'] as const
const tokens = Object.fromEntries(AGENTS.map((agent) => [`bench-${agent}-${process.pid}-${Date.now()}`, agent]))
const tokenOf = (agent: string) => Object.keys(tokens).find((token) => tokens[token] === agent) as string

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

/** A realistic event body: a few short lines, a key out of a few hundred, mostly shared scopes. */
function eventBody(agent: string, i: number): Record<string, unknown> {
  return {
    run_id: `run-${agent}-${Math.floor(i / 5)}`,
    scope: i % 10 === 0 ? `agent:${agent}` : i % 3 === 0 ? 'project:atlas' : 'global',
    kind: (['decision', 'config', 'fact', 'bug', 'workflow'] as const)[i % 5],
    dedupe_key: `topic:item_${i % 300}`,
    confidence: i % 7 === 0 ? 'low' : 'high',
    content_md: `Item ${i} settled by ${agent}: keep the gateway as the single source of truth.\nReason: one place to read; since 2026-02-02.`,
    source: {system: 'cli', thread_id: `thr_${i % 97}`},
    ttl_days: i % 4 === 0 ? 90 : 0,
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

/** `perAgent` appends by each of the 4 agents at once, each over its own `connections` keep-alive connections. */
async function appendRun(server: RunningServer, perAgent: number, connections: number, round: string): Promise<{seconds: number; latencies: number[]}> {
  const dispatchers = AGENTS.map(() => new HttpAgent({connections, pipelining: 1}))
  const latencies: number[] = []
  const started = performance.now()
  try {
    await Promise.all(
      AGENTS.map(async (agent, n) => {
        const headers = {authorization: `Bearer ${tokenOf(agent)}`, 'content-type': 'application/json'}
        let next = 0
        // `connections` requests in flight per agent, each starting the next when answered.
        const lane = async () => {
          while (next < perAgent) {
            const i = next++
            const sent = performance.now()
            const response = await request(`${server.url}/v1/memory/append`, {
              method: 'POST',
              headers: {...headers, 'idempotency-key': `${round}-${agent}-${i}`},
              body: JSON.stringify({...eventBody(agent, i), run_id: `${round}-${agent}-${Math.floor(i / 5)}`}),
              dispatcher: dispatchers[n],
            })
            const answer = (await response.body.json()) as {status?: string}
            if (response.statusCode !== 200 || answer.status !== 'created') throw new Error(`append failed: ${response.statusCode} ${JSON.stringify(answer)}`)
            latencies.push(performance.now() - sent)
          }
        }
        await Promise.all(Array.from({length: connections}, lane))
      }),
    )
  } finally {
    await Promise.all(dispatchers.map((dispatcher) => dispatcher.close()))
  }
  return {seconds: (performance.now() - started) / 1000, latencies}
}

/** Imports events `from`..`to` straight through the storage, in chunks of one transaction each. */
async function seed(dataDir: string, from: number, to: number): Promise<number> {
  const storage = openSqliteStorage(dataDir)
  const started = performance.now()
  try {
    const chunk = 20_000
    const base = Date.now() - 10_000_000 * 10
    for (let start = from; start < to; start += chunk) {
      const events: ImportedEvent[] = []
      for (let i = start; i < Math.min(to, start + chunk); i++) {
        const agent = AGENTS[i % 4]
        const body = eventBody(agent, i)
        const content = body.content_md as string
        events.push({
          agent_id: agent,
          run_id: body.run_id as string,
          scope: body.scope as string,
          kind: body.kind as string,
          dedupe_key: `topic:item_${i % 2000}`,
          confidence: body.confidence as 'high' | 'low',
          content_md: content,
          source: body.source as Record<string, unknown>,
          supersedes: null,
          ttl_days: body.ttl_days as number,
          created_at: new Date(base + i * 10).toISOString(),
          identity: sha(`${agent}\u0000${i}`),
          content_hash: sha(content),
          scanned: true,
        })
      }
      await storage.importEvents(events)
    }
  } finally {
    await storage.close()
  }
  return performance.now() - started
}

async function snapshotLatencies(server: RunningServer, times: number): Promise<number[]> {
  const dispatcher = new HttpAgent({connections: 1})
  const headers = {authorization: `Bearer ${tokenOf('claude')}`}
  const url = `${server.url}/v1/memory/snapshot?agent_id=claude&scopes=global,project:atlas,agent:claude&limit_recent=50`
  const durations: number[] = []
  try {
    for (let i = 0; i < times + 5; i++) {
      const started = performance.now()
      const response = await request(url, {headers, dispatcher})
      const body = (await response.body.json()) as {recent_events?: unknown[]}
      if (response.statusCode !== 200 || body.recent_events?.length !== 50) throw new Error(`snapshot failed: ${response.statusCode}`)
      if (i >= 5) durations.push(performance.now() - started)
    }
  } finally {
    await dispatcher.close()
  }
  return durations
}

/** A typical event's text, 300 characters with dates, ids and versions the scan must not take for secrets. */
const TYPICAL_EVENT = `Decision: the Telegram bot token lives in ~/claude-telegram-bot/.env since 2026-02-02 (run 550e8400-e29b-41d4-a716-446655440000). Reason: env files are not synced. Impact: .env.local is gone; dedupe_key config:telegram_bot_token_location; token budget 4000; v1.2.3 at 2026-02-02T10:00:00Z.`.slice(0, 300)

/** The secret scan of one text (every append and push pays it): median of `runs` after a warm-up. */
async function scanTime(text: string, runs: number): Promise<number> {
  for (let i = 0; i < 20; i++) await findSensitive({content_md: text})
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    await findSensitive({content_md: text})
    times.push(performance.now() - start)
  }
  return median(times)
}

export async function benchEvents(options: {perAgent?: number; sizes?: number[]} = {}): Promise<BenchSection> {
  const perAgent = options.perAgent ?? 2500
  const sizes = options.sizes ?? [100_000, 1_000_000]
  const work = join(process.env.TMPDIR ?? '/tmp', `jarvis-bench-events-${process.pid}`)
  await rm(work, {recursive: true, force: true})
  const appendRows: string[][] = []
  const snapshotRows: string[][] = []
  const scanRows = [['a typical event (300 characters)', ms(await scanTime(TYPICAL_EVENT, 500))]]
  for (const [name, text] of BACKTRACKING_TEXTS) scanRows.push([`made to backtrack: ${name} (4,000 characters)`, ms(await scanTime(text, 50))])
  try {
    for (const [connections, groupCommit] of [[1, true], [4, true], [4, false]] as const) {
      const server = await startServer({host: '127.0.0.1', port: 0, dataDir: join(work, `append-${connections}-${groupCommit}`), tokens, logLevel: 'silent', groupCommit})
      try {
        await appendRun(server, 50, connections, 'warm-up') // warm-up: JIT, secretlint's rule set, prepared statements
        const {seconds, latencies} = await appendRun(server, perAgent, connections, 'run')
        const total = perAgent * AGENTS.length
        appendRows.push([
          `4 agents × ${perAgent}, ${connections} connection${connections > 1 ? 's' : ''} each${groupCommit ? '' : ', without group commit: one synchronous=FULL transaction per append'}`,
          `${Math.round(total / seconds).toLocaleString('en-US')}/s`,
          ms(median(latencies)),
          ms(percentile(latencies, 99)),
        ])
      } finally {
        await server.close()
      }
    }
    // One log that grows: 100k events are measured, then the rest are added and measured again.
    const dataDir = join(work, 'snapshot')
    let stored = 0
    for (const size of [...sizes].sort((a, b) => a - b)) {
      const added = size - stored
      const seedMs = await seed(dataDir, stored, size)
      stored = size
      const server = await startServer({host: '127.0.0.1', port: 0, dataDir, tokens, logLevel: 'silent'})
      try {
        const durations = await snapshotLatencies(server, 50)
        snapshotRows.push([`${size.toLocaleString('en-US')} events`, ms(median(durations)), ms(percentile(durations, 95)), `${(added / 1000).toLocaleString('en-US')}k events in ${ms(seedMs)}`])
      } finally {
        await server.close()
      }
    }
  } finally {
    await rm(work, {recursive: true, force: true})
  }
  const markdown = [
    'A real `jarvis serve` on 127.0.0.1 (SQLite in WAL mode; every acknowledged append is on disk). Each append is zod-checked, scanned for secrets and personal data (secretlint and our own patterns), and stored atomically with its pin and text index. Appends that arrive together share one transaction (group commit, each in its own savepoint), and are answered once a WAL flush on a worker thread has them on disk, so the flushes are shared and the event loop never waits for the disk. The load generator runs in the same Node process as the server and shares its CPU. The number of requests in flight (agents × connections) bounds the batches.',
    '',
    table(['appends', 'throughput', 'median latency', 'p99 latency'], appendRows),
    '',
    'Snapshot (`GET /v1/memory/snapshot?scopes=global,project:atlas,agent:claude&limit_recent=50`, 2,000 keys, over HTTP, 50 runs after 5 warm-up). The log is seeded by a bulk import through the storage; the snapshot reads the pins table and the newest events by index, never the whole log:',
    '',
    table(['events stored', 'median', 'p95', 'added by bulk import'], snapshotRows),
    '',
    'The secret scan alone (secretlint and our own patterns, what every append and push runs), in process, median per text:',
    '',
    table(['text', 'scan'], scanRows),
  ].join('\n')
  return {title: 'Event log: appends and snapshots', markdown}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const sizes = process.argv.slice(2).map(Number).filter(Boolean)
  process.stdout.write(`${(await benchEvents(sizes.length ? {sizes} : {})).markdown}\n`)
}
