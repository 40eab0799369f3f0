/**
 * `codex app-server` on stdio, for tests that ask the real Codex CLI what it sees (its MCP servers, its threads):
 * JSON-RPC 2.0, one JSON object per line, without the `jsonrpc` field in its answers.
 */
import {type ChildProcessWithoutNullStreams, spawn} from 'node:child_process'

export interface RpcMessage {
  id?: number
  method?: string
  params?: Record<string, any>
  result?: Record<string, any>
  error?: {code: number; message: string}
}

/**
 * `codex app-server` on stdio: JSON-RPC 2.0, one JSON object per line, without the `jsonrpc` field in its answers.
 * Every notification is kept, so a wait never misses one sent before it started.
 */
export class AppServer {
  private readonly child: ChildProcessWithoutNullStreams
  private readonly exited: Promise<void>
  private readonly pending = new Map<number, (message: RpcMessage) => void>()
  private readonly waiters = new Set<() => void>()
  readonly notifications: RpcMessage[] = []
  stderr = ''
  private next = 0
  private ended = false

  constructor(codex: string, cwd: string, env: NodeJS.ProcessEnv) {
    this.child = spawn(codex, ['app-server'], {cwd, env, stdio: ['pipe', 'pipe', 'pipe']})
    let buffer = ''
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk
      for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
        const line = buffer.slice(0, i).trim()
        buffer = buffer.slice(i + 1)
        if (line) this.receive(JSON.parse(line) as RpcMessage)
      }
    })
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => (this.stderr = (this.stderr + chunk).slice(-20_000)))
    this.child.stdin.on('error', () => {})
    this.exited = new Promise((resolve) =>
      this.child.once('close', () => {
        this.ended = true
        for (const answer of this.pending.values()) answer({error: {code: -1, message: `codex app-server exited:\n${this.stderr}`}})
        this.pending.clear()
        for (const wake of this.waiters) wake()
        resolve()
      }),
    )
  }

  private receive(message: RpcMessage): void {
    if (message.id !== undefined && message.method === undefined) {
      this.pending.get(message.id)?.(message)
      this.pending.delete(message.id)
      return
    }
    this.notifications.push(message)
    for (const wake of this.waiters) wake()
  }

  async request(method: string, params: Record<string, unknown>): Promise<Record<string, any>> {
    const id = ++this.next
    const answer = new Promise<RpcMessage>((resolve) => this.pending.set(id, resolve))
    this.child.stdin.write(JSON.stringify({jsonrpc: '2.0', id, method, params}) + '\n')
    const message = await answer
    if (message.error) throw new Error(`${method}: ${message.error.message}`)
    return message.result ?? {}
  }

  notify(method: string): void {
    this.child.stdin.write(JSON.stringify({jsonrpc: '2.0', method}) + '\n')
  }

  /** The first notification (already received or to come) that `match` accepts; fails if codex exits first. */
  async waitFor(match: (message: RpcMessage) => boolean, what: string): Promise<RpcMessage> {
    for (;;) {
      const found = this.notifications.find(match)
      if (found) return found
      if (this.ended) throw new Error(`codex app-server exited before ${what}:\n${this.stderr}`)
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake)
          resolve()
        }
        this.waiters.add(wake)
      })
    }
  }

  async close(): Promise<void> {
    if (!this.ended) {
      this.child.stdin.end()
      this.child.kill('SIGTERM')
    }
    await this.exited
  }
}

/** `initialize` and the `initialized` notification: what every client sends before anything else. */
export async function startAppServer(codex: string, cwd: string, env: NodeJS.ProcessEnv): Promise<AppServer> {
  const app = new AppServer(codex, cwd, env)
  try {
    await app.request('initialize', {clientInfo: {name: 'jarvis-test', version: '1.0.0'}})
  } catch (error) {
    await app.close()
    throw error
  }
  app.notify('initialized')
  return app
}
