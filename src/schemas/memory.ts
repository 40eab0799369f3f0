/**
 * The synchronized `.memory/` files of seed 000 §4 and the task result of `POST /api/memory/sync-task`.
 * Every object is loose: fields a newer client adds survive a read-modify-write (seed 001 §12).
 */
import {z} from 'zod'

import {agentIdSchema, isoDateTimeSchema, noNul} from './common.js'

/** `active_project.json`: last-writer-wins on `switchedAt` (CONTRACT §1). */
/** Where the active project lives in `.memory/` and on the server. */
export const ACTIVE_PROJECT_FILE = 'active_project.json'

export const activeProjectSchema = z
  .looseObject({
    projectId: z.string().min(1).max(200),
    switchedAt: isoDateTimeSchema,
    switchedBy: z.enum(['system', 'user-cli', 'user-web']),
  })
  .meta({title: 'Active project', description: '.memory/active_project.json and the answer of GET/POST /api/projects/active'})
export type ActiveProject = z.output<typeof activeProjectSchema>

const names = z.array(z.string()).default([])

/** `context_map.json`, written by `jarvis context map`; last-writer-wins on `timestamp`. */
export const contextMapSchema = z.lazy(() =>
  z
    .looseObject({
      timestamp: isoDateTimeSchema,
      structure: z
        .looseObject({pages: names, components: names, api: names, lib: names, styles: names, scripts: names})
        // prefault, not default: zod 4 returns a default untouched, while a prefault is parsed so the lists above fill in.
        .prefault({}),
      database: z.looseObject({models: names, enums: names}).prefault({}),
      config: z.record(z.string(), z.unknown()).default({}),
    })
    .meta({title: 'Context map', description: '.memory/context_map.json'}),
)
export type ContextMap = z.output<typeof contextMapSchema>
export type ContextMapInput = z.input<typeof contextMapSchema>

/**
 * One finished task. Required: what identifies it (`taskId`), orders it (`timestamp`), and what a reader needs to
 * make sense of it (`type`, `success`). The rest is optional because a seed-style client may leave it out, but a
 * field that is present must have the seed's type.
 */
export const recentTaskSchema = z.lazy(() =>
  z.looseObject({
    taskId: z.string().min(1),
    timestamp: isoDateTimeSchema,
    type: z.string().min(1),
    input: z.string().optional(),
    output: z.string().optional(),
    success: z.boolean(),
    /** Milliseconds. */
    responseTime: z.number().nonnegative().optional(),
    model: z.string().optional(),
    filesModified: z.array(z.string()).optional(),
  }),
)
export type RecentTask = z.output<typeof recentTaskSchema>

/**
 * `jarvis/<agentId>.json`. Only `workerId` is required. Lists and maps default to empty so the merge rules
 * (recent-task union, list and map unions) always have something to merge; scalars stay optional rather than
 * get an invented value, which last-writer-wins would then treat as real.
 */
export const workerMemorySchema = z.lazy(() =>
  z
    .looseObject({
      workerId: z.string().min(1),
      modelId: z.string().optional(),
      status: z.enum(['online', 'offline', 'busy']).optional(),
      lastActive: isoDateTimeSchema.optional(),
      totalTasks: z.number().int().nonnegative().optional(),
      successRate: z.number().nonnegative().optional(),
      recentTasks: z.array(recentTaskSchema.unwrap()).default([]),
      expertise: z.record(z.string(), z.number()).default({}),
      context: z.looseObject({lastFiles: names, lastTopics: names, knownIssues: names}).prefault({}),
      performance: z
        .looseObject({
          averageResponseTime: z.number().nonnegative().optional(),
          totalTokensUsed: z.number().int().nonnegative().optional(),
          errorRate: z.number().nonnegative().optional(),
        })
        .optional(),
    })
    .meta({title: 'Worker memory', description: '.memory/jarvis/<agentId>.json and the answer of POST /api/memory/sync-task'}),
)
export type WorkerMemory = z.output<typeof workerMemorySchema>
export type WorkerMemoryInput = z.input<typeof workerMemorySchema>

/**
 * Body of `POST /api/memory/sync-task`: one recent task, flat as in seed 000, plus whose it is.
 * `agentId` and `workerId` are optional: the server takes the agent from the bearer token (CONTRACT §3) and
 * refuses a body that names another one; `workerId` fills a new worker memory's `workerId`.
 * `tokensUsed` (new, optional) lets the server keep `performance.totalTokensUsed` current.
 */
export const taskResultSchema = z.lazy(() =>
  recentTaskSchema.unwrap()
    .extend({
      /** Stored as it is in the key that makes a retried task count once, so no NUL (a recent task read back may hold one). */
      taskId: z.string().min(1).refine(...noNul),
      agentId: agentIdSchema.optional(),
      workerId: z.string().min(1).optional(),
      modelId: z.string().optional(),
      tokensUsed: z.number().int().nonnegative().optional(),
    })
    .meta({title: 'Task result', description: 'Body of POST /api/memory/sync-task'}),
)
export type TaskResult = z.output<typeof taskResultSchema>
