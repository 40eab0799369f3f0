/**
 * `POST /api/memory/sync-task`: folding one finished task into the agent's worker memory
 * (`jarvis/<agentId>.json`, seed 000 §4). Pure: the server passes `now`.
 */
import {joinRecentTasks} from '../merge/index.js'
import type {RecentTask, TaskResult, WorkerMemory} from '../schemas/index.js'

/** Most files kept in `context.lastFiles`. */
export const LAST_FILES_LIMIT = 50

/** Where an agent's worker memory lives, relative to `.memory/`. */
export function workerMemoryPath(agentId: string): string {
  return `jarvis/${agentId}.json`
}

/** The task as it is kept in `recentTasks`: the result without the fields that say whose it is. */
export function toRecentTask(task: TaskResult): RecentTask {
  const {agentId: _agentId, workerId: _workerId, modelId: _modelId, tokensUsed: _tokensUsed, ...recent} = task
  return recent
}

function round(value: number): number {
  return Math.round(value * 1e6) / 1e6
}

/** Whether `memory` already holds the task (then sync-task changes nothing). */
export function hasTask(memory: WorkerMemory | null, taskId: string): boolean {
  return memory?.recentTasks.some((task) => task.taskId === taskId) ?? false
}

/** A worker memory with nothing in it yet. */
export function emptyWorkerMemory(workerId: string): WorkerMemory {
  return {workerId, recentTasks: [], expertise: {}, context: {lastFiles: [], lastTopics: [], knownIssues: []}}
}

/**
 * The worker memory after one more finished task:
 * - `recentTasks`: the recent-task rule (union by taskId, newest first, 50 kept);
 * - `totalTasks` + 1; `successRate` (a fraction 0–1) and `performance.errorRate` recomputed over all tasks;
 *   `performance.averageResponseTime` a running mean when the task has a `responseTime`;
 *   `performance.totalTokensUsed` + `tokensUsed`;
 * - `lastActive` = now, `status` = online, `modelId` from the task when it names one;
 * - `context.lastFiles`: the task's `filesModified` first, then the earlier ones, without repeats, 50 kept.
 * A memory without `totalTasks` counts its recent tasks as the tasks so far.
 */
export function applyTaskResult(current: WorkerMemory | null, task: TaskResult, agentId: string, now: string): WorkerMemory {
  const base: WorkerMemory = current ?? emptyWorkerMemory(task.workerId ?? agentId)
  const previousTotal = base.totalTasks ?? base.recentTasks.length
  const total = previousTotal + 1
  const previousRate = base.successRate ?? (previousTotal === 0 ? 0 : base.recentTasks.filter((t) => t.success).length / Math.max(1, base.recentTasks.length))
  // A rate above 1 was written as a percentage by some other tool: read it as such.
  const previousFraction = previousRate > 1 ? previousRate / 100 : previousRate
  const successes = Math.round(previousFraction * previousTotal) + (task.success ? 1 : 0)
  const successRate = round(successes / total)

  const performance = {...base.performance}
  if (task.responseTime !== undefined) {
    const average = performance.averageResponseTime
    performance.averageResponseTime = round(average === undefined ? task.responseTime : average + (task.responseTime - average) / total)
  }
  if (task.tokensUsed !== undefined) performance.totalTokensUsed = (performance.totalTokensUsed ?? 0) + task.tokensUsed
  performance.errorRate = round(1 - successRate)

  const lastFiles = [...new Set([...(task.filesModified ?? []), ...base.context.lastFiles])].slice(0, LAST_FILES_LIMIT)
  // The worker's model: named by the task result, else kept, else the model this task ran on.
  const modelId = task.modelId ?? base.modelId ?? task.model

  return {
    ...base,
    ...(modelId === undefined ? {} : {modelId}),
    status: 'online',
    lastActive: now,
    totalTasks: total,
    successRate,
    recentTasks: joinRecentTasks(base.recentTasks, [toRecentTask(task)]) as RecentTask[],
    context: {...base.context, lastFiles},
    performance,
  }
}
