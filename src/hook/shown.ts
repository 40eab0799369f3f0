/**
 * The memory files the prompt hook gave a session, noted per session in `.nexus/hook-sessions/<agent>-<session>.json`
 * (a JSON array of paths), so that the session's episode can name them (`## Memory used`) and recall can rank the
 * episode after the notes it repeats. The recording hook reads the note; the session-end hook removes it, and any
 * note older than {@link SHOWN_KEEP_MS} (a session whose end never ran).
 *
 * The prompt hook runs at every prompt: this module imports only the store's file helpers.
 */
import {readdir, stat} from 'node:fs/promises'
import {join} from 'node:path'

import {deleteNexusFile, readNexusFile, writeNexusFile} from '../store/nexus-files.js'
import {nexusDir} from '../store/root.js'

export const SHOWN_DIR = 'hook-sessions'
/** A session's note older than this is removed by any session end. */
export const SHOWN_KEEP_MS = 14 * 86_400_000
/** At most this many paths are noted per session. */
export const SHOWN_MAX = 50

/** `<agent>-<session>`: lowercase letters, digits and `-`, at most 80 characters (the episode's file name too). */
export function sessionSlug(agentId: string, sessionId: string): string {
  const session = sessionId
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
  return `${agentId}-${session || 'session'}`
}

const noteOf = (agentId: string, sessionId: string) => `${SHOWN_DIR}/${sessionSlug(agentId, sessionId)}.json`

/** The paths noted for the session ([] when none, or the note cannot be read). */
export async function readShown(root: string, agentId: string, sessionId: string): Promise<string[]> {
  try {
    const value: unknown = JSON.parse((await readNexusFile(root, noteOf(agentId, sessionId))) ?? '[]')
    return Array.isArray(value) ? value.filter((p): p is string => typeof p === 'string') : []
  } catch {
    return []
  }
}

/** Adds `paths` to the session's note (nothing is written when they are all there already). */
export async function noteShown(root: string, agentId: string, sessionId: string, paths: readonly string[]): Promise<void> {
  if (paths.length === 0) return
  const known = await readShown(root, agentId, sessionId)
  const added = paths.filter((p) => !known.includes(p))
  if (added.length === 0) return
  await writeNexusFile(root, noteOf(agentId, sessionId), `${JSON.stringify([...known, ...added].slice(-SHOWN_MAX))}\n`, {durable: false})
}

/** Removes the session's note, and the notes of sessions that ended long ago without saying so. */
export async function forgetShown(root: string, agentId: string, sessionId: string, now: Date): Promise<void> {
  await deleteNexusFile(root, noteOf(agentId, sessionId)).catch(() => false)
  const dir = join(nexusDir(root), SHOWN_DIR)
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const info = await stat(join(dir, name)).catch(() => undefined)
    if (info && now.getTime() - info.mtimeMs > SHOWN_KEEP_MS) await deleteNexusFile(root, `${SHOWN_DIR}/${name}`).catch(() => false)
  }
}
