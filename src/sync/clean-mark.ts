/**
 * The stat cache a sync leaves, and its clean mark: every file equal to its base, for the sync state as written
 * (see CleanMark). Written after the sync state, so that the mark names the state as it is on disk.
 */
import type {SyncState} from '../schemas/index.js'
import {type CleanMark, type MemoryFileStat, sameStateStamp, syncStateStamp, writeStatCache} from '../store/index.js'
import type {Plan} from './plan.js'
import type {Scanned} from './quick.js'
import {pendingOf} from './record.js'
import type {SyncResult} from './types.js'

/** The size and mtime of a stat cache entry whose file was not stat-ed: no file matches them, so it is hashed. */
const UNSTATTED = -1

/** The stat cache a round leaves, written after the sync state so that its clean mark names it. */
export async function writeScan(root: string, scan: {scanned: Scanned; clean: boolean}, mark: Omit<CleanMark, 'state'> | undefined, revOf: (path: string) => number | null | undefined): Promise<void> {
  const stamp = mark === undefined ? undefined : await syncStateStamp(root)
  const clean: CleanMark | undefined = mark === undefined || stamp === undefined ? undefined : {...mark, state: stamp}
  const old = scan.scanned.hints.clean
  const sameMark = old === undefined ? clean === undefined : clean !== undefined && old.server === clean.server && old.serverId === clean.serverId && old.seq === clean.seq && sameStateStamp(old.state, clean.state)
  if (scan.scanned.unchanged && sameMark) return
  await writeStatCache(root, scan.scanned.local, {dirs: scan.scanned.dirs, backups: scan.scanned.backups, clean, revOf, watch: scan.scanned.clock})
}


/** Every local file has an entry of the same hash in `files` (the bases), and every entry a file. */
export function sameFiles(local: Map<string, MemoryFileStat>, files: Record<string, {hash: string}>): boolean {
  if (Object.keys(files).length !== local.size) return false
  for (const [path, entry] of local) if (files[path]?.hash !== entry.hash) return false
  return true
}


/**
 * The stat cache a round that acted leaves, so that the next sync can take the quick check: the scan's entries,
 * each file the round wrote (pulled, merged) with its new base's hash and no stat — the next scan hashes it again,
 * since a stat taken now could pair an edit made meanwhile with our hash — and each file it deleted gone. Clean
 * (every file its base, see CleanMark) only when the round left nothing aside and every file it acted on has its
 * base's hash: a file read again for its push after an edit since the scan fails that. The plan gave every other
 * file an action unless it was its base already.
 */
export function scanAfterRound(scanned: Scanned, state: SyncState, result: SyncResult, plan: Plan): {scanned: Scanned; clean: boolean} {
  const {local} = scanned
  for (const path of [...result.pulled, ...result.merged, ...result.deleted]) {
    const base = state.files[path]
    if (base === undefined) local.delete(path)
    else local.set(path, {hash: base.hash, size: UNSTATTED, mtimeMs: UNSTATTED})
  }
  const leftAside = result.conflicts.length + result.backups.length + result.invalid.length + result.refused.length + scanned.backups.length + Object.keys(pendingOf(state)).length
  return {scanned: {...scanned, unchanged: false}, clean: leftAside === 0 && plan.actions.every(({path}) => local.get(path)?.hash === state.files[path]?.hash)}
}

