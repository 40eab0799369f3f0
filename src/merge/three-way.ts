import {hasOwn, isPlainObject, jsonEqual, setOwn} from './canonical.js'
import type {ConflictKind, JsonObject, MergeConflict, Side} from './types.js'

/** A key missing from an object — distinct from a key whose value is null. */
export const ABSENT: unique symbol = Symbol('absent')
/** A value, or ABSENT for a key that is not there. */
export type Slot = unknown

export type FieldRule = (base: Slot, local: Slot, remote: Slot, path: readonly string[], ctx: ThreeWay) => Slot

export interface ThreeWay {
  /** Who wins when both sides changed one value differently. */
  winner: Side
  kind: Extract<ConflictKind, 'key' | 'lww'>
  conflicts: MergeConflict[]
  /** Set when a local value lost a conflict: the caller then keeps the local document as a backup. */
  localLost: boolean
  fieldRule?: (path: readonly string[]) => FieldRule | undefined
}

export function pathText(path: readonly string[]): string {
  return path.length === 0 ? '(document)' : path.join('.')
}

export function same(a: Slot, b: Slot): boolean {
  if (a === ABSENT || b === ABSENT) return a === b
  return jsonEqual(a, b)
}

export function slot(object: unknown, key: string): Slot {
  return isPlainObject(object) && hasOwn(object, key) ? object[key] : ABSENT
}

/** `{value}` (possibly ABSENT) when three-way reasoning decides alone; undefined when both sides changed it differently. */
export function settle(base: Slot, local: Slot, remote: Slot, winner: Side): {value: Slot} | undefined {
  // Equal on both sides: take the winner's copy so key order, too, is the same whoever merges.
  if (same(local, remote)) return {value: winner === 'local' ? local : remote}
  if (same(base, local)) return {value: remote}
  if (same(base, remote)) return {value: local}
  return undefined
}

/**
 * Key-level three-way merge, recursive into plain objects. A key changed on one side takes that
 * side's value; deleted on one side and unchanged on the other is deleted; an edit beats a
 * concurrent deletion; changed on both sides differently goes to `ctx.winner`. A missing base
 * (ABSENT, or not an object) reads as `{}`: every key then counts as added, so nothing is deleted.
 */
export function mergeSlots(base: Slot, local: Slot, remote: Slot, path: readonly string[], ctx: ThreeWay): Slot {
  const rule = ctx.fieldRule?.(path)
  if (rule) return rule(base, local, remote, path, ctx)
  const settled = settle(base, local, remote, ctx.winner)
  if (settled) return settled.value
  if (local === ABSENT || remote === ABSENT) {
    const winner: Side = local === ABSENT ? 'remote' : 'local'
    ctx.conflicts.push({kind: 'edit-delete', at: pathText(path), winner, local: orNull(local), remote: orNull(remote)})
    return winner === 'local' ? local : remote
  }
  if (isPlainObject(local) && isPlainObject(remote)) return mergeObjects(isPlainObject(base) ? base : {}, local, remote, path, ctx)
  return conflict(local, remote, path, ctx, ctx.kind)
}

export function conflict(local: Slot, remote: Slot, path: readonly string[], ctx: ThreeWay, kind: ConflictKind): Slot {
  const winner = ctx.winner
  if (winner === 'remote') ctx.localLost = true
  ctx.conflicts.push({kind, at: pathText(path), winner, local, remote})
  return winner === 'local' ? local : remote
}

export function mergeObjects(base: JsonObject, local: JsonObject, remote: JsonObject, path: readonly string[], ctx: ThreeWay): JsonObject {
  const [first, second] = ctx.winner === 'local' ? [local, remote] : [remote, local]
  const out: JsonObject = {}
  for (const key of orderedKeys(first, second)) {
    const value = mergeSlots(slot(base, key), slot(local, key), slot(remote, key), [...path, key], ctx)
    if (value !== ABSENT) setOwn(out, key, value)
  }
  return out
}

/** The winner's keys in its order, then the other side's extra keys in theirs. */
export function orderedKeys(first: JsonObject, second: JsonObject): string[] {
  return [...Object.keys(first), ...Object.keys(second).filter((key) => !hasOwn(first, key))]
}

function orNull(value: Slot): unknown {
  return value === ABSENT ? null : value
}
