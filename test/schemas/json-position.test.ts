import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {jsonErrorOffset} from '../../src/schemas/json-position.js'

/** JSON text with a few characters changed: mostly broken, sometimes still valid. */
const mangled = fc
  .tuple(fc.json(), fc.array(fc.tuple(fc.nat(), fc.constantFrom('', '}', ']', ',', ':', '"', "'", 'x', ' ', '\n', '\\', '0', '-', '.', 'e')), {maxLength: 3}))
  .map(([text, edits]) =>
    edits.reduce((t, [at, ch]) => {
      const i = t.length === 0 ? 0 : at % t.length
      return t.slice(0, i) + ch + t.slice(i + 1)
    }, text),
  )

describe('jsonErrorOffset', () => {
  it('finds an error exactly when JSON.parse does', () => {
    fc.assert(
      fc.property(fc.oneof(fc.json(), mangled, fc.string()), (text) => {
        let valid = true
        try {
          JSON.parse(text)
        } catch {
          valid = false
        }
        expect(jsonErrorOffset(text) === undefined).toBe(valid)
      }),
      {numRuns: 3000},
    )
  })

  it('agrees with the offset Node names when it names one', () => {
    fc.assert(
      fc.property(mangled, (text) => {
        try {
          JSON.parse(text)
        } catch (error) {
          const named = /position (\d+)/.exec((error as Error).message)
          if (named) expect(jsonErrorOffset(text)).toBe(Number(named[1]))
        }
      }),
      {numRuns: 3000},
    )
  })

  it('does not crash on absurdly deep nesting', () => {
    expect(() => jsonErrorOffset('['.repeat(200_000))).not.toThrow()
  })
})
