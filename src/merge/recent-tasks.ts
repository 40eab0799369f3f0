import {canonicalJson, isPlainObject} from './canonical.js'
import {stampValue} from './lww.js'
import type {MergeConflict, MergeResult, RecentTask} from './types.js'

export const RECENT_TASK_LIMIT = 50

interface Entry {
  key: string
  task: RecentTask
  time: number
  canonical: string
}

// A malformed entry without a string taskId is still kept (nothing is lost); it is identified by
// its whole content so identical copies collapse. The prefixes keep the two id spaces apart.
function entryOf(task: RecentTask): Entry {
  const canonical = canonicalJson(task)
  const id = isPlainObject(task) && typeof task.taskId === 'string' ? `s${task.taskId}` : `j${canonical}`
  return {key: id, task, time: stampValue(isPlainObject(task) ? task.timestamp : undefined), canonical}
}

/** Two versions of one task: newer timestamp, then larger canonical JSON — a total order, so the pick is a semilattice join. */
function newer(a: Entry, b: Entry): Entry {
  if (a.time !== b.time) return a.time > b.time ? a : b
  return a.canonical >= b.canonical ? a : b
}

// Newest first; equal times by id. Strictly total once ids are unique, which makes
// "top 50 of the union" independent of the order the lists are merged in.
function byRecency(a: Entry, b: Entry): number {
  if (a.time !== b.time) return a.time > b.time ? -1 : 1
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0
}

function topN(entries: Iterable<Entry>, limit: number): RecentTask[] {
  return [...entries].sort(byRecency).slice(0, limit).map((entry) => entry.task)
}

/** The pure join: union, one version per taskId, newest first, at most `limit`. Commutative, associative, idempotent. */
export function joinRecentTasks(a: readonly RecentTask[], b: readonly RecentTask[], limit = RECENT_TASK_LIMIT): RecentTask[] {
  return topN(dedupe([...a, ...b]).values(), limit)
}

function dedupe(tasks: readonly RecentTask[]): Map<string, Entry> {
  const byId = new Map<string, Entry>()
  for (const task of tasks) {
    const entry = entryOf(task)
    const seen = byId.get(entry.key)
    byId.set(entry.key, seen ? newer(seen, entry) : entry)
  }
  return byId
}

/**
 * The join, except that a task changed on one side only takes that side's version even when the
 * stale copy would win the tie-break (a task's timestamp is usually its start time, so an
 * updated result often keeps the old stamp). Still symmetric in local and remote.
 */
export function mergeRecentTasks(
  base: readonly RecentTask[] | null,
  local: readonly RecentTask[],
  remote: readonly RecentTask[],
  limit = RECENT_TASK_LIMIT,
): MergeResult<RecentTask[]> {
  const baseById = new Map<string, string>()
  for (const task of base ?? []) {
    const entry = entryOf(task)
    baseById.set(entry.key, entry.canonical)
  }
  const merged = dedupe(local)
  const conflicts: MergeConflict[] = []
  for (const [key, theirs] of dedupe(remote)) {
    const mine = merged.get(key)
    if (!mine) merged.set(key, theirs)
    else if (mine.canonical !== theirs.canonical) merged.set(key, resolve(mine, theirs, baseById.get(key), conflicts))
  }
  return {merged: topN(merged.values(), limit), conflicts, backup: null}
}

function resolve(mine: Entry, theirs: Entry, base: string | undefined, conflicts: MergeConflict[]): Entry {
  if (base === mine.canonical) return theirs
  if (base === theirs.canonical) return mine
  const winner = newer(mine, theirs)
  // Only entries with a string taskId can differ under one key, so the key is `s<taskId>`.
  const at = `recentTasks[${mine.key.slice(1)}]`
  conflicts.push({kind: 'task', at, winner: winner === mine ? 'local' : 'remote', local: mine.task, remote: theirs.task})
  return winner
}
