/**
 * The team server under load: N protocol clients — the CLI's own HTTP client (src/protocol) and a WebSocket each —
 * on `jarvis serve` processes, all on this machine's cores with the load generator.
 *
 * Each client works in sessions, paced so that together they offer a fixed rate of requests: a session starts with a
 * snapshot of the event log, then the client "commits" an edit of its own memory file and syncs it (status since its
 * last seq, then a push on its base revision) a few times, and ends with an append (with an idempotency key). Every
 * client listens on the WebSocket of its process the whole time. The status asks for the texts of the changed files
 * as `jarvis sync` does (x-jarvis-status-texts); the server gives them only when it lists at most 64, which at this
 * rate (about 140 changed since a client's last status, on average) is rare. The clients pull nothing: the others'
 * files a syncing client would pull are left out of this load.
 *
 * Each run then checks what a team would notice: 0 lost edits (every client's file holds its last acknowledged
 * content and revision), 0 lost or duplicated events (each client's key holds each acknowledged event once), and 0
 * missed or duplicated broadcasts (every client heard MEM_UPDATE of every acknowledged push and EVENT_APPENDED of
 * every stored event, once: counted, and an XOR of their hashes compared). It reports requests per second, the
 * median and p99 of each request, how long a broadcast takes to reach a client of the writer's process and of the
 * other one, where the CPU went, and (for the soak) the servers' memory and open handles over time.
 */
import {performance, monitorEventLoopDelay} from 'node:perf_hooks'
import {join} from 'node:path'
import {rm} from 'node:fs/promises'
import {fileURLToPath} from 'node:url'

import {WebSocket} from 'undici'

import {EventsClient} from '../src/protocol/events.js'
import {wsUrlFor} from '../src/protocol/subscribe.js'
import type {MemoryEvent} from '../src/schemas/events.js'
import {freshDatabase, startPostgresServer} from '../test/helpers/postgres.js'
import {AGENTS, tempDir, TOKENS} from '../test/helpers/world.js'
import {cpuSeconds, hash32, Histogram, sampleProcess, treeCpuSeconds, type ProcessSample} from './load-stats.js'
import {ms, table, type BenchSection} from './stats.js'
import {startServeProcess, type TeamServer} from './team.js'

export interface LoadOptions {
  clients: number
  seconds: number
  /** Requests per second all clients offer together (each paces itself to its share). */
  rate: number
  /** Syncs (status + push of the client's own file) per session, between the snapshot and the append. */
  commitsPerSession: number
  /** Size of each client's memory file, in bytes. */
  fileBytes: number
  /** How often the servers' memory and open handles are sampled. */
  sampleMs: number
}

/** The issue's load: 200 clients offering 1,100 requests a second, a minute's worth of work in the default run. */
export const LOAD: LoadOptions = {clients: 200, seconds: 30, rate: 1100, commitsPerSession: 3, fileBytes: 1024, sampleMs: 5000}

/** What the processes of one configuration are. */
export interface LoadSetup {
  label: string
  servers: TeamServer[]
  /** The PostgreSQL server's postmaster, when there is one (its CPU is counted with its backends'). */
  postgresPid?: number
  stop(): Promise<void>
}

type Op = 'snapshot' | 'status' | 'push' | 'sync' | 'append'
const OPS: readonly Op[] = ['snapshot', 'status', 'push', 'sync', 'append']

interface Client {
  index: number
  server: number
  agent: string
  path: string
  events: EventsClient
  socket: WebSocket
  heartbeat: NodeJS.Timeout
  seq: number | undefined
  rev: number | null
  content: string
  /** Contents of the events stored for this client (kept while few enough to list back). */
  created: string[]
  createdCount: number
  heardUpdates: number
  heardUpdatesXor: number
  heardEvents: number
  heardEventsXor: number
}

