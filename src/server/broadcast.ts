/**
 * Fan-out of server → client messages to every WebSocket connected on `/ws/memory`.
 */
import createDebug from 'debug'
import type {WebSocket} from 'ws'

const debug = createDebug('jarvis:server:ws')

/** `ws` readyState OPEN. */
const OPEN = 1

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

export interface HelloMessage {
  type: 'HELLO'
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

export type ServerMessage = MemUpdateMessage | StateChangedMessage | EventAppendedMessage | HelloMessage | PongMessage | ErrorMessage

export class Broadcaster {
  private readonly clients = new Map<WebSocket, string>()

  add(socket: WebSocket, agentId: string): void {
    this.clients.set(socket, agentId)
    socket.once('close', () => this.clients.delete(socket))
    debug('client %s connected (%d open)', agentId, this.clients.size)
  }

  get size(): number {
    return this.clients.size
  }

  /** Sends `message` to every open client (or those whose agent `to` accepts); a client whose send fails is dropped. */
  broadcast(message: ServerMessage, to: (agentId: string) => boolean = () => true): void {
    const data = JSON.stringify(message)
    for (const [socket, agentId] of this.clients) {
      if (socket.readyState !== OPEN || !to(agentId)) continue
      socket.send(data, (error) => {
        if (error) debug('send to a client failed: %s', error.message)
      })
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
  }
}

export function send(socket: WebSocket, message: ServerMessage): void {
  if (socket.readyState === OPEN) socket.send(JSON.stringify(message))
}
