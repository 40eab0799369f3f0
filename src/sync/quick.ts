/**
 * The quick check: a sync after one that left every file equal to its base (the stat cache's clean mark) asks the
 * server what changed since and scans the tree against the stat cache; when neither found anything it is done,
 * without reading the sync state. The scan it made (or the round's own) is a `Scanned`.
 */
import type {MemoryClient, StatusResponse} from '../protocol/client.js'
import {
  cachedHash,
  cachedRevsInOrder,
  changedSinceCache,
  type DirCache,
  type DirStat,
  type MemoryFileStat,
  readScanHead,
  readScanHints,
  sameStateStamp,
  writeScanHead,
  type ScanHints,
  scanMemory,
  scanWatched,
  syncStateStamp,
  type TreeWatch,
  type UnreadableEntry,
  type WatchAnswer,
  type WatchMark,
  watchMarkFresh,
  writeStatCache,
} from '../store/index.js'
import type {LocalHashes} from './plan.js'
import {serverIdOf} from './record.js'
import {sentFirst} from './requests.js'

/** Texts of changed files kept from the scan for the push; larger ones are read again when their batch goes. */
export const KEEP_TEXT_BYTES = 64 * 1024

/** What a scan of `.memory/` found, with the hints it started from. */
export interface Scanned {
  hints: ScanHints
  local: Map<string, MemoryFileStat>
  dirs: Map<string, DirStat>
  backups: string[]
  /** What this user may not read (see scanMemory's `unreadable`): left out of `local`. */
  unreadable: UnreadableEntry[]
  /** The texts of the files `wanted` asked for (see scanMemory's `texts`). */
  texts: Map<string, string>
  /** The paths where the scan differs from the stat cache (see changedSinceCache). */
  changed: string[]
  /** Nothing in it differs from the hints: the stat cache need not be written. */
  unchanged: boolean
  /**
   * The watch's clock to write with the stat cache (ScanHints' `watch`): the one it answered right before this scan,
   * or the cache's own when no watch answered (a clock older than the scan only makes the next answer longer); with
   * when every file was last looked at.
   */
  clock?: WatchMark
}

/**
 * The stat cache only saves hashing; a file whose size or mtime moved is always hashed again. Its folders save
 * listing the ones whose entries did not change (each file is still stat-ed: an edit in place changes only it).
 * A watch of the tree that answers with the paths changed since the cache's clock spares the rest: only those are
 * looked at (scanWatched).
 */
export async function scanTree(root: string, hints: ScanHints, wanted: (path: string, hash: string) => boolean, watch?: TreeWatch): Promise<Scanned> {
  const backups: string[] = []
  const texts = new Map<string, string>()
  const dirs = new Map<string, DirStat>()
  const counts = {unchanged: 0, hashed: [] as string[]}
  const unreadable: UnreadableEntry[] = []
  const options = {backups, dirCache: hints.dirs, dirs, backupCache: hints.backups, counts, texts: {into: texts, maxBytes: KEEP_TEXT_BYTES, wanted}, unreadable}
  // Asked before the scan: whatever changes after its answer is in the next one.
  const answer = watch === undefined ? undefined : await watch.changes(hints.watch?.clock).catch(() => undefined)
  // Its word stands for the cache's clock only while every file was looked at recently (WATCH_FULL_SCAN_MS).
  const watched = answer !== undefined && 'paths' in answer && watchMarkFresh(hints.watch)
  const startedAt = Date.now()
  const local = watched ? await scanWatched(root, hints.known, answer.paths, options) : await scanMemory(root, hints.known, options)
  if (answer === undefined) await watch?.unwatched?.(local.size)
  const sameBackups = backups.length === hints.backups.length && backups.every((path, i) => path === hints.backups[i])
  // Every entry given back as the cache held it, and as many as it held: the same files, nothing to compare.
  const sameEntries = counts.unchanged === local.size && local.size === hints.count
  // A new clock is written even when nothing else moved: after a full scan the cache's own is no longer answered, and
  // after paths were named (a file touched, a folder's attributes) the next sync need not look at them again.
  const sameClock = answer === undefined || (watched && answer.paths.length === 0)
  // A scan that could not read everything leaves no clock: what it could not read is not in the stat cache, and a
  // watch would not name it again (it would look deleted), so the next scan looks at every file.
  const clock = unreadable.length > 0 ? undefined : markAfter(hints.watch, answer, watched, startedAt)
  return {hints, local, dirs, backups, unreadable, texts, changed: changedSinceCache(hints, local, counts.hashed), unchanged: sameEntries && sameDirs(hints.dirs, dirs) && sameBackups && sameClock && unreadable.length === 0, clock}
}

/** The watch mark a scan leaves (see Scanned's `clock`): a full look, made after `clock` was given, started at `startedAt`. */
function markAfter(mark: WatchMark | undefined, answer: WatchAnswer | undefined, watched: boolean, startedAt: number): WatchMark | undefined {
  if (answer === undefined) return mark === undefined ? undefined : {clock: mark.clock, fullAt: startedAt}
  return {clock: answer.clock, fullAt: watched && mark !== undefined ? mark.fullAt : startedAt}
}

