/**
 * Writes the server must accept, or that wait in the outbox while it cannot be reached: a finished task
 * (`jarvis task complete`) and a project switch (`jarvis switch-project`). Queued entries are sent by the next
 * `jarvis sync` (sync/outbox.ts); the command that queued exits 3 and says so.
 */
import {randomUUID} from 'node:crypto'

import createDebug from 'debug'

import {BadInputError, UnreachableError} from '../errors.js'
import {
  ACTIVE_PROJECT_FILE,
  type ActiveProject,
  type OutboxKind,
  parseJsonFile,
  parseWith,
  projectActiveRequestSchema,
  projectSlugSchema,
  type TaskResult,
  taskResultSchema,
  type WorkerMemory,
  workerMemorySchema,
} from '../schemas/index.js'
import {type MemoryClient, pulledText} from '../protocol/client.js'
import {appendOutbox, withTreeLock, writeMemoryFile} from '../store/index.js'
import {assertOutboxServer, connect, connectAs, openTreeIfAny, type TreeContext} from './context.js'
import {withoutPart, worthQueueing} from './events/common.js'
import {readUserConfig, resolveIdentity} from './identity.js'

const debug = createDebug('jarvis:task')

/** The task fields as flags give them; anything left out takes its default (a new UUID, now, success). */
export interface TaskFields {
  taskId?: string
  type?: string
  input?: string
  output?: string
  success?: boolean
  responseTime?: number
  model?: string
  filesModified?: string[]
  timestamp?: string
}

export interface TaskCompleteOptions {
  dir?: string
  server?: string
  agent?: string
  /** A JSON task result as text, and where it came from; exclusive with the fields. */
  taskText?: {name: string; text: string}
  fields: TaskFields
  /** What the fields came from, as messages name it: `flags` (the default) or the MCP tool's name. */
  fieldsFrom?: string
  now?: () => Date
}

export interface TaskCompleteResult {
  queued: false
  agentId: string
  taskId: string
  /** The worker memory as the server holds it now, this task in `recentTasks`. */
  workerMemory: WorkerMemory
}

/** What the `data` of the exit-3 error holds when a write was queued. */
export interface QueuedWrite {
  queued: true
  /** The outbox entry id. */
  id: string
  kind: OutboxKind
}

/** The task result a command line describes, checked against the sync-task body schema. */
export function readTaskResult(options: Pick<TaskCompleteOptions, 'taskText' | 'fields' | 'fieldsFrom' | 'now'>): TaskResult {
  if (options.taskText !== undefined) return parseJsonFile(taskResultSchema, options.taskText.text, options.taskText.name)
  const {fields} = options
  if (fields.type === undefined) throw new BadInputError('--type is required (or give the whole task result with --file)', {field: 'type'})
  const now = options.now ?? (() => new Date())
  const task: Record<string, unknown> = {
    taskId: fields.taskId ?? randomUUID(),
    timestamp: fields.timestamp ?? now().toISOString(),
    type: fields.type,
    success: fields.success ?? true,
  }
  if (fields.input !== undefined) task.input = fields.input
  if (fields.output !== undefined) task.output = fields.output
  if (fields.responseTime !== undefined) task.responseTime = fields.responseTime
  if (fields.model !== undefined) task.model = fields.model
  if (fields.filesModified !== undefined && fields.filesModified.length > 0) task.filesModified = fields.filesModified
  return parseWith(taskResultSchema, task, options.fieldsFrom ?? 'flags')
}

