/**
 * The client side of `/ws/memory` (docs/protocol.md): one subscription that stays up until closed.
 *
 * - The token goes in the `Authorization` header of the upgrade; a refused token is an HTTP 401 that never opens.
 * - An application heartbeat (`{type: "PING"}`, answered `PONG`) goes out every 5 s while open. Any message, even
 *   one ignored, counts as a sign of life; 15 s without one declares the server partitioned (seed 003 §6), once
 *   per outage. An open socket that went silent is dropped and dialled again.
 * - The socket reconnects with backoff, 250 ms doubling to 10 s, and back to 250 ms after each open.
 * - Messages are zod-parsed here and only `MEM_UPDATE` / `STATE_CHANGED` are handed on: `HELLO`, `PONG`, `ERROR`
 *   and types this client does not know are ignored (a newer server may send more).
 */
import createDebug from 'debug'
import {WebSocket} from 'undici'

import {formatIssues, wsMessageSchema, type WsMessage} from '../schemas/index.js'

const debug = createDebug('jarvis:protocol:ws')

/** Seed 003 §6.1. */
export const HEARTBEAT_MS = 5000
export const PARTITION_MS = 15_000
export const RECONNECT_INITIAL_MS = 250
export const RECONNECT_MAX_MS = 10_000

/** How long `close()` waits for a socket's closing handshake before it lets the socket go. */
const CLOSE_GRACE_MS = 1000

export type SubscriptionEvent =
  /** `reconnect`: an earlier open came before this one. `partitioned`: a partition was declared since the last open. */
  | {type: 'connected'; reconnect: boolean; partitioned: boolean}
  /** Only for a socket that had opened; a failed dial is retried silently. */
  | {type: 'disconnected'; code: number; reason: string}
  /** `connected`: the socket was open when the silence was declared (it is then dropped and dialled again). */
  | {type: 'partition'; silentMs: number; connected: boolean}

export interface SubscribeOptions {
  /** `ws://…/ws/memory`; see `wsUrlFor`. */
  url: string
  /** Bearer token for the upgrade. */
  token?: string
  heartbeatMs?: number
  partitionMs?: number
  reconnectInitialMs?: number
  reconnectMaxMs?: number
  onMessage?: (message: WsMessage) => void
  onEvent?: (event: SubscriptionEvent) => void
}

export interface Subscription {
  /** Resolves once the first connection attempt has settled: opened, refused, timed out, or `close()` called. */
  settled: Promise<void>
  /** True while a socket is open and not declared partitioned. */
  connected(): boolean
  /** Stops the heartbeat and the reconnects and closes the socket; no callback runs after it is called. Idempotent. */
  close(): Promise<void>
}

