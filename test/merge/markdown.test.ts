import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {mergeText, splitLines} from '../../src/merge/markdown.js'
import {applyEdits, distinctBase, edits, RUNS, smallLines, toText} from './arbitraries.js'

const text = fc.tuple(smallLines(), fc.boolean(), fc.boolean()).map(([lines, newline, crlf]) => {
  const t = toText(lines, newline)
  return crlf ? t.replace(/\n/g, '\r\n') : t
})

const memory = `# Project memory

## Status
- build: green
- release: 0.3 planned

## Decisions
- use zod for schemas
- keep .nexus/ out of git
`

describe('mergeText examples', () => {
  it('merges edits in different sections', () => {
    const local = memory.replace('- keep .nexus/ out of git\n', '- keep .nexus/ out of git\n- merge Markdown with diff3\n')
    const remote = memory.replace('- build: green', '- build: red (flaky e2e)')
    const result = mergeText(memory, local, remote)
    expect(result).toEqual({merged: remote.replace('- keep .nexus/ out of git\n', '- keep .nexus/ out of git\n- merge Markdown with diff3\n'), conflicts: [], backup: null})
  })

  it('lets the server win an overlap and backs up the local text', () => {
    const local = `${memory}- local decision\n`
    const remote = `${memory}- remote decision\n`
    const result = mergeText(memory, local, remote)
    expect(result.merged).toBe(remote)
    expect(result.backup).toBe(local)
    expect(result.conflicts).toEqual([{kind: 'lines', at: 'after line 9', winner: 'remote', local: 'line 10', remote: 'line 10'}])
  })

  it('on an overlap keeps the local edits elsewhere in the file, taking the server’s side only where both changed', () => {
    const local = memory.replace('- keep .nexus/ out of git', '- keep .nexus/ and backups out of git').replace('- release: 0.3 planned', '- release: 0.3 on Friday')
    const remote = memory.replace('- release: 0.3 planned', '- release: 0.4 planned')
    const result = mergeText(memory, local, remote)
    expect(result.merged).toBe(remote.replace('- keep .nexus/ out of git', '- keep .nexus/ and backups out of git'))
    expect(result.backup).toBe(local)
    expect(result.conflicts).toEqual([{kind: 'lines', at: 'line 5', winner: 'remote', local: 'line 5', remote: 'line 5'}])
  })

  it('treats edits to adjacent lines as a conflict, as git merge-file does', () => {
    const base = 'a\nb\nc\nd\n'
    expect(mergeText(base, 'a\nB\nc\nd\n', 'a\nb\nC\nd\n').conflicts).toHaveLength(1)
    expect(mergeText(base, 'a\nB\nc\nd\n', 'a\nb\nc\nD\n')).toEqual({merged: 'a\nB\nc\nD\n', conflicts: [], backup: null})
  })

  it('accepts the same change made on both sides', () => {
    expect(mergeText('a\nb\nc\n', 'a\nB\nc\nd\n', 'a\nB\nc\n')).toEqual({merged: 'a\nB\nc\nd\n', conflicts: [], backup: null})
  })

  it('does not count a CRLF conversion as an edit', () => {
    const base = 'one\ntwo\nthree\n'
    expect(mergeText(base, 'one\r\ntwo\r\nthree\r\n', 'one\ntwo\nthree\nfour\n').merged).toBe('one\ntwo\nthree\nfour\n')
    expect(mergeText(base, 'one\r\ntwo\r\nTHREE\r\n', 'ONE\ntwo\nthree\n').merged).toBe('ONE\ntwo\nTHREE\n')
  })

  it('writes the merge of two CRLF sides in CRLF, so git does not see every line changed', () => {
    const base = 'one\r\ntwo\r\nthree\r\n'
    expect(mergeText(base, 'one\r\ntwo\r\nTHREE\r\n', 'ONE\r\ntwo\r\nthree\r\n').merged).toBe('ONE\r\ntwo\r\nTHREE\r\n')
    const conflicted = mergeText(base, 'one\r\nmine\r\nthree\r\n', 'one\r\ntheirs\r\nthree\r\n')
    expect(conflicted.merged).toBe('one\r\ntheirs\r\nthree\r\n')
    expect(conflicted.backup).toBe('one\r\nmine\r\nthree\r\n')
  })

  it('keeps a missing final newline and treats adding one as a change to the last line', () => {
    expect(mergeText('a\nb\nc', 'A\nb\nc', 'a\nb\nC').merged).toBe('A\nb\nC')
    expect(mergeText('a\nb\nc', 'a\nb\nc\n', 'A\nb\nc').merged).toBe('A\nb\nc\n')
    expect(mergeText('a\nb', 'a\nb\nlocal', 'a\nb\nremote').conflicts).toHaveLength(1)
  })

  it('reads a missing base as empty: two different versions conflict', () => {
    const result = mergeText(null, 'mine\n', 'theirs\n')
    expect(result).toMatchObject({merged: 'theirs\n', backup: 'mine\n'})
    expect(mergeText(null, '', 'theirs\n').merged).toBe('theirs\n')
  })

  it('is not fooled by lines that are Object.prototype keys', () => {
    const base = '__proto__\nconstructor\ntoString\n'
    expect(mergeText(base, '__proto__\nconstructor\nx\ntoString\n', 'hasOwnProperty\n__proto__\nconstructor\ntoString\n').merged).toBe(
      'hasOwnProperty\n__proto__\nconstructor\nx\ntoString\n',
    )
  })

  it('splits lines keeping their terminators', () => {
    expect(splitLines('a\n\nb')).toEqual(['a\n', '\n', 'b'])
    expect(splitLines('')).toEqual([])
  })
})

