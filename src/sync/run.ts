/**
 * One whole `jarvis sync`: the outbox flushed, the quick check (quick.ts), then rounds of status → plan → pull/merge
 * → push (round.ts), retried when the server says a push was stale (409); the sync state written once the round
 * ends, then the stat cache with its clean mark (clean-mark.ts), then the audit line.
 */
import {isAbsolute, relative} from 'node:path'

import {BadInputError, FileNotWritableError, JarvisError} from '../errors.js'
import {modeOf} from '../protocol/client.js'
import {appendAudit, BaseStore, cachedRevsInOrder, endSyncRun, findBackups, isPermissionError, markSyncRunning, nexusDir, readOutbox, readSyncStateAs, sweepTempFiles, syncRunUnfinished, withPathGuardCache} from '../store/index.js'
import {writeScan} from './clean-mark.js'
import {flushOutbox} from './outbox.js'
import type {Plan, SyncMode} from './plan.js'
import {quickCheck} from './quick.js'
import {forgetRevisions, serverIdOf, writeState} from './record.js'
import {syncRound} from './round.js'
import {refusedFilesError} from './sensitive.js'
import {stateView} from './state-view.js'
import type {SyncOptions, SyncResult} from './types.js'

export {PULL_BATCH_BYTES, PULL_BATCH_FILES} from './pull.js'
export {jsonStringBytes, PUSH_BATCH_BYTES, PUSH_BATCH_FILES} from './push.js'
export type {BackupReport, SyncOptions, SyncResult} from './types.js'
export type {Plan}

/** One whole `jarvis sync`: flush the outbox, then status → plan → pull/merge → push, retried on 409. */
export async function runSync(options: SyncOptions): Promise<SyncResult> {
  // The path guard asks of each file's folders once per sync, not once per file and per base.
  try {
    return await withPathGuardCache(() => runSyncGuarded(options))
  } catch (error) {
    throw nexusRefused(options.root, error)
  }
}

/**
 * A file of `.nexus/` this user may not write or read: another user ran jarvis in this tree (root, after the tree was
 * given to this one). Said so, with what to do, not as the system's bare EACCES.
 */
function nexusRefused(root: string, error: unknown): unknown {
  const path = (error as NodeJS.ErrnoException | undefined)?.path
  if (!isPermissionError(error) || typeof path !== 'string') return error
  const inside = relative(nexusDir(root), path)
  if (inside === '' || inside.startsWith('..') || isAbsolute(inside)) return error
  const file = `.nexus/${inside.split('\\').join('/')}`
  return new FileNotWritableError(`${file}: this user may not read or write it (permission denied): another user ran jarvis in this tree; run jarvis as the user who owns the tree, or give .nexus/ to this one (chown -R)`, {path: file}, error)
}

async function runSyncGuarded(options: SyncOptions): Promise<SyncResult> {
  const {root, client} = options
  // Opened at its first use: a no-op sync never touches the base copies.
  const bases = new BaseStore(root)
  const result: SyncResult = {
    server: client.server, mode: 'revision', pushed: [], pulled: [], merged: [], deleted: [], conflicts: [], backups: [], waiting: [],
    invalid: [], refused: [], outbox: {sent: 0, left: 0}, dryRun: Boolean(options.dryRun), attempts: 0,
  }

  if (!options.dryRun) {
    // Only a sync writes the per-file folders of .nexus/ (bases, replica bases): walk them for a dead writer's temp
    // files only when the last sync did not finish. This one leaves its marker (sync-state.ts) once it knows it has
    // work, before its first write there: a no-op writes nothing there, and no marker either. A marker left behind
    // stays until this sync ends, however it ends.
    let marked = await syncRunUnfinished(root)
    await sweepTempFiles(root, {everywhere: marked})
    const markRunning = async () => {
      if (marked) return
      await markSyncRunning(root)
      marked = true
    }
    try {
      return await syncRounds(options, result, bases, markRunning)
    } finally {
      bases.close()
      if (marked) await endSyncRun(root).catch(() => {})
    }
  }
  try {
    return await syncRounds(options, result, bases, async () => {})
  } finally {
    bases.close()
  }
}