/** `http://host:port/x` → `ws://host:port/x/ws/memory`. */
export function wsUrlFor(server: string): string {
  const url = new URL(server)
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:'
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/ws/memory`
  url.search = ''
  url.hash = ''
  return url.toString()
}

/** A frame of `/ws/memory` → the message to act on, or `undefined` for one to ignore. */
export function parseWsMessage(data: string | ArrayBuffer): WsMessage | undefined {
  let json: unknown
  try {
    json = JSON.parse(typeof data === 'string' ? data : Buffer.from(data).toString('utf8'))
  } catch {
    debug('ignored a message that is not JSON')
    return undefined
  }
  const parsed = wsMessageSchema.safeParse(json)
  if (parsed.success) return parsed.data
  const type = (json as {type?: unknown} | null)?.type
  // A message is only a reason to sync (its fields are hints, never data): a known type whose fields are out of
  // shape still says that something changed, so it is kept without them rather than dropped.
  const bare = wsMessageSchema.safeParse({type})
  if (bare.success) {
    debug('%s kept without its fields: %s', String(type), formatIssues(parsed.error.issues).join('; '))
    return bare.data
  }
  debug('message %s', String(type))
  return undefined
}

export function subscribe(options: SubscribeOptions): Subscription {
  const {url, token} = options
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS
  const partitionMs = options.partitionMs ?? PARTITION_MS
  const reconnectInitialMs = options.reconnectInitialMs ?? RECONNECT_INITIAL_MS
  const reconnectMaxMs = options.reconnectMaxMs ?? RECONNECT_MAX_MS

  let closed = false
  let open = false
  let socket: WebSocket | undefined
  // Bumped whenever a socket is given up, so that the late events of an abandoned socket are ignored.
  let generation = 0
  let everConnected = false
  let attempts = 0
  let lastMessageAt = Date.now()
  let partitioned = false
  let reconnectTimer: NodeJS.Timeout | undefined
  let handshakeTimer: NodeJS.Timeout | undefined
  let settle: () => void = () => {}
  const settled = new Promise<void>((resolve) => (settle = resolve))
  const closing = new Set<Promise<void>>()

  function abandon(ws: WebSocket | undefined): void {
    if (!ws) return
    generation++
    const done = new Promise<void>((resolve) => {
      if (ws.readyState === WebSocket.CLOSED) return resolve()
      ws.addEventListener('close', () => resolve())
      setTimeout(resolve, CLOSE_GRACE_MS).unref()
    })
    closing.add(done)
    void done.then(() => closing.delete(done))
    try {
      ws.close(1000, 'bye')
    } catch (error) {
      debug('close: %s', (error as Error).message)
    }
  }

  function connect(): void {
    if (closed) return
    const mine = ++generation
    debug('connecting to %s (attempt %d)', url, attempts + 1)
    let ws: WebSocket
    try {
      ws = new WebSocket(url, token ? {headers: {authorization: `Bearer ${token}`}} : undefined)
    } catch (error) {
      debug('cannot open %s: %s', url, (error as Error).message)
      settle()
      scheduleReconnect()
      return
    }
    socket = ws
    ws.binaryType = 'arraybuffer'
    // A peer that takes the connection but never completes the handshake is as good as gone.
    clearTimeout(handshakeTimer)
    handshakeTimer = setTimeout(() => {
      if (mine !== generation || closed) return
      debug('no handshake from %s within %d ms', url, partitionMs)
      socket = undefined
      abandon(ws)
      settle()
      scheduleReconnect()
    }, partitionMs)
    ws.addEventListener('open', () => {
      clearTimeout(handshakeTimer)
      if (mine !== generation || closed) return
      const reconnect = everConnected
      const afterPartition = partitioned
      everConnected = true
      attempts = 0
      open = true
      partitioned = false
      lastMessageAt = Date.now()
      debug('connected to %s', url)
      options.onEvent?.({type: 'connected', reconnect, partitioned: afterPartition})
      settle()
    })
    ws.addEventListener('message', (event) => {
      if (mine !== generation || closed) return
      lastMessageAt = Date.now()
      const message = parseWsMessage(event.data as string | ArrayBuffer)
      if (message) options.onMessage?.(message)
    })
    ws.addEventListener('error', (event) => {
      if (mine !== generation) return
      debug('socket error: %s', (event as {message?: string}).message ?? 'unknown')
    })
    ws.addEventListener('close', (event) => {
      clearTimeout(handshakeTimer)
      if (mine !== generation || closed) return
      socket = undefined
      const wasOpen = open
      open = false
      debug('socket closed (%d %s)', event.code, event.reason)
      if (wasOpen) options.onEvent?.({type: 'disconnected', code: event.code, reason: event.reason})
      settle()
      scheduleReconnect()
    })
  }

  function scheduleReconnect(): void {
    if (closed) return
    clearTimeout(reconnectTimer)
    const delay = Math.min(reconnectMaxMs, reconnectInitialMs * 2 ** attempts)
    attempts++
    debug('reconnecting in %d ms', delay)
    reconnectTimer = setTimeout(connect, delay)
  }

  let lastPingAt = 0
  function heartbeat(): void {
    if (closed) return
    if (socket && open && Date.now() - lastPingAt >= heartbeatMs) {
      lastPingAt = Date.now()
      try {
        socket.send(JSON.stringify({type: 'PING'}))
      } catch (error) {
        debug('PING failed: %s', (error as Error).message)
      }
    }
    const silentMs = Date.now() - lastMessageAt
    if (silentMs > partitionMs && !partitioned) {
      partitioned = true
      const wasOpen = open
      debug('no message for %d ms: partitioned', silentMs)
      options.onEvent?.({type: 'partition', silentMs, connected: wasOpen})
      if (wasOpen && !closed) {
        // The socket looks open but nothing comes through it: drop it and dial again.
        open = false
        const dead = socket
        socket = undefined
        abandon(dead)
        attempts = 0
        scheduleReconnect()
      }
    }
  }
  // PING every heartbeatMs; silence is checked more often so that a partition is declared close to partitionMs.
  const heartbeatTimer = setInterval(heartbeat, Math.min(heartbeatMs, 1000))

  let closingAll: Promise<void> | undefined
  function close(): Promise<void> {
    if (closingAll) return closingAll
    closed = true
    settle()
    clearInterval(heartbeatTimer)
    clearTimeout(reconnectTimer)
    clearTimeout(handshakeTimer)
    const ws = socket
    socket = undefined
    open = false
    abandon(ws)
    closingAll = Promise.all(closing).then(() => undefined)
    return closingAll
  }

  connect()
  return {settled, connected: () => open, close}
}
