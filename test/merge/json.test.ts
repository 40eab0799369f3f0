import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {hasOwn, isPlainObject, jsonEqual} from '../../src/merge/canonical.js'
import {mergeJson} from '../../src/merge/json.js'
import {RUNS} from './arbitraries.js'

const leaf = fc.oneof(fc.constantFrom(1, 2, 'x', 'y', true, null), fc.array(fc.constantFrom(1, 2), {maxLength: 2}))
const {doc} = fc.letrec((tie) => ({
  doc: fc.dictionary(fc.constantFrom('a', 'b', 'c', '__proto__'), fc.oneof({maxDepth: 2}, leaf, tie('doc')), {maxKeys: 3}),
}))

const ABSENT = '\u0000absent' // never produced by the generators

/** Every value `side` changed relative to `base` is in `merged` (deletions are not checked: an edit may beat them). */
function changesKept(base: unknown, side: unknown, merged: unknown): boolean {
  if (jsonEqual(base, side)) return true
  if (isPlainObject(side) && isPlainObject(merged)) {
    const b = isPlainObject(base) ? base : {}
    return Object.keys(side).every((key) => changesKept(hasOwn(b, key) ? b[key] : ABSENT, side[key], hasOwn(merged, key) ? merged[key] : ABSENT))
  }
  return jsonEqual(side, merged)
}

const projects = {
  alpha: {name: 'Alpha', status: 'active', owner: 'sam'},
  beta: {name: 'Beta', status: 'paused'},
}

describe('mergeJson examples', () => {
  it('merges changes to different keys, recursively', () => {
    const local = {...projects, alpha: {...projects.alpha, status: 'done'}}
    const remote = {...projects, alpha: {...projects.alpha, owner: 'ana'}, gamma: {name: 'Gamma'}}
    expect(mergeJson(projects, local, remote)).toEqual({
      merged: {alpha: {name: 'Alpha', status: 'done', owner: 'ana'}, beta: projects.beta, gamma: {name: 'Gamma'}},
      conflicts: [],
      backup: null,
    })
  })

  it('lets remote win a key both changed and keeps the local document as backup', () => {
    const local = {...projects, beta: {...projects.beta, status: 'active'}}
    const remote = {...projects, beta: {...projects.beta, status: 'archived'}}
    expect(mergeJson(projects, local, remote)).toEqual({
      merged: remote,
      conflicts: [{kind: 'key', at: 'beta.status', winner: 'remote', local: 'active', remote: 'archived'}],
      backup: local,
    })
  })

  it('deletes a key deleted on one side and unchanged on the other; an edit beats a deletion', () => {
    const {beta: _beta, ...withoutBeta} = projects
    expect(mergeJson(projects, withoutBeta, projects).merged).toEqual(withoutBeta)
    const edited = {...projects, beta: {...projects.beta, status: 'active'}}
    expect(mergeJson(projects, withoutBeta, edited)).toEqual({
      merged: edited,
      conflicts: [{kind: 'edit-delete', at: 'beta', winner: 'remote', local: null, remote: edited.beta}],
      backup: null,
    })
    expect(mergeJson(projects, edited, withoutBeta).merged).toEqual(edited)
  })

  it('sees no conflict when both sides made the same change', () => {
    const both = {...projects, beta: {...projects.beta, status: 'done'}}
    expect(mergeJson(projects, both, structuredClone(both))).toMatchObject({conflicts: [], backup: null})
  })

  it('merges two-way when there is no base: union of keys, remote wins differences', () => {
    expect(mergeJson(null, {a: 1, b: 2}, {b: 2, c: 3})).toEqual({merged: {b: 2, c: 3, a: 1}, conflicts: [], backup: null})
    expect(mergeJson(null, {a: 1}, {a: 2})).toMatchObject({merged: {a: 2}, backup: {a: 1}})
  })

  it('keeps a key named __proto__ as data', () => {
    const local = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}')
    const merged = mergeJson({a: 1}, local, {a: 1, b: 2}).merged as Record<string, unknown>
    expect(JSON.stringify(merged)).toBe('{"a":1,"b":2,"__proto__":{"polluted":true}}')
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })
})

describe('mergeJson properties', () => {
  it('merge(x, x, x) = x and a side equal to the base takes the other', () => {
    fc.assert(
      fc.property(doc, doc, (b, x) => {
        expect(mergeJson(x, x, x).merged).toEqual(x)
        expect(mergeJson(b, x, b)).toEqual({merged: x, conflicts: [], backup: null})
        expect(mergeJson(b, b, x)).toEqual({merged: x, conflicts: [], backup: null})
      }),
      RUNS,
    )
  })

  it('loses nothing: local changes are merged or backed up; remote changes are always merged', () => {
    fc.assert(
      fc.property(fc.option(doc), doc, doc, (b, l, r) => {
        const result = mergeJson(b, l, r)
        expect(result.backup === l || changesKept(b, l, result.merged)).toBe(true)
        expect(changesKept(b, r, result.merged)).toBe(true)
        expect(result.backup === null || result.conflicts.some((c) => c.kind === 'key')).toBe(true)
      }),
      RUNS,
    )
  })

  it('does not modify its inputs', () => {
    fc.assert(
      fc.property(doc, doc, doc, (b, l, r) => {
        const before = JSON.stringify([b, l, r])
        mergeJson(b, l, r)
        expect(JSON.stringify([b, l, r])).toBe(before)
      }),
      RUNS,
    )
  })
})
