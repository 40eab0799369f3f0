import {canonicalJson, isPlainObject, setOwn} from './canonical.js'
import {mergeJson} from './json.js'
import {lwwWinner} from './lww.js'
import {mergeRecentTasks} from './recent-tasks.js'
import {ABSENT, conflict, mergeSlots, orderedKeys, settle, slot, type FieldRule, type Slot, type ThreeWay} from './three-way.js'
import type {JsonObject, MergeResult, RecentTask, WorkerMemory} from './types.js'

const CONTEXT_LISTS = new Set(['lastFiles', 'lastTopics', 'knownIssues'])

/**
 * `jarvis/<agentId>.json` (contract §1). Three-way per field first; a field both sides changed
 * goes to the side with the newer `lastActive`, except: `recentTasks` changed on both sides is the
 * recent-task union, `expertise` a union of keys, the `context` lists order-preserving unions
 * (a list changed on one side only is simply taken, so removals are not undone). No backup: every
 * losing value is in a conflict entry, and a worker's own record is rewritten on every task.
 */
export function mergeWorkerMemory(base: WorkerMemory | null, local: WorkerMemory, remote: WorkerMemory): MergeResult<WorkerMemory> {
  if (!isPlainObject(local) || !isPlainObject(remote)) return mergeJson(base, local, remote) as MergeResult<WorkerMemory>
  const winner = lwwWinner(local, remote, local.lastActive, remote.lastActive)
  const ctx: ThreeWay = {winner, kind: 'lww', conflicts: [], localLost: false, fieldRule: workerField}
  const merged = mergeSlots(base ?? ABSENT, local, remote, [], ctx) as WorkerMemory
  return {merged, conflicts: ctx.conflicts, backup: null}
}

function workerField(path: readonly string[]): FieldRule | undefined {
  if (path.length === 1 && path[0] === 'lastActive') return newestStamp
  if (path.length === 1 && path[0] === 'recentTasks') return recentTasks
  if (path.length === 1 && path[0] === 'expertise') return expertise
  if (path.length === 2 && path[0] === 'context' && CONTEXT_LISTS.has(path[1])) return listUnion
  return undefined
}

// The clock field itself: the winner's stamp is the newest by definition; not worth a conflict.
const newestStamp: FieldRule = (base, local, remote, _path, ctx) =>
  (settle(base, local, remote, ctx.winner) ?? {value: ctx.winner === 'local' ? local : remote}).value

const recentTasks: FieldRule = (base, local, remote, path, ctx) => {
  const settled = settle(base, local, remote, ctx.winner)
  if (settled) return settled.value
  if (!isListOrAbsent(local) || !isListOrAbsent(remote)) return generic(base, local, remote, path, ctx)
  const result = mergeRecentTasks(Array.isArray(base) ? (base as RecentTask[]) : null, listOf(local), listOf(remote))
  ctx.conflicts.push(...result.conflicts)
  return result.merged
}

const expertise: FieldRule = (base, local, remote, path, ctx) => {
  const settled = settle(base, local, remote, ctx.winner)
  if (settled) return settled.value
  if (!isPlainObject(local) || !isPlainObject(remote)) return generic(base, local, remote, path, ctx)
  const [first, second] = ctx.winner === 'local' ? [local, remote] : [remote, local]
  const out: JsonObject = {}
  for (const key of orderedKeys(first, second)) {
    const mine = slot(local, key)
    const theirs = slot(remote, key)
    // Union of keys: a topic dropped on one side survives if the other still has it.
    const value = mine === ABSENT ? theirs : theirs === ABSENT ? mine : pickValue(slot(base, key), mine, theirs, [...path, key], ctx)
    setOwn(out, key, value)
  }
  return out
}

const listUnion: FieldRule = (base, local, remote, path, ctx) => {
  const settled = settle(base, local, remote, ctx.winner)
  if (settled) return settled.value
  if (!Array.isArray(local) || !Array.isArray(remote)) return generic(base, local, remote, path, ctx)
  const [first, second] = ctx.winner === 'local' ? [local, remote] : [remote, local]
  const seen = new Set<string>()
  return [...first, ...second].filter((item) => {
    const key = canonicalJson(item)
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

function pickValue(base: Slot, local: Slot, remote: Slot, path: readonly string[], ctx: ThreeWay): Slot {
  return (settle(base, local, remote, ctx.winner) ?? {value: conflict(local, remote, path, ctx, 'lww')}).value
}

function generic(base: Slot, local: Slot, remote: Slot, path: readonly string[], ctx: ThreeWay): Slot {
  return mergeSlots(base, local, remote, path, {...ctx, fieldRule: undefined, conflicts: ctx.conflicts})
}

function isListOrAbsent(value: Slot): boolean {
  return value === ABSENT || Array.isArray(value)
}

function listOf(value: Slot): RecentTask[] {
  return Array.isArray(value) ? (value as RecentTask[]) : []
}
