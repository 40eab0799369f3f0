import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {planFile, planReplica, type ReplicaAction, type ReplicaSides, type SideWrite} from '../../src/replica/plan.js'

const runs = {numRuns: 2000}
const LINES = ['a\n', 'b\n', 'c\n', 'd\n', 'e']

const text = fc.array(fc.constantFrom(...LINES), {maxLength: 6}).map((lines) => lines.join(''))
/** A side: as the base, gone, rewritten, or the base with one line inserted or replaced. */
function sideOf(base: string | null): fc.Arbitrary<string | null> {
  const lines = base === null ? [] : base.split(/(?<=\n)/)
  const edited = fc.tuple(fc.nat(lines.length), fc.constantFrom(...LINES), fc.boolean()).map(([at, line, replace]) => {
    const copy = [...lines]
    copy.splice(at, replace ? 1 : 0, line.endsWith('\n') ? line : `${line}\n`)
    return copy.join('')
  })
  return fc.oneof(fc.constant(base), fc.constant(null), text, edited)
}
const file = (name: string) =>
  fc.option(text, {nil: null}).chain((base) =>
    fc.record({base: fc.constant(base), workspace: sideOf(base), memory: sideOf(base)}).map((sides): ReplicaSides => ({memoryPath: `openclaw/${name}.md`, workspacePath: `${name}.md`, ...sides})),
  )
const files = fc.tuple(file('a'), file('b'), file('c'), file('d'))

function after(current: string | null, write: SideWrite): string | null {
  return write.op === 'keep' ? current : write.op === 'write' ? write.text : null
}

/** The three copies once an action ran: what the executor writes. */
function apply(f: ReplicaSides, a: ReplicaAction | undefined): ReplicaSides {
  if (!a) return f
  return {...f, workspace: after(f.workspace, a.workspace), memory: after(f.memory, a.memory), base: a.base}
}

function run(input: ReplicaSides[], force = true) {
  const plan = planReplica(input, {force})
  const byPath = new Map(plan.actions.map((a) => [a.memoryPath, a]))
  return {plan, output: input.map((f) => apply(f, byPath.get(f.memoryPath))), byPath}
}

