import {compare} from './myers.js'

/**
 * Two-way diff of interned lines: a shortest edit script (./myers.ts), then change groups slid to
 * a canonical place. Written here rather than taken from node-diff3, whose LCS needs seconds on a
 * 5,000-line Markdown file full of blank lines (docs/decisions/diff3-engine.md).
 */

/** Lines [oldStart, oldStart + oldLength) of the old sequence became [newStart, newStart + newLength) of the new one. */
export interface Hunk {
  oldStart: number
  oldLength: number
  newStart: number
  newLength: number
}

export function diffSequences(a: readonly number[], b: readonly number[]): Hunk[] {
  const changedA = new Uint8Array(a.length)
  const changedB = new Uint8Array(b.length)
  markChanges(a, b, changedA, changedB)
  slideGroups(a, changedA, changedB)
  slideGroups(b, changedB, changedA)
  return collectHunks(changedA, changedB)
}

function markChanges(a: readonly number[], b: readonly number[], changedA: Uint8Array, changedB: Uint8Array): void {
  let start = 0
  let endA = a.length
  let endB = b.length
  while (start < endA && start < endB && a[start] === b[start]) start++
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--
    endB--
  }
  // A line with no counterpart on the other side is a change whatever the alignment; keeping such
  // lines out of the O(ND) search is what makes two unrelated files cheap.
  const [keptA, indexA] = keepMatchable(a, start, endA, new Set(b.slice(start, endB)), changedA)
  const [keptB, indexB] = keepMatchable(b, start, endB, new Set(a.slice(start, endA)), changedB)
  compare(
    keptA,
    keptB,
    (i) => (changedA[indexA[i]] = 1),
    (j) => (changedB[indexB[j]] = 1),
  )
}

function keepMatchable(lines: readonly number[], start: number, end: number, other: Set<number>, changed: Uint8Array): [Int32Array, Int32Array] {
  const kept: number[] = []
  const index: number[] = []
  for (let i = start; i < end; i++) {
    if (other.has(lines[i])) {
      kept.push(lines[i])
      index.push(i)
    } else changed[i] = 1
  }
  return [Int32Array.from(kept), Int32Array.from(index)]
}

/**
 * Where a group of changed lines sits among equal lines is arbitrary (deleting the first or the
 * second of two blank lines is the same edit). Slide every group as far down as it goes, or back
 * to the lowest place where it lines up with a change on the other side, so that one edit reads
 * as one hunk and both sides of a three-way merge describe the same edit the same way.
 */
function slideGroups(lines: readonly number[], changed: Uint8Array, otherChanged: Uint8Array): void {
  const otherGap = gapsWithChanges(otherChanged)
  const n = lines.length
  let start = 0
  let gap = 0 // unchanged lines before `start`: the group's gap number, shared with the other side
  while (start < n) {
    if (!changed[start]) {
      start++
      gap++
      continue
    }
    let end = start
    while (end < n && changed[end]) end++
    let size: number
    let lowestAligned: number
    let highestEnd: number
    do {
      size = end - start
      while (start > 0 && lines[start - 1] === lines[end - 1]) {
        changed[--start] = 1
        changed[--end] = 0
        gap--
        while (start > 0 && changed[start - 1]) start--
      }
      highestEnd = end
      lowestAligned = otherGap[gap] ? end : -1
      while (end < n && lines[start] === lines[end]) {
        changed[start++] = 0
        changed[end++] = 1
        gap++
        while (end < n && changed[end]) end++
        if (otherGap[gap]) lowestAligned = end
      }
    } while (size !== end - start)
    if (end !== highestEnd && lowestAligned !== -1) {
      while (end > lowestAligned) {
        changed[--start] = 1
        changed[--end] = 0
        gap--
      }
    }
    start = end
  }
}

/** For each gap between consecutive unchanged lines (and before the first / after the last): does it hold a change? */
function gapsWithChanges(changed: Uint8Array): Uint8Array {
  let unchanged = 0
  for (const flag of changed) if (!flag) unchanged++
  const gaps = new Uint8Array(unchanged + 1)
  let gap = 0
  for (const flag of changed) {
    if (flag) gaps[gap] = 1
    else gap++
  }
  return gaps
}

function collectHunks(changedA: Uint8Array, changedB: Uint8Array): Hunk[] {
  const hunks: Hunk[] = []
  let i = 0
  let j = 0
  while (i < changedA.length || j < changedB.length) {
    if ((i < changedA.length && changedA[i]) || (j < changedB.length && changedB[j])) {
      const oldStart = i
      const newStart = j
      while (i < changedA.length && changedA[i]) i++
      while (j < changedB.length && changedB[j]) j++
      hunks.push({oldStart, oldLength: i - oldStart, newStart, newLength: j - newStart})
    } else {
      i++
      j++
    }
  }
  return hunks
}
