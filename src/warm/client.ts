/**
 * The client side of the warm path: ask the tree's warm server, if one runs, before doing the work here. Never
 * fails and never waits long: no socket, a stale one (its server was killed), a server of another protocol, an
 * error, a malformed answer or no answer within the timeout all give `undefined`, and the caller takes the cold
 * path at once. Loads the tree's protocol module only (no zod, no SQLite), and node:net when there is a socket to ask.
 */
import {lstatSync} from 'node:fs'

import {type ABOUT_OP, answerEnvOf, realRoot, WARM_PROTOCOL, type WarmAnswer, type WarmOp, type WarmRequest, warmSocketOf} from './protocol.js'

/** How long a client waits for a server before it does the work itself. */
export const WARM_TIMEOUT_MS = 1000

/** `JARVIS_WARM=off` turns the warm path off (every call does its own work). */
export function warmPathOff(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.JARVIS_WARM === 'off'
}

/**
 * The answer of the warm server of the tree at `root` to `op`, or undefined: then the caller does the work itself.
 * The server answers only after it has seen every change made to `.memory/` before this call (protocol.ts).
 */
export async function askWarm<T>(root: string, op: WarmOp | typeof ABOUT_OP, input: Record<string, unknown>, options: {env?: NodeJS.ProcessEnv; timeoutMs?: number} = {}): Promise<T | undefined> {
  const env = options.env ?? process.env
  if (warmPathOff(env)) return undefined
  try {
    const real = realRoot(root)
    const socket = warmSocketOf(real, env)
    if (socket === undefined || (socket.privateDir !== undefined && !isPrivateDir(socket.privateDir))) return undefined
    // No socket, no server (one makes its socket before it answers): nothing to connect to, node:net not even loaded.
    if (lstatSync(socket.path, {throwIfNoEntry: false})?.isSocket() !== true) return undefined
    const request: WarmRequest = {v: WARM_PROTOCOL, op, root: real, env: answerEnvOf(env), input}
    const answer = await exchange(socket.path, `${JSON.stringify(request)}\n`, options.timeoutMs ?? WARM_TIMEOUT_MS)
    if (answer === undefined) return undefined
    const parsed = JSON.parse(answer) as WarmAnswer
    return parsed.v === WARM_PROTOCOL && parsed.ok === true && typeof parsed.result === 'object' && parsed.result !== null ? (parsed.result as T) : undefined
  } catch {
    return undefined
  }
}

/** A folder outside the tree is trusted only when it is a real folder of this user that no one else may enter. */
export function isPrivateDir(dir: string): boolean {
  const info = lstatSync(dir, {throwIfNoEntry: false})
  return info !== undefined && info.isDirectory() && info.uid === process.getuid?.() && (info.mode & 0o077) === 0
}

/** One line out, one line back; undefined on any error or when the answer is late. */
async function exchange(path: string, line: string, timeoutMs: number): Promise<string | undefined> {
  const {createConnection} = await import('node:net')
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    const connection = createConnection(path)
    const done = (answer: string | undefined) => {
      clearTimeout(timer)
      connection.destroy()
      resolve(answer)
    }
    const timer = setTimeout(() => done(undefined), timeoutMs)
    connection.on('error', () => done(undefined))
    connection.on('connect', () => connection.write(line))
    connection.on('data', (chunk: Buffer) => {
      const end = chunk.indexOf(10)
      if (end < 0) {
        chunks.push(chunk)
        return
      }
      chunks.push(chunk.subarray(0, end))
      done(Buffer.concat(chunks).toString('utf8'))
    })
    connection.on('end', () => done(undefined))
  })
}
