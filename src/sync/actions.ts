/**
 * A round's actions other than its pulls (pull.ts), in the plan's order: bases recorded where both sides agree,
 * local deletions, merges (the merge engine loaded by the first sync that merges), and the pushes and remote
 * deletions collected for push.ts.
 */
import createDebug from 'debug'

import type {MemoryClient} from '../protocol/client.js'
import type {SyncState} from '../schemas/index.js'
import {appendAudit, type BaseStore, deleteMemoryFile, type MemoryFileStat, recordConflict, saveBackup, writeMemoryFile} from '../store/index.js'
import type {Action, PlanInput, SyncMode} from './plan.js'
import {PULL_BATCH_FILES, pullTexts, type RemoteText} from './pull.js'
import type {PushItem} from './push.js'
import {mergeBase, recordBase, unchangedSinceScan} from './record.js'
import type {SetAside} from './set-aside.js'
import type {SyncOptions, SyncResult} from './types.js'

const debug = createDebug('jarvis:sync')

export interface ActionContext {
  root: string
  client: MemoryClient
  bases: BaseStore
  state: SyncState
  mode: SyncMode
  /** The scan's entries, and the texts of the changed files it kept. */
  local: ReadonlyMap<string, MemoryFileStat>
  localText: ReadonlyMap<string, string>
  planInput: PlanInput
  options: SyncOptions
  now: () => Date
  result: SyncResult
  /** Called once per action handled. */
  onEach?: () => void
  /** Texts the server gave already (statusTexts): not asked for again. */
  given?: ReadonlyMap<string, RemoteText>
  /** Where a local file this user may not read is named, and a change of the server's not applied held back. */
  aside: SetAside
}

/** Runs every action but the pulls; returns what is to be pushed and deleted on the server. */
export async function applyActions(context: ActionContext, actions: readonly Action[]): Promise<{pushes: PushItem[]; deletes: string[]; pushBase: Record<string, number | null>}> {
  const {root, client, bases, state, mode, local, localText, planInput, options, now, result, aside} = context
  const localHashes = planInput.local
  const pushes: PushItem[] = []
  const pushBase: Record<string, number | null> = {}
  const deletes: string[] = []
  const merges = actions.filter((a) => a.kind === 'merge').map((a) => a.path)
  const remoteText = new Map<string, RemoteText>()
  const given = context.given ?? new Map<string, RemoteText>()
  for (const path of merges) if (given.has(path)) remoteText.set(path, given.get(path)!)
  const toAsk = given.size === 0 ? merges : merges.filter((path) => !given.has(path))
  for (let start = 0; start < toAsk.length; start += PULL_BATCH_FILES) for (const [path, remote] of await pullTexts(client, toAsk.slice(start, start + PULL_BATCH_FILES))) remoteText.set(path, remote)

  for (const action of actions) {
    if (action.kind === 'pull') continue
    context.onEach?.()
    const {path} = action
    switch (action.kind) {
      case 'record': {
        if (action.remote === null || action.remote.deleted) {
          delete state.files[path]
          await bases.remove(path)
        } else {
          const text = localText.get(path) ?? (await aside.read(path))
          if (text !== null) recordBase(bases, state, path, text, action.remote, now)
        }
        break
      }
      case 'delete-local': {
        if (!(await unchangedSinceScan(root, path, localHashes.get(path), aside))) {
          aside.holdBack(path, 'changed here during the sync')
          break
        }
        await deleteMemoryFile(root, path)
        delete state.files[path]
        await bases.remove(path)
        result.deleted.push(path)
        break
      }
      case 'push':
        // Read when its batch goes, unless small enough to have been kept from the scan.
        pushes.push({path, text: localText.get(path), baseRev: action.baseRev, merged: false, seenAt: planInput.remote[path]?.updatedAt ?? null})
        break
      case 'delete-remote': {
        // A seed-style server has no deletions: saying "deleted" would be a lie, and the file would come back.
        if (mode === 'timestamp') {
          debug('%s deleted here is not propagated: the server has no deletions (timestamp mode)', path)
          break
        }
        deletes.push(path)
        if (mode === 'revision') pushBase[path] = action.baseRev
        break
      }
      case 'merge': {
        // The merge engine is loaded by the first sync that merges: most never do.
        const {mergeByStrategy, strategyFor} = await import('../merge/index.js')
        const remote = remoteText.get(path)
        const localContent = localText.get(path) ?? (await aside.read(path))
        if (!remote || localContent === null) break
        // Both sides hold the same text (a tree synced before its sync state was lost, or timestamp mode, whose status
        // has no hashes to tell): nothing to merge, only the base to record.
        if (remote.content === localContent) {
          recordBase(bases, state, path, remote.content, remote.entry, now)
          break
        }
        const baseText = await mergeBase(bases, state, path, localContent, remote.content)
        const strategy = strategyFor(path, options.settings.strategies)
        const modified = local.get(path)?.mtimeMs
        const merge = mergeByStrategy(path, baseText, localContent, remote.content, strategy, {local: modified === undefined ? undefined : new Date(modified).toISOString(), remote: remote.entry.updatedAt})
        const rule = merge.strategy === 'merge' ? merge.rule : merge.strategy
        if (merge.backup !== null) {
          // What the conflict was between, first: `jarvis resolve --keep local` puts back the overlap from it, not the whole backup.
          await recordConflict(root, path, merge.backup, {base: baseText, remote: remote.content, merged: merge.merged}, now().toISOString())
          const saved = await saveBackup(root, path, merge.backup)
          result.backups.push({path, backup: saved.path})
          await appendAudit(root, {at: now().toISOString(), type: 'backup', path, backup: saved.path, rule})
        }
        for (const conflict of merge.conflicts) {
          const reason = conflict.kind === 'manual' ? 'both sides changed it and its strategy is manual: the server’s version is in the file, the local one in the backup' : `${conflict.kind} conflict at ${conflict.at}: ${conflict.winner} kept`
          result.conflicts.push({path, rule, reason})
          // The server's version that lost to a newer local one (lww) is kept here, in the audit log.
          await appendAudit(root, {at: now().toISOString(), type: 'conflict', path, rule, reason, ...(merge.lost === undefined ? {} : {lost: merge.lost})})
        }
        if (!(await unchangedSinceScan(root, path, localHashes.get(path), aside))) break
        if (merge.merged !== localContent) await writeMemoryFile(root, path, merge.merged)
        result.merged.push(path)
        if (merge.merged === remote.content) {
          recordBase(bases, state, path, remote.content, remote.entry, now)
        } else {
          pushes.push({path, text: merge.merged, baseRev: remote.entry.rev ?? action.baseRev, merged: true, seenAt: remote.entry.updatedAt ?? null})
        }
        break
      }
    }
  }
  // Nothing to push: the caller writes the state once, with the server's sequence (it was written twice).
  return {pushes, deletes, pushBase}
}
