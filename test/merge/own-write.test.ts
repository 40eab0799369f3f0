/**
 * The base of a merge after a push of ours whose answer was lost (src/merge/own-write.ts): our text once the server
 * holds every edit it made, with others' on top; the old base otherwise. Modelled as the sync meets it: an old base,
 * our text pushed from it (landed or not), the server's text written on top of whichever it holds, and the local text
 * the user went on editing from ours.
 */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {mergeText} from '../../src/merge/markdown.js'
import {baseAfterOwnWrites, holdsEdits} from '../../src/merge/own-write.js'
import {distinctBase, RUNS, toText} from './arbitraries.js'

type Edit = {kind: 'insert' | 'delete' | 'replace'; at: number; lines: number}

const editList = (maxEdits = 4) =>
  fc.array(fc.record({kind: fc.constantFrom<Edit['kind']>('insert', 'delete', 'replace'), at: fc.nat(), lines: fc.integer({min: 1, max: 3})}), {maxLength: maxEdits})

/** `lines` with `list` applied; each inserted line is new (`<tag>-<n>`), so where a line went is always known. */
function edit(lines: readonly string[], list: readonly Edit[], tag: string, keep: (line: string) => boolean = () => false): string[] {
  const out = [...lines]
  let fresh = 0
  const made = (count: number) => Array.from({length: count}, () => `${tag}-${fresh++}`)
  for (const {kind, at, lines: count} of list) {
    if (kind === 'insert') {
      out.splice(at % (out.length + 1), 0, ...made(count))
      continue
    }
    const deletable = out.map((line, i) => (keep(line) ? -1 : i)).filter((i) => i >= 0)
    if (deletable.length === 0) continue
    const i = deletable[at % deletable.length]
    out.splice(i, 1, ...(kind === 'replace' ? made(count) : []))
  }
  return out
}

const scenario = fc.record({base: distinctBase(10), ours: editList(), landed: fc.boolean(), theirs: editList(), local: editList(), newline: fc.boolean()})

describe('baseAfterOwnWrites: which base a merge takes after a push of ours went unanswered', () => {
  it('never loses a line of either side: what the server added, what we added (landed or not), what the user added since', () => {
    fc.assert(
      fc.property(scenario, ({base, ours, landed, theirs, local, newline}) => {
        const sent = edit(base, ours, 'A')
        const server = edit(landed ? sent : base, theirs, 'B')
        const here = edit(sent, local, 'L')
        const text = (lines: string[]) => toText(lines, newline)
        const chosen = baseAfterOwnWrites(text(base), [text(sent)], text(server))
        const {merged, backup} = mergeText(chosen, text(here), text(server))
        const kept = new Set([...merged.split('\n'), ...(backup ?? '').split('\n')])
        // The server's own lines, the user's newer ones, and ours wherever the server could not have removed them.
        for (const line of server.filter((l) => l.startsWith('B-'))) expect(merged.split('\n')).toContain(line)
        for (const line of here.filter((l) => l.startsWith('L-'))) expect(kept).toContain(line)
        for (const line of here.filter((l) => l.startsWith('A-') && (!landed || server.includes(l)))) expect(kept).toContain(line)
      }),
      RUNS,
    )
  })

  it('takes our text when the push landed and the server only added and removed lines of others on top', () => {
    fc.assert(
      fc.property(scenario, ({base, ours, theirs, newline}) => {
        const sent = edit(base, ours, 'A')
        // Another machine merged on top: new lines anywhere, and lines removed that are not ours.
        const server = edit(sent, theirs, 'B', (line) => line.startsWith('A-'))
        expect(holdsEdits(toText(base, newline), toText(sent, newline), toText(server, newline))).toBe(true)
      }),
      RUNS,
    )
  })

  it('keeps the old base when the push never landed and our text added a line', () => {
    fc.assert(
      fc.property(scenario, ({base, ours, theirs}) => {
        const sent = edit(base, ours, 'A')
        fc.pre(sent.some((line) => line.startsWith('A-')))
        const server = edit(base, theirs, 'B')
        expect(baseAfterOwnWrites(toText(base), [toText(sent)], toText(server))).toBe(toText(base))
      }),
      RUNS,
    )
  })

  describe('examples', () => {
    const base = 'head\nmid\ntail\n'
    const ours = 'head\nmid\ntail\nA-1\n'
    const local = 'head\nmid\ntail\nA-1\nA-2\n'

    it('another machine put a line before ours: our text is the base, the user’s newer line merges in cleanly', () => {
      const server = 'B-1\nhead\nmid\ntail\nA-1\n'
      const chosen = baseAfterOwnWrites(base, [ours], server)
      expect(chosen).toBe(ours)
      expect(mergeText(chosen, local, server)).toEqual({merged: 'B-1\nhead\nmid\ntail\nA-1\nA-2\n', conflicts: [], backup: null})
      // Against the old base, our own line met itself on the server's side: a conflict, the newer line in a backup.
      expect(mergeText(base, local, server).backup).toBe(local)
    })

    it('another machine wrote right after our line, or changed a line next to it: still ours', () => {
      expect(holdsEdits(base, ours, 'head\nmid\ntail\nA-1\nB-2\n')).toBe(true)
      expect(holdsEdits(base, ours, 'head\nmid\ntail, edited\nA-1\n')).toBe(true)
      expect(holdsEdits(base, 'head\nMID\ntail\n', 'head\nMID\nB-1\ntail\n')).toBe(true)
    })

    it('the push never landed, or the server lost a line of ours or has one we removed: the old base', () => {
      expect(baseAfterOwnWrites(base, [ours], 'B-1\nhead\nmid\ntail\n')).toBe(base)
      expect(holdsEdits(base, ours, 'head\nmid\ntail\nB-2\n')).toBe(false)
      expect(holdsEdits(base, 'head\ntail\n', 'head\nmid\ntail\nB-2\n')).toBe(false)
      expect(holdsEdits(base, 'head\nMID\ntail\n', 'head\nmid\nMID\ntail\n')).toBe(false)
    })

    it('the newest of our texts the server holds wins; without a base, none is taken', () => {
      const newer = `${ours}A-3\n`
      expect(baseAfterOwnWrites(base, [newer, ours], `B-1\n${ours}`)).toBe(ours)
      expect(baseAfterOwnWrites(base, [newer, ours], `B-1\n${newer}`)).toBe(newer)
      expect(baseAfterOwnWrites(null, [ours], `B-1\n${ours}`)).toBeNull()
    })

    it('reads CRLF as LF', () => {
      expect(holdsEdits(base.replace(/\n/g, '\r\n'), ours, 'B-1\r\nhead\r\nmid\r\ntail\r\nA-1\r\n')).toBe(true)
    })
  })
})