export interface LoadResult {
  label: string
  clients: number
  servers: number
  seconds: number
  requests: number
  offered: number
  latency: Record<Op, Histogram>
  sameProcess: Histogram
  otherProcess: Histogram
  errors: number
  errorSamples: string[]
  lostEdits: number
  lostEvents: number
  duplicatedEvents: number
  missedBroadcasts: number
  duplicatedBroadcasts: number
  /** CPU seconds per second of the load phase: generator, all server processes, PostgreSQL. */
  cpu: {generator: number; servers: number; postgres: number | undefined}
  /** The generator's event-loop delay (p99, ms): time it added to every latency it measured. */
  generatorLagP99: number
  samples: {at: number; servers: (ProcessSample | null)[]}[]
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Markdown of a realistic memory file: a title, the session and commit, then notes up to `bytes`. */
function fileText(index: number, session: number, commit: number, bytes: number): string {
  const lines = [`# Client ${index}`, '', `Session ${session}, commit ${commit}.`, '']
  let size = lines.join('\n').length
  for (let n = 1; size < bytes; n++) {
    const line = `- Note ${n}: the build passes after the cache fix; keep the retry delay short for session ${session}.`
    lines.push(line)
    size += line.length + 1
  }
  return `${lines.join('\n')}\n`
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 300) : String(error)
}