describe('planReplica (pure)', () => {
  it('converges: after one replication both sides and the base hold the same text', () => {
    fc.assert(
      fc.property(files, (input) => {
        for (const f of run(input).output) {
          expect(f.workspace).toBe(f.memory)
          expect(f.base).toBe(f.memory)
        }
      }),
      runs,
    )
  })

  it('is idempotent: replicating again plans nothing', () => {
    fc.assert(
      fc.property(files, (input) => {
        const again = planReplica(run(input).output, {force: true})
        expect(again.actions).toEqual([])
        expect(again.held).toEqual([])
      }),
      runs,
    )
  })

  it('loses nothing: every edited side ends up whole in the result or the backup, or its new lines are in the merge', () => {
    fc.assert(
      fc.property(files, (input) => {
        const {output, byPath} = run(input)
        input.forEach((before, i) => {
          const action = byPath.get(before.memoryPath)
          for (const side of [before.workspace, before.memory]) {
            if (side === null || side === before.base) continue
            const final = output[i].memory
            if (final === side || action?.backup === side) continue
            // A clean merge, or the side that won the overlapping lines (the other side's other edits merged in).
            expect(action?.kind).toBe('merge')
            const baseLines = new Set((before.base ?? '').split(/(?<=\n)/))
            for (const line of side.split(/(?<=\n)/).filter((l) => !baseLines.has(l))) expect(final).toContain(line.replace(/\n$/, ''))
          }
        })
      }),
      runs,
    )
  })

  it('deletes only what the base proves existed and the other side left untouched', () => {
    fc.assert(
      fc.property(files, (input) => {
        const {byPath} = run(input)
        for (const before of input) {
          const action = byPath.get(before.memoryPath)
          if (action?.kind === 'delete-memory') expect([before.base, before.memory, before.workspace]).toEqual([before.memory, before.base, null])
          if (action?.kind === 'delete-workspace') expect([before.base, before.workspace, before.memory]).toEqual([before.workspace, before.base, null])
          if (before.base === null) expect(action?.memory.op ?? 'keep').not.toBe('delete')
          if (before.base === null) expect(action?.workspace.op ?? 'keep').not.toBe('delete')
        }
      }),
      runs,
    )
  })

  const sides = (workspace: string | null, memory: string | null, base: string | null): ReplicaSides => ({memoryPath: 'openclaw/MEMORY.md', workspacePath: 'MEMORY.md', workspace, memory, base})

  it('copies a one-sided change to the other side', () => {
    expect(planFile(sides('a\nb\n', 'a\n', 'a\n'))).toMatchObject({kind: 'to-memory', memory: {op: 'write', text: 'a\nb\n'}, workspace: {op: 'keep'}, base: 'a\nb\n'})
    expect(planFile(sides('a\n', 'a\nc\n', 'a\n'))).toMatchObject({kind: 'to-workspace', workspace: {op: 'write', text: 'a\nc\n'}, memory: {op: 'keep'}})
    expect(planFile(sides('a\n', 'a\n', 'a\n'))).toBeNull()
  })

  it('merges edits of different lines, and keeps the workspace text as the backup on an overlap', () => {
    const clean = planFile(sides('A\nb\nc\n', 'a\nb\nC\n', 'a\nb\nc\n'))
    expect(clean).toMatchObject({kind: 'merge', base: 'A\nb\nC\n', backup: null, conflicts: []})
    const overlap = planFile(sides('a\nX\nc\n', 'a\nY\nc\n', 'a\nb\nc\n'))
    expect(overlap).toMatchObject({kind: 'merge', base: 'a\nY\nc\n', backup: 'a\nX\nc\n', workspace: {op: 'write', text: 'a\nY\nc\n'}, memory: {op: 'keep'}})
    expect(overlap!.conflicts).toEqual([{kind: 'lines', at: 'line 2', kept: 'memory'}])
  })

  it('lets an edit beat a deletion, and never deletes without a base', () => {
    expect(planFile(sides(null, 'a\nb\n', 'a\n'))).toMatchObject({kind: 'to-workspace', conflicts: [{kind: 'edit-delete', kept: 'memory'}]})
    expect(planFile(sides('a\nb\n', null, 'a\n'))).toMatchObject({kind: 'to-memory', conflicts: [{kind: 'edit-delete', kept: 'workspace'}]})
    expect(planFile(sides(null, 'a\n', null))).toMatchObject({kind: 'to-workspace', conflicts: []})
    expect(planFile(sides(null, 'a\n', 'a\n'))).toMatchObject({kind: 'delete-memory', memory: {op: 'delete'}, base: null})
  })

  it('holds back a replication that would delete more than half of the known files, unless forced', () => {
    const wiped = ['1', '2', '3'].map((n): ReplicaSides => ({memoryPath: `openclaw/daily/${n}.md`, workspacePath: `memory/${n}.md`, base: 'x\n', memory: 'x\n', workspace: null}))
    const held = planReplica([...wiped, sides('k\n', 'k\n', 'k\n')])
    expect(held.actions).toEqual([])
    expect(held.held.map((a) => a.kind)).toEqual(['delete-memory', 'delete-memory', 'delete-memory'])
    expect(planReplica(wiped, {force: true}).actions).toHaveLength(3)
    expect(planReplica([wiped[0], sides('k\n', 'k\n', 'k\n')]).actions).toHaveLength(1) // one deletion of several is not held
  })

  it('holds back every file of one side vanishing at once, even a single one, unless forced', () => {
    const only = (side: 'workspace' | 'memory'): ReplicaSides => ({memoryPath: 'openclaw/MEMORY.md', workspacePath: 'MEMORY.md', base: 'x\n', memory: 'x\n', workspace: 'x\n', [side]: null})
    for (const side of ['workspace', 'memory'] as const) {
      const held = planReplica([only(side)])
      expect(held.actions).toEqual([])
      expect(held.held.map((a) => a.kind)).toEqual([side === 'workspace' ? 'delete-memory' : 'delete-workspace'])
      expect(planReplica([only(side)], {force: true}).actions).toHaveLength(1)
    }
  })
})
