import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {diffSequences, type Hunk} from '../../src/merge/line-diff.js'
import {RUNS} from './arbitraries.js'

const seq = fc.array(fc.integer({min: 0, max: 3}), {maxLength: 25})

function apply(a: readonly number[], b: readonly number[], hunks: readonly Hunk[]): number[] {
  const out: number[] = []
  let at = 0
  for (const h of hunks) {
    out.push(...a.slice(at, h.oldStart), ...b.slice(h.newStart, h.newStart + h.newLength))
    at = h.oldStart + h.oldLength
  }
  return [...out, ...a.slice(at)]
}

function lcsLength(a: readonly number[], b: readonly number[]): number {
  const row = new Array<number>(b.length + 1).fill(0)
  for (const x of a) {
    let diagonal = 0
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]
      row[j] = x === b[j - 1] ? diagonal + 1 : Math.max(row[j], row[j - 1])
      diagonal = above
    }
  }
  return row[b.length]
}

describe('diffSequences', () => {
  it('produces hunks that turn a into b', () => {
    fc.assert(
      fc.property(seq, seq, (a, b) => {
        expect(apply(a, b, diffSequences(a, b))).toEqual(b)
      }),
      RUNS,
    )
  })

  it('is a shortest edit script (checked against a dynamic-programming LCS)', () => {
    fc.assert(
      fc.property(seq, seq, (a, b) => {
        const changed = diffSequences(a, b).reduce((sum, h) => sum + h.oldLength + h.newLength, 0)
        expect(changed).toBe(a.length + b.length - 2 * lcsLength(a, b))
      }),
      RUNS,
    )
  })

  it('keeps hunks sorted, disjoint and separated by an unchanged line', () => {
    fc.assert(
      fc.property(seq, seq, (a, b) => {
        const hunks = diffSequences(a, b)
        hunks.forEach((h, i) => {
          expect(h.oldLength + h.newLength).toBeGreaterThan(0)
          if (i > 0) expect(h.oldStart).toBeGreaterThan(hunks[i - 1].oldStart + hunks[i - 1].oldLength)
        })
      }),
      RUNS,
    )
  })

  it('slides a change among equal lines to the last place, as git does', () => {
    // Deleting one of three equal lines: reported as the last one.
    expect(diffSequences([1, 7, 7, 7, 2], [1, 7, 7, 2])).toEqual([{oldStart: 3, oldLength: 1, newStart: 3, newLength: 0}])
    expect(diffSequences([1, 2], [1, 5, 2])).toEqual([{oldStart: 1, oldLength: 0, newStart: 1, newLength: 1}])
  })

  it('handles empty inputs and unrelated inputs', () => {
    expect(diffSequences([], [])).toEqual([])
    expect(diffSequences([], [1, 2])).toEqual([{oldStart: 0, oldLength: 0, newStart: 0, newLength: 2}])
    expect(diffSequences([1, 2], [3, 4])).toEqual([{oldStart: 0, oldLength: 2, newStart: 0, newLength: 2}])
  })
})
