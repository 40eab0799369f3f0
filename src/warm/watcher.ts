/**
 * The watch of a tree started on demand (demand.ts), run as its own detached process by cli/on-demand-watch.ts:
 *
 *     node on-demand-watch.js <root>
 *
 * It watches `.memory/` and answers the other jarvis processes of the tree over the warm path's socket, as
 * `jarvis sync --watch` and `jarvis mcp` do (answers.ts): recall, memory search and ls, the prompt hook, and which
 * files changed since a clock (changes.ts), which `jarvis sync` asks instead of looking at every file. It leaves by
 * itself: when another process answers for the tree already (it never starts), when no call asked it anything for
 * `JARVIS_WATCHER_IDLE_MS` (10 minutes by default), when the tree's `.nexus/` is gone, when its socket was removed or
 * taken over, or on SIGTERM / SIGINT. Killed, it leaves a socket nobody answers at: every call then does its own work
 * (and may start another watch, whose clocks are not the dead one's: the first sync after it looks at every file).
 */
import {lstatSync} from 'node:fs'
import {join} from 'node:path'

import createDebug from 'debug'

import {answerFor} from './answers.js'
import {serveWarm, type WarmServerOptions} from './server.js'
import {watchTreeFresh} from './tree-watch.js'

const debug = createDebug('jarvis:warm')

/** How long a watch started on demand waits for a call before it leaves. */
export const WATCHER_IDLE_MS = 10 * 60_000

/** Runs the watch of the tree at `root` until it leaves (see above); resolves with why it left. */
export async function runWatcher(root: string, options: {idleMs?: number} & WarmServerOptions = {}): Promise<string> {
  const env = options.env ?? process.env
  const idleMs = options.idleMs ?? (Number(env.JARVIS_WATCHER_IDLE_MS) || WATCHER_IDLE_MS)
  const tree = watchTreeFresh(root)
  const answer = answerFor(root, tree)
  let lastCall = Date.now()
  const server = await serveWarm(root, tree, async (op, input) => {
    lastCall = Date.now()
    try {
      return await answer(op, input)
    } finally {
      lastCall = Date.now()
    }
  }, {env, runCall: options.runCall, label: options.label}).catch((error: unknown) => {
    debug('watcher: no socket: %s', (error as Error).message)
    return undefined
  })
  if (server === undefined) {
    await tree.close()
    return 'another process answers for the tree'
  }
  const socketInode = lstatSync(server.path, {throwIfNoEntry: false})?.ino
  const why = await new Promise<string>((resolve) => {
    const leave = (reason: string) => {
      clearInterval(check)
      process.off('SIGTERM', leave)
      process.off('SIGINT', leave)
      resolve(reason)
    }
    const check = setInterval(() => {
      if (Date.now() - lastCall >= idleMs) leave(`no call for ${Math.round(idleMs / 1000)} s`)
      else if (lstatSync(join(root, '.nexus'), {throwIfNoEntry: false})?.isDirectory() !== true) leave('the tree is gone')
      else if (lstatSync(server.path, {throwIfNoEntry: false})?.ino !== socketInode) leave('its socket was removed or taken over')
    }, Math.max(50, Math.min(5000, Math.floor(idleMs / 4))))
    process.once('SIGTERM', leave)
    process.once('SIGINT', leave)
  })
  debug('watcher of %s leaves: %s', root, why)
  await server.close()
  await tree.close()
  return why
}