export async function runLoad(setup: LoadSetup, options: LoadOptions = LOAD): Promise<LoadResult> {
  const urls = setup.servers.map((server) => server.url)
  const latency = Object.fromEntries(OPS.map((op) => [op, new Histogram()])) as Record<Op, Histogram>
  const sameProcess = new Histogram()
  const otherProcess = new Histogram()
  const errorSamples: string[] = []
  let errors = 0
  const failed = (what: string, error: unknown) => {
    errors++
    if (errorSamples.length < 5) errorSamples.push(`${what}: ${describe(error)}`)
  }

  /** `path@rev` of a push → when the writer's own WebSocket heard it, and the arrivals heard before that. */
  const inflight = new Map<string, {t0: number | undefined; early: [at: number, same: boolean][]; left: number}>()
  const byPath = new Map<string, Client>()
  let pushed = 0
  let pushedXor = 0
  let appended = 0
  let appendedXor = 0

  const heard = (client: Client, data: string) => {
    const at = performance.now()
    let message: {type?: string; path?: string; rev?: number; event_id?: string}
    try {
      message = JSON.parse(data) as typeof message
    } catch {
      return
    }
    if (message.type === 'EVENT_APPENDED' && typeof message.event_id === 'string') {
      client.heardEvents++
      client.heardEventsXor ^= hash32(message.event_id)
      return
    }
    if (message.type !== 'MEM_UPDATE' || typeof message.path !== 'string') return
    const key = `${message.path}@${message.rev}`
    client.heardUpdates++
    client.heardUpdatesXor ^= hash32(key)
    const writer = byPath.get(message.path)
    if (writer === undefined) return
    let entry = inflight.get(key)
    if (entry === undefined) {
      entry = {t0: undefined, early: [], left: options.clients}
      inflight.set(key, entry)
    }
    if (client === writer) {
      entry.t0 = at
      for (const [when, same] of entry.early) (same ? sameProcess : otherProcess).record(Math.max(0, when - at))
      entry.early = []
    } else if (entry.t0 === undefined) {
      entry.early.push([at, client.server === writer.server])
    } else {
      ;(client.server === writer.server ? sameProcess : otherProcess).record(at - entry.t0)
    }
    if (--entry.left === 0) inflight.delete(key)
  }

  const clients: Client[] = []
  try {
    // Connected a few at a time: 200 WebSocket handshakes at once would only measure the accept queue.
    for (let index = 0; index < options.clients; index++) {
      const server = index % urls.length
      const agent = AGENTS[index % AGENTS.length]
      const path = `load/client-${String(index).padStart(3, '0')}.md`
      const socket = new WebSocket(wsUrlFor(urls[server]), {headers: {authorization: `Bearer ${TOKENS[agent]}`}})
      const client: Client = {
        index,
        server,
        agent,
        path,
        events: new EventsClient({server: urls[server], token: TOKENS[agent]}),
        socket,
        heartbeat: setInterval(() => socket.readyState === WebSocket.OPEN && socket.send('{"type":"PING"}'), 5000),
        seq: undefined,
        rev: null,
        content: '',
        created: [],
        createdCount: 0,
        heardUpdates: 0,
        heardUpdatesXor: 0,
        heardEvents: 0,
        heardEventsXor: 0,
      }
      client.heartbeat.unref()
      clients.push(client)
      byPath.set(path, client)
      socket.onmessage = (event) => heard(client, typeof event.data === 'string' ? event.data : Buffer.from(event.data as ArrayBuffer).toString('utf8'))
      await new Promise<void>((resolve, reject) => {
        socket.onopen = () => resolve()
        socket.onerror = () => reject(new Error(`client ${index}: its WebSocket to ${urls[server]} did not open`))
      })
      socket.onerror = () => failed('websocket', new Error(`client ${index}: WebSocket error`))
    }

    const interval = (options.clients / options.rate) * 1000
    const started = performance.now()
    const deadline = started + options.seconds * 1000
    let requests = 0
    const timed = async <T>(op: Op, work: () => Promise<T>): Promise<T> => {
      const start = performance.now()
      const value = await work()
      latency[op].record(performance.now() - start)
      requests++
      return value
    }

    const sync = async (client: Client) => {
      const start = performance.now()
      const status = await timed('status', () => client.events.status(client.seq))
      client.seq = status.seq
      const answer = await timed('push', () => client.events.push({[client.path]: client.content}, {[client.path]: client.rev}))
      const rev = answer.files?.[client.path]?.rev
      if (typeof rev !== 'number') throw new Error(`the push of ${client.path} answered no revision`)
      client.rev = rev
      pushed++
      pushedXor ^= hash32(`${client.path}@${rev}`)
      latency.sync.record(performance.now() - start)
    }

    const append = async (client: Client, session: number) => {
      const content = `Client ${client.index} ended session ${session}: the notes of ${client.path} are up to date.`
      const event: MemoryEvent = {
        agent_id: client.agent as MemoryEvent['agent_id'],
        run_id: `load-${client.index}-${session}`,
        scope: 'project:load',
        kind: 'fact',
        dedupe_key: `load:client_${String(client.index).padStart(3, '0')}`,
        confidence: 'high',
        content_md: content,
        source: {system: 'cli'},
        ttl_days: 0,
      }
      const answer = await timed('append', () => client.events.append(event, `load-${client.index}-${session}`))
      if (answer.status !== 'created') throw new Error(`append of session ${session} answered ${answer.status}`)
      client.createdCount++
      if (client.created.length < 500) client.created.push(content)
      appended++
      appendedXor ^= hash32(answer.event_id)
    }

    const lag = monitorEventLoopDelay({resolution: 10})
    lag.enable()
    const cpuBefore = await cpuNow(setup)
    const samples: LoadResult['samples'] = []
    const sampler = setInterval(() => {
      const at = (performance.now() - started) / 1000
      void Promise.all(setup.servers.map((server) => (server.pid === undefined ? null : sampleProcess(server.pid)))).then((servers) => samples.push({at, servers}))
    }, options.sampleMs)

    await Promise.all(
      clients.map(async (client) => {
        // Starts spread over one interval; then each step waits for its turn (requests × interval after the last),
        // never catching up by more than one step at once.
        let next = started + Math.random() * interval
        const turn = async (count: number) => {
          const now = performance.now()
          next = Math.max(next, now - interval)
          if (next > now) await sleep(next - now)
          next += count * interval
        }
        for (let session = 0; performance.now() < deadline; session++) {
          await turn(1)
          await timed('snapshot', () => client.events.snapshot({agentId: client.agent, scopes: ['global', 'project:load']})).catch((error) => failed('snapshot', error))
          for (let commit = 0; commit < options.commitsPerSession && performance.now() < deadline; commit++) {
            await turn(2)
            client.content = fileText(client.index, session, commit, options.fileBytes)
            await sync(client).catch(async (error) => {
              failed('sync', error)
              // Whatever happened, the next push goes on the revision the server has now.
              const status = await client.events.status().catch(() => undefined)
              const now = status?.files[client.path]
              if (now?.rev !== undefined) client.rev = now.rev
            })
          }
          await turn(1)
          await append(client, session).catch((error) => failed('append', error))
        }
      }),
    )
    const seconds = (performance.now() - started) / 1000
    clearInterval(sampler)
    const cpuAfter = await cpuNow(setup)
    lag.disable()

    // Broadcasts still on their way get a moment; one that never comes is missed.
    const waitUntil = performance.now() + 15_000
    const done = () => clients.every((client) => client.heardUpdates >= pushed && client.heardEvents >= appended)
    while (!done() && performance.now() < waitUntil) await sleep(50)
    let missedBroadcasts = 0
    let duplicatedBroadcasts = 0
    for (const client of clients) {
      missedBroadcasts += Math.max(0, pushed - client.heardUpdates) + Math.max(0, appended - client.heardEvents)
      duplicatedBroadcasts += Math.max(0, client.heardUpdates - pushed) + Math.max(0, client.heardEvents - appended)
      // The same number heard, yet not the same messages: one missed and another heard twice.
      if (client.heardUpdates === pushed && client.heardUpdatesXor !== pushedXor) missedBroadcasts++
      if (client.heardEvents === appended && client.heardEventsXor !== appendedXor) missedBroadcasts++
    }

    // Every client's file holds its last acknowledged edit, at its last acknowledged revision.
    const reader = new EventsClient({server: urls[0], token: TOKENS[AGENTS[0]]})
    let lostEdits = 0
    const pulled = await reader.pull(clients.map((client) => client.path))
    for (const client of clients) {
      const file = pulled.files[client.path]
      if (client.rev === null) continue
      if (file === undefined || file.content !== client.content || file.rev !== client.rev) lostEdits++
    }
    // Every acknowledged event is stored once.
    let lostEvents = 0
    let duplicatedEvents = 0
    for (const client of clients) {
      const {events, total} = await reader.events({dedupe_key: `load:client_${String(client.index).padStart(3, '0')}`, include_deprecated: true, limit: 500})
      const stored = total ?? events.length
      lostEvents += Math.max(0, client.createdCount - stored)
      duplicatedEvents += Math.max(0, stored - client.createdCount)
      const texts = new Set(events.map((event) => event.content_md))
      duplicatedEvents += events.length - texts.size
      if (client.createdCount <= 500) lostEvents += client.created.filter((text) => !texts.has(text)).length
    }

    const elapsed = cpuAfter.at - cpuBefore.at
    return {
      label: setup.label,
      clients: options.clients,
      servers: urls.length,
      seconds,
      requests,
      offered: options.rate,
      latency,
      sameProcess,
      otherProcess,
      errors,
      errorSamples,
      lostEdits,
      lostEvents,
      duplicatedEvents,
      missedBroadcasts,
      duplicatedBroadcasts,
      cpu: {
        generator: (cpuAfter.generator - cpuBefore.generator) / elapsed,
        servers: (cpuAfter.servers - cpuBefore.servers) / elapsed,
        postgres: cpuAfter.postgres === undefined || cpuBefore.postgres === undefined ? undefined : (cpuAfter.postgres - cpuBefore.postgres) / elapsed,
      },
      generatorLagP99: lag.percentile(99) / 1e6,
      samples,
    }
  } finally {
    for (const client of clients) {
      clearInterval(client.heartbeat)
      client.socket.onerror = null
      client.socket.close()
    }
  }
}

