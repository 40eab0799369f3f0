/**
 * The page's WebSocket on /ws/memory: what agents change reaches every open page without a reload. It reconnects
 * with backoff when the server goes away (a restart) and, once back, tells the pages to reload what they show
 * (broadcasts sent while it was away are not replayed).
 */
export interface LiveMessage {
  type: 'HELLO' | 'MEM_UPDATE' | 'STATE_CHANGED' | 'EVENT_APPENDED' | 'AUDIT_APPENDED' | 'RECONNECTED'
  [field: string]: unknown
}

export type LiveState = 'connecting' | 'live' | 'down'

const RETRY_FIRST_MS = 500
const RETRY_MAX_MS = 5000

export class Live {
  private socket: WebSocket | null = null
  private listeners = new Set<(message: LiveMessage) => void>()
  private stateListeners = new Set<(state: LiveState) => void>()
  private retryMs = RETRY_FIRST_MS
  private timer: number | undefined
  private everOpened = false
  private stopped = false
  state: LiveState = 'connecting'
  /** The token's agent, as the server's HELLO said (kept: a page may start listening after it came). */
  agentId: string | null = null
  /** The token's workspace (HELLO): the one memory this page shows. */
  workspace: string | null = null

  constructor(private readonly token: string) {
    this.open()
  }

  private setState(state: LiveState): void {
    this.state = state
    for (const listener of this.stateListeners) listener(state)
  }

  private open(): void {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws'
    // Browsers cannot set headers on a WebSocket: the server accepts the token in the query on this path only.
    const socket = new WebSocket(`${scheme}://${location.host}/ws/memory?token=${encodeURIComponent(this.token)}`)
    this.socket = socket
    socket.addEventListener('open', () => {
      this.retryMs = RETRY_FIRST_MS
      const reconnect = this.everOpened
      this.everOpened = true
      this.setState('live')
      if (reconnect) this.emit({type: 'RECONNECTED'})
    })
    socket.addEventListener('message', (event) => {
      let message: LiveMessage
      try {
        message = JSON.parse(String(event.data)) as LiveMessage
      } catch {
        return // Not ours to fail on: a message this page cannot read is skipped.
      }
      if (message.type === 'HELLO' && typeof message.agentId === 'string') this.agentId = message.agentId
      if (message.type === 'HELLO' && typeof message.workspace === 'string') this.workspace = message.workspace
      this.emit(message)
    })
    socket.addEventListener('close', () => {
      if (this.stopped) return
      this.setState('down')
      this.timer = window.setTimeout(() => this.open(), this.retryMs)
      this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS)
    })
  }

  private emit(message: LiveMessage): void {
    for (const listener of this.listeners) listener(message)
  }

  subscribe(listener: (message: LiveMessage) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  onState(listener: (state: LiveState) => void): () => void {
    this.stateListeners.add(listener)
    return () => this.stateListeners.delete(listener)
  }

  close(): void {
    this.stopped = true
    window.clearTimeout(this.timer)
    this.socket?.close()
  }
}
