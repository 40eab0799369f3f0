/**
 * Where the records of pending.ts wait, and which do: asked by every `jarvis sync` and `jarvis status`, so nothing
 * here loads the schemas or the hooks' code (a no-op sync is one readdir more).
 */
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import {nexusDir} from '../store/root.js'

export const PENDING_DIR = 'pending-episodes'

/** The names of the records waiting, oldest first (not the temp files of a write under way, `.<name>.jarvis-tmp-…`). */
export async function pendingNames(root: string): Promise<string[]> {
  const names = await readdir(join(nexusDir(root), PENDING_DIR)).catch(() => [] as string[])
  return names.filter((n) => n.endsWith('.json') && !n.startsWith('.')).sort()
}

/** How many records wait to be written into their episodes. */
export async function countPendingEpisodes(root: string): Promise<number> {
  return (await pendingNames(root)).length
}
