/**
 * The server side of the warm path: a long-lived jarvis in a tree (`jarvis sync --watch`, `jarvis mcp`) listens on
 * the tree's socket (protocol.ts) and answers each request by calling the operation the cold path would call (the
 * caller's `answer`), whose search first waits until the tree watch vouches that the index holds every change made
 * before the request (tree-watch.ts). One server per tree: a live socket is left to its server; a stale one (its server was killed) is
 * replaced. The socket is the user's only (0600, or in a 0700 folder of theirs) and removed at a clean stop.
 */
import {chmodSync, lstatSync, mkdirSync, rmSync} from 'node:fs'
import {createConnection, createServer, type Server, type Socket} from 'node:net'

import createDebug from 'debug'

import {isPrivateDir} from './client.js'
import {ABOUT_OP, answerEnvOf, CALL_OP, type CallFrames, type CallRunner, realRoot, WARM_PROTOCOL, type WarmAbout, type WarmAnswer, type WarmOp, type WarmRequest, warmSocketOf} from './protocol.js'
import type {FreshTree} from './tree-watch.js'

const debug = createDebug('jarvis:warm')

/** A request larger than this is not one of ours. */
const MAX_REQUEST_BYTES = 1 << 20
const OPS: ReadonlySet<string> = new Set<WarmOp>(['recall', 'memory-ls', 'memory-search-files', 'prompt-recall', 'changes'])

/** Answers one request with the operation's result (plain JSON data); a throw becomes an error answer. */
export type WarmHandler = (op: WarmOp, input: Record<string, unknown>) => Promise<unknown>

export interface WarmServerOptions {
  env?: NodeJS.ProcessEnv
  /** Runs the whole calls of bin/jarvis; without it they are declined (the client then runs jarvis itself). */
  runCall?: CallRunner
  /** What started this process, as `jarvis status` names it (WarmAbout's `process`). */
  label?: string
}

export interface WarmServer {
  /** The socket it listens on. */
  path: string
  /** Stops listening and removes the socket (the tree watch is the caller's). Idempotent. */
  close(): Promise<void>
}

/** What is at a socket's path: a server that accepts, a socket left by a server that is gone, or nothing. */
export function probeSocket(path: string): Promise<'live' | 'stale' | 'none'> {
  return new Promise((resolve) => {
    const connection = createConnection(path)
    connection.on('connect', () => {
      connection.destroy()
      resolve('live')
    })
    connection.on('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED' ? 'stale' : error.code === 'ENOENT' ? 'none' : 'live'))
  })
}

/**
 * Starts the warm server of the tree at `root` (as its search index names it), whose answers `tree` keeps fresh;
 * undefined when there is no warm path here (Windows, no socket path that fits, a folder not the user's own) or
 * another server answers for the tree.
 */
