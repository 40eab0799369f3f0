/**
 * A team on one server: 30 client trees spread over the `jarvis serve` processes given, each syncing its own file
 * and appending events in a bounded loop, each listening on the WebSocket of its process. Then it checks what a
 * team would notice — 0 lost edits (every tree ends with every client's last edit), 0 lost or duplicated events,
 * every WebSocket client saw the broadcast of every pushed revision — and reports requests per second, p50/p95 of
 * a sync and of an append, and how long a broadcast takes to reach clients of the writer's process and of others.
 * The servers are real processes (`bin/run.js serve`); the clients run the sync and event code the CLI runs.
 */
import {type ChildProcess, spawn} from 'node:child_process'
import {mkdir, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {performance} from 'node:perf_hooks'
import {fileURLToPath} from 'node:url'

import {EventsClient} from '../src/protocol/events.js'
import {subscribe, wsUrlFor, type Subscription} from '../src/protocol/subscribe.js'
import type {MemoryEvent} from '../src/schemas/events.js'
import {readSyncState} from '../src/store/index.js'
import {freshDatabase, startPostgresServer} from '../test/helpers/postgres.js'
import {AGENTS, makeClient, tempDir, type TestClient, TOKENS, tokenMap} from '../test/helpers/world.js'
import {median, ms, table, type BenchSection} from './stats.js'

/** The CLI the servers run: this checkout's, or JARVIS_BENCH_BIN (another build's bin/run.js, to compare). */
const jarvisBin = process.env.JARVIS_BENCH_BIN || fileURLToPath(new URL('../bin/run.js', import.meta.url))

export interface TeamLoad {
  clients: number
  rounds: number
  appendsPerRound: number
}

export const TEAM_LOAD: TeamLoad = {clients: 30, rounds: 10, appendsPerRound: 3}

export interface TeamServer {
  url: string
  /** The server's process id (for the load bench's CPU, memory and handle accounting). */
  pid?: number
  stop(): Promise<void>
}

/** `jarvis serve` as a process on 127.0.0.1 and a port the OS picks; `extra` adds e.g. `--database URL`. */
export async function startServeProcess(dataDir: string, extra: string[] = []): Promise<TeamServer> {
  await mkdir(dataDir, {recursive: true})
  const tokensFile = join(dataDir, 'bench-tokens.json')
  await writeFile(tokensFile, JSON.stringify(tokenMap), {mode: 0o600})
  // JARVIS_BENCH_CPU_PROF=DIR: each server writes a V8 CPU profile there when it stops (to see where its time goes).
  const profile = process.env.JARVIS_BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.JARVIS_BENCH_CPU_PROF] : []
  const child: ChildProcess = spawn(process.execPath, [...profile, jarvisBin, 'serve', '--host', '127.0.0.1', '--port', '0', '--data', dataDir, '--tokens', tokensFile, ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {...process.env, NO_COLOR: '1'},
  })
  let output = ''
  let listening = false
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = await new Promise<string>((resolve, reject) => {
    // Read until the listening line, then only drained (a server blocks on a full pipe), never kept: a long run
    // must not cost the load generator a copy, and a search, of everything the server printed.
    const look = (chunk: string) => {
      if (listening) return
      output += chunk
      const match = /listening on (http:\/\/\S+)/.exec(output)
      if (match) {
        listening = true
        output = ''
        resolve(match[1])
      }
    }
    child.stdout!.setEncoding('utf8').on('data', look)
    child.stderr!.setEncoding('utf8').on('data', look)
    child.once('exit', (code) => reject(new Error(`jarvis serve exited with ${code}:\n${output}`)))
  })
  return {
    url,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}

interface Member {
  index: number
  server: number
  tree: TestClient
  events: EventsClient
  subscription: Subscription
  /** `path@rev` → when this member's WebSocket delivered its MEM_UPDATE. */
  heard: Map<string, number>
}

export interface TeamResult {
  seconds: number
  requests: number
  syncs: number[]
  appends: number[]
  /** The broadcast on the writer's own WebSocket → on another client of the writer's process, and of another process. */
  sameProcess: number[]
  otherProcess: number[]
  lostEdits: number
  lostEvents: number
  duplicatedEvents: number
  missedBroadcasts: number
}

const fileOf = (index: number) => `team/client-${String(index).padStart(2, '0')}.md`
const keyOf = (index: number) => `team:client_${String(index).padStart(2, '0')}`

export async function runTeamLoad(servers: readonly string[], load: TeamLoad = TEAM_LOAD): Promise<TeamResult> {
  const members: Member[] = []
  const cleanup: string[] = []
  try {
    for (let index = 0; index < load.clients; index++) {
      const server = index % servers.length
      const agent = AGENTS[index % AGENTS.length]
      const tree = await makeClient(servers[server], agent)
      cleanup.push(tree.root)
      const heard = new Map<string, number>()
      const subscription = subscribe({
        url: wsUrlFor(servers[server]),
        token: TOKENS[agent],
        onMessage: (message) => {
          if (message.type === 'MEM_UPDATE' && message.path !== undefined) heard.set(`${message.path}@${message.rev}`, performance.now())
        },
      })
      await subscription.settled
      if (!subscription.connected()) throw new Error(`client ${index}: its WebSocket to ${servers[server]} did not open`)
      members.push({index, server, tree, events: new EventsClient({server: servers[server], token: TOKENS[agent]}), subscription, heard})
    }

    const syncs: number[] = []
    const appends: number[] = []
    /** `path@rev` → the member that pushed it. */
    const pushed = new Map<string, Member>()
    const started = performance.now()
    await Promise.all(
      members.map(async (member) => {
        for (let round = 0; round < load.rounds; round++) {
          await member.tree.write(fileOf(member.index), `# Client ${member.index}\n\nround ${round}\n`)
          const syncStart = performance.now()
          await member.tree.sync()
          syncs.push(performance.now() - syncStart)
          const rev = (await readSyncState(member.tree.root)).files[fileOf(member.index)]?.rev
          pushed.set(`${fileOf(member.index)}@${rev}`, member)
          for (let k = 0; k < load.appendsPerRound; k++) {
            const appendStart = performance.now()
            const event: MemoryEvent = {
              agent_id: member.tree.agent as MemoryEvent['agent_id'],
              run_id: `team-${member.index}-${round}`,
              scope: 'global',
              kind: 'fact',
              dedupe_key: keyOf(member.index),
              confidence: 'high',
              content_md: `Client ${member.index}, round ${round}, note ${k}.`,
              source: {system: 'cli'},
              ttl_days: 0,
            }
            await member.events.append(event, `team-${member.index}-${round}-${k}`)
            appends.push(performance.now() - appendStart)
          }
        }
      }),
    )
    const seconds = (performance.now() - started) / 1000

    // Broadcasts in flight when the loop ended get a moment; one that never comes counts as missed.
    const deadline = performance.now() + 10_000
    while (performance.now() < deadline && members.some((m) => [...pushed.keys()].some((key) => !m.heard.has(key)))) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const sameProcess: number[] = []
    const otherProcess: number[] = []
    let missedBroadcasts = 0
    for (const [key, writer] of pushed) {
      // The writer's own WebSocket hears it as the server answers the push: the others are timed against that.
      const sent = writer.heard.get(key)
      for (const member of members) {
        const at = member.heard.get(key)
        if (at === undefined) missedBroadcasts++
        else if (member !== writer && sent !== undefined) (member.server === writer.server ? sameProcess : otherProcess).push(at - sent)
      }
    }

    // Every tree syncs until it has nothing left to pull; then each must hold every client's last edit.
    for (const member of members) await member.tree.sync()
    let lostEdits = 0
    for (const member of members) {
      for (let index = 0; index < load.clients; index++) {
        if ((await member.tree.read(fileOf(index))) !== `# Client ${index}\n\nround ${load.rounds - 1}\n`) lostEdits++
      }
    }
    let lostEvents = 0
    let duplicatedEvents = 0
    const reader = members[0].events
    for (let index = 0; index < load.clients; index++) {
      const {events} = await reader.events({dedupe_key: keyOf(index), include_deprecated: true, limit: 500})
      const texts = events.map((event) => event.content_md)
      const expected = Array.from({length: load.rounds}, (_, round) => Array.from({length: load.appendsPerRound}, (_, k) => `Client ${index}, round ${round}, note ${k}.`)).flat()
      lostEvents += expected.filter((text) => !texts.includes(text)).length
      duplicatedEvents += texts.length - new Set(texts).size
    }
    return {
      seconds,
      requests: syncs.length + appends.length,
      syncs,
      appends,
      sameProcess,
      otherProcess,
      lostEdits,
      lostEvents,
      duplicatedEvents,
      missedBroadcasts,
    }
  } finally {
    await Promise.all(members.map((member) => member.subscription.close()))
    await Promise.all(members.map((member) => member.events.close()))
    await Promise.all(cleanup.map((dir) => rm(dir, {recursive: true, force: true})))
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

function resultRow(label: string, result: TeamResult): string[] {
  const cell = (values: number[]) => (values.length === 0 ? '—' : `${ms(median(values))} / ${ms(percentile(values, 95))}`)
  return [
    label,
    (result.requests / result.seconds).toFixed(0),
    cell(result.syncs),
    cell(result.appends),
    cell(result.sameProcess),
    cell(result.otherProcess),
    `${result.lostEdits} / ${result.lostEvents} / ${result.duplicatedEvents} / ${result.missedBroadcasts}`,
  ]
}

/** Each configuration: a label and how to start its server processes in a fresh directory. */
export type TeamSetup = [label: string, start: (work: string) => Promise<TeamServer[]>]

export const SQLITE_SETUP: TeamSetup = ['1 `jarvis serve`, SQLite', async (work) => [await startServeProcess(join(work, 'sqlite'))]]

/** Three processes on one PostgreSQL database (Debian's postgresql, durable: fsync on, as SQLite's commits are). */
export const POSTGRES_SETUP: TeamSetup = [
  '3 `jarvis serve`, one PostgreSQL',
  async (work) => {
    const postgres = await startPostgresServer({durable: true})
    const database = await freshDatabase(postgres.adminUrl)
    const servers: TeamServer[] = []
    try {
      for (let n = 0; n < 3; n++) servers.push(await startServeProcess(join(work, `process-${n}`), ['--database', database]))
    } catch (error) {
      await Promise.all(servers.map((server) => server.stop()))
      await postgres.stop()
      throw error
    }
    // The database stops after the processes that use it.
    const last = servers.at(-1)!
    servers[servers.length - 1] = {url: last.url, stop: async () => (await last.stop(), await postgres.stop())}
    return servers
  },
]

export async function benchTeam(setups: readonly TeamSetup[] = [SQLITE_SETUP, POSTGRES_SETUP], load: TeamLoad = TEAM_LOAD): Promise<BenchSection> {
  const rows: string[][] = []
  for (const [label, start] of setups) {
    const work = await tempDir('jarvis-bench-team-')
    const servers = await start(work)
    try {
      const result = await runTeamLoad(
        servers.map((server) => server.url),
        load,
      )
      if (result.lostEdits + result.lostEvents + result.duplicatedEvents + result.missedBroadcasts > 0) {
        throw new Error(`${label}: ${result.lostEdits} lost edits, ${result.lostEvents} lost and ${result.duplicatedEvents} duplicated events, ${result.missedBroadcasts} missed broadcasts`)
      }
      rows.push(resultRow(label, result))
    } finally {
      for (const server of servers) await server.stop() // in order: a database stops after its processes
      await rm(work, {recursive: true, force: true})
    }
  }
  const markdown = [
    `${load.clients} client trees spread evenly over the server processes, all at once: each of ${load.rounds} rounds edits the client's own file, runs a sync (what \`jarvis sync\` runs, in process) and appends ${load.appendsPerRound} events (with an idempotency key); each client listens on the WebSocket of its process. Afterwards every tree syncs once more and must hold every client's last edit; the event log must hold every event exactly once; every WebSocket client must have heard the broadcast of every pushed revision. Broadcast: from the message on the writer's own WebSocket (sent as its push is answered) to the same message on another client of the writer's process, and of another process. Times are median / p95.`,
    '',
    table(['servers', 'requests/s', 'sync', 'append', 'broadcast, same process', 'broadcast, other process', 'lost edits / lost events / duplicated events / missed broadcasts'], rows),
  ].join('\n')
  return {title: 'A team on one server: load, nothing lost', markdown}
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`${(await benchTeam()).markdown}\n`)
}
