/** What the compatibility tests share: trees `jarvis init`-ed against a stand-in, and reading and writing their memory. */
import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {initedTree} from '../cli/memory-helpers.js'
import {removeAll} from '../helpers/world.js'

/** `tree(agent)` makes a tree against `server()` (read when called: the stand-in starts per test); `removeTrees` removes them. */
export function cliTrees(prefix: string, server: () => string): {tree(agent: 'claude' | 'gemini'): ReturnType<typeof initedTree>; removeTrees(): Promise<void>} {
  const dirs: string[] = []
  return {
    async tree(agent) {
      const made = await initedTree(server(), agent, prefix)
      dirs.push(made.root)
      return made
    },
    removeTrees: () => removeAll(dirs.splice(0)),
  }
}

export const put = (root: string, rel: string, text: string) => writeFile(join(root, '.memory', rel), text)
export const read = (root: string, rel: string) => readFile(join(root, '.memory', rel), 'utf8')
/** Human output on one line: line breaks and the path separators of wrapped lines as spaces. */
export const flat = (text: string) => text.replace(/\s*›\s*/g, ' ').replace(/\s+/g, ' ')

/** The part of a sync's `--json` result these tests read. */
export interface SyncReport {
  mode: string
  pushed: string[]
  pulled: string[]
  merged: string[]
  backups: Array<{path: string; backup: string}>
  plan?: Record<string, string[]>
}
