/**
 * Generic access to files under `.nexus/` (sessions.json, gemini-backup/…): path-guarded, atomic.
 * The named formats (config, sync state, base copies, outbox, audit) have their own modules.
 */

import {readTextIfExists, writeFileAtomic} from './atomic.js'
import {resolveInside} from './inside.js'
import {nexusDir} from './root.js'
import {deleteInside} from './tree.js'

/** Text of `.nexus/<rel>`, or null when missing. */
export async function readNexusFile(root: string, rel: string): Promise<string | null> {
  return readTextIfExists(await resolveInside(nexusDir(root), rel))
}

/** Writes `.nexus/<rel>` atomically (and durably unless `durable: false`: see writeFileAtomic). */
export async function writeNexusFile(root: string, rel: string, content: string | Uint8Array, options: {mode?: number; durable?: boolean} = {}): Promise<void> {
  await writeFileAtomic(await resolveInside(nexusDir(root), rel), content, options)
}

/** Deletes `.nexus/<rel>` (and parent directories it leaves empty); false when missing. */
export async function deleteNexusFile(root: string, rel: string): Promise<boolean> {
  return deleteInside(nexusDir(root), rel, '.nexus')
}
