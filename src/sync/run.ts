import {isDeepStrictEqual} from 'node:util'

import createDebug from 'debug'

import {BadInputError, ConflictLeftError, JarvisError} from '../errors.js'
import {MemoryClient, modeOf, type PullResponse, pulledText, StalePushError, type StatusResponse} from '../protocol/client.js'
import type {SyncSettings, SyncState} from '../schemas/index.js'
import {
  appendAudit,
  AtomicBatch,
  cachedHash,
  cachedRev,
  cachedRevsInOrder,
  changedSinceCache,
  type CleanMark,
  type DirCache,
  type DirStat,
  type MemoryFileStat,
  type ScanHints,
  BaseStore,
  beginSyncRun,
  deleteMemoryFile,
  endSyncRun,
  findBackups,
  forEachConcurrently,
  hashText,
  memoryFileAbsent,
  readMemoryFile,
  readScanHints,
  readSyncStateAs,
  readSyncStateView,
  sameStateStamp,
  saveBackup,
  scanMemory,
  stageMemoryFile,
  type StagedFile,
  sweepTempFiles,
  syncStateStamp,
  VIEW_ENTRIES,
  withPathGuardCache,
  writeMemoryFile,
  writeStatCache,
  writeSyncState,
} from '../store/index.js'
import {flushOutbox} from './outbox.js'
import {type BaseEntry, exceedsDeletionGuard, type LocalHashes, pathsToPlan, planSync, sameInstant, summarisePlan, type Action, type Plan, type PlanInput, type RemoteEntry, type SyncMode} from './plan.js'
import {type RefusedFile, refusedFilesError, SensitiveScan} from './sensitive.js'
import {problemsOf} from './validate.js'

const debug = createDebug('jarvis:sync')
/** Enough to keep the disk and libuv's thread pool busy, few enough to stay far from file-handle limits. */
const PULL_CONCURRENCY = 16
/**
 * Requests stay bounded whatever the tree's size: a push carries at most this many bytes of JSON (half the
 * server's default body limit, whose files hold at most 4 MiB each) and files; a pull asks for at most this many
 * files, fewer after an answer of more than PULL_BATCH_BYTES (the status says nothing of sizes), so the client
 * holds one bounded batch at a time.
 */
export const PUSH_BATCH_BYTES = 4 * 1024 * 1024
export const PUSH_BATCH_FILES = 2000
export const PULL_BATCH_FILES = 512
export const PULL_BATCH_BYTES = 4 * 1024 * 1024
const PULL_FIRST_BATCH_FILES = 8
/**
 * Pulled files made durable together: one syncfs and one fsync per folder for this many, whatever the size of the
 * pull requests. Their texts are kept until they are renamed (their bases are recorded then), hence a bound in
 * characters too.
 */
const PULL_DURABLE_FILES = 4096
const PULL_DURABLE_CHARS = 8 * 1024 * 1024
/** A round with this many actions writes the stat cache before acting too (see syncRound). */
const EARLY_STAT_CACHE_ACTIONS = 256
/** The size and mtime of a stat cache entry whose file was not stat-ed: no file matches them, so it is hashed. */
const UNSTATTED = -1
/** Texts of changed files kept from the scan for the push; larger ones are read again when their batch goes. */
const KEEP_TEXT_BYTES = 64 * 1024

export interface SyncOptions {
  root: string
  client: MemoryClient
  settings: SyncSettings
  dryRun?: boolean
  force?: boolean
  now?: () => Date
  sleep?: (ms: number) => Promise<void>
  onProgress?: (done: number, total: number) => void
}

export interface BackupReport {
  /** The memory file whose local version lost. */
  path: string
  /** Where the local version was kept, relative to `.memory/`. */
  backup: string
}

export interface SyncResult {
  server: string
  mode: SyncMode
  pushed: string[]
  pulled: string[]
  merged: string[]
  deleted: string[]
  conflicts: {path: string; rule: string; reason: string}[]
  backups: BackupReport[]
  /** Backups of earlier conflicts still waiting for `jarvis resolve` (relative to `.memory/`). */
  waiting: string[]
  /** Malformed local files, left exactly as they were. */
  invalid: {path: string; problems: string[]}[]
  /** Local files holding a secret or personal data, left exactly as they were and not sent. */
  refused: RefusedFile[]
  outbox: {sent: number; left: number}
  dryRun: boolean
  plan?: Record<Action['kind'], string[]>
  attempts: number
}

