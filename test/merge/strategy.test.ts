/**
 * Per-path strategies: which glob picks which strategy, what each does when both sides changed, and — for every
 * strategy, whatever the texts and times — that no side is lost: each edited side is in the result, the backup,
 * the text handed back for the audit log, or (the merge rule) its new lines are in the result or it is the backup.
 */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {splitLines} from '../../src/merge/markdown.js'
import {mergeByStrategy, strategyFor} from '../../src/merge/strategy.js'
import {applyEdits, edits, isoTime, RUNS, smallLines, toText} from './arbitraries.js'

describe('strategyFor', () => {
  it('takes the first glob that matches, and merge otherwise', () => {
    const strategies = {'decisions/**': 'manual', '**/*.log.md': 'lww', 'decisions/archive/**': 'merge'} as const
    expect(strategyFor('decisions/db.md', strategies)).toBe('manual')
    expect(strategyFor('decisions/archive/old.md', strategies)).toBe('manual')
    expect(strategyFor('ops/deploy.log.md', strategies)).toBe('lww')
    expect(strategyFor('notes/plan.md', strategies)).toBe('merge')
    expect(strategyFor('.hidden/x.md', {'**': 'manual'})).toBe('manual')
    expect(strategyFor('notes/plan.md', undefined)).toBe('merge')
  })
})

describe('mergeByStrategy', () => {
  const base = '# Plan\n\n- one\n- two\n- three\n'
  const local = base.replace('- one', '- one (local)')
  const remote = base.replace('- three', '- three (server)')

  it('manual merges nothing, even what would merge cleanly: the server’s version in the file, the local one backed up', () => {
    expect(mergeByStrategy('d.md', base, local, remote, 'merge', {}).merged).toBe('# Plan\n\n- one (local)\n- two\n- three (server)\n')
    const manual = mergeByStrategy('d.md', base, local, remote, 'manual', {})
    expect(manual).toMatchObject({merged: remote, backup: local, conflicts: [{kind: 'manual', winner: 'remote'}]})
  })

  it('lww keeps the newer side whole; a losing local side is the backup, a losing server side is handed back', () => {
    const newerHere = mergeByStrategy('d.md', base, local, remote, 'lww', {local: '2026-11-25T10:00:01Z', remote: '2026-11-25T10:00:00Z'})
    expect(newerHere).toMatchObject({merged: local, backup: null, lost: remote})
    const newerThere = mergeByStrategy('d.md', base, local, remote, 'lww', {local: '2026-11-25T09:00:00Z', remote: '2026-11-25T10:00:00Z'})
    expect(newerThere).toMatchObject({merged: remote, backup: local})
    expect(newerThere.lost).toBeUndefined()
  })

  it('with one side unchanged there is nothing to decide, whatever the strategy', () => {
    for (const strategy of ['merge', 'lww', 'manual'] as const) {
      expect(mergeByStrategy('d.md', base, base, remote, strategy, {})).toMatchObject({merged: remote, backup: null, conflicts: []})
      expect(mergeByStrategy('d.md', base, local, base, strategy, {})).toMatchObject({merged: local, backup: null, conflicts: []})
    }
  })

  it('no strategy loses an edit', () => {
    fc.assert(
      fc.property(smallLines(), edits(), edits(), fc.constantFrom('merge' as const, 'lww' as const, 'manual' as const), fc.option(isoTime), fc.option(isoTime), (lines, mine, theirs, strategy, localTime, remoteTime) => {
        const b = toText(lines)
        const l = toText(applyEdits(lines, mine))
        const r = toText(applyEdits(lines, theirs))
        const result = mergeByStrategy('notes.md', b, l, r, strategy, {local: localTime ?? undefined, remote: remoteTime ?? undefined})
        const kept = new Set(splitLines(result.merged))
        const baseLines = new Set(splitLines(b))
        for (const side of [l, r]) {
          if (side === b || side === result.merged || side === result.backup || side === result.lost) continue
          // The merge rule: the side's new lines are in the result (a clean merge, or the server's side of an overlap).
          for (const line of splitLines(side)) if (!baseLines.has(line)) expect(kept.has(line) || result.backup === l).toBe(true)
        }
        // lww and manual keep both sides whole: one in the file, the other in the backup or handed back for the audit log.
        if (strategy !== 'merge' && l !== b && r !== b && l !== r) {
          const places = [result.merged, result.backup, result.lost]
          expect(places).toContain(l)
          expect(places).toContain(r)
        }
      }),
      RUNS,
    )
  })
})
