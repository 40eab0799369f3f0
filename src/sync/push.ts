/**
 * A round's pushes, in batches bounded by bytes and files. Each batch's pending hashes are written down before it
 * goes (with the bases of the batch acknowledged before it); each acknowledged batch moves its bases. A server with
 * revisions refuses a stale batch (409): its paths go back to the caller, which merges them in another round.
 */
import {isDeepStrictEqual} from 'node:util'

import createDebug from 'debug'

import {JarvisError} from '../errors.js'
import {type MemoryClient, type PullResponse, StalePushError} from '../protocol/client.js'
import type {SyncState} from '../schemas/index.js'
import {type BaseStore, hashText, readMemoryFile} from '../store/index.js'
import {sameInstant, type SyncMode} from './plan.js'
import {notePending, pendingOf, recordBase, settled, writeState} from './record.js'
import {sentFirst} from './requests.js'
import type {SyncResult} from './types.js'

const debug = createDebug('jarvis:sync')

/**
 * A push carries at most this many bytes of JSON (half the server's default body limit, whose files hold at most
 * 4 MiB each) and files, whatever the tree's size.
 */
export const PUSH_BATCH_BYTES = 4 * 1024 * 1024
export const PUSH_BATCH_FILES = 2000

export interface PushItem {
  path: string
  text: string | undefined
  baseRev: number | null | undefined
  merged: boolean
  /** The server's `updatedAt` of the version this push was decided against (null: it had none), for timestamp mode. */
  seenAt: string | null
}


export interface PushContext {
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
 * Pushes `pushes` and `deletes` in batches; the stale paths when the server refused a batch (the state is then as
 * the batches before it left it, unwritten), else undefined. A failure meanwhile throws after recording what the
 * server acknowledged before it.
 */
export async function pushAll(context: PushContext, pushes: PushItem[], deletes: string[]): Promise<string[] | undefined> {
  const {root, bases, state} = context
  try {
    for await (const batch of pushBatches(root, pushes, deletes)) {
      const stale = await pushBatch(context, batch.files, batch.deletes)
      if (stale) return stale
    }
  } catch (error) {
    // Reading the next batch failed, or sending it: what the server acknowledged before is recorded all the same.
    if (context.unwritten) await writeState(root, bases, settled(state))
    throw error
  }
  return undefined
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
    for (const {item, text} of batch) notePending(bases, state, pending, item.path, text)
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
    // While the server commits: the base copies' database, where the acknowledged texts go, is opened meanwhile (not
    // for a few small texts, which go to its journal).
    if (batch.length > 0) bases.openEarly({paths: batch.length, chars: batch.reduce((sum, {text}) => sum + text.length, 0)})
    answer = await pushed.answer
  } catch (error) {
    if (error instanceof StalePushError) return error.stale
    if (error instanceof JarvisError && error.data.status === 413 && batch.length > 1) {
      const half = Math.ceil(batch.length / 2)
      debug('push of %d files refused as too large: sending halves', batch.length)
      return (await pushBatch(context, batch.slice(0, half), [])) ?? (await pushBatch(context, batch.slice(half), deletes))
    }
    // One file with the deletions, too large: the file alone, then the deletions, so that a refusal names its cause.
    if (error instanceof JarvisError && error.data.status === 413 && batch.length === 1 && deletes.length > 0 && !namesPath(error)) {
      debug('push of one file and %d deletions refused as too large: sending them apart', deletes.length)
      return (await pushBatch(context, batch, [])) ?? (await pushBatch(context, [], deletes))
    }
    const refused = batch.length === 1 ? refusalOf(error, batch[0].item.path) : undefined
    if (refused === undefined) throw error
    // The server will not take this one file (too large for it, not text it holds): it stays here as it is, named
    // with the malformed ones, and the rest of the sync goes on. It was never stored: it is no write of ours to await.
    const {path} = batch[0].item
    result.invalid.push({path, problems: [`refused by the server: ${refused}`]})
    const pending = {...pendingOf(state)}
    const hash = hashText(batch[0].text)
    pending[path] = (pending[path] ?? []).filter((sent) => sent !== hash)
    bases.forgetSent(path, [hash])
    if (pending[path].length === 0) delete pending[path]
    state.pending = pending
    context.unwritten = true
    return deletes.length > 0 ? pushBatch(context, [], deletes) : undefined
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

/**
 * The server's reason when `error` is its refusal of a push of the file at `path` alone: 413 (the file, or the
 * request, larger than it takes: the request is this file's) or 400 naming that path (content it does not hold, e.g.
 * a NUL byte). Anything else stops the sync as before.
 */
function refusalOf(error: unknown, path: string): string | undefined {
  if (!(error instanceof JarvisError) || (error.data.status !== 413 && error.data.status !== 400)) return undefined
  const answer = error.data.answer as {path?: unknown; message?: unknown} | undefined
  if (answer?.path !== path && !(error.data.status === 413 && !namesPath(error))) return undefined
  return typeof answer?.message === 'string' ? answer.message : `HTTP ${String(error.data.status)}`
}

/** The refusal names a path (one file's), not the whole request. */
function namesPath(error: JarvisError): boolean {
  return typeof (error.data.answer as {path?: unknown} | undefined)?.path === 'string'
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