async function syncRounds(options: SyncOptions, result: SyncResult, bases: BaseStore, markRunning: () => Promise<void>): Promise<SyncResult> {
  const {root, client, settings} = options
  const now = options.now ?? (() => new Date())
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  // A dry run sends nothing: what waits in the outbox is what the sync would send first.
  result.outbox = options.dryRun ? {sent: 0, left: (await readOutbox(root)).length} : await flushOutbox(root, client)

  const quick = options.dryRun || !settings.incrementalSync ? undefined : await quickCheck(root, client, options.watch)
  if (quick?.kind === 'nothing') {
    result.attempts = 1
    // The contract asks for one audit line per sync, a no-op's too. Kept durable like every other: it is one
    // appended line and one fsync (under a millisecond of a 10,000-file no-op, measured with strace).
    await appendAudit(root, {at: now().toISOString(), type: 'sync', server: client.server, mode: result.mode, pushed: 0, pulled: 0, merged: 0, deleted: 0, conflicts: 0, backups: 0, attempts: 1})
    return result
  }
  await markRunning()
  // A few files changed since a clean sync: their entries come from the stat cache and the rest of the state from its
  // journal (stateView). Else the state is read, and not checked entry by entry again while it is as the sync that
  // left the clean mark wrote it.
  const view = quick?.kind === 'sync' ? await stateView(root, client, quick) : undefined
  const read = view !== undefined ? {state: view, asWritten: true} : await readSyncStateAs(root, quick?.kind === 'sync' ? quick.hints.clean?.state : undefined)
  let state = read.state
  let partial = view !== undefined
  const asRead = {server: state.server, serverId: state.serverId, mode: state.mode, seq: state.seq}
  let forgotRevisions = false
  // Revisions are per server: against another server only the content hashes of our bases still mean something.
  if (state.server !== undefined && state.server !== client.server) {
    state = forgetRevisions(state)
    forgotRevisions = true
  }

  let fullListing = !settings.incrementalSync || state.seq === undefined || state.server !== client.server
  for (let attempt = 0; attempt <= settings.maxRetries; attempt++) {
    result.attempts = attempt + 1
    // The first round starts from what the quick check read; its answer stands for this request when it asked the
    // same question.
    const quickRead = attempt === 0 && quick?.kind === 'sync' ? quick : undefined
    const asked = !fullListing && quickRead?.answer?.seq === state.seq ? quickRead?.answer : undefined
    let status = asked?.status ?? (await client.status(fullListing ? undefined : state.seq))
    // A server whose identity changed or whose sequence went backwards was replaced or reset:
    // its revisions and its "since" mean nothing to us any more, only content hashes still do.
    const replaced = serverIdOf(status) !== undefined && state.serverId !== undefined && serverIdOf(status) !== state.serverId
    if (replaced) {
      state = forgetRevisions(state)
      forgotRevisions = true
    }
    if (!fullListing && (replaced || status.seq === undefined || status.seq < (state.seq ?? 0))) {
      fullListing = true
      status = await client.status()
    }
    const mode: SyncMode = modeOf(status)
    result.mode = mode

    // The quick check's scan, against the stat cache whose clean mark names the state as read: each base is a file of
    // the cache, with its hash.
    const basesAreCache = asked?.scanned !== undefined && read.asWritten && !forgotRevisions
    const round = await syncRound({root, client, bases, hints: quickRead?.hints, scanned: asked?.scanned, basesAreCache, state, status, mode, incremental: !fullListing, options, now, result})
    if (round.kind === 'done') {
      state = round.state
      state.server = client.server
      state.serverId = serverIdOf(status)
      state.mode = mode
      // Past our own pushes when nobody else wrote meanwhile: the next sync is not shown them as news. A round that
      // held a change of the server's back keeps the sequence it started from: the next listing names it again.
      if (mode === 'revision' && status.seq !== undefined && !round.heldBack) state.seq = round.seq ?? status.seq
      if (!options.dryRun) {
        // A no-op sync writes nothing but its audit line: no fsync of a state that did not change.
        const moved = round.changed || forgotRevisions || (['server', 'serverId', 'mode', 'seq'] as const).some((key) => state[key] !== asRead[key])
        if (moved) {
          state.lastSyncAt = now().toISOString()
          await writeState(root, bases, state)
        }
        if (round.scan) {
          const mark = round.scan.clean && mode === 'revision' && state.seq !== undefined ? {server: client.server, serverId: serverIdOf(status), seq: state.seq} : undefined
          const files = state.files
          // A view's other entries are the stat cache's, which the quick check read.
          const cached = partial && quickRead ? cachedRevsInOrder(quickRead.hints) : () => undefined
          const revOf = (path: string) => (files[path] !== undefined ? (files[path].rev ?? null) : cached(path))
          await writeScan(root, round.scan, mark, revOf)
        }
        await appendAudit(root, {at: now().toISOString(), type: 'sync', server: client.server, mode, pushed: result.pushed.length, pulled: result.pulled.length, merged: result.merged.length, deleted: result.deleted.length, conflicts: result.conflicts.length, backups: result.backups.length, attempts: result.attempts})
      }
      // A round retried after a 409 merges (or pushes) the same file again: the report names each file once.
      for (const list of ['pushed', 'pulled', 'merged', 'deleted'] as const) result[list] = [...new Set(result[list])]
      // Only a tree where the scan met a backup, or this sync made one, is walked for them again.
      if (round.backupsSeen || result.backups.length > 0) {
        const made = new Set(result.backups.map((backup) => backup.backup))
        result.waiting = (await findBackups(root)).filter((backup) => !made.has(backup))
      }
      if (result.refused.length > 0) throw await refusedFilesError(result.refused, {invalid: result.invalid, result})
      if (result.invalid.length > 0) throw invalidFilesError(result)
      return result
    }
    state = round.state
    // The next round lists every file: it needs the whole state, which has everything the view recorded.
    if (partial) state = (await readSyncStateAs(root, undefined)).state
    partial = false
    await appendAudit(root, {at: now().toISOString(), type: 'conflict', reason: 'stale push', server: client.server, stale: round.stale, attempt: attempt + 1})
    // What we merged is on disk now; the next round merges it again against the newer server version.
    fullListing = true
    if (attempt < settings.maxRetries) await sleep(settings.retryDelay * 2 ** attempt)
  }
  throw new JarvisError(`the server kept changing under this sync (${settings.maxRetries + 1} attempts); every local edit is still on disk, run \`jarvis sync\` again`, {code: 'RETRIES_EXHAUSTED', exit: 1, data: {server: client.server}})
}

function invalidFilesError(result: SyncResult): BadInputError {
  const lines = result.invalid.flatMap((file) => file.problems.map((problem) => `.memory/${file.path}: ${problem}`))
  return new BadInputError(`left as they are and not synced until fixed:\n${lines.join('\n')}`, {invalid: result.invalid, result})
}

