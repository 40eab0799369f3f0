/**
 * The door that skips oclif (about 60 ms of loading and set-up) for the calls paid most often: `jarvis --version`,
 * `jarvis hook …`, which an agent runs at every prompt, and the hot commands of agents and git hooks (memory
 * snapshot, append, ls and search, recall, a one-shot sync), run through the same actions (cli/actions/) as their oclif
 * commands. Anything else, or anything unusual in these calls (help, an unknown flag, a bad value), goes to oclif,
 * which answers it as always.
 *
 * Built, each of these doors is a bundle of its own, `dist/fast/<name>.cjs` (scripts/bundle.mjs makes one per entry
 * here), which bin/run.js loads through V8's code cache (src/cli/code-cache.ts). This module is that door from the
 * sources (tests), and the list the bundles are made from.
 */
import {fastDoorOf, printVersion} from './door.js'
import {runAction, type FastAction} from './fast-action.js'

/** The parsed flags fit the action's input because its spec says so; the module's types cannot show it. */
const action = (load: () => Promise<unknown>) => load as () => Promise<FastAction>

/** The commands the fast door runs, by their door's name (src/cli/door.ts), each the action module of that name. */
export const FAST_ACTIONS: Record<string, () => Promise<FastAction>> = {
  'memory-snapshot': action(() => import('./actions/memory-snapshot.js')),
  'memory-append': action(() => import('./actions/memory-append.js')),
  'memory-ls': action(() => import('./actions/memory-ls.js')),
  'memory-search': action(() => import('./actions/memory-search.js')),
  recall: action(() => import('./actions/recall.js')),
  sync: action(() => import('./actions/sync.js')),
}

/** true when the call was answered here; false: run oclif. */
export async function runFast(argv: string[], packageRoot: URL): Promise<boolean> {
  if (printVersion(argv, packageRoot)) return true
  const door = fastDoorOf(argv)
  if (door?.name === 'hook') return (await import('./hook-door.js')).runHookDoor(door.argv)
  const load = door && FAST_ACTIONS[door.name]
  return load === undefined ? false : runAction(await load(), door!.argv)
}
