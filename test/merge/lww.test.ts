import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {compareStamps, lwwWinner, mergeLwwDocument, stampValue} from '../../src/merge/lww.js'
import {RUNS, stamp} from './arbitraries.js'

const project = (projectId: string, switchedAt: string, switchedBy = 'user-cli') => ({projectId, switchedAt, switchedBy})

describe('timestamps', () => {
  it('compares by parsed time; anything unparsable loses to a real time', () => {
    expect(compareStamps('2025-01-02T00:00:00Z', '2025-01-01T23:59:59.999Z')).toBe(1)
    expect(compareStamps('2025-01-01T00:00:00Z', '2025-01-01T00:00:00.000Z')).toBe(0)
    expect(compareStamps('yesterday-ish', '1970-01-01T00:00:00Z')).toBe(-1)
    expect(compareStamps(undefined, 'garbage')).toBe(0)
    expect(compareStamps(1_700_000_000_000, '1970-01-01T00:00:00Z')).toBe(-1)
  })

  it('reads a date-time without an offset as UTC, so every machine orders it the same', () => {
    expect(stampValue('2025-03-01T10:00:00')).toBe(Date.UTC(2025, 2, 1, 10))
    expect(stampValue('2025-03-01T10:00')).toBe(Date.UTC(2025, 2, 1, 10))
    expect(stampValue('2025-03-01T10:00:00+02:00')).toBe(Date.UTC(2025, 2, 1, 8))
  })

  it('picks the same winner whichever side asks', () => {
    const value = fc.record({projectId: fc.constantFrom('a', 'b'), switchedAt: stamp})
    fc.assert(
      fc.property(value, value, (x, y) => {
        const forward = lwwWinner(x, y, x.switchedAt, y.switchedAt)
        const backward = lwwWinner(y, x, y.switchedAt, x.switchedAt)
        expect(forward === 'local' ? x : y).toEqual(backward === 'local' ? y : x)
      }),
      RUNS,
    )
  })
})

describe('mergeLwwDocument', () => {
  const base = project('alpha', '2025-01-01T00:00:00Z')

  it('takes the side that changed when only one did', () => {
    const remote = project('beta', '2025-01-02T00:00:00Z', 'user-web')
    expect(mergeLwwDocument(base, base, remote, 'switchedAt')).toEqual({merged: remote, conflicts: [], backup: null})
    // Three-way beats the clock: a remote switch with an older stamp still wins over an unchanged local.
    const older = project('gamma', '2024-12-31T00:00:00Z')
    expect(mergeLwwDocument(base, base, older, 'switchedAt').merged).toBe(older)
  })

  it('records a conflict but writes no backup when both sides switched', () => {
    const local = project('beta', '2025-01-03T00:00:00Z')
    const remote = project('gamma', '2025-01-02T00:00:00Z', 'user-web')
    expect(mergeLwwDocument(base, local, remote, 'switchedAt')).toEqual({
      merged: local,
      conflicts: [{kind: 'lww', at: '(document)', winner: 'local', local, remote}],
      backup: null,
    })
  })

  it('is symmetric and idempotent', () => {
    const doc = fc.record({timestamp: stamp, structure: fc.record({pages: fc.array(fc.constantFrom('a', 'b'), {maxLength: 2})})})
    fc.assert(
      fc.property(fc.option(doc), doc, doc, (b, l, r) => {
        expect(mergeLwwDocument(l, l, l, 'timestamp').merged).toBe(l)
        expect(mergeLwwDocument(b, l, r, 'timestamp').merged).toEqual(mergeLwwDocument(b, r, l, 'timestamp').merged)
      }),
      RUNS,
    )
  })
})
