import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {exceedsDeletionGuard, planSync, type BaseEntry, type PlanInput, type RemoteEntry} from '../../src/sync/plan.js'
import {jsonStringBytes} from '../../src/sync/run.js'

const runs = {numRuns: 1000}
const paths = ['a.md', 'b.json', 'jarvis/claude.json', 'notes/x.md']
const hashes = ['h1', 'h2', 'h3']

/** A random three-way situation over a few paths: what the tree holds, what we recorded, what the server says. */
const situation = fc
  .record({
    local: fc.dictionary(fc.constantFrom(...paths), fc.constantFrom(...hashes), {maxKeys: 4}),
    base: fc.dictionary(fc.constantFrom(...paths), fc.record({hash: fc.constantFrom(...hashes), rev: fc.integer({min: 1, max: 3})}), {maxKeys: 4}),
    remote: fc.dictionary(
      fc.constantFrom(...paths),
      fc.record({hash: fc.constantFrom(...hashes), rev: fc.integer({min: 1, max: 3}), deleted: fc.boolean()}),
      {maxKeys: 4},
    ),
    incremental: fc.boolean(),
  })
  .map(
    ({local, base, remote, incremental}): PlanInput => ({
      mode: 'revision',
      local: new Map(Object.entries(local)),
      base: base as Record<string, BaseEntry>,
      remote: remote as Record<string, RemoteEntry>,
      remoteIsIncremental: incremental,
    }),
  )

