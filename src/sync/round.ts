/**
 * One round of a sync: the plan from the scan, the sync state and the server's status; the local files' checks
 * (malformed, secrets, unreadable); the local deletions, then the pulls (a file here may stand where the server now
 * has a folder), then every other action, then the pushes. A round the server refuses as stale
 * (409) is retried by the caller (run.ts) with another listing.
 */
import createDebug from 'debug'

import {ConflictLeftError} from '../errors.js'
import type {MemoryClient, StatusResponse} from '../protocol/client.js'
import type {SyncState} from '../schemas/index.js'
import {type BaseStore, readScanHints, type ScanHints, type UnreadableEntry, writeStatCache} from '../store/index.js'
import {applyActions} from './actions.js'
import {sameFiles, scanAfterRound} from './clean-mark.js'
import {exceedsDeletionGuard, pathsToPlan, planSync, summarisePlan, type PlanInput, type SyncMode} from './plan.js'
import {pullFiles, statusTexts} from './pull.js'
import {type PushContext, pushAll} from './push.js'
import {changedOnEitherSide, hashesOf, KEEP_TEXT_BYTES, type Scanned, scanTree} from './quick.js'
import {pendingFrom, pendingOf, remoteEntries, settled, writeState} from './record.js'
import {SensitiveScan} from './sensitive.js'
import {SetAside} from './set-aside.js'
import type {SyncOptions, SyncResult} from './types.js'
import {problemsOf} from './validate.js'

const debug = createDebug('jarvis:sync')
/** A round with this many actions writes the stat cache before acting too (see syncRound). */
const EARLY_STAT_CACHE_ACTIONS = 256

export interface RoundInput {
  root: string
  client: MemoryClient
  bases: BaseStore
  /** The stat cache as the quick check read it, and its scan if it made one. */
  hints?: ScanHints
  scanned?: Scanned
  /** The bases are the files of `scanned`'s stat cache, each with its hash (see CleanMark). */
  basesAreCache?: boolean
  state: SyncState
  status: StatusResponse
  mode: SyncMode
  incremental: boolean
  options: SyncOptions
  now: () => Date
  result: SyncResult
}

/**
 * `changed`: the round recorded a base, so the sync state must be written. `scan`: the stat cache the round leaves
 * to its caller, who writes it after the sync state; `clean` when every file is its base (see CleanMark). `seq`: the
 * server's sequence after the round's own pushes, when nobody else wrote meanwhile (see PushContext). `heldBack`: a
 * change of the server's was not applied (see SetAside): the state's sequence must stay where it was.
 */
export type RoundOutcome =
  | {kind: 'done'; state: SyncState; changed: boolean; backupsSeen?: boolean; scan?: {scanned: Scanned; clean: boolean}; seq?: number; heldBack?: boolean}
  | {kind: 'stale'; state: SyncState; stale: string[]}

