/**
 * The sync state's entries as a round moves them: a base is recorded (its copy kept by the base store, its entry in
 * the state) only once the server acknowledged it or the file on disk holds it; pending pushes; the state written
 * after the base copies it names.
 */
import createDebug from 'debug'

import type {StatusResponse} from '../protocol/client.js'
import type {SyncState} from '../schemas/index.js'
import {type BaseStore, hashText, memoryFileAbsent, readMemoryFile, writeSyncState} from '../store/index.js'
import type {RemoteEntry} from './plan.js'
import type {SetAside} from './set-aside.js'

const debug = createDebug('jarvis:sync')

export function remoteEntries(status: StatusResponse): Record<string, RemoteEntry> {
  const entries: Record<string, RemoteEntry> = {}
  for (const [path, file] of Object.entries(status.files)) entries[path] = {updatedAt: file.updatedAt, hash: file.hash, rev: file.rev, deleted: file.deleted}
  return entries
}

/** Unacknowledged pushes kept per path; a path pushed this often without an answer has bigger problems. */
export const MAX_PENDING_PER_PATH = 16

export function pendingOf(state: SyncState): Record<string, string[]> {
  return (state.pending as Record<string, string[]> | undefined) ?? {}
}

/** A copy of the state's `pending`, each path's hashes as a list (an older jarvis kept one hash). */
export function pendingFrom(state: SyncState): Record<string, string[]> | undefined {
  const stored = state.pending as Record<string, unknown> | null | undefined
  if (stored == null) return undefined
  return Object.fromEntries(Object.entries(stored).map(([path, hashes]) => [path, (Array.isArray(hashes) ? hashes : [hashes]).filter((hash): hash is string => typeof hash === 'string')]))
}

/** The state as written: no empty `pending`. */
export function settled(state: SyncState): SyncState {
  if (state.pending != null && Object.keys(pendingOf(state)).length === 0) state.pending = undefined
  return state
}

/** The sync state, after the base copies it names (file, then base, then state). */
export async function writeState(root: string, bases: BaseStore, state: SyncState): Promise<void> {
  bases.flush()
  await writeSyncState(root, state)
}

/** Kept by `bases` until the next writeState. */
export function recordBase(bases: BaseStore, state: SyncState, path: string, text: string, remote: RemoteEntry, now: () => Date): void {
  bases.put(path, text)
  // Deleted in place (the round owns its copy of the map): copying it per file made a large push quadratic.
  if (state.pending != null) delete pendingOf(state)[path]
  const entry: SyncState['files'][string] = {hash: hashText(text), syncedAt: now().toISOString()}
  if (remote.rev !== undefined) entry.rev = remote.rev
  if (remote.updatedAt !== undefined) entry.updatedAt = remote.updatedAt
  state.files[path] = entry
}

/** The base copy, trusted only when it still matches the hash the sync state recorded for it. */
export async function verifiedBase(bases: BaseStore, state: SyncState, path: string): Promise<string | null> {
  const recorded = state.files[path]
  if (!recorded) return null
  const text = await bases.get(path)
  if (text === null || hashText(text) !== recorded.hash) {
    debug('base of %s missing or torn: merging two-way', path)
    return null
  }
  return text
}

/**
 * The user may edit while we sync: never overwrite a file that changed since we hashed it. One this user may not read
 * (its hash came from the stat cache) is no more overwritten: `aside` names it.
 */
export async function unchangedSinceScan(root: string, path: string, scannedHash: string | undefined, aside?: SetAside): Promise<boolean> {
  const text = aside === undefined ? await readMemoryFile(root, path) : await aside.read(path)
  const current = text === null ? undefined : hashText(text)
  if (current === scannedHash) return true
  debug('%s changed during the sync: left for the next one', path)
  return false
}

export function stillAbsent(root: string, path: string): boolean {
  if (memoryFileAbsent(root, path)) return true
  debug('%s appeared during the sync: left for the next one', path)
  return false
}

export function serverIdOf(status: StatusResponse): string | undefined {
  return typeof status.serverId === 'string' ? status.serverId : undefined
}

export function forgetRevisions(state: SyncState): SyncState {
  const files: SyncState['files'] = {}
  for (const [path, entry] of Object.entries(state.files)) files[path] = {hash: entry.hash, syncedAt: entry.syncedAt}
  return {...state, files, seq: undefined}
}

