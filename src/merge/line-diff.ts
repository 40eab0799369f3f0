/**
 * Two-way diff of interned lines: Myers' O(ND) algorithm with the linear-space "middle snake"
 * divide and conquer (E. Myers, "An O(ND) Difference Algorithm and Its Variations", 1986), then
 * change groups slid to a canonical place. Written here rather than taken from node-diff3, whose
 * LCS needs seconds on a 5,000-line Markdown file full of blank lines (docs/decisions/diff3-engine.md).
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

/** Marks a shortest edit script; an explicit stack instead of recursion keeps huge inputs off the call stack. */
function compare(a: Int32Array, b: Int32Array, markA: (i: number) => void, markB: (j: number) => void): void {
  const reach = ((a.length + b.length + 1) >> 1) + 2
  const forward = new Int32Array(2 * reach + 1)
  const backward = new Int32Array(2 * reach + 1)
  const stack = [0, a.length, 0, b.length]
  while (stack.length > 0) {
    let b1 = stack.pop()!
    let b0 = stack.pop()!
    let a1 = stack.pop()!
    let a0 = stack.pop()!
    while (a0 < a1 && b0 < b1 && a[a0] === b[b0]) {
      a0++
      b0++
    }
    while (a0 < a1 && b0 < b1 && a[a1 - 1] === b[b1 - 1]) {
      a1--
      b1--
    }
    const split = a0 === a1 || b0 === b1 ? null : middleSnake(a, a0, a1, b, b0, b1, forward, backward, reach)
    if (split && (split[0] !== a0 || split[1] !== b0) && (split[0] !== a1 || split[1] !== b1)) {
      stack.push(a0, split[0], b0, split[1], split[0], a1, split[1], b1)
      continue
    }
    for (let i = a0; i < a1; i++) markA(i)
    for (let j = b0; j < b1; j++) markB(j)
  }
}

/**
 * A point on a shortest edit path through the box, found by running the forward and the reverse
 * search until they overlap on one diagonal. Diagonal k holds points with x - y = k; `forward[k]`
 * is the furthest x reached from the top-left, `backward[k]` the furthest distance from the
 * bottom-right along reverse diagonal k. Diagonals that leave the box are dropped from the scan.
 */
function middleSnake(
  a: Int32Array,
  a0: number,
  a1: number,
  b: Int32Array,
  b0: number,
  b1: number,
  forward: Int32Array,
  backward: Int32Array,
  reach: number,
): [number, number] | null {
  const n = a1 - a0
  const m = b1 - b0
  const delta = n - m
  const odd = (delta & 1) !== 0
  const maxD = (n + m + 1) >> 1
  const off = reach
  forward.fill(-1, off - maxD - 1, off + maxD + 2)
  backward.fill(-1, off - maxD - 1, off + maxD + 2)
  forward[off + 1] = 0
  backward[off + 1] = 0
  let fLow = 0
  let fHigh = 0
  let bLow = 0
  let bHigh = 0
  for (let d = 0; d <= maxD; d++) {
    for (let k = -d + fLow; k <= d - fHigh; k += 2) {
      let x = k === -d || (k !== d && forward[off + k - 1] < forward[off + k + 1]) ? forward[off + k + 1] : forward[off + k - 1] + 1
      let y = x - k
      while (x < n && y < m && a[a0 + x] === b[b0 + y]) {
        x++
        y++
      }
      forward[off + k] = x
      if (x > n) fHigh += 2
      else if (y > m) fLow += 2
      else if (odd && Math.abs(delta - k) <= d - 1) {
        const back = backward[off + delta - k]
        if (back !== -1 && back <= n && back - (delta - k) <= m && x >= n - back) return [a0 + x, b0 + y]
      }
    }
    for (let k = -d + bLow; k <= d - bHigh; k += 2) {
      let x = k === -d || (k !== d && backward[off + k - 1] < backward[off + k + 1]) ? backward[off + k + 1] : backward[off + k - 1] + 1
      let y = x - k
      while (x < n && y < m && a[a1 - 1 - x] === b[b1 - 1 - y]) {
        x++
        y++
      }
      backward[off + k] = x
      if (x > n) bHigh += 2
      else if (y > m) bLow += 2
      else if (!odd && Math.abs(delta - k) <= d) {
        const front = forward[off + delta - k]
        if (front !== -1 && front <= n && front - (delta - k) <= m && front >= n - x) return [a0 + front, b0 + front - (delta - k)]
      }
    }
  }
  return null
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