describe('planSync', () => {
  it('does nothing when neither side changed since the base', () => {
    const base = {'a.md': {hash: 'h1', rev: 2}, 'b.json': {hash: 'h2', rev: 5}}
    const plan = planSync({mode: 'revision', local: new Map([['a.md', 'h1'], ['b.json', 'h2']]), base, remote: {'a.md': {hash: 'h1', rev: 2}, 'b.json': {hash: 'h2', rev: 5}}, remoteIsIncremental: false})
    expect(plan.actions).toEqual([])
  })

  it('pushes local-only changes, pulls remote-only ones, merges both', () => {
    const base = {'a.md': {hash: 'h1', rev: 1}, 'b.md': {hash: 'h1', rev: 1}, 'c.md': {hash: 'h1', rev: 1}}
    const plan = planSync({
      mode: 'revision',
      local: new Map([['a.md', 'h2'], ['b.md', 'h1'], ['c.md', 'h2']]),
      base,
      remote: {'a.md': {hash: 'h1', rev: 1}, 'b.md': {hash: 'h3', rev: 2}, 'c.md': {hash: 'h3', rev: 2}},
      remoteIsIncremental: false,
    })
    expect(plan.actions).toEqual([
      {kind: 'push', path: 'a.md', baseRev: 1},
      {kind: 'pull', path: 'b.md'},
      {kind: 'merge', path: 'c.md', baseRev: 2},
    ])
  })

  it('treats the same change on both sides as no conflict', () => {
    const plan = planSync({mode: 'revision', local: new Map([['a.md', 'h2']]), base: {'a.md': {hash: 'h1', rev: 1}}, remote: {'a.md': {hash: 'h2', rev: 2}}, remoteIsIncremental: false})
    expect(plan.actions).toEqual([{kind: 'record', path: 'a.md', remote: {hash: 'h2', rev: 2}}])
  })

  it('lets an edit beat a concurrent deletion, on either side', () => {
    const editedHereDeletedThere = planSync({mode: 'revision', local: new Map([['a.md', 'h2']]), base: {'a.md': {hash: 'h1', rev: 1}}, remote: {'a.md': {hash: 'h1', rev: 2, deleted: true}}, remoteIsIncremental: false})
    expect(editedHereDeletedThere.actions).toEqual([{kind: 'push', path: 'a.md', baseRev: 2}])
    const deletedHereEditedThere = planSync({mode: 'revision', local: new Map(), base: {'a.md': {hash: 'h1', rev: 1}}, remote: {'a.md': {hash: 'h3', rev: 2}}, remoteIsIncremental: false})
    expect(deletedHereEditedThere.actions).toEqual([{kind: 'pull', path: 'a.md'}])
  })

  it('decides timestamp-mode changes by the recorded updatedAt, never by local mtimes', () => {
    const base = {'a.md': {hash: 'h1', updatedAt: '2026-01-01T00:00:00Z'}}
    const unchanged = planSync({mode: 'timestamp', local: new Map([['a.md', 'h1']]), base, remote: {'a.md': {updatedAt: '2026-01-01T00:00:00Z'}}, remoteIsIncremental: false})
    expect(unchanged.actions).toEqual([])
    const changed = planSync({mode: 'timestamp', local: new Map([['a.md', 'h1']]), base, remote: {'a.md': {updatedAt: '2026-02-01T00:00:00Z'}}, remoteIsIncremental: false})
    expect(changed.actions).toEqual([{kind: 'pull', path: 'a.md'}])
  })

  it('never turns a missing base into a deletion', () => {
    fc.assert(
      fc.property(situation, (input) => {
        const plan = planSync(input)
        for (const action of plan.actions) {
          if (action.kind === 'delete-local' || action.kind === 'delete-remote') expect(input.base[action.path]).toBeDefined()
        }
      }),
      runs,
    )
  })

  it('loses no local change: a file that differs from its base is pushed, merged, or already equal on the server', () => {
    fc.assert(
      fc.property(situation, (input) => {
        const plan = planSync(input)
        for (const [path, hash] of input.local) {
          if (input.base[path]?.hash === hash) continue
          const action = plan.actions.find((a) => a.path === path)
          expect(action, `${path} changed locally but is not in the plan`).toBeDefined()
          expect(['push', 'merge', 'record']).toContain(action!.kind)
          if (action!.kind === 'record') expect(input.remote[path]?.hash ?? input.base[path]?.hash).toBe(hash)
        }
      }),
      runs,
    )
  })

  it('never deletes a local file that changed since its base', () => {
    fc.assert(
      fc.property(situation, (input) => {
        for (const action of planSync(input).actions) {
          if (action.kind === 'delete-local') expect(input.local.get(action.path)).toBe(input.base[action.path].hash)
        }
      }),
      runs,
    )
  })

  it('recognises its own unacknowledged push on the server and pushes over it instead of merging', () => {
    // We pushed h2 and were killed before the answer; since then the user edited again (h3).
    const plan = planSync({mode: 'revision', local: new Map([['a.md', 'h3']]), base: {'a.md': {hash: 'h1', rev: 1}}, remote: {'a.md': {hash: 'h2', rev: 2}}, remoteIsIncremental: false, pending: {'a.md': ['h2']}})
    expect(plan.actions).toEqual([{kind: 'push', path: 'a.md', baseRev: 2}])
    // Someone else's write is still merged.
    const other = planSync({mode: 'revision', local: new Map([['a.md', 'h3']]), base: {'a.md': {hash: 'h1', rev: 1}}, remote: {'a.md': {hash: 'h9', rev: 3}}, remoteIsIncremental: false, pending: {'a.md': ['h2']}})
    expect(other.actions).toEqual([{kind: 'merge', path: 'a.md', baseRev: 3}])
    // h2 landed unanswered, then h3 never landed: the server's h2 is still ours.
    const earlier = planSync({mode: 'revision', local: new Map([['a.md', 'h4']]), base: {'a.md': {hash: 'h1', rev: 1}}, remote: {'a.md': {hash: 'h2', rev: 2}}, remoteIsIncremental: false, pending: {'a.md': ['h2', 'h3']}})
    expect(earlier.actions).toEqual([{kind: 'push', path: 'a.md', baseRev: 2}])
  })

  it('a server that forgot a file gets it back instead of deleting it here', () => {
    const plan = planSync({mode: 'revision', local: new Map([['a.md', 'h1']]), base: {'a.md': {hash: 'h1', rev: 4}}, remote: {}, remoteIsIncremental: false})
    expect(plan.actions).toEqual([{kind: 'push', path: 'a.md', baseRev: null}])
  })

  it('reads silence in an incremental listing as "unchanged since the base"', () => {
    const plan = planSync({mode: 'revision', local: new Map([['a.md', 'h1']]), base: {'a.md': {hash: 'h1', rev: 4}}, remote: {}, remoteIsIncremental: true})
    expect(plan.actions).toEqual([])
  })

  it('plans an incremental listing as the full listing it stands for (silence: the base entry), looking only at changed paths', () => {
    fc.assert(
      fc.property(situation, fc.subarray(paths), (input, skipped) => {
        const incremental = {...input, remoteIsIncremental: true, skip: new Set(skipped)}
        const full: Record<string, RemoteEntry> = {...input.remote}
        for (const [path, entry] of Object.entries(input.base)) full[path] ??= {...entry}
        expect(planSync(incremental)).toEqual(planSync({...incremental, remote: full, remoteIsIncremental: false}))
      }),
      runs,
    )
  })

  it('leaves skipped (malformed) files out of the plan entirely', () => {
    const plan = planSync({mode: 'revision', local: new Map([['b.json', 'h9']]), base: {'b.json': {hash: 'h1', rev: 1}}, remote: {'b.json': {hash: 'h2', rev: 2}}, remoteIsIncremental: false, skip: new Set(['b.json'])})
    expect(plan.actions).toEqual([])
  })

  it('stops a sync that would delete more than half of the known files', () => {
    const base = Object.fromEntries(['a', 'b', 'c', 'd'].map((n) => [`${n}.md`, {hash: 'h1', rev: 1}]))
    const remote = Object.fromEntries(['a', 'b', 'c', 'd'].map((n) => [`${n}.md`, {hash: 'h1', rev: 1}]))
    const three = planSync({mode: 'revision', local: new Map([['d.md', 'h1']]), base, remote, remoteIsIncremental: false})
    expect(three.deletions).toBe(3)
    expect(exceedsDeletionGuard(three)).toBe(true)
    const two = planSync({mode: 'revision', local: new Map([['c.md', 'h1'], ['d.md', 'h1']]), base, remote, remoteIsIncremental: false})
    expect(exceedsDeletionGuard(two)).toBe(false)
  })
})

describe('the size of a push batch', () => {
  it('counts each text as exactly the bytes of its JSON string, control characters, quotes and lone surrogates included', () => {
    const unit = fc.oneof(fc.constantFrom('"', '\\', '\n', '\r', '\t', '\b', '\f', '\u0000', '\u001f', '\u2028', '\ud800', '\udfff', 'é', '😀'), fc.integer({min: 0, max: 0xffff}).map((code) => String.fromCharCode(code)))
    fc.assert(
      fc.property(fc.string({unit}), (text) => {
        expect(jsonStringBytes(text)).toBe(Buffer.byteLength(JSON.stringify(text)))
      }),
      {numRuns: 2000},
    )
  })
})