async function cpuNow(setup: LoadSetup): Promise<{at: number; generator: number; servers: number; postgres: number | undefined}> {
  const own = process.cpuUsage()
  const servers = await Promise.all(setup.servers.map((server) => (server.pid === undefined ? 0 : cpuSeconds(server.pid))))
  return {
    at: performance.now() / 1000,
    generator: (own.user + own.system) / 1e6,
    servers: servers.reduce((sum, value) => sum + value, 0),
    postgres: setup.postgresPid === undefined ? undefined : await treeCpuSeconds(setup.postgresPid),
  }
}

// ---------------------------------------------------------------------------------------------------------------
// what one request costs

export interface CostOptions {
  /** WebSockets listening the whole time (a push or an append is a message to each). */
  sockets: number
  /** Requests of each kind. */
  requests: number
  /** Clients sending them at once, each one request after the other. */
  concurrency: number
  /** Only these kinds (default all): to profile one alone (JARVIS_BENCH_COST_OPS=push,append). */
  ops?: readonly CostRow['op'][]
}

export interface CostRow {
  op: 'push' | 'status' | 'append' | 'snapshot'
  perSecond: number
  p50: number
  /** CPU milliseconds per request: all server processes, PostgreSQL, the load generator. */
  serverMs: number
  postgresMs: number | undefined
  generatorMs: number
}

/**
 * Requests of one kind at a time, from a few clients at once while `sockets` WebSockets listen, and the CPU each
 * costs the servers, PostgreSQL and the generator: the price list that says what a machine carries (scale.md).
 */
