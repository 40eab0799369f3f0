/**
 * The sync state's entries as a round moves them: a base is recorded (its copy kept by the base store, its entry in
 * the state) only once the server acknowledged or gave it and the file on disk holds it; pending pushes, and the
 * texts they sent; the state written after the base copies it names; the base a merge starts from.
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
  if (state.pending != null) {
    const sent = pendingOf(state)[path]
    if (sent !== undefined && state.files[path] !== undefined) bases.forgetSent(path, sent)
    // Deleted in place (the round owns its copy of the map): copying it per file made a large push quadratic.
    delete pendingOf(state)[path]
  }
  const entry: SyncState['files'][string] = {hash: hashText(text), syncedAt: now().toISOString()}
  if (remote.rev !== undefined) entry.rev = remote.rev
  if (remote.updatedAt !== undefined) entry.updatedAt = remote.updatedAt
  state.files[path] = entry
}

/**
 * Notes `text`, about to be pushed for `path`, as a write of ours the server may take without our hearing back
 * (pendingOf); with a base to merge against, its text too (baseAfterOwnWrites needs it once the user edits on top).
 * A file pushed for the first time keeps only its hash: without a base, nothing could tell what its edits were.
 */
export function notePending(bases: BaseStore, state: SyncState, pending: Record<string, string[]>, path: string, text: string): void {
  const hash = hashText(text)
  const earlier = pending[path] ?? []
  if (earlier.includes(hash)) return
  const hashes = [...earlier, hash]
  pending[path] = hashes.slice(-MAX_PENDING_PER_PATH)
  if (state.files[path] === undefined) return
  bases.putSent(path, hash, text)
  bases.forgetSent(path, hashes.slice(0, -MAX_PENDING_PER_PATH))
}

/**
 * The base a merge of `path` starts from: the base copy, with or without the sync state naming it. A copy is written
 * only once the server acknowledged or gave its text and the file held it, and before the state that names it: one
 * the state does not name (another hash, or no entry) was recorded by a sync killed before it wrote the state, and is
 * as much a text both sides held as the one the state names (a merge against the older one would meet the edits since
 * on both sides, and conflict). Then, a write of ours the server holds with others' edits on top (baseAfterOwnWrites).
 * Null when there is no copy: a two-way merge.
 */
export async function mergeBase(bases: BaseStore, state: SyncState, path: string, local: string, remote: string): Promise<string | null> {
  const base = await bases.get(path)
  if (base === null) debug('no base copy of %s: merging two-way', path)
  else if (hashText(base) !== state.files[path]?.hash) debug('base of %s recorded by a sync that did not write its state', path)
  const hashes = pendingOf(state)[path]
  if (base === null || hashes === undefined) return base
  const {baseAfterOwnWrites} = await import('../merge/index.js')
  return baseAfterOwnWrites(base, await sentTexts(bases, path, hashes, local), remote)
}

/** The texts of our unanswered pushes of `path` that are known (the local file's, or kept by notePending), newest first. */
async function sentTexts(bases: BaseStore, path: string, hashes: readonly string[], local: string): Promise<string[]> {
  const localHash = hashText(local)
  const texts: string[] = []
  for (const hash of [...hashes].reverse()) {
    const text = hash === localHash ? local : await bases.getSent(path, hash)
    if (text !== null && hashText(text) === hash) texts.push(text)
  }
  return texts
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

