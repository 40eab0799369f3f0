/**
 * Base copies: the content of every synced file as of its last sync, in `.nexus/base/<path>` — the base of every
 * three-way merge. Written atomically; a missing base reads as null and never turns into a deletion (sync's rule).
 */
import {join} from 'node:path'

import {readTextIfExists, writeFileAtomic} from './atomic.js'
import {resolveInside} from './inside.js'
import {nexusDir} from './root.js'
import {deleteInside} from './tree.js'

export const BASE_DIR = 'base'

export function baseDir(root: string): string {
  return join(nexusDir(root), BASE_DIR)
}

export async function readBase(root: string, rel: string): Promise<string | null> {
  return readTextIfExists(await resolveInside(baseDir(root), rel))
}

/**
 * Not fsynced: a base is only trusted when its hash matches the one sync-state recorded, and a base that
 * fails the check means a two-way merge, which never deletes. Saves two fsyncs per synced file.
 */
export async function writeBase(root: string, rel: string, content: string | Uint8Array): Promise<void> {
  await writeFileAtomic(await resolveInside(baseDir(root), rel), content, {durable: false})
}

/** Removes a base copy (and empty parent directories under `.nexus/base/`); false when there was none. */
export async function deleteBase(root: string, rel: string): Promise<boolean> {
  return deleteInside(baseDir(root), rel, '.nexus/base')
}