describe('mergeText properties', () => {
  it('merge(x, x, x) = x, and a side equal to the base takes the other side', () => {
    fc.assert(
      fc.property(text, text, (b, x) => {
        expect(mergeText(x, x, x).merged).toBe(x)
        expect(mergeText(b, x, b)).toEqual({merged: x, conflicts: [], backup: null})
        expect(mergeText(b, b, x)).toEqual({merged: x, conflicts: [], backup: null})
        expect(mergeText(b, x, x).merged).toBe(x)
      }),
      RUNS,
    )
  })

  it('merges edits to separated line ranges cleanly, into exactly both edits (distinct base lines)', () => {
    const plan = fc.array(
      fc.record({gap: fc.integer({min: 0, max: 3}), length: fc.integer({min: 0, max: 3}), side: fc.boolean(), lines: fc.array(fc.constantFrom('x', 'y', 'z'), {maxLength: 3})}),
      {maxLength: 6},
    )
    fc.assert(
      fc.property(distinctBase(20), plan, fc.boolean(), (base, ranges, newline) => {
        const local: string[] = []
        const remote: string[] = []
        const expected: string[] = []
        let at = 0
        for (const [i, range] of ranges.entries()) {
          // At least one untouched line between ranges; the first may start the file.
          const keep = base.slice(at, at + (i === 0 ? range.gap : Math.max(1, range.gap)))
          if (i > 0 && keep.length === 0) break
          const old = base.slice(at + keep.length, at + keep.length + range.length)
          local.push(...keep, ...(range.side ? range.lines : old))
          remote.push(...keep, ...(range.side ? old : range.lines))
          expected.push(...keep, ...range.lines)
          at += keep.length + old.length
        }
        const tail = base.slice(at)
        // Without a final newline, appending after the last line rewrites that line (as in git).
        fc.pre(newline || tail.length > 0)
        const result = mergeText(toText(base, newline), toText([...local, ...tail], newline), toText([...remote, ...tail], newline))
        expect(result).toEqual({merged: toText([...expected, ...tail], newline), conflicts: [], backup: null})
      }),
      RUNS,
    )
  })

  it('loses nothing: every line local added is in the result or in the backup', () => {
    fc.assert(
      fc.property(smallLines(), edits(), edits(), (base, mine, theirs) => {
        const local = applyEdits(base, mine)
        const result = mergeText(toText(base), toText(local), toText(applyEdits(base, theirs)))
        const kept = new Set(splitLines(result.merged))
        const baseLines = new Set(splitLines(toText(base)))
        for (const line of splitLines(toText(local))) {
          if (!baseLines.has(line)) expect(kept.has(line) || result.backup === toText(local)).toBe(true)
        }
        expect(result.conflicts.length > 0).toBe(result.backup !== null)
      }),
      RUNS,
    )
  })

  it('never loses the server’s side: every line the remote added is in the result', () => {
    fc.assert(
      fc.property(smallLines(), edits(), edits(), (base, mine, theirs) => {
        const remote = toText(applyEdits(base, theirs))
        const result = mergeText(toText(base), toText(applyEdits(base, mine)), remote)
        const kept = new Set(splitLines(result.merged))
        const baseLines = new Set(splitLines(toText(base)))
        for (const line of splitLines(remote)) if (!baseLines.has(line)) expect(kept.has(line)).toBe(true)
      }),
      RUNS,
    )
  })

  it('never writes conflict markers', () => {
    fc.assert(
      fc.property(smallLines(), edits(), edits(), (base, mine, theirs) => {
        expect(mergeText(toText(base), toText(applyEdits(base, mine)), toText(applyEdits(base, theirs))).merged).not.toMatch(/^(<{7}|={7}|>{7})/m)
      }),
      RUNS,
    )
  })
})
