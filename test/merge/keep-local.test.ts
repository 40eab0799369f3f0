/**
 * `jarvis resolve --keep local`, the pure part: your side of a conflict goes back where the two sides disagreed,
 * and nothing else of the file changes — the other side's clean edits, later edits, a newer side of yours.
 */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {localSideOf, putBack, replacedLines} from '../../src/merge/keep-local.js'
import {mergeText} from '../../src/merge/markdown.js'
import {applyEdits, distinctBase, edits, RUNS, toText} from './arbitraries.js'

const doc = (release: string, owner: string, x = 'x') => `title\nrelease: ${release}\n${x}\ny\nz\nowner: ${owner}\n`

describe('your side of a conflict', () => {
  it('is the merge where your lines win the overlap: the other side’s clean edit stays', () => {
    const base = doc('Friday', 'nobody')
    const local = doc('Tuesday', 'nobody')
    const remote = doc('Monday', 'gemini')
    expect(mergeText(base, local, remote).merged).toBe(doc('Monday', 'gemini')) // what the sync wrote
    expect(localSideOf('P.md', base, local, remote)).toBe(doc('Tuesday', 'gemini'))
  })

  it('in JSON, your value of the key both changed, their other keys', () => {
    const base = '{"release": "Friday", "owner": "nobody"}\n'
    const yours = localSideOf('projects.json', base, '{"release": "Tuesday", "owner": "nobody"}\n', '{"release": "Monday", "owner": "gemini"}\n')
    expect(JSON.parse(yours!)).toEqual({release: 'Tuesday', owner: 'gemini'})
  })

  it('does not exist for a file decided whole (a stamp, worker memory)', () => {
    expect(localSideOf('active_project.json', null, '{}', '{"projectId": "x"}')).toBeNull()
    expect(localSideOf('jarvis/claude.json', null, '{}', '{"lastActive": "2026-01-01T00:00:00.000Z"}')).toBeNull()
  })
})

describe('putBack', () => {
  const merged = doc('Monday', 'gemini')
  const yours = doc('Tuesday', 'gemini')

  it('into the file as the sync left it: your side, nothing to report; CRLF stays CRLF', () => {
    expect(putBack('P.md', merged, merged, yours)).toMatchObject({text: yours, notPutBack: []})
    const crlf = (text: string) => text.replace(/\n/g, '\r\n')
    expect(putBack('P.md', merged, crlf(merged), yours).text).toBe(crlf(yours))
  })

  it('keeps what was written since elsewhere in the file', () => {
    const since = `${merged}appended later\n`
    expect(putBack('P.md', merged, since, yours)).toMatchObject({text: `${yours}appended later\n`, notPutBack: []})
  })

  it('leaves a line changed since in the same place as it is, and says where and what', () => {
    const since = `preface\n${doc('Wednesday', 'gemini')}`
    const result = putBack('P.md', merged, since, yours)
    expect(result.text).toBe(since)
    expect(result.notPutBack).toEqual([{at: 'line 3', yours: 'release: Tuesday\n', now: 'release: Wednesday\n', superseded: false}])
  })

  it('puts an older conflict’s side back only where a newer one of yours did not replace it, line by line', () => {
    // Conflict 1: release and x both disagreed (touching lines); conflict 2, later: release again.
    const merged1 = doc('B1', 'nobody', 'xb')
    const yours1 = doc('A1', 'nobody', 'xa')
    const merged2 = doc('B2', 'nobody', 'xb')
    const yours2 = doc('A2', 'nobody', 'xb')
    const newest = putBack('P.md', merged2, merged2, yours2)
    expect(newest.text).toBe(yours2)
    const older = putBack('P.md', merged1, newest.text, yours1, newest.marks)
    expect(older.text).toBe(doc('A2', 'nobody', 'xa'))
    expect(older.notPutBack).toEqual([{at: 'line 2', yours: 'release: A1\n', now: 'release: A2\n', superseded: true}])
    // Without the newer put-back, the same line changed since is not superseded: it is another side's change.
    expect(putBack('P.md', merged1, merged2, yours1).notPutBack).toMatchObject([{at: 'line 2', superseded: false}])
  })

  it('in JSON: your keys back, a key changed since stays, a key a newer side of yours set is superseded', () => {
    const result = putBack('p.json', '{"a": 1, "b": 1, "c": 1}', '{"a": 1, "b": 5, "c": 1, "d": 0}', '{"a": 2, "b": 2, "c": 1}')
    expect(JSON.parse(result.text)).toEqual({a: 2, b: 5, c: 1, d: 0})
    expect(result.notPutBack).toEqual([{at: 'b', yours: '2', now: '5', superseded: false}])
    const newer = putBack('p.json', '{"b": 1}', '{"b": 1}', '{"b": 3}')
    expect(putBack('p.json', '{"b": 0}', newer.text, '{"b": 2}', newer.marks).notPutBack).toMatchObject([{at: 'b', superseded: true}])
  })

  it('into a file the sync left untouched gives exactly your side, and a second time changes nothing', () => {
    fc.assert(
      fc.property(distinctBase(), edits(), edits(), (base, mine, theirs) => {
        const [b, l, r] = [toText(base), toText(applyEdits(base, mine)), toText(applyEdits(base, theirs))]
        const merged = mergeText(b, l, r).merged
        const yours = localSideOf('n.md', b, l, r)!
        const once = putBack('n.md', merged, merged, yours)
        expect(once).toMatchObject({text: yours, notPutBack: []})
        expect(putBack('n.md', merged, once.text, yours)).toMatchObject({text: yours, notPutBack: []})
      }),
      RUNS,
    )
  })
})

describe('replacedLines', () => {
  it('names the lines of the file that writing a whole backup in its place takes away', () => {
    expect(replacedLines(doc('Monday', 'gemini'), doc('Tuesday', 'nobody'))).toEqual([
      {line: 2, text: 'release: Monday'},
      {line: 6, text: 'owner: gemini'},
    ])
    expect(replacedLines('a\n', 'a\nb\n')).toEqual([])
  })
})