/** `jarvis task complete`: POST the task; when the server cannot be reached, queue it and fail with exit 3. */
export async function completeTask(options: TaskCompleteOptions): Promise<TaskCompleteResult> {
  const task = readTaskResult(options)
  const tree = await openTreeIfAny(options.dir)
  const identity = resolveIdentity({flags: options, env: process.env, tree: tree?.config, user: await readUserConfig()})
  const agentId = identity.agentId ?? task.agentId
  if (!agentId) {
    throw new BadInputError('no agent to record the task for: pass --agent, set JARVIS_AGENT, or run `jarvis init --agent ID`', {field: 'agent'})
  }
  if (task.agentId !== undefined && task.agentId !== agentId) {
    throw new BadInputError(`${options.taskText?.name ?? options.fieldsFrom ?? 'flags'}: agentId is ${JSON.stringify(task.agentId)}, but this command runs as ${JSON.stringify(agentId)}`, {field: 'agentId'})
  }
  const body = parseWith(taskResultSchema, {...task, agentId}, options.taskText?.name ?? options.fieldsFrom ?? 'flags')
  const {client, identity: connected} = await connectAs(tree, {...options, agent: agentId})
  try {
    const workerMemory = await client.syncTask(body, workerMemorySchema)
    return {queued: false, agentId, taskId: body.taskId, workerMemory}
  } catch (error) {
    if (!worthQueueing(error)) throw withoutPart(error, `the task ${body.taskId} was not recorded, and not queued: this server would refuse it again`)
    const id = await queue(tree, connected.server, 'task-result', body, error)
    throw new UnreachableError(`${(error as Error).message}\nthe task ${body.taskId} is queued in .nexus/outbox.jsonl (entry ${id}); the next \`jarvis sync\` sends it`, {
      ...(error as UnreachableError).data,
      queued: true,
      id,
      kind: 'task-result',
      taskId: body.taskId,
    })
  } finally {
    await client.close()
  }
}

export interface SwitchProjectOptions {
  dir?: string
  server?: string
  agent?: string
  projectId: string
  /** Who switched: `user-cli` (default), or `user-web` for a person using another client (the dashboard, a chat bot). */
  switchedBy?: 'user-cli' | 'user-web'
}

/** `jarvis switch-project`: the server records it and tells every client (STATE_CHANGED); offline it is queued. */
export async function switchProject(options: SwitchProjectOptions): Promise<ActiveProject> {
  const switchedBy = options.switchedBy ?? 'user-cli'
  const slug = projectSlugSchema.safeParse(options.projectId)
  if (!slug.success) throw new BadInputError(`projectId: ${slug.error.issues[0].message} (got ${JSON.stringify(options.projectId)})`)
  const body = parseWith(projectActiveRequestSchema, {projectId: options.projectId, switchedBy}, 'projectId')
  const tree = await openTreeIfAny(options.dir)
  const {client, identity: connected} = await connect(tree, options)
  let answer: ActiveProject
  try {
    answer = await client.switchProject(body.projectId, switchedBy)
  } catch (error) {
    if (!worthQueueing(error)) throw withoutPart(error, `the active project was not switched, and the switch not queued: this server would refuse it again`)
    const id = await queue(tree, connected.server, 'active-project', body, error)
    throw new UnreachableError(
      `${(error as Error).message}\nthe switch to ${JSON.stringify(body.projectId)} is queued in .nexus/outbox.jsonl (entry ${id}); the next \`jarvis sync\` sends it`,
      {...(error as UnreachableError).data, queued: true, id, kind: 'active-project', projectId: body.projectId},
    )
  }
  try {
    if (tree) await bringDownActiveProject(tree, client)
  } finally {
    await client.close()
  }
  return answer
}

/**
 * The switch is on the server; this tree's `.memory/active_project.json` shows it now, not at the next sync: the
 * server's exact bytes, so the next sync finds both sides equal and only records them. Best effort: a failure here
 * leaves it to that sync.
 */
async function bringDownActiveProject(tree: TreeContext, client: MemoryClient): Promise<void> {
  try {
    const {files} = await client.pull([ACTIVE_PROJECT_FILE])
    const file = files[ACTIVE_PROJECT_FILE]
    if (!file || file.deleted) return
    await withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout, command: 'jarvis switch-project'}, () => writeMemoryFile(tree.root, ACTIVE_PROJECT_FILE, pulledText(file)))
  } catch (error) {
    debug('active_project.json left for the next sync: %s', (error as Error).message)
  }
}


async function queue(tree: TreeContext | undefined, server: string, kind: OutboxKind, payload: unknown, cause: UnreachableError): Promise<string> {
  if (!tree) {
    throw new UnreachableError(`${cause.message}\nnothing was queued: there is no jarvis tree here to hold the outbox (run \`jarvis init\` or pass --dir)`, cause.data, cause)
  }
  await assertOutboxServer(tree, server, cause)
  const id = randomUUID()
  await withTreeLock(tree.root, {timeoutMs: tree.config.sync.lockTimeout, command: `jarvis ${kind}`}, () =>
    appendOutbox(tree.root, {id, kind, createdAt: new Date().toISOString(), payload}),
  )
  debug('queued %s as %s', kind, id)
  return id
}