/** One whole `jarvis sync`: flush the outbox, then status → plan → pull/merge → push, retried on 409. */
export async function runSync(options: SyncOptions): Promise<SyncResult> {
  // The path guard asks of each file's folders once per sync, not once per file and per base.
  return withPathGuardCache(() => runSyncGuarded(options))
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
    // files only when the last sync did not finish; the marker goes when this one ends, however it ends.
    await sweepTempFiles(root, {everywhere: await beginSyncRun(root)})
    try {
      return await syncRounds(options, result, bases)
    } finally {
      bases.close()
      await endSyncRun(root).catch(() => {})
    }
  }
  try {
    return await syncRounds(options, result, bases)
  } finally {
    bases.close()
  }
}

async function syncRounds(options: SyncOptions, result: SyncResult, bases: BaseStore): Promise<SyncResult> {
  const {root, client, settings} = options
  const now = options.now ?? (() => new Date())
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  if (!options.dryRun) result.outbox = await flushOutbox(root, client)

  const quick = options.dryRun || !settings.incrementalSync ? undefined : await quickCheck(root, client)
  if (quick?.kind === 'nothing') {
    result.attempts = 1
    // The contract asks for one audit line per sync, a no-op's too. Kept durable like every other: it is one
    // appended line and one fsync (under a millisecond of a 10,000-file no-op, measured with strace).
    await appendAudit(root, {at: now().toISOString(), type: 'sync', server: client.server, mode: result.mode, pushed: 0, pulled: 0, merged: 0, deleted: 0, conflicts: 0, backups: 0, attempts: 1})
    return result
  }
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
      // Past our own pushes when nobody else wrote meanwhile: the next sync is not shown them as news.
      if (mode === 'revision' && status.seq !== undefined) state.seq = round.seq ?? status.seq
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

/** What a scan of `.memory/` found, with the hints it started from. */
interface Scanned {
  hints: ScanHints
  local: Map<string, MemoryFileStat>
  dirs: Map<string, DirStat>
  backups: string[]
  /** The texts of the files `wanted` asked for (see scanMemory's `texts`). */
  texts: Map<string, string>
  /** The paths where the scan differs from the stat cache (see changedSinceCache). */
  changed: string[]
  /** Nothing in it differs from the hints: the stat cache need not be written. */
  unchanged: boolean
}

/**
 * The stat cache only saves hashing; a file whose size or mtime moved is always hashed again. Its folders save
 * listing the ones whose entries did not change (each file is still stat-ed: an edit in place changes only it).
 */
async function scanTree(root: string, hints: ScanHints, wanted: (path: string, hash: string) => boolean): Promise<Scanned> {
  const backups: string[] = []
  const texts = new Map<string, string>()
  const dirs = new Map<string, DirStat>()
  const counts = {unchanged: 0, hashed: [] as string[]}
  const local = await scanMemory(root, hints.known, {backups, dirCache: hints.dirs, dirs, backupCache: hints.backups, counts, texts: {into: texts, maxBytes: KEEP_TEXT_BYTES, wanted}})
  const sameBackups = backups.length === hints.backups.length && backups.every((path, i) => path === hints.backups[i])
  // Every entry given back as the cache held it, and as many as it held: the same files, nothing to compare.
  const sameEntries = counts.unchanged === local.size && local.size === hints.count
  return {hints, local, dirs, backups, texts, changed: changedSinceCache(hints, local, counts.hashed), unchanged: sameEntries && sameDirs(hints.dirs, dirs) && sameBackups}
}

/** `sync`: there is work, or it could not tell; the stat cache it read, and the server's answer when it asked. */
type QuickCheck = {kind: 'nothing'} | {kind: 'sync'; hints: ScanHints; answer?: {seq: number; status: StatusResponse; scanned?: Scanned}}

/**
 * A sync after one that left every file equal to its base (the stat cache's clean mark, for the sync state as it
 * is now) asks the server what changed since then and scans the tree against the stat cache: neither found
 * anything, there is nothing to do, and the sync state (as large as the tree) is not read. Else the stat cache, the
 * answer and the scan serve the round (read once: the stat cache is as large as the tree too).
 */
async function quickCheck(root: string, client: MemoryClient): Promise<QuickCheck> {
  const hints = await readScanHints(root)
  const clean = hints.clean
  if (clean === undefined || clean.server !== client.server || !sameStateStamp(await syncStateStamp(root), clean.state)) return {kind: 'sync', hints}
  // Asked before the scan and awaited after it: the server answers while the tree is walked (either is needed). The
  // scan holds the thread, so the question must be on the wire before it starts.
  const {answer: asking} = await sentFirst((sent) => client.status(clean.seq, sent))
  // Under the mark the cache's hashes are the bases': the texts wanted are those of files whose hash moved.
  const scanned = await scanTree(root, hints, (path, hash) => cachedHash(hints, path) !== hash)
  const status = await asking
  if (serverIdOf(status) !== clean.serverId || status.seq !== clean.seq || Object.keys(status.files).length > 0) return {kind: 'sync', hints, answer: {seq: clean.seq, status, scanned}}
  // A file hashed again (its cached entry was too recent to trust) that still has its hash changed nothing.
  if (scanned.backups.length > 0 || scanned.changed.length > 0) return {kind: 'sync', hints, answer: {seq: clean.seq, status, scanned}}
  if (!scanned.unchanged) await writeStatCache(root, scanned.local, {dirs: scanned.dirs, backups: scanned.backups, clean, revOf: cachedRevsInOrder(hints)})
  return {kind: 'nothing'}
}

/**
 * The sync state as a view (readSyncStateView) when a sync after a clean one has only pushes and pulls of a few files
 * to make: under the clean mark each base is the stat cache's entry (its hash, and the revision the mark lists), so
 * the round needs those of the files changed on either side, and not the whole state (2.3 MB at 10,000 files).
 * Undefined (the whole state is read) for anything else: a merge, a deletion, more files, a mark without revisions.
 */
async function stateView(root: string, client: MemoryClient, quick: Extract<QuickCheck, {kind: 'sync'}>): Promise<SyncState | undefined> {
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

/** pathsToPlan after an incremental listing, when the files changed here are known: those and the server's news, sorted. */
function changedOnEitherSide(changedHere: readonly string[], remote: Readonly<Record<string, unknown>>): string[] {
  return [...new Set([...changedHere, ...Object.keys(remote)])].sort()
}

/** The stat cache a round leaves, written after the sync state so that its clean mark names it. */
async function writeScan(root: string, scan: {scanned: Scanned; clean: boolean}, mark: Omit<CleanMark, 'state'> | undefined, revOf: (path: string) => number | null | undefined): Promise<void> {
  const stamp = mark === undefined ? undefined : await syncStateStamp(root)
  const clean: CleanMark | undefined = mark === undefined || stamp === undefined ? undefined : {...mark, state: stamp}
  const old = scan.scanned.hints.clean
  const sameMark = old === undefined ? clean === undefined : clean !== undefined && old.server === clean.server && old.serverId === clean.serverId && old.seq === clean.seq && sameStateStamp(old.state, clean.state)
  if (scan.scanned.unchanged && sameMark) return
  await writeStatCache(root, scan.scanned.local, {dirs: scan.scanned.dirs, backups: scan.scanned.backups, clean, revOf})
}

/** The scan's hashes by path, read through its entries: no second map of every file. */
function hashesOf(local: ReadonlyMap<string, MemoryFileStat>): LocalHashes {
  return {
    get: (path) => local.get(path)?.hash,
    has: (path) => local.has(path),
    *[Symbol.iterator]() {
      for (const [path, {hash}] of local) yield [path, hash]
    },
    keys: () => local.keys(),
  }
}

/** Every local file has an entry of the same hash in `files` (the bases), and every entry a file. */
function sameFiles(local: Map<string, MemoryFileStat>, files: Record<string, {hash: string}>): boolean {
  if (Object.keys(files).length !== local.size) return false
  for (const [path, entry] of local) if (files[path]?.hash !== entry.hash) return false
  return true
}

interface RoundInput {
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
 * server's sequence after the round's own pushes, when nobody else wrote meanwhile (see PushContext).
 */
type RoundOutcome =
  | {kind: 'done'; state: SyncState; changed: boolean; backupsSeen?: boolean; scan?: {scanned: Scanned; clean: boolean}; seq?: number}
  | {kind: 'stale'; state: SyncState; stale: string[]}

async function syncRound(input: RoundInput): Promise<RoundOutcome> {
  const {root, client, bases, status, mode, options, now, result} = input
  // Entries are only ever replaced or removed, never edited in place: a shallow copy keeps the input intact.
  const state: SyncState = {...input.state, files: {...input.state.files}, pending: pendingFrom(input.state)}
  // Scanned already when the quick check found something to do; else now, the bases' hashes deciding which
  // texts to keep.
  const scanned = input.scanned ?? (await scanTree(root, input.hints ?? (await readScanHints(root)), (path, hash) => state.files[path]?.hash !== hash))
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
  const sensitive = new SensitiveScan()
  for (const path of paths) {
    const hash = localHashes.get(path)
    if (hash === undefined || state.files[path]?.hash === hash) continue
    const text = scannedText.get(path) ?? (await readMemoryFile(root, path))
    if (text === null) continue
    if (text.length <= KEEP_TEXT_BYTES) localText.set(path, text)
    const problem = problemsOf(path, text)
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
    return {kind: 'done', state: settled(state), changed: false, backupsSeen: backupsSeen.length > 0, scan: {scanned, clean}}
  }
  // The stat cache is written when the round ends (scanAfterRound). One with many actions, which an interruption
  // may cut short, keeps its hashes first, without a clean mark: the next sync need not hash the tree again.
  if (plan.actions.length >= EARLY_STAT_CACHE_ACTIONS && (!scanned.unchanged || scanned.hints.clean)) await writeStatCache(root, local, {dirs: scanned.dirs, backups: backupsSeen})

  const pushes: PushItem[] = []
  const pushBase: Record<string, number | null> = {}
  const deletes: string[] = []
  const total = plan.actions.length
  let done = 0

  // Pulls go in batches, the next asked for while this one is written, so the server's work and ours overlap (two
  // batches held at most). Small first: an answer of large files stays bounded before any size is known. Each file
  // goes to a temp file as its answer comes; up to PULL_DURABLE_FILES of them are then made durable together (one
  // syncfs, not an fsync each), renamed (each target looked at right before), and each folder fsynced once.
  const pulls = plan.actions.filter((a) => a.kind === 'pull').map((a) => a.path)
  const writes = new AtomicBatch()
  const staged: Array<{path: string; remote: RemoteText; file: StagedFile}> = []
  let stagedChars = 0
  const renameStaged = async () => {
    await writes.makeDurable()
    await forEachConcurrently(staged, PULL_CONCURRENCY, async ({path, remote, file}) => {
      const scanned = localHashes.get(path)
      // The user may have written the file while its temp was: then it is left for the next sync.
      if (!(scanned === undefined ? stillAbsent(root, path) : await unchangedSinceScan(root, path, scanned))) return writes.discard(file)
      if (!writes.commit(file)) return debug('%s: its folder was removed during the sync: left for the next one', path)
      recordBase(bases, state, path, remote.content, remote.entry, now)
      result.pulled.push(path)
    })
    // The sync state that records these pulls is written later.
    await writes.syncFolders()
    bases.flush()
    staged.length = 0
    stagedChars = 0
  }
  let batch = pulls.slice(0, PULL_FIRST_BATCH_FILES)
  let asked = batch.length > 0 ? (await sentFirst((sent) => pullTexts(client, batch, sent))).answer : undefined
  // While the server answers: the base copies' database, where the pulled texts go, is opened meanwhile.
  if (asked !== undefined) bases.openEarly()
  try {
    for (let start = batch.length; asked !== undefined; ) {
      const remoteText = await asked
      const current = batch
      batch = pulls.slice(start, start + nextPullBatchFiles(current.length, remoteText))
      start += batch.length
      asked = batch.length > 0 ? prefetch(pullTexts(client, batch)) : undefined
      await forEachConcurrently(current, PULL_CONCURRENCY, async (path) => {
        options.onProgress?.(++done, total)
        const remote = remoteText.get(path)
        if (!remote) return // vanished between status and pull: the next sync sees it
        // The server's version is the file here already (a base without the server's time, in timestamp mode):
        // only the base is recorded, the file is not written again.
        if (remote.entry.hash === localHashes.get(path)) return recordBase(bases, state, path, remote.content, remote.entry, now)
        staged.push({path, remote, file: await stageMemoryFile(root, path, remote.content, writes, {absent: !localHashes.has(path)})})
        stagedChars += remote.content.length
      })
      if (asked === undefined || staged.length >= PULL_DURABLE_FILES || stagedChars >= PULL_DURABLE_CHARS) await renameStaged()
    }
  } finally {
    // After an error: the temp files not renamed go (the targets are as they were).
    await writes.abandon()
  }
  result.pulled.sort()
  const merges = plan.actions.filter((a) => a.kind === 'merge').map((a) => a.path)
  const remoteText = new Map<string, RemoteText>()
  for (let start = 0; start < merges.length; start += PULL_BATCH_FILES) for (const [path, remote] of await pullTexts(client, merges.slice(start, start + PULL_BATCH_FILES))) remoteText.set(path, remote)

  for (const action of plan.actions) {
    if (action.kind === 'pull') continue
    options.onProgress?.(++done, total)
    const {path} = action
    switch (action.kind) {
      case 'record': {
        if (action.remote === null || action.remote.deleted) {
          delete state.files[path]
          await bases.remove(path)
        } else {
          const text = localText.get(path) ?? (await readMemoryFile(root, path))
          if (text !== null) recordBase(bases, state, path, text, action.remote, now)
        }
        break
      }
      case 'delete-local': {
        if (!(await unchangedSinceScan(root, path, localHashes.get(path)))) break
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
        const localContent = localText.get(path) ?? (await readMemoryFile(root, path))
        if (!remote || localContent === null) break
        // Both sides hold the same text (a tree synced before its sync state was lost, or timestamp mode, whose status
        // has no hashes to tell): nothing to merge, only the base to record.
        if (remote.content === localContent) {
          recordBase(bases, state, path, remote.content, remote.entry, now)
          break
        }
        const baseText = await verifiedBase(bases, state, path)
        const strategy = strategyFor(path, options.settings.strategies)
        const modified = local.get(path)?.mtimeMs
        const merge = mergeByStrategy(path, baseText, localContent, remote.content, strategy, {local: modified === undefined ? undefined : new Date(modified).toISOString(), remote: remote.entry.updatedAt})
        const rule = merge.strategy === 'merge' ? merge.rule : merge.strategy
        if (merge.backup !== null) {
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
        if (!(await unchangedSinceScan(root, path, localHashes.get(path)))) break
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
  if (pushes.length === 0 && deletes.length === 0) return {kind: 'done', state: settled(state), changed: plan.actions.length > 0, backupsSeen: backupsSeen.length > 0, scan: scanAfterRound(scanned, state, result, plan)}
  // What we pulled, merged or recorded is safe on disk; record it before the push can fail (a round that only
  // pushes recorded nothing: its first batch writes the state anyway).
  if (plan.actions.some((a) => a.kind !== 'push' && a.kind !== 'delete-remote')) await writeState(root, bases, settled(state))

  // Pushed in batches bounded by bytes and files. Each acknowledged batch moves its bases, written down with the
  // next batch's pending hashes (one write, before that batch goes), or by the caller after the last one.
  const context: PushContext = {root, client, bases, state, mode, now, result, pushBase, unwritten: false, seq: mode === 'revision' ? status.seq : undefined}
  try {
    for await (const batch of pushBatches(root, pushes, deletes)) {
      const stale = await pushBatch(context, batch.files, batch.deletes)
      if (stale) return {kind: 'stale', state: settled(state), stale}
    }
  } catch (error) {
    // Reading the next batch failed, or sending it: what the server acknowledged before is recorded all the same.
    if (context.unwritten) await writeState(root, bases, settled(state))
    throw error
  }
  return {kind: 'done', state: settled(state), changed: true, backupsSeen: backupsSeen.length > 0, scan: scanAfterRound(scanned, state, result, plan), seq: context.seq}
}

/**
 * The stat cache a round that acted leaves, so that the next sync can take the quick check: the scan's entries,
 * each file the round wrote (pulled, merged) with its new base's hash and no stat — the next scan hashes it again,
 * since a stat taken now could pair an edit made meanwhile with our hash — and each file it deleted gone. Clean
 * (every file its base, see CleanMark) only when the round left nothing aside and every file it acted on has its
 * base's hash: a file read again for its push after an edit since the scan fails that. The plan gave every other
 * file an action unless it was its base already.
 */
function scanAfterRound(scanned: Scanned, state: SyncState, result: SyncResult, plan: Plan): {scanned: Scanned; clean: boolean} {
  const {local} = scanned
  for (const path of [...result.pulled, ...result.merged, ...result.deleted]) {
    const base = state.files[path]
    if (base === undefined) local.delete(path)
    else local.set(path, {hash: base.hash, size: UNSTATTED, mtimeMs: UNSTATTED})
  }
  const leftAside = result.conflicts.length + result.backups.length + result.invalid.length + result.refused.length + scanned.backups.length + Object.keys(pendingOf(state)).length
  return {scanned: {...scanned, unchanged: false}, clean: leftAside === 0 && plan.actions.every(({path}) => local.get(path)?.hash === state.files[path]?.hash)}
}

interface PushContext {
  root: string
  client: MemoryClient
  bases: BaseStore
  state: SyncState
  mode: SyncMode
  now: () => Date
  result: SyncResult
  /** The base revision of each deletion. */
  pushBase: Record<string, number | null>
  /** A batch was acknowledged since the state was last written (the next write records it). */
  unwritten: boolean
  /**
   * The server's change sequence up to which this sync has seen every change: the status's, moved past each push
   * the server answered with the next number (so nobody else wrote in between); undefined once someone did.
   */
  seq: number | undefined
}

/**
 * One push request; the stale paths when the server refused it with 409. A server with a smaller body limit than
 * ours answers 413: the batch is then sent in halves, down to one file, which the server's message names.
 */
async function pushBatch(context: PushContext, batch: Array<{item: PushItem; text: string}>, deletes: string[]): Promise<string[] | undefined> {
  const {root, client, bases, state, mode, now, result} = context
  // A server without revisions answers no 409: a write that reached it since this push was decided is found by looking
  // again right before sending, and merged by the next round instead of overwritten.
  if (mode === 'timestamp' && batch.length > 0) {
    const moved = await movedOnServer(client, batch)
    if (moved.length > 0) return moved
  }
  const files = Object.fromEntries(batch.map(({item, text}) => [item.path, text]))
  const base: Record<string, number | null> = {}
  for (const {item} of batch) base[item.path] = item.baseRev ?? null
  for (const path of deletes) base[path] = context.pushBase[path] ?? null
  // Durably note what we are about to push: if the answer never arrives, the next sync recognises
  // the server's copy as our own write instead of merging against it (and conflicting with ourselves).
  // The same write records the batch acknowledged before this one.
  if (batch.length > 0) {
    const pending = {...pendingOf(state)}
    for (const {item, text} of batch) {
      const hash = hashText(text)
      const earlier = pending[item.path] ?? []
      if (!earlier.includes(hash)) pending[item.path] = [...earlier, hash].slice(-MAX_PENDING_PER_PATH)
    }
    state.pending = pending
  }
  if (batch.length > 0 || context.unwritten) {
    await writeState(root, bases, settled(state))
    context.unwritten = false
  }
  let answer
  try {
    const merged = batch.filter(({item}) => item.merged).map(({item}) => item.path)
    const pushed = await sentFirst((sent) => client.push(files, mode === 'revision' ? base : undefined, deletes, merged, sent))
    // While the server commits: the base copies' database, where the acknowledged texts go, is opened meanwhile.
    if (batch.length > 0) bases.openEarly()
    answer = await pushed.answer
  } catch (error) {
    if (error instanceof StalePushError) return error.stale
    if (error instanceof JarvisError && error.data.status === 413 && batch.length > 1) {
      const half = Math.ceil(batch.length / 2)
      debug('push of %d files refused as too large: sending halves', batch.length)
      return (await pushBatch(context, batch.slice(0, half), [])) ?? (await pushBatch(context, batch.slice(half), deletes))
    }
    throw error
  }
  // Bases move only now that the server acknowledged.
  const acknowledged = answer.files ?? {}
  const own = mode === 'timestamp' ? await timesOfOwnWrites(client, batch, acknowledged) : undefined
  for (const {item, text} of batch) {
    if (own?.overwritten.includes(item.path)) continue
    const ack = acknowledged[item.path]
    const updatedAt = ack?.updatedAt ?? own?.times.get(item.path)
    recordBase(bases, state, item.path, text, {rev: ack?.rev, hash: ack?.hash, updatedAt}, now)
    if (!item.merged) result.pushed.push(item.path)
  }
  // Our server numbers its commits, one per push that changed anything; a seed-style server says nothing.
  const seq = 'seq' in answer ? answer.seq : undefined
  context.seq = context.seq !== undefined && (seq === context.seq || seq === context.seq + 1) ? seq : undefined
  for (const path of deletes) {
    delete state.files[path]
    await bases.remove(path)
    result.deleted.push(path)
  }
  // Written before the next batch goes, or by the caller. A sync killed in between finds the server's copies equal
  // to its files and records them without sending them again (or, edited since, pending: its own write).
  context.unwritten = true
  return own?.overwritten.length ? own.overwritten : undefined
}

/** Timestamp mode: the paths of `batch` whose `updatedAt` on the server is no longer the one their push was decided against. */
async function movedOnServer(client: MemoryClient, batch: Array<{item: PushItem}>): Promise<string[]> {
  const {files} = await client.status()
  const moved = batch.filter(({item}) => !sameInstant(files[item.path]?.updatedAt ?? null, item.seenAt)).map(({item}) => item.path)
  if (moved.length > 0) debug('written on the server since this sync looked: %o', moved)
  return moved
}

/**
 * Timestamp mode: the server's time of each write of `batch`, the base's `updatedAt`, which the next status is
 * compared with. A push answer that does not give it (the protocol names none for a server without revisions:
 * `{success: true}`, `{}`, no body) is completed by a pull, whose answer gives each file's text and time together:
 * a later status could give the time of another client's write made meanwhile, and the two trees would then
 * each believe themselves in step. A file that holds another text by then was written over since this push: it is
 * `overwritten`, its base does not move, and the next round merges it.
 */
async function timesOfOwnWrites(client: MemoryClient, batch: Array<{item: PushItem; text: string}>, acknowledged: Record<string, {updatedAt?: string}>): Promise<{times: Map<string, string>; overwritten: string[]}> {
  const times = new Map<string, string>()
  const overwritten: string[] = []
  const unknown = batch.filter(({item}) => acknowledged[item.path]?.updatedAt === undefined)
  if (unknown.length === 0) return {times, overwritten}
  const {files} = await client.pull(unknown.map(({item}) => item.path))
  for (const {item, text} of unknown) {
    const file = files[item.path]
    if (file !== undefined && holdsText(file, text)) times.set(item.path, file.updatedAt)
    else overwritten.push(item.path)
  }
  if (overwritten.length > 0) debug('written over on the server right after this push: %o', overwritten)
  return {times, overwritten}
}

/** The pulled file holds `text`: the same string, or for a `.json` file sent as a JSON value, the same value. */
function holdsText(file: PullResponse['files'][string], text: string): boolean {
  if (typeof file.content === 'string') return file.content === text
  try {
    return isDeepStrictEqual(file.content, JSON.parse(text))
  } catch {
    return false
  }
}

interface RemoteText {
  content: string
  entry: RemoteEntry
}

/** A request whose answer is awaited later: a failure meanwhile is not an unhandled rejection (it is thrown at the await). */
function prefetch<T>(answer: Promise<T>): Promise<T> {
  answer.catch(() => {})
  return answer
}

/**
 * A request to be answered while this process works: returns once it is on the wire (or has failed), with its answer
 * to await later. Work that holds the thread (a scan, opening a database) would otherwise hold the request back too:
 * a request waits for its connection's turn of the event loop before it is written.
 */
async function sentFirst<T>(ask: (sent: () => void) => Promise<T>): Promise<{answer: Promise<T>}> {
  let sent!: () => void
  const onTheWire = new Promise<void>((resolve) => (sent = resolve))
  const answer = prefetch(ask(sent))
  await Promise.race([onTheWire, answer.then(noop, noop)])
  return {answer}
}

const noop = () => {}

/** As many files as the last answer's sizes suggest fit in PULL_BATCH_BYTES: fewer after large files, at most twice as many after small ones. */
function nextPullBatchFiles(asked: number, answer: Map<string, RemoteText>): number {
  let bytes = 0
  for (const {content} of answer.values()) bytes += content.length
  const fit = bytes === 0 ? PULL_BATCH_FILES : Math.floor((asked * PULL_BATCH_BYTES) / bytes)
  return Math.max(1, Math.min(PULL_BATCH_FILES, asked * 2, fit))
}

/** The server's texts of `paths` (one request); a path it no longer has is left out. */
async function pullTexts(client: MemoryClient, paths: string[], onSent?: () => void): Promise<Map<string, RemoteText>> {
  const texts = new Map<string, RemoteText>()
  if (paths.length === 0) return texts
  const {files} = await client.pull(paths, onSent)
  for (const path of paths) {
    const file = files[path]
    if (!file || file.deleted) continue
    const content = pulledText(file)
    texts.set(path, {content, entry: {rev: file.rev, hash: file.hash ?? hashText(content), updatedAt: file.updatedAt}})
  }
  return texts
}

interface PushItem {
  path: string
  text: string | undefined
  baseRev: number | null | undefined
  merged: boolean
  /** The server's `updatedAt` of the version this push was decided against (null: it had none), for timestamp mode. */
  seenAt: string | null
}

/**
 * Consecutive batches of at most {@link PUSH_BATCH_FILES} files and {@link PUSH_BATCH_BYTES} bytes of JSON, each
 * text read only when its batch is being filled (a file alone may exceed the bytes: the server then names it);
 * the deletions go with the last batch.
 */
async function* pushBatches(root: string, items: PushItem[], deletes: string[]): AsyncGenerator<{files: Array<{item: PushItem; text: string}>; deletes: string[]}> {
  let batch: Array<{item: PushItem; text: string}> = []
  let bytes = 0
  for (const item of items) {
    const text = item.text ?? (await readMemoryFile(root, item.path))
    if (text === null) continue
    const size = jsonStringBytes(text) + item.path.length + 8
    if (batch.length > 0 && (batch.length >= PUSH_BATCH_FILES || bytes + size > PUSH_BATCH_BYTES)) {
      yield {files: batch, deletes: []}
      batch = []
      bytes = 0
    }
    batch.push({item, text})
    bytes += size
  }
  if (batch.length > 0 || deletes.length > 0) yield {files: batch, deletes}
}

/**
 * The bytes of `text` as a JSON string, counted without making it (a copy per file was most of a large push's
 * garbage): its UTF-8 bytes and the quotes, plus one for each character JSON escapes with a backslash and five for
 * one it writes as `\\u00XX`; a lone surrogate, three bytes in UTF-8, is six as `\\uDXXX`.
 */
export function jsonStringBytes(text: string): number {
  let extra = 2
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x22 || code === 0x5c || code === 0x0a || code === 0x0d || code === 0x09 || code === 0x08 || code === 0x0c) extra += 1
    else if (code < 0x20) extra += 5
    else if (code >= 0xd800 && code <= 0xdfff) {
      const next = text.charCodeAt(i + 1)
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++
      else extra += 3
    }
  }
  return Buffer.byteLength(text) + extra
}

function remoteEntries(status: StatusResponse): Record<string, RemoteEntry> {
  const entries: Record<string, RemoteEntry> = {}
  for (const [path, file] of Object.entries(status.files)) entries[path] = {updatedAt: file.updatedAt, hash: file.hash, rev: file.rev, deleted: file.deleted}
  return entries
}

/** Unacknowledged pushes kept per path; a path pushed this often without an answer has bigger problems. */
const MAX_PENDING_PER_PATH = 16

function pendingOf(state: SyncState): Record<string, string[]> {
  return (state.pending as Record<string, string[]> | undefined) ?? {}
}

/** A copy of the state's `pending`, each path's hashes as a list (an older jarvis kept one hash). */
function pendingFrom(state: SyncState): Record<string, string[]> | undefined {
  const stored = state.pending as Record<string, unknown> | null | undefined
  if (stored == null) return undefined
  return Object.fromEntries(Object.entries(stored).map(([path, hashes]) => [path, (Array.isArray(hashes) ? hashes : [hashes]).filter((hash): hash is string => typeof hash === 'string')]))
}

/** The state as written: no empty `pending`. */
function settled(state: SyncState): SyncState {
  if (state.pending != null && Object.keys(pendingOf(state)).length === 0) state.pending = undefined
  return state
}

/** The sync state, after the base copies it names (file, then base, then state). */
async function writeState(root: string, bases: BaseStore, state: SyncState): Promise<void> {
  bases.flush()
  await writeSyncState(root, state)
}

/** Kept by `bases` until the next writeState. */
function recordBase(bases: BaseStore, state: SyncState, path: string, text: string, remote: RemoteEntry, now: () => Date): void {
  bases.put(path, text)
  // Deleted in place (the round owns its copy of the map): copying it per file made a large push quadratic.
  if (state.pending != null) delete pendingOf(state)[path]
  const entry: SyncState['files'][string] = {hash: hashText(text), syncedAt: now().toISOString()}
  if (remote.rev !== undefined) entry.rev = remote.rev
  if (remote.updatedAt !== undefined) entry.updatedAt = remote.updatedAt
  state.files[path] = entry
}

/** The base copy, trusted only when it still matches the hash the sync state recorded for it. */
async function verifiedBase(bases: BaseStore, state: SyncState, path: string): Promise<string | null> {
  const recorded = state.files[path]
  if (!recorded) return null
  const text = await bases.get(path)
  if (text === null || hashText(text) !== recorded.hash) {
    debug('base of %s missing or torn: merging two-way', path)
    return null
  }
  return text
}

/** The user may edit while we sync: never overwrite a file that changed since we hashed it. */
async function unchangedSinceScan(root: string, path: string, scannedHash: string | undefined): Promise<boolean> {
  const text = await readMemoryFile(root, path)
  const current = text === null ? undefined : hashText(text)
  if (current === scannedHash) return true
  debug('%s changed during the sync: left for the next one', path)
  return false
}

function stillAbsent(root: string, path: string): boolean {
  if (memoryFileAbsent(root, path)) return true
  debug('%s appeared during the sync: left for the next one', path)
  return false
}

function sameDirs(cache: DirCache, scan: Map<string, DirStat>): boolean {
  if (Object.keys(cache).length !== scan.size) return false
  for (const [path, entry] of scan) {
    const cached = cache[path]
    if (!cached || cached.mtimeMs !== entry.mtimeMs || cached.checkedAtMs !== entry.checkedAtMs) return false
  }
  return true
}

function serverIdOf(status: StatusResponse): string | undefined {
  return typeof status.serverId === 'string' ? status.serverId : undefined
}

function forgetRevisions(state: SyncState): SyncState {
  const files: SyncState['files'] = {}
  for (const [path, entry] of Object.entries(state.files)) files[path] = {hash: entry.hash, syncedAt: entry.syncedAt}
  return {...state, files, seq: undefined}
}

function invalidFilesError(result: SyncResult): BadInputError {
  const lines = result.invalid.flatMap((file) => file.problems.map((problem) => `.memory/${file.path}: ${problem}`))
  return new BadInputError(`left as they are and not synced until fixed:\n${lines.join('\n')}`, {invalid: result.invalid, result})
}

export type {Plan}
