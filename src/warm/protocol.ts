/**
 * The warm path (docs/decisions/warm-path.md): a jarvis that keeps running in a tree (`jarvis sync --watch`,
 * `jarvis mcp`) answers the read calls of short-lived jarvis processes from its open, watched search index, over a
 * local socket. This module is what both sides agree on: where the socket of a tree lies, and what travels on it
 * (one JSON line each way). It loads Node's own modules only: a client must stay light.
 */
import {createHash} from 'node:crypto'
import {realpathSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

/** Bumped whenever a request or an answer changes shape: a server of another version is not asked. */
export const WARM_PROTOCOL = 1

/** The calls a warm server answers, each the operation the cold path runs (src/cli/warm.ts). */
export type WarmOp = 'recall' | 'memory-ls' | 'memory-search-files' | 'prompt-recall' | 'changes'

/** `op: 'about'`: which process answers for the tree, and what it did for the other jarvis processes (`jarvis status`). */
export const ABOUT_OP = 'about' as const

/** The server's answer to ABOUT_OP. */
export interface WarmAbout {
  /** What started it: `jarvis sync --watch`, `jarvis mcp --agent claude`, `jarvis, started on demand by a call`. */
  process: string
  pid: number
  /** When it began to answer (ISO). */
  since: string
  /** The whole calls of bin/jarvis it ran (its commands, the agents' hooks). */
  ran: number
  /** The questions of jarvis processes it answered (a recall, a search, which files changed, …), its own calls' included. */
  answered: number
  /** The calls and questions it left to the caller, and why it left the last one. */
  declined: number
  lastDeclined?: string
}

/**
 * `op: 'call'`: a whole jarvis call, from bin/warm-call.pl (cli/warm-call.ts runs it). Its `root` and `env` are
 * empty: the server finds the tree from the call's folder and compares the call's environment itself. It is answered
 * in frames, not in one JSON line, each a header line and, when the header gives a byte count, that many bytes:
 * - `declined <why>`: nothing was done; the client runs the call itself (so it does when an older server answers an
 *   error line);
 * - `accepted`: the call runs; the client waits for its end, however long;
 * - `err <bytes>`: stderr, printed at once (warnings, a sync's progress);
 * - `exit <code> <bytes>`: the whole stdout, then the connection ends. A connection that ends before this frame
 *   (the server was killed) leaves the client to run the call itself.
 */
export const CALL_OP = 'call' as const

/** How a server answers a whole call, frame by frame (above). */
export interface CallFrames {
  /** Not run here: the client runs it itself. Only before `accepted`. */
  declined(reason: string): void
  /** Runs here: from now on the client waits for the end, however long a sync takes. */
  accepted(): void
  stderr(text: string): void
  /** The whole stdout and the exit code, once the call is done. */
  done(stdout: string, exit: number): void
  /** Aborts when the client is gone before `done` (stopped with Ctrl-C, killed): what the call still runs is dropped. */
  signal: AbortSignal
}

/**
 * Runs a whole call (the request's input) for the tree at `real`, or declines it; a throw before `accepted` is a
 * decline. The command line's (cli/warm-call.ts), handed to the server by the process that starts it: the server
 * itself knows no command.
 */
export type CallRunner = (input: Record<string, unknown>, real: string, frames: CallFrames) => Promise<void>

export interface WarmRequest {
  v: number
  op: WarmOp | typeof CALL_OP | typeof ABOUT_OP
  /** The tree as the client found it (real path): a server answers for its own tree only. */
  root: string
  /** What of the client's environment changes an answer (the embeddings provider), as a fingerprint. */
  env: string
  input: Record<string, unknown>
}

export type WarmAnswer = {v: number; ok: true; result: unknown} | {v: number; ok: false; error: string}

/** A Unix socket's path must fit `sun_path` (108 bytes on Linux, 104 on macOS, with its NUL): kept below both. */
export const MAX_SOCKET_PATH = 100

/** The socket's name inside the tree's `.nexus/` when the path fits. */
export const TREE_SOCKET = 'warm.sock'

export interface WarmSocket {
  path: string
  /** The user's own folder that holds the socket when the tree's path is too long for one; must be 0700 and ours. */
  privateDir?: string
}

/** Windows has no warm path (no Unix sockets with file permissions): its calls always take the cold path. */
export const WARM_SUPPORTED = process.platform !== 'win32'

/** No watch is started on demand here: no warm path on this platform, or `JARVIS_WARM=off` / `JARVIS_WATCHER=off`. */
export function watcherOffByEnv(env: NodeJS.ProcessEnv): boolean {
  return !WARM_SUPPORTED || env.JARVIS_WARM === 'off' || env.JARVIS_WATCHER === 'off'
}

/** The tree's real path: a client and a server must name it alike, whatever symlink either went through. */
export function realRoot(root: string): string {
  try {
    return realpathSync.native(root)
  } catch {
    return root
  }
}

/**
 * Where the warm server of the tree at `root` (a real path) listens: `.nexus/warm.sock` when that path fits, otherwise
 * a socket named by a hash of the root in a folder of the user's own (`$XDG_RUNTIME_DIR/jarvis`, or
 * `<tmpdir>/jarvis-<uid>`). Undefined when neither fits, or on Windows.
 */
export function warmSocketOf(root: string, env: NodeJS.ProcessEnv = process.env): WarmSocket | undefined {
  if (!WARM_SUPPORTED) return undefined
  const inTree = join(root, '.nexus', TREE_SOCKET)
  if (Buffer.byteLength(inTree) <= MAX_SOCKET_PATH) return {path: inTree}
  const privateDir = env.XDG_RUNTIME_DIR ? join(env.XDG_RUNTIME_DIR, 'jarvis') : join(tmpdir(), `jarvis-${process.getuid?.() ?? 'user'}`)
  const path = join(privateDir, `${createHash('sha256').update(root).digest('hex').slice(0, 24)}.sock`)
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH ? {path, privateDir} : undefined
}

/** The environment variables that change an answer (the embeddings provider, or none: hybrid or keyword ranking). */
const ANSWER_ENV = ['JARVIS_EMBEDDINGS_URL', 'JARVIS_EMBEDDINGS_MODEL', 'JARVIS_EMBEDDINGS_KEY', 'JARVIS_EMBEDDINGS'] as const

/** Those variables as one fingerprint ('' when none is set): a server whose own differ does not answer. */
export function answerEnvOf(env: NodeJS.ProcessEnv): string {
  const values = ANSWER_ENV.map((name) => env[name] ?? '')
  return values.every((value) => value === '') ? '' : createHash('sha256').update(JSON.stringify(values)).digest('hex')
}
