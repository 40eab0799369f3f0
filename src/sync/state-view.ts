/**
 * The sync state as a view: a sync after a clean one that has only pushes and pulls of a few files to make reads the
 * entries of those files from the stat cache's clean mark and the rest of the state from its journal's last line,
 * not the whole state (2.3 MB at 10,000 files).
 */
import type {MemoryClient} from '../protocol/client.js'
import type {SyncState} from '../schemas/index.js'
import {cachedHash, cachedRev, readSyncStateView, VIEW_ENTRIES} from '../store/index.js'
import {type BaseEntry, planSync} from './plan.js'
import {changedOnEitherSide, hashesOf, type QuickCheck} from './quick.js'
import {pendingOf, remoteEntries, serverIdOf} from './record.js'

/**
 * The sync state as a view (readSyncStateView) when a sync after a clean one has only pushes and pulls of a few files
 * to make: under the clean mark each base is the stat cache's entry (its hash, and the revision the mark lists), so
 * the round needs those of the files changed on either side, and not the whole state (2.3 MB at 10,000 files).
 * Undefined (the whole state is read) for anything else: a merge, a deletion, more files, a mark without revisions.
 */
export async function stateView(root: string, client: MemoryClient, quick: Extract<QuickCheck, {kind: 'sync'}>): Promise<SyncState | undefined> {
  const {hints, answer} = quick
  const clean = hints.clean
  const scanned = answer?.scanned
  if (clean?.revs === undefined || answer === undefined || scanned === undefined || scanned.backups.length > 0) return undefined
  const {status} = answer
  if (status.seq === undefined || status.seq < clean.seq || serverIdOf(status) !== clean.serverId || clean.server !== client.server) return undefined
  const paths = changedOnEitherSide(scanned.changed, status.files)
  if (paths.length === 0 || paths.length > VIEW_ENTRIES || paths.length * 4 > hints.count) return undefined
  const files: Record<string, BaseEntry> = {}
  for (const path of paths) {
    const hash = cachedHash(hints, path)
    if (hash === undefined) continue
    const rev = cachedRev(hints, path)
    if (rev === undefined) return undefined
    files[path] = rev === null ? {hash} : {hash, rev}
  }
  const plan = planSync({mode: 'revision', local: hashesOf(scanned.local), base: files, remote: remoteEntries(status), remoteIsIncremental: true, paths})
  if (plan.actions.length === 0 || plan.actions.some((action) => action.kind !== 'push' && action.kind !== 'pull')) return undefined
  const state = await readSyncStateView(root, clean.state, files, hints.count)
  // The rest of the state as the mark knows it, and nothing pending: else the whole state.
  if (state === undefined || state.server !== client.server || state.serverId !== clean.serverId || state.seq !== clean.seq || state.mode !== 'revision' || Object.keys(pendingOf(state)).length > 0) return undefined
  return state
}

