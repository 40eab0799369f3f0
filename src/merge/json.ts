import {ABSENT, mergeSlots, type ThreeWay} from './three-way.js'
import type {MergeResult, Side} from './types.js'

/**
 * `projects.json` and any other JSON: key-level three-way merge against the base, recursive into
 * nested objects (arrays and scalars are single values). A key both sides changed differently
 * goes to remote, and the whole local document becomes the backup. A null base (the file was
 * created on both sides) is a two-way merge: union of keys, differing keys to remote + backup.
 * `winner: 'local'` gives a differing key to local instead (`jarvis resolve --keep local`): no backup then.
 */
export function mergeJson(base: unknown, local: unknown, remote: unknown, winner: Side = 'remote'): MergeResult<unknown> {
  const ctx: ThreeWay = {winner, kind: 'key', conflicts: [], localLost: false}
  const merged = mergeSlots(base === null ? ABSENT : base, local, remote, [], ctx)
  return {merged, conflicts: ctx.conflicts, backup: ctx.localLost ? local : null}
}
