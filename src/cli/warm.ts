/** A command's question to the warm server of its tree (src/warm/), if one runs: undefined means "do the work here". */
import type {TreeWatch, WatchAnswer} from '../store/index.js'
import {findRoot} from '../store/root.js'
import {askWarm, warmPathOff} from '../warm/client.js'
import {WARM_SUPPORTED, type WarmOp, watcherOffByEnv} from '../warm/protocol.js'

/**
 * The tree of `--dir` (or the working directory); no tree, no warm answer: the cold path says what is wrong. When
 * nobody answers in a large tree, a watch is started for the calls to come (warm/demand.ts).
 */
export async function askWarmTree<T>(dir: string | undefined, op: WarmOp, input: Record<string, unknown>): Promise<T | undefined> {
  let root: string
  try {
    root = findRoot(process.cwd(), dir)
  } catch {
    return undefined
  }
  const answer = await askWarm<T>(root, op, input)
  if (answer === undefined) await startWatcherIfNobody(root)
  return answer
}

/**
 * The tree's watch as a sync asks it (store's TreeWatch): the warm server's answer to "which files changed since this
 * clock". When nothing answers there, a call that then looked at many files starts a watch for the calls to come
 * (warm/demand.ts).
 */
export function treeWatchOf(root: string, options: {env?: NodeJS.ProcessEnv; startOnDemand?: boolean} = {}): TreeWatch | undefined {
  const env = options.env ?? process.env
  // No warm path (Windows, JARVIS_WARM=off): the sync looks at every file, as it always did.
  if (!WARM_SUPPORTED || warmPathOff(env)) return undefined
  const changes: TreeWatch['changes'] = async (clock) => {
    const answer = await askWarm<WatchAnswer>(root, 'changes', clock === undefined ? {} : {clock}, {env})
    return answer !== undefined && isWatchAnswer(answer) ? answer : undefined
  }
  // `jarvis sync --watch` answers for the tree itself: it starts no other watch.
  if (options.startOnDemand === false) return {changes}
  return {
    changes,
    unwatched: (files) => startWatcherIfNobody(root, files, env),
  }
}

function isWatchAnswer(value: WatchAnswer): boolean {
  if (typeof value.clock !== 'string') return false
  return 'paths' in value ? Array.isArray(value.paths) && value.paths.every((path) => typeof path === 'string') : value.all === true
}

/** Loaded only when nothing answered (warm/demand.ts): a call answered warm loads none of it. Never fails the call. */
async function startWatcherIfNobody(root: string, files?: number, env?: NodeJS.ProcessEnv): Promise<void> {
  // demand.ts's first test (watcherWanted), made before loading it: with the watcher off, nothing of it is loaded.
  if (watcherOffByEnv(env ?? process.env)) return
  try {
    await (await import('../warm/demand.js')).startWatcherIfNobody(root, files, env)
  } catch {
    // No watch this time: the next call looks at every file again, and may start one.
  }
}
