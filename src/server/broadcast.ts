/**
 * Fan-out of server → client messages to every WebSocket connected on `/ws/memory` — of this process, and through
 * the storage's relay (PostgreSQL NOTIFY) of every other process serving the same database.
 *
 * Under load the fan-out is most of a server's work (every push is a message to every client): a message is encoded
 * once, not once per socket, and the messages waiting for a socket go to it in one write (its frames corked
 * together) instead of one system call each. A quiet server writes at the end of the turn of the event loop that
 * broadcast; a busy one at most every FLUSH_MS, so that each write carries several messages. Each socket still gets
 * each message as its own frame, in the order they were broadcast.
 */
import {performance} from 'node:perf_hooks'

import createDebug from 'debug'
import type {WebSocket} from 'ws'

import {canRead} from '../events/rules.js'
import type {BroadcastRelay, KeyRole} from './storage/types.js'

const debug = createDebug('jarvis:server:ws')

/** `ws` readyState OPEN. */
const OPEN = 1
/** Least time between two writes of the fan-out: what a broadcast may wait, under load, to share a write. */
export const FLUSH_MS = 4

export interface MemUpdateMessage {
  type: 'MEM_UPDATE'
  path: string
  rev: number
  author: string
  seq: number
  updatedAt: string
  hash?: string
  deleted?: true
}

export interface StateChangedMessage {
  type: 'STATE_CHANGED'
  projectId: string
  switchedAt: string
  switchedBy: string
}

/** An event was appended to the log: sent only to the clients whose agent may read its scope. */
export interface EventAppendedMessage {
  type: 'EVENT_APPENDED'
  event_id: string
  scope: string
  kind: string
  dedupe_key: string
  agent_id: string
  created_at: string
}

/** An audit entry was recorded: sent only to its agent's clients and to admin keys (who may read it). */
export interface AuditAppendedMessage {
  type: 'AUDIT_APPENDED'
  seq: number
  kind: string
  agent: string
  at: string
}

export interface HelloMessage {
  type: 'HELLO'
  /** The workspace of the socket's token: every message on it is of that workspace's memory. */
  workspace: string
  agentId: string
  seq: number
  serverTime: string
}

export interface PongMessage {
  type: 'PONG'
  serverTime: string
}

export interface ErrorMessage {
  type: 'ERROR'
  error: string
  message: string
}

export type ServerMessage = MemUpdateMessage | StateChangedMessage | EventAppendedMessage | AuditAppendedMessage | HelloMessage | PongMessage | ErrorMessage

/** Who is on a socket: its token's agent, and whether that token is an admin key (which reads every scope). */
interface Listener {
  agentId: string
  admin: boolean
}

/** The socket `ws` writes to (a net.Socket): corked while a turn's frames are written, so they leave together. */
interface Corkable {
  cork(): void
  uncork(): void
}

function rawSocket(socket: WebSocket): Corkable | undefined {
  const raw = (socket as unknown as {_socket?: Partial<Corkable>})._socket
  return typeof raw?.cork === 'function' && typeof raw.uncork === 'function' ? (raw as Corkable) : undefined
}

export class Broadcaster {
  private readonly clients = new Map<WebSocket, Listener>()
  /** Frames waiting for the end of this turn of the event loop, per socket, in the order they were broadcast. */
  private readonly outbox = new Map<WebSocket, Buffer[]>()
  private flushing = false
  /** When the last write of the fan-out began (performance.now()). */
  private lastFlush = Number.NEGATIVE_INFINITY

  constructor(private readonly relay?: BroadcastRelay) {}

  add(socket: WebSocket, agentId: string, role?: KeyRole): void {
    this.clients.set(socket, {agentId, admin: role === 'admin'})
    socket.once('close', () => {
      this.clients.delete(socket)
      this.outbox.delete(socket)
    })
    debug('client %s connected (%d open)', agentId, this.clients.size)
  }

  get size(): number {
    return this.clients.size
  }

  /** Sends `message` to every open client that may read it (audienceOf), here and in the other processes. */
  broadcast(message: ServerMessage): void {
    const data = JSON.stringify(message)
    this.sendTo(data, audienceOf(message))
    // A lost NOTIFY loses no data: a --watch client of another process catches up at its next sync.
    this.relay?.publish(data).catch((error: Error) => debug('broadcast to the other processes failed: %s', error.message))
  }

  /** Sends a message relayed from another process to this process's open clients that may read it. */
  deliver(data: string): void {
    this.sendTo(data, audienceOf(JSON.parse(data) as ServerMessage))
  }

  private sendTo(data: string, to: (listener: Listener) => boolean): void {
    let frame: Buffer | undefined
    for (const [socket, listener] of this.clients) {
      if (socket.readyState !== OPEN || !to(listener)) continue
      frame ??= Buffer.from(data, 'utf8')
      const queued = this.outbox.get(socket)
      if (queued === undefined) this.outbox.set(socket, [frame])
      else queued.push(frame)
    }
    if (frame !== undefined && !this.flushing) {
      this.flushing = true
      const wait = this.lastFlush + FLUSH_MS - performance.now()
      if (wait <= 0) setImmediate(() => this.flush())
      else setTimeout(() => this.flush(), wait)
    }
  }

  /** Writes every socket's waiting frames, corked: one write per socket. */
  private flush(): void {
    this.flushing = false
    this.lastFlush = performance.now()
    const outbox = [...this.outbox]
    this.outbox.clear()
    for (const [socket, frames] of outbox) {
      if (socket.readyState !== OPEN) continue
      const raw = rawSocket(socket)
      raw?.cork()
      for (const frame of frames) {
        socket.send(frame, {binary: false}, (error) => {
          if (error) debug('send to a client failed: %s', error.message)
        })
      }
      raw?.uncork()
    }
  }

  /** Starts a close handshake with every client (1001 going away). */
  closeAll(reason = 'server shutting down'): void {
    for (const socket of this.clients.keys()) socket.close(1001, reason)
  }

  /** Drops every client at once (after the handshake had its time). */
  terminateAll(): void {
    for (const socket of this.clients.keys()) socket.terminate()
    this.clients.clear()
    this.outbox.clear()
  }
}

/**
 * Who may hear a message: an appended event only the agents that may read its scope (a private `agent:<id>` event
 * only that agent), an audit entry its agent and admin keys, everything else every client. Decided from the message itself, so a message relayed from
 * another process reaches the same clients as one made here.
 */
function audienceOf(message: ServerMessage): (listener: Listener) => boolean {
  if (message.type === 'EVENT_APPENDED') return ({agentId, admin}) => canRead(agentId, message.scope, admin)
  if (message.type === 'AUDIT_APPENDED') return ({agentId, admin}) => admin || agentId === message.agent
  return () => true
}

export function send(socket: WebSocket, message: ServerMessage): void {
  if (socket.readyState === OPEN) socket.send(JSON.stringify(message))
}
