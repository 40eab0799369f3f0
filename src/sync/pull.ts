/**
 * A round's pulls: asked for in batches, the next while this one is written, so the server's work and ours overlap
 * (two batches held at most). Small first: an answer of large files stays bounded before any size is known. Each
 * file goes to a temp file as its answer comes; up to PULL_DURABLE_FILES of them are then made durable together (one
 * syncfs, not an fsync each), renamed (each target looked at right before), and each folder fsynced once. Their bases
 * are recorded as they are renamed; the sync state that names them is written by the caller.
 */
import {type MemoryClient, pulledText, type StatusResponse} from '../protocol/client.js'
import type {SyncState} from '../schemas/index.js'
import {AtomicBatch, type BaseStore, forEachConcurrently, hashText, memoryFileReadable, stageMemoryFile, type StagedFile} from '../store/index.js'
import type {LocalHashes, RemoteEntry} from './plan.js'
import {recordBase, stillAbsent, unchangedSinceScan} from './record.js'
import {prefetch, sentFirst} from './requests.js'
import type {SetAside} from './set-aside.js'
import type {SyncResult} from './types.js'

/** Enough to keep the disk and libuv's thread pool busy, few enough to stay far from file-handle limits. */
const PULL_CONCURRENCY = 16
/**
 * Requests stay bounded whatever the tree's size (a push's bounds are in push.ts): a pull asks for at most this many
 * files, fewer after an answer of more than PULL_BATCH_BYTES (the status says nothing of sizes), so the client
 * holds one bounded batch at a time.
 */
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

export interface RemoteText {
  content: string
  entry: RemoteEntry
}

/** As many files as the last answer's sizes suggest fit in PULL_BATCH_BYTES: fewer after large files, at most twice as many after small ones. */
function nextPullBatchFiles(asked: number, answer: Map<string, RemoteText>): number {
  let bytes = 0
  for (const {content} of answer.values()) bytes += content.length
  const fit = bytes === 0 ? PULL_BATCH_FILES : Math.floor((asked * PULL_BATCH_BYTES) / bytes)
  return Math.max(1, Math.min(PULL_BATCH_FILES, asked * 2, fit))
}

/** The server's texts of `paths` (one request); a path it no longer has is left out. */
export async function pullTexts(client: MemoryClient, paths: string[], onSent?: () => void): Promise<Map<string, RemoteText>> {
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

/**
 * The texts a status answer carried (`jarvis serve`, asked with `since`: the few files it lists, MemoryClient.status),
 * each only when it is the version its entry names (its hash): those need no pull request.
 */
export function statusTexts(status: StatusResponse): Map<string, RemoteText> {
  const texts = new Map<string, RemoteText>()
  for (const path in status.files) {
    const file = status.files[path]
    const content = (file as {content?: unknown}).content
    if (typeof content !== 'string' || file.deleted || file.hash === undefined || hashText(content) !== file.hash) continue
    texts.set(path, {content, entry: {rev: file.rev, hash: file.hash, updatedAt: file.updatedAt}})
  }
  return texts
}

/** What a round's pulls need: where to write, what the scan saw there, and where the bases and the report go. */
export interface PullContext {
  root: string
  client: MemoryClient
  bases: BaseStore
  state: SyncState
  localHashes: LocalHashes
  result: SyncResult
  now: () => Date
  /** Called once per pulled path, as its answer is handled. */
  onEach?: () => void
  /** Texts the server gave already (statusTexts): not asked for again. */
  given?: ReadonlyMap<string, RemoteText>
  /** Where a file not written here is named, and a pull not made is held back. */
  aside: SetAside
}

/** Pulls `pulls` (see above); each file written is in `result.pulled`, sorted, its base recorded in `state`. */
export async function pullFiles(context: PullContext, pulls: string[]): Promise<void> {
  const {root, client, bases, state, localHashes, result, now, aside} = context
  const writes = new AtomicBatch()
  const staged: Array<{path: string; remote: RemoteText; file: StagedFile}> = []
  let stagedChars = 0
  const renameStaged = async () => {
    await writes.makeDurable()
    await forEachConcurrently(staged, PULL_CONCURRENCY, async ({path, remote, file}) => {
      const scanned = localHashes.get(path)
      // The user may have written the file while its temp was: then it is left for the next sync. A folder in its
      // place (the server's file was a folder here) is named.
      if (!(scanned === undefined ? stillAbsent(root, path) : await unchangedSinceScan(root, path, scanned, aside))) {
        if (scanned !== undefined || !aside.notWritten(path)) aside.holdBack(path, 'written here during the sync')
        return writes.discard(file)
      }
      if (!writes.commit(file)) return aside.holdBack(path, 'its folder was removed during the sync')
      recordBase(bases, state, path, remote.content, remote.entry, now)
      result.pulled.push(path)
    })
    // The sync state that records these pulls is written later.
    await writes.syncFolders()
    bases.flush()
    staged.length = 0
    stagedChars = 0
  }
  const stage = (paths: string[], remoteText: ReadonlyMap<string, RemoteText>) =>
    forEachConcurrently(paths, PULL_CONCURRENCY, async (path) => {
      context.onEach?.()
      const remote = remoteText.get(path)
      if (!remote) return // vanished between status and pull: the next sync sees it
      // The server's version is the file here already (a base without the server's time, in timestamp mode):
      // only the base is recorded, the file is not written again.
      if (remote.entry.hash === localHashes.get(path)) return recordBase(bases, state, path, remote.content, remote.entry, now)
      // A file this user may not read is not written over: it could not be checked right before (see renameStaged).
      if (localHashes.has(path) && !(await memoryFileReadable(root, path))) return aside.unreadable({path, folder: false})
      let file
      try {
        file = await stageMemoryFile(root, path, remote.content, writes, {absent: !localHashes.has(path)})
      } catch (error) {
        // A file where the server has a folder (or the other way), a folder this user may not write in: named, the rest pulled.
        if (aside.notWritten(path, error)) return
        throw error
      }
      staged.push({path, remote, file})
      stagedChars += remote.content.length
    })
  const given = context.given ?? new Map<string, RemoteText>()
  const inGiven = pulls.filter((path) => given.has(path))
  const toAsk = inGiven.length === 0 ? pulls : pulls.filter((path) => !given.has(path))
  let batch = toAsk.slice(0, PULL_FIRST_BATCH_FILES)
  let asked = batch.length > 0 ? (await sentFirst((sent) => pullTexts(client, batch, sent))).answer : undefined
  // While the server answers: the base copies' database, where the pulled texts go, is opened meanwhile (not when they
  // may all go to its journal: a few files, of sizes not known yet).
  if (asked !== undefined) bases.openEarly({paths: pulls.length})
  try {
    if (inGiven.length > 0) {
      await stage(inGiven, given)
      if (asked === undefined) await renameStaged()
    }
    for (let start = batch.length; asked !== undefined; ) {
      const remoteText = await asked
      const current = batch
      batch = toAsk.slice(start, start + nextPullBatchFiles(current.length, remoteText))
      start += batch.length
      asked = batch.length > 0 ? prefetch(pullTexts(client, batch)) : undefined
      await stage(current, remoteText)
      if (asked === undefined || staged.length >= PULL_DURABLE_FILES || stagedChars >= PULL_DURABLE_CHARS) await renameStaged()
    }
  } finally {
    // After an error: the temp files not renamed go (the targets are as they were).
    await writes.abandon()
  }
  result.pulled.sort()
}
