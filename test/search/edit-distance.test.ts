import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {boundedEditDistance} from '../../src/search/fts.js'

/** The textbook full table, the reference the banded one must agree with. */
function editDistance(a: string, b: string): number {
  const table = Array.from({length: a.length + 1}, (_, i) => Array.from({length: b.length + 1}, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) table[i][j] = Math.min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
  }
  return table[a.length][b.length]
}

describe('bounded edit distance (the fuzzy terms)', () => {
  it('equals the full edit distance, capped at max + 1', () => {
    const word = fc.string({unit: fc.constantFrom('a', 'b', 'c', 'é'), maxLength: 14})
    fc.assert(
      fc.property(word, word, fc.integer({min: 0, max: 3}), (a, b, max) => {
        expect(boundedEditDistance(a, b, max)).toBe(Math.min(editDistance(a, b), max + 1))
      }),
      {numRuns: 5000},
    )
  })

  it('handles words longer than its scratch rows', () => {
    expect(boundedEditDistance('x'.repeat(100), `${'x'.repeat(99)}y`, 2)).toBe(1)
    expect(boundedEditDistance('pgbouncer', 'pgbounce', 2)).toBe(1)
    expect(boundedEditDistance('pgbouncer', 'bouncer', 1)).toBe(2)
  })
})