export async function runCost(setup: LoadSetup, options: CostOptions): Promise<CostRow[]> {
  const urls = setup.servers.map((server) => server.url)
  const sockets: WebSocket[] = []
  let heard = 0
  try {
    for (let n = 0; n < options.sockets; n++) {
      const socket = new WebSocket(wsUrlFor(urls[n % urls.length]), {headers: {authorization: `Bearer ${TOKENS[AGENTS[n % AGENTS.length]]}`}})
      sockets.push(socket)
      socket.onmessage = () => heard++
      await new Promise<void>((resolve, reject) => {
        socket.onopen = () => resolve()
        socket.onerror = () => reject(new Error(`listener ${n} did not open`))
      })
    }
    const workers = Array.from({length: options.concurrency}, (_, n) => ({
      n,
      agent: AGENTS[n % AGENTS.length],
      client: new EventsClient({server: urls[n % urls.length], token: TOKENS[AGENTS[n % AGENTS.length]]}),
      rev: null as number | null,
      seq: undefined as number | undefined,
    }))
    const each = Math.ceil(options.requests / options.concurrency)
    const rows: CostRow[] = []
    const steps: [CostRow['op'], (worker: (typeof workers)[number], i: number) => Promise<unknown>][] = [
      [
        'push',
        async (worker, i) => {
          const path = `cost/worker-${worker.n}.md`
          const answer = await worker.client.push({[path]: fileText(worker.n, 0, i, LOAD.fileBytes)}, {[path]: worker.rev})
          worker.rev = answer.files?.[path]?.rev ?? worker.rev
        },
      ],
      [
        'status',
        async (worker) => {
          worker.seq = (await worker.client.status(worker.seq)).seq
        },
      ],
      [
        'append',
        (worker, i) =>
          worker.client.append(
            {
              agent_id: worker.agent as MemoryEvent['agent_id'],
              run_id: `cost-${worker.n}`,
              scope: 'project:load',
              kind: 'fact',
              dedupe_key: `cost:worker_${worker.n}`,
              confidence: 'high',
              content_md: `Worker ${worker.n}, note ${i}: the build passes after the cache fix.`,
              source: {system: 'cli'},
              ttl_days: 0,
            },
            `cost-${worker.n}-${i}`,
          ),
      ],
      ['snapshot', (worker) => worker.client.snapshot({agentId: worker.agent, scopes: ['global', 'project:load']})],
    ]
    for (const [op, step] of steps) {
      if (options.ops !== undefined && !options.ops.includes(op)) continue
      const latency = new Histogram()
      const before = await cpuNow(setup)
      await Promise.all(
        workers.map(async (worker) => {
          for (let i = 0; i < each; i++) {
            const start = performance.now()
            await step(worker, i)
            latency.record(performance.now() - start)
          }
        }),
      )
      const after = await cpuNow(setup)
      const count = each * workers.length
      rows.push({
        op,
        perSecond: count / (after.at - before.at),
        p50: latency.percentile(50),
        serverMs: ((after.servers - before.servers) / count) * 1000,
        postgresMs: after.postgres === undefined || before.postgres === undefined ? undefined : ((after.postgres - before.postgres) / count) * 1000,
        generatorMs: ((after.generator - before.generator) / count) * 1000,
      })
    }
    if (heard === 0 && rows.some((row) => row.op === 'push' || row.op === 'append')) throw new Error('no listener heard anything')
    return rows
  } finally {
    for (const socket of sockets) socket.close()
  }
}

// ---------------------------------------------------------------------------------------------------------------
// configurations

/** N `jarvis serve` processes over one durable PostgreSQL (fsync, synchronous_commit and full_page_writes on: its defaults). */
export async function postgresSetup(work: string, processes = 2): Promise<LoadSetup> {
  const postgres = await startPostgresServer({durable: true})
  const servers: TeamServer[] = []
  try {
    const database = await freshDatabase(postgres.adminUrl)
    for (let n = 0; n < processes; n++) servers.push(await startServeProcess(join(work, `process-${n}`), ['--database', database]))
  } catch (error) {
    await Promise.all(servers.map((server) => server.stop()))
    await postgres.stop()
    throw error
  }
  return {
    label: `${processes} \`jarvis serve\`, one PostgreSQL`,
    servers,
    postgresPid: postgres.pid,
    async stop() {
      await Promise.all(servers.map((server) => server.stop()))
      await postgres.stop()
    },
  }
}

