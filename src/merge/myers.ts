/**
 * Myers' O(ND) shortest edit script with the linear-space "middle snake" divide and conquer
 * (E. Myers, "An O(ND) Difference Algorithm and Its Variations", Algorithmica 1, 1986).
 */

/** Marks a shortest edit script; an explicit stack instead of recursion keeps huge inputs off the call stack. */
export function compare(a: Int32Array, b: Int32Array, markA: (i: number) => void, markB: (j: number) => void): void {
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
    // One side empty, or (a guard: never seen) no split strictly inside: all of it changed, still a valid diff.
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
