/**
 * `jarvis mcp`: the MCP server on stdio for one agent session. stdout carries the protocol only; diagnostics go
 * to stderr through `debug` (DEBUG=jarvis:mcp). The session ends when the client closes stdin, once every request
 * read before has been answered.
 */
import {StdioServerTransport} from '@modelcontextprotocol/sdk/server/stdio.js'
import {STDIO_DEFAULT_MAX_BUFFER_SIZE} from '@modelcontextprotocol/sdk/shared/stdio.js'
import type {JSONRPCMessage, RequestId} from '@modelcontextprotocol/sdk/types.js'
import createDebug from 'debug'

import {LocalBackend, type LocalBackendOptions} from './local.js'
import {createMcpServer} from './server.js'

const debug = createDebug('jarvis:mcp')

/**
 * The largest message read from stdin. The SDK's default (10 MB) closes the session when a client sends more;
 * a 4 MiB file whose every character is escaped in JSON is 24 MB. Our input schemas refuse what is too big.
 */
export const STDIO_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

/**
 * The largest answer written to stdout. The SDK's client reads at most STDIO_DEFAULT_MAX_BUFFER_SIZE (10 MiB) of one
 * message, the chunk of stdout it has read with it included, and past that closes the session ("Connection
 * closed", then "Not connected" for every call): a larger answer is sent as a tool error saying so (exit 2). The
 * largest file a sync allows fits: 4 MiB of characters JSON escapes with a backslash is 8 MiB as memory_read's text.
 */
export const STDIO_MAX_ANSWER_BYTES = STDIO_DEFAULT_MAX_BUFFER_SIZE - 1024 * 1024

export interface StdioOptions extends LocalBackendOptions {
  version: string
  stdin?: NodeJS.ReadableStream & {pause(): unknown}
  stdout?: NodeJS.WritableStream
}

/** Serves until the client closes stdin (or the transport fails); then stops the watcher and resolves. */
export async function serveStdio(options: StdioOptions): Promise<void> {
  const backend = await LocalBackend.open(options)
  const inflight = new Set<Promise<unknown>>()
  const mcp = createMcpServer(backend, {
    version: options.version,
    inflight,
    maxAnswerBytes: STDIO_MAX_ANSWER_BYTES,
    instructions: 'jarvis: the shared memory of the agents of this project. Read it first (memory_snapshot), look things up (recall, memory_search), write what was settled (memory_append).',
  })
  const stdin = (options.stdin ?? process.stdin) as NodeJS.ReadStream
  const stdout = (options.stdout ?? process.stdout) as NodeJS.WriteStream
  const transport = new AnsweringTransport(stdin, stdout)
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve()
  })
  transport.onerror = (error) => debug('transport: %s', error.message)
  await mcp.connect(transport)
  let ending = false
  const end = () => {
    if (ending) return
    ending = true
    // Closing the server aborts the requests still running, and their answers are never written: the client's
    // last calls (a write, then EOF) are answered, and their answers flushed, first.
    if (transport.unanswered.size > 0) debug('stdin closed: answering %d request(s) first', transport.unanswered.size)
    void transport
      .allAnswered()
      .then(() => flushed(stdout))
      .finally(() => mcp.close())
  }
  stdin.once('end', end)
  stdin.once('close', end)
  debug('serving %s on stdio', backend.root ?? '(no tree)')
  await closed
  // A call still running when the transport failed finishes (a write is completed, its lock released); its answer has nowhere to go.
  if (inflight.size > 0) debug('waiting for %d call(s) in flight', inflight.size)
  await Promise.allSettled([...inflight])
  await backend.close()
}

/**
 * The SDK's stdio transport, keeping the client's requests not answered yet: each request read adds one, its answer
 * written (or the client's cancellation of it, which the server answers with nothing) removes it.
 */
class AnsweringTransport extends StdioServerTransport {
  readonly unanswered = new Set<RequestId>()
  private answered: (() => void) | undefined

  constructor(stdin: NodeJS.ReadStream, stdout: NodeJS.WriteStream) {
    super(stdin, stdout, {maxBufferSize: STDIO_MAX_MESSAGE_BYTES})
    // The server keeps this handler and calls it before its own (Protocol.connect).
    this.onmessage = (message) => this.received(message)
  }

  private received(message: JSONRPCMessage): void {
    if (!('method' in message)) return
    if ('id' in message) this.unanswered.add(message.id)
    else if (message.method === 'notifications/cancelled') this.settled((message.params as {requestId?: RequestId} | undefined)?.requestId)
  }

  override async send(message: JSONRPCMessage): Promise<void> {
    await super.send(message)
    if (!('method' in message) && 'id' in message) this.settled(message.id)
  }

  private settled(id: RequestId | undefined): void {
    if (id !== undefined) this.unanswered.delete(id)
    if (this.unanswered.size === 0) this.answered?.()
  }

  /** Resolves once every request read so far has been answered, its answer written. */
  allAnswered(): Promise<void> {
    if (this.unanswered.size === 0) return Promise.resolve()
    return new Promise((resolve) => (this.answered = resolve))
  }
}

/** Resolves once everything written to `stream` so far has been handed to the system (or the stream failed). */
function flushed(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    if (!stream.writable) resolve()
    else stream.write('', () => resolve())
  })
}