/** One `jarvis serve` on its SQLite file. */
export async function sqliteSetup(work: string): Promise<LoadSetup> {
  const server = await startServeProcess(join(work, 'sqlite'))
  return {label: '1 `jarvis serve`, SQLite', servers: [server], stop: () => server.stop()}
}

// ---------------------------------------------------------------------------------------------------------------
// the report

const cell = (histogram: Histogram) => (histogram.count === 0 ? '—' : `${ms(histogram.percentile(50))} / ${ms(histogram.percentile(99))}`)

function loadRow(result: LoadResult): string[] {
  const cpu = result.cpu
  return [
    result.label,
    `${(result.requests / result.seconds).toFixed(0)} (of ${result.offered})`,
    ...(['status', 'push', 'sync', 'append', 'snapshot'] as const).map((op) => cell(result.latency[op])),
    cell(result.sameProcess),
    cell(result.otherProcess),
    `${cpu.generator.toFixed(2)} / ${cpu.servers.toFixed(2)} / ${cpu.postgres === undefined ? '—' : cpu.postgres.toFixed(2)}`,
    `${result.errors} / ${result.lostEdits} / ${result.lostEvents} / ${result.duplicatedEvents} / ${result.missedBroadcasts} / ${result.duplicatedBroadcasts}`,
  ]
}

/** Growth of the servers' memory and handles after warm-up: the median of the first fifth after it against the last fifth. */
function soakRows(result: LoadResult, warmupSeconds: number): string[][] {
  const after = result.samples.filter((sample) => sample.at >= warmupSeconds)
  if (after.length < 5) return []
  const fifth = Math.max(1, Math.floor(after.length / 5))
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
  return result.samples[0].servers.map((_, n) => {
    const of = (samples: typeof after, pick: (sample: ProcessSample) => number) => median(samples.map((sample) => sample.servers[n]).filter((s): s is ProcessSample => s !== null).map(pick))
    const first = after.slice(0, fifth)
    const last = after.slice(-fifth)
    const rss = [of(first, (s) => s.rssMiB), of(last, (s) => s.rssMiB)]
    const fds = [of(first, (s) => s.fds), of(last, (s) => s.fds)]
    const peak = Math.max(...after.map((sample) => sample.servers[n]?.rssMiB ?? 0))
    return [
      `process ${n + 1}`,
      `${((after.at(-1)!.at - after[0].at) / 60).toFixed(1)} min`,
      `${rss[0].toFixed(0)} → ${rss[1].toFixed(0)} MiB (${rss[1] - rss[0] >= 0 ? '+' : ''}${(rss[1] - rss[0]).toFixed(1)})`,
      `${peak.toFixed(0)} MiB`,
      `${fds[0]} → ${fds[1]}`,
    ]
  })
}

function costTable(rows: readonly CostRow[]): string {
  const cpu = (value: number | undefined) => (value === undefined ? '—' : value.toFixed(2))
  return table(
    ['request', 'per second', 'median', 'CPU ms: servers', 'CPU ms: PostgreSQL', 'CPU ms: generator'],
    rows.map((row) => [row.op, row.perSecond.toFixed(0), ms(row.p50), cpu(row.serverMs), cpu(row.postgresMs), cpu(row.generatorMs)]),
  )
}

function failures(result: LoadResult): string | undefined {
  const bad = result.errors + result.lostEdits + result.lostEvents + result.duplicatedEvents + result.missedBroadcasts + result.duplicatedBroadcasts
  if (bad === 0) return undefined
  return `${result.label}: ${result.errors} errors (${result.errorSamples.join('; ')}), ${result.lostEdits} lost edits, ${result.lostEvents} lost and ${result.duplicatedEvents} duplicated events, ${result.missedBroadcasts} missed and ${result.duplicatedBroadcasts} duplicated broadcasts`
}

function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name])
  return Number.isFinite(value) && value > 0 ? value : fallback
}

async function measure(start: (work: string) => Promise<LoadSetup>, options: LoadOptions): Promise<LoadResult> {
  const work = await tempDir('jarvis-bench-load-')
  const setup = await start(work)
  try {
    const result = await runLoad(setup, options)
    const problem = failures(result)
    if (problem !== undefined) throw new Error(problem)
    return result
  } finally {
    await setup.stop()
    await rm(work, {recursive: true, force: true})
  }
}

