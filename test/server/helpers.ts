/** Helpers for the server tests: a real server on 127.0.0.1:0, an HTTP caller, a WebSocket client. */
import {request, WebSocket} from 'undici'

import {Cleanup, tempDir} from './temp.js'
import {databaseFor} from '../helpers/backends.js'
import {startServer, type RunningServer, type StartServerOptions} from '../../src/server/start.js'

export const AGENTS = ['chatgpt', 'claude', 'gemini', 'openclaw'] as const
export type Agent = (typeof AGENTS)[number]

/** Fresh random tokens for each run: no secret lives in the repository. */
export function makeTokens(): {byAgent: Record<Agent, string>; map: Record<string, string>} {
  const byAgent = Object.fromEntries(AGENTS.map((agent) => [agent, `t-${agent}-${Math.random().toString(36).slice(2)}-${Date.now()}`])) as Record<Agent, string>
  const map = Object.fromEntries(Object.entries(byAgent).map(([agent, token]) => [token, agent]))
  return {byAgent, map}
}

export {Cleanup, tempDir} from './temp.js'

export interface Answer<T = any> {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: T
  text: string
}

export interface Harness {
  server: RunningServer
  dataDir: string
  tokens: Record<Agent, string>
  /** JSON request as `agent` (default claude); `body` is JSON-encoded unless `raw` is given. */
  call<T = any>(method: 'GET' | 'POST', path: string, body?: unknown, options?: CallOptions): Promise<Answer<T>>
  push(files: Record<string, string>, base?: Record<string, number | null>, deletes?: string[], agent?: Agent): Promise<Answer>
  status(since?: number): Promise<Answer>
  /** Stops the server (idempotent) without removing the data directory. */
  stop(): Promise<void>
}

export interface CallOptions {
  agent?: Agent
  /** Authorization header as is; `null` sends none. */
  authorization?: string | null
  raw?: string | Buffer
  contentType?: string
  /** More request headers. */
  headers?: Record<string, string>
}

export async function call<T = any>(
  url: string,
  token: string | null,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  options: Omit<CallOptions, 'agent'> = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = {...options.headers}
  const authorization = options.authorization === undefined ? (token === null ? null : `Bearer ${token}`) : options.authorization
  if (authorization !== null) headers.authorization = authorization
  let payload: string | Buffer | undefined
  if (options.raw !== undefined) payload = options.raw
  else if (body !== undefined) payload = JSON.stringify(body)
  if (payload !== undefined) headers['content-type'] = options.contentType ?? 'application/json'
  const response = await request(`${url}${path}`, {method, headers, body: payload})
  const text = await response.body.text()
  let parsed: any
  try {
    parsed = text === '' ? undefined : JSON.parse(text)
  } catch {
    parsed = undefined
  }
  return {status: response.statusCode, headers: response.headers, body: parsed, text}
}

/** Starts a server on 127.0.0.1, port 0, silent, with fresh tokens and a temp data dir (or the given one). */
export async function startHarness(options: Partial<StartServerOptions> & {dataDir?: string; tokensByAgent?: Record<Agent, string>} = {}): Promise<Harness> {
  const dataDir = options.dataDir ?? (await tempDir())
  const tokens = options.tokensByAgent ?? makeTokens().byAgent
  const map = Object.fromEntries(Object.entries(tokens).map(([agent, token]) => [token, agent]))
  const server = await startServer({host: '127.0.0.1', port: 0, logLevel: 'silent', tokens: map, databaseUrl: await databaseFor(dataDir), ...options, dataDir})
  const harness: Harness = {
    server,
    dataDir,
    tokens,
    call: (method, path, body, callOptions = {}) => call(server.url, tokens[callOptions.agent ?? 'claude'], method, path, body, callOptions),
    push: (files, base, deletes, agent = 'claude') => {
      const body: Record<string, unknown> = {files}
      if (base) body.base = base
      if (deletes) body.deletes = deletes
      return harness.call('POST', '/api/memory/push', body, {agent})
    },
    status: (since) => harness.call('GET', since === undefined ? '/api/memory/status' : `/api/memory/status?since=${since}`),
    stop: () => server.close(),
  }
  return harness
}

/** Starts a harness whose close (and temp dir, unless `dataDir` is given) `cleanup` takes care of. */
export async function harness(cleanup: Cleanup, options: Parameters<typeof startHarness>[0] = {}): Promise<Harness> {
  const started = await startHarness(options)
  cleanup.add(() => started.stop())
  if (options.dataDir === undefined) cleanup.dir(started.dataDir)
  return started
}

export interface WsClient {
  socket: WebSocket
  messages: any[]
  /** The first message (already received or to come) that satisfies `match`. */
  next(match: (message: any) => boolean, timeoutMs?: number): Promise<any>
  close(): Promise<void>
  closed: Promise<{code: number; reason: string}>
}

/** A real WebSocket client (undici) on /ws/memory; resolves after HELLO, so broadcasts after it are seen. */
export async function connectWs(wsUrl: string, token: string, via: 'header' | 'query' = 'header'): Promise<WsClient> {
  const socket =
    via === 'header'
      ? new WebSocket(wsUrl, {headers: {authorization: `Bearer ${token}`}})
      : new WebSocket(`${wsUrl}?token=${encodeURIComponent(token)}`)
  const messages: any[] = []
  const waiters: {match: (m: any) => boolean; resolve: (m: any) => void}[] = []
  socket.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data))
    messages.push(message)
    for (const waiter of [...waiters]) {
      if (waiter.match(message)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve(message)
      }
    }
  })
  const closed = new Promise<{code: number; reason: string}>((resolve) =>
    socket.addEventListener('close', (event) => resolve({code: event.code, reason: event.reason})),
  )
  const client: WsClient = {
    socket,
    messages,
    closed,
    next(match, timeoutMs = 5000) {
      const found = messages.find(match)
      if (found) return Promise.resolve(found)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching WebSocket message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`)), timeoutMs)
        waiters.push({
          match,
          resolve: (m) => {
            clearTimeout(timer)
            resolve(m)
          },
        })
      })
    },
    async close() {
      if (socket.readyState === socket.CLOSED) return
      socket.close()
      await closed
    },
  }
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener('open', () => resolve(), {once: true})
    socket.addEventListener('error', () => reject(new Error('WebSocket failed to open')), {once: true})
  })
  await client.next((m) => m.type === 'HELLO')
  return client
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
