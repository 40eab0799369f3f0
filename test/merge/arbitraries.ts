import fc from 'fast-check'

/** Property runs: 1000 is fast enough for every merge property here, locally and in CI. */
export const RUNS = {numRuns: 1000}

/** Lines from a tiny alphabet: repeats everywhere, so alignments are ambiguous and edits collide. */
export const smallLines = (maxLength = 12) => fc.array(fc.constantFrom('a', 'b', 'c', ''), {maxLength})

/** A base whose lines are all distinct, so every diff against it has exactly one alignment. */
export const distinctBase = (maxLength = 14) => fc.integer({min: 0, max: maxLength}).map((n) => Array.from({length: n}, (_, i) => `line ${i}`))

export type Edit = {kind: 'delete' | 'replace' | 'insert'; at: number; text: string}

/** Random edits to a list of lines; inserted text comes from a small alphabet so both sides often insert the same thing. */
export const edits = (maxEdits = 3) =>
  fc.array(
    fc.record({kind: fc.constantFrom('delete', 'replace', 'insert'), at: fc.nat(), text: fc.constantFrom('x', 'y', 'z', 'a', '')}),
    {maxLength: maxEdits},
  ) as fc.Arbitrary<Edit[]>

export function applyEdits(lines: readonly string[], list: readonly Edit[]): string[] {
  const out = [...lines]
  for (const {kind, at, text} of list) {
    if (kind === 'insert') out.splice(at % (out.length + 1), 0, text)
    else if (out.length > 0 && kind === 'delete') out.splice(at % out.length, 1)
    else if (out.length > 0) out[at % out.length] = text
  }
  return out
}

export function toText(lines: readonly string[], finalNewline = true): string {
  const text = lines.map((line) => `${line}\n`).join('')
  return finalNewline ? text : text.replace(/\n$/, '')
}

export const isoTime = fc.integer({min: 0, max: 20}).map((n) => new Date(Date.UTC(2025, 0, 1, 0, n)).toISOString())

/** Timestamps with ties, equal instants spelled differently, and junk that must lose. */
export const stamp = fc.oneof(
  {weight: 6, arbitrary: isoTime},
  {weight: 1, arbitrary: isoTime.map((iso) => iso.replace('.000Z', 'Z'))},
  {weight: 1, arbitrary: fc.constantFrom('not a date', '')},
)
