import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {mergeRecentTasks} from '../../src/merge/recent-tasks.js'
import type {RecentTask, WorkerMemory} from '../../src/merge/types.js'
import {mergeWorkerMemory} from '../../src/merge/worker-memory.js'
import {RUNS, stamp} from './arbitraries.js'

function task(taskId: string, minute: number): RecentTask {
  return {
    taskId,
    timestamp: new Date(Date.UTC(2025, 4, 1, 9, minute)).toISOString(),
    type: 'code',
    input: `task ${taskId}`,
    output: 'done',
    success: true,
    responseTime: 1200,
    model: 'gemini-2.5-pro',
    filesModified: ['src/a.ts'],
  }
}

/** The seed 000 §4 shape. */
const base = {
  workerId: 'gemini',
  modelId: 'gemini-2.5-pro',
  status: 'online',
  lastActive: '2025-05-01T09:10:00.000Z',
  totalTasks: 2,
  successRate: 1,
  recentTasks: [task('t2', 5), task('t1', 1)],
  expertise: {typescript: 0.8},
  context: {lastFiles: ['src/a.ts'], lastTopics: ['sync'], knownIssues: []},
  performance: {averageResponseTime: 1200, totalTokensUsed: 5000, errorRate: 0},
} satisfies WorkerMemory

describe('mergeWorkerMemory', () => {
  it('merges two machines that worked as the same agent at once', () => {
    const local: WorkerMemory = {
      ...base,
      status: 'busy',
      lastActive: '2025-05-01T09:30:00.000Z',
      totalTasks: 3,
      recentTasks: [task('t3', 30), ...base.recentTasks],
      expertise: {typescript: 0.9},
      context: {...base.context, lastFiles: ['src/merge.ts', 'src/a.ts']},
      performance: {...base.performance, totalTokensUsed: 7000},
    }
    const remote: WorkerMemory = {
      ...base,
      status: 'offline',
      lastActive: '2025-05-01T09:20:00.000Z',
      recentTasks: [task('t4', 20), ...base.recentTasks],
      expertise: {typescript: 0.8, python: 0.5},
      context: {...base.context, knownIssues: ['flaky e2e']},
      performance: {...base.performance, totalTokensUsed: 6500, errorRate: 0.1},
      dashboardNote: 'added by a newer server',
    }
    const result = mergeWorkerMemory(base, local, remote)
    expect(result.merged).toEqual({
      ...local,
      recentTasks: [task('t3', 30), task('t4', 20), task('t2', 5), task('t1', 1)],
      expertise: {typescript: 0.9, python: 0.5},
      context: {lastFiles: ['src/merge.ts', 'src/a.ts'], lastTopics: ['sync'], knownIssues: ['flaky e2e']},
      performance: {averageResponseTime: 1200, totalTokensUsed: 7000, errorRate: 0.1},
      dashboardNote: 'added by a newer server',
    })
    expect(result.conflicts).toEqual([
      {kind: 'lww', at: 'status', winner: 'local', local: 'busy', remote: 'offline'},
      {kind: 'lww', at: 'performance.totalTokensUsed', winner: 'local', local: 7000, remote: 6500},
    ])
    expect(result.backup).toBeNull()
  })

  it('unions expertise keys (a topic dropped on one side survives) and takes the newer side for a shared key', () => {
    const local = {...base, lastActive: '2025-05-01T10:00:00Z', expertise: {rust: 0.2}}
    const remote = {...base, lastActive: '2025-05-01T09:00:00Z', expertise: {typescript: 0.7, go: 0.4}}
    expect(mergeWorkerMemory(base, local, remote).merged.expertise).toEqual({rust: 0.2, typescript: 0.7, go: 0.4})
    const both = {...remote, expertise: {typescript: 0.6}}
    expect(mergeWorkerMemory(base, {...local, expertise: {typescript: 0.95}}, both).merged.expertise).toEqual({typescript: 0.95})
  })

  it('takes a list changed on one side only as it is, so removals are not undone', () => {
    const local = {...base, lastActive: '2025-05-01T10:00:00Z', status: 'busy'}
    const remote = {...base, context: {...base.context, lastFiles: []}, recentTasks: [task('t2', 5)]}
    const merged = mergeWorkerMemory(base, local, remote).merged
    expect(merged.context?.lastFiles).toEqual([])
    expect(merged.recentTasks).toEqual([task('t2', 5)])
  })
})

const worker = fc.record({
  status: fc.constantFrom('online', 'offline', 'busy'),
  lastActive: stamp,
  totalTasks: fc.nat(3),
  recentTasks: fc.array(fc.record({taskId: fc.constantFrom('t1', 't2', 't3'), timestamp: stamp, output: fc.constantFrom('a', 'b')}), {maxLength: 3}),
  expertise: fc.dictionary(fc.constantFrom('ts', 'py'), fc.constantFrom(0.1, 0.5)),
  context: fc.record({lastFiles: fc.array(fc.constantFrom('a', 'b', 'c'), {maxLength: 3})}),
  extra: fc.constantFrom('x', 'y'),
}) as fc.Arbitrary<WorkerMemory>

describe('mergeWorkerMemory properties', () => {
  it('merge(x, x, x) = x', () => {
    fc.assert(
      fc.property(worker, (x) => {
        expect(mergeWorkerMemory(x, x, x).merged).toEqual(x)
      }),
      RUNS,
    )
  })

  it('reaches byte-identical JSON whichever side merges', () => {
    fc.assert(
      fc.property(fc.option(worker), worker, worker, (b, l, r) => {
        expect(JSON.stringify(mergeWorkerMemory(b, l, r).merged)).toBe(JSON.stringify(mergeWorkerMemory(b, r, l).merged))
      }),
      RUNS,
    )
  })

  it('applies the recent-task rule when both sides changed the list', () => {
    fc.assert(
      fc.property(worker, worker, worker, (b, l, r) => {
        fc.pre(JSON.stringify(l.recentTasks) !== JSON.stringify(r.recentTasks))
        fc.pre(JSON.stringify(b.recentTasks) !== JSON.stringify(l.recentTasks) && JSON.stringify(b.recentTasks) !== JSON.stringify(r.recentTasks))
        expect(mergeWorkerMemory(b, l, r).merged.recentTasks).toEqual(mergeRecentTasks(b.recentTasks!, l.recentTasks!, r.recentTasks!).merged)
      }),
      RUNS,
    )
  })
})