/** `sync`: there is work, or it could not tell; the stat cache it read, and the server's answer when it asked. */
export type QuickCheck = {kind: 'nothing'} | {kind: 'sync'; hints: ScanHints; answer?: {seq: number; status: StatusResponse; scanned?: Scanned}}

/**
 * A sync after one that left every file equal to its base (the stat cache's clean mark, for the sync state as it
 * is now) asks the server what changed since then and scans the tree against the stat cache: neither found
 * anything, there is nothing to do, and the sync state (as large as the tree) is not read. Else the stat cache, the
 * answer and the scan serve the round (read once: the stat cache is as large as the tree too).
 */
export async function quickCheck(root: string, client: MemoryClient, watch?: TreeWatch): Promise<QuickCheck> {
  // In a watched tree the stat cache itself (as large as the tree) is not even read when nothing changed.
  const watched = watch === undefined ? undefined : await watchedNoOp(root, client, watch)
  if (watched?.nothing) return {kind: 'nothing'}
  const hints = await readScanHints(root)
  const clean = hints.clean
  if (clean === undefined || clean.server !== client.server || !sameStateStamp(await syncStateStamp(root), clean.state)) return {kind: 'sync', hints}
  // Asked before the scan and awaited after it: the server answers while the tree is walked (either is needed). The
  // scan holds the thread, so the question must be on the wire before it starts.
  const {answer: asking} = watched?.asked?.seq === clean.seq ? {answer: watched.asked.status} : await sentFirst((sent) => client.status(clean.seq, sent))
  // Under the mark the cache's hashes are the bases': the texts wanted are those of files whose hash moved.
  const scanned = await scanTree(root, hints, (path, hash) => cachedHash(hints, path) !== hash, watch)
  const status = await asking
  if (serverIdOf(status) !== clean.serverId || status.seq !== clean.seq || Object.keys(status.files).length > 0) return {kind: 'sync', hints, answer: {seq: clean.seq, status, scanned}}
  // A file hashed again (its cached entry was too recent to trust) that still has its hash changed nothing.
  if (scanned.backups.length > 0 || scanned.changed.length > 0 || scanned.unreadable.length > 0) return {kind: 'sync', hints, answer: {seq: clean.seq, status, scanned}}
  if (!scanned.unchanged) await writeStatCache(root, scanned.local, {dirs: scanned.dirs, backups: scanned.backups, clean, revOf: cachedRevsInOrder(hints), watch: scanned.clock})
  // A watched tree whose cache has no head yet (written by an earlier jarvis): the next no-op reads the head only.
  else if (watch !== undefined && watched?.head === false && hints.watch !== undefined) await writeScanHead(root, hints)
  return {kind: 'nothing'}
}


/**
 * The no-op of a watched tree: the stat cache's head (its clean mark and watch clock, ScanHead) instead of the stat
 * cache, the watch asked which files changed since that clock while the server is asked what changed since the
 * mark. Nothing on either side: nothing to do, and nothing read but a few hundred bytes. Else the status request
 * already sent, for the quick check to await.
 */
async function watchedNoOp(root: string, client: MemoryClient, watch: TreeWatch): Promise<{nothing?: true; head?: false; asked?: {seq: number; status: Promise<StatusResponse>}}> {
  const head = await readScanHead(root)
  if (head === undefined) return {head: false}
  const clean = head.clean
  if (clean === undefined || !watchMarkFresh(head.watch) || head.backups > 0 || clean.server !== client.server) return {}
  if (!sameStateStamp(await syncStateStamp(root), clean.state)) return {}
  const {answer: status} = await sentFirst((sent) => client.status(clean.seq, sent))
  const asked = {seq: clean.seq, status}
  const changes = await watch.changes(head.watch.clock).catch(() => undefined)
  if (changes === undefined || !('paths' in changes) || changes.paths.length > 0) return {asked}
  const answer = await status
  if (serverIdOf(answer) !== clean.serverId || answer.seq !== clean.seq || Object.keys(answer.files).length > 0) return {asked}
  return {nothing: true}
}

/** pathsToPlan after an incremental listing, when the files changed here are known: those and the server's news, sorted. */
export function changedOnEitherSide(changedHere: readonly string[], remote: Readonly<Record<string, unknown>>): string[] {
  return [...new Set([...changedHere, ...Object.keys(remote)])].sort()
}


/** The scan's hashes by path, read through its entries: no second map of every file. */
export function hashesOf(local: ReadonlyMap<string, MemoryFileStat>): LocalHashes {
  return {
    get: (path) => local.get(path)?.hash,
    has: (path) => local.has(path),
    *[Symbol.iterator]() {
      for (const [path, {hash}] of local) yield [path, hash]
    },
    keys: () => local.keys(),
  }
}


function sameDirs(cache: DirCache, scan: Map<string, DirStat>): boolean {
  if (Object.keys(cache).length !== scan.size) return false
  for (const [path, entry] of scan) {
    const cached = cache[path]
    if (!cached || cached.mtimeMs !== entry.mtimeMs || cached.checkedAtMs !== entry.checkedAtMs) return false
  }
  return true
}