/**
 * `npm run bench`'s load section: 200 clients on 2 processes over one PostgreSQL, the same on one SQLite server, and a
 * soak at half that load — a short one by default, 30 minutes with JARVIS_BENCH_SOAK=1 (JARVIS_BENCH_SOAK_MINUTES
 * to choose). JARVIS_BENCH_LOAD_SECONDS, _CLIENTS and _RATE change the main runs.
 */
export async function benchLoad(): Promise<BenchSection> {
  const load: LoadOptions = {
    ...LOAD,
    seconds: envNumber('JARVIS_BENCH_LOAD_SECONDS', LOAD.seconds),
    clients: envNumber('JARVIS_BENCH_LOAD_CLIENTS', LOAD.clients),
    rate: envNumber('JARVIS_BENCH_LOAD_RATE', LOAD.rate),
  }
  const longSoak = process.env.JARVIS_BENCH_SOAK === '1'
  const soakSeconds = longSoak ? envNumber('JARVIS_BENCH_SOAK_MINUTES', 30) * 60 : envNumber('JARVIS_BENCH_SHORT_SOAK_SECONDS', 90)
  const soak: LoadOptions = {...load, clients: Math.max(1, Math.round(load.clients / 2)), rate: load.rate / 2, seconds: soakSeconds, sampleMs: longSoak ? 15_000 : 3000}
  const warmup = Math.min(120, soakSeconds / 3)

  const results: LoadResult[] = []
  for (const start of [(work: string) => postgresSetup(work, 2), sqliteSetup]) {
    process.stderr.write(`bench: load, ${load.clients} clients…\n`)
    results.push(await measure(start, load))
  }
  process.stderr.write(`bench: load, soak of ${(soakSeconds / 60).toFixed(1)} min…\n`)
  const soaked = await measure((work) => postgresSetup(work, 2), soak)
  process.stderr.write('bench: load, the cost of each request…\n')
  const costWork = await tempDir('jarvis-bench-load-')
  const costSetup = await postgresSetup(costWork, 2)
  let costs: CostRow[]
  try {
    costs = await runCost(costSetup, {sockets: load.clients, requests: 400, concurrency: 8})
  } finally {
    await costSetup.stop()
    await rm(costWork, {recursive: true, force: true})
  }

  const markdown = [
    `${load.clients} clients, each a protocol client (the CLI's HTTP client, src/protocol) with a WebSocket open to its server process the whole run, offering ${load.rate} requests a second together for ${load.seconds} s. A client works in sessions: a snapshot of the event log (scopes global and project:load), then ${load.commitsPerSession} times an edit of its own ${load.fileBytes}-byte memory file and a sync of it (status since its last seq, then a push on its base revision: the server scans the file for secrets and personal data, stores it, audits it and broadcasts MEM_UPDATE to every client), then an append of a session-end event with an idempotency key (broadcast as EVENT_APPENDED to every client). The status is the CLI's own: like \`jarvis sync\` it asks for the texts of the changed files when it lists at most 64 (docs/decisions/status-texts.md); at this rate it lists about 140 on average (the others' pushes since the client's last status) and so rarely carries any (33 statuses of 2,011 in a 10-second run, on 2026-11-27), and the clients pull nothing — the pulls of the others' files a syncing client would make are not part of this load. The load generator runs on the same cores as the servers and the database. PostgreSQL is Debian's, durable (fsync, synchronous_commit and full_page_writes on, its defaults; max_connections 300).`,
    '',
    'Afterwards every client\'s file must hold its last acknowledged edit at its revision, every acknowledged event must be stored once, and every client must have heard every MEM_UPDATE and EVENT_APPENDED once (count and hash). Times are median / p99, from the client (its request and the parse of the answer). A sync is the status and the push together. Broadcast: from the message on the writer\'s own WebSocket to the same message on a client of the writer\'s process, and of the other process. CPU is CPU-seconds per second of the run (2.00 is both cores): load generator / server processes / PostgreSQL.',
    '',
    table(
      ['servers', 'requests/s', 'status', 'push', 'sync', 'append', 'snapshot', 'broadcast, same process', 'broadcast, other process', 'CPU', 'errors / lost edits / lost events / duplicated events / missed / duplicated broadcasts'],
      [...results, soaked].map((result, n) => {
        const row = loadRow(result)
        if (n === results.length) row[0] = `soak: ${soaked.clients} clients, ${(soakSeconds / 60).toFixed(1)} min, ${row[0]}`
        return row
      }),
    ),
    '',
    `The generator's own event-loop delay (p99), time it adds to every latency above: ${results.map((result) => `${result.label} ${ms(result.generatorLagP99)}`).join('; ')}; soak ${ms(soaked.generatorLagP99)}.`,
    '',
    `Soak (${longSoak ? 'JARVIS_BENCH_SOAK=1' : `the default run's short one; JARVIS_BENCH_SOAK=1 runs 30 minutes`}): each server process's resident memory and open file descriptors, sampled every ${soak.sampleMs / 1000} s; after a warm-up of ${warmup.toFixed(0)} s, the median of the first fifth of the samples against the last fifth.`,
    '',
    table(['server', 'after warm-up', 'resident memory', 'peak', 'open descriptors'], soakRows(soaked, warmup)),
    '',
    `What each request costs, on 2 processes over one PostgreSQL with ${load.clients} WebSockets listening (a push is a MEM_UPDATE to each, and an AUDIT_APPENDED to its agent's; an append an EVENT_APPENDED to each): 400 requests of one kind from 8 clients at once, each client one request after the other; CPU milliseconds per request. The status asks for what changed since the client's last status (nothing).`,
    '',
    costTable(costs),
  ].join('\n')
  return {title: 'The team server under load: 200 clients, one PostgreSQL', markdown}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // `node --import tsx bench/load.ts [postgres|sqlite]`: one configuration, printed as its row (JARVIS_BENCH_LOAD_* apply).
  const which = process.argv[2] ?? 'postgres'
  if (process.argv[3] === 'cost') {
    const work = await tempDir('jarvis-bench-load-')
    const setup = which === 'sqlite' ? await sqliteSetup(work) : await postgresSetup(work, 2)
    try {
      const ops = process.env.JARVIS_BENCH_COST_OPS?.split(',').map((op) => op.trim()) as CostRow['op'][] | undefined
      const rows = await runCost(setup, {sockets: envNumber('JARVIS_BENCH_LOAD_CLIENTS', 200), requests: envNumber('JARVIS_BENCH_COST_REQUESTS', 400), concurrency: 8, ops})
      process.stdout.write(`${costTable(rows)}\n`)
    } finally {
      await setup.stop()
      await rm(work, {recursive: true, force: true})
    }
    process.exit(0)
  }
  const options: LoadOptions = {
    ...LOAD,
    seconds: envNumber('JARVIS_BENCH_LOAD_SECONDS', LOAD.seconds),
    clients: envNumber('JARVIS_BENCH_LOAD_CLIENTS', LOAD.clients),
    rate: envNumber('JARVIS_BENCH_LOAD_RATE', LOAD.rate),
  }
  const work = await tempDir('jarvis-bench-load-')
  const setup = which === 'sqlite' ? await sqliteSetup(work) : await postgresSetup(work, 2)
  try {
    const result = await runLoad(setup, options)
    process.stdout.write(`${table(['servers', 'requests/s', 'status', 'push', 'sync', 'append', 'snapshot', 'bcast same', 'bcast other', 'CPU gen/srv/pg', 'err/lost/lostev/dupev/missed/dupbc'], [loadRow(result)])}\n`)
    process.stdout.write(`generator lag p99 ${ms(result.generatorLagP99)}; errors: ${result.errorSamples.join(' | ') || 'none'}\n`)
    for (const op of OPS) process.stdout.write(`${op}: n=${result.latency[op].count} p50 ${ms(result.latency[op].percentile(50))} p90 ${ms(result.latency[op].percentile(90))} p99 ${ms(result.latency[op].percentile(99))} max ${ms(result.latency[op].max)}\n`)
    process.stdout.write(`other-process broadcast p95 ${ms(result.otherProcess.percentile(95))}; samples ${JSON.stringify(result.samples.at(-1))}\n`)
  } finally {
    await setup.stop()
    await rm(work, {recursive: true, force: true})
  }
}
