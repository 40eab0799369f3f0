import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {joinRecentTasks, mergeRecentTasks, RECENT_TASK_LIMIT} from '../../src/merge/recent-tasks.js'
import {compareStamps} from '../../src/merge/lww.js'
import type {RecentTask} from '../../src/merge/types.js'
import {RUNS, stamp} from './arbitraries.js'

const task = fc.record({
  taskId: fc.constantFrom('t1', 't2', 't3', 't4', 't5', 't6', 't7', 't8', 't9'),
  timestamp: stamp,
  type: fc.constant('code'),
  output: fc.constantFrom('ok', 'failed'),
  success: fc.boolean(),
}) as fc.Arbitrary<RecentTask>
const list = fc.array(task, {maxLength: 9})
const LIMIT = 5 // small, so truncation is exercised by almost every case

function at(minute: number, taskId: string, extra: object = {}): RecentTask {
  return {taskId, timestamp: new Date(Date.UTC(2025, 0, 1, 0, minute)).toISOString(), ...extra}
}

describe('joinRecentTasks laws (limit 5)', () => {
  it('is commutative, associative and idempotent', () => {
    fc.assert(
      fc.property(list, list, list, (a, b, c) => {
        expect(joinRecentTasks(a, b, LIMIT)).toEqual(joinRecentTasks(b, a, LIMIT))
        expect(joinRecentTasks(joinRecentTasks(a, b, LIMIT), c, LIMIT)).toEqual(joinRecentTasks(a, joinRecentTasks(b, c, LIMIT), LIMIT))
        expect(joinRecentTasks(a, a, LIMIT)).toEqual(joinRecentTasks(a, [], LIMIT))
        const ab = joinRecentTasks(a, b, LIMIT)
        expect(joinRecentTasks(ab, b, LIMIT)).toEqual(ab)
      }),
      RUNS,
    )
  })

  it('keeps one version per taskId, newest first, at most the limit', () => {
    fc.assert(
      fc.property(list, list, (a, b) => {
        const merged = joinRecentTasks(a, b, LIMIT)
        expect(new Set(merged.map((t) => t.taskId)).size).toBe(merged.length)
        expect(merged.length).toBeLessThanOrEqual(LIMIT)
        merged.slice(1).forEach((t, i) => expect(compareStamps(merged[i].timestamp, t.timestamp)).toBeGreaterThanOrEqual(0))
      }),
      RUNS,
    )
  })

  it('loses no local task unless `limit` newer tasks outrank it', () => {
    fc.assert(
      fc.property(list, list, (local, remote) => {
        const merged = joinRecentTasks(local, remote, LIMIT)
        for (const t of local) {
          if (merged.some((m) => m.taskId === t.taskId)) continue
          expect(merged).toHaveLength(LIMIT)
          expect(compareStamps(merged[LIMIT - 1].timestamp, t.timestamp)).toBeGreaterThanOrEqual(0)
        }
      }),
      RUNS,
    )
  })
})

describe('mergeRecentTasks', () => {
  it('keeps exactly the newest 50 of 60 + 60 distinct tasks', () => {
    const local = Array.from({length: 60}, (_, i) => at(2 * i, `local-${i}`))
    const remote = Array.from({length: 60}, (_, i) => at(2 * i + 1, `remote-${i}`))
    const merged = mergeRecentTasks(null, local, remote).merged
    const expected = [...local, ...remote].sort((x, y) => y.timestamp.localeCompare(x.timestamp)).slice(0, RECENT_TASK_LIMIT)
    expect(merged).toEqual(expected)
    expect(merged.at(-1)).toEqual(at(70, 'local-35'))
  })

  it('breaks timestamp ties at the 50 boundary by taskId', () => {
    const local = Array.from({length: 30}, (_, i) => at(1, `b${String(i).padStart(2, '0')}`))
    const remote = Array.from({length: 30}, (_, i) => at(1, `a${String(i).padStart(2, '0')}`))
    const merged = mergeRecentTasks(null, local, remote).merged
    expect(merged.map((t) => t.taskId)).toEqual([...remote, ...local.slice(0, 20)].map((t) => t.taskId))
    expect(mergeRecentTasks(null, remote, local).merged).toEqual(merged)
  })

  it('resolves two versions of one task: newer timestamp, then canonical JSON, the same from both sides', () => {
    const older = at(1, 't1', {output: 'draft'})
    const newer = at(2, 't1', {output: 'final'})
    expect(mergeRecentTasks(null, [older], [newer]).merged).toEqual([newer])
    const x = at(1, 't1', {output: 'a'})
    const y = at(1, 't1', {output: 'b'})
    expect(mergeRecentTasks(null, [x], [y]).merged).toEqual(mergeRecentTasks(null, [y], [x]).merged)
    expect(mergeRecentTasks(null, [x], [y]).conflicts).toMatchObject([{kind: 'task', at: 'recentTasks[t1]'}])
  })

  it('takes the side that changed a task even when the stale copy would win the tie-break', () => {
    const base = at(1, 't1', {output: 'zzz stale'})
    const updated = at(1, 't1', {output: 'aaa result'})
    expect(mergeRecentTasks([base], [base], [updated])).toEqual({merged: [updated], conflicts: [], backup: null})
    expect(mergeRecentTasks([base], [updated], [base]).merged).toEqual([updated])
  })

  it('returns a normalised list unchanged: merge(x, x, x) = x', () => {
    fc.assert(
      fc.property(list, (raw) => {
        const x = joinRecentTasks(raw, [])
        expect(mergeRecentTasks(x, x, x).merged).toEqual(x)
      }),
      RUNS,
    )
  })

  it('sorts unparsable timestamps last and keeps entries without a taskId', () => {
    const junk = {taskId: 't0', timestamp: 'soon'}
    const anonymous = {timestamp: '2025-01-01T00:00:00Z', note: 'no id'} as unknown as RecentTask
    expect(mergeRecentTasks(null, [junk, anonymous], [at(5, 't5'), anonymous]).merged).toEqual([at(5, 't5'), anonymous, junk])
  })

  it('does not modify its inputs', () => {
    const local = [at(3, 't3'), at(1, 't1')]
    const remote = [at(2, 't2')]
    const snapshot = JSON.stringify([local, remote])
    mergeRecentTasks(null, local, remote)
    expect(JSON.stringify([local, remote])).toBe(snapshot)
  })
})
