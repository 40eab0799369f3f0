/**
 * Fan-out of server → client messages to every WebSocket connected on `/ws/memory` — of this process, and through
 * the storage's relay (PostgreSQL NOTIFY) of every other process serving the same database.
 *
 * Under load the fan-out is most of a server's work (every push is a message to every client), and what it costs is
 * mostly system calls: one write per socket, whatever it carries. So a message is encoded once, not once per socket,
 * and the messages waiting for a socket go to it in one write (its frames corked together). A quiet server writes at
 * the end of the turn of the event loop that broadcast; a busy one waits between two writes at least FLUSH_MS, and
 * longer when its writes take long (many sockets, a contended machine): the fan-out keeps to FLUSH_SHARE of the
 * process's time, so each write carries more messages the busier it is, never waiting more than MAX_FLUSH_MS. The
 * messages for the other processes go at the same moment, together (one NOTIFY). Each socket still gets each
 * message as its own frame, in the order they were broadcast.
 */
import {performance} from 'node:perf_hooks'

import createDebug from 'debug'
import * as wsModule from 'ws'
import type {WebSocket} from 'ws'

import {canRead} from '../events/rules.js'
import type {BroadcastRelay, KeyRole} from './storage/types.js'

const debug = createDebug('jarvis:server:ws')

/** `ws` readyState OPEN. */
const OPEN = 1
/** Least time between two writes of the fan-out: what a broadcast may wait, under load, to share a write. */
export const FLUSH_MS = 4
/** Most time between two writes of the fan-out, however long they take: the longest a broadcast waits. */
export const MAX_FLUSH_MS = 50
/** The share of a busy process's time its fan-out's writes may take: after a write of d ms, the next one d / FLUSH_SHARE after it began. */
export const FLUSH_SHARE = 0.1

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

/** The socket `ws` writes to (a net.Socket). */
interface RawSocket {
  cork(): void
  uncork(): void
  write(data: Buffer): boolean
}

function rawSocket(socket: WebSocket): RawSocket | undefined {
  const raw = (socket as unknown as {_socket?: Partial<RawSocket>})._socket
  return typeof raw?.cork === 'function' && typeof raw.uncork === 'function' && typeof raw.write === 'function' ? (raw as RawSocket) : undefined
}

/** `ws`'s framing (RFC 6455), which its types do not declare. */
const frameOf = (wsModule as unknown as {Sender: {frame(data: Buffer, options: {fin: boolean; rsv1: boolean; opcode: number; mask: boolean; readOnly: boolean}): Buffer[]}}).Sender.frame

/** A message waiting in the outbox: its text, and its frame once made. */
interface Outgoing {
  /** Its place among the messages of one write: the sockets with the same list get the same bytes. */
  n: number
  payload: Buffer
  /** The whole text frame, header and payload: a server's frames are not masked, so they are the same bytes for every socket. */
  frame: Buffer
}

export class Broadcaster {
  private readonly clients = new Map<WebSocket, Listener>()
  /** Messages waiting for the next write, per socket, in the order they were broadcast. */
  private readonly outbox = new Map<WebSocket, Outgoing[]>()
  /** How many messages went into the outbox since the last write. */
  private queued = 0
  /** Messages broadcast here since the last write, for the other processes (relay). */
  private toRelay: string[] = []
  private flushing = false
  /** When the last write of the fan-out began (performance.now()). */
  private lastFlush = Number.NEGATIVE_INFINITY
  /** Least time from the last write's start to the next one (FLUSH_MS … MAX_FLUSH_MS, from what the last one took). */
  private gap = FLUSH_MS

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
    if (this.relay !== undefined) {
      this.toRelay.push(data)
      this.schedule()
    }
  }

  /** Sends a message relayed from another process to this process's open clients that may read it. */
  deliver(data: string): void {
    this.sendTo(data, audienceOf(JSON.parse(data) as ServerMessage))
  }

  private sendTo(data: string, to: (listener: Listener) => boolean): void {
    let outgoing: Outgoing | undefined
    for (const [socket, listener] of this.clients) {
      if (socket.readyState !== OPEN || !to(listener)) continue
      if (outgoing === undefined) {
        const payload = Buffer.from(data, 'utf8')
        outgoing = {n: this.queued++, payload, frame: Buffer.concat(frameOf(payload, {fin: true, rsv1: false, opcode: 1, mask: false, readOnly: false}))}
      }
      const queued = this.outbox.get(socket)
      if (queued === undefined) this.outbox.set(socket, [outgoing])
      else queued.push(outgoing)
    }
    if (outgoing !== undefined) this.schedule()
  }

  private schedule(): void {
    if (this.flushing) return
    this.flushing = true
    const wait = this.lastFlush + this.gap - performance.now()
    if (wait <= 0) setImmediate(() => this.flush())
    else setTimeout(() => this.flush(), wait)
  }

  /**
   * Sends the waiting messages to the other processes, and to each socket its waiting frames in one write. The
   * sockets that wait for the same messages (most: a MEM_UPDATE is for every one) are written the same bytes, joined
   * once. A socket whose connection negotiated an extension (`ws` compresses only if asked to) is sent by `ws`.
   */
  private flush(): void {
    this.flushing = false
    const began = performance.now()
    this.lastFlush = began
    const relayed = this.toRelay
    this.toRelay = []
    // Published in one turn, they go in one NOTIFY. A lost one loses no data: a --watch client of another process
    // catches up at its next sync.
    for (const data of relayed) this.relay?.publish(data).catch((error: Error) => debug('broadcast to the other processes failed: %s', error.message))
    const outbox = [...this.outbox]
    this.outbox.clear()
    this.queued = 0
    const joined = new Map<string, Buffer>()
    for (const [socket, messages] of outbox) {
      if (socket.readyState !== OPEN) continue
      const raw = rawSocket(socket)
      if (raw === undefined || socket.extensions !== '') {
        raw?.cork()
        for (const {payload} of messages) socket.send(payload, {binary: false}, (error) => error && debug('send to a client failed: %s', error.message))
        raw?.uncork()
        continue
      }
      let bytes: Buffer | undefined
      if (messages.length === 1) bytes = messages[0].frame
      else {
        const key = messages.map((message) => message.n).join(',')
        bytes = joined.get(key)
        if (bytes === undefined) {
          bytes = Buffer.concat(messages.map((message) => message.frame))
          joined.set(key, bytes)
        }
      }
      // A failed write is the connection's error, which `ws` handles (it closes the socket).
      raw.write(bytes)
    }
    this.gap = Math.min(MAX_FLUSH_MS, Math.max(FLUSH_MS, (performance.now() - began) / FLUSH_SHARE))
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
