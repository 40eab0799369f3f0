/**
 * A stand-in for a server that implements only the seed's protocol notes — the original dashboard and gateway, not
 * `jarvis serve` — for the compatibility tests of CONTRACT §3 ("a client must also work with a server that
 * implements only the seed's fields"). It answers with the seed's fields and nothing else:
 * - status: `{serverTime, files: {path: {updatedAt}}, activeProjectId}` — no hash, rev, seq or tombstones, no `?since`;
 * - pull: `{files: {path: {content, updatedAt}}}`, a `.json` file's content as a JSON value;
 * - push: `{files: {path: content}}` → `{success: true}` (the seed names no answer), last writer wins, no 409;
 * - sync-task: the task, flat → the worker memory of the seed's schema;
 * - projects/active: `{projectId, switchedAt, switchedBy}`;
 * - snapshot: `{pinned_md, recent_events, ruleset_stamp, snapshot_id}`, events with the seed's columns only;
 * - append: `{event_id, status}` — no `warnings`.
 * No WebSocket, no `/v1/memory/events`, no `/healthz`. Listens on 127.0.0.1, on a port the OS picks.
 */
import {randomUUID} from 'node:crypto'
import {createServer, type IncomingMessage, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'

export interface SeedEvent {
  event_id: string
  agent_id: string
  run_id: string
  scope: string
  kind: string
  dedupe_key: string
  confidence: string
  content_md: string
  source: Record<string, unknown>
  supersedes: string | null
  ttl_days: number
  created_at: string
}

export interface SeedStandIn {
  url: string
  /** What it holds, to check from the test without going through the client under test. */
  files: Map<string, {content: unknown; updatedAt: string}>
  events: SeedEvent[]
  workers: Map<string, Record<string, unknown>>
  active: {projectId: string; switchedAt: string; switchedBy: string} | null
  /** Every request, `METHOD /path?query`, in order, and the body of every push. */
  requests: string[]
  pushes: Array<Record<string, unknown>>
  /**
   * How it answers what the seed leaves open: the body of a push answer (`null`: an empty 200), and the `status`
   * word of an append answer (the seed says an append answers `event_id / status`, and names no values).
   */
  answers: {push: unknown; appendStatus: string}
  close(): Promise<void>
}

/** `tokens`: bearer token → agent id (built by the test at run time). */
export async function startSeedStandIn(tokens: Record<string, string>): Promise<SeedStandIn> {
  let clock = Date.UTC(2026, 0, 1)
  const tick = () => new Date((clock += 1000)).toISOString()
  const state: Omit<SeedStandIn, 'url' | 'close'> = {
    files: new Map(),
    events: [],
    workers: new Map(),
    active: null,
    requests: [],
    pushes: [],
    answers: {push: {success: true}, appendStatus: 'created'},
  }

  const body = (req: IncomingMessage) =>
    new Promise<any>((resolve, reject) => {
      let text = ''
      req.setEncoding('utf8')
      req.on('data', (chunk: string) => (text += chunk))
      req.on('end', () => {
        try {
          resolve(text ? JSON.parse(text) : {})
        } catch (error) {
          reject(error)
        }
      })
    })

  const handle = async (req: IncomingMessage, res: ServerResponse, agent: string): Promise<unknown> => {
    const url = new URL(req.url ?? '/', 'http://stand-in')
    const route = `${req.method} ${url.pathname}`
    if (route === 'GET /api/memory/status') {
      return {serverTime: tick(), files: Object.fromEntries([...state.files].map(([path, file]) => [path, {updatedAt: file.updatedAt}])), activeProjectId: state.active?.projectId ?? null}
    }
    if (route === 'POST /api/memory/pull') {
      const {files} = await body(req)
      return {files: Object.fromEntries((files as string[]).filter((path) => state.files.has(path)).map((path) => [path, state.files.get(path)]))}
    }
    if (route === 'POST /api/memory/push') {
      const pushed = await body(req)
      state.pushes.push(pushed)
      const files = pushed.files
      for (const [path, content] of Object.entries(files as Record<string, string>)) {
        state.files.set(path, {content: path.endsWith('.json') ? JSON.parse(content) : content, updatedAt: tick()})
      }
      return state.answers.push
    }
    if (route === 'POST /api/memory/sync-task') {
      const task = await body(req)
      const worker = state.workers.get(agent) ?? {workerId: agent, status: 'online', totalTasks: 0, recentTasks: [], expertise: {}, context: {lastFiles: [], lastTopics: [], knownIssues: []}}
      const {taskId, timestamp, type, input, output, success, responseTime, model, filesModified} = task
      const recent = [{taskId, timestamp, type, input, output, success, responseTime, model, filesModified}, ...(worker.recentTasks as unknown[])].slice(0, 50)
      const updated = {...worker, lastActive: timestamp, totalTasks: (worker.totalTasks as number) + 1, recentTasks: recent}
      state.workers.set(agent, updated)
      return updated
    }
    if (route === 'GET /api/projects/active') return state.active ?? {projectId: 'none', switchedAt: tick(), switchedBy: 'system'}
    if (route === 'POST /api/projects/active') {
      const {projectId} = await body(req)
      state.active = {projectId, switchedAt: tick(), switchedBy: 'user-web'}
      return state.active
    }
    if (route === 'POST /v1/memory/append') {
      const event = await body(req)
      const stored: SeedEvent = {
        event_id: `evt_${randomUUID()}`,
        agent_id: agent,
        run_id: event.run_id,
        scope: event.scope,
        kind: event.kind,
        dedupe_key: event.dedupe_key,
        confidence: event.confidence,
        content_md: event.content_md,
        source: event.source,
        supersedes: event.supersedes ?? null,
        ttl_days: event.ttl_days ?? 0,
        created_at: tick(),
      }
      state.events.push(stored)
      return {event_id: stored.event_id, status: state.answers.appendStatus}
    }
    if (route === 'GET /v1/memory/snapshot') {
      const scopes = (url.searchParams.get('scopes') ?? 'global').split(',')
      const limit = Number(url.searchParams.get('limit_recent') ?? 50)
      const superseded = new Set(state.events.map((event) => event.supersedes).filter(Boolean))
      const live = state.events.filter((event) => scopes.includes(event.scope) && !superseded.has(event.event_id))
      const pinned = live.filter((event) => event.confidence === 'high').map((event) => `- ${event.content_md}`)
      return {pinned_md: pinned.join('\n'), recent_events: live.slice(-limit).reverse(), ruleset_stamp: 'JARVIS_RULESET=v1.0', snapshot_id: `snap_${randomUUID()}`}
    }
    res.statusCode = 404
    return {error: 'not found'}
  }

  const server = createServer((req, res) => {
    state.requests.push(`${req.method} ${req.url}`)
    const agent = tokens[(req.headers.authorization ?? '').replace(/^Bearer /, '')]
    const send = (status: number, value: unknown) => {
      res.statusCode = status
      if (value === null) return res.end()
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(value))
    }
    if (!agent) return send(401, {error: 'unauthorized'})
    handle(req, res, agent).then(
      (value) => send(res.statusCode === 200 ? 200 : res.statusCode, value),
      (error: Error) => send(400, {error: error.message}),
    )
  })
  // The stand-in is plain HTTP: a WebSocket upgrade is refused the way a server without `/ws/memory` refuses it.
  server.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    ...state,
    get active() {
      return state.active
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections()
        server.close((error) => (error ? reject(error) : resolve()))
      }),
  } as SeedStandIn
}
