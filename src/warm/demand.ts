/**
 * A watch started on demand: when a call in a large tree finds no jarvis answering there (no `jarvis sync --watch`,
 * no `jarvis mcp` session), it starts one, detached (watcher.ts), so that the calls after it need not look at every
 * file; the watch leaves by itself once no call asked it anything for a while, or once the tree is gone. Loads
 * Node's own modules only: every hot call may come here.
 *
 * Not started: in a tree of fewer than WATCHER_MIN_FILES files (looking at them costs less than a process), with
 * `JARVIS_WARM=off` or `JARVIS_WATCHER=off`, with `"sync": {"watcher": "off"}` in `.nexus/config.json`, on Windows
 * (no warm path), or while the last one started is still alive (starting, or refused the socket to another).
 */
import {lstatSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import {jarvisPackageRoot} from '../invocation.js'
import {pidAlive} from '../store/pid.js'
import {realRoot, warmSocketOf, watcherOffByEnv} from './protocol.js'

/** Below this many memory files a call looks at every one itself. */
export const WATCHER_MIN_FILES = 500
/** `.nexus/watcher.json`: the process id of the last watch started on demand, and when. */
export const WATCHER_FILE = 'watcher.json'
/** A watch started this long ago that does not answer is not waited for (its process id may be another's by now). */
const START_PATIENCE_MS = 30_000

/** Whether a call that found no watch in a tree of `files` files should start one. */
export function watcherWanted(root: string, files: number, env: NodeJS.ProcessEnv = process.env): boolean {
  if (watcherOffByEnv(env)) return false
  const min = Number(env.JARVIS_WATCHER_MIN_FILES || WATCHER_MIN_FILES)
  if (!(files >= min)) return false
  if (configSaysOff(root)) return false
  const last = readLast(root)
  return last === undefined || !running(last.pid) || !(Date.now() - last.startedAt < START_PATIENCE_MS)
}

/** Alive and not a zombie: a watch killed in a container whose first process reaps no orphan stays one. */
function running(pid: number): boolean {
  if (!pidAlive(pid)) return false
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    // Not Linux (no /proc), or gone meanwhile.
    return pidAlive(pid)
  }
}

/**
 * Starts a watch of the tree when nobody listens on its socket (none, or one left by a watch that was killed) and the
 * tree is large enough (watcherWanted). `files`: how many memory files the caller found (default: filesHint's guess).
 */
export async function startWatcherIfNobody(root: string, files?: number, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!watcherWanted(root, files ?? filesHint(root), env)) return
  const socket = warmSocketOf(realRoot(root), env)
  if (socket === undefined || (await (await import('./server.js')).probeSocket(socket.path)) === 'live') return
  await startWatcher(root, env)
}

/**
 * Starts the watch of the tree at `root`, detached, its standard streams closed; never fails the caller. node:child_process
 * is loaded here, by the one call in many that starts a watch (~1 ms, with the modules it loads, for every other).
 */
export async function startWatcher(root: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  try {
    const {spawn} = await import('node:child_process')
    const self = fileURLToPath(import.meta.url)
    // From the sources (tests, bin/dev.js) the script is cli/on-demand-watch.ts run through tsx; built, its .js in dist/.
    const fromSources = self.endsWith('.ts')
    const script = fromSources ? join(self, '..', '..', 'cli', 'on-demand-watch.ts') : join(jarvisPackageRoot(import.meta.url), 'dist', 'cli', 'on-demand-watch.js')
    const loader = fromSources ? ['--import', import.meta.resolve('tsx'), '--no-warnings=ExperimentalWarning'] : []
    const child = spawn(process.execPath, [...loader, script, root], {detached: true, stdio: 'ignore', env, cwd: root})
    child.on('error', () => {})
    child.unref()
    if (child.pid !== undefined) writeFileSync(join(root, '.nexus', WATCHER_FILE), `${JSON.stringify({pid: child.pid, startedAt: new Date().toISOString()})}\n`)
  } catch {
    // No watch this time: the next call looks at every file again, and may start one.
  }
}

/**
 * About how many memory files the tree holds, from the size of what a sync or a search keeps of it (a stat cache
 * entry is ~110 bytes of JSON, an indexed file ~1.8 KB of the search index): for a call that did not count them.
 */
export function filesHint(root: string): number {
  const size = (path: string) => lstatSync(join(root, '.nexus', path), {throwIfNoEntry: false})?.size ?? 0
  return Math.max(Math.floor(size('stat-cache.json') / 110), Math.floor(size('search/index.sqlite') / 1800))
}

function configSaysOff(root: string): boolean {
  try {
    const config = JSON.parse(readFileSync(join(root, '.nexus', 'config.json'), 'utf8')) as {sync?: {watcher?: unknown}}
    return config?.sync?.watcher === 'off'
  } catch {
    return false
  }
}

function readLast(root: string): {pid: number; startedAt: number} | undefined {
  try {
    const last = JSON.parse(readFileSync(join(root, '.nexus', WATCHER_FILE), 'utf8')) as {pid?: unknown; startedAt?: unknown}
    return typeof last?.pid === 'number' && typeof last.startedAt === 'string' ? {pid: last.pid, startedAt: Date.parse(last.startedAt)} : undefined
  } catch {
    return undefined
  }
}
