/**
 * The rules of a memory commit (types.ts MemoryStorage.commit), as one pure function every backend applies inside
 * its own transaction: given the rows the commit touches as they are now, which paths are stale, and otherwise what
 * to write. SQLite and PostgreSQL differ only in how they read those rows and store the result.
 */
import {hashText} from '../../store/hash.js'
import type {BaseRev, CommitRequest, CommitResult, FileMeta} from './types.js'

/** Whether `base` is the revision the client must have seen for `current`. */
export function baseMatches(base: BaseRev, current: {rev: number; deleted: boolean} | undefined): boolean {
  const believesAbsent = base === null || base === 0
  if (current === undefined) return believesAbsent
  if (current.deleted) return believesAbsent || base === current.rev
  return base === current.rev
}

/** A row to store: content and hash are null for a tombstone. */
export interface FileWrite {
  path: string
  content: string | null
  hash: string | null
  rev: number
  deleted: boolean
}

export type CommitPlan = {ok: false; stale: string[]} | {ok: true; result: CommitResult; rows: FileWrite[]}

/**
 * What a commit does, given the current metadata of the paths it names (absent: never seen) and the seq before it.
 * `result.seq` is already the new seq when anything changes; `rows` are the rows to upsert with it.
 */
export function planCommit(request: CommitRequest, current: ReadonlyMap<string, FileMeta>, seqBefore: number, author: string, now: string): CommitPlan {
  const view = (path: string) => {
    const meta = current.get(path)
    return meta === undefined ? undefined : {rev: meta.rev, deleted: meta.deleted}
  }
  const isLiveWith = (path: string, hash: string) => {
    const meta = current.get(path)
    return meta !== undefined && !meta.deleted && meta.hash === hash
  }
  const hashes = new Map<string, string>()
  const stale: string[] = []
  for (const [path, content] of request.writes) {
    const hash = hashText(content)
    hashes.set(path, hash)
    if (!isLiveWith(path, hash) && request.base.has(path) && !baseMatches(request.base.get(path) ?? null, view(path))) stale.push(path)
  }
  for (const path of request.deletes) {
    const live = current.get(path)?.deleted === false
    if (live && request.base.has(path) && !baseMatches(request.base.get(path) ?? null, view(path))) stale.push(path)
  }
  if (stale.length > 0) return {ok: false, stale: [...new Set(stale)].sort()}

  const result: CommitResult = {ok: true, seq: seqBefore, duplicate: false, written: [], deleted: [], unchanged: [], unknown: []}
  const rows: FileWrite[] = []
  const seq = seqBefore + 1
  for (const [path, content] of request.writes) {
    const hash = hashes.get(path) as string
    const meta = current.get(path)
    if (meta !== undefined && isLiveWith(path, hash)) {
      result.unchanged.push(meta)
      continue
    }
    const rev = (meta?.rev ?? 0) + 1
    rows.push({path, content, hash, rev, deleted: false})
    result.written.push({path, rev, hash, updatedAt: now, author, seq, deleted: false})
  }
  for (const path of request.deletes) {
    const meta = current.get(path)
    if (meta === undefined) {
      result.unknown.push(path)
      continue
    }
    if (meta.deleted) {
      result.unchanged.push(meta)
      continue
    }
    const rev = meta.rev + 1
    rows.push({path, content: null, hash: null, rev, deleted: true})
    result.deleted.push({path, rev, hash: null, updatedAt: now, author, seq, deleted: true})
  }
  if (rows.length > 0) result.seq = seq
  return {ok: true, result, rows}
}