export async function serveWarm(root: string, tree: FreshTree, answer: WarmHandler, options: WarmServerOptions = {}): Promise<WarmServer | undefined> {
  const env = options.env ?? process.env
  const real = realRoot(root)
  const socket = warmSocketOf(real, env)
  if (socket === undefined) return undefined
  if (socket.privateDir !== undefined) {
    mkdirSync(socket.privateDir, {recursive: true, mode: 0o700})
    if (!isPrivateDir(socket.privateDir)) {
      debug('no warm path: %s is not a folder of this user alone', socket.privateDir)
      return undefined
    }
  }
  const found = await probeSocket(socket.path)
  if (found === 'live') {
    debug('no warm path from this process: another one answers at %s', socket.path)
    return undefined
  }
  if (found === 'stale') rmSync(socket.path, {force: true})

  const serverEnv = answerEnvOf(env)
  const about: WarmAbout = {process: options.label ?? 'jarvis', pid: process.pid, since: new Date().toISOString(), ran: 0, answered: 0, declined: 0}
  const declined = (reason: string) => {
    about.declined++
    about.lastDeclined = reason
  }
  const connections = new Set<Socket>()
  const server = createServer((connection) => {
    connections.add(connection)
    connection.on('close', () => connections.delete(connection))
    connection.on('error', () => connection.destroy())
    const chunks: Buffer[] = []
    let size = 0
    connection.on('data', (chunk: Buffer) => {
      const end = chunk.indexOf(10)
      chunks.push(end < 0 ? chunk : chunk.subarray(0, end))
      size += chunk.length
      if (size > MAX_REQUEST_BYTES) return void connection.destroy()
      if (end < 0) return
      connection.removeAllListeners('data')
      const request = requestOf(Buffer.concat(chunks).toString('utf8'))
      if (request?.v === WARM_PROTOCOL && request.op === CALL_OP && typeof request.input === 'object' && request.input !== null) return void runCall(connection, request.input)
      void respond(request).then((reply) => connection.end(`${JSON.stringify(reply)}\n`))
    })
  })

  async function respond(request: WarmRequest | undefined): Promise<WarmAnswer> {
    const refuse = (error: string): WarmAnswer => {
      declined(error)
      return {v: WARM_PROTOCOL, ok: false, error}
    }
    if (request === undefined) return refuse('not a request')
    if (request.v !== WARM_PROTOCOL) return refuse(`protocol ${request.v} asked, this server speaks ${WARM_PROTOCOL}`)
    if (request.root !== real) return refuse(`this server answers for ${real}, not ${request.root}`)
    if (request.op === ABOUT_OP) return {v: WARM_PROTOCOL, ok: true, result: about}
    // Which files changed does not depend on the embeddings provider; a search does.
    if (request.env !== serverEnv && request.op !== 'changes') return refuse('another embeddings provider than this server')
    const op = request.op
    if (!isWarmOp(op) || typeof request.input !== 'object' || request.input === null) return refuse(`unknown call ${op}`)
    try {
      // Each operation's search settles the tree first (tree-watch.ts): it sees every change made before this request.
      const result = await answer(op, request.input)
      debug('answered %s ', request.op)
      about.answered++
      return {v: WARM_PROTOCOL, ok: true, result}
    } catch (error) {
      // The operation's own error (a bad value): the caller runs it and says so. Not a question left to it.
      return {v: WARM_PROTOCOL, ok: false, error: error instanceof Error ? error.message : String(error)}
    }
  }

  /**
   * A whole call (protocol.ts's CALL_OP), answered in frames; the connection simply ends if it fails after `accepted`.
   * A client gone before the end (Ctrl-C at a terminal, an agent's hook timeout) aborts the call's signal: as the
   * client's own process would have died with it, the call sends nothing more to the server and leaves the tree.
   */
  async function runCall(connection: Socket, input: Record<string, unknown>): Promise<void> {
    const header = (line: string, body = '') => connection.write(`${line}\n${body}`)
    let accepted = false
    let answered = false
    const clientLeft = new AbortController()
    // Not writableEnded: a client's end makes node end this side too, before 'close'.
    connection.once('close', () => {
      if (answered) return
      debug('the client left before the end: the call is stopped')
      clientLeft.abort()
    })
    const frames: CallFrames = {
      signal: clientLeft.signal,
      declined(reason) {
        debug('declined a call: %s', reason)
        declined(reason)
        answered = true
        connection.end(`declined ${reason.replaceAll('\n', ' ')}\n`)
      },
      accepted() {
        accepted = true
        debug('running a call')
        header('accepted')
      },
      stderr: (text) => header(`err ${Buffer.byteLength(text)}`, text),
      done(stdout, exit) {
        debug('ran a call, exit %d', exit)
        about.ran++
        answered = true
        connection.end(`exit ${exit} ${Buffer.byteLength(stdout)}\n${stdout}`)
      },
    }
    try {
      if (options.runCall === undefined) return frames.declined('this process runs no whole calls')
      await options.runCall(input, real, frames)
    } catch (error) {
      if (accepted) connection.destroy()
      else frames.declined((error as Error).message)
    }
  }

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(socket.path, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (error) {
    // EADDRINUSE: another server started at the same moment and answers for the tree.
    debug('no warm path from this process: %s', (error as Error).message)
    return undefined
  }
  chmodSync(socket.path, 0o600)
  const ours = lstatSync(socket.path).ino
  server.on('error', (error) => debug('warm server: %s', error.message))
  // The first full scan now, not in the first request's time; then the embedding model and the tree's vectors,
  // loaded and brought up to date once, so that a request only embeds its query (search/semantic.ts).
  tree
    .settle()
    .then(async () => (await import('../search/index.js')).prepareSemanticSearch(root))
    .catch((error: unknown) => debug('first refresh: %s', (error as Error).message))
  debug('answering at %s', socket.path)

  let closing: Promise<void> | undefined
  return {
    path: socket.path,
    close: () => (closing ??= stop(server)),
  }

  async function stop(listening: Server): Promise<void> {
    const closed = new Promise<void>((resolve) => listening.close(() => resolve()))
    for (const connection of connections) connection.destroy()
    await closed
    // Only our own socket: a server that replaced it (after this one was thought gone) keeps its own.
    if (lstatSync(socket!.path, {throwIfNoEntry: false})?.ino === ours) rmSync(socket!.path, {force: true})
  }
}

const isWarmOp = (op: string): op is WarmOp => OPS.has(op)

function requestOf(line: string): WarmRequest | undefined {
  try {
    const request = JSON.parse(line) as unknown
    return typeof request === 'object' && request !== null ? (request as WarmRequest) : undefined
  } catch {
    return undefined
  }
}
