/** A command's question to the warm server of its tree (src/warm/), if one runs: undefined means "do the work here". */
import {findRoot} from '../store/root.js'
import {askWarm} from '../warm/client.js'
import type {WarmOp} from '../warm/protocol.js'

/** The tree of `--dir` (or the working directory); no tree, no warm answer: the cold path says what is wrong. */
export async function askWarmTree<T>(dir: string | undefined, op: WarmOp, input: Record<string, unknown>): Promise<T | undefined> {
  let root: string
  try {
    root = findRoot(process.cwd(), dir)
  } catch {
    return undefined
  }
  return askWarm<T>(root, op, input)
}
