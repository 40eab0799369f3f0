import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {estimateTokens, fitToBudget} from '../../src/hook/budget.js'

const note = (n: number) => `… ${n} more lines left out`

describe('the session-start token budget', () => {
  it('estimates one token per 4 characters, rounded up', () => {
    expect(estimateTokens('')).toBe(0)
    expect(estimateTokens('abcd')).toBe(1)
    expect(estimateTokens('abcde')).toBe(2)
    expect(estimateTokens('x'.repeat(8000))).toBe(2000)
  })

  it('keeps everything that fits, unchanged', () => {
    const fitted = fitToBudget([{lines: ['header']}, {lines: ['# Pinned', '- a', '- b'], heading: 1}], 100, note)
    expect(fitted).toEqual({text: 'header\n\n# Pinned\n- a\n- b', tokens: estimateTokens('header\n\n# Pinned\n- a\n- b'), omitted: 0})
  })

  it('cuts at line boundaries, earlier sections first, and says how many lines were left out', () => {
    const pinned = Array.from({length: 40}, (_, i) => `- pinned ${i} ${'p'.repeat(30)}`)
    const files = Array.from({length: 10}, (_, i) => `- file ${i}`)
    const fitted = fitToBudget([{lines: ['header']}, {lines: ['# Pinned', ...pinned], heading: 1}, {lines: ['## Files', ...files], heading: 1}], 200, note)
    expect(fitted.tokens).toBeLessThanOrEqual(200)
    const lines = fitted.text.split('\n')
    expect(lines[0]).toBe('header')
    expect(fitted.text).not.toContain('## Files') // a later section never pushes out an earlier one
    for (const line of lines.slice(3, -2)) expect(pinned).toContain(line)
    expect(lines.at(-1)).toBe(note(fitted.omitted))
    expect(fitted.omitted).toBe(1 + 1 + 40 + 1 + 10 - (lines.length - 3))
  })

  it('never shows a heading without a line under it', () => {
    const fitted = fitToBudget([{lines: ['h'.repeat(60)]}, {lines: ['# Pinned', 'x'.repeat(200)], heading: 1}], 30, note)
    expect(fitted.text).not.toContain('# Pinned')
  })

  it('for any sections and budget: within the budget, whole lines only, in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string({maxLength: 120}).map((s) => s.replace(/\n/g, ' ')), {minLength: 1, maxLength: 20}), {minLength: 1, maxLength: 5}),
        fc.integer({min: 20, max: 2000}),
        (sections, budget) => {
          const fitted = fitToBudget(sections.map((lines) => ({lines})), budget, note)
          expect(fitted.tokens).toBeLessThanOrEqual(Math.max(budget, estimateTokens(note(9999))))
          const all = sections.flat()
          const shown = fitted.text.split('\n').filter((line) => line !== '' && !line.startsWith('… '))
          // every shown line is an input line, in input order
          let at = 0
          for (const line of shown) {
            const found = all.indexOf(line, at)
            expect(found).toBeGreaterThanOrEqual(0)
            at = found + 1
          }
        },
      ),
      {numRuns: 300},
    )
  })
})