export async function syncRound(input: RoundInput): Promise<RoundOutcome> {
  const {root, client, bases, status, mode, options, now, result} = input
  // Entries are only ever replaced or removed, never edited in place: a shallow copy keeps the input intact.
  const state: SyncState = {...input.state, files: {...input.state.files}, pending: pendingFrom(input.state)}
  // Scanned already when the quick check found something to do; else now, the bases' hashes deciding which
  // texts to keep.
  const scanned = input.scanned ?? (await scanTree(root, input.hints ?? (await readScanHints(root)), (path, hash) => state.files[path]?.hash !== hash, options.watch))
  const {local, texts: scannedText, backups: backupsSeen} = scanned
  const localHashes = hashesOf(local)

  const planInput: PlanInput = {mode, local: localHashes, base: state.files, remote: remoteEntries(status), remoteIsIncremental: input.incremental, pending: pendingOf(state)}
  // After an incremental listing, only the paths changed on either side (see pathsToPlan). With bases that are the
  // stat cache's files, those changed here are the ones the scan found changed since the cache: no file looked at.
  const changedHere = input.incremental && input.basesAreCache ? scanned.changed : undefined
  const paths = changedHere === undefined ? [...pathsToPlan(planInput)].sort() : changedOnEitherSide(changedHere, planInput.remote)
  // Malformed local files are left alone; only files that changed since their base can be newly malformed.
  const skip = new Set<string>()
  const localText = new Map<string, string>()
  result.invalid = []
  const aside = new SetAside(root, result)
  // What this user may not read is neither pushed, nor deleted on the server, nor overwritten here.
  for (const entry of scanned.unreadable) aside.unreadable(entry)
  for (const path of unreadablePaths(paths, scanned.unreadable)) skip.add(path)
  const sensitive = new SensitiveScan()
  for (const path of paths) {
    const hash = localHashes.get(path)
    if (hash === undefined || state.files[path]?.hash === hash || skip.has(path)) continue
    const text = scannedText.get(path) ?? (await aside.read(path))
    if (text === null) {
      // Gone since the scan (the next sync sees it), or this user may no longer read it: then left alone.
      if (aside.has(path)) skip.add(path)
      continue
    }
    if (text.length <= KEEP_TEXT_BYTES) localText.set(path, text)
    const problem = problemsOf(path, text, hash)
    if (problem) {
      skip.add(path)
      result.invalid.push({path, problems: problem.problems})
    } else {
      await sensitive.add(path, text)
    }
  }
  result.refused = await sensitive.flush()
  for (const file of result.refused) skip.add(file.path)

  const plan = planSync({...planInput, skip, paths})
  debug('plan %o', summarisePlan(plan))
  if (exceedsDeletionGuard(plan) && !options.force) {
    throw new ConflictLeftError(`this sync would delete ${plan.deletions} of ${plan.knownFiles} files; run \`jarvis sync --force\` if that is what you want`, {plan: summarisePlan(plan)})
  }
  if (options.dryRun) {
    result.plan = summarisePlan(plan)
    return {kind: 'done', state: input.state, changed: false, backupsSeen: backupsSeen.length > 0}
  }
  // Nothing to do: the caller writes the stat cache, after the sync state, with a clean mark when it may.
  if (plan.actions.length === 0) {
    const clean = result.invalid.length === 0 && result.refused.length === 0 && backupsSeen.length === 0 && Object.keys(pendingOf(state)).length === 0 && sameFiles(local, state.files)
    return {kind: 'done', state: settled(state), changed: false, backupsSeen: backupsSeen.length > 0, scan: {scanned, clean}, heldBack: aside.heldBack}
  }
  // The stat cache is written when the round ends (scanAfterRound). One with many actions, which an interruption
  // may cut short, keeps its hashes first, without a clean mark: the next sync need not hash the tree again.
  if (plan.actions.length >= EARLY_STAT_CACHE_ACTIONS && (!scanned.unchanged || scanned.hints.clean)) await writeStatCache(root, local, {dirs: scanned.dirs, backups: backupsSeen, watch: scanned.clock})


  const total = plan.actions.length
  let done = 0
  const progress = () => options.onProgress?.(++done, total)
  const pulls = plan.actions.filter((a) => a.kind === 'pull').map((a) => a.path)
  // The few files the status answer carried need no pull request (statusTexts).
  const given = plan.actions.some((a) => a.kind === 'pull' || a.kind === 'merge') ? statusTexts(status) : undefined
  const actionContext = {root, client, bases, state, mode, local, localText, planInput, options, now, result, onEach: progress, given, aside}
  // Local deletions first: a file deleted on the server may stand where it now has a folder, or be the last file of
  // a folder where it now has a file.
  const localDeletions = plan.actions.filter((a) => a.kind === 'delete-local')
  await applyActions(actionContext, localDeletions)
  await pullFiles({root, client, bases, state, localHashes, result, now, onEach: progress, given, aside}, pulls)
  const {pushes, deletes, pushBase} = await applyActions(actionContext, localDeletions.length === 0 ? plan.actions : plan.actions.filter((a) => a.kind !== 'delete-local'))
  // Nothing to push: the caller writes the state once, with the server's sequence (it was written twice).
  if (pushes.length === 0 && deletes.length === 0) return {kind: 'done', state: settled(state), changed: plan.actions.length > 0, backupsSeen: backupsSeen.length > 0, scan: scanAfterRound(scanned, state, result, plan), heldBack: aside.heldBack}
  // What we pulled, merged or recorded is safe on disk; record it before the push can fail (a round that only
  // pushes recorded nothing: its first batch writes the state anyway).
  if (plan.actions.some((a) => a.kind !== 'push' && a.kind !== 'delete-remote')) await writeState(root, bases, settled(state))

  // Pushed in batches bounded by bytes and files. Each acknowledged batch moves its bases, written down with the
  // next batch's pending hashes (one write, before that batch goes), or by the caller after the last one.
  const context: PushContext = {root, client, bases, state, mode, now, result, pushBase, unwritten: false, seq: mode === 'revision' ? status.seq : undefined}
  const stale = await pushAll(context, pushes, deletes)
  if (stale) return {kind: 'stale', state: settled(state), stale}
  return {kind: 'done', state: settled(state), changed: true, backupsSeen: backupsSeen.length > 0, scan: scanAfterRound(scanned, state, result, plan), seq: context.seq, heldBack: aside.heldBack}
}

/** The paths of `paths` that are, or are under, what the scan could not read. */
function unreadablePaths(paths: readonly string[], unreadable: readonly UnreadableEntry[]): string[] {
  if (unreadable.length === 0) return []
  const files = new Set(unreadable.filter((entry) => !entry.folder).map((entry) => entry.path))
  const folders = unreadable.filter((entry) => entry.folder).map((entry) => `${entry.path}/`)
  return paths.filter((path) => files.has(path) || folders.some((folder) => path.startsWith(folder)))
}
