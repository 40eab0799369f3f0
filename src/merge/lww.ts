import {canonicalJson, isPlainObject, jsonEqual} from './canonical.js'
import type {MergeResult, Side} from './types.js'

// An ISO date-time without an offset is *local* time for Date.parse; two machines in different
// time zones would then order the same stamps differently. Read it as UTC instead.
const NO_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/

/** Milliseconds since the epoch, or -Infinity for anything unparsable (so it loses to any real time). */
export function stampValue(stamp: unknown): number {
  if (typeof stamp !== 'string') return Number.NEGATIVE_INFINITY
  const ms = Date.parse(NO_OFFSET.test(stamp) ? `${stamp}Z` : stamp)
  return Number.isNaN(ms) ? Number.NEGATIVE_INFINITY : ms
}

export function compareStamps(a: unknown, b: unknown): number {
  const x = stampValue(a)
  const y = stampValue(b)
  return x === y ? 0 : x > y ? 1 : -1
}

/**
 * Newer stamp wins; on a tie the larger canonical JSON wins. The tie-break is arbitrary but
 * symmetric, so both sides of a sync pick the same winner without talking to each other.
 */
export function lwwWinner(local: unknown, remote: unknown, localStamp: unknown, remoteStamp: unknown): Side {
  const byTime = compareStamps(localStamp, remoteStamp)
  if (byTime !== 0) return byTime > 0 ? 'local' : 'remote'
  return canonicalJson(local) > canonicalJson(remote) ? 'local' : 'remote'
}

function stampOf(doc: unknown, stampKey: string): unknown {
  return isPlainObject(doc) ? doc[stampKey] : undefined
}

/**
 * A whole-document last-writer-wins merge (`active_project.json` on `switchedAt`,
 * `context_map.json` on `timestamp`). These documents are replaced wholesale by design: the
 * loser is recorded in an `lww` conflict entry, values included, but no `.local.bak` is written,
 * because a stale active project or context map is not work the user could lose.
 */
export function mergeLwwDocument<T>(base: T | null, local: T, remote: T, stampKey: string): MergeResult<T> {
  if (jsonEqual(local, remote)) return {merged: remote, conflicts: [], backup: null}
  if (base !== null && jsonEqual(base, local)) return {merged: remote, conflicts: [], backup: null}
  if (base !== null && jsonEqual(base, remote)) return {merged: local, conflicts: [], backup: null}
  const winner = lwwWinner(local, remote, stampOf(local, stampKey), stampOf(remote, stampKey))
  return {
    merged: winner === 'local' ? local : remote,
    conflicts: [{kind: 'lww', at: '(document)', winner, local, remote}],
    backup: null,
  }
}
