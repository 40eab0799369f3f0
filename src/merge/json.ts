import {ABSENT, mergeSlots, type ThreeWay} from './three-way.js'
import type {MergeResult} from './types.js'

/**
 * `projects.json` and any other JSON: key-level three-way merge against the base, recursive into
 * nested objects (arrays and scalars are single values). A key both sides changed differently
 * goes to remote, and the whole local document becomes the backup. A null base (the file was
 * created on both sides) is a two-way merge: union of keys, differing keys to remote + backup.
 */
export function mergeJson(base: unknown, local: unknown, remote: unknown): MergeResult<unknown> {
  const ctx: ThreeWay = {winner: 'remote', kind: 'key', conflicts: [], localLost: false}
  const merged = mergeSlots(base === null ? ABSENT : base, local, remote, [], ctx)
  return {merged, conflicts: ctx.conflicts, backup: ctx.localLost ? local : null}
}
